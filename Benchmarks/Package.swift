// swift-tools-version:6.1
import PackageDescription

/// Benchmarks for VAFoundation, kept in their own package so the main build never resolves
/// the benchmark harness. Run from this directory: `swift package benchmark` (see README.md).
///
/// - `Micro`: `MediaTime` arithmetic and the pixel buffer pool; no files, well under a minute.
/// - `Pipeline`: asset inspection, demux, decode, scale, encode, remux and the full export,
///   on a synthetic 1080p30 H.264 + AAC movie written at the start of each run.
let package = Package(
    name: "VAFoundationBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "VAFoundation", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "Micro",
            dependencies: [
                .product(name: "VAFoundation", package: "VAFoundation"),
                .product(name: "MediaCore", package: "VAFoundation"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Micro",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "Pipeline",
            dependencies: [
                .product(name: "VAFoundation", package: "VAFoundation"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Pipeline",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// swift-tools-version:6.0
import PackageDescription

/// A libFuzzer target over VAFoundation's asset inspection and a short read of every track, kept
/// in its own package because it builds VAFoundation with AddressSanitizer and coverage
/// instrumentation. Build and run it with `bash Fuzz/run.sh [SECONDS]` (the test command does).
let package = Package(
    name: "VAFoundationFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "VAFoundation", path: "..")],
    targets: [
        .executableTarget(name: "VAFFuzz", dependencies: [.product(name: "VAFoundation", package: "VAFoundation")]),
    ],
    swiftLanguageModes: [.v6]
)

// swift-tools-version:6.0
import PackageDescription

/// VAFoundation: the export half of AVFoundation for Linux, on FFmpeg's libraries and VA-API.
///
/// Layering, bottom up: C modules (CFFmpeg, CVA, CDRM) → owning wrappers (FFmpegSupport, and
/// HardwareAcceleration over it: the VA display and all that calls libva) → the C-free core
/// (MediaCore) → the AVFoundation-style engine (VAFoundation) → the command-line tool (vaf).
/// Only the wrapper modules import C.
let package = Package(
    name: "VAFoundation",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "VAFoundation", targets: ["VAFoundation"]),
        .library(name: "MediaCore", targets: ["MediaCore"]),
        .library(name: "HardwareAcceleration", targets: ["HardwareAcceleration"]),
        .executable(name: "vaf", targets: ["vaf"]),
        // SoftVA, the CPU-backed VA-API driver for tests: libva loads it as
        // $LIBVA_DRIVERS_PATH/libsoftva_drv_video.so when LIBVA_DRIVER_NAME=libsoftva.
        .library(name: "softva_drv_video", type: .dynamic, targets: ["SoftVA"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev"])]
        ),
        .systemLibrary(
            name: "CVA",
            pkgConfig: "libva",
            providers: [.apt(["libva-dev"])]
        ),
        .systemLibrary(
            name: "CDRM",
            pkgConfig: "libdrm",
            providers: [.apt(["libdrm-dev"])]
        ),
        .target(name: "MediaCore"),
        .target(name: "FFmpegSupport", dependencies: ["CFFmpeg", "MediaCore"]),
        // HardwareAcceleration owns the VA display and all that draws on it, libavutil's context over it included.
        .target(name: "HardwareAcceleration", dependencies: ["CVA", "CDRM", "CFFmpeg", "MediaCore", "FFmpegSupport"]),
        .target(name: "VAFoundation", dependencies: ["MediaCore", "FFmpegSupport", "HardwareAcceleration"],
                exclude: ["Pipeline/README.md"]),
        // `vaf bench`'s arithmetic and reports (PSNR/SSIM, statistics, table/JSON/CSV/SVG): no C.
        .target(name: "BenchKit"),
        // Runs child programs with posix_spawn, a time limit and rusage: for the bench and tests.
        .target(name: "ChildProcess", dependencies: ["MediaCore"]),
        .executableTarget(
            name: "vaf",
            dependencies: [
                "VAFoundation",
                "MediaCore",
                "FFmpegSupport",
                "HardwareAcceleration",
                "BenchKit",
                "ChildProcess",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "ReencodeExample", dependencies: ["VAFoundation"]),
        // The README's export program, built and run by the tests so that it stays true.
        .executableTarget(name: "ExportExample", dependencies: ["VAFoundation"]),
        .target(
            name: "SoftVA",
            path: "Hardware/SoftVA",
            // H.264 decode runs libavcodec's decoder on the rebuilt stream.
            linkerSettings: [.linkedLibrary("jpeg"), .linkedLibrary("va"), .linkedLibrary("avcodec"), .linkedLibrary("avutil"),
                             .linkedLibrary("m"), .linkedLibrary("pthread")]
        ),
        .target(name: "VATestSupport", dependencies: ["ChildProcess"]),
        .testTarget(
            name: "SoftVATests",
            dependencies: ["VATestSupport", "CVA", "FFmpegSupport", "VAFoundation", "ChildProcess"],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "MediaCoreTests",
            dependencies: ["MediaCore", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(name: "VAFoundationTests", dependencies: ["VAFoundation", "ChildProcess", "VATestSupport"], resources: [.copy("Fixtures")]),
        // Fixtures: the Python script that writes the OpenTimelineIO oracle tests' timelines, read by path;
        // Corpus/ holds the sweep's media (CorpusSweepTests reads it from the source tree).
        .testTarget(name: "vafTests", dependencies: ["vaf", "ExportExample", "ChildProcess", "BenchKit", "VATestSupport"], exclude: ["Fixtures", "Corpus"]),
        .testTarget(name: "HardwareAccelerationTests", dependencies: ["HardwareAcceleration", "vaf", "VATestSupport"]),
        .testTarget(name: "BenchKitTests", dependencies: ["BenchKit", "vaf", "VATestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

import Benchmark
import Foundation
import VAFoundation

/// The bundled sample, found relative to this file so the benchmark runs from any directory.
private let sample = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Tests/VAFoundationTests/Fixtures/h264_aac_iphone6_rot90_gps_metadata.mov")

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
                                           maxDuration: .seconds(5))

    // Opening a file and reading every track's header and sample table.
    Benchmark("Asset inspection (index)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try await Asset(url: sample).load(.tracks))
        }
    }

    // The same with one demux-only pass over every packet.
    Benchmark("Asset inspection (precise, packet scan)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try await Asset(url: sample, options: .init(prefersPreciseDurationAndTiming: true)).load(.tracks))
        }
    }
}

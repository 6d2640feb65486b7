import Benchmark
import Foundation
import VAFoundation

/// The bundled sample, found relative to this file so the benchmark runs from any directory.
private let sample = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Tests/VAFoundationTests/Fixtures/h264_aac_iphone6_rot90_gps_metadata.mov")

/// Rates per measured pass, beside wall-clock time: what a change to one stage does to it.
enum Rate {
    static let packets = BenchmarkMetric.custom("packets/s", polarity: .prefersLarger, useScalingFactor: false)
    static let frames = BenchmarkMetric.custom("frames/s", polarity: .prefersLarger, useScalingFactor: false)
    static let megabytes = BenchmarkMetric.custom("MB/s", polarity: .prefersLarger, useScalingFactor: false)
    /// Media seconds exported per wall-clock second, in percent (100: real time).
    static let realTime = BenchmarkMetric.custom("% of real time", polarity: .prefersLarger, useScalingFactor: false)
}

/// Regression tolerances for whole-file passes on a shared machine: wall-clock time and rates
/// may move 20% at the median, CPU time 15% (it depends far less on other processes' load than
/// wall-clock time), allocations `mallocTolerance` percent (10 by default; the encoder's
/// threads make its count vary more), resident memory 20%. Anything beyond is reported by
/// `baseline compare` / `baseline check` as a regression (or an improvement).
private func configuration(rates: [BenchmarkMetric], maxIterations: Int, maxDuration: Duration, mallocTolerance: Double = 10,
                           setup: Benchmark.BenchmarkSetupHook? = nil,
                           teardown: Benchmark.BenchmarkTeardownHook? = nil) -> Benchmark.Configuration {
    var thresholds: [BenchmarkMetric: BenchmarkThresholds] = [
        .wallClock: .init(relative: [.p50: 20]),
        .cpuTotal: .init(relative: [.p50: 15]),
        .throughput: .init(relative: [.p50: 20]),
        .mallocCountTotal: .init(relative: [.p50: mallocTolerance]),
        .peakMemoryResident: .init(relative: [.p50: 20]),
    ]
    for rate in rates { thresholds[rate] = .init(relative: [.p50: 20]) }
    return .init(metrics: [.wallClock, .cpuTotal, .throughput, .mallocCountTotal, .peakMemoryResident] + rates,
                 maxDuration: maxDuration, maxIterations: maxIterations,
                 thresholds: thresholds, setup: setup, teardown: teardown)
}

/// `work`'s result and how long it took, in seconds of wall-clock time.
private func timed<T>(_ work: () async throws -> T) async rethrows -> (result: T, seconds: Double) {
    let clock = ContinuousClock()
    let start = clock.now
    let result = try await work()
    let elapsed = clock.now - start
    return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
}

/// Runs `work` once (one measured pass) and reports its counts per second as `rates`.
private func pass(_ benchmark: Benchmark, _ rates: [BenchmarkMetric], _ work: () async throws -> PassCount) async throws {
    let (count, seconds) = try await timed(work)
    guard seconds > 0 else { return }
    for rate in rates {
        switch rate {
        case Rate.packets, Rate.frames: benchmark.measurement(rate, Int((Double(count.samples) / seconds).rounded()))
        case Rate.megabytes: benchmark.measurement(rate, Int((Double(count.bytes) / 1_000_000 / seconds).rounded()))
        default: break
        }
    }
}

/// Pictures drawn in setup for the encode benchmark, so drawing is not measured.
private final class Pictures: @unchecked Sendable {
    var pictures: [PixelBuffer] = []
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
                                           maxDuration: .seconds(5))
    let makeSource: Benchmark.BenchmarkSetupHook = { _ = try await SyntheticMovie.url() }

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

    // Every compressed packet of the 3 s 1080p30 H.264 + AAC movie, no decoding.
    let demuxRates = [Rate.packets, Rate.megabytes]
    Benchmark("Demux 1080p30 H.264+AAC (compressed samples)",
              configuration: configuration(rates: demuxRates, maxIterations: 50, maxDuration: .seconds(5), setup: makeSource)) { benchmark in
        let url = try await SyntheticMovie.url()
        try await pass(benchmark, demuxRates) { try await PipelineStages.demux(url) }
    }

    // Every picture decoded to yuv420p at its own size (FFmpeg's h264 decoder, frame threads).
    Benchmark("Decode 1080p H.264 to yuv420p",
              configuration: configuration(rates: [Rate.frames], maxIterations: 10, maxDuration: .seconds(10), setup: makeSource)) { benchmark in
        let url = try await SyntheticMovie.url()
        try await pass(benchmark, [Rate.frames]) { try await PipelineStages.decode(url, into: PixelBufferAttributes(pixelFormat: .yuv420p)) }
    }

    // The same plus scaling every picture to 720p in the reader: the difference is the scaler.
    Benchmark("Decode+scale 1080p H.264 to 720p yuv420p",
              configuration: configuration(rates: [Rate.frames], maxIterations: 10, maxDuration: .seconds(10), setup: makeSource)) { benchmark in
        let url = try await SyntheticMovie.url()
        try await pass(benchmark, [Rate.frames]) {
            try await PipelineStages.decode(url, into: PixelBufferAttributes(pixelFormat: .yuv420p, width: 1280, height: 720))
        }
    }

    // 60 pictures (30 distinct, drawn in setup) encoded to 720p H.264 at the writer's defaults
    // for offline work (x264 medium, CRF from quality 0.6) and muxed to mp4.
    let pictures = Pictures()
    let encodeOutput = SyntheticMovie.outputURL("encode-720p.mp4")
    Benchmark("Encode 720p H.264 (x264 medium)",
              configuration: configuration(
                rates: [Rate.frames], maxIterations: 5, maxDuration: .seconds(20), mallocTolerance: 30,
                setup: {
                    try FileManager.default.createDirectory(at: SyntheticMovie.runDirectory(), withIntermediateDirectories: true)
                    pictures.pictures = try (0..<30).map { index in
                        let picture = try PixelBuffer(width: 1280, height: 720, pixelFormat: .yuv420p)
                        try SyntheticMovie.drawPattern(into: picture, index: index)
                        return picture
                    }
                },
                teardown: {
                    pictures.pictures = []
                    try? FileManager.default.removeItem(at: encodeOutput)
                })) { benchmark in
        let settings = VideoSettings(codec: .h264, width: 1280, height: 720, quality: 0.6, expectedSourceFrameRate: 30)
        try await pass(benchmark, [Rate.frames]) {
            try await PipelineStages.encode(pictures.pictures, frameCount: 60, settings: settings, to: encodeOutput)
        }
    }

    // Every track copied without a codec into a new mp4: demux, mux, file I/O.
    let remuxOutput = SyntheticMovie.outputURL("remux.mp4")
    Benchmark("Remux 1080p30 H.264+AAC passthrough to mp4",
              configuration: configuration(rates: [Rate.megabytes], maxIterations: 30, maxDuration: .seconds(5), setup: makeSource,
                                           teardown: { try? FileManager.default.removeItem(at: remuxOutput) })) { benchmark in
        let url = try await SyntheticMovie.url()
        try await pass(benchmark, [Rate.megabytes]) { try await PipelineStages.remux(url, to: remuxOutput) }
    }

    // The full pipeline: ExportSession, preset 1280x720, 1080p30 H.264 + AAC in, 720p H.264 +
    // AAC out (decode, scale, encode, resample, mux), on whatever path the session picks
    // (software on a machine without a VA-API device).
    let exportOutput = SyntheticMovie.outputURL("export-720p.mp4")
    Benchmark("Export 1080p H.264 to 720p (preset 1280x720)",
              configuration: configuration(rates: [Rate.frames, Rate.realTime], maxIterations: 3, maxDuration: .seconds(30),
                                           setup: makeSource,
                                           teardown: { try? FileManager.default.removeItem(at: exportOutput) })) { benchmark in
        let url = try await SyntheticMovie.url()
        let (result, seconds) = try await timed { try await PipelineStages.export(url, to: exportOutput) }
        benchmark.measurement(Rate.frames, Int((Double(result.videoFrames) / seconds).rounded()))
        benchmark.measurement(Rate.realTime, Int((100 * result.durationSeconds / seconds).rounded()))
    }
}

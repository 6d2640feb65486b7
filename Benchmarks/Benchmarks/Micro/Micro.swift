import Benchmark

/// Benchmarks that touch no file: `MediaTime` arithmetic and the pixel buffer pool. They run
/// in well under a minute; `swift package benchmark --target Micro` runs only these.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .mallocCountTotal],
                                           maxDuration: .seconds(2), maxIterations: 10_000)
    mediaTimeBenchmarks()
    pixelBufferPoolBenchmarks()
}

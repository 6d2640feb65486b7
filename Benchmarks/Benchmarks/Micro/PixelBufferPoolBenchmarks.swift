import Benchmark
import VAFoundation

/// How a pool under test gets its pictures. Each variant gets the same benchmarks, so a
/// GPU-surface pool is compared with the host-memory one line by line.
///
/// Pending: a variant backed by VA surfaces, added here once `PixelBufferPool` can make
/// surfaces from the public API (the lead engineer is adding it to the main package).
struct PoolVariant: Sendable {
    let name: String
    let makePool: @Sendable (_ width: Int, _ height: Int) throws -> PixelBufferPool
}

let poolVariants: [PoolVariant] = [
    PoolVariant(name: "host memory") { width, height in
        try PixelBufferPool(width: width, height: height, pixelFormat: .yuv420p, maximumBufferCount: 8)
    },
]

/// A pool made and warmed up in the benchmark's setup, outside the measurement; each
/// benchmark runs in its own process, so the pool is not shared.
private final class WarmPool: @unchecked Sendable {
    var pool: PixelBufferPool?
}

/// Pictures the pool allocated during one measured iteration; must stay 0 after warm-up.
let picturesAllocated = BenchmarkMetric.custom("pictures allocated", polarity: .prefersSmaller, useScalingFactor: false)

/// The pool's promise is that a frame loop allocates nothing per frame once it has warmed up:
/// every iteration takes one 1080p picture and drops it again, after a setup that has made
/// every picture the pool will ever hold.
///
/// Thresholds: `pictures allocated` must stay 0 (absolute tolerance 0), and `mallocCountTotal`
/// per vend/release may not grow by a single malloc over the baseline (absolute tolerance 0).
/// The target for `mallocCountTotal` is 0 as well; the README records what it is today.
func pixelBufferPoolBenchmarks() {
    for variant in poolVariants {
        let warm = WarmPool()
        let configuration = Benchmark.Configuration(
            metrics: [.wallClock, .throughput, .mallocCountTotal, .mallocBytesCount, picturesAllocated],
            warmupIterations: 10,
            maxDuration: .seconds(2),
            maxIterations: 20_000,
            thresholds: [
                .mallocCountTotal: .init(absolute: BenchmarkThresholds.Absolute.strict),
                picturesAllocated: .init(absolute: BenchmarkThresholds.Absolute.strict),
                .wallClock: .init(relative: [.p50: 25]),
                .throughput: .init(relative: [.p50: 25]),
            ],
            setup: {
                let pool = try variant.makePool(1920, 1080)
                // Hold every picture at once so the pool has allocated all it ever will.
                let held = try (0..<pool.maximumBufferCount).map { _ in try pool.makePixelBuffer() }
                precondition(pool.allocationCount == pool.maximumBufferCount, "the pool did not allocate on demand")
                blackHole(held)
                warm.pool = pool
            },
            teardown: { warm.pool = nil })

        Benchmark("PixelBufferPool vend+release 1080p (\(variant.name))", configuration: configuration) { benchmark in
            guard let pool = warm.pool else { fatalError("the pool was not set up") }
            let before = pool.allocationCount
            benchmark.startMeasurement()
            do {
                blackHole(try pool.makePixelBuffer())
            } catch {
                fatalError("vending from a warm pool failed: \(error)")
            }
            benchmark.stopMeasurement()
            benchmark.measurement(picturesAllocated, pool.allocationCount - before)
        }
    }
}

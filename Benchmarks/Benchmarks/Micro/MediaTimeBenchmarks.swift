import Benchmark
import MediaCore

/// `MediaTime` sits in every sample's timestamps, so its arithmetic runs several times per
/// packet in every stage. Each benchmark does 1,000 operations per iteration (the `(K)` in the
/// output); the inputs depend on the loop index so the optimiser cannot fold them away.
///
/// Thresholds: none of these may allocate (`mallocCountTotal` absolute tolerance 0 against the
/// baseline, whose value is 0); time may drift 15% at the median before it counts as a regression.
func mediaTimeBenchmarks() {
    let configuration = Benchmark.Configuration(
        scalingFactor: .kilo,
        thresholds: [
            .mallocCountTotal: .init(absolute: BenchmarkThresholds.Absolute.strict),
            .wallClock: .init(relative: [.p50: 15]),
            .throughput: .init(relative: [.p50: 15]),
        ])

    // One NTSC frame duration added to a running presentation time: the common case of one timescale.
    Benchmark("MediaTime + (same timescale)", configuration: configuration) { benchmark in
        let frame = MediaTime(value: 1001, timescale: 30000)
        var time = MediaTime.zero.convertScale(30000)
        for _ in benchmark.scaledIterations {
            time = time + frame
        }
        blackHole(time)
    }

    // A 90 kHz video time plus a 48 kHz audio duration: the sum needs a common timescale.
    Benchmark("MediaTime + (mixed timescales)", configuration: configuration) { benchmark in
        for i in benchmark.scaledIterations {
            let video = MediaTime(value: Int64(i) * 3003, timescale: 90000)
            let audio = MediaTime(value: 1024, timescale: 48000)
            blackHole(video + audio)
        }
    }

    // A 90 kHz time rounded to milliseconds, as the muxer does for a 1 kHz track timescale.
    Benchmark("MediaTime convertScale (90 kHz to 1 kHz)", configuration: configuration) { benchmark in
        for i in benchmark.scaledIterations {
            blackHole(MediaTime(value: Int64(i) * 3003 + 1, timescale: 90000).convertScale(1000))
        }
    }

    // Ordering timestamps of two tracks, as the writer's interleaving does for every sample.
    Benchmark("MediaTime compare (mixed timescales)", configuration: configuration) { benchmark in
        let audio = MediaTime(value: 48000, timescale: 48000)
        var earlier = 0
        for i in benchmark.scaledIterations {
            if MediaTime(value: Int64(i) * 90, timescale: 90000) < audio { earlier += 1 }
        }
        blackHole(earlier)
    }

    // Remapping a time from a trimmed source range onto the output timeline (export with a time range).
    Benchmark("MediaTimeRange.mapTime (trim remap)", configuration: configuration) { benchmark in
        let source = MediaTimeRange(start: MediaTime(value: 90000, timescale: 90000), duration: MediaTime(value: 270000, timescale: 90000))
        let target = MediaTimeRange(start: .zero, duration: MediaTime(value: 3000, timescale: 1000))
        for i in benchmark.scaledIterations {
            let time = MediaTime(value: 90000 + Int64(i) * 270, timescale: 90000)
            blackHole(MediaTimeRange.mapTime(time, from: source, to: target))
        }
    }
}

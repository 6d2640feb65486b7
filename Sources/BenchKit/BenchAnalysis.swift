/// Derives what the runs mean: ratios of our paths against FFmpeg's, pair by pair, and the
/// issue's performance targets. Pure arithmetic over measured path results.
public enum BenchAnalysis {
    /// Which path is compared with which: ours first, FFmpeg's baseline second.
    public static let comparisons: [(ours: String, baseline: String)] = [
        ("software", "ffmpeg"), ("hybrid", "ffmpeg-vaapi"), ("hardware", "ffmpeg-vaapi"),
    ]

    /// The metrics compared, each with how to read it from a run.
    static let metrics: [(name: String, value: @Sendable (RunMeasurement) -> Double)] = [
        ("fps", { $0.fps }), ("peakRSS", { Double($0.peakRSSBytes) }), ("cpuSeconds", { $0.cpuSeconds }),
    ]

    /// For every job and comparison where both paths were measured: the paired ratio of each
    /// metric, run i of ours over run i of the baseline (the runs were interleaved).
    public static func ratios(_ jobs: [JobResult]) -> [RatioResult] {
        var results: [RatioResult] = []
        for job in jobs {
            for (ours, baseline) in comparisons {
                guard let a = job.paths.first(where: { $0.path == ours && $0.isComparable }),
                      let b = job.paths.first(where: { $0.path == baseline && $0.isComparable }) else { continue }
                for metric in metrics {
                    let pairs = paired(a.runs, b.runs)
                    guard let ratio = PairedRatio.statistic(pairs.map { metric.value($0.0) }, pairs.map { metric.value($0.1) }) else { continue }
                    results.append(RatioResult(job: job.id, metric: metric.name, numerator: ours, denominator: baseline, ratio: ratio))
                }
            }
        }
        return results
    }

    /// Runs of two paths matched by round, so that each pair ran back to back.
    static func paired(_ a: [RunMeasurement], _ b: [RunMeasurement]) -> [(RunMeasurement, RunMeasurement)] {
        let byRound = Dictionary(b.map { ($0.round, $0) }, uniquingKeysWith: { first, _ in first })
        return a.compactMap { run in byRound[run.round].map { (run, $0) } }
    }

    /// The targets: our software transcode ≥ 0.97 × FFmpeg's frames/s and peak RSS ≤
    /// FFmpeg's; remux ≥ 1.0 × `ffmpeg -c copy`; the full-hardware path 0 host bytes per frame.
    /// Each reports the worst job.
    public static func targets(jobs: [JobResult], ratios: [RatioResult], remuxTarget: String = "remux") -> [TargetCheck] {
        let remuxJobs = Set(jobs.filter { $0.target == remuxTarget }.map(\.id))
        func software(_ metric: String, remux: Bool) -> [RatioResult] {
            ratios.filter { $0.metric == metric && $0.numerator == "software" && $0.denominator == "ffmpeg" && remuxJobs.contains($0.job) == remux }
        }
        func lowest(_ rs: [RatioResult]) -> RatioResult? { rs.min { $0.ratio.median < $1.ratio.median } }
        func highest(_ rs: [RatioResult]) -> RatioResult? { rs.max { $0.ratio.median < $1.ratio.median } }
        var checks: [TargetCheck] = []
        let fps = lowest(software("fps", remux: false))
        checks.append(TargetCheck(name: "software-fps", description: "software transcode frames/s ≥ 0.97 × ffmpeg's with equal settings (worst job)",
                                  value: fps?.ratio.median, threshold: 0.97, met: fps.map { $0.ratio.median >= 0.97 }, job: fps?.job))
        let rss = highest(software("peakRSS", remux: false))
        checks.append(TargetCheck(name: "software-peak-rss", description: "software transcode peak RSS ≤ 1.0 × ffmpeg's (worst job)",
                                  value: rss?.ratio.median, threshold: 1.0, met: rss.map { $0.ratio.median <= 1.0 }, job: rss?.job))
        let remux = lowest(software("fps", remux: true))
        checks.append(TargetCheck(name: "remux-fps", description: "passthrough remux frames/s ≥ 1.0 × ffmpeg -c copy (worst job)",
                                  value: remux?.ratio.median, threshold: 1.0, met: remux.map { $0.ratio.median >= 1.0 }, job: remux?.job))
        let hardware = jobs.compactMap { job -> (String, Double)? in
            guard let path = job.paths.first(where: { $0.path == "hardware" && $0.isComparable }),
                  let perFrame = path.hostTransferBytesPerFrame else { return nil }
            return (job.id, perFrame)
        }.max { $0.1 < $1.1 }
        checks.append(TargetCheck(name: "hardware-host-bytes", description: "full-hardware (surface pool) path moves 0 host bytes per frame (worst job)",
                                  value: hardware?.1, threshold: 0, met: hardware.map { $0.1 == 0 }, job: hardware?.0))
        return checks
    }
}

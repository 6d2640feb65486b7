import BenchKit
import Testing

@Suite struct StatisticTests {
    @Test func medianQuartilesAndSpreadOfAnOddCount() throws {
        let s = try #require(Statistic([5, 1, 4, 2, 3]))
        #expect(s.count == 5)
        #expect(s.median == 3)
        #expect(s.min == 1 && s.max == 5)
        #expect(s.q1 == 2 && s.q3 == 4)
        #expect(s.interquartileRange == 2)
        #expect(abs(s.relativeSpreadPercent - 400.0 / 3) < 1e-9)
    }

    @Test func anEvenCountInterpolatesTheMiddle() throws {
        let s = try #require(Statistic([10, 40, 20, 30]))
        #expect(s.median == 25)
        #expect(s.q1 == 17.5 && s.q3 == 32.5)
        #expect(s.relativeSpreadPercent == 120)
    }

    @Test func oneValueHasNoSpread() throws {
        let s = try #require(Statistic([7.5]))
        #expect(s.median == 7.5 && s.q1 == 7.5 && s.q3 == 7.5 && s.relativeSpreadPercent == 0)
    }

    @Test func noValuesOrNonFiniteOnesGiveNothing() {
        #expect(Statistic([]) == nil)
        #expect(Statistic([1, .infinity]) == nil)
        #expect(Statistic([.nan]) == nil)
    }

    @Test func ratiosArePairedRunByRunNotMedianOverMedian() throws {
        // A machine slowing down over the runs: both paths drift alike, the pairs stay at 2×.
        let ours = [100.0, 80, 60, 40]
        let theirs = [50.0, 40, 30, 20]
        #expect(PairedRatio.ratios(ours, theirs) == [2, 2, 2, 2])
        let s = try #require(PairedRatio.statistic(ours, theirs))
        #expect(s.median == 2 && s.relativeSpreadPercent == 0)
        // Medians of unpaired, shuffled series would hide which run belonged to which round.
        let paired = try #require(PairedRatio.statistic([10, 30], [5, 10]))
        #expect(paired.median == 2.5 && paired.min == 2 && paired.max == 3)
    }

    @Test func pairsStopAtTheShorterSeriesAndSkipZeroDenominators() {
        #expect(PairedRatio.ratios([1, 2, 3], [1, 0]) == [1])
        #expect(PairedRatio.statistic([1], []) == nil)
    }

    @Test func analysisPairsRunsByRound() throws {
        func runs(_ fps: [Double], rss: Int64) -> [RunMeasurement] {
            fps.enumerated().map { i, f in
                RunMeasurement(round: i, wallSeconds: 60 / f, userSeconds: 1, systemSeconds: 0, peakRSSBytes: rss,
                               frames: 60, mediaSeconds: 2, outputBytes: 1000, hostTransferBytes: nil)
            }
        }
        var ours = PathResult(path: "software", tool: "vaf", status: .measured)
        ours.runs = runs([120, 60, 90], rss: 90)
        var theirs = PathResult(path: "ffmpeg", tool: "ffmpeg", status: .measured)
        theirs.runs = runs([100, 50, 100], rss: 100)
        var skipped = PathResult(path: "hardware", tool: "vaf", status: .skipped, reason: "no device")
        skipped.runs = []
        let job = JobResult(id: "720p30/h264", source: "720p30", target: "h264", summary: "", preset: "1280x720", outputWidth: 1280,
                            outputHeight: 720, outputFrameRate: nil, videoBitRate: 5_000_000, paths: [ours, theirs, skipped])
        let ratios = BenchAnalysis.ratios([job])
        let fps = try #require(ratios.first { $0.metric == "fps" })
        #expect(fps.numerator == "software" && fps.denominator == "ffmpeg")
        #expect(abs(fps.ratio.median - 1.2) < 1e-9 && abs(fps.ratio.min - 0.9) < 1e-9)
        let rss = try #require(ratios.first { $0.metric == "peakRSS" })
        #expect(abs(rss.ratio.median - 0.9) < 1e-9)
        let targets = BenchAnalysis.targets(jobs: [job], ratios: ratios)
        let speed = try #require(targets.first { $0.name == "software-fps" })
        #expect(speed.met == true && speed.job == "720p30/h264")
        #expect(targets.first { $0.name == "remux-fps" }?.met == nil, "no remux job: not measured")
        #expect(targets.first { $0.name == "hardware-host-bytes" }?.met == nil)
    }
}

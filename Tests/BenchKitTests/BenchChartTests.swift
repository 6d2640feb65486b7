import BenchKit
import Foundation
import Testing

/// The SVG chart of `vaf bench`: skipped paths share a row, each job's bars have an axis, each
/// bar shows its spread, and a ratio whose spreads overlap is marked inconclusive.
@Suite struct BenchChartTests {
    static func path(_ name: String, tool: String, fps: [Double]) -> PathResult {
        var result = PathResult(path: name, tool: tool, status: .measured)
        result.runs = fps.enumerated().map { i, f in
            RunMeasurement(round: i, wallSeconds: 60 / f, userSeconds: 1, systemSeconds: 0, peakRSSBytes: 1000,
                           frames: 60, mediaSeconds: 2, outputBytes: 1000, hostTransferBytes: nil)
        }
        result.fps = Statistic(fps)
        return result
    }

    static func report() -> BenchReport {
        let overlapping = JobResult(
            id: "720p30/h264", source: "720p30", target: "h264", summary: "H.264 1280x720", preset: "1280x720", outputWidth: 1280,
            outputHeight: 720, outputFrameRate: nil, videoBitRate: nil,
            paths: [path("software", tool: "vaf", fps: [120, 60, 90]), path("ffmpeg", tool: "ffmpeg", fps: [100, 50, 100]),
                    PathResult(path: "hybrid", tool: "vaf", status: .skipped, reason: "no VA-API device"),
                    PathResult(path: "hardware", tool: "vaf", status: .skipped, reason: "no VA-API device"),
                    PathResult(path: "ffmpeg-vaapi", tool: "ffmpeg", status: .failed, reason: "exit 1: no device")])
        let apart = JobResult(
            id: "720p30/remux", source: "720p30", target: "remux", summary: "remux", preset: "passthrough", outputWidth: nil,
            outputHeight: nil, outputFrameRate: nil, videoBitRate: nil,
            paths: [path("software", tool: "vaf", fps: [2000, 2100, 2050]), path("ffmpeg", tool: "ffmpeg", fps: [1000, 1050, 1020])])
        let jobs = [overlapping, apart]
        let machine = MachineInfo(hostName: "test", cpuModel: "CPU", logicalCores: 2, memoryBytes: 1 << 30, operatingSystem: "Linux",
                                  vafBuild: "test", ffmpegVersion: nil, device: nil, driver: nil, deviceLabel: nil, deviceProblem: nil)
        let settings = BenchSettings(quick: true, warmups: 0, runs: 3, seconds: 2, sourceCodec: "h264", targets: ["h264", "remux"],
                                     paths: ["software", "hybrid", "hardware", "ffmpeg", "ffmpeg-vaapi"], quality: false)
        return BenchReport(createdAt: "2026-01-01T00:00:00Z", settings: settings, machine: machine, sources: [], jobs: jobs,
                           ratios: BenchAnalysis.ratios(jobs), targets: [])
    }

    @Test func skippedPathsShareOneRowWithTheirReasons() {
        let svg = Self.report().svg()
        #expect(svg.components(separatedBy: ">skipped<").count - 1 == 1, "one skipped row for the job that has any")
        #expect(svg.contains("hybrid (no VA-API device); hardware (no VA-API device)"), "\(svg)")
        #expect(svg.contains("failed: exit 1: no device"), "a failed path keeps its own row")
    }

    @Test func eachBarShowsItsSpreadAndEachJobHasAnAxis() {
        let svg = Self.report().svg()
        #expect(svg.contains("90.0 fps, runs 60.0–120.0"), "\(svg)")
        #expect(svg.contains("2050.0 fps, runs 2000.0–2100.0"), "\(svg)")
        // Axes end at a round number above the fastest run: 200 and 4000 fps.
        #expect(svg.contains(">200 fps</text>") && svg.contains(">100</text>"), "\(svg)")
        #expect(svg.contains(">4000 fps</text>") && svg.contains(">1000</text>"), "\(svg)")
        #expect(BenchReport.axisMaximum(120) == 200 && BenchReport.axisMaximum(2100) == 4000 && BenchReport.axisMaximum(100) == 100)
        #expect(BenchReport.axisMaximum(0.9) == 1 && BenchReport.axisMaximum(610) == 800)
    }

    @Test func aRatioIsInconclusiveWhenTheSpreadsOverlap() throws {
        let report = Self.report()
        let overlapping = try #require(report.ratioNotes(for: report.jobs[0]).first)
        #expect(overlapping.hasPrefix("software / ffmpeg: ") && overlapping.contains("inconclusive: the spreads overlap (60.0–120.0 vs 50.0–100.0 fps)"),
                "\(overlapping)")
        let apart = try #require(report.ratioNotes(for: report.jobs[1]).first)
        #expect(!apart.contains("inconclusive") && apart.contains("spreads apart: 2000.0–2100.0 vs 1000.0–1050.0 fps"), "\(apart)")
        let svg = report.svg()
        #expect(svg.contains("inconclusive") && svg.contains("spreads apart"))
    }
}

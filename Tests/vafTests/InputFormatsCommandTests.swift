import ChildProcess
import Foundation
import Testing

/// `--time-range` and `--frame-rate` in the forms people type, end to end: frame counts cut
/// exactly that many frames, and a bad value is a usage error (64) naming its option.
@Suite struct InputFormatsCommandTests {
    static func vaf(_ arguments: [String]) async throws -> ChildProcessResult {
        try await ChildProcess.run(Vaf.binary, arguments, timeLimit: 600)
    }

    @Test(arguments: [
        (["--time-range", "+45f"], 45, 1.5),
        (["--time-range", "30f+15f"], 15, 0.5),
        (["--time-range", "00:00:01.5-00:00:02.5"], 30, 1.0),
    ] as [([String], Int, Double)])
    func rangesCutTheFramesAsked(options: [String], frames: Int, seconds: Double) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-ranges-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try await Self.vaf(["transcode", TranscodeCommandTests.clip, "--preset", "640x480", "--output-dir", dir.path, "--json"] + options)
        #expect(run.shellStatus == 0, "\(run.stderr)")
        let row = try #require(try Vaf.jsonLines(run.stdout).first)
        #expect(row["status"] as? String == "completed", "\(row)")
        #expect(row["frames"] as? Int == frames, "\(options): \(row)")
        #expect(abs((row["seconds"] as? Double ?? 0) - seconds) < 0.04, "\(options): \(row)")
    }

    @Test func framesOfAnInputWithoutVideoFailThatInput() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-ranges-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let audioOnly = Vaf.fixture("ac3_51_plus_aac_stereo_two_tracks.mp4")
        let run = try await Self.vaf(["transcode", audioOnly, "--output-dir", dir.path, "--json", "--time-range", "+10f"])
        #expect(run.shellStatus == 65, "\(run.stderr)")
        let row = try #require(try Vaf.jsonLines(run.stdout).first)
        #expect(row["status"] as? String == "failed")
        #expect(row["error"] as? String == "\(audioOnly): --time-range +10f counts video frames, but the input has no video track with a frame rate", "\(row)")
    }

    @Test(arguments: ["30000/1001", "29.97"])
    func ntscRatesAreTakenAsFractionsAndDecimals(rate: String) async throws {
        let run = try await Self.vaf(["transcode", TranscodeCommandTests.clip, "--output-dir", "/nonexistent/never-written", "--dry-run", "--json",
                                      "--frame-rate", rate])
        #expect(run.shellStatus == 0, "\(run.stderr)")
        let row = try #require(try Vaf.jsonLines(run.stdout).first)
        #expect(abs((row["frameRate"] as? Double ?? 0) - 29.97) < 0.001, "\(row)")
    }

    @Test(arguments: [
        ("--frame-rate", "abc"), ("--frame-rate", "30/0"), ("--frame-rate", "0"), ("--frame-rate", "1000"),
        ("--time-range", "5-2"), ("--time-range", "+0f"), ("--time-range", "1:75-2:00"), ("--time-range", "90"),
    ])
    func badValuesAreUsageErrorsNamingTheOption(option: String, value: String) async throws {
        let run = try await Self.vaf(["transcode", TranscodeCommandTests.clip, "--output-dir", "/nonexistent/never-written", option, value])
        #expect(run.shellStatus == 64, "\(option) \(value): \(run.stderr)")
        #expect(run.stderr.contains(option) && run.stderr.contains(value), "\(run.stderr)")
    }
}

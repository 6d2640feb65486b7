import ChildProcess
import Foundation
import Testing

/// Re-runs resume only what was made from the same input with the same settings; outputs
/// mirror the input tree and never leave the output directory.
@Suite struct ResumeCommandTests {
    /// `vaf arguments…` off the cooperative pool, in `directory` when given.
    static func vaf(_ arguments: [String], in directory: URL? = nil) async throws -> (status: Int32, rows: [[String: Any]], stderr: String) {
        let child: ChildProcessResult
        if let directory {
            child = try await ChildProcess.run("/bin/sh", ["-c", "cd \"$0\" && exec \"$@\"", directory.path, Vaf.binary] + arguments, timeLimit: 600)
        } else {
            child = try await ChildProcess.run(Vaf.binary, arguments, timeLimit: 600)
        }
        return (child.shellStatus, arguments.contains("--json") ? try Vaf.jsonLines(child.stdout) : [], child.stderr)
    }

    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    private func statuses(_ rows: [[String: Any]]) -> [String] { rows.compactMap { $0["status"] as? String } }

    @Test func anotherPresetRedoesTheOutputsAndTheSameSettingsSkipThem() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out").path
        let clip = TranscodeCommandTests.clip
        let first = try await Self.vaf(["transcode", clip, "--preset", "640x480", "--output-dir", out, "--json"])
        #expect(first.status == 0 && statuses(first.rows) == ["completed"])
        let same = try await Self.vaf(["transcode", clip, "--preset", "640x480", "--output-dir", out, "--json"])
        #expect(statuses(same.rows) == ["skipped"])
        #expect((same.rows.first?["error"] as? String)?.contains("same settings") == true)
        let dry = try await Self.vaf(["transcode", clip, "--preset", "960x540", "--output-dir", out, "--json", "--dry-run"])
        #expect(statuses(dry.rows) == ["planned"], "the dry run says what the real run would do")
        let kept = try await Self.vaf(["transcode", clip, "--preset", "960x540", "--output-dir", out, "--json", "--no-overwrite"])
        #expect(statuses(kept.rows) == ["skipped"])
        #expect((kept.rows.first?["error"] as? String)?.contains("different settings") == true)
        let redone = try await Self.vaf(["transcode", clip, "--preset", "960x540", "--output-dir", out, "--json"])
        #expect(statuses(redone.rows) == ["completed"], "other settings: made again")
        #expect((redone.rows.first?["warnings"] as? [String])?.contains { $0.contains("made again") } == true)
        let again = try await Self.vaf(["transcode", clip, "--preset", "960x540", "--output-dir", out, "--json", "--dry-run"])
        #expect(statuses(again.rows) == ["skipped"], "and then it is done")
        let conflict = try await Self.vaf(["transcode", clip, "--overwrite", "--no-overwrite", "--output-dir", out])
        #expect(conflict.status == 64 && conflict.stderr.contains("--overwrite") && conflict.stderr.contains("--no-overwrite"))
    }

    /// Issue 30 item 4: the same batch started twice at once on one folder (a Job retried while
    /// its first pod still runs). Whichever run finishes an output second finds it made, by the
    /// journal, from the same input with the same settings: skipped, never failed. Both runs
    /// exit 0, every output is whole, and every journal line parses.
    @Test func twoRunsOfOneBatchAtOnceBothSucceed() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        let clip = try Data(contentsOf: URL(fileURLWithPath: TranscodeCommandTests.clip))
        for i in 0..<5 { try clip.write(to: inputs.appendingPathComponent("clip\(i).mp4")) }
        let out = dir.appendingPathComponent("out").path
        let arguments = ["transcode", inputs.path, "--preset", "640x480", "--output-dir", out, "--json"]
        async let first = Self.vaf(arguments)
        async let second = Self.vaf(arguments)
        let runs = try await [first, second]
        for run in runs {
            #expect(run.status == 0, "\(statuses(run.rows)) \(run.rows.compactMap { $0["error"] as? String })")
            #expect(run.rows.count == 5 && statuses(run.rows).allSatisfy { $0 == "completed" || $0 == "skipped" }, "\(statuses(run.rows))")
        }
        for row in runs.flatMap(\.rows) where row["status"] as? String == "skipped" {
            #expect((row["error"] as? String ?? "").hasPrefix("done"), "skipped as made, by the journal: \(row["error"] ?? "")")
        }
        let journal = try String(contentsOf: URL(fileURLWithPath: out).appendingPathComponent(".vaf-journal.jsonl"), encoding: .utf8)
        for line in journal.split(separator: "\n") {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "a torn journal line: \(line)")
        }
        for i in 0..<5 {
            let probe = try Vaf.run(executable: CorpusSweepTests.ffprobe, ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                                          "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", "\(out)/clip\(i).mp4"])
            #expect(probe.status == 0 && Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == 90, "clip\(i): \(probe.stdout)")
        }
    }

    /// Each setting of the plan besides the preset: a re-run with another value makes the output
    /// again (a different file), and a re-run with the same value skips it as done.
    @Test(arguments: [("--quality", "40", "80"), ("--video-bitrate", "300k", "1M"), ("--time-range", "0+1", "0+2")])
    func anotherValueOfASettingRedoesTheOutput(_ option: String, _ first: String, _ second: String) async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out").path
        let arguments = ["transcode", TranscodeCommandTests.clip, "--preset", "640x480", "--output-dir", out, "--json", option]
        let made = try await Self.vaf(arguments + [first])
        #expect(made.status == 0 && statuses(made.rows) == ["completed"], "\(option) \(first): \(made.stderr)")
        let output = try #require(made.rows.first?["output"] as? String)
        let firstFile = try Data(contentsOf: URL(fileURLWithPath: output))
        let same = try await Self.vaf(arguments + [first])
        #expect(statuses(same.rows) == ["skipped"], "\(option) \(first) again: done")
        let redone = try await Self.vaf(arguments + [second])
        #expect(statuses(redone.rows) == ["completed"], "\(option) \(second) after \(first): made again, not skipped as done (\(redone.rows))")
        #expect((redone.rows.first?["warnings"] as? [String])?.contains { $0.contains("made again") } == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)) != firstFile, "\(option) \(second): the file was rewritten")
        let again = try await Self.vaf(arguments + [second])
        #expect(statuses(again.rows) == ["skipped"], "\(option) \(second) again: done")
    }

    @Test func sameNamesInTwoFoldersGetTwoOutputsAndARunInPlaceIsIdempotent() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = try Data(contentsOf: URL(fileURLWithPath: TranscodeCommandTests.clip))
        for folder in ["day1", "day2"] {
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(folder), withIntermediateDirectories: true)
            try clip.write(to: dir.appendingPathComponent("\(folder)/take.mp4"))
        }
        let first = try await Self.vaf(["transcode", ".", "--preset", "640x480", "--json"], in: dir)
        #expect(first.status == 0 && statuses(first.rows) == ["completed", "completed"])
        for folder in ["day1", "day2"] {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("vaf-out/\(folder)/take.mp4").path), "mirrored: \(folder)")
        }
        let second = try await Self.vaf(["transcode", ".", "--preset", "640x480", "--json"], in: dir)
        #expect(statuses(second.rows) == ["skipped", "skipped"], "its own outputs are not inputs, and both are done")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("vaf-out/vaf-out").path))
    }

    @Test func aLinkOutOfTheOutputDirectoryIsRefused() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = dir.appendingPathComponent("in/sub"), out = dir.appendingPathComponent("out"), elsewhere = dir.appendingPathComponent("elsewhere")
        for folder in [inputs, out, elsewhere] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        try Data(contentsOf: URL(fileURLWithPath: TranscodeCommandTests.clip)).write(to: inputs.appendingPathComponent("clip.mp4"))
        // out/sub is a link to a folder outside out/: the mirrored output would land there.
        try FileManager.default.createSymbolicLink(at: out.appendingPathComponent("sub"), withDestinationURL: elsewhere)
        let run = try await Self.vaf(["transcode", dir.appendingPathComponent("in").path, "--output-dir", out.path, "--json"])
        #expect(run.status == 65)
        #expect((run.rows.first?["error"] as? String)?.contains("symbolic link") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty, "nothing written through the link")
    }
}

/// WebM outputs: an H.264/AAC preset is written as VP9 + Opus, and codecs WebM cannot hold are
/// usage errors naming both options.
@Suite struct WebMCommandTests {
    @Test func anH264PresetGoesToWebMAsVP9AndOpus() async throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try await ResumeCommandTests.vaf(["transcode", TranscodeCommandTests.clip, "--preset", "640x480", "--container", "webm",
                                                     "--output-dir", dir.path, "--json"])
        #expect(run.status == 0)
        let output = try #require(run.rows.first?["output"] as? String)
        #expect(output.hasSuffix(".webm"))
        let probe = try await ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", output], timeLimit: 60)
        #expect(probe.stdout.split(separator: "\n").map(String.init) == ["vp9", "opus"], "ffprobe: \(probe.stdout)")
        #expect((run.rows.first?["warnings"] as? [String])?.contains { $0.contains("vp9 + opus") } == true)
        let conflict = try await ResumeCommandTests.vaf(["transcode", TranscodeCommandTests.clip, "--container", "webm", "--video-codec", "h264",
                                                          "--output-dir", dir.path])
        #expect(conflict.status == 64 && conflict.stderr.contains("--video-codec h264") && conflict.stderr.contains("WebM"))
    }
}

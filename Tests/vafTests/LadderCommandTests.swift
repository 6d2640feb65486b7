import ChildProcess
import Foundation
import Testing

/// `vaf transcode` with a repeated `--preset`: one output per preset from one decode of each
/// input, named by `{preset}`, each with its JSON line and journal entry; ffprobe reads the outputs.
@Suite(.serialized) struct LadderCommandTests {
    /// A 2 s 1280x720 30 fps H.264 + AAC clip, `in.mp4` in `dir`.
    static func source(in dir: URL) throws -> String {
        let url = dir.appendingPathComponent("in.mp4")
        let ffmpeg = CorpusSweepTests.ffmpeg
        let made = try Vaf.run(executable: ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi",
                                                    "-i", "sine=f=440:sample_rate=48000", "-t", "2", "-c:v", "libx264", "-preset", "veryfast",
                                                    "-c:a", "aac", url.path])
        try #require(made.status == 0)
        return url.path
    }

    /// Width, height and frame count of the video of `path`, as ffprobe counts them.
    static func video(_ path: String) throws -> (width: Int, height: Int, frames: Int) {
        let ffprobe = CorpusSweepTests.ffprobe
        let probed = try Vaf.run(executable: ffprobe, ["-v", "error", "-select_streams", "v:0", "-count_packets",
                                                       "-show_entries", "stream=width,height,nb_read_packets", "-of", "json", path])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(probed.stdout.utf8)) as? [String: Any])
        let stream = try #require((json["streams"] as? [[String: Any]])?.first, "ffprobe read \(path)")
        return (stream["width"] as? Int ?? 0, stream["height"] as? Int ?? 0, Int(stream["nb_read_packets"] as? String ?? "") ?? -1)
    }

    private func statuses(_ rows: [[String: Any]]) -> [String] { rows.compactMap { $0["status"] as? String } }

    @Test func repeatedPresetsMakeOneOutputEachNamedByPresetAndResume() async throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.source(in: dir)
        let out = dir.appendingPathComponent("out").path
        let ladder = ["--preset", "1920x1080", "--preset", "960x540", "--preset", "640x480"]
        let made = try await ResumeCommandTests.vaf(["transcode", input] + ladder + ["--output-dir", out, "--json"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(statuses(made.rows) == ["completed", "completed", "completed"])
        let expected = [("in-1920x1080.mp4", 1280, 720), ("in-960x540.mp4", 960, 540), ("in-640x480.mp4", 640, 360)]
        #expect(made.rows.compactMap { ($0["output"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } } == expected.map(\.0))
        #expect(made.rows.compactMap { $0["preset"] as? String } == ["1920x1080", "960x540", "640x480"])
        for (name, width, height) in expected {
            let written = try Self.video("\(out)/\(name)")
            #expect((written.width, written.height) == (width, height), "\(name): \(written.width)x\(written.height), never upscaled")
            #expect(written.frames == 60, "\(name): \(written.frames) frames")
        }
        let journal = try String(contentsOfFile: "\(out)/.vaf-journal.jsonl", encoding: .utf8)
        // One completion line per output (beside the line each start writes, with bytes -1).
        let completions = journal.split(separator: "\n").filter { !$0.contains("\"bytes\":-1") }
        #expect(completions.count == 3, "one completion entry per output: \(journal)")

        // The same ladder again is done; one rung more makes that rung alone.
        let again = try await ResumeCommandTests.vaf(["transcode", input] + ladder + ["--preset", "LowQuality", "--output-dir", out, "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(statuses(again.rows) == ["skipped", "skipped", "skipped", "completed"])
        #expect(try Self.video("\(out)/in-LowQuality.mp4").frames == 60)
    }

    @Test func ladderUsageErrors() async throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = TranscodeCommandTests.clip
        let out = dir.appendingPathComponent("out").path
        let twice = try await ResumeCommandTests.vaf(["transcode", clip, "--preset", "640x480", "--preset", "640X480", "--output-dir", out])
        #expect(twice.status == 64)
        #expect(twice.stderr.contains("given twice"), "\(twice.stderr)")
        let unnamed = try await ResumeCommandTests.vaf(["transcode", clip, "--preset", "640x480", "--preset", "960x540", "--name", "{name}.{ext}",
                                                         "--output-dir", out])
        #expect(unnamed.status == 64)
        #expect(unnamed.stderr.contains("{preset}"), "\(unnamed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out), "a usage error writes nothing")
    }

    @Test func aShardKeepsAnInputsOutputsTogether() async throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = try Data(contentsOf: URL(fileURLWithPath: TranscodeCommandTests.clip))
        let inputs = try (0..<3).map { i -> String in
            let path = dir.appendingPathComponent("clip\(i).mp4")
            try clip.write(to: path)
            return path.path
        }
        let planned = try await ResumeCommandTests.vaf(["transcode"] + inputs + ["--preset", "640x480", "--preset", "LowQuality", "--shard", "1/2",
                                                         "--output-dir", dir.appendingPathComponent("out").path, "--dry-run", "--json"])
        #expect(planned.status == 0)
        #expect(planned.rows.compactMap { ($0["input"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } } == ["clip1.mp4", "clip1.mp4"])
        #expect(planned.rows.compactMap { $0["preset"] as? String } == ["640x480", "LowQuality"])
    }
}

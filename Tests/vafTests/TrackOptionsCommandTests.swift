import ChildProcess
import Foundation
import Testing

/// `vaf transcode --audio`, `--subtitles` and `--burn-subtitles` as a user types them: the tracks
/// kept, read back by ffprobe, and bad values refused as usage errors before anything is written.
@Suite struct TrackOptionsCommandTests {
    /// A 2 s H.264 Matroska file with English and French AAC tracks and English and French SubRip tracks.
    static func source(in dir: URL) throws -> String {
        let cue = dir.appendingPathComponent("cue.srt")
        try "1\n00:00:00,200 --> 00:00:01,500\nHello\n".write(to: cue, atomically: true, encoding: .utf8)
        let url = dir.appendingPathComponent("two languages.mkv").path
        let made = try Vaf.run(executable: "/usr/bin/ffmpeg", [
            "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=2",
            "-f", "lavfi", "-i", "sine=f=440:duration=2", "-f", "lavfi", "-i", "sine=f=660:duration=2", "-i", cue.path, "-i", cue.path,
            "-map", "0", "-map", "1", "-map", "2", "-map", "3", "-map", "4", "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac", "-c:s", "copy",
            "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra", "-metadata:s:s:0", "language=eng", "-metadata:s:s:1", "language=fra",
            url,
        ])
        try #require(made.status == 0, "\(made.stderr)")
        return url
    }

    /// "type:language" for each stream of `file`.
    static func streams(_ file: String) throws -> [String] {
        let probe = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,codec_name:stream_tags=language",
                                                                  "-of", "csv=p=0", file])
        return probe.stdout.split(separator: "\n").map(String.init)
    }

    @Test func theAudioAndSubtitleOptionsKeepTheTracksTheyName() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-tracks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let out = dir.appendingPathComponent("out")

        let french = try Vaf.run(["transcode", source, "--preset", "passthrough", "--container", "mkv", "--audio", "fra", "--subtitles", "none",
                                  "--output-dir", out.path, "--json", "--quiet"])
        try #require(french.status == 0, "\(french.stderr)")
        let report = try #require(try Vaf.jsonLines(french.stdout).last)
        #expect(try Self.streams(try #require(report["output"] as? String)) == ["h264,video", "aac,audio,fra"])

        let all = try Vaf.run(["transcode", source, "--preset", "640x480", "--audio", "all", "--name", "{name}-all.{ext}",
                               "--output-dir", out.path, "--json", "--quiet"])
        try #require(all.status == 0, "\(all.stderr)")
        let allReport = try #require(try Vaf.jsonLines(all.stdout).last)
        let kept = try Self.streams(try #require(allReport["output"] as? String)).filter { !$0.hasPrefix("bin_data") }
        #expect(kept == ["h264,video,und", "aac,audio,eng", "aac,audio,fra", "mov_text,subtitle,eng", "mov_text,subtitle,fra"], "\(kept)")

        let burnt = try Vaf.run(["transcode", source, "--preset", "640x480", "--burn-subtitles", "fra", "--subtitles", "none",
                                 "--name", "{name}-burnt.{ext}", "--output-dir", out.path, "--json", "--quiet"])
        try #require(burnt.status == 0, "\(burnt.stderr)")
        let burntReport = try #require(try Vaf.jsonLines(burnt.stdout).last)
        let dropped = (burntReport["droppedTracks"] as? [[String: Any]] ?? []).map { "\($0["trackID"] ?? ""): \($0["reason"] ?? "")" }
        #expect(dropped.contains("5: burnt into the picture") && dropped.contains("4: not selected (subtitles: none)"), "\(dropped)")
    }

    @Test func loudnessIsReportedInTheJSONAsTheSchemaSays() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-tracks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let run = try Vaf.run(["transcode", source, "--preset", "640x480", "--audio", "all", "--loudness", "I=-16:TP=-1.5",
                               "--output-dir", dir.appendingPathComponent("out").path, "--json", "--quiet"])
        try #require(run.status == 0, "\(run.stderr)")
        let line = try #require(try Vaf.jsonLines(run.stdout).last)
        let schema = try JSONLinesTests.schema("vaf-transcode.schema.json")
        #expect(schema.violations(of: line).isEmpty, "\(schema.violations(of: line))")
        let loudness = try #require(line["loudness"] as? [[String: Any]])
        #expect(loudness.count == 2, "one entry per audio track: \(loudness)")
        for entry in loudness {
            let result = try #require(entry["result"] as? [String: Any], "\(entry)")
            let integrated = try #require(result["integrated"] as? Double)
            let peak = try #require(result["truePeak"] as? Double)
            // A sine at −18 dBFS: its peak lets the gain reach −16 LUFS only so far.
            #expect(integrated <= -16 + 0.5 && peak <= -1.5 + 0.3, "\(entry)")
        }
    }

    /// Cues further apart than the writer's interleaving window (2 s) and the export's (0.5 s):
    /// the pictures and sound must not wait for the next cue, which is seconds away.
    @Test func sparseCuesHoldNoTrackBack() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-tracks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let cues = dir.appendingPathComponent("sparse.srt")
        try "1\n00:00:00,500 --> 00:00:02,000\nOne\n\n2\n00:00:02,500 --> 00:00:04,000\nTwo\n\n3\n00:00:05,000 --> 00:00:09,500\nThree\n"
            .write(to: cues, atomically: true, encoding: .utf8)
        let source = dir.appendingPathComponent("sparse.mkv").path
        let made = try Vaf.run(executable: "/usr/bin/ffmpeg", [
            "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=12", "-f", "lavfi", "-i", "sine=f=440:duration=12",
            "-i", cues.path, "-map", "0", "-map", "1", "-map", "2", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-c:s", "copy", source,
        ])
        try #require(made.status == 0, "\(made.stderr)")
        // A hang is the failure this guards against: the time limit only stops it.
        let child = try ChildProcess.run(Vaf.binary, ["transcode", source, "--preset", "640x480", "--output-dir", dir.appendingPathComponent("out").path,
                                                      "--json", "--quiet", "--hw", "off"], timeLimit: 120)
        try #require(child.shellStatus == 0, "\(child.stderr)")
        let output = try #require(try Vaf.jsonLines(child.stdout).last?["output"] as? String)
        let probe = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-select_streams", "s", "-show_entries", "packet=size", "-of", "csv=p=0", output])
        // mov_text writes the gaps between cues as empty (2-byte) samples.
        #expect(probe.stdout.split(separator: "\n").filter { (Int($0) ?? 0) > 2 }.count == 3, "\(probe.stdout)")
    }

    @Test(arguments: [
        (["--audio", "english"], "Bad --audio 'english'"),
        (["--subtitles", "3,"], "Bad --subtitles '3,'"),
        (["--burn-subtitles", "eng,fra"], "Bad --burn-subtitles 'eng,fra'"),
        (["--preset", "passthrough", "--burn-subtitles", "eng"], "--preset passthrough and --burn-subtitles eng conflict"),
    ])
    func badTrackOptionsAreUsageErrors(options: [String], message: String) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-tracks-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try Vaf.run(["transcode", Vaf.fixture("testsrc_320x240_30fps_3s.mp4"), "--output-dir", dir.path] + options)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path))
    }

    @Test func aBurnInTheFileCannotGiveFailsThatFileWithItsCause() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-tracks-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try Vaf.run(["transcode", Vaf.fixture("testsrc_320x240_30fps_3s.mp4"), "--burn-subtitles", "eng", "--output-dir", dir.path, "--quiet"])
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.contains("testsrc_320x240_30fps_3s.mp4") && result.stderr.contains("no subtitle track matches eng to burn in; the file has none"),
                "\(result.stderr)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).allSatisfy { $0 == ".vaf-journal.jsonl" })
    }
}

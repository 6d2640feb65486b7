import ChildProcess
import Foundation
import Testing

@Suite(.serialized) struct TranscodeCommandTests {
    static let clip = Vaf.fixture("testsrc_320x240_30fps_3s.mp4")

    private func report(_ stdout: String) throws -> [[String: Any]] {
        try Vaf.jsonLines(stdout)
    }

    @Test func aBatchWithBrokenFilesFinishesTheGoodOnesAndResumes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-batch-\(UUID().uuidString)")
        let inputs = dir.appendingPathComponent("in"), outputs = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = try Data(contentsOf: URL(fileURLWithPath: Self.clip))
        for i in 0..<17 { try clip.write(to: inputs.appendingPathComponent(String(format: "clip%02d.mp4", i))) }
        try Data().write(to: inputs.appendingPathComponent("empty.mp4"))
        try Data("not a movie".utf8).write(to: inputs.appendingPathComponent("notes.mov"))
        let whole = try Data(contentsOf: URL(fileURLWithPath: Vaf.fixture("h264_aac_iphone6_rot90_gps_metadata.mov")))
        try whole.prefix(whole.count / 2).write(to: inputs.appendingPathComponent("cut.mov"))

        let first = try Vaf.run(["transcode", inputs.path, "--preset", "640x480", "--output-dir", outputs.path, "--jobs", "2", "--json"])
        #expect(first.status == 65, "bad inputs: retrying cannot help")
        let rows = try report(first.stdout)
        #expect(rows.count == 20)
        #expect(rows.filter { $0["status"] as? String == "completed" }.count == 17)
        let failed = rows.filter { $0["status"] as? String == "failed" }
        #expect(Set(failed.compactMap { ($0["input"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } }) == ["empty.mp4", "notes.mov", "cut.mov"])
        #expect(failed.allSatisfy { ($0["error"] as? String)?.contains(inputs.path) == true }, "each failure names its file")
        let done = try #require(rows.first { $0["status"] as? String == "completed" })
        #expect(done["videoCodec"] as? String == "h264" && done["width"] as? Int == 320 && done["frames"] as? Int == 90)
        #expect(done["path"] as? String == "software")
        #expect(first.stderr.contains("17 completed"), "summary table on stderr with --json")
        let written = try FileManager.default.contentsOfDirectory(atPath: outputs.path).filter { $0 != ".vaf-journal.jsonl" }
        #expect(written.count == 17 && written.allSatisfy { $0.hasSuffix(".mp4") && !$0.hasPrefix(".") }, "\(written)")

        let second = try Vaf.run(["transcode", inputs.path, "--preset", "640x480", "--output-dir", outputs.path, "--jobs", "2", "--json"])
        let again = try report(second.stdout)
        #expect(again.filter { $0["status"] as? String == "skipped" }.count == 17, "a re-run resumes: finished files are skipped")
    }

    /// Kubernetes and Slurm stop jobs with SIGTERM: the batch stops like Ctrl-C, within 2 s,
    /// with a JSON row per input, and every file left is a complete output.
    @Test func sigtermStopsTheBatchCleanlyWith143() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-sigterm-\(UUID().uuidString)")
        let inputs = dir.appendingPathComponent("in"), outputs = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = try Data(contentsOf: URL(fileURLWithPath: Self.clip))
        for i in 0..<40 { try clip.write(to: inputs.appendingPathComponent(String(format: "clip%02d.mp4", i))) }
        // The signal goes as soon as the first output is complete, so some exports finished,
        // two are running and the rest have not started.
        let script = """
            "$0" transcode "$1" --preset 640x480 --output-dir "$2" --jobs 2 --json > "$3/rows.json" 2>/dev/null & p=$!
            until [ -e "$2/clip00.mp4" ] || ! kill -0 $p 2>/dev/null; do sleep 0.02; done
            t0=$(date +%s%N); kill -TERM $p; wait $p; status=$?
            echo "$status $(( ($(date +%s%N) - t0) / 1000000 ))"
            """
        let run = try Vaf.run(executable: "/bin/bash", ["-c", script, Vaf.binary, inputs.path, outputs.path, dir.path])
        let fields = run.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        try #require(fields.count == 2, "\(run.stdout) \(run.stderr)")
        #expect(fields[0] == 143, "exit status after SIGTERM")
        #expect(fields[1] < 2000, "stopped \(fields[1]) ms after the signal")
        let rows = try report(String(decoding: try Data(contentsOf: dir.appendingPathComponent("rows.json")), as: UTF8.self))
        #expect(rows.count == 40, "a row per input")
        // The resume journal is the one hidden file vaf keeps there on purpose.
        let written = Set(try FileManager.default.contentsOfDirectory(atPath: outputs.path)).subtracting([".vaf-journal.jsonl"])
        #expect(!written.contains { $0.hasPrefix(".") }, "no partial file: \(written)")
        let completed = Set(rows.filter { $0["status"] as? String == "completed" }.compactMap { ($0["output"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } })
        #expect(completed == written, "exactly the completed outputs exist")
        #expect(rows.allSatisfy { ["completed", "cancelled"].contains($0["status"] as? String ?? "") })
        #expect(rows.contains { $0["status"] as? String == "cancelled" }, "the signal came mid-batch")
    }

    /// An empty folder is an error, and a folder transcoded twice into its own output folder
    /// does not take its outputs as inputs.
    @Test func emptyFoldersFailAndOutputsAreNeverInputs() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-folder-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("empty"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let empty = try Vaf.run(["transcode", dir.appendingPathComponent("empty").path, "--output-dir", dir.appendingPathComponent("o").path])
        #expect(empty.status == 65)
        #expect(empty.stderr.contains("no media files found") && empty.stderr.contains("empty"), "\(empty.stderr)")
        try Data(contentsOf: URL(fileURLWithPath: Self.clip)).write(to: dir.appendingPathComponent("clip.mp4"))
        let out = dir.appendingPathComponent("vaf-out")
        for _ in 0..<2 {
            let run = try Vaf.run(["transcode", dir.path, "--preset", "640x480", "--output-dir", out.path, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try report(run.stdout).count == 1, "one input, the clip, not its output")
        }
        let written = (FileManager.default.enumerator(atPath: out.path)?.allObjects as? [String] ?? []).filter { $0 != ".vaf-journal.jsonl" }
        #expect(written == ["clip.mp4"], "\(written)")
    }

    /// A newline in a file name stays escaped in the one-line error, and a shard taken from a
    /// scheduler's environment is said.
    @Test func namesWithNewlinesStayOneLineAndEnvironmentShardsAreSaid() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-lines-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let odd = dir.appendingPathComponent("bad\nname.mp4")
        try Data("not a movie".utf8).write(to: odd)
        let failed = try Vaf.run(["transcode", odd.path, "--output-dir", dir.appendingPathComponent("o").path])
        #expect(failed.status == 65)
        // The summary fits the width: the cause follows the row, wrapped at spaces onto indented lines.
        let lines = failed.stdout.split(separator: "\n").map(String.init)
        let row = try #require(lines.firstIndex { $0.hasSuffix("failed") && $0.hasPrefix("bad\\nname.mp4") }, "\(failed.stdout)")
        let cause = lines[(row + 1)...].prefix { $0.hasPrefix("    ") }.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        #expect(cause.contains("bad\\nname.mp4") && cause.contains("not a media file"), "the whole error, escaped: \(failed.stdout)")
        #expect(!lines.contains { $0.hasPrefix("name.mp4") }, "the newline in the name is never printed raw: \(failed.stdout)")

        var environment = ProcessInfo.processInfo.environment
        environment["JOB_COMPLETION_INDEX"] = "1"
        environment["JOB_COMPLETIONS"] = "2"
        let child = try ChildProcess.run(Vaf.binary, ["transcode", Self.clip, odd.path, "--dry-run", "--output-dir", dir.appendingPathComponent("p").path],
                                         environment: environment, timeLimit: 120)
        #expect(child.stderr.contains("vaf: shard 1/2 from JOB_COMPLETION_INDEX=1, JOB_COMPLETIONS=2: 1 of 2 inputs"), "\(child.stderr)")
    }

    @Test func dryRunPrintsThePlanAndWritesNothing() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-dry-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try Vaf.run(["transcode", Vaf.fixture("hevc_main10_dolbyvision84_hlg_iphone14pro.mov"), "--preset", "hevc1920x1080",
                                  "--output-dir", dir.path, "--dry-run", "--json"])
        #expect(result.status == 0)
        let row = try #require(try report(result.stdout).first)
        #expect(row["status"] as? String == "planned")
        #expect(row["videoCodec"] as? String == "hevc")
        #expect(row["width"] as? Int == 1280 && row["height"] as? Int == 720)
        #expect((row["encoder"] as? String)?.hasPrefix("libx265") == true)
        #expect((row["output"] as? String)?.hasPrefix(dir.path) == true)
        #expect(!FileManager.default.fileExists(atPath: dir.path))
    }

    @Test func shardsSplitTheBatch() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-shard-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = [Self.clip, Vaf.fixture("vp9_profile2_10bit_240p.webm"), Vaf.fixture("h264_720p_android_slowmo_capture240fps.mp4")]
        let shard = try Vaf.run(["transcode"] + inputs + ["--output-dir", dir.path, "--dry-run", "--json", "--shard", "1/2"])
        let rows = try report(shard.stdout)
        #expect(rows.map { URL(fileURLWithPath: $0["input"] as? String ?? "").lastPathComponent } == ["vp9_profile2_10bit_240p.webm"])
    }

    @Test func presetsAndUsageErrors() throws {
        let list = try Vaf.run(["transcode", "--list-presets"])
        #expect(list.status == 0 && list.stdout.contains("HEVC1280x720") && list.stdout.contains("Passthrough"))
        #expect(try Vaf.run(["transcode", Self.clip, "--preset", "8K"]).status == 64)
        #expect(try Vaf.run(["transcode", Self.clip, "--frame-rate", "fast"]).status == 64)
        #expect(try Vaf.run(["transcode", Self.clip, "--time-range", "5-2"]).status == 64)
        let help = try Vaf.run(["transcode", "--help"])
        for option in ["--preset", "--list-presets", "--output-dir", "--name", "--container", "--frame-rate", "--time-range", "--video-codec",
                       "--video-bitrate", "--audio-codec", "--audio-bitrate", "--size", "--jobs", "--overwrite", "--dry-run", "--json", "--shard", "--shard-count", "--manifest"] {
            #expect(help.stdout.contains(option), "--help documents \(option)")
        }
    }
}

/// Issue 13, items 5 and 6: options that cannot all apply are usage errors naming both, and a
/// file whose name starts with a dash is a file.
@Suite struct TranscodeUsageTests {
    private func usageError(_ arguments: [String], naming names: [String]) throws {
        let result = try Vaf.run(["transcode", TranscodeCommandTests.clip, "--dry-run", "--output-dir", "/nonexistent/o"] + arguments)
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        for name in names { #expect(result.stderr.contains(name), "\(arguments) names \(name): \(result.stderr)") }
    }

    @Test func conflictingOptionsAreUsageErrorsNamingBoth() throws {
        try usageError(["--preset", "Passthrough", "--video-codec", "hevc"], naming: ["--preset Passthrough", "--video-codec hevc"])
        try usageError(["--preset", "passthrough", "--quality", "60"], naming: ["--preset passthrough", "--quality 60"])
        try usageError(["--preset", "Passthrough", "--frame-rate", "30"], naming: ["--preset Passthrough", "--frame-rate 30"])
        try usageError(["--quality", "60", "--video-bitrate", "2M"], naming: ["--quality 60", "--video-bitrate 2M"])
        try usageError(["--name", "out.mkv", "--container", "mp4"], naming: ["--name out.mkv", "--container mp4"])
        try usageError(["--name", "{name}.avi"], naming: ["--name {name}.avi", ".avi"])
        try usageError(["--quality", "101"], naming: ["--quality"])
        try usageError(["--speed", "warp"], naming: ["--speed", "slower"])
    }

    /// `--name out.mkv` without `--container` writes Matroska, as the name says.
    @Test func aNamedExtensionChoosesTheContainer() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-named-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try Vaf.run(["transcode", TranscodeCommandTests.clip, "--preset", "640x480", "--name", "out.mkv", "--output-dir", dir.path])
        #expect(run.status == 0, "\(run.stderr)")
        let probe = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=format_name", "-of", "csv=p=0",
                                                                 dir.appendingPathComponent("out.mkv").path])
        #expect(probe.stdout.contains("matroska"), "\(probe.stdout) \(probe.stderr)")
    }

    /// A fragmented MP4 cut off at a quarter of its bytes (a recording that never finished):
    /// its header says 2 s, its data ends sooner. The JSON line's seconds, and the speed from
    /// them, are what was written (ffprobe's duration of the output), not what the header said.
    @Test func aFileCutShortReportsTheSecondsItWrote() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-cut-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let whole = dir.appendingPathComponent("whole.mp4"), cut = dir.appendingPathComponent("cut.mp4")
        let made = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                                               "-f", "lavfi", "-i", "sine=f=300:r=48000", "-t", "6", "-c:v", "libx264", "-preset", "ultrafast",
                                                               "-g", "30", "-c:a", "aac", "-movflags", "frag_keyframe+empty_moov", whole.path])
        try #require(made.status == 0, "\(made.stderr)")
        let bytes = try Data(contentsOf: whole)
        try bytes.prefix(bytes.count / 4).write(to: cut)
        let run = try Vaf.run(["transcode", cut.path, "--preset", "640x480", "--output-dir", dir.appendingPathComponent("out").path, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let row = try #require(try Vaf.jsonLines(run.stdout).first)
        let probe = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                                                                 dir.appendingPathComponent("out/cut.mp4").path])
        let written = try #require(Double(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(probe.stdout)")
        let seconds = try #require(row["seconds"] as? Double)
        #expect(written < 1.9 && abs(seconds - written) <= 1.0 / 30, "reported \(seconds) s, written \(written) s")
    }

    @Test func aFileNamedLikeAnOptionIsAFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-dash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(contentsOf: URL(fileURLWithPath: TranscodeCommandTests.clip)).write(to: dir.appendingPathComponent("-dash.mp4"))
        let script = """
            cd "$1" && "$0" transcode -dash.mp4 --preset 640x480 --output-dir a --json > a.json 2>a.err; echo "plain $?"
            "$0" transcode --preset 640x480 --output-dir b -- -dash.mp4 > b.json 2>b.err; echo "terminator $?"
            "$0" transcode -nope.mp4 --output-dir c > /dev/null 2>c.err; echo "missing $?"
            """
        let run = try Vaf.run(executable: "/bin/bash", ["-c", script, Vaf.binary, dir.path])
        #expect(run.stdout.contains("plain 0"), "\(run.stdout) \((try? String(contentsOf: dir.appendingPathComponent("a.err"), encoding: .utf8)) ?? "")")
        #expect(run.stdout.contains("terminator 0"), "\(run.stdout) \((try? String(contentsOf: dir.appendingPathComponent("b.err"), encoding: .utf8)) ?? "")")
        #expect(run.stdout.contains("missing 64"), "a dash that names no file is still an option: \(run.stdout)")
        for out in ["a", "b"] {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("\(out)/-dash.mp4").path), "\(out)/-dash.mp4 written")
        }
    }
}

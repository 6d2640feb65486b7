import Foundation
import Testing

/// `vaf transcode`'s exit status tells a scheduler whether a retry can help: 65 (`EX_DATAERR`)
/// for bad inputs, 75 (`EX_TEMPFAIL`) when any failure is temporary (a device missing or
/// failing, the disk), with each failure's kind in its JSON line.
@Suite(.serialized) struct ExitCodeCommandTests {
    /// `vaf transcode` of `inputs` with `options` into a fresh folder: exit status and JSON rows.
    private func transcode(_ inputs: [String], _ options: [String] = []) async throws -> (status: Int32, rows: [[String: Any]]) {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try await ResumeCommandTests.vaf(["transcode"] + inputs + ["--output-dir", dir.appendingPathComponent("out").path, "--json", "--preset", "640x480"] + options)
        return (run.status, run.rows)
    }

    @Test func badInputsExit65AndATemporaryFailureExits75() async throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let notes = dir.appendingPathComponent("notes.mov")
        try Data("not a movie".utf8).write(to: notes)
        let clip = TranscodeCommandTests.clip
        let missingDevice = ["--hw", "require", "--device", "/dev/dri/renderD250"]

        let good = try await transcode([clip])
        #expect(good.status == 0)
        #expect(good.rows.first?["errorCode"] is NSNull, "no failure, no kind")

        let bad = try await transcode([notes.path, clip])
        #expect(bad.status == 65, "a bad input: retrying cannot help")
        #expect(bad.rows.compactMap { $0["errorCode"] as? String } == ["notMediaFile"])

        let temporary = try await transcode([clip], missingDevice)
        #expect(temporary.status == 75, "no device on this node: another may have one")
        #expect(temporary.rows.first?["errorCode"] as? String == "hardwareFailed", "\(temporary.rows)")

        let both = try await transcode([notes.path, clip], missingDevice)
        #expect(both.status == 75, "a batch with both kinds is worth retrying")
        #expect(Set(both.rows.compactMap { $0["errorCode"] as? String }) == ["notMediaFile", "hardwareFailed"])
    }

    /// A disk that fills while the muxer writes (a 300 KB tmpfs in a private mount namespace):
    /// exit 75 (retrying elsewhere may help), errorCode writeFailed, the output named, and
    /// nothing left but the journal.
    @Test(.enabled(if: PackageCommandTests.canMountScratchDisk,
                   "this machine cannot mount a small tmpfs in a private mount namespace (unshare --mount needs root or user namespaces)"))
    func aFullDiskExits75WithNothingLeft() async throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("ten-seconds.mp4")
        let made = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=10",
                                                    "-f", "lavfi", "-i", "sine=duration=10", "-c:v", "libx264", "-preset", "ultrafast",
                                                    "-c:a", "aac", source.path])
        try #require(made.status == 0, "ffmpeg could not make the source: \(made.stderr)")
        let out = dir.appendingPathComponent("full")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let script = """
            mount -t tmpfs -o size=300k none "$1" || exit 99
            "$0" transcode "$2" --preset 640x480 --output-dir "$1" --json > "$3/full.json" 2>/dev/null
            echo $?
            ls -A "$1"
            """
        let run = try Vaf.run(executable: "/usr/bin/unshare", ["--mount", "/bin/bash", "-c", script, Vaf.binary, out.path, source.path, dir.path])
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "75", "exit status on a full disk: \(run.stdout) \(run.stderr)")
        #expect(lines.dropFirst().filter { $0 != ".vaf-journal.jsonl" }.isEmpty, "nothing left: \(lines.dropFirst())")
        let row = try #require(try Vaf.jsonLines(String(decoding: try Data(contentsOf: dir.appendingPathComponent("full.json")), as: UTF8.self)).first)
        #expect(row["errorCode"] as? String == "writeFailed", "\(row)")
        let error = row["error"] as? String ?? ""
        #expect(error.contains(out.appendingPathComponent("ten-seconds.mp4").path) && !error.contains("vaf-partial"), "names the output: \(error)")
    }

    @Test func aFolderWithoutMediaExits65WithOneLine() async throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try await ResumeCommandTests.vaf(["transcode", dir.path, "--output-dir", dir.appendingPathComponent("out").path])
        #expect(run.status == 65)
        #expect(run.stderr.hasPrefix("vaf: ") && run.stderr.split(separator: "\n").count == 1 && run.stderr.contains("no media files found"), "\(run.stderr)")
    }
}

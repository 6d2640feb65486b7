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

    @Test func aFolderWithoutMediaExits65WithOneLine() async throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try await ResumeCommandTests.vaf(["transcode", dir.path, "--output-dir", dir.appendingPathComponent("out").path])
        #expect(run.status == 65)
        #expect(run.stderr.hasPrefix("vaf: ") && run.stderr.split(separator: "\n").count == 1 && run.stderr.contains("no media files found"), "\(run.stderr)")
    }
}

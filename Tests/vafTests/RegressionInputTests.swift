import ChildProcess
import Foundation
import Testing

/// The inputs in `../shared/regressions` once crashed or hung `vaf`; ffmpeg converts both.
/// Each must now convert within seconds, with what it could not use named in warnings.
@Suite struct RegressionInputTests {
    static let directory = Vaf.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/regressions")

    /// `vaf transcode --json` of one regression input, killed after a minute if it hangs.
    private func transcode(_ name: String) throws -> (status: Int32, row: [String: Any], leftovers: [String]) {
        let input = Self.directory.appendingPathComponent(name)
        try #require(FileManager.default.fileExists(atPath: input.path), "CI always has ../shared/regressions; missing: \(input.path)")
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-regression-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let child = try ChildProcess.run(Vaf.binary, ["transcode", input.path, "--preset", "640x480", "--output-dir", out.path, "--json"],
                                         timeLimit: 60)
        let rows = try Vaf.jsonLines(child.stdout)
        // Everything but the resume journal, which vaf keeps there on purpose.
        let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []).filter { $0 != ".vaf-journal.jsonl" }
        return (child.shellStatus, try #require(rows.first), leftovers)
    }

    @Test func anAudioTrackWithoutReadablePacketsIsDroppedNotWaitedFor() throws {
        let (status, row, files) = try transcode("hang_audio_track_without_packets.mov")
        #expect(status == 0, "\(row)")
        #expect(row["status"] as? String == "completed")
        #expect(row["frames"] as? Int == 120, "every video frame")
        let warnings = row["warnings"] as? [String] ?? []
        #expect(warnings.contains { $0.hasPrefix("track 1 (audio)") && $0.contains("exported without it") }, "\(warnings)")
        let dropped = row["droppedTracks"] as? [[String: Any]] ?? []
        #expect(dropped.contains { $0["trackID"] as? Int == 1 && $0["mediaType"] as? String == "audio" }, "\(dropped)")
        #expect(files == ["hang_audio_track_without_packets.mp4"], "\(files)")
    }

    /// Packaged, the unreadable sound is left out as a transcode leaves it out: the package
    /// has its pictures and no audio rendition, says so, and ffmpeg plays it.
    @Test func aPackageLeavesOutTheRenditionOfATrackWithoutReadablePackets() throws {
        let input = Self.directory.appendingPathComponent("hang_audio_track_without_packets.mov")
        try #require(FileManager.default.fileExists(atPath: input.path), "CI always has ../shared/regressions; missing: \(input.path)")
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-regression-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let child = try ChildProcess.run(Vaf.binary, ["package", input.path, "--output-dir", out.path, "--ladder", "234x416@300k", "--json"],
                                         timeLimit: 60)
        let row = try #require(try Vaf.jsonLines(child.stdout).first)
        #expect(child.shellStatus == 0 && row["status"] as? String == "completed", "\(row)")
        let warnings = row["warnings"] as? [String] ?? []
        #expect(warnings.contains { $0.hasPrefix("the audio rendition is left out") && $0.contains("track 1 (audio)") }, "\(warnings)")
        let renditions = row["renditions"] as? [[String: Any]] ?? []
        #expect(renditions.map { $0["folder"] as? String } == ["234p"] && renditions.first?["samples"] as? Int == 120, "\(renditions)")
        let package = out.appendingPathComponent("hang_audio_track_without_packets")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: package.path)) == ["234p", "master.m3u8", "manifest.mpd"])
        let master = try String(contentsOf: package.appendingPathComponent("master.m3u8"), encoding: .utf8)
        #expect(!master.contains("TYPE=AUDIO") && !master.contains("AUDIO=\""), "\(master)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasPrefix(".") && $0 != ".vaf-journal.jsonl" }
        #expect(leftovers.isEmpty, "\(leftovers)")
        if FileManager.default.fileExists(atPath: "/usr/bin/ffmpeg") {
            let play = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-i", package.appendingPathComponent("master.m3u8").path, "-f", "null", "-"],
                                            timeLimit: 60)
            #expect(play.shellStatus == 0 && play.stderr.isEmpty, "\(play.stderr)")
        }
    }

    @Test func aStreamAppearingMidFileIsIgnoredNotACrash() throws {
        let info = try Vaf.run(["info", Self.directory.appendingPathComponent("crash_ts_stream_appears_midfile.ts").path])
        #expect(info.status == 0)
        #expect(info.stdout.contains("first appeared mid-file and is ignored"), "\(info.stdout)")
        let (status, row, files) = try transcode("crash_ts_stream_appears_midfile.ts")
        #expect(status == 0, "\(row)")
        // ffmpeg decodes 50 frames of this damaged file; we write 49 (one picture is too damaged to decode).
        #expect((49...50).contains(row["frames"] as? Int ?? 0), "\(row)")
        #expect(files == ["crash_ts_stream_appears_midfile.mp4"], "\(files)")
    }
}

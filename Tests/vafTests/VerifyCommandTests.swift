import ChildProcess
import Foundation
import Testing

/// `vaf verify`: a full decode of every track, checked against files whose damage is known
/// because the test made it (a frame overwritten, a file cut short, a stream whose clock
/// jumps), with ffmpeg and ffprobe as the oracle for what a decoder makes of them.
@Suite(.disabled(if: !FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "ffmpeg is the oracle (Hardware/setup.sh installs it)"))
struct VerifyCommandTests {
    static let frameRate = 30.0
    static let (ffmpeg, ffprobe) = ("/usr/bin/ffmpeg", "/usr/bin/ffprobe")

    /// A 3 s 320x240 H.264 (no B-frames, a keyframe a second) and AAC file made by ffmpeg.
    static func clean(_ name: String, in dir: URL, seconds: Int = 3, extra: [String] = []) throws -> URL {
        let url = dir.appendingPathComponent(name)
        let made = try Vaf.run(executable: ffmpeg, [
            "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=\(seconds)",
            "-f", "lavfi", "-i", "sine=f=440:d=\(seconds)", "-c:v", "libx264", "-bf", "0", "-g", "30", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-shortest",
        ] + extra + [url.path])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        return url
    }

    static func directory(_ label: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-verify-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Frames ffprobe decodes from each stream of `url`, by stream index.
    static func decodedFrames(_ url: URL) throws -> [Int] {
        let probe = try Vaf.run(executable: ffprobe, ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames",
                                                                "-of", "csv=p=0", url.path])
        return probe.stdout.split(separator: "\n").map { Int($0.trimmingCharacters(in: .whitespaces)) ?? -1 }
    }

    /// The one JSON line of `vaf verify --json url`, checked against the schema, and the exit status.
    static func verify(_ url: URL, _ extra: [String] = []) throws -> (status: Int32, line: [String: Any]) {
        let run = try Vaf.run(["verify", url.path, "--json"] + extra)
        let lines = try Vaf.jsonLines(run.stdout)
        try #require(lines.count == 1, "one line: \(run.stdout) \(run.stderr)")
        let schema = try JSONLinesTests.schema("vaf-verify.schema.json")
        #expect(schema.violations(of: lines[0]).isEmpty, "\(schema.violations(of: lines[0]))")
        return (run.status, lines[0])
    }

    static func tracks(_ line: [String: Any]) -> [[String: Any]] { line["tracks"] as? [[String: Any]] ?? [] }

    /// The time of the first video packet, by ffprobe (Matroska starts its video after AAC's priming).
    static func firstVideoTime(_ url: URL) throws -> Double {
        let probe = try Vaf.run(executable: ffprobe, ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time",
                                                      "-of", "csv=p=0", url.path])
        return probe.stdout.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ", "))) }.min() ?? .nan
    }

    /// ffmpeg's own complaints when it decodes `url` to nothing (`-v error`).
    static func ffmpegErrors(_ url: URL) throws -> String {
        try Vaf.run(executable: ffmpeg, ["-v", "error", "-nostdin", "-i", url.path, "-f", "null", "-"]).stderr
    }

    /// A copy of `url` with the second half of the video packet shown at `time` overwritten with
    /// noise (its place from ffprobe's packet list); returns the copy and that packet's time.
    static func damaging(_ url: URL, at time: Double, to damaged: URL) throws -> Double {
        let packets = try Vaf.run(executable: ffprobe, ["-v", "error", "-select_streams", "v", "-show_entries",
                                                                  "packet=pts_time,pos,size", "-of", "csv=p=0", url.path])
        let rows = packets.stdout.split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
        let hit = try #require(rows.first { abs((Double($0[0]) ?? -1) - time) < 0.5 / frameRate }, "no packet at \(time) s")
        let (pts, size, position) = (Double(hit[0])!, Int(hit[1])!, Int(hit[2])!)
        var bytes = [UInt8](try Data(contentsOf: url))
        var state: UInt32 = 12345
        for i in (position + size / 4)..<(position + size - 4) {
            state = state &* 1_103_515_245 &+ 12345
            bytes[i] = UInt8(truncatingIfNeeded: state >> 16)
        }
        try Data(bytes).write(to: damaged)
        return pts
    }

    @Test func aCleanFileIsOkWithEveryFrameItHolds() throws {
        let dir = try Self.directory("clean")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.clean("clean.mkv", in: dir)
        let (status, line) = try Self.verify(file)
        #expect(status == 0)
        #expect(line["verdict"] as? String == "ok", "\(line)")
        #expect((line["problems"] as? [String])?.isEmpty == true)
        #expect(try Self.ffmpegErrors(file).isEmpty, "ffmpeg agrees the file is whole")
        // Every frame ffprobe decodes, and the video's 3 s to the frame.
        #expect(Self.tracks(line).map { $0["frames"] as? Int ?? -1 } == (try Self.decodedFrames(file)))
        let video = try #require(Self.tracks(line).first { $0["mediaType"] as? String == "video" })
        #expect(video["frames"] as? Int == 90)
        #expect(abs((video["start"] as? Double ?? -1) - (try Self.firstVideoTime(file))) < 0.001)
        #expect(abs((video["end"] as? Double ?? 0) - (try Self.firstVideoTime(file)) - 3.0) < 0.001)
    }

    /// An AVI whose every other frame was dropped: its header counts 59 frames, 30 are there,
    /// and the file is whole, as ffmpeg's silent decode agrees.
    @Test func anAVIWithDroppedFramesIsOk() throws {
        let dir = try Self.directory("avi")
        defer { try? FileManager.default.removeItem(at: dir) }
        let avi = dir.appendingPathComponent("gaps.avi")
        let made = try Vaf.run(executable: Self.ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
                                                         "-vf", "select='not(mod(n,2))'", "-vsync", "passthrough", "-c:v", "mjpeg", avi.path])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        #expect(try Self.ffmpegErrors(avi).isEmpty)
        let (status, line) = try Self.verify(avi)
        #expect(status == 0 && line["verdict"] as? String == "ok", "\(line)")
        #expect(Self.tracks(line).first?["frames"] as? Int == (try Self.decodedFrames(avi).first))
    }

    /// One P-frame overwritten at 1.5 s: the file is damaged, exactly there, as ffmpeg's decoder also says.
    @Test func aDamagedFrameIsFoundAtItsTime() throws {
        let dir = try Self.directory("damaged")
        defer { try? FileManager.default.removeItem(at: dir) }
        let damaged = dir.appendingPathComponent("damaged.mkv")
        let at = try Self.damaging(try Self.clean("clean.mkv", in: dir), at: 1.5, to: damaged)
        let (status, line) = try Self.verify(damaged)
        #expect(status == 65, "a damaged file is bad input")
        #expect(line["verdict"] as? String == "damaged", "\(line)")
        #expect(!(try Self.ffmpegErrors(damaged)).isEmpty, "ffmpeg's decoder complains too")
        let video = try #require(Self.tracks(line).first { $0["mediaType"] as? String == "video" })
        let found = ((video["damagedPackets"] as? [Double?] ?? []) + (video["concealedFrames"] as? [Double?] ?? [])).compactMap { $0 }
        #expect(found.min().map { abs($0 - at) < 0.5 / Self.frameRate } == true, "damage at \(found), the packet overwritten is at \(at) s")
        #expect(found.allSatisfy { $0 >= at - 0.5 / Self.frameRate && $0 < 2.0 }, "nothing before it or past the next keyframe: \(found)")
        #expect((line["problems"] as? [String])?.contains { $0.contains(String(format: "%.2f s", at)) } == true, "\(line["problems"] ?? "")")
        let audio = try #require(Self.tracks(line).first { $0["mediaType"] as? String == "audio" })
        #expect((audio["damagedPackets"] as? [Any])?.isEmpty == true && (audio["concealedFrames"] as? [Any])?.isEmpty == true)
    }

    /// Cut at 60 %: an MP4 whose index lists what is gone, and a Matroska file whose header
    /// declares the duration. Both are damaged, with the frames that are left counted.
    @Test(arguments: ["mp4", "mkv"])
    func aFileCutShortIsDamagedWithWhatIsMissing(container: String) throws {
        let dir = try Self.directory("cut")
        defer { try? FileManager.default.removeItem(at: dir) }
        let whole = try Data(contentsOf: try Self.clean("clean.\(container)", in: dir, extra: container == "mp4" ? ["-movflags", "+faststart"] : []))
        let cut = dir.appendingPathComponent("cut.\(container)")
        try whole.prefix(whole.count * 6 / 10).write(to: cut)
        let (status, line) = try Self.verify(cut)
        #expect(status == 65)
        #expect(line["verdict"] as? String == "damaged", "\(line)")
        let video = try #require(Self.tracks(line).first { $0["mediaType"] as? String == "video" })
        let left = try #require(try Self.decodedFrames(cut).first)
        #expect(video["frames"] as? Int == left, "the frames ffprobe decodes from what is left")
        let end = try Self.firstVideoTime(cut) + Double(left) / Self.frameRate
        #expect(abs((video["end"] as? Double ?? 0) - end) < 0.001)
        let problems = (line["problems"] as? [String] ?? []).joined(separator: "; ")
        if container == "mp4" {
            // The index declares 3 s for the track.
            #expect(abs((video["missingSeconds"] as? Double ?? 0) - (3.0 - end)) < 0.001, "\(video)")
            #expect(problems.contains("missing at the end"), "\(problems)")
        } else {
            #expect(problems.contains("early: its container declares"), "\(problems)")
        }
    }

    /// An MP4 whose 11th video sample size is impossible (2 GB): FFmpeg drops the index from
    /// there on, logs an error and reads 10 samples as if the track ended, its duration intact.
    /// verify finds the 50 lost samples, and a passthrough copy warns of them.
    @Test func anIndexEntryFFmpegRefusesIsFoundAndPassthroughSaysSo() throws {
        let dir = try Self.directory("stsz")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("clean.mp4")
        let made = try Vaf.run(executable: Self.ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
                                                         "-c:v", "libx264", "-bf", "0", "-pix_fmt", "yuv420p", url.path])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        var bytes = [UInt8](try Data(contentsOf: url))
        let box = try #require(bytes.indices.dropLast(16).first { bytes[$0..<($0 + 4)] == [0x73, 0x74, 0x73, 0x7A] }, "an stsz box")
        let entry = box + 4 + 4 + 4 + 4 + 4 * 10  // version/flags, uniform size, count, then entries
        bytes.replaceSubrange(entry..<(entry + 4), with: [0x7F, 0xFF, 0xF0, 0x00])
        let damaged = dir.appendingPathComponent("bad-size.mp4")
        try Data(bytes).write(to: damaged)
        let probe = try Vaf.run(executable: Self.ffprobe, ["-v", "error", "-count_packets", "-show_entries", "stream=nb_frames,nb_read_packets",
                                                           "-of", "csv=p=0", damaged.path])
        let counts = probe.stdout.split(separator: "\n").first.map { $0.split(separator: ",").compactMap { Int($0) } } ?? []
        try #require(counts == [60, 10], "ffprobe reads 10 of the 60 samples the index lists: \(probe.stdout)")

        let (status, line) = try Self.verify(damaged)
        #expect(status == 65)
        #expect(line["verdict"] as? String == "damaged", "\(line)")
        let video = try #require(Self.tracks(line).first)
        #expect(video["unreadSamples"] as? Int == 50 && video["packets"] as? Int == 10, "\(video)")

        let copy = try Vaf.run(["transcode", damaged.path, "--preset", "passthrough", "--output-dir", dir.appendingPathComponent("out").path, "--json"])
        let report = try #require(try Vaf.jsonLines(copy.stdout).first)
        #expect(report["status"] as? String == "completed", "ffmpeg copies it too: \(copy.stderr)")
        let warnings = report["warnings"] as? [String] ?? []
        #expect(warnings.contains { $0.contains("only 10 of the 60 samples its index lists can be read") }, "\(warnings)")

        // 15 MB, under FFmpeg's limit but past the end of the file: FFmpeg hands out the bytes
        // it could read as that sample (ffmpeg -c copy writes them). Passthrough leaves it out
        // and says so, and what it writes decodes without an error.
        bytes.replaceSubrange(entry..<(entry + 4), with: [0x00, 0xF0, 0x00, 0x00])
        let cut = dir.appendingPathComponent("cut-sample.mp4")
        try Data(bytes).write(to: cut)
        let out = dir.appendingPathComponent("out-cut")
        let kept = try Vaf.run(["transcode", cut.path, "--preset", "passthrough", "--output-dir", out.path, "--json"])
        let keptReport = try #require(try Vaf.jsonLines(kept.stdout).first)
        #expect(keptReport["status"] as? String == "completed", "\(kept.stderr)")
        let keptWarnings = keptReport["warnings"] as? [String] ?? []
        #expect(keptWarnings.contains { $0.contains("1 sample cut off by the end of the file") && $0.contains("at 0.33 s: not copied") }, "\(keptWarnings)")
        let written = out.appendingPathComponent("cut-sample.mp4")
        #expect(try Self.ffmpegErrors(written).isEmpty, "the copy decodes cleanly")
        #expect(try Self.decodedFrames(written) == [10], "the 10 whole samples before it")
    }

    /// Every file of `../shared/media` and `../shared/regressions`: where ffmpeg's decode of it
    /// complains (its demuxer's or decoders' errors; the null muxer's complaints about
    /// timestamps are not the file's), it is not ok; where ffmpeg is silent, it is ok, but for
    /// the two files whose loss ffmpeg does not see, named here. A whole track passthrough
    /// cannot read says so too.
    @Test func theSharedCorpusAgreesWithFFmpegsDecode() throws {
        let shared = Vaf.packageRoot.deletingLastPathComponent().appendingPathComponent("shared")
        let folders = ["media", "regressions"].map { shared.appendingPathComponent($0).path }
        try #require(folders.allSatisfy { FileManager.default.fileExists(atPath: $0) }, "CI always has ../shared/media and ../shared/regressions")
        let silentLoss = [
            "aac_audiobook_chapters_truncated.m4b": "damaged",  // 47 h declared, no audio sample readable
            "wav_header_only_zero_samples.wav": "unreadable",   // a header and no sample
        ]
        let run = try Vaf.run(["verify", "--json", "--jobs", "2"] + folders)
        let lines = try Vaf.jsonLines(run.stdout)
        #expect(lines.count >= 40, "\(run.stderr)")
        for line in lines {
            let input = line["input"] as? String ?? ""
            let name = URL(fileURLWithPath: input).lastPathComponent
            let complaints = try Self.ffmpegErrors(URL(fileURLWithPath: input)).split(separator: "\n")
                .filter { !$0.hasPrefix("[null @") && !$0.contains("non monotonically increasing dts to muxer") && !$0.contains("Last message repeated") }
            let verdict = line["verdict"] as? String
            if let expected = silentLoss[name] {
                #expect(complaints.isEmpty && verdict == expected, "\(name): \(verdict ?? "none"), ffmpeg: \(complaints)")
            } else {
                #expect((verdict == "ok") == complaints.isEmpty, "\(name): \(verdict ?? "none") \(line["problems"] ?? ""), ffmpeg: \(complaints)")
            }
        }
        let partial = shared.appendingPathComponent("media/broken_zero_empty_stsc_partial.mp4").path
        let out = try Self.directory("partial")
        defer { try? FileManager.default.removeItem(at: out) }
        let copy = try Vaf.run(["transcode", partial, "--preset", "passthrough", "--output-dir", out.path, "--json"])
        let warnings = (try Vaf.jsonLines(copy.stdout).first?["warnings"] as? [String]) ?? []
        #expect(warnings.contains { $0.contains("before the end its container declares (41.640 s): the rest could not be read") }, "\(warnings) \(copy.stderr)")
    }

    /// Two transport streams joined, the second's clock 60 s on: every track jumps, by what
    /// ffprobe reads from the packets.
    @Test func timestampsThatJumpAreFound() throws {
        let dir = try Self.directory("jump")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try Self.clean("a.ts", in: dir, seconds: 2)
        let second = try Self.clean("b.ts", in: dir, seconds: 2, extra: ["-output_ts_offset", "60"])
        let joined = dir.appendingPathComponent("joined.ts")
        try (try Data(contentsOf: first) + Data(contentsOf: second)).write(to: joined)
        let (status, line) = try Self.verify(joined)
        #expect(status == 65)
        #expect(line["verdict"] as? String == "damaged")
        // From the end of the first stream's 60 frames to the second's first frame, in the joined file's clock.
        let expected = (try Self.firstVideoTime(second) - Self.firstVideoTime(first)) - 2.0
        let video = try #require(Self.tracks(line).first { $0["mediaType"] as? String == "video" })
        let jumps = video["timestampJumps"] as? [[String: Double]] ?? []
        #expect(jumps.count == 1, "\(jumps)")
        #expect(abs((jumps.first?["by"] ?? 0) - expected) < 0.5 / Self.frameRate, "jumped \(jumps), ffprobe's packets say \(expected) s")
        #expect(video["frames"] as? Int == 120)
    }

    /// What no demuxer reads is unreadable, not a crash or a usage error.
    @Test func aFileThatIsNotMediaIsUnreadable() throws {
        let dir = try Self.directory("text")
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = dir.appendingPathComponent("notes.mp4")
        try Data("shopping list: milk, eggs\n".utf8).write(to: text)
        let (status, line) = try Self.verify(text)
        #expect(status == 65)
        #expect(line["verdict"] as? String == "unreadable")
        #expect((line["problems"] as? [String])?.first?.contains("not a media file") == true, "\(line)")
        let missing = try Vaf.run(["verify", dir.appendingPathComponent("absent.mp4").path])
        #expect(missing.status == 65 && missing.stderr.contains("absent.mp4"), "\(missing.stderr)")
    }

    /// A folder of four files, two at a time: a line each with its verdict, the summary, 65;
    /// a shard takes its half; the journal lets a second run skip what did not change.
    @Test func aBatchReportsEveryFileTakesShardsAndResumes() throws {
        let dir = try Self.directory("batch")
        defer { try? FileManager.default.removeItem(at: dir) }
        let library = dir.appendingPathComponent("library")
        try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
        let clean = try Self.clean("a-clean.mkv", in: library)
        _ = try Self.damaging(clean, at: 1.5, to: library.appendingPathComponent("b-damaged.mkv"))
        let whole = try Data(contentsOf: clean)
        try whole.prefix(whole.count / 2).write(to: library.appendingPathComponent("c-cut.mkv"))
        try Data("not media".utf8).write(to: library.appendingPathComponent("d-text.mp4"))
        let expected = ["a-clean.mkv": "ok", "b-damaged.mkv": "damaged", "c-cut.mkv": "damaged", "d-text.mp4": "unreadable"]
        func verdicts(_ stdout: String) throws -> [String: String] {
            try Dictionary(uniqueKeysWithValues: Vaf.jsonLines(stdout).map {
                (URL(fileURLWithPath: $0["input"] as? String ?? "").lastPathComponent, $0["verdict"] as? String ?? "none")
            })
        }
        let journal = dir.appendingPathComponent("journal").path
        let first = try Vaf.run(["verify", library.path, "--jobs", "2", "--json", "--journal", journal])
        #expect(first.status == 65)
        #expect(try verdicts(first.stdout) == expected)
        #expect(first.stderr.contains("verified 4 files: 1 ok, 2 damaged, 1 unreadable"), "\(first.stderr)")

        let shard = try Vaf.run(["verify", library.path, "--json", "--shard", "1/2"])
        #expect(try verdicts(shard.stdout) == ["b-damaged.mkv": "damaged", "d-text.mp4": "unreadable"])

        let again = try Vaf.run(["verify", library.path, "--json", "--journal", journal])
        #expect(again.status == 65, "the recorded verdicts still count")
        #expect(try verdicts(again.stdout) == expected)
        #expect(try Vaf.jsonLines(again.stdout).allSatisfy { $0["status"] as? String == "skipped" })

        // A file changed since its check is checked again.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: clean.path)
        let changed = try Vaf.run(["verify", library.path, "--json", "--journal", journal])
        let statuses = try Dictionary(uniqueKeysWithValues: Vaf.jsonLines(changed.stdout).map {
            (URL(fileURLWithPath: $0["input"] as? String ?? "").lastPathComponent, $0["status"] as? String ?? "")
        })
        #expect(statuses == ["a-clean.mkv": "completed", "b-damaged.mkv": "skipped", "c-cut.mkv": "skipped", "d-text.mp4": "skipped"])
    }

    /// SIGTERM after the first file's line: 143, and a line for every file, the rest cancelled.
    @Test func aSignalStopsTheBatchWithALinePerFile() throws {
        let dir = try Self.directory("signal")
        defer { try? FileManager.default.removeItem(at: dir) }
        let library = dir.appendingPathComponent("library")
        try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
        let clip = try Data(contentsOf: try Self.clean("clip.mkv", in: dir, seconds: 20))
        for i in 0..<6 { try clip.write(to: library.appendingPathComponent("clip\(i).mkv")) }
        let script = """
            "$0" verify "$1" --json > "$2/rows.json" 2>/dev/null & p=$!
            until [ -s "$2/rows.json" ] || ! kill -0 $p 2>/dev/null; do sleep 0.02; done
            kill -TERM $p; wait $p; echo $?
            """
        let run = try Vaf.run(executable: "/bin/bash", ["-c", script, Vaf.binary, library.path, dir.path])
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "143", "\(run.stdout) \(run.stderr)")
        let rows = try Vaf.jsonLines(String(decoding: try Data(contentsOf: dir.appendingPathComponent("rows.json")), as: UTF8.self))
        #expect(rows.count == 6, "a line per file")
        #expect(rows.contains { $0["status"] as? String == "cancelled" })
        #expect(rows.filter { $0["status"] as? String == "completed" }.allSatisfy { $0["verdict"] as? String == "ok" })
    }
}

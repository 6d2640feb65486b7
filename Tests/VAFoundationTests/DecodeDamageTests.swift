import Foundation
import Testing
@testable import VAFoundation

/// A damaged packet is skipped and counted, as ffmpeg does; a stream that is mostly damage
/// fails with the counts. Both files are real damaged media from the shared corpus.
@Suite struct DecodeDamageTests {
    /// Exports `name` of Tests/vafTests/Corpus into `dir` as out.mp4.
    private func exportCorpusFile(_ name: String, preset: ExportPreset, into dir: URL) async throws -> (result: ExportResult, output: URL) {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("vafTests/Corpus/\(name)")
        let output = dir.appendingPathComponent("out.mp4")
        return (try await ExportSession(asset: Asset(url: source), preset: preset).export(to: output, as: .mp4), output)
    }

    /// ffprobe's CSV lines for `entries` of `url`.
    private func probeLines(_ url: URL, _ arguments: [String]) throws -> [String] {
        let probe = try #require(which("ffprobe"))
        return String(decoding: try run(probe, ["-v", "error"] + arguments + ["-of", "csv=p=0", url.path]).stdout, as: UTF8.self)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    @Test func anIsolatedDamagedPacketIsSkippedWithAWarning() async throws {
        let media = try #require(TestFiles.sharedMedia, "CI always has ../shared/media")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("out.m4a")
        // An MP3 whose first frame is damaged (ffmpeg: "Invalid data found"), with cover art.
        let session = ExportSession(asset: Asset(url: media.appendingPathComponent("mp3_id3v2_chapters_cover.mp3")), preset: .appleM4A)
        let result = try await session.export(to: output, as: .m4a)
        #expect(result.warnings.contains { $0.hasPrefix("track 1 (audio): 1 damaged packet skipped") }, "\(result.warnings)")
        // ffmpeg converts the same file to 2.808 s of audio, skipping the same packet.
        let probe = try #require(which("ffprobe"))
        let seconds = Double(String(decoding: try run(probe, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", output.path]).stdout,
                                    as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(abs(seconds - 2.808) < 0.03, "\(seconds) s")
    }

    /// Damage the decoder conceals instead of refusing the packet is counted too: issue 14's
    /// corpus file with 3 of 60 H.264 pictures overwritten mid-slice (Tests/vafTests/Corpus).
    @Test func picturesDecodedFromDamagedSlicesAreCounted() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("vafTests/Corpus/h264_damaged_slices.mp4").path
        let session = try DemuxSession(path: path, timeRange: MediaTimeRange(start: .zero, duration: .positiveInfinity), streams: [0])
        // One thread: FFmpeg 5.1's frame threads can hand a picture out before error
        // concealment flags it, so with several a run counts 0 to 3 of them (ffmpeg too).
        let loop = try DecodeLoop(session: session, stream: 0, threadCount: 1)
        var frames = 0
        while try loop.nextFrame() != nil { frames += 1 }
        #expect(frames == 60, "every picture, the damaged ones concealed")
        #expect(loop.damagedPackets.isEmpty, "no packet is refused")
        #expect(loop.damageReport == "3 frames decoded from damaged data (concealed) at 0.40 s, 0.87 s, 1.37 s", "\(loop.damageReport ?? "none")")
    }

    /// A fuzzed file whose decoder hands out a picture at the previous one's time (its
    /// reordering confused by the damage): the picture is dropped with a warning, as ffmpeg
    /// drops it, instead of failing the export at the writer (Tests/vafTests/Corpus). Its
    /// damaged audio packets leave their time as silence.
    @Test func aPictureDecodedOutOfOrderIsDroppedWithAWarning() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (result, output) = try await exportCorpusFile("h264_fuzzed_picture_out_of_order.mp4", preset: .preset640x480, into: dir)
        #expect(result.warnings.contains { $0.hasPrefix("track 1 (video):") && $0.hasSuffix("1 picture out of order dropped (damaged stream) at 0.30 s") },
                "\(result.warnings)")
        // The decoder gives 29 pictures, the one at 0.30 s twice: 28 are written, in order.
        let times = try probeLines(output, ["-select_streams", "v", "-show_entries", "packet=pts"]).compactMap { Int($0) }.sorted()
        #expect(times.count == 28)
        #expect(Set(times).count == times.count, "no two pictures share a time")
        // Its 3 damaged AAC packets are skipped and their time kept as silence, so the audio
        // after them stays in sync: 45 packets' length (1.045 s, as ffmpeg's conversion), not 42.
        #expect(result.warnings.contains { $0.hasPrefix("track 2 (audio): 3 damaged packets skipped") }, "\(result.warnings)")
        let audio = try probeLines(output, ["-select_streams", "a", "-show_entries", "stream=duration"]).first.flatMap(Double.init) ?? 0
        #expect(abs(audio - 45 * 1024 / 44100.0) < 0.02, "\(audio) s of audio")
    }

    /// A track not one packet of which decodes is as unreadable as one without packets: the
    /// export is written without it, with a warning, as ffmpeg writes the other tracks.
    @Test(.disabled(if: ffmpegPath == nil, "ffmpeg makes the damaged file (Hardware/setup.sh installs it)"))
    func aVideoTrackThatDecodesNowhereIsLeftOutWithAWarning() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("noisy.mp4")
        // Every byte of every H.264 packet damaged (the `noise` bitstream filter); the audio intact.
        let made = try run(try #require(ffmpegPath), ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=1",
                                                      "-f", "lavfi", "-i", "sine=duration=1", "-c:v", "libx264", "-bsf:v", "noise=amount=1",
                                                      "-c:a", "aac", "-shortest", source.path])
        try #require(made.status == 0)
        let output = dir.appendingPathComponent("out.mp4")
        let result = try await ExportSession(asset: Asset(url: source), preset: .preset640x480).export(to: output, as: .mp4)
        #expect(result.droppedTracks.map(\.trackID) == [1], "\(result.droppedTracks)")
        #expect(result.warnings.contains { $0.hasPrefix("track 1 (video): no sample of it could be read") }, "\(result.warnings)")
        let tracks = try await Asset(url: output).load(.tracks)
        #expect(tracks.map(\.mediaType) == [.audio])
    }

    /// An export works from its settings as it began: a time range changed while its first
    /// attempt runs (which finds the video unreadable) does not reach the retry without it.
    @Test(.disabled(if: ffmpegPath == nil, "ffmpeg makes the damaged file (Hardware/setup.sh installs it)"))
    func aSettingChangedWhileExportingLeavesTheRetryAlone() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("noisy.mp4")
        let made = try run(try #require(ffmpegPath), ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
                                                      "-f", "lavfi", "-i", "sine=duration=2", "-c:v", "libx264", "-bsf:v", "noise=amount=1",
                                                      "-c:a", "aac", "-shortest", source.path])
        try #require(made.status == 0)
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        let opened = Locked(0)
        session.stageProbe = StageProbe { step throws(MediaError) in
            guard case .sourceOpened = step, opened.withLock({ $0 += 1; return $0 == 1 }) else { return }
            session.timeRange = MediaTimeRange(start: .zero, duration: MediaTime(value: 1, timescale: 2))
        }
        let output = dir.appendingPathComponent("out.mp4")
        let result = try await session.export(to: output, as: .mp4)
        #expect(opened.withLock { $0 } == 2, "the retry opened the source again")
        #expect(result.droppedTracks.map(\.trackID) == [1], "\(result.droppedTracks)")
        let tracks = try await Asset(url: output).load(.tracks)
        let audio = try #require(tracks.first { $0.mediaType == .audio })
        #expect(audio.timeRange.duration.seconds > 1.9, "the whole 2 s, not the half second set mid-export: \(audio.timeRange.duration.seconds)")
    }

    /// Subtitles alone are no export of a file whose pictures could not be kept: once its only
    /// video track is found unreadable, the export fails, and leaves nothing behind.
    @Test(.disabled(if: ffmpegPath == nil, "ffmpeg makes the damaged file (Hardware/setup.sh installs it)"))
    func subtitlesAloneAreNoExportOfAFileWhosePicturesAreUnreadable() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let subtitles = dir.appendingPathComponent("cues.srt")
        try Data("1\n00:00:00,100 --> 00:00:00,900\nHello\n".utf8).write(to: subtitles)
        let source = dir.appendingPathComponent("noisy.mp4")
        let made = try run(try #require(ffmpegPath), ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=1",
                                                      "-i", subtitles.path, "-map", "0", "-map", "1", "-c:v", "libx264", "-bsf:v", "noise=amount=1",
                                                      "-c:s", "mov_text", source.path])
        try #require(made.status == 0)
        let output = dir.appendingPathComponent("out.mp4")
        await #expect {
            _ = try await ExportSession(asset: Asset(url: source), preset: .preset640x480).export(to: output, as: .mp4)
        } throws: { error in
            // Its index lists samples, so the first attempt reads it and finds none decodes.
            (error as? MediaError)?.code == .noTracks && (error as? MediaError)?.message.contains("no sample of it could be read") == true
        }
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    /// A fuzzed transport stream one of whose packets is decoded after it is shown (a corrupt
    /// DTS) is copied as ffmpeg copies it: the packet takes the median of its two times and the
    /// next decode time, instead of the muxer refusing it (Tests/vafTests/Corpus).
    @Test func aCopiedPacketDecodedAfterItIsShownGetsOneTimeAsFFmpegGivesIt() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = try await exportCorpusFile("mpeg2_ts_fuzzed_dts_after_pts.ts", preset: .passthrough, into: dir).output
        let packets = try probeLines(output, ["-show_entries", "packet=stream_index,pts,dts"])
            .map { $0.split(separator: ",").compactMap { Int64($0) } }.filter { $0.count == 3 }
        // ffmpeg -c copy writes the same 13 pictures and 21 audio packets.
        #expect(packets.filter { $0[0] == 0 }.count == 13)
        #expect(packets.filter { $0[0] == 1 }.count == 21)
        #expect(packets.allSatisfy { $0[2] <= $0[1] }, "every packet is decoded no later than it is shown")
    }

    /// A video track more than 2/3 of whose packets are damaged, beside intact audio: ffmpeg's
    /// error rate counts every track's packets together, so the file converts with what decodes
    /// and a warning; only a file that is mostly damage overall fails (Tests/vafTests/Corpus).
    @Test func aMostlyDamagedTrackBesideIntactAudioIsWrittenAsFarAsItDecodes() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (result, output) = try await exportCorpusFile("vp9_opus_fuzzed_video_mostly_damaged.webm", preset: .preset640x480, into: dir)
        #expect(result.warnings.contains { $0.hasPrefix("track 1 (video): ") && $0.contains("decoded frames, over 2/3; written as far as it decodes") },
                "\(result.warnings)")
        let tracks = try await Asset(url: output).load(.tracks)
        #expect(tracks.map(\.mediaType) == [.video, .audio])
    }

    /// An H.264 track whose first 40 of 300 packets are garbage: ffmpeg's 2/3 error rate,
    /// measured over the whole track, does not fire, so ffmpeg converts it, and so does an export,
    /// with a damage warning, though not one of the first 32 packets decodes.
    @Test(.disabled(if: ffmpegPath == nil, "ffmpeg makes the damaged file (Hardware/setup.sh installs it)"))
    func aTrackWhoseFirstStretchIsDamagedConvertsAsFFmpegConvertsIt() async throws {
        let ffmpeg = try #require(ffmpegPath)
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("damaged_start.mp4")
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=10",
                                      "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", source.path]).status == 0)
        // ffprobe writes each packet's size before its byte offset. 0xA5 bytes make an impossible
        // NAL unit length, so the decoder refuses each of these packets outright.
        let packets = try probeLines(source, ["-select_streams", "v", "-show_entries", "packet=size,pos"])
            .map { $0.split(separator: ",").compactMap { Int($0) } }.filter { $0.count == 2 }
        try #require(packets.count == 300)
        let handle = try FileHandle(forUpdating: source)
        for packet in packets.prefix(40) {
            try handle.seek(toOffset: UInt64(packet[1]))
            try handle.write(contentsOf: Data(repeating: 0xA5, count: packet[0]))
        }
        try handle.close()
        #expect(try run(ffmpeg, ["-v", "quiet", "-i", source.path, "-c:v", "libx264", "-preset", "ultrafast",
                                 dir.appendingPathComponent("ffmpeg.mp4").path]).status == 0, "ffmpeg converts it")

        let output = dir.appendingPathComponent("out.mp4")
        let result = try await ExportSession(asset: Asset(url: source), preset: .preset640x480).export(to: output, as: .mp4)
        #expect(result.warnings.contains { $0.hasPrefix("track 1 (video): 40 damaged packets skipped") }, "\(result.warnings)")
        // The 20 pictures after the damage predict from it and are dropped, as ffmpeg's decoder drops them.
        #expect(try probeLines(output, ["-select_streams", "v", "-count_packets", "-show_entries", "stream=nb_read_packets"]) == ["240"])
    }

    @Test func aStreamOfDamageFailsWithTheCounts() async throws {
        let media = try #require(TestFiles.sharedMedia, "CI always has ../shared/media")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = media.appendingPathComponent("broken_vp9_invalid_bitstream.webm")
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        do {
            _ = try await session.export(to: dir.appendingPathComponent("out.mp4"), as: .mp4)
            Issue.record("a VP9 stream no frame of which decodes was exported")
        } catch let error as MediaError {
            #expect(error.code == .decodeFailed && error.path == source.path, "\(error)")
            #expect(error.message.contains("damaged packets against 0 decoded frames"), "\(error.message)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty, "no file is left")
    }
}

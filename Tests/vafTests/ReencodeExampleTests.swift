import Foundation
import Testing

/// The reader + writer example re-encodes the clips of the shared corpus it supports, into files
/// ffmpeg decodes without errors, and declines the rest with a one-line error. Which is which is
/// fixed per file in `ReencodeCorpus.expected`; ffprobe counts the frames written.
@Suite struct ReencodeExampleTests {
    @Test func everyCorpusFileHasAnExpectedOutcome() throws {
        let media = try ReencodeCorpus.requireMedia()
        let names = try FileManager.default.contentsOfDirectory(atPath: media.path).filter { !$0.hasSuffix(".md") }.sorted()
        #expect(names.count == 40, "the shared corpus lists 40 media files (MANIFEST.md)")
        #expect(names == ReencodeCorpus.expected.keys.sorted(), "the table and ../shared/media disagree")
        #expect(ReencodeCorpus.files.count == 40)
    }

    @Test(arguments: ReencodeCorpus.files)
    func reencodesOrDeclinesAsExpected(_ name: String) throws {
        let media = try ReencodeCorpus.requireMedia()
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "ffmpeg is not installed (Hardware/setup.sh installs it)")
        let expected = try #require(ReencodeCorpus.expected[name], "\(name) has no entry in the table of outcomes")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-reencode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = media.appendingPathComponent(name).path
        let output = dir.appendingPathComponent("out.mp4").path
        let example = Vaf.binary.replacingOccurrences(of: "/vaf", with: "/ReencodeExample")
        let result = try Vaf.run(executable: example, [input, output])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        switch expected {
        case .reencoded(let videoFrames, let audioChannels):
            try #require(result.status == 0, "\(name) should re-encode: \(result.stderr)")
            #expect(result.stdout.contains("\(output): \(videoFrames) video frames"), "\(name): \(result.stdout)")
            #expect(leftovers == ["out.mp4"])
            let check = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", output, "-f", "null", "-"])
            // ffmpeg's own null output complains about variable-rate timing even for the sources;
            // only messages about reading our file count.
            let complaints = check.stderr.split(separator: "\n").filter { !$0.hasPrefix("[null @") && !$0.contains("Last message repeated") }
            #expect(check.status == 0 && complaints.isEmpty, "\(name): ffmpeg reports \(complaints)")
            // ffprobe decodes the output: the frames and channels written, not the ones we say we wrote.
            let probe = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-show_entries",
                                                                      "stream=codec_type,codec_name,nb_read_frames,channels", "-of", "json", output])
            let json = try #require(try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])
            let streams = json["streams"] as? [[String: Any]] ?? []
            let video = streams.filter { $0["codec_type"] as? String == "video" }
            let audio = streams.filter { $0["codec_type"] as? String == "audio" }
            #expect(streams.count == video.count + audio.count, "\(name): only video and audio are written: \(streams)")
            if videoFrames > 0 {
                #expect(video.count == 1 && video.first?["codec_name"] as? String == "h264", "\(name): \(streams)")
                #expect(video.first?["nb_read_frames"] as? String == String(videoFrames), "\(name): \(streams)")
            } else {
                #expect(video.isEmpty, "\(name): \(streams)")
            }
            if audioChannels > 0 {
                #expect(audio.count == 1 && audio.first?["codec_name"] as? String == "aac", "\(name): \(streams)")
                #expect(audio.first?["channels"] as? Int == audioChannels, "\(name): \(streams)")
                #expect(Int(audio.first?["nb_read_frames"] as? String ?? "") ?? 0 > 0, "\(name): \(streams)")
            } else {
                #expect(audio.isEmpty, "\(name): \(streams)")
            }
        case .declined(let reason, let alternatives):
            try #require(result.status == 1, "\(name) should be declined (\(reason)); status \(result.status)")
            let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("libva") && !$0.hasPrefix("Svt") }
            #expect(lines.count == 1 && lines[0].contains(name) && ([reason] + alternatives).contains { lines[0].contains($0) },
                    "\(name): \(result.stderr)")
            #expect(leftovers.isEmpty, "\(name): a declined file leaves nothing behind")
        }
    }
}

enum ReencodeCorpus {
    enum Outcome {
        /// Written: this many video frames (0: no video stream) and audio channels (0: no audio stream).
        case reencoded(videoFrames: Int, audioChannels: Int)
        /// Refused with a one-line error containing one of these texts: a file damaged in two
        /// tracks is refused for whichever track's reader fails first, which is a race.
        case declined(String, or: [String] = [])
    }

    /// What the example does with each file of `../shared/media`. Video frame counts equal ffprobe's
    /// decoded count of the source's first usable video stream (`-count_frames`); audio is the first
    /// audio track's channels, downmixed to at most 2.
    static let expected: [String: Outcome] = [
        // ffprobe decodes no audio frame either (nb_read_frames N/A); the cover is an attached picture.
        "aac_audiobook_chapters_truncated.m4b": .declined("no audio samples could be read"),
        "aac_lc_mono_coremedia.m4a": .reencoded(videoFrames: 0, audioChannels: 1),
        "ac3_51_plus_aac_stereo_two_tracks.mp4": .reencoded(videoFrames: 0, audioChannels: 2),
        "av1_main10_hdr10_1080p60_aac.mp4": .reencoded(videoFrames: 60, audioChannels: 2),
        "broken_mdat_too_long.mp4": .reencoded(videoFrames: 30, audioChannels: 1),
        // ffprobe reads no packet of any stream ("Error parsing frame sizes").
        "broken_mkv_fixed_lacing_bad_lace_size.mkv": .declined("has no video or audio track to re-encode"),
        // ffmpeg: "Invalid sync code", "Invalid frame marker".
        "broken_vp9_invalid_bitstream.webm": .declined("decoding vp9 (stream 0) failed"),
        // ffmpeg -xerror fails too ("Invalid NAL unit size", "partial file").
        // Both tracks are damaged: the audio has no readable sample and the video fails to decode.
        "broken_zero_empty_stsc_partial.mp4": .declined("no audio samples could be read", or: ["decoding h264 (stream 0) failed"]),
        "eac3_joc_51.mp4": .reencoded(videoFrames: 0, audioChannels: 2),
        "flac_stereo_with_picture.flac": .reencoded(videoFrames: 0, audioChannels: 2),
        "h264_1080i50_ac3_pgs_sony_a7m3_avchd.mts": .reencoded(videoFrames: 13, audioChannels: 2),
        "h264_720p_android_slowmo_capture240fps.mp4": .reencoded(videoFrames: 7, audioChannels: 0),
        "h264_aac_1080p24_bframe_delay_no_elst.mp4": .reencoded(videoFrames: 23, audioChannels: 2),
        "h264_aac_2160p60_portrait_android_rot90.mp4": .reencoded(videoFrames: 18, audioChannels: 2),
        "h264_aac_720p30_iphone_gps.mp4": .reencoded(videoFrames: 109, audioChannels: 2),
        "h264_aac_iphone6_rot90_gps_metadata.mov": .reencoded(videoFrames: 120, audioChannels: 1),
        "h264_aac_qt_and_nero_chapters.mp4": .reencoded(videoFrames: 30, audioChannels: 1),
        "h264_aac_vfr_android_720p_rot180_gps.mp4": .reencoded(videoFrames: 25, audioChannels: 1),
        "h264_aac_vfr_iphone_flir_gps.mp4": .reencoded(videoFrames: 84, audioChannels: 1),
        "h264_ac3_srt_subtitle.mkv": .reencoded(videoFrames: 30, audioChannels: 1),
        "h264_empty_edit_starts_at_5s.mp4": .reencoded(videoFrames: 100, audioChannels: 0),
        "h264_in_webm_chrome_mediarecorder_vfr.webm": .reencoded(videoFrames: 94, audioChannels: 0),
        "h264_neg_first_pts_discard.mov": .reencoded(videoFrames: 15, audioChannels: 0),
        "h264_three_edit_lists.mov": .reencoded(videoFrames: 48, audioChannels: 0),
        "heaac_6ch_nonstandard_layout.m4a": .reencoded(videoFrames: 0, audioChannels: 2),
        "hevc_main10_dolbyvision84_hlg_iphone14pro.mov": .reencoded(videoFrames: 4, audioChannels: 2),
        "hevc_main_1080p_android_rot90_metadata_track.mp4": .reencoded(videoFrames: 3, audioChannels: 2),
        "mjpeg_pcm_kodak_digicam.avi": .reencoded(videoFrames: 41, audioChannels: 1),
        // The first MP3 packet does not decode; ffmpeg -xerror stops there too (without it, it skips
        // the packet and decodes 117 frames).
        // One damaged MP3 packet is skipped, as ffmpeg skips it (both write 2.808 s of stereo AAC); the cover is no video.
        "mp3_id3v2_chapters_cover.mp3": .reencoded(videoFrames: 0, audioChannels: 2),
        // The first video track has no samples; the second (30 frames) is re-encoded.
        "mp4_with_empty_video_track.mp4": .reencoded(videoFrames: 30, audioChannels: 1),
        "mpeg2_1080p24_mp2.ts": .reencoded(videoFrames: 58, audioChannels: 2),
        "mpeg2_720p60_two_ac3_tracks_partial.ts": .reencoded(videoFrames: 13, audioChannels: 2),
        "opus_mono.opus": .reencoded(videoFrames: 0, audioChannels: 1),
        "prores_422_proxy_1080i.mov": .reencoded(videoFrames: 2, audioChannels: 0),
        "vp8_vorbis_720p24.webm": .reencoded(videoFrames: 24, audioChannels: 2),
        "vp9_540p60_vorbis51.webm": .reencoded(videoFrames: 60, audioChannels: 2),
        "vp9_opus51_negative_start.webm": .reencoded(videoFrames: 24, audioChannels: 2),
        "vp9_opus_chrome_mediarecorder_no_duration.webm": .reencoded(videoFrames: 74, audioChannels: 2),
        "vp9_profile2_10bit_240p.webm": .reencoded(videoFrames: 72, audioChannels: 0),
        // A header and no sample: ffprobe lists the stream, with nothing in it.
        "wav_header_only_zero_samples.wav": .declined("has no video or audio track to re-encode"),
    ]

    static var media: URL { Vaf.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/media") }

    /// `../shared/media`, which CI always has: its absence fails the test rather than skipping it.
    static func requireMedia() throws -> URL {
        try #require(FileManager.default.fileExists(atPath: media.path), "CI always has ../shared/media; missing: \(media.path)")
        return media
    }

    /// The table's file names: the argument list never comes out empty when ../shared is absent;
    /// each case then fails on `requireMedia()`, and `everyCorpusFileHasAnExpectedOutcome` checks
    /// the table against the directory.
    static var files: [String] { expected.keys.sorted() }
}

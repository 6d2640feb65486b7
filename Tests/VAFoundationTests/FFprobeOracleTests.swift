import Foundation
import Testing
@testable import VAFoundation

/// `Asset` agrees with ffprobe, an independent reader, on every file of the shared corpus:
/// exactly, except for the named exceptions in `FFprobeOracleTests.frameRateExceptions` and
/// `startExceptions`, each with the value we report and why it differs.
@Suite struct FFprobeOracleTests {
    struct Probe: Decodable {
        struct Format: Decodable { var duration: String?; var start_time: String?; var format_name: String? }
        struct Stream: Decodable {
            struct SideData: Decodable { var rotation: Int? }
            var codec_type: String?
            var codec_name: String?
            var profile: String?
            var width: Int?
            var height: Int?
            var pix_fmt: String?
            var avg_frame_rate: String?
            var sample_rate: String?
            var channels: Int?
            var channel_layout: String?
            var start_time: String?
            var side_data_list: [SideData]?
            var disposition: [String: Int]?
        }
        var format: Format?
        var streams: [Stream]?
    }

    static func ffprobe(_ path: String) throws -> Probe? {
        let ffprobe = try #require(which("ffprobe"), "ffprobe is not installed (Hardware/setup.sh installs it)")
        let result = try run(ffprobe, ["-v", "error", "-show_format", "-show_streams", "-of", "json", path])
        guard result.status == 0 else { return nil }
        return try JSONDecoder().decode(Probe.self, from: result.stdout)
    }

    /// A rational "n/d" with d > 0; nil for ffprobe's "0/0" (no rate).
    static func rate(_ text: String?) -> Double? {
        guard let parts = text?.split(separator: "/"), parts.count == 2,
              let n = Double(parts[0]), let d = Double(parts[1]), d > 0 else { return nil }
        return n / d
    }

    /// Video tracks whose `nominalFrameRate` is not ffprobe's `avg_frame_rate`, with the rate we report.
    /// Attached pictures (covers) are not here: they have no rate (ffprobe "0/0", ours 0), checked below.
    static let frameRateExceptions: [String: (rate: Float, why: String)] = [
        // The Matroska header declares 1000 fps (ffprobe avg_frame_rate 1000/1, r_frame_rate 60/1);
        // the packets are about 1/30 s apart (millisecond timestamps), and we report the packet timeline.
        "h264_ac3_srt_subtitle.mkv track 1": (29.989658, "declared 1000 fps, packets at 30 fps"),
        // ffprobe takes 2997/125 from the header but cannot read one packet; a track with no readable sample has no rate.
        "broken_mkv_fixed_lacing_bad_lace_size.mkv track 2": (0, "no readable sample"),
        // A track with no samples: ffprobe avg_frame_rate 0/0, r_frame_rate 90000/1 (its time base); AVFoundation reports 0.
        "mp4_with_empty_video_track.mp4 track 2": (0, "no samples"),
    ]

    /// Tracks whose start is not ffprobe's stream `start_time`, with the start we report in seconds.
    /// MPEG-TS starts are not here: they are relative to the file's start (stream minus format start_time), checked below.
    static let startExceptions: [String: (start: Double, why: String)] = [
        // An empty edit of 5 s: ffprobe starts the stream at its first sample (5.0); the track's time
        // range, as in AVFoundation, includes the empty edit and starts at 0.
        "h264_empty_edit_starts_at_5s.mp4 track 1": (0, "empty edit belongs to the track"),
    ]

    /// Files whose header claims more than the data holds: ffprobe prints the header's
    /// duration, we report the data's (0 s: not one packet of them can be read) and warn.
    static let durationExceptions: [String: (duration: Double, why: String)] = [
        "aac_audiobook_chapters_truncated.m4b": (0, "a truncated download whose header still claims 169,022.694 s"),
        "broken_mkv_fixed_lacing_bad_lace_size.mkv": (0, "no packet is readable; the header claims 10.01 s"),
    ]

    @Test func theCorpusIsThere() throws {
        let media = try TestFiles.requireSharedMedia()
        let names = try FileManager.default.contentsOfDirectory(atPath: media.path).filter { !$0.hasSuffix(".md") }
        #expect(names.count == 40, "the shared corpus lists 40 media files (MANIFEST.md)")
        #expect(TestFiles.sharedMediaFiles.count == 40)
    }

    @Test(arguments: TestFiles.sharedMediaFiles)
    func agreesWithFFprobe(_ name: String) async throws {
        let path = try TestFiles.requireSharedMedia().appendingPathComponent(name).path
        let oracle = try Self.ffprobe(path)
        let asset = Asset(url: URL(fileURLWithPath: path))
        guard let oracle, let streams = oracle.streams else {
            await #expect(throws: MediaError.self) { try await asset.load(.tracks) }
            return
        }
        let (tracks, duration) = try await asset.load(.tracks, .duration)
        try #require(tracks.count == streams.count, "\(name): \(tracks.count) tracks, ffprobe lists \(streams.count)")
        let isTransportStream = oracle.format?.format_name == "mpegts"
        let formatStart = Double(oracle.format?.start_time ?? "") ?? 0

        var frameDuration = 0.05
        for (track, stream) in zip(tracks, streams) {
            let format = track.formatDescription
            let context = "\(name) track \(track.trackID)"
            let expectedType: MediaType = switch stream.codec_type {
            case "video": .video
            case "audio": .audio
            case "subtitle": .subtitle
            default: .data
            }
            #expect(track.mediaType == expectedType, "\(context)")
            #expect(format.codec == (stream.codec_name ?? "none"), "\(context)")
            if let profile = stream.profile, profile != "unknown" {
                #expect(format.profile == profile, "\(context)")
            }
            if expectedType == .video {
                let video = try #require(format.video, "\(context): a video track without a video format description")
                #expect(video.width == stream.width && video.height == stream.height, "\(context)")
                #expect(video.pixelFormat == stream.pix_fmt, "\(context)")
                let ccw = stream.side_data_list?.compactMap(\.rotation).first ?? 0
                #expect(track.preferredTransform.rotationDegrees == ((-ccw % 360) + 360) % 360, "\(context)")
                let attached = stream.disposition?["attached_pic"] == 1
                #expect(track.isAttachedPicture == attached, "\(context)")
                let oracleRate = Self.rate(stream.avg_frame_rate)
                if let exception = Self.frameRateExceptions[context] {
                    #expect(abs(track.nominalFrameRate - exception.rate) <= exception.rate * 1e-6, "\(context) (\(exception.why)): \(track.nominalFrameRate) fps, ffprobe \(stream.avg_frame_rate ?? "-")")
                } else if attached {
                    #expect(oracleRate == nil && track.nominalFrameRate == 0, "\(context): a cover has no rate; \(track.nominalFrameRate), ffprobe \(stream.avg_frame_rate ?? "-")")
                } else {
                    let expected = try #require(oracleRate, "\(context): ffprobe gives no rate (\(stream.avg_frame_rate ?? "-")) and there is no named exception")
                    // Exact up to Float rounding (1e-6 relative).
                    #expect(abs(Double(track.nominalFrameRate) - expected) <= expected * 1e-6, "\(context): \(track.nominalFrameRate) fps, ffprobe \(expected)")
                    frameDuration = min(frameDuration, 1 / expected)
                }
            }
            if expectedType == .audio {
                let audio = try #require(format.audio, "\(context): an audio track without an audio format description")
                #expect(String(audio.sampleRate) == stream.sample_rate, "\(context)")
                #expect(audio.channelCount == stream.channels, "\(context)")
                // No layout in the file (ffprobe prints none): FFmpeg describes it as "N channels".
                #expect(audio.channelLayout == stream.channel_layout ?? "\(stream.channels ?? 0) channels", "\(context)")
            }
            // Start: ffprobe's stream start_time (relative to the file's start in MPEG-TS, whose clock starts anywhere).
            if let exception = Self.startExceptions[context] {
                #expect(abs(track.timeRange.start.seconds - exception.start) < 1e-6, "\(context) (\(exception.why)): starts at \(track.timeRange.start.seconds)")
            } else if let text = stream.start_time, let streamStart = Double(text) {
                let expected = isTransportStream ? streamStart - formatStart : streamStart
                // ffprobe prints start_time to the microsecond.
                #expect(abs(track.timeRange.start.seconds - expected) <= 1e-6, "\(context): starts at \(track.timeRange.start.seconds) s, ffprobe \(expected) s")
            } else {
                // ffprobe reads no timestamp (no packet): the track starts at 0.
                #expect(track.timeRange.start.seconds == 0, "\(context): starts at \(track.timeRange.start.seconds), ffprobe has no start_time")
            }
        }
        if let exception = Self.durationExceptions[name] {
            #expect(duration.seconds == exception.duration, "\(name) (\(exception.why)): \(duration.seconds) s")
            let warnings = try await asset.load(.warnings)
            #expect(warnings.contains { $0.contains("the header says") }, "\(name): the lying header is named: \(warnings)")
        } else if let text = oracle.format?.duration, let expected = Double(text) {
            #expect(abs(duration.seconds - expected) <= frameDuration, "\(name): \(duration.seconds) s, ffprobe \(expected) s")
        }
    }
}

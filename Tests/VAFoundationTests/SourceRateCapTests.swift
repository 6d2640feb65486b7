import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation

/// The cap at what the source needs, `--quality`'s scale and `--speed`, as the assistant and
/// the writer's encoder options apply them.
@Suite struct SourceRateCapTests {
    private func assistant(_ preset: ExportPreset, codec: String = "h264", _ width: Int, _ height: Int, rate: Int?,
                           fps: Double = 30) -> OutputSettingsAssistant {
        var a = OutputSettingsAssistant(preset: preset)!
        a.sourceVideoFormat = FormatDescription(mediaType: .video, codec: codec,
                                                video: VideoFormat(width: width, height: height, pixelFormat: "yuv420p", bitDepth: 8))
        a.sourceVideoAverageFrameDuration = MediaTime(seconds: 1 / fps, preferredTimescale: 90000)
        a.sourceVideoMinFrameDuration = MediaTime(seconds: 1 / fps, preferredTimescale: 90000)
        a.sourceVideoBitRate = rate
        return a
    }

    @Test func aOneMegabitSourceIsNotGivenTheTablesTenAndAHalf() throws {
        var a = assistant(.preset1280x720, 1920, 1080, rate: 1_000_000)
        // 90% of 1 Mb/s × (1280·720)/(1920·1080) = 400 kb/s, against the table's 10.5 Mb/s.
        #expect(a.sourceMatchedVideoBitRate == 400_000)
        let settings = try #require(a.videoSettings)
        #expect(settings.averageBitRate == 400_000)
        #expect(settings.maxBitRate == 400_000, "the cap is also the peak, so short clips cannot overshoot it")
        #expect(settings.maxBitRateWindow == nil, "over one second when the length is unknown")
        a.sourceDuration = MediaTime(value: 1, timescale: 2)
        #expect(a.videoSettings?.maxBitRateWindow == MediaTime(value: 1, timescale: 2), "over a shorter clip's length")
        a.capsBitRatesAtSource = false
        #expect(a.videoSettings?.averageBitRate == 10_500_000 && a.videoSettings?.maxBitRate == nil)
        a.capsBitRatesAtSource = true
        a.videoBitRateOverride = 8_000_000
        #expect(a.videoSettings?.averageBitRate == 8_000_000 && a.videoSettings?.maxBitRate == nil, "--video-bitrate asks for more")
    }

    @Test func aRichSourceKeepsTheTableRateWithoutAPeak() throws {
        let settings = try #require(assistant(.preset1280x720, 1920, 1080, rate: 50_000_000).videoSettings)
        #expect(settings.averageBitRate == 10_500_000 && settings.maxBitRate == nil)
    }

    @Test func cheaperCodecsScaleDownAndCostlierOnesNeverUp() throws {
        // H.264 → HEVC at the same size: × 0.7.
        #expect(assistant(.hevcHighestQuality, 1280, 720, rate: 1_000_000).sourceMatchedVideoBitRate == 630_000)
        // HEVC → H.264: no more than the source had.
        #expect(assistant(.highestQuality, codec: "hevc", 1280, 720, rate: 1_000_000).sourceMatchedVideoBitRate == 900_000)
        // MPEG-2 → H.264: × 0.5.
        #expect(assistant(.highestQuality, codec: "mpeg2video", 1280, 720, rate: 1_000_000).sourceMatchedVideoBitRate == 450_000)
        // An unknown codec or rate: no cap, the table stands.
        #expect(assistant(.highestQuality, codec: "cinepak", 1280, 720, rate: 1_000_000).sourceMatchedVideoBitRate == nil)
        #expect(assistant(.highestQuality, 1280, 720, rate: nil).sourceMatchedVideoBitRate == nil)
    }

    @Test func droppedFramesScaleTheCap() {
        // A 240 fps capture converted to 30 fps keeps an eighth of the frames.
        var a = assistant(.highestQuality, 1280, 720, rate: 8_000_000, fps: 240)
        a.frameRatePolicy = .constant(30)
        #expect(a.sourceMatchedVideoBitRate == 900_000)
    }

    @Test func constantQualityKeepsTheCapAsItsCeiling() throws {
        var a = assistant(.preset1280x720, 1280, 720, rate: 2_000_000)
        a.videoQuality = 0.55
        a.encoderSpeed = .slow
        a.sourceDuration = MediaTime(value: 1, timescale: 2)
        let settings = try #require(a.videoSettings)
        #expect(settings.averageBitRate == nil && settings.quality == 0.55)
        #expect(settings.maxBitRate == 1_800_000 && settings.speed == .slow)
        #expect(settings.maxBitRateWindow == MediaTime(value: 1, timescale: 2), "a half-second clip gets a half-second window")
    }

    @Test func av1AndVP9GetNoH264ProfileName() throws {
        for codec in [VideoCodec.av1, .vp9] {
            var a = OutputSettingsAssistant(preset: ExportPreset.highestQuality.replacingVideoCodec(codec))!
            a.sourceVideoFormat = FormatDescription(mediaType: .video, codec: "h264", video: VideoFormat(width: 1280, height: 720, pixelFormat: "yuv420p", bitDepth: 8))
            let settings = try #require(a.videoSettings)
            #expect(settings.codec == codec && settings.profile == nil, "\(codec): \(settings.profile ?? "nil")")
        }
        #expect(assistant(.highestQuality, 1280, 720, rate: nil).videoSettings?.profile == "high")
    }

    @Test func lossyAudioIsCappedAtItsSourceRate() throws {
        var a = OutputSettingsAssistant(preset: .preset1280x720)!
        a.sourceAudioFormat = FormatDescription(mediaType: .audio, codec: "aac", audio: AudioFormat(sampleRate: 44100, channelCount: 2, channelLayout: "stereo"))
        a.sourceAudioBitRate = 96_000
        #expect(a.audioSettings?.bitRate == 86_400)
        a.sourceAudioFormat?.codec = "flac"
        #expect(a.audioSettings?.bitRate == 128_000, "a lossless source's rate is no ceiling")
    }

    @Test func theWriterTurnsQualityAndSpeedIntoEncoderOptions() throws {
        var s = VideoSettings(codec: .h264, width: 1280, height: 720, quality: 0.55, maxBitRate: 2_000_000,
                              maxBitRateWindow: MediaTime(value: 1, timescale: 4), speed: .fast)
        let (name, c) = try WriterCodecs.videoConfiguration(s, timeBase: Rational(1, 90000), globalHeader: true, realTime: false)
        #expect(name == "libx264")
        let options = Dictionary(uniqueKeysWithValues: c.privateOptions.map { ($0.name, $0.value) })
        #expect(options["crf"] == "23" && options["preset"] == "fast")
        #expect(c.maxBitRate == 2_000_000 && c.bufferSize == 500_000 && c.bitRate == nil)
        s.codec = .hevc
        let hevc = try WriterCodecs.videoConfiguration(s, timeBase: Rational(1, 90000), globalHeader: true, realTime: false)
        #expect(hevc.configuration.privateOptions.contains { $0.name == "crf" && $0.value == "28" })
    }

    /// README's table of `--quality` is the one the code applies.
    @Test func theReadmeTableMatchesTheScale() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let begin = try #require(readme.range(of: "<!-- quality-table:begin -->"))
        let end = try #require(readme.range(of: "<!-- quality-table:end -->"))
        let rows = readme[begin.upperBound..<end.lowerBound].split(separator: "\n").filter { $0.hasPrefix("| ") && $0.first(where: \.isNumber) != nil }
        #expect(rows.count >= 5)
        for row in rows {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let quality = Double(cells[0]) else { continue }
            let encoders = ["libx264", "libx265", "libvpx-vp9", "libsvtav1", "h264_vaapi"]
            for (cell, encoder) in zip(cells.dropFirst(), encoders) {
                #expect(Int(cell) == QualityScale.constantQuality(quality / 100, encoder: encoder), "--quality \(Int(quality)) for \(encoder)")
            }
        }
    }
}

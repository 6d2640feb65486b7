import Testing
@testable import VAFoundation

@Suite struct OutputSettingsAssistantTests {
    private func video(_ width: Int, _ height: Int, bitDepth: Int = 8) -> FormatDescription {
        FormatDescription(mediaType: .video, codec: "h264", video: VideoFormat(width: width, height: height, pixelFormat: "yuv420p", bitDepth: bitDepth))
    }

    private func assistant(_ preset: ExportPreset, _ source: FormatDescription?, fps: Double = 30) -> OutputSettingsAssistant {
        var a = OutputSettingsAssistant(preset: preset)!
        a.sourceVideoFormat = source
        a.sourceVideoAverageFrameDuration = MediaTime(seconds: 1 / fps, preferredTimescale: 90000)
        a.sourceVideoMinFrameDuration = MediaTime(seconds: 1 / fps, preferredTimescale: 90000)
        return a
    }

    @Test func fitsIntoThePresetBoxAtTheTableRate() throws {
        let settings = try #require(assistant(.preset1280x720, video(1920, 1080)).videoSettings)
        #expect((settings.width, settings.height) == (1280, 720))
        #expect(settings.codec == .h264)
        #expect(settings.averageBitRate == 10_500_000)
        #expect(settings.scalingMode == .resizeAspect)
    }

    /// A size override is a caller's Double: one that is not a number, or far too large, is
    /// fitted like any other (never upscaled, even), not a crash.
    @Test func anOddSizeOverrideIsFittedWithoutTrapping() throws {
        var a = assistant(.preset1280x720, video(1920, 1080))
        a.sizeOverride = Size(width: .nan, height: 1e300)
        let odd = try #require(a.outputSize)
        #expect(odd.pixelWidth >= 2 && odd.pixelWidth <= 1920 && odd.pixelHeight <= 1080, "\(odd)")
        a.sizeOverride = Size(width: 640.7, height: 360.2)
        #expect(a.outputSize == Size(width: 640, height: 360))
    }

    @Test func sixtyFramesPerSecondGetsHalfAgainTheRate() throws {
        let settings = try #require(assistant(.preset1280x720, video(1920, 1080), fps: 60).videoSettings)
        #expect(settings.averageBitRate == 15_750_000)
        #expect(settings.expectedSourceFrameRate.map { abs($0 - 60) < 0.01 } == true)
    }

    @Test func interpolatesBetweenTiersByMacroblocks() {
        // 1280x536 has 2720 macroblocks: just above the 960x720 tier (2700).
        let rate = ExportBitRate.bitsPerSecond(width: 1280, height: 536, frameRate: 30, table: ExportBitRate.basic)
        let expected = 6_877_500 + (10_500_000 - 6_877_500) * 20.0 / 900
        #expect(abs(Double(rate) - expected) < 1)
        #expect(ExportBitRate.frameRateFactor(15) == 0.75)
        #expect(ExportBitRate.frameRateFactor(240) == 4.5)
    }

    @Test func neverUpscales() throws {
        let settings = try #require(assistant(.preset1920x1080, video(568, 320)).videoSettings)
        #expect((settings.width, settings.height) == (568, 320))
    }

    @Test func portraitPicturesFitAPortraitBox() throws {
        let settings = try #require(assistant(.preset1280x720, video(1080, 1440)).videoSettings)
        #expect((settings.width, settings.height) == (720, 960))
    }

    @Test func sizesAreEven() throws {
        let settings = try #require(assistant(.preset640x480, video(1001, 563)).videoSettings)
        #expect(settings.width % 2 == 0 && settings.height % 2 == 0)
        #expect(settings.width <= 640 && settings.height <= 480)
    }

    @Test func tenBitSourcesGetMain10HEVC() throws {
        let hevc = try #require(assistant(.hevc1920x1080, video(3840, 2160, bitDepth: 10)).videoSettings)
        #expect(hevc.profile == "main10" && hevc.pixelFormat == .yuv420p10)
        #expect(hevc.averageBitRate == 11_250_000)
        let h264 = try #require(assistant(.preset1920x1080, video(3840, 2160, bitDepth: 10)).videoSettings)
        #expect(h264.pixelFormat == .yuv420p, "H.264 High stays 8-bit")
    }

    @Test func frameRatePolicies() {
        var a = assistant(.preset1280x720, video(1280, 720), fps: 240)
        #expect(a.outputFrameRate == 30, "automatic converts slow-motion captures")
        a = assistant(.preset1280x720, video(1280, 720), fps: 60)
        #expect(a.outputFrameRate == nil, "automatic keeps 60 fps")
        a.frameRatePolicy = .constant(30)
        #expect(a.outputFrameRate == 30)
        a.frameRatePolicy = .passthrough
        a.sourceVideoMinFrameDuration = MediaTime(value: 1, timescale: 240)
        #expect(a.outputFrameRate == nil)
    }

    @Test func audioNeverAboveTheSourceRateAndKeepsItsLayout() throws {
        var a = OutputSettingsAssistant(preset: .preset1280x720)!
        a.sourceAudioFormat = FormatDescription(mediaType: .audio, codec: "aac",
                                                audio: AudioFormat(sampleRate: 44100, channelCount: 6, channelLayout: "5.1(side)"))
        let audio = try #require(a.audioSettings)
        #expect(audio.codec == .aac && audio.sampleRate == 44100)
        #expect(audio.channelCount == 6 && audio.channelLayout == "5.1(side)")
        #expect(audio.bitRate == 384_000)
    }

    @Test func presetsByNameAndTheEncoderChoice() throws {
        #expect(ExportPreset(named: "hevc1920x1080") == .hevc1920x1080)
        #expect(ExportPreset(named: "AVAssetExportPresetPassthrough") == .passthrough)
        #expect(ExportPreset(named: "1280X720") == .preset1280x720)
        #expect(ExportPreset(named: "8K") == nil)
        #expect(OutputSettingsAssistant(preset: .passthrough) == nil)
        let choice = try #require(OutputSettingsAssistant(preset: .preset1280x720)?.videoEncoder)
        #expect(choice.encoder == "libx264" && choice.path == .software)
        #expect(OutputSettingsAssistant.availableOutputSettingsPresets().contains(.hevc1920x1080), "Debian's FFmpeg has libx265")
    }
}

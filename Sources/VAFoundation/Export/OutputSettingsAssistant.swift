import FFmpegSupport

/// How an export treats the source's frame timing: the heart of high-frame-rate export.
public enum FrameRatePolicy: Sendable, Hashable, CustomStringConvertible {
    /// Keep every source frame and its timestamp: 60 fps stays 60 fps, variable stays variable.
    case passthrough
    /// Convert to this constant rate, dropping or repeating frames by timestamp (audio untouched).
    case constant(Double)
    /// Keep rates up to 60 fps; convert faster sources (slow-motion captures) to 30 fps.
    /// Decided on the source's typical rate (its average frame duration), never its shortest
    /// interval: 1 ms time bases (Matroska, WebM) make 60 fps alternate 16 and 17 ms, and phones
    /// record at 60.06 fps. A rate counts as above 60 only beyond `automaticTolerance`.
    case automatic

    /// The largest rate `.automatic` passes through.
    public static let automaticCeiling = 60.0
    /// How far (as a fraction) above the ceiling a typical rate may read and still be the
    /// ceiling: timestamp rounding (a 1 ms time base puts 60 fps at 62.5 between some frames)
    /// and phones' 60.06 fps, while 90, 120 and 240 fps captures stay well beyond it.
    public static let automaticTolerance = 0.05

    public var description: String {
        switch self {
        case .passthrough: "passthrough"
        case .constant(let fps): "constant \(fps.formatted3) fps"
        case .automatic: "automatic"
        }
    }

    /// The constant output rate, or nil when source timing is kept, for a source whose frames
    /// typically come at `sourceFrameRate` (its average rate; 0 when unknown).
    public func outputFrameRate(sourceFrameRate: Double) -> Double? {
        switch self {
        case .passthrough: return nil
        case .constant(let fps): return fps
        case .automatic: return sourceFrameRate > Self.automaticCeiling * (1 + Self.automaticTolerance) ? 30 : nil
        }
    }
}

/// The encoder an output will use and why (software today; the hardware layer adds VA-API
/// encoders through this same decision).
public struct EncoderChoice: Sendable, Hashable, Codable {
    public enum Path: String, Sendable, Codable { case software, hardware }
    /// FFmpeg's encoder name ("libx264").
    public var encoder: String
    public var path: Path
    public var reason: String
}

/// Picks writer settings from a preset and the source (`AVOutputSettingsAssistant`): the fitted
/// size, the table bit rate, the frame-rate policy, the audio format, and the encoder.
public struct OutputSettingsAssistant: Sendable {
    public let preset: ExportPreset
    /// The source video's format; nil gives the preset's nominal settings.
    public var sourceVideoFormat: FormatDescription?
    /// The source video's display transform: the output box is turned to match a portrait picture.
    public var sourceVideoTransform: VideoTransform = .identity
    public var sourceAudioFormat: FormatDescription?
    /// Average interval between source frames (default 1/30 s).
    public var sourceVideoAverageFrameDuration = MediaTime(value: 1, timescale: 30)
    /// Shortest interval between source frames, i.e. the fastest rate (default 1/30 s).
    public var sourceVideoMinFrameDuration = MediaTime(value: 1, timescale: 30)
    public var frameRatePolicy: FrameRatePolicy = .automatic
    /// Overrides the table bit rate when set (and the source cap and `videoQuality` with it).
    public var videoBitRateOverride: Int?
    /// The source video's average bit rate (its sample bytes over its duration); nil when
    /// unknown, which leaves the table rate uncapped.
    public var sourceVideoBitRate: Int?
    /// The source audio's average bit rate; nil when unknown.
    public var sourceAudioBitRate: Int?
    /// Whether the preset's table rates are capped at what the source needs (default true):
    /// see `sourceMatchedVideoBitRate`. Apple's tables are made for camera originals, and
    /// applied to an already compressed phone clip they make a file several times larger.
    public var capsBitRatesAtSource = true
    /// Encode at this constant quality (0…1, the scale `QualityScale` maps to each encoder's
    /// CRF or VA-API quality level) instead of the table bit rate. The source-matched rate
    /// stays its ceiling while `capsBitRatesAtSource`. Ignored when `videoBitRateOverride` is set.
    public var videoQuality: Double?
    /// How much encoding time to trade for compression; nil keeps the encoder's default.
    public var encoderSpeed: EncoderSpeed?
    /// How much media the export covers; nil when unknown. A clip shorter than a second gets
    /// a rate-control window that short, so its first keyframe cannot take several times its
    /// share of the capped rate.
    public var sourceDuration: MediaTime?
    /// Overrides the fitted size when set (still never larger than the source, still even).
    public var sizeOverride: Size?
    /// Replaces the preset table's rate (a streaming ladder's rung): still capped at the
    /// source-matched rate while `capsBitRatesAtSource`, unlike `videoBitRateOverride`.
    public var tableVideoBitRate: Int?

    /// The presets the assistant offers on this machine: those whose encoder libavcodec has.
    public static func availableOutputSettingsPresets() -> [ExportPreset] {
        [ExportPreset.preset640x480, .preset960x540, .preset1280x720, .preset1920x1080, .preset3840x2160, .hevc1920x1080, .hevc3840x2160]
            .filter { preset in preset.videoCodec.map { softwareEncoder(for: $0) != nil } ?? true }
    }

    /// nil for passthrough, which has no settings to compute.
    public init?(preset: ExportPreset) {
        guard !preset.isPassthrough else { return nil }
        self.preset = preset
    }

    /// The container the assistant recommends (QuickTime, as Apple's does).
    public var outputFileType: FileType { preset.videoCodec == nil ? .m4a : .mov }

    /// The constant output frame rate, or nil when the source's timing is kept.
    public var outputFrameRate: Double? {
        frameRatePolicy.outputFrameRate(sourceFrameRate: rate(sourceVideoAverageFrameDuration))
    }

    /// The output picture size, in square pixels: the source's displayed size (anamorphic
    /// pixels widened by their aspect ratio) fitted into the preset box (turned for portrait
    /// pictures), never upscaled, even.
    public var outputSize: Size? {
        guard preset.videoCodec != nil else { return nil }
        let source = sourceVideoFormat?.video.map { video -> Size in
            guard let par = video.pixelAspectRatio, par.count == 2, par[0] > 0, par[1] > 0 else { return Size(width: video.width, height: video.height) }
            return Size(width: Int((Double(video.width) * Double(par[0]) / Double(par[1])).rounded()), height: video.height)
        }
        if let override = sizeOverride {
            guard let source else { return Size(width: override.pixelWidth & ~1, height: override.pixelHeight & ~1) }
            return fit(source, into: override, turn: false)
        }
        guard let source else { return preset.box ?? Size(width: 1920, height: 1080) }
        guard let box = preset.box else { return Size(width: max(2, source.pixelWidth & ~1), height: max(2, source.pixelHeight & ~1)) }
        return fit(source, into: box, turn: true)
    }

    /// `source` fitted into `box` in whole even pixels, never upscaled.
    private func fit(_ source: Size, into box: Size, turn: Bool) -> Size {
        let (sourceWidth, sourceHeight) = (source.pixelWidth, source.pixelHeight)
        // A portrait picture fits a portrait box: "720p" bounds the short side.
        let portrait = turn && sourceHeight > sourceWidth
        let (boxWidth, boxHeight) = portrait ? (box.pixelHeight, box.pixelWidth) : (box.pixelWidth, box.pixelHeight)
        let scale = min(Double(boxWidth) / Double(sourceWidth), Double(boxHeight) / Double(sourceHeight), 1)
        let width = min(evenRounded(Double(sourceWidth) * scale), boxWidth & ~1, sourceWidth & ~1)
        let height = min(evenRounded(Double(sourceHeight) * scale), boxHeight & ~1, sourceHeight & ~1)
        return Size(width: max(2, width), height: max(2, height))
    }

    /// Bits per second for the output video: the override if set; else the preset table at the
    /// output size and rate, capped at `sourceMatchedVideoBitRate` while `capsBitRatesAtSource`.
    public var videoBitRate: Int? {
        if let videoBitRateOverride { return videoBitRateOverride }
        guard let size = outputSize else { return nil }
        let (width, height) = (size.pixelWidth, size.pixelHeight)
        let fps = outputFrameRate ?? rate(sourceVideoAverageFrameDuration)
        let table = tableVideoBitRate ?? ExportBitRate.bitsPerSecond(width: width, height: height, frameRate: fps, table: preset.bitRateTable)
        guard capsBitRatesAtSource, let cap = sourceMatchedVideoBitRate else { return table }
        return min(table, cap)
    }

    /// What the source needs at the output's size, rate and codec, less headroom:
    /// `sourceRateHeadroom` (90%) of the source's own video bit rate, scaled by
    /// - the output's pixel count over the source's (a 1080p source at 720p: × 0.44),
    /// - the output's frame rate over the source's, when frames are dropped (240 fps to 30: × 0.125),
    /// - the target codec's cost relative to the source's, only when it is cheaper (H.264 to
    ///   HEVC: × 0.7; MPEG-2 to H.264: × 0.5). A costlier target (HEVC to H.264) gets no more
    ///   than the source had, so a default encode never grows a file; `videoBitRateOverride`
    ///   or `videoQuality` ask for more.
    ///
    /// nil when the source's bit rate, size or codec is unknown: the table rate then stands.
    public var sourceMatchedVideoBitRate: Int? {
        guard let sourceRate = sourceVideoBitRate, sourceRate > 0, let source = sourceVideoFormat,
              let video = source.video, video.width > 0, video.height > 0,
              let target = preset.videoCodec, let size = outputSize,
              let sourceCost = ExportBitRate.relativeCost(of: source.codec),
              let targetCost = ExportBitRate.relativeCost(of: target.rawValue) else { return nil }
        let pixels = size.width * size.height / Double(video.width * video.height)
        let sourceFPS = rate(sourceVideoAverageFrameDuration)
        let frames = outputFrameRate.map { min(1, $0 / sourceFPS) } ?? 1
        let codec = min(1, targetCost / sourceCost)
        return max(Self.minimumCappedBitRate, Int((Double(sourceRate) * Self.sourceRateHeadroom * pixels * frames * codec).rounded()))
    }

    /// The least a cap sets (bits per second): encoders refuse or starve at a few bits per
    /// second, and below this no picture is worth keeping anyway.
    public static let minimumCappedBitRate = 32_000

    /// The share of the source's rate a capped encode aims at: one-pass rate control runs a few
    /// percent over its target on clips of a few seconds (x264 measured 6% over on a 3 s clip),
    /// and an MP4 index can weigh more than the source container's.
    public static let sourceRateHeadroom = 0.9

    /// JPEG is intra-only and has no rate control worth the name: it is exported at this
    /// quality (0…1) unless a bit rate is given.
    public static let jpegQuality = 0.9

    /// Writer settings for the video, nil for audio-only presets.
    public var videoSettings: VideoSettings? {
        guard let codec = preset.videoCodec, let size = outputSize else { return nil }
        let (width, height) = (size.pixelWidth, size.pixelHeight)
        let source = sourceVideoFormat?.video
        let deep = (source?.bitDepth ?? 8) > 8 && codec == .hevc
        // JPEG has neither profiles nor a 4:2:0 limited-range format: the encoder picks its own.
        let jpeg = codec == .mjpeg
        let constantQuality = videoBitRateOverride == nil && (jpeg || videoQuality != nil)
        // The cap is also the peak rate, of a constant-quality encode and of a bit-rate encode
        // the cap set: one-pass rate control alone runs over its target on short clips (x264
        // put 81 KB into a 0.1 s clip budgeted 56 KB, and 24% over on a 3 s one).
        let cap = capsBitRatesAtSource && videoBitRateOverride == nil && !jpeg ? sourceMatchedVideoBitRate : nil
        let peak: Int? = cap.flatMap { cap in constantQuality || (videoBitRate ?? .max) >= cap ? cap : nil }
        let colors = source.map { source -> ColorProperties in
            // A "yuvj" source (full-range JPEG-style pixels) reaches a 4:2:0 video encoder
            // converted to limited range: tag it so. JPEG output keeps full range.
            let rangeConverted = !jpeg && (source.pixelFormat?.hasPrefix("yuvj") ?? false)
            // HDR (PQ or HLG) into 8 bits is tone-mapped to BT.709 SDR by the reader, and tagged so.
            if !deep && ColorProperties.isHDR(transfer: source.colorTransfer) {
                return ColorProperties(primaries: "bt709", transfer: "bt709", matrix: "bt709",
                                       fullRange: jpeg ? source.colorRange.map { $0 == "pc" } : false)
            }
            return ColorProperties(primaries: source.colorPrimaries, transfer: source.colorTransfer, matrix: source.colorMatrix,
                                   fullRange: rangeConverted ? false : source.colorRange.map { $0 == "pc" })
        }
        var settings = VideoSettings(
            codec: codec, width: width, height: height, scalingMode: .resizeAspect,
            averageBitRate: constantQuality ? nil : videoBitRate,
            quality: constantQuality ? (videoQuality ?? Self.jpegQuality) : nil,
            maxBitRate: peak, maxBitRateWindow: peak == nil ? nil : sourceDuration,
            speed: encoderSpeed,
            maxKeyFrameIntervalDuration: 2, allowFrameReordering: true,
            // H.264 High and HEVC Main; AV1's and VP9's encoders pick their own profile ("high"
            // would be AV1's 4:4:4 profile, which a 4:2:0 picture cannot open).
            profile: deep ? "main10" : codec == .hevc ? "main" : codec == .h264 ? "high" : nil,
            expectedSourceFrameRate: outputFrameRate ?? rate(sourceVideoMinFrameDuration),
            pixelFormat: jpeg ? nil : deep ? .yuv420p10 : .yuv420p, colorProperties: colors)
        // HDR kept in 10 bits keeps its mastering display and content light level.
        if deep && source?.isHDR == true {
            settings.masteringDisplay = source?.masteringDisplay
            settings.contentLightLevel = source?.contentLightLevel
        }
        return settings
    }

    /// Writer settings for the audio: AAC, never above the source's sample rate, the source's
    /// layout, 64 kb/s a channel (512 kb/s at most), and while `capsBitRatesAtSource` never
    /// more than `sourceRateHeadroom` of a lossy source's own bit rate.
    public var audioSettings: AudioSettings? {
        guard let codec = preset.audioCodec else { return nil }
        let source = sourceAudioFormat?.audio
        let rate = min(48000, source?.sampleRate ?? 48000)
        let channels = source?.channelCount ?? 2
        var bitRate = min(64_000 * channels, 512_000)
        if capsBitRatesAtSource, let sourceRate = sourceAudioBitRate, sourceRate > 0,
           let sourceCodec = sourceAudioFormat?.codec, Self.lossyAudioCodecs.contains(sourceCodec) {
            bitRate = min(bitRate, max(1, Int((Double(sourceRate) * Self.sourceRateHeadroom).rounded())))
        }
        return AudioSettings(codec: codec, sampleRate: rate, channelCount: channels,
                             channelLayout: source?.channelLayout, bitRate: bitRate)
    }

    /// Audio codecs whose bit rate is a ceiling worth keeping (re-encoding them at a higher
    /// rate adds bytes, not quality).
    static let lossyAudioCodecs: Set<String> = ["aac", "mp3", "mp2", "opus", "vorbis", "ac3", "eac3", "wmav2"]

    /// The video encoder these settings will use and why.
    public var videoEncoder: EncoderChoice? {
        guard let codec = preset.videoCodec else { return nil }
        guard let name = Self.softwareEncoder(for: codec) else {
            return EncoderChoice(encoder: "none", path: .software, reason: "libavcodec here has no \(codec) encoder")
        }
        return EncoderChoice(encoder: name, path: .software, reason: "no VA-API encoder is in use; \(name) is libavcodec's \(codec) encoder")
    }

    /// libavcodec's software encoder for `codec`, if this build has one.
    static func softwareEncoder(for codec: VideoCodec) -> String? {
        let candidates: [String] = switch codec {
        case .h264: ["libx264", "libopenh264"]
        case .hevc: ["libx265"]
        case .av1: ["libsvtav1", "libaom-av1", "librav1e"]
        case .vp9: ["libvpx-vp9"]
        case .prores: ["prores_ks", "prores"]
        case .mjpeg: ["mjpeg"]
        default: [codec.rawValue]
        }
        return candidates.first { Encoder.isAvailable($0) }
    }

    private func rate(_ frameDuration: MediaTime) -> Double {
        let seconds = frameDuration.seconds
        return seconds.isFinite && seconds > 0 ? 1 / seconds : 30
    }
}

extension Double {
    /// The value with up to three decimals, trailing zeros dropped ("29.97", "60").
    var formatted3: String {
        let rounded = (self * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}

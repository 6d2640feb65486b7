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
    /// Overrides the table bit rate when set.
    public var videoBitRateOverride: Int?
    /// Overrides the fitted size when set (still never larger than the source, still even).
    public var sizeOverride: (width: Int, height: Int)?

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
    public var outputSize: (width: Int, height: Int)? {
        guard preset.videoCodec != nil else { return nil }
        let source = sourceVideoFormat?.video.map { video -> (width: Int, height: Int) in
            guard let par = video.pixelAspectRatio, par.count == 2, par[0] > 0, par[1] > 0 else { return (video.width, video.height) }
            return (Int((Double(video.width) * Double(par[0]) / Double(par[1])).rounded()), video.height)
        }
        if let (w, h) = sizeOverride {
            guard let source else { return (w & ~1, h & ~1) }
            return fit(source, into: (w, h), turn: false)
        }
        guard let source else { return preset.box ?? (1920, 1080) }
        guard let box = preset.box else { return (max(2, source.width & ~1), max(2, source.height & ~1)) }
        return fit(source, into: box, turn: true)
    }

    private func fit(_ source: (width: Int, height: Int), into box: (width: Int, height: Int), turn: Bool) -> (width: Int, height: Int) {
        var box = box
        // A portrait picture fits a portrait box: "720p" bounds the short side.
        if turn && source.height > source.width { box = (box.height, box.width) }
        let scale = min(Double(box.width) / Double(source.width), Double(box.height) / Double(source.height), 1)
        let width = min(evenRounded(Double(source.width) * scale), box.width & ~1, source.width & ~1)
        let height = min(evenRounded(Double(source.height) * scale), box.height & ~1, source.height & ~1)
        return (max(2, width), max(2, height))
    }

    /// Bits per second for the output video: the preset table at the output size and rate.
    public var videoBitRate: Int? {
        if let videoBitRateOverride { return videoBitRateOverride }
        guard let (width, height) = outputSize else { return nil }
        let fps = outputFrameRate ?? rate(sourceVideoAverageFrameDuration)
        return ExportBitRate.bitsPerSecond(width: width, height: height, frameRate: fps, table: preset.bitRateTable)
    }

    /// JPEG is intra-only and has no rate control worth the name: it is exported at this
    /// quality (0…1) unless a bit rate is given.
    public static let jpegQuality = 0.9

    /// Writer settings for the video, nil for audio-only presets.
    public var videoSettings: VideoSettings? {
        guard let codec = preset.videoCodec, let (width, height) = outputSize else { return nil }
        let source = sourceVideoFormat?.video
        let deep = (source?.bitDepth ?? 8) > 8 && codec == .hevc
        // JPEG has neither profiles nor a 4:2:0 limited-range format: the encoder picks its own.
        let jpeg = codec == .mjpeg
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
            averageBitRate: jpeg && videoBitRateOverride == nil ? nil : videoBitRate,
            quality: jpeg && videoBitRateOverride == nil ? Self.jpegQuality : nil,
            maxKeyFrameIntervalDuration: 2, allowFrameReordering: true,
            profile: jpeg ? nil : deep ? "main10" : (codec == .hevc ? "main" : "high"),
            expectedSourceFrameRate: outputFrameRate ?? rate(sourceVideoMinFrameDuration),
            pixelFormat: jpeg ? nil : deep ? .yuv420p10 : .yuv420p, colorProperties: colors)
        // HDR kept in 10 bits keeps its mastering display and content light level.
        if deep && source?.isHDR == true {
            settings.masteringDisplay = source?.masteringDisplay
            settings.contentLightLevel = source?.contentLightLevel
        }
        return settings
    }

    /// Writer settings for the audio: AAC, never above the source's rate, the source's layout.
    public var audioSettings: AudioSettings? {
        guard let codec = preset.audioCodec else { return nil }
        let source = sourceAudioFormat?.audio
        let rate = min(48000, source?.sampleRate ?? 48000)
        let channels = source?.channelCount ?? 2
        return AudioSettings(codec: codec, sampleRate: rate, channelCount: channels,
                             channelLayout: source?.channelLayout, bitRate: min(64_000 * channels, 512_000))
    }

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

/// A container type an `AssetWriter` writes (`AVFileType`'s role).
public struct FileType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let mp4 = FileType(rawValue: "mp4")
    public static let mov = FileType(rawValue: "mov")
    public static let m4v = FileType(rawValue: "m4v")
    public static let m4a = FileType(rawValue: "m4a")
    public static let mkv = FileType(rawValue: "mkv")
    public static let webm = FileType(rawValue: "webm")

    public static let all: [FileType] = [.mp4, .mov, .m4v, .m4a, .mkv, .webm]

    /// The file type a file extension names ("MP4", "mkv"), nil if none.
    public init?(fileExtension: String) {
        let type = FileType(rawValue: fileExtension.lowercased())
        guard FileType.all.contains(type) else { return nil }
        self = type
    }

    /// The file extension, without the dot.
    public var fileExtension: String { rawValue }

    /// FFmpeg's muxer for this type.
    public var muxerName: String {
        switch self {
        case .mov: "mov"
        case .m4v: "ipod"
        case .m4a: "ipod"
        case .mkv: "matroska"
        case .webm: "webm"
        default: "mp4"
        }
    }
}

/// A video codec a writer can encode to, named by FFmpeg's codec name.
public struct VideoCodec: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let h264 = VideoCodec(rawValue: "h264")
    public static let hevc = VideoCodec(rawValue: "hevc")
    public static let av1 = VideoCodec(rawValue: "av1")
    public static let vp9 = VideoCodec(rawValue: "vp9")
    public static let prores = VideoCodec(rawValue: "prores")
    public static let mjpeg = VideoCodec(rawValue: "mjpeg")
}

/// An audio codec a writer can encode to, named by FFmpeg's codec name ("pcm" for linear PCM).
public struct AudioCodec: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let aac = AudioCodec(rawValue: "aac")
    public static let opus = AudioCodec(rawValue: "opus")
    public static let flac = AudioCodec(rawValue: "flac")
    public static let alac = AudioCodec(rawValue: "alac")
    public static let linearPCM = AudioCodec(rawValue: "pcm")
}

/// A subtitle format a writer can store, named by FFmpeg's codec name. Text formats convert
/// into one another; bitmap subtitles (VobSub, PGS) are copied as they are or not at all.
public struct SubtitleCodec: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// MP4's and QuickTime's timed text (3GPP, `tx3g`).
    public static let movText = SubtitleCodec(rawValue: "mov_text")
    public static let subRip = SubtitleCodec(rawValue: "subrip")
    public static let ass = SubtitleCodec(rawValue: "ass")
    public static let webVTT = SubtitleCodec(rawValue: "webvtt")
}

/// Settings for writing text subtitles in another format than the source's: each cue is
/// converted, its times kept.
public struct SubtitleSettings: Sendable, Hashable, Codable {
    public var codec: SubtitleCodec
    public init(codec: SubtitleCodec) { self.codec = codec }
}

/// How a picture is fitted to a different output size (`AVVideoScalingModeKey`).
public enum ScalingMode: String, Sendable, Codable, CaseIterable {
    /// Stretch to fill, ignoring aspect ratio (`AVVideoScalingModeResize`).
    case resize
    /// Fit inside, keeping aspect ratio, with black bars (`AVVideoScalingModeResizeAspect`).
    case resizeAspect
    /// Fill, keeping aspect ratio, cropping what overflows (`AVVideoScalingModeResizeAspectFill`).
    case resizeAspectFill
}

/// Settings for encoding video (AVFoundation's video output-settings dictionary, typed).
public struct VideoSettings: Sendable, Hashable, Codable {
    public var codec: VideoCodec
    public var width: Int
    public var height: Int
    public var scalingMode: ScalingMode
    /// Bits per second (`AVVideoAverageBitRateKey`); nil lets `quality` decide.
    public var averageBitRate: Int?
    /// 0…1 constant-quality target (`AVVideoQualityKey`), used when no bit rate is set: each
    /// encoder's own scale (x264's CRF, a VA-API driver's ICQ level) per `QualityScale`.
    public var quality: Double?
    /// Peak bits per second, measured over `maxBitRateWindow`: the encoder's rate ceiling
    /// (x264/x265/SVT-AV1 VBV, libvpx's constrained quality, VA-API QVBR or VBR peak); nil for none.
    public var maxBitRate: Int?
    /// The span `maxBitRate` is measured over (the rate-control buffer); nil is one second.
    public var maxBitRateWindow: MediaTime?
    /// How much encoding time to trade for compression; nil keeps the encoder's default.
    public var speed: EncoderSpeed?
    /// Largest distance between keyframes in frames (`AVVideoMaxKeyFrameIntervalKey`).
    public var maxKeyFrameInterval: Int?
    /// Largest distance between keyframes in seconds (`AVVideoMaxKeyFrameIntervalDurationKey`).
    public var maxKeyFrameIntervalDuration: Double?
    /// B-frames allowed (`AVVideoAllowFrameReorderingKey`).
    public var allowFrameReordering: Bool
    /// Codec profile by FFmpeg's name ("high", "main", "main10"); nil lets the encoder choose.
    public var profile: String?
    /// Codec level ("4.1"); nil lets the encoder choose.
    public var level: String?
    /// The frame rate the source is expected to have (`AVVideoExpectedSourceFrameRateKey`).
    public var expectedSourceFrameRate: Double?
    /// Output pixel format; nil picks the encoder's natural one (yuv420p, or yuv420p10le for 10-bit profiles).
    public var pixelFormat: PixelFormat?
    public var colorProperties: ColorProperties?
    /// HDR10 static metadata written into the stream (SEI, where the encoder takes it: libx265)
    /// and the container (`mdcv`/`clli` in MP4 and MOV, Matroska's MasteringMetadata): the
    /// display the picture was mastered on and its content light level. nil writes none.
    public var masteringDisplay: MasteringDisplay?
    public var contentLightLevel: ContentLightLevel?
    /// The shape of a stored pixel (`AVVideoPixelAspectRatioKey`): written in the stream's
    /// VUI and the container (MP4 `pasp`, Matroska display size), so players show the stored
    /// `width`×`height` at `width × horizontal / vertical` wide. Nil: square pixels.
    public var pixelAspectRatio: PixelAspectRatio?
    /// The part of the `width`×`height` picture meant to be seen (`AVVideoCleanApertureKey`): its
    /// size and its centre's offset from the picture's centre. Written as the sample
    /// description's `clap` in QuickTime and MP4 files (others cannot carry it); the pictures are
    /// encoded whole. Nil: all of the picture.
    public var cleanAperture: CleanAperture?

    public init(codec: VideoCodec, width: Int, height: Int, scalingMode: ScalingMode = .resizeAspect,
                averageBitRate: Int? = nil, quality: Double? = nil, maxBitRate: Int? = nil, maxBitRateWindow: MediaTime? = nil,
                speed: EncoderSpeed? = nil,
                maxKeyFrameInterval: Int? = nil,
                maxKeyFrameIntervalDuration: Double? = nil, allowFrameReordering: Bool = true, profile: String? = nil,
                level: String? = nil, expectedSourceFrameRate: Double? = nil, pixelFormat: PixelFormat? = nil,
                colorProperties: ColorProperties? = nil) {
        self.codec = codec
        self.width = width
        self.height = height
        self.scalingMode = scalingMode
        self.averageBitRate = averageBitRate
        self.quality = quality
        self.maxBitRate = maxBitRate
        self.maxBitRateWindow = maxBitRateWindow
        self.speed = speed
        self.maxKeyFrameInterval = maxKeyFrameInterval
        self.maxKeyFrameIntervalDuration = maxKeyFrameIntervalDuration
        self.allowFrameReordering = allowFrameReordering
        self.profile = profile
        self.level = level
        self.expectedSourceFrameRate = expectedSourceFrameRate
        self.pixelFormat = pixelFormat
        self.colorProperties = colorProperties
    }
}

/// The shape of a pixel (`AVVideoPixelAspectRatioHorizontalSpacingKey` and
/// `AVVideoPixelAspectRatioVerticalSpacingKey`): 4:3 is a pixel a third wider than tall.
public struct PixelAspectRatio: Sendable, Hashable, Codable {
    public var horizontalSpacing: Int
    public var verticalSpacing: Int
    public init(horizontalSpacing: Int, verticalSpacing: Int) {
        self.horizontalSpacing = horizontalSpacing
        self.verticalSpacing = verticalSpacing
    }
}

/// How much encoding time an encode may spend for a smaller file at the same quality: a
/// codec-neutral name for x264's and x265's `preset`, SVT-AV1's `preset`, libvpx's
/// `cpu-used` and a VA-API driver's quality level (see `QualityScale.speedSetting`).
public enum EncoderSpeed: String, Sendable, Hashable, Codable, CaseIterable {
    case slower, slow, medium, fast, faster, fastest
}

/// Settings for encoding audio (AVFoundation's audio output-settings dictionary, typed).
public struct AudioSettings: Sendable, Hashable, Codable {
    public var codec: AudioCodec
    public var sampleRate: Int
    public var channelCount: Int
    /// FFmpeg's layout text ("stereo", "5.1(side)"); nil takes the default for `channelCount`.
    public var channelLayout: String?
    /// Bits per second for lossy codecs; nil lets the encoder choose.
    public var bitRate: Int?
    /// Sample layout for `.linearPCM` (bit depth, float, interleaving).
    public var linearPCM: LinearPCMSettings?

    public init(codec: AudioCodec, sampleRate: Int, channelCount: Int, channelLayout: String? = nil,
                bitRate: Int? = nil, linearPCM: LinearPCMSettings? = nil) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.channelLayout = channelLayout
        self.bitRate = bitRate
        self.linearPCM = linearPCM
    }
}

/// The layout of decoded audio (`AVLinearPCM*` keys): what an audio reader output vends.
public struct LinearPCMSettings: Sendable, Hashable, Codable {
    /// nil keeps the source's rate.
    public var sampleRate: Int?
    /// nil keeps the source's channel count.
    public var channelCount: Int?
    /// FFmpeg's layout text; nil keeps the source's (or the default for `channelCount`).
    public var channelLayout: String?
    public var bitDepth: Int
    public var isFloat: Bool
    public var isInterleaved: Bool

    public init(sampleRate: Int? = nil, channelCount: Int? = nil, channelLayout: String? = nil,
                bitDepth: Int = 16, isFloat: Bool = false, isInterleaved: Bool = true) {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.channelLayout = channelLayout
        self.bitDepth = bitDepth
        self.isFloat = isFloat
        self.isInterleaved = isInterleaved
    }

    /// The sample format these settings describe.
    public var sampleFormat: AudioSampleFormat {
        AudioSampleFormat(bitDepth: bitDepth, isFloat: isFloat, isInterleaved: isInterleaved)
    }
}

/// A subtitle track drawn into a video track's pictures, read from the file itself: the file and
/// the track's stream. Text is drawn by libass (libavfilter's `subtitles`); bitmaps (PGS, VobSub,
/// DVB) are decoded and blended by `BitmapSubtitleBurner`.
struct SubtitleBurnIn: Sendable, Hashable, Codable {
    var path: String
    var streamIndex: Int
    var isBitmap = false
}

/// The pictures a video reader output vends or an adaptor accepts
/// (`kCVPixelBufferPixelFormatTypeKey`, width, height).
public struct PixelBufferAttributes: Sendable, Hashable, Codable {
    public var pixelFormat: PixelFormat
    /// nil keeps the source's width (or takes the writer input's).
    public var width: Int?
    public var height: Int?
    public var scalingMode: ScalingMode
    /// Interlaced pictures (two fields woven into one frame) come out deinterlaced by bwdif, one
    /// picture per frame, before they are fitted; GPU surfaces (`.vaapiSurface`) on a device whose
    /// video processor deinterlaces by bob are deinterlaced there (`deinterlace_vaapi`) instead.
    /// False hands them out woven, as decoded, but only at the source's size: a resized picture
    /// is always deinterlaced first.
    public var deinterlaces: Bool
    /// The colours pictures are converted to, nil to keep the source's. A PQ or HLG source read
    /// as BT.709 (the `bt709` transfer) is tone-mapped to SDR; other differences in primaries,
    /// transfer or matrix are converted by zscale.
    public var colorProperties: ColorProperties?
    /// A subtitle track drawn into the pictures before they are fitted (an export's
    /// `subtitlesBurnedIn`); nil draws none.
    var burnedSubtitles: SubtitleBurnIn?

    public init(pixelFormat: PixelFormat, width: Int? = nil, height: Int? = nil, scalingMode: ScalingMode = .resize,
                deinterlaces: Bool = true, colorProperties: ColorProperties? = nil) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.scalingMode = scalingMode
        self.deinterlaces = deinterlaces
        self.colorProperties = colorProperties
    }
}

/// What a track's samples are: the codec and its parameters (`CMFormatDescription`'s role).
/// Codec names are FFmpeg's ("h264", "hevc", "aac").
public struct FormatDescription: Sendable, Hashable, Codable {
    public var mediaType: MediaType
    /// FFmpeg's codec name; "none" when the container did not identify one.
    public var codec: String
    /// The container's four-character code ("avc1", "hvc1", "mp4a"), when it stores one.
    public var codecTag: String?
    /// FFmpeg's profile name ("High", "Main 10", "LC").
    public var profile: String?
    /// Codec level as the bitstream stores it (H.264 level 4.1 is 41).
    public var level: Int?
    public var video: VideoFormat?
    public var audio: AudioFormat?

    public init(mediaType: MediaType, codec: String, codecTag: String? = nil, profile: String? = nil,
                level: Int? = nil, video: VideoFormat? = nil, audio: AudioFormat? = nil) {
        self.mediaType = mediaType
        self.codec = codec
        self.codecTag = codecTag
        self.profile = profile
        self.level = level
        self.video = video
        self.audio = audio
    }
}

/// Video-specific format properties. Colour names are FFmpeg's ("bt709", "smpte2084").
public struct VideoFormat: Sendable, Hashable, Codable {
    /// Coded (stored) picture size, before any display transform.
    public var width: Int
    public var height: Int
    /// FFmpeg's pixel format name ("yuv420p", "yuv420p10le"), nil if undetermined.
    public var pixelFormat: String?
    /// Bits per luma sample (8, 10, 12), nil if undetermined.
    public var bitDepth: Int?
    public var colorPrimaries: String?
    public var colorTransfer: String?
    public var colorMatrix: String?
    /// "tv" (limited) or "pc" (full), nil if unspecified.
    public var colorRange: String?
    /// "progressive", "tt", "bb", "tb", "bt"; nil if unknown.
    public var fieldOrder: String?
    /// Pixel aspect ratio as numerator/denominator, nil when square or unknown.
    public var pixelAspectRatio: [Int]?

    public init(width: Int, height: Int, pixelFormat: String? = nil, bitDepth: Int? = nil,
                colorPrimaries: String? = nil, colorTransfer: String? = nil, colorMatrix: String? = nil,
                colorRange: String? = nil, fieldOrder: String? = nil, pixelAspectRatio: [Int]? = nil) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.bitDepth = bitDepth
        self.colorPrimaries = colorPrimaries
        self.colorTransfer = colorTransfer
        self.colorMatrix = colorMatrix
        self.colorRange = colorRange
        self.fieldOrder = fieldOrder
        self.pixelAspectRatio = pixelAspectRatio
    }

    /// The part of the coded picture meant to be seen (QuickTime/MP4 `clap`,
    /// `kCMFormatDescriptionExtension_CleanAperture`), nil when the file names none.
    public var cleanAperture: CleanAperture?

    /// The picture's size as shown: the coded size, or the clean aperture's, and stretched
    /// across by the pixel aspect ratio (`CMVideoFormatDescriptionGetPresentationDimensions`).
    public func presentationDimensions(usePixelAspectRatio: Bool, useCleanAperture: Bool) -> Size {
        let aperture = useCleanAperture ? cleanAperture : nil
        var width = Double(aperture?.width ?? self.width)
        let height = Double(aperture?.height ?? self.height)
        if usePixelAspectRatio, let par = pixelAspectRatio, par.count == 2, par[0] > 0, par[1] > 0 {
            width = width * Double(par[0]) / Double(par[1])
        }
        return Size(width: width, height: height)
    }

    /// HDR side data the stream carries: mastering display, content light level, Dolby Vision.
    public var masteringDisplay: MasteringDisplay?
    public var contentLightLevel: ContentLightLevel?
    public var dolbyVision: DolbyVisionConfiguration?

    /// True for HDR transfer functions (PQ, HLG).
    public var isHDR: Bool { colorTransfer == "smpte2084" || colorTransfer == "arib-std-b67" }
}

/// Audio-specific format properties.
public struct AudioFormat: Sendable, Hashable, Codable {
    public var sampleRate: Int
    public var channelCount: Int
    /// FFmpeg's layout description ("mono", "stereo", "5.1(side)"), nil if unknown.
    public var channelLayout: String?
    /// FFmpeg's sample format name of the decoded samples ("fltp", "s16").
    public var sampleFormat: String?
    /// Samples per packet for codecs with fixed frames (1024 for AAC-LC), nil when variable.
    public var framesPerPacket: Int?
    /// Encoder priming samples to trim at the start.
    public var primingSamples: Int?

    public init(sampleRate: Int, channelCount: Int, channelLayout: String? = nil, sampleFormat: String? = nil,
                framesPerPacket: Int? = nil, primingSamples: Int? = nil) {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.channelLayout = channelLayout
        self.sampleFormat = sampleFormat
        self.framesPerPacket = framesPerPacket
        self.primingSamples = primingSamples
    }
}

/// The clean aperture of a picture (QuickTime's `clap`, AVFoundation's `AVVideoCleanApertureKey`):
/// the size of the region meant to be seen and the offset of its centre from the coded picture's
/// centre, in pixels. Edges a camera or encoder had to code (16-line macroblock rows, blanking)
/// lie outside it.
public struct CleanAperture: Sendable, Hashable, Codable {
    public var width: Int
    public var height: Int
    public var horizontalOffset: Int
    public var verticalOffset: Int

    public init(width: Int, height: Int, horizontalOffset: Int = 0, verticalOffset: Int = 0) {
        self.width = width
        self.height = height
        self.horizontalOffset = horizontalOffset
        self.verticalOffset = verticalOffset
    }
}

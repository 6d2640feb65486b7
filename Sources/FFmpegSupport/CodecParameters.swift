internal import CFFmpeg

/// An owned copy of a stream's codec parameters, safe to keep after its demuxer is gone.
// @unchecked: an owned copy that nothing mutates after init; readers only copy from it.
public final class CodecParameters: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<AVCodecParameters>

    /// An empty parameter set. The corresponding C function is `avcodec_parameters_alloc`.
    public init() {
        guard let p = avcodec_parameters_alloc() else { fatalError("avcodec_parameters_alloc: out of memory") }
        pointer = p
        containerSampleAspectRatio = nil
    }

    /// The sample aspect ratio the container declares for the stream (MP4 `pasp`, Matroska
    /// display size), nil when it declares none. It replaces the bitstream's in these parameters
    /// (so a muxer writes it) and in every frame a `Decoder` made from them, as ffmpeg does.
    public let containerSampleAspectRatio: Rational?

    /// A copy of `source`, its sample aspect ratio replaced by `containerSampleAspectRatio` when
    /// that is positive. The corresponding C function is `avcodec_parameters_copy`.
    init(copying source: UnsafePointer<AVCodecParameters>, containerSampleAspectRatio: Rational = Rational(0, 1)) throws(FFmpegError) {
        guard let p = avcodec_parameters_alloc() else { throw FFmpegError(code: .outOfMemory, function: "avcodec_parameters_alloc") }
        pointer = p
        self.containerSampleAspectRatio = containerSampleAspectRatio.isPositive ? containerSampleAspectRatio : nil
        try check(avcodec_parameters_copy(p, source), "avcodec_parameters_copy")
        if let containerSampleAspectRatio = self.containerSampleAspectRatio {
            p.pointee.sample_aspect_ratio = containerSampleAspectRatio.avRational
        }
    }

    deinit { var p: UnsafeMutablePointer<AVCodecParameters>? = pointer; avcodec_parameters_free(&p) }

    public var codec: CodecID { CodecID(rawValue: pointer.pointee.codec_id.rawValue) }
    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    public var pixelFormat: PixelFormatID { PixelFormatID(rawValue: pointer.pointee.format) }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }
    public var bitRate: Int64 { pointer.pointee.bit_rate }
    public var profile: Int32 { pointer.pointee.profile }
    /// Bytes of codec-specific configuration (avcC, hvcC, esds…).
    public var extradataSize: Int { Int(pointer.pointee.extradata_size) }
    /// The codec-specific configuration itself (an ASS track's script header, for example).
    public var extradata: [UInt8] {
        guard let data = pointer.pointee.extradata, extradataSize > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: extradataSize))
    }
}

/// An FFmpeg codec identifier (`AVCodecID`), open so codecs from newer releases round-trip.
public struct CodecID: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The codec FFmpeg names `name` ("h264", "aac"), nil if unknown. The corresponding C function is `avcodec_descriptor_get_by_name`.
    public init?(name: String) {
        guard let descriptor = avcodec_descriptor_get_by_name(name) else { return nil }
        rawValue = descriptor.pointee.id.rawValue
    }

    public static let none = CodecID(rawValue: AV_CODEC_ID_NONE.rawValue)
    public static let h264 = CodecID(rawValue: AV_CODEC_ID_H264.rawValue)
    public static let hevc = CodecID(rawValue: AV_CODEC_ID_HEVC.rawValue)
    public static let av1 = CodecID(rawValue: AV_CODEC_ID_AV1.rawValue)
    public static let vp9 = CodecID(rawValue: AV_CODEC_ID_VP9.rawValue)
    public static let mjpeg = CodecID(rawValue: AV_CODEC_ID_MJPEG.rawValue)
    public static let aac = CodecID(rawValue: AV_CODEC_ID_AAC.rawValue)

    var avValue: AVCodecID { AVCodecID(rawValue: rawValue) }

    /// FFmpeg's short name ("h264"). The corresponding C function is `avcodec_get_name`.
    public var name: String { String(cString: avcodec_get_name(avValue)) }
    public var description: String { name }

    /// True for subtitles stored as text (SubRip, ASS, WebVTT, mov_text), which convert into
    /// one another; false for bitmaps (VobSub, PGS, DVB) and every other codec.
    /// The corresponding C function is `avcodec_descriptor_get`.
    public var isTextSubtitle: Bool {
        guard let descriptor = avcodec_descriptor_get(avValue) else { return false }
        return descriptor.pointee.type == AVMEDIA_TYPE_SUBTITLE && descriptor.pointee.props & AV_CODEC_PROP_TEXT_SUB != 0
    }

    /// FFmpeg's name for `profile` of this codec ("High", "Main 10"), nil if unknown. The corresponding C function is `avcodec_profile_name`.
    public func profileName(_ profile: Int32) -> String? {
        avcodec_profile_name(avValue, profile).map { String(cString: $0) }
    }
}

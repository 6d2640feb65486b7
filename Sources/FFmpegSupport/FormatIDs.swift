internal import CFFmpeg
import MediaCore

/// An FFmpeg pixel format (`AVPixelFormat`), open so formats from newer releases round-trip.
public struct PixelFormatID: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The format FFmpeg names `name` ("nv12", "yuv420p", "p010le"), nil if unknown. The corresponding C function is `av_get_pix_fmt`.
    public init?(name: String) {
        let format = av_get_pix_fmt(name)
        guard format != AV_PIX_FMT_NONE else { return nil }
        rawValue = format.rawValue
    }

    public static let none = PixelFormatID(rawValue: AV_PIX_FMT_NONE.rawValue)
    public static let yuv420p = PixelFormatID(rawValue: AV_PIX_FMT_YUV420P.rawValue)
    public static let nv12 = PixelFormatID(rawValue: AV_PIX_FMT_NV12.rawValue)
    public static let p010 = PixelFormatID(rawValue: AV_PIX_FMT_P010LE.rawValue)
    public static let bgra = PixelFormatID(rawValue: AV_PIX_FMT_BGRA.rawValue)
    public static let rgba = PixelFormatID(rawValue: AV_PIX_FMT_RGBA.rawValue)
    public static let yuv420p10 = PixelFormatID(rawValue: AV_PIX_FMT_YUV420P10LE.rawValue)
    public static let vaapi = PixelFormatID(rawValue: AV_PIX_FMT_VAAPI.rawValue)

    var avValue: AVPixelFormat { AVPixelFormat(rawValue: rawValue) }

    /// FFmpeg's name for the format, nil for `none`. The corresponding C function is `av_get_pix_fmt_name`.
    public var name: String? { av_get_pix_fmt_name(avValue).map { String(cString: $0) } }
    public var description: String { name ?? "none" }

    /// Bits per sample of the first (luma or red) component, nil for unknown formats.
    public var bitDepth: Int? {
        guard let descriptor = av_pix_fmt_desc_get(avValue) else { return nil }
        return Int(descriptor.pointee.comp.0.depth)
    }
    /// log2 of the vertical chroma subsampling (1 for 4:2:0, 0 for 4:2:2 and 4:4:4).
    public var chromaHeightShift: Int {
        guard let descriptor = av_pix_fmt_desc_get(avValue) else { return 0 }
        return Int(descriptor.pointee.log2_chroma_h)
    }
    /// True for formats whose pixels live in a hardware surface rather than host memory.
    public var isHardware: Bool {
        guard let descriptor = av_pix_fmt_desc_get(avValue) else { return false }
        return descriptor.pointee.flags & UInt64(AV_PIX_FMT_FLAG_HWACCEL) != 0
    }
    /// True for formats that carry an alpha channel (yuva444p10le, rgba…).
    public var hasAlpha: Bool {
        guard let descriptor = av_pix_fmt_desc_get(avValue) else { return false }
        return descriptor.pointee.flags & UInt64(AV_PIX_FMT_FLAG_ALPHA) != 0
    }
    /// True for RGB formats (packed or planar, with or without alpha).
    public var isRGB: Bool {
        guard let descriptor = av_pix_fmt_desc_get(avValue) else { return false }
        return descriptor.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0
    }
}

/// An FFmpeg audio sample format (`AVSampleFormat`).
public struct SampleFormatID: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The format FFmpeg names `name` ("s16", "fltp"), nil if unknown. The corresponding C function is `av_get_sample_fmt`.
    public init?(name: String) {
        let format = av_get_sample_fmt(name)
        guard format != AV_SAMPLE_FMT_NONE else { return nil }
        rawValue = format.rawValue
    }

    public static let none = SampleFormatID(rawValue: AV_SAMPLE_FMT_NONE.rawValue)
    public static let s16 = SampleFormatID(rawValue: AV_SAMPLE_FMT_S16.rawValue)
    public static let s32 = SampleFormatID(rawValue: AV_SAMPLE_FMT_S32.rawValue)
    public static let float = SampleFormatID(rawValue: AV_SAMPLE_FMT_FLT.rawValue)
    public static let floatPlanar = SampleFormatID(rawValue: AV_SAMPLE_FMT_FLTP.rawValue)
    public static let s16Planar = SampleFormatID(rawValue: AV_SAMPLE_FMT_S16P.rawValue)

    var avValue: AVSampleFormat { AVSampleFormat(rawValue: rawValue) }

    /// FFmpeg's name ("s16", "fltp"). The corresponding C function is `av_get_sample_fmt_name`.
    public var name: String? { av_get_sample_fmt_name(avValue).map { String(cString: $0) } }
    public var description: String { name ?? "none" }
    public var isPlanar: Bool { av_sample_fmt_is_planar(avValue) != 0 }
    public var bytesPerSample: Int { Int(av_get_bytes_per_sample(avValue)) }
}

/// The one bridge between the engine's format names (MediaCore's `PixelFormat` and
/// `AudioSampleFormat`, named as FFmpeg names them) and libavutil's numbers: the engine
/// converts through these, never through the names itself.
extension PixelFormatID {
    /// nil when this libavutil knows no such format.
    public init?(_ format: PixelFormat) { self.init(name: format.rawValue) }
}

extension PixelFormat {
    public init(_ id: PixelFormatID) { self.init(rawValue: id.name ?? "none") }
}

extension SampleFormatID {
    /// nil when this libavutil knows no such format.
    public init?(_ format: AudioSampleFormat) { self.init(name: format.rawValue) }
}

extension AudioSampleFormat {
    public init(_ id: SampleFormatID) { self.init(rawValue: id.name ?? "none") }
}

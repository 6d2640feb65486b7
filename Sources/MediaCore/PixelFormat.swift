/// A pixel layout, named as FFmpeg names it ("nv12", "yuv420p", "p010le"). Open, so any
/// format FFmpeg knows can be named even without a static member here.
public struct PixelFormat: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// 8-bit 4:2:0, Y plane then interleaved CbCr: what VA-API decoders and encoders use.
    public static let nv12 = PixelFormat(rawValue: "nv12")
    /// 8-bit 4:2:0, three planes: what software codecs use.
    public static let yuv420p = PixelFormat(rawValue: "yuv420p")
    /// 10-bit 4:2:0 in 16-bit words, Y plane then interleaved CbCr (VA-API's 10-bit format).
    public static let p010 = PixelFormat(rawValue: "p010le")
    /// 10-bit 4:2:0, three planes of 16-bit words (software 10-bit codecs).
    public static let yuv420p10 = PixelFormat(rawValue: "yuv420p10le")
    /// 8-bit 4:2:2, three planes.
    public static let yuv422p = PixelFormat(rawValue: "yuv422p")
    /// 8-bit 4:4:4, three planes.
    public static let yuv444p = PixelFormat(rawValue: "yuv444p")
    /// 8-bit full-range 4:2:0 (JPEG), three planes.
    public static let yuvj420p = PixelFormat(rawValue: "yuvj420p")
    /// 32-bit B, G, R, A bytes.
    public static let bgra = PixelFormat(rawValue: "bgra")
    /// 32-bit R, G, B, A bytes.
    public static let rgba = PixelFormat(rawValue: "rgba")
    /// 32-bit A, R, G, B bytes (Core Video's `kCVPixelFormatType_32ARGB`).
    public static let argb = PixelFormat(rawValue: "argb")
    /// A frame that lives in a VA-API surface on the GPU, not in host memory.
    public static let vaapiSurface = PixelFormat(rawValue: "vaapi")
}

/// Colour tags carried with pictures, named as FFmpeg names them ("bt709", "smpte2084").
public struct ColorProperties: Sendable, Hashable, Codable {
    public var primaries: String?
    public var transfer: String?
    public var matrix: String?
    /// True for full-range ("pc", JPEG) samples, false for limited ("tv"), nil if unknown.
    public var fullRange: Bool?

    public init(primaries: String? = nil, transfer: String? = nil, matrix: String? = nil, fullRange: Bool? = nil) {
        self.primaries = primaries
        self.transfer = transfer
        self.matrix = matrix
        self.fullRange = fullRange
    }

    public static let rec709 = ColorProperties(primaries: "bt709", transfer: "bt709", matrix: "bt709", fullRange: false)
}

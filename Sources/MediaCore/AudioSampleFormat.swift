/// How decoded audio samples are stored, named as FFmpeg names it ("s16", "fltp"). Planar
/// formats keep one buffer per channel; the others interleave channels in one buffer.
public struct AudioSampleFormat: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let uint8 = AudioSampleFormat(rawValue: "u8")
    public static let int16 = AudioSampleFormat(rawValue: "s16")
    public static let int32 = AudioSampleFormat(rawValue: "s32")
    public static let float32 = AudioSampleFormat(rawValue: "flt")
    public static let float64 = AudioSampleFormat(rawValue: "dbl")
    public static let int16Planar = AudioSampleFormat(rawValue: "s16p")
    public static let int32Planar = AudioSampleFormat(rawValue: "s32p")
    public static let float32Planar = AudioSampleFormat(rawValue: "fltp")
    public static let float64Planar = AudioSampleFormat(rawValue: "dblp")

    /// The format for linear PCM described the AVFoundation way.
    public init(bitDepth: Int, isFloat: Bool, isInterleaved: Bool) {
        let base: String
        switch (bitDepth, isFloat) {
        case (64, true): base = "dbl"
        case (_, true): base = "flt"
        case (8, false): base = "u8"
        case (32, false), (24, false): base = "s32"
        default: base = "s16"
        }
        self.init(rawValue: isInterleaved ? base : base + "p")
    }

    public var isPlanar: Bool { rawValue.hasSuffix("p") }
    public var isFloat: Bool { rawValue.hasPrefix("flt") || rawValue.hasPrefix("dbl") }
    public var bytesPerSample: Int {
        switch rawValue.hasSuffix("p") ? String(rawValue.dropLast()) : rawValue {
        case "u8": return 1
        case "s16": return 2
        case "dbl", "s64": return 8
        default: return 4
        }
    }
}

/// The surface formats a config accepts (`VAConfigAttribRTFormat`): an open flag set over `VA_RT_FORMAT_*`.
public struct RTFormats: OptionSet, Hashable, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let yuv420 = RTFormats(rawValue: 0x0000_0001)
    public static let yuv422 = RTFormats(rawValue: 0x0000_0002)
    public static let yuv444 = RTFormats(rawValue: 0x0000_0004)
    public static let yuv411 = RTFormats(rawValue: 0x0000_0008)
    public static let yuv400 = RTFormats(rawValue: 0x0000_0010)
    public static let yuv420_10 = RTFormats(rawValue: 0x0000_0100)
    public static let yuv422_10 = RTFormats(rawValue: 0x0000_0200)
    public static let yuv444_10 = RTFormats(rawValue: 0x0000_0400)
    public static let yuv420_12 = RTFormats(rawValue: 0x0000_1000)
    public static let yuv422_12 = RTFormats(rawValue: 0x0000_2000)
    public static let yuv444_12 = RTFormats(rawValue: 0x0000_4000)
    public static let rgb16 = RTFormats(rawValue: 0x0001_0000)
    public static let rgb32 = RTFormats(rawValue: 0x0002_0000)
    public static let rgbp = RTFormats(rawValue: 0x0010_0000)
    public static let rgb32_10 = RTFormats(rawValue: 0x0020_0000)
    public static let protected = RTFormats(rawValue: 0x8000_0000)

    static let named: [(RTFormats, String)] = [
        (.yuv420, "yuv420"), (.yuv422, "yuv422"), (.yuv444, "yuv444"), (.yuv411, "yuv411"), (.yuv400, "yuv400"),
        (.yuv420_10, "yuv420_10"), (.yuv422_10, "yuv422_10"), (.yuv444_10, "yuv444_10"),
        (.yuv420_12, "yuv420_12"), (.yuv422_12, "yuv422_12"), (.yuv444_12, "yuv444_12"),
        (.rgb16, "rgb16"), (.rgb32, "rgb32"), (.rgbp, "rgbp"), (.rgb32_10, "rgb32_10"), (.protected, "protected"),
    ]

    /// Short names of the set flags (`yuv420`, `yuv420_10`, …); unknown bits as hex.
    public var names: [String] { flagNames(rawValue, Self.named.map { ($0.0.rawValue, $0.1) }) }

    /// The bit depths these formats carry (8, 10, 12), for YUV and RGB alike.
    public var bitDepths: Set<Int> {
        var depths: Set<Int> = []
        if !intersection([.yuv420, .yuv422, .yuv444, .yuv411, .yuv400, .rgb32, .rgbp]).isEmpty { depths.insert(8) }
        if !intersection([.yuv420_10, .yuv422_10, .yuv444_10, .rgb32_10]).isEmpty { depths.insert(10) }
        if !intersection([.yuv420_12, .yuv422_12, .yuv444_12]).isEmpty { depths.insert(12) }
        return depths
    }
}

/// The rate-control modes an encoder config offers (`VAConfigAttribRateControl`): an open flag set over `VA_RC_*`.
public struct RateControlModes: OptionSet, Hashable, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let none = RateControlModes(rawValue: 0x0000_0001)
    public static let cbr = RateControlModes(rawValue: 0x0000_0002)
    public static let vbr = RateControlModes(rawValue: 0x0000_0004)
    public static let vcm = RateControlModes(rawValue: 0x0000_0008)
    public static let cqp = RateControlModes(rawValue: 0x0000_0010)
    public static let vbrConstrained = RateControlModes(rawValue: 0x0000_0020)
    public static let icq = RateControlModes(rawValue: 0x0000_0040)
    public static let mb = RateControlModes(rawValue: 0x0000_0080)
    public static let cfs = RateControlModes(rawValue: 0x0000_0100)
    public static let parallel = RateControlModes(rawValue: 0x0000_0200)
    public static let qvbr = RateControlModes(rawValue: 0x0000_0400)
    public static let avbr = RateControlModes(rawValue: 0x0000_0800)
    public static let tcbrc = RateControlModes(rawValue: 0x0000_1000)

    static let named: [(RateControlModes, String)] = [
        (.none, "NONE"), (.cbr, "CBR"), (.vbr, "VBR"), (.vcm, "VCM"), (.cqp, "CQP"), (.vbrConstrained, "VBR_CONSTRAINED"),
        (.icq, "ICQ"), (.mb, "MB"), (.cfs, "CFS"), (.parallel, "PARALLEL"), (.qvbr, "QVBR"), (.avbr, "AVBR"), (.tcbrc, "TCBRC"),
    ]

    /// Names of the set modes (`CBR`, `VBR`, `CQP`, …); unknown bits as hex.
    public var names: [String] { flagNames(rawValue, Self.named.map { ($0.0.rawValue, $0.1) }) }
}

/// The packed headers an encoder accepts from the application (`VAConfigAttribEncPackedHeaders`).
public struct PackedHeaders: OptionSet, Hashable, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let sequence = PackedHeaders(rawValue: 0x01)
    public static let picture = PackedHeaders(rawValue: 0x02)
    public static let slice = PackedHeaders(rawValue: 0x04)
    public static let misc = PackedHeaders(rawValue: 0x08)
    public static let rawData = PackedHeaders(rawValue: 0x10)

    static let named: [(PackedHeaders, String)] = [
        (.sequence, "SEQUENCE"), (.picture, "PICTURE"), (.slice, "SLICE"), (.misc, "MISC"), (.rawData, "RAW_DATA"),
    ]

    /// Names of the set flags; `[]` means the driver takes no packed headers (radeonsi for H.264).
    public var names: [String] { flagNames(rawValue, Self.named.map { ($0.0.rawValue, $0.1) }) }
}

/// Surface memory types (`VASurfaceAttribMemoryType`), including DRM PRIME export for zero-copy.
public struct SurfaceMemoryTypes: OptionSet, Hashable, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let va = SurfaceMemoryTypes(rawValue: 0x0000_0001)
    public static let v4l2 = SurfaceMemoryTypes(rawValue: 0x0000_0002)
    public static let userPointer = SurfaceMemoryTypes(rawValue: 0x0000_0004)
    public static let kernelDRM = SurfaceMemoryTypes(rawValue: 0x1000_0000)
    public static let drmPrime = SurfaceMemoryTypes(rawValue: 0x2000_0000)
    public static let drmPrime2 = SurfaceMemoryTypes(rawValue: 0x4000_0000)

    static let named: [(SurfaceMemoryTypes, String)] = [
        (.va, "VA"), (.v4l2, "V4L2"), (.userPointer, "USER_PTR"), (.kernelDRM, "KERNEL_DRM"),
        (.drmPrime, "DRM_PRIME"), (.drmPrime2, "DRM_PRIME_2"),
    ]

    /// Names of the set memory types; unknown bits as hex.
    public var names: [String] { flagNames(rawValue, Self.named.map { ($0.0.rawValue, $0.1) }) }
}

/// Names the set bits of `value` from `table`, then any bits the table lacks as one hex value.
func flagNames(_ value: UInt32, _ table: [(UInt32, String)]) -> [String] {
    var names: [String] = []
    var rest = value
    for (bits, name) in table where bits != 0 && value & bits == bits {
        names.append(name)
        rest &= ~bits
    }
    if rest != 0 { names.append("0x" + String(rest, radix: 16)) }
    return names
}

/// A four-character code (`NV12`, `P010`) from its little-endian `UInt32` form.
func fourCCString(_ value: UInt32) -> String {
    let bytes = (0..<4).map { UInt8((value >> (8 * $0)) & 0xff) }
    guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return "0x" + String(value, radix: 16) }
    return String(decoding: bytes, as: UTF8.self)
}

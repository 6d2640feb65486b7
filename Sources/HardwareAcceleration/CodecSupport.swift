import MediaCore

/// A codec family as the probe groups profiles (`h264`, `hevc`, `av1`, …): an open struct, so a
/// profile family this build does not know still gets a name.
public struct Codec: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let mpeg2 = Codec(rawValue: "mpeg2")
    public static let mpeg4 = Codec(rawValue: "mpeg4")
    public static let h263 = Codec(rawValue: "h263")
    public static let h264 = Codec(rawValue: "h264")
    public static let hevc = Codec(rawValue: "hevc")
    public static let vc1 = Codec(rawValue: "vc1")
    public static let vp8 = Codec(rawValue: "vp8")
    public static let vp9 = Codec(rawValue: "vp9")
    public static let av1 = Codec(rawValue: "av1")
    public static let jpeg = Codec(rawValue: "jpeg")

    /// The order codecs are listed in reports: the common delivery codecs first.
    static let order: [Codec] = [.h264, .hevc, .av1, .vp9, .vp8, .jpeg, .mpeg2, .vc1, .mpeg4, .h263]

    public var description: String { rawValue }

    /// A display name for tables and verdicts (`H.264`, `HEVC`).
    public var displayName: String {
        switch self {
        case .mpeg2: "MPEG-2"
        case .mpeg4: "MPEG-4"
        case .h263: "H.263"
        case .h264: "H.264"
        case .hevc: "HEVC"
        case .vc1: "VC-1"
        case .vp8: "VP8"
        case .vp9: "VP9"
        case .av1: "AV1"
        case .jpeg: "JPEG"
        default: rawValue
        }
    }

    /// The VA-API encoder FFmpeg 5.1 has for this codec, or `nil` (AV1 has none before FFmpeg 6.1).
    public var ffmpegVAAPIEncoder: String? {
        switch self {
        case .h264: "h264_vaapi"
        case .hevc: "hevc_vaapi"
        case .mpeg2: "mpeg2_vaapi"
        case .vp8: "vp8_vaapi"
        case .vp9: "vp9_vaapi"
        case .jpeg: "mjpeg_vaapi"
        default: nil
        }
    }

    public static func < (lhs: Codec, rhs: Codec) -> Bool {
        let l = order.firstIndex(of: lhs) ?? order.count, r = order.firstIndex(of: rhs) ?? order.count
        return (l, lhs.rawValue) < (r, rhs.rawValue)
    }

    /// The codec family of a libva profile, or `nil` for `VAProfileNone` and `VAProfileProtected`.
    public init?(profile: VideoProfile) {
        let name = profile.rawValue
        let families: [(String, Codec)] = [
            ("VAProfileMPEG2", .mpeg2), ("VAProfileMPEG4", .mpeg4), ("VAProfileH263", .h263), ("VAProfileH264", .h264),
            ("VAProfileHEVC", .hevc), ("VAProfileVC1", .vc1), ("VAProfileVP8", .vp8), ("VAProfileVP9", .vp9),
            ("VAProfileAV1", .av1), ("VAProfileJPEG", .jpeg),
        ]
        guard let match = families.first(where: { name.hasPrefix($0.0) }) else { return nil }
        self = match.1
    }
}

extension VideoProfile {
    /// The bit depths the profile itself allows, before the driver's RT formats narrow them.
    var impliedBitDepths: Set<Int> {
        let name = rawValue
        if name.hasSuffix("_12") || name.hasSuffix("Main12") { return [12] }
        if name.hasSuffix("_10") || name.hasSuffix("Main10") { return [10] }
        switch self {
        case .vp9Profile2, VideoProfile(rawValue: "VAProfileVP9Profile3"): return [10, 12]
        case .av1Profile0, VideoProfile(rawValue: "VAProfileAV1Profile1"): return [8, 10]
        default: return [8]
        }
    }

    /// The chroma subsampling the profile implies (`4:2:0`, `4:2:2`, `4:4:4`).
    var impliedChroma: String {
        let name = rawValue
        if name.contains("444") || self == VideoProfile(rawValue: "VAProfileVP9Profile1")
            || self == VideoProfile(rawValue: "VAProfileVP9Profile3") || self == VideoProfile(rawValue: "VAProfileAV1Profile1") {
            return "4:4:4"
        }
        if name.contains("422") { return "4:2:2" }
        return "4:2:0"
    }
}

/// What a device can do with one codec, derived from its configs.
public struct CodecSupport: Codable, Equatable, Sendable {
    public var codec: Codec
    /// Hardware decode (`VAEntrypointVLD`), or `nil` if the device cannot decode the codec.
    public var decode: DecodeSupport?
    /// Hardware encode (`EncSlice`, `EncSliceLP` or `EncPicture`), or `nil` if the device lists no encode entry point.
    public var encode: EncodeSupport?
}

/// Hardware decode of one codec.
public struct DecodeSupport: Codable, Equatable, Sendable {
    /// The profiles decodable, in the driver's order.
    public var profiles: [VideoProfile]
    /// Bit depths decodable (8, 10, 12), from the profiles narrowed by the RT formats when reported.
    public var bitDepths: [Int]
    /// Chroma subsamplings decodable (`4:2:0`, `4:2:2`, `4:4:4`).
    public var chroma: [String]
    /// The largest picture, from `VAConfigAttribMaxPictureWidth/Height` or the surface limits; `nil` if not reported.
    public var maxSize: Size?
}

/// Hardware encode of one codec, and whether FFmpeg 5.1 can use it.
public struct EncodeSupport: Codable, Equatable, Sendable {
    /// The profiles encodable, in the driver's order.
    public var profiles: [VideoProfile]
    /// Whether the full (`EncSlice`/`EncPicture`) entry point exists.
    public var full: Bool
    /// Whether the low-power (`EncSliceLP`) entry point exists.
    public var lowPower: Bool
    /// Rate-control modes across the encode configs (`CBR`, `VBR`, `CQP`, `ICQ`, `QVBR`, `AVBR`); empty if not reported.
    public var rateControls: [String]
    /// Bit depths encodable.
    public var bitDepths: [Int]
    /// The largest picture, if reported.
    public var maxSize: Size?
    /// The FFmpeg 5.1 encoder that drives it (`h264_vaapi`), or `nil` when FFmpeg 5.1 has none.
    public var ffmpegEncoder: String?
    /// Whether FFmpeg 5.1 can encode this codec on this device at all.
    public var usable: Bool { ffmpegEncoder != nil }
    /// Whether only the low-power entry point exists: FFmpeg 5.1 then needs `low_power=1`.
    public var lowPowerOnly: Bool { lowPower && !full }
}

extension DeviceCapabilities {
    /// Per-codec decode and encode support, in report order (H.264, HEVC, AV1, VP9, …).
    public var codecs: [CodecSupport] {
        var byCodec: [Codec: (decode: [ConfigCapabilities], encode: [ConfigCapabilities])] = [:]
        for config in configs {
            guard let codec = Codec(profile: config.profile) else { continue }
            switch config.entrypoint {
            case .vld: byCodec[codec, default: ([], [])].decode.append(config)
            case .encSlice, .encSliceLP, .encPicture: byCodec[codec, default: ([], [])].encode.append(config)
            default: continue
            }
        }
        return byCodec.keys.sorted().map { codec in
            let entry = byCodec[codec] ?? ([], [])
            return CodecSupport(codec: codec, decode: decodeSupport(entry.decode), encode: encodeSupport(codec, entry.encode))
        }
    }

    /// The support for one codec, if the device lists it at all.
    public func support(for codec: Codec) -> CodecSupport? { codecs.first { $0.codec == codec } }

    private func bitDepths(_ configs: [ConfigCapabilities]) -> [Int] {
        var depths: Set<Int> = []
        for config in configs {
            var implied = config.profile.impliedBitDepths
            if let formats = config.rtFormats, !formats.bitDepths.isEmpty { implied.formIntersection(formats.bitDepths) }
            depths.formUnion(implied)
        }
        return depths.sorted()
    }

    private func maxSize(_ configs: [ConfigCapabilities]) -> Size? {
        let sizes = configs.compactMap { $0.maxPictureSize ?? surface($0.profile, $0.entrypoint)?.maxSize }
        return sizes.max { ($0.width * $0.height) < ($1.width * $1.height) }
    }

    private func decodeSupport(_ configs: [ConfigCapabilities]) -> DecodeSupport? {
        guard !configs.isEmpty else { return nil }
        let chroma = Set(configs.map(\.profile.impliedChroma)).sorted()
        return DecodeSupport(profiles: configs.map(\.profile), bitDepths: bitDepths(configs), chroma: chroma,
                             maxSize: maxSize(configs))
    }

    private func encodeSupport(_ codec: Codec, _ configs: [ConfigCapabilities]) -> EncodeSupport? {
        guard !configs.isEmpty else { return nil }
        var profiles: [VideoProfile] = []
        for profile in configs.map(\.profile) where !profiles.contains(profile) { profiles.append(profile) }
        let modes = configs.reduce(RateControlModes()) { $0.union($1.rateControls ?? []) }
        return EncodeSupport(
            profiles: profiles,
            full: configs.contains { $0.entrypoint == .encSlice || $0.entrypoint == .encPicture },
            lowPower: configs.contains { $0.entrypoint == .encSliceLP },
            rateControls: modes.names,
            bitDepths: bitDepths(configs),
            maxSize: maxSize(configs),
            ffmpegEncoder: codec.ffmpegVAAPIEncoder)
    }
}

/// A libva codec profile, named exactly as libva's `VAProfile` enumerator (`VAProfileH264Main`).
///
/// An open struct over the name rather than a closed enum: libva adds profiles every release, and a
/// profile this build does not know (from a newer driver or a pasted `vainfo`) must round-trip.
public struct VideoProfile: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// libva's enumerator name, or `VAProfile(<n>)` for a value this build has no name for.
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// The profile with libva's numeric value `code`.
    public init(code: Int32) {
        rawValue = VANameTables.profileName[code] ?? "VAProfile(\(code))"
    }

    /// libva's numeric value, when this build knows the name.
    public var code: Int32? { VANameTables.profileCode[rawValue] ?? VANameTables.parseUnnamed(rawValue, prefix: "VAProfile") }

    /// Whether libva 2.17's headers define this profile.
    public var isKnown: Bool { VANameTables.profileCode[rawValue] != nil }

    public var description: String { rawValue }

    public static func < (lhs: VideoProfile, rhs: VideoProfile) -> Bool { lhs.rawValue < rhs.rawValue }

    public static let none = VideoProfile(rawValue: "VAProfileNone")
    public static let mpeg2Simple = VideoProfile(rawValue: "VAProfileMPEG2Simple")
    public static let mpeg2Main = VideoProfile(rawValue: "VAProfileMPEG2Main")
    public static let h264ConstrainedBaseline = VideoProfile(rawValue: "VAProfileH264ConstrainedBaseline")
    public static let h264Main = VideoProfile(rawValue: "VAProfileH264Main")
    public static let h264High = VideoProfile(rawValue: "VAProfileH264High")
    public static let hevcMain = VideoProfile(rawValue: "VAProfileHEVCMain")
    public static let hevcMain10 = VideoProfile(rawValue: "VAProfileHEVCMain10")
    public static let vp8 = VideoProfile(rawValue: "VAProfileVP8Version0_3")
    public static let vp9Profile0 = VideoProfile(rawValue: "VAProfileVP9Profile0")
    public static let vp9Profile2 = VideoProfile(rawValue: "VAProfileVP9Profile2")
    public static let av1Profile0 = VideoProfile(rawValue: "VAProfileAV1Profile0")
    public static let jpegBaseline = VideoProfile(rawValue: "VAProfileJPEGBaseline")
}

/// A libva entry point (decode, encode, processing), named exactly as libva's `VAEntrypoint` enumerator.
public struct Entrypoint: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// libva's enumerator name, or `VAEntrypoint(<n>)` for a value this build has no name for.
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// The entry point with libva's numeric value `code`.
    public init(code: Int32) {
        rawValue = VANameTables.entrypointName[code] ?? "VAEntrypoint(\(code))"
    }

    /// libva's numeric value, when this build knows the name.
    public var code: Int32? { VANameTables.entrypointCode[rawValue] ?? VANameTables.parseUnnamed(rawValue, prefix: "VAEntrypoint") }

    /// Whether libva 2.17's headers define this entry point.
    public var isKnown: Bool { VANameTables.entrypointCode[rawValue] != nil }

    public var description: String { rawValue }

    public static func < (lhs: Entrypoint, rhs: Entrypoint) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Variable-length decode: the decoder.
    public static let vld = Entrypoint(rawValue: "VAEntrypointVLD")
    /// Slice-level encode on the shader/VME path ("full" encode).
    public static let encSlice = Entrypoint(rawValue: "VAEntrypointEncSlice")
    /// Picture-level encode (JPEG).
    public static let encPicture = Entrypoint(rawValue: "VAEntrypointEncPicture")
    /// Slice-level encode on the fixed-function low-power path.
    public static let encSliceLP = Entrypoint(rawValue: "VAEntrypointEncSliceLP")
    /// Video processing (scaling, colour conversion), used with `VideoProfile.none`.
    public static let videoProc = Entrypoint(rawValue: "VAEntrypointVideoProc")
    /// Flexible encode infrastructure (Intel).
    public static let fei = Entrypoint(rawValue: "VAEntrypointFEI")
    /// Statistics (Intel).
    public static let stats = Entrypoint(rawValue: "VAEntrypointStats")
}

/// A config attribute type, named exactly as libva's `VAConfigAttribType` enumerator.
public struct ConfigAttributeType: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// libva's enumerator name, or `VAConfigAttrib(<n>)` for a value this build has no name for.
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// The attribute type with libva's numeric value `code`.
    public init(code: Int32) {
        rawValue = VANameTables.configAttributeName[code] ?? "VAConfigAttrib(\(code))"
    }

    /// libva's numeric value, when this build knows the name.
    public var code: Int32? {
        VANameTables.configAttributeCode[rawValue] ?? VANameTables.parseUnnamed(rawValue, prefix: "VAConfigAttrib")
    }

    public var description: String { rawValue }

    public static func < (lhs: ConfigAttributeType, rhs: ConfigAttributeType) -> Bool {
        (lhs.code ?? Int32.max, lhs.rawValue) < (rhs.code ?? Int32.max, rhs.rawValue)
    }

    public static let rtFormat = ConfigAttributeType(rawValue: "VAConfigAttribRTFormat")
    public static let rateControl = ConfigAttributeType(rawValue: "VAConfigAttribRateControl")
    public static let decSliceMode = ConfigAttributeType(rawValue: "VAConfigAttribDecSliceMode")
    public static let decProcessing = ConfigAttributeType(rawValue: "VAConfigAttribDecProcessing")
    public static let encPackedHeaders = ConfigAttributeType(rawValue: "VAConfigAttribEncPackedHeaders")
    public static let encInterlaced = ConfigAttributeType(rawValue: "VAConfigAttribEncInterlaced")
    public static let encMaxRefFrames = ConfigAttributeType(rawValue: "VAConfigAttribEncMaxRefFrames")
    public static let encMaxSlices = ConfigAttributeType(rawValue: "VAConfigAttribEncMaxSlices")
    public static let encSliceStructure = ConfigAttributeType(rawValue: "VAConfigAttribEncSliceStructure")
    public static let maxPictureWidth = ConfigAttributeType(rawValue: "VAConfigAttribMaxPictureWidth")
    public static let maxPictureHeight = ConfigAttributeType(rawValue: "VAConfigAttribMaxPictureHeight")
    public static let encQualityRange = ConfigAttributeType(rawValue: "VAConfigAttribEncQualityRange")
    public static let encQuantization = ConfigAttributeType(rawValue: "VAConfigAttribEncQuantization")
    public static let encIntraRefresh = ConfigAttributeType(rawValue: "VAConfigAttribEncIntraRefresh")
    public static let encRateControlExt = ConfigAttributeType(rawValue: "VAConfigAttribEncRateControlExt")
    public static let encMaxTileRows = ConfigAttributeType(rawValue: "VAConfigAttribEncMaxTileRows")
    public static let encMaxTileCols = ConfigAttributeType(rawValue: "VAConfigAttribEncMaxTileCols")
    public static let maxFrameSize = ConfigAttributeType(rawValue: "VAConfigAttribMaxFrameSize")
    public static let frameSizeToleranceSupport = ConfigAttributeType(rawValue: "VAConfigAttribFrameSizeToleranceSupport")
}

extension VANameTables {
    static let profileName = Dictionary(profiles.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
    static let profileCode = Dictionary(profiles.map { ($0.1, $0.0) }, uniquingKeysWith: { first, _ in first })
    static let entrypointName = Dictionary(entrypoints.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
    static let entrypointCode = Dictionary(entrypoints.map { ($0.1, $0.0) }, uniquingKeysWith: { first, _ in first })
    static let configAttributeName = Dictionary(configAttributes.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
    static let configAttributeCode = Dictionary(configAttributes.map { ($0.1, $0.0) }, uniquingKeysWith: { first, _ in first })
    static let statusName = Dictionary(statuses.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
    static let statusCode = Dictionary(statuses.map { ($0.1, $0.0) }, uniquingKeysWith: { first, _ in first })

    /// Reads back the `Prefix(<n>)` spelling used for values without a name.
    static func parseUnnamed(_ name: String, prefix: String) -> Int32? {
        guard name.hasPrefix(prefix + "("), name.hasSuffix(")") else { return nil }
        return Int32(name.dropFirst(prefix.count + 1).dropLast())
    }
}

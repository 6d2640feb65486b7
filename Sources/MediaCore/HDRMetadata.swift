/// The mastering display an HDR picture was graded on (SMPTE ST 2086): its primaries and white
/// point as CIE 1931 xy chromaticities, and its luminance range in cd/m² (nits).
public struct MasteringDisplay: Sendable, Hashable, Codable {
    /// Red, green and blue primaries as (x, y); nil when the stream gives only the luminance.
    public var red: [Double]?
    public var green: [Double]?
    public var blue: [Double]?
    public var whitePoint: [Double]?
    /// Luminance range in cd/m²; nil when the stream gives only the primaries.
    public var minLuminance: Double?
    public var maxLuminance: Double?

    public init(red: [Double]? = nil, green: [Double]? = nil, blue: [Double]? = nil, whitePoint: [Double]? = nil,
                minLuminance: Double? = nil, maxLuminance: Double? = nil) {
        (self.red, self.green, self.blue, self.whitePoint) = (red, green, blue, whitePoint)
        (self.minLuminance, self.maxLuminance) = (minLuminance, maxLuminance)
    }
}

/// The brightest pixel (MaxCLL) and brightest frame average (MaxFALL) of an HDR stream, in cd/m²
/// (CTA-861.3).
public struct ContentLightLevel: Sendable, Hashable, Codable {
    public var maxContentLightLevel: Int
    public var maxFrameAverageLightLevel: Int

    public init(maxContentLightLevel: Int, maxFrameAverageLightLevel: Int) {
        self.maxContentLightLevel = maxContentLightLevel
        self.maxFrameAverageLightLevel = maxFrameAverageLightLevel
    }
}

/// A Dolby Vision decoder configuration record (the `dvcC`/`dvvC` box): which Dolby Vision
/// profile and level the stream needs, which layers it has, and what a player without Dolby
/// Vision can show instead (the base layer's signal compatibility: 1 HDR10, 2 SDR, 4 HLG).
public struct DolbyVisionConfiguration: Sendable, Hashable, Codable {
    public var versionMajor: Int
    public var versionMinor: Int
    public var profile: Int
    public var level: Int
    public var hasRPU: Bool
    public var hasEnhancementLayer: Bool
    public var hasBaseLayer: Bool
    public var baseLayerCompatibilityID: Int

    public init(versionMajor: Int, versionMinor: Int, profile: Int, level: Int, hasRPU: Bool, hasEnhancementLayer: Bool,
                hasBaseLayer: Bool, baseLayerCompatibilityID: Int) {
        (self.versionMajor, self.versionMinor, self.profile, self.level) = (versionMajor, versionMinor, profile, level)
        (self.hasRPU, self.hasEnhancementLayer, self.hasBaseLayer) = (hasRPU, hasEnhancementLayer, hasBaseLayer)
        self.baseLayerCompatibilityID = baseLayerCompatibilityID
    }
}

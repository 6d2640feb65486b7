/// A colour with red, green, blue and alpha components from 0 to 1 (the `CGColor` of an
/// instruction's background), in the output's (BT.709) primaries, gamma-encoded.
public struct RGBAColor: Sendable, Hashable, Codable {
    public var red: Double, green: Double, blue: Double, alpha: Double

    /// A colour from its components, opaque unless `alpha` says otherwise.
    public init(red: Double, green: Double, blue: Double, alpha: Double = 1) {
        (self.red, self.green, self.blue, self.alpha) = (red, green, blue, alpha)
    }

    public static let black = RGBAColor(red: 0, green: 0, blue: 0)
    public static let white = RGBAColor(red: 1, green: 1, blue: 1)
}

/// How the composition is drawn over one time range (`AVMutableVideoCompositionInstruction`):
/// a background colour and the source tracks layered on it.
public struct VideoCompositionInstruction: Sendable, Hashable {
    /// The time range the instruction applies to.
    public var timeRange: MediaTimeRange
    /// The colour shown where no layer covers the picture; opaque black by default.
    public var backgroundColor: RGBAColor
    /// The layers, the first on top, as Apple orders them.
    public var layerInstructions: [VideoCompositionLayerInstruction]
    /// Whether post-processing (Apple's animation tool) runs on this instruction's frames.
    public var enablePostProcessing: Bool

    /// An instruction over `timeRange`; by default opaque black with no layers.
    public init(timeRange: MediaTimeRange, backgroundColor: RGBAColor = .black,
                layerInstructions: [VideoCompositionLayerInstruction] = [], enablePostProcessing: Bool = true) {
        self.timeRange = timeRange
        self.backgroundColor = backgroundColor
        self.layerInstructions = layerInstructions
        self.enablePostProcessing = enablePostProcessing
    }

    /// The tracks whose frames the compositor needs for this instruction: those of its layers.
    public var requiredSourceTrackIDs: [Int] { layerInstructions.map(\.trackID) }

    /// True when a layer's transform, opacity or crop changes during the instruction.
    public var containsTweening: Bool { layerInstructions.contains { $0.containsTweening(in: timeRange) } }
}

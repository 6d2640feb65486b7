/// A segment of one timeline (source, e.g. media) mapped onto another (target, e.g. a track), with
/// `CMTimeMapping` semantics. An empty edit has an invalid `source.start` and plays nothing for
/// `target.duration`.
public struct MediaTimeMapping: Sendable, Hashable, Codable {
    public var source: MediaTimeRange
    public var target: MediaTimeRange

    /// The mapping of `source` onto `target` (`CMTimeMappingMake`); invalid unless both durations
    /// have epoch 0. When the durations differ, the source plays at rate
    /// `source.duration / target.duration`.
    public init(source: MediaTimeRange, target: MediaTimeRange) {
        guard source.duration.epoch == 0, target.duration.epoch == 0 else {
            self.source = .invalid
            self.target = .invalid
            return
        }
        self.source = source
        self.target = target
    }

    /// An empty edit lasting `target` (`CMTimeMappingMakeEmpty`): nothing of the source plays.
    public static func empty(target: MediaTimeRange) -> MediaTimeMapping {
        MediaTimeMapping(source: .invalid, target: target)
    }

    /// `kCMTimeMappingInvalid`.
    public static let invalid = MediaTimeMapping(source: .invalid, target: .invalid)

    /// Whether the target range is valid (`CMTIMEMAPPING_IS_VALID`).
    public var isValid: Bool { target.isValid }

    /// Whether this is a valid empty edit: no numeric source start (`CMTIMEMAPPING_IS_EMPTY`).
    public var isEmpty: Bool { !source.start.isNumeric && target.isValid }
}

extension MediaTimeMapping: CustomStringConvertible {
    /// The source and target ranges, like `CMTimeMappingCopyDescription`.
    public var description: String { "{source = \(source), target = \(target)}" }
}

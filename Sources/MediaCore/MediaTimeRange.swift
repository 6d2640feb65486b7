/// A time range with `CMTimeRange` semantics: `start ..< start + duration`; the end is never inside.
///
/// A duration has epoch 0 and is not negative. Operations on two ranges need their starts in the
/// same epoch and give an invalid range otherwise.
public struct MediaTimeRange: Sendable, Hashable, Codable {
    public var start: MediaTime
    public var duration: MediaTime

    /// The range from `start` lasting `duration` (`CMTimeRangeMake`).
    public init(start: MediaTime, duration: MediaTime) {
        self.start = start
        self.duration = duration
    }

    /// The range from `start` up to, not including, `end` (`CMTimeRangeFromTimeToTime`).
    public init(start: MediaTime, end: MediaTime) {
        self.init(start: start, duration: end - start)
    }

    /// The empty range at time zero (`kCMTimeRangeZero`).
    public static let zero = MediaTimeRange(start: .zero, duration: .zero)
    public static let invalid = MediaTimeRange(start: .invalid, duration: .invalid)

    /// Whether both times are valid and the duration is a duration: epoch 0 and not negative.
    public var isValid: Bool {
        start.isValid && duration.isValid && duration.epoch == 0 && duration.value >= 0
            && !duration.isNegativeInfinity
    }

    /// Whether the range is valid with a zero duration.
    public var isEmpty: Bool { isValid && duration == .zero }

    /// Whether the range is valid with an indefinite start or duration.
    public var isIndefinite: Bool { isValid && (start.isIndefinite || duration.isIndefinite) }

    /// The first time after the range (`CMTimeRangeGetEnd`); invalid for an invalid range.
    public var end: MediaTime { isValid ? start + duration : .invalid }

    /// Whether `time` lies in `start ..< end` (`CMTimeRangeContainsTime`).
    public func contains(_ time: MediaTime) -> Bool {
        isValid && time.isValid && time >= start && time < end
    }

    /// Core Media's name for `contains(_:)` with a time.
    public func containsTime(_ time: MediaTime) -> Bool { contains(time) }

    /// Whether `other` lies within this range (`CMTimeRangeContainsTimeRange`).
    public func contains(_ other: MediaTimeRange) -> Bool {
        isValid && other.isValid && other.start >= start && other.end <= end
    }

    /// Whether the two ranges can be combined: both valid, with starts in the same epoch.
    private func isCompatible(with other: MediaTimeRange) -> Bool {
        isValid && other.isValid && start.epoch == other.start.epoch
    }

    /// The smallest range holding every time of both ranges (`CMTimeRangeGetUnion`).
    public func union(_ other: MediaTimeRange) -> MediaTimeRange {
        guard isCompatible(with: other) else { return .invalid }
        return MediaTimeRange(start: Swift.min(start, other.start), end: Swift.max(end, other.end))
    }

    /// The largest range both ranges include (`CMTimeRangeGetIntersection`); `zero` when they
    /// share no time.
    public func intersection(_ other: MediaTimeRange) -> MediaTimeRange {
        guard isCompatible(with: other) else { return .invalid }
        let laterStart = Swift.max(start, other.start)
        let earlierEnd = Swift.min(end, other.end)
        guard laterStart < earlierEnd else { return .zero }
        return MediaTimeRange(start: laterStart, end: earlierEnd)
    }

    /// The time in the range nearest `time` (`CMTimeClampToRange`): `start` for earlier times and
    /// `end` for later ones, as Core Media documents; invalid for an invalid time or an empty or
    /// invalid range.
    public func clamp(_ time: MediaTime) -> MediaTime {
        guard time.isValid, isValid, !isEmpty else { return .invalid }
        if time < start { return start }
        if time > end { return end }
        return time
    }

    /// `time` carried linearly from `source` onto `target` (`CMTimeMapTimeFromRangeToRange`):
    /// `(time - source.start) * target.duration / source.duration + target.start`, with the start
    /// and end of `source` going exactly to those of `target`. Invalid when either range is empty
    /// or invalid, or `time` is not in the epoch of `source.start`. When both durations are
    /// +infinity the time is offset but not scaled.
    public static func mapTime(_ time: MediaTime, from source: MediaTimeRange, to target: MediaTimeRange) -> MediaTime {
        guard time.isValid, source.isValid, target.isValid, !source.isEmpty, !target.isEmpty,
            time.epoch == source.start.epoch
        else { return .invalid }
        if time == source.start { return target.start }
        if time == source.end { return target.end }
        if source.duration.isPositiveInfinity && target.duration.isPositiveInfinity {
            return time - source.start + target.start
        }
        return mapDuration(time - source.start, from: source, to: target) + target.start
    }

    /// `duration` scaled by `target.duration / source.duration`
    /// (`CMTimeMapDurationFromRangeToRange`). Invalid when `duration` has a nonzero epoch or the
    /// ratio is undefined. The ratio is applied exactly when it reduces to `Int32` terms, and in
    /// `Double` (marking the result rounded when inexact) otherwise.
    public static func mapDuration(_ duration: MediaTime, from source: MediaTimeRange, to target: MediaTimeRange) -> MediaTime {
        guard duration.isValid, duration.epoch == 0 else { return .invalid }
        if source.duration.isPositiveInfinity && target.duration.isPositiveInfinity { return duration }
        guard source.duration.isNumeric, target.duration.isNumeric, source.duration.value != 0 else {
            return .invalid
        }
        if let (multiplier, divisor) = ratio(of: target.duration, to: source.duration) {
            return duration.multiplied(by: multiplier, dividedBy: divisor)
        }
        return duration.multiplied(by: target.duration.seconds / source.duration.seconds)
    }

    /// `numerator / denominator` (two numeric times, the denominator nonzero) in lowest terms, when
    /// both terms fit in `Int32`.
    private static func ratio(of numerator: MediaTime, to denominator: MediaTime) -> (Int32, Int32)? {
        var top = WideInteger(numerator.value, times: UInt64(denominator.timescale))
        var bottom = WideInteger(denominator.value, times: UInt64(numerator.timescale))
        let negative = top.isNegative != bottom.isNegative
        let common = WideInteger.greatestCommonDivisor(top, bottom)
        top = top.magnitudeQuotientAndRemainder(dividingBy: common).quotient
        bottom = bottom.magnitudeQuotientAndRemainder(dividingBy: common).quotient
        guard let topMagnitude = top.magnitude64, topMagnitude <= UInt64(Int32.max),
            let bottomMagnitude = bottom.magnitude64, bottomMagnitude <= UInt64(Int32.max)
        else { return nil }
        return (negative ? -Int32(topMagnitude) : Int32(topMagnitude), Int32(bottomMagnitude))
    }
}

extension MediaTimeRange: CustomStringConvertible {
    /// Like `CMTimeRangeCopyDescription`: "{{0/1 = 0.000}, {600/600 = 1.000}}", start then duration.
    public var description: String { "{\(start), \(duration)}" }
}

extension MediaTime {
    /// The time carried by whole durations of `range` into `range.start ..< range.end`
    /// (`CMTimeFoldIntoRange`), for looping: times before the range fold too. Invalid unless this
    /// time and the range are numeric, the range is not empty and the time is in the epoch of
    /// `range.start`. Exact whenever the arithmetic is (see `+`).
    public func fold(into range: MediaTimeRange) -> MediaTime {
        guard isNumeric, range.isValid, range.start.isNumeric, range.duration.isNumeric, !range.isEmpty,
            epoch == range.start.epoch
        else { return .invalid }
        let offset = self - range.start
        guard offset.isNumeric else { return .invalid }
        if offset >= .zero && offset < range.duration { return self }
        // offset = a/b and duration = c/e: offset mod duration = (a·e mod b·c) / (b·e), floored.
        let duration = range.duration
        let scaledOffset = WideInteger(offset.value, times: UInt64(duration.timescale))
        let scaledDuration = WideInteger(duration.value, times: UInt64(offset.timescale))
        var remainder = scaledOffset.magnitudeQuotientAndRemainder(dividingBy: scaledDuration).remainder
        if scaledOffset.isNegative && !remainder.isZero {
            remainder = scaledDuration.adding(remainder.negated) ?? .zero
        }
        let offsetScale = UInt64(offset.timescale)
        let durationScale = UInt64(duration.timescale)
        let commonMultiple = offsetScale / greatestCommonDivisor(offsetScale, durationScale) * durationScale
        let folded = MediaTime.nearest(
            numerator: remainder, denominator: offsetScale * durationScale,
            timescale: commonMultiple <= UInt64(MediaTime.maxTimescale) ? Int32(commonMultiple) : MediaTime.maxTimescale,
            epoch: 0, wasRounded: offset.flags.contains(.hasBeenRounded) || duration.flags.contains(.hasBeenRounded)
        )
        return range.start + folded
    }
}

/// A stream's clock: `numerator/denominator` seconds per tick (FFmpeg's `AVStream.time_base`,
/// 1001/30000 for a 29.97 fps AVI). The one converter between a stream's ticks and `MediaTime`:
/// exact both ways, with 128-bit intermediates, so no time base is truncated to whole ticks per
/// second.
public struct TimeBase: Sendable, Hashable, CustomStringConvertible {
    public let numerator: Int32
    public let denominator: Int32

    /// A time base of `numerator/denominator` seconds per tick; nil unless both are positive.
    public init?(numerator: Int32, denominator: Int32) {
        guard numerator > 0, denominator > 0 else { return nil }
        self.numerator = numerator
        self.denominator = denominator
    }

    public var description: String { "\(numerator)/\(denominator)" }

    /// `ticks` as a media time: exact, in the time base's denominator, unless the product
    /// overflows 64 bits, when it is the nearest time `MediaTime` can hold.
    public func time(ofTicks ticks: Int64) -> MediaTime {
        let (product, overflow) = ticks.multipliedReportingOverflow(by: Int64(numerator))
        if !overflow { return MediaTime(value: product, timescale: denominator) }
        return MediaTime(value: ticks, timescale: denominator).multiplied(by: numerator, dividedBy: 1)
    }

    /// `time` counted in ticks, rounded as `rounding` says (`.quickTime` counts as half away
    /// from zero); nil for a non-numeric time or one beyond what 64 bits of ticks can count.
    public func ticks(of time: MediaTime, rounding: MediaTime.RoundingMethod = .roundHalfAwayFromZero) -> Int64? {
        guard time.isNumeric, time.timescale > 0 else { return nil }
        // ticks = value / timescale seconds ÷ (numerator / denominator) seconds per tick.
        let scaled = WideInteger(time.value, times: UInt64(denominator))
        let divisor = UInt64(time.timescale) * UInt64(numerator)
        let method = rounding == .quickTime ? .roundHalfAwayFromZero : rounding
        return scaled.divided(by: divisor, rounding: method).quotient.int64
    }

    /// `time` in ticks, with an infinity or an overflow clamped to the largest count of its
    /// sign that stays safe to add to; nil for an invalid or indefinite time. For range bounds.
    public func clampedTicks(of time: MediaTime, rounding: MediaTime.RoundingMethod) -> Int64? {
        if time == .positiveInfinity { return Self.safeTickBound }
        if time == .negativeInfinity { return -Self.safeTickBound }
        guard time.isNumeric else { return nil }
        if let ticks = ticks(of: time, rounding: rounding) { return min(max(ticks, -Self.safeTickBound), Self.safeTickBound) }
        return time.value < 0 ? -Self.safeTickBound : Self.safeTickBound
    }

    /// Half of `Int64.max`: a bound that a duration can be added to, or subtracted from, without trapping.
    public static let safeTickBound = Int64.max / 2
}

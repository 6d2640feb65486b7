internal import CFFmpeg
import MediaCore

/// A rational number such as a time base or frame rate (FFmpeg's `AVRational`).
public struct Rational: Sendable, Hashable, CustomStringConvertible {
    public var numerator: Int32
    public var denominator: Int32

    public init(_ numerator: Int32, _ denominator: Int32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    init(_ r: AVRational) { self.init(r.num, r.den) }

    var avRational: AVRational { AVRational(num: numerator, den: denominator) }

    /// True when both terms are positive, i.e. a usable rate or time base.
    public var isPositive: Bool { numerator > 0 && denominator > 0 }
    public var doubleValue: Double { denominator == 0 ? .nan : Double(numerator) / Double(denominator) }
    public var description: String { "\(numerator)/\(denominator)" }

    /// `value × self` expressed in `target` units, rounded to nearest. The corresponding C function is `av_rescale_q`.
    public func rescale(_ value: Int64, to target: Rational) -> Int64 {
        av_rescale_q(value, avRational, target.avRational)
    }

    /// This ratio as a stream clock (`TimeBase`); nil unless both terms are positive.
    public var clock: TimeBase? { TimeBase(numerator: numerator, denominator: denominator) }

    /// `ticks` of this time base as a media time, exactly (`TimeBase.time(ofTicks:)`); invalid
    /// when this is no usable time base.
    public func time(ofTicks ticks: Int64) -> MediaTime {
        clock?.time(ofTicks: ticks) ?? .invalid
    }

    /// `time` counted in ticks of this time base, rounded as `rounding` says
    /// (`TimeBase.ticks(of:rounding:)`); nil for a non-numeric time or no usable time base.
    public func ticks(of time: MediaTime, rounding: MediaTime.RoundingMethod = .roundHalfAwayFromZero) -> Int64? {
        clock?.ticks(of: time, rounding: rounding)
    }
}

/// A rational media time with Core Media's `CMTime` semantics: `value / timescale` seconds.
///
/// Non-numeric times (invalid, indefinite, ±infinity) are flagged, never encoded in the value.
/// Equality, ordering and hashing follow `CMTimeCompare`: 200/2 equals 400/4, a later epoch is
/// later whatever the value, and the flag `hasBeenRounded` does not take part.
public struct MediaTime: Sendable {
    /// The flags of a `MediaTime`, with `CMTimeFlags`' bit values.
    public struct Flags: OptionSet, Sendable, Hashable, Codable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let valid = Flags(rawValue: 1 << 0)
        public static let hasBeenRounded = Flags(rawValue: 1 << 1)
        public static let positiveInfinity = Flags(rawValue: 1 << 2)
        public static let negativeInfinity = Flags(rawValue: 1 << 3)
        public static let indefinite = Flags(rawValue: 1 << 4)
        /// The flags that give a time an implied, non-numeric value.
        public static let impliedValueMask: Flags = [.positiveInfinity, .negativeInfinity, .indefinite]
    }

    /// How a value is rounded when a time changes timescale (`CMTimeRoundingMethod`).
    public enum RoundingMethod: Sendable, Hashable, CaseIterable {
        /// Toward zero when the fraction is below one half, away from zero from one half up.
        case roundHalfAwayFromZero
        /// Toward zero whenever there is a fraction.
        case roundTowardZero
        /// Away from zero whenever there is a fraction.
        case roundAwayFromZero
        /// Toward zero when converting to a smaller timescale, away from zero when converting to
        /// a larger one; a negative time never rounds to zero but to -1/newTimescale.
        case quickTime
        /// Toward +infinity whenever there is a fraction.
        case roundTowardPositiveInfinity
        /// Toward -infinity whenever there is a fraction.
        case roundTowardNegativeInfinity

        /// Core Media's default, `roundHalfAwayFromZero`.
        public static let `default` = RoundingMethod.roundHalfAwayFromZero
    }

    public var value: Int64
    public var timescale: Int32
    public var flags: Flags
    public var epoch: Int64

    /// A time of `value / timescale` seconds (`CMTimeMakeWithEpoch`); a numeric time with a
    /// timescale that is not positive is made invalid.
    public init(value: Int64, timescale: Int32, flags: Flags = .valid, epoch: Int64 = 0) {
        self.value = value
        self.timescale = timescale
        let isNumeric = flags.intersection(Flags.impliedValueMask).isEmpty
        self.flags = timescale > 0 || !isNumeric ? flags : flags.subtracting(.valid)
        self.epoch = epoch
    }

    /// The largest timescale arithmetic picks for a result (`kCMTimeMaxTimescale`).
    public static let maxTimescale: Int32 = 1_000_000_000

    public static let zero = MediaTime(value: 0, timescale: 1)
    public static let invalid = MediaTime(value: 0, timescale: 0, flags: [])
    /// An unknown time, such as the duration of a live broadcast.
    public static let indefinite = MediaTime(value: 0, timescale: 0, flags: [.valid, .indefinite])
    public static let positiveInfinity = MediaTime(value: 0, timescale: 0, flags: [.valid, .positiveInfinity])
    public static let negativeInfinity = MediaTime(value: 0, timescale: 0, flags: [.valid, .negativeInfinity])

    /// The time nearest `seconds` at `preferredTimescale` (`CMTimeMakeWithSeconds`), rounding half
    /// away from zero. The timescale is halved while the value overflows, and the result is an
    /// infinity if it still overflows at timescale 1. It is marked rounded when converting it back
    /// to seconds does not give exactly `seconds`. NaN or a timescale that is not positive gives
    /// an invalid time; ±infinity gives the infinity of that sign.
    public init(seconds: Double, preferredTimescale: Int32) {
        guard preferredTimescale > 0, !seconds.isNaN else {
            self = .invalid
            return
        }
        guard seconds.isFinite else {
            self = MediaTime.infinity(negative: seconds < 0)
            return
        }
        var timescale = preferredTimescale
        while true {
            let scaled = (seconds * Double(timescale)).rounded(.toNearestOrAwayFromZero)
            if scaled.magnitude < 0x1p63 {
                let value = Int64(scaled)
                let isExact = Double(value) / Double(timescale) == seconds
                self.init(value: value, timescale: timescale, flags: isExact ? .valid : [.valid, .hasBeenRounded])
                return
            }
            if timescale == 1 {
                self = MediaTime.infinity(negative: seconds < 0)
                return
            }
            timescale /= 2
        }
    }

    /// Whether the time is valid: flagged valid, and with a positive timescale when numeric.
    public var isValid: Bool {
        guard flags.contains(.valid) else { return false }
        return timescale > 0 || !flags.intersection(Flags.impliedValueMask).isEmpty
    }

    /// Whether the time is an ordinary number: valid and neither infinite nor indefinite.
    public var isNumeric: Bool { kind == .numeric }

    public var isIndefinite: Bool { kind == .indefinite }

    public var isPositiveInfinity: Bool { kind == .positiveInfinity }

    public var isNegativeInfinity: Bool { kind == .negativeInfinity }

    /// Whether a numeric time was rounded at some point in its past.
    public var hasBeenRounded: Bool { isNumeric && flags.contains(.hasBeenRounded) }

    /// The time in seconds (`CMTimeGetSeconds`): ±.infinity for the infinities, NaN when invalid
    /// or indefinite; the epoch is ignored.
    public var seconds: Double {
        switch kind {
        case .numeric: return Double(value) / Double(timescale)
        case .positiveInfinity: return .infinity
        case .negativeInfinity: return -.infinity
        case .indefinite, .invalid: return .nan
        }
    }

    /// The same time in `newTimescale` units (`CMTimeConvertScale`), rounded as `rounding` says and
    /// marked rounded when inexact. A value that overflows gives the infinity of its sign; a
    /// non-numeric time is returned unchanged; a timescale that is not positive gives invalid.
    public func convertScale(_ newTimescale: Int32, rounding: RoundingMethod = .default) -> MediaTime {
        guard newTimescale > 0 else { return .invalid }
        guard isNumeric, newTimescale != timescale else { return self }
        let method: RoundingMethod
        if rounding == .quickTime {
            method = newTimescale < timescale ? .roundTowardZero : .roundAwayFromZero
        } else {
            method = rounding
        }
        let numerator = WideInteger(value, times: UInt64(newTimescale))
        var (quotient, isInexact) = numerator.divided(by: UInt64(timescale), rounding: method)
        if rounding == .quickTime, value < 0, quotient.isZero {
            quotient = WideInteger(Int64(-1))
        }
        guard let newValue = quotient.int64 else { return MediaTime.infinity(negative: value < 0) }
        var newFlags = flags
        if isInexact { newFlags.insert(.hasBeenRounded) }
        return MediaTime(value: newValue, timescale: newTimescale, flags: newFlags, epoch: epoch)
    }
}

extension MediaTime: Comparable, Hashable {
    /// -1, 0 or 1 as `lhs` is less than, equal to or greater than `rhs` (`CMTimeCompare`):
    /// -infinity < numeric times < indefinite < +infinity < invalid, and numeric times in a larger
    /// epoch after those in a smaller one.
    public static func compare(_ lhs: MediaTime, _ rhs: MediaTime) -> Int {
        let lhsKind = lhs.kind
        let rhsKind = rhs.kind
        guard lhsKind == .numeric, rhsKind == .numeric else {
            return lhsKind == rhsKind ? 0 : (lhsKind < rhsKind ? -1 : 1)
        }
        if lhs.epoch != rhs.epoch { return lhs.epoch < rhs.epoch ? -1 : 1 }
        if lhs.timescale == rhs.timescale {
            return lhs.value == rhs.value ? 0 : (lhs.value < rhs.value ? -1 : 1)
        }
        return WideInteger.compare(
            WideInteger(lhs.value, times: UInt64(rhs.timescale)),
            WideInteger(rhs.value, times: UInt64(lhs.timescale))
        )
    }

    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool { compare(lhs, rhs) == 0 }

    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool { compare(lhs, rhs) < 0 }

    /// Hashes the kind and, for a numeric time, the epoch and the fraction in lowest terms, so that
    /// times equal under `compare` hash alike.
    public func hash(into hasher: inout Hasher) {
        let kind = self.kind
        hasher.combine(kind)
        guard kind == .numeric else { return }
        let divisor = greatestCommonDivisor(value.magnitude, UInt64(timescale))
        hasher.combine(epoch)
        hasher.combine(value < 0)
        hasher.combine(value.magnitude / divisor)
        hasher.combine(UInt64(timescale) / divisor)
    }
}

extension MediaTime: Codable {
    /// The field names, as `CMTimeCopyAsDictionary` keys them.
    enum CodingKeys: String, CodingKey {
        case value, timescale, flags, epoch
    }
}

extension MediaTime: CustomStringConvertible {
    /// Like `CMTimeCopyDescription`: "{200/2 = 100.000}", "{INVALID}", "{+INFINITY}",
    /// "{-INFINITY}", "{INDEFINITE}"; a rounded time adds ", rounded" and a nonzero epoch
    /// ", epoch = N".
    public var description: String {
        switch kind {
        case .invalid: return "{INVALID}"
        case .indefinite: return "{INDEFINITE}"
        case .positiveInfinity: return "{+INFINITY}"
        case .negativeInfinity: return "{-INFINITY}"
        case .numeric:
            var text = "{\(value)/\(timescale) = \(secondsWithThreeDecimals)"
            if hasBeenRounded { text += ", rounded" }
            if epoch != 0 { text += ", epoch = \(epoch)" }
            return text + "}"
        }
    }

    /// The seconds of a numeric time rounded half away from zero to three decimals, computed
    /// exactly from the fraction rather than through `Double`.
    private var secondsWithThreeDecimals: String {
        let scale = UInt64(timescale)
        var wholeSeconds = value.magnitude / scale
        let remainder = value.magnitude % scale
        var thousandths = WideInteger(remainder, times: 1000)
            .divided(by: scale, rounding: .roundHalfAwayFromZero).quotient.low
        if thousandths == 1000 {
            wholeSeconds += 1
            thousandths = 0
        }
        let digits = String(thousandths)
        let padding = String(repeating: "0", count: 3 - digits.count)
        return "\(value < 0 ? "-" : "")\(wholeSeconds).\(padding)\(digits)"
    }
}

extension WideInteger {
    /// The exact product of an unsigned value and an unsigned factor.
    init(_ value: UInt64, times factor: UInt64) {
        let product = value.multipliedFullWidth(by: factor)
        self.init(isNegative: false, high: product.high, low: product.low)
    }
}

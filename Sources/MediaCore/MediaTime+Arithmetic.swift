/// A signed 128-bit integer held as sign and magnitude, for the exact intermediate products of
/// time arithmetic (an `Int64` value times an `Int32` timescale needs 95 bits).
///
/// Built on `multipliedFullWidth` and `dividingFullWidth` rather than `Int128`, which the macOS
/// deployment target of this package does not have.
struct WideInteger: Equatable {
    var isNegative: Bool
    var high: UInt64
    var low: UInt64

    static let zero = WideInteger(isNegative: false, high: 0, low: 0)

    init(isNegative: Bool, high: UInt64, low: UInt64) {
        self.isNegative = isNegative && (high != 0 || low != 0)
        self.high = high
        self.low = low
    }

    init(_ value: Int64) {
        self.init(isNegative: value < 0, high: 0, low: value.magnitude)
    }

    init(_ value: UInt64) {
        self.init(isNegative: false, high: 0, low: value)
    }

    /// The exact product of a signed value and an unsigned factor.
    init(_ value: Int64, times factor: UInt64) {
        let product = value.magnitude.multipliedFullWidth(by: factor)
        self.init(isNegative: value < 0, high: product.high, low: product.low)
    }

    var isZero: Bool { high == 0 && low == 0 }

    var negated: WideInteger { WideInteger(isNegative: !isNegative, high: high, low: low) }

    /// The value as an `Int64` when it lies in `-Int64.max ... Int64.max`, so that every time
    /// value computed here can be negated without trapping.
    var int64: Int64? {
        guard high == 0, low <= UInt64(Int64.max) else { return nil }
        return isNegative ? -Int64(low) : Int64(low)
    }

    /// The magnitude as a `UInt64` when it fits.
    var magnitude64: UInt64? { high == 0 ? low : nil }

    /// The product with an unsigned factor; nil when the magnitude would need more than 128 bits.
    func multiplied(by factor: UInt64) -> WideInteger? {
        let lowProduct = low.multipliedFullWidth(by: factor)
        let highProduct = high.multipliedFullWidth(by: factor)
        guard highProduct.high == 0 else { return nil }
        let (newHigh, overflow) = highProduct.low.addingReportingOverflow(lowProduct.high)
        guard !overflow else { return nil }
        return WideInteger(isNegative: isNegative, high: newHigh, low: lowProduct.low)
    }

    /// The sum; nil when the magnitude would need more than 128 bits.
    func adding(_ other: WideInteger) -> WideInteger? {
        if isNegative == other.isNegative {
            let (newLow, carry) = low.addingReportingOverflow(other.low)
            let (partialHigh, overflow1) = high.addingReportingOverflow(other.high)
            let (newHigh, overflow2) = partialHigh.addingReportingOverflow(carry ? 1 : 0)
            guard !overflow1, !overflow2 else { return nil }
            return WideInteger(isNegative: isNegative, high: newHigh, low: newLow)
        }
        let (larger, smaller) = Self.compareMagnitudes(self, other) >= 0 ? (self, other) : (other, self)
        let (newLow, borrow) = larger.low.subtractingReportingOverflow(smaller.low)
        let newHigh = larger.high &- smaller.high &- (borrow ? 1 : 0)
        return WideInteger(isNegative: larger.isNegative, high: newHigh, low: newLow)
    }

    /// -1, 0 or 1 as the magnitude of `lhs` is less than, equal to or greater than that of `rhs`.
    static func compareMagnitudes(_ lhs: WideInteger, _ rhs: WideInteger) -> Int {
        if lhs.high != rhs.high { return lhs.high < rhs.high ? -1 : 1 }
        if lhs.low != rhs.low { return lhs.low < rhs.low ? -1 : 1 }
        return 0
    }

    /// -1, 0 or 1 as `lhs` is less than, equal to or greater than `rhs`.
    static func compare(_ lhs: WideInteger, _ rhs: WideInteger) -> Int {
        if lhs.isNegative != rhs.isNegative { return lhs.isNegative ? -1 : 1 }
        let magnitudeOrder = compareMagnitudes(lhs, rhs)
        return lhs.isNegative ? -magnitudeOrder : magnitudeOrder
    }

    /// The quotient by a positive divisor, rounded as `rounding` says, and whether it was inexact.
    func divided(by divisor: UInt64, rounding: MediaTime.RoundingMethod) -> (quotient: WideInteger, isInexact: Bool) {
        precondition(divisor > 0, "division of a time by a zero timescale")
        let (highQuotient, highRemainder) = high.quotientAndRemainder(dividingBy: divisor)
        let (lowQuotient, remainder) = divisor.dividingFullWidth((highRemainder, low))
        var quotient = WideInteger(isNegative: isNegative, high: highQuotient, low: lowQuotient)
        guard remainder != 0 else { return (quotient, false) }
        let awayFromZero: Bool
        switch rounding {
        case .roundHalfAwayFromZero: awayFromZero = remainder >= divisor - remainder
        case .roundTowardZero: awayFromZero = false
        case .roundAwayFromZero: awayFromZero = true
        case .roundTowardPositiveInfinity: awayFromZero = !isNegative
        case .roundTowardNegativeInfinity: awayFromZero = isNegative
        case .quickTime: preconditionFailure("quickTime rounding is resolved by the caller")
        }
        if awayFromZero {
            let (newLow, carry) = quotient.low.addingReportingOverflow(1)
            quotient = WideInteger(isNegative: isNegative, high: quotient.high &+ (carry ? 1 : 0), low: newLow)
        }
        return (quotient, true)
    }

    /// The truncated quotient and the remainder of the magnitudes, by a nonzero 128-bit divisor.
    func magnitudeQuotientAndRemainder(dividingBy divisor: WideInteger) -> (quotient: WideInteger, remainder: WideInteger) {
        precondition(!divisor.isZero, "division by zero")
        var quotient = WideInteger.zero
        var remainder = WideInteger.zero
        for bit in stride(from: 127, through: 0, by: -1) {
            remainder = WideInteger(
                isNegative: false,
                high: (remainder.high << 1) | (remainder.low >> 63),
                low: (remainder.low << 1) | bitAt(bit)
            )
            if Self.compareMagnitudes(remainder, divisor) >= 0 {
                let (newLow, borrow) = remainder.low.subtractingReportingOverflow(divisor.low)
                remainder = WideInteger(isNegative: false, high: remainder.high &- divisor.high &- (borrow ? 1 : 0), low: newLow)
                if bit >= 64 {
                    quotient.high |= 1 << UInt64(bit - 64)
                } else {
                    quotient.low |= 1 << UInt64(bit)
                }
            }
        }
        return (quotient, remainder)
    }

    private func bitAt(_ bit: Int) -> UInt64 {
        bit >= 64 ? (high >> UInt64(bit - 64)) & 1 : (low >> UInt64(bit)) & 1
    }

    /// The greatest common divisor of the magnitudes (zero only when both are zero).
    static func greatestCommonDivisor(_ lhs: WideInteger, _ rhs: WideInteger) -> WideInteger {
        var a = WideInteger(isNegative: false, high: lhs.high, low: lhs.low)
        var b = WideInteger(isNegative: false, high: rhs.high, low: rhs.low)
        while !b.isZero {
            (a, b) = (b, a.magnitudeQuotientAndRemainder(dividingBy: b).remainder)
        }
        return a
    }
}

/// The greatest common divisor of two unsigned integers.
func greatestCommonDivisor(_ lhs: UInt64, _ rhs: UInt64) -> UInt64 {
    var (a, b) = (lhs, rhs)
    while b != 0 { (a, b) = (b, a % b) }
    return a
}

extension MediaTime {
    /// Where a time lies on Core Media's line of kinds; the raw values give `CMTimeCompare`'s order
    /// -infinity < numeric < indefinite < +infinity < invalid.
    enum Kind: Int, Comparable {
        case negativeInfinity, numeric, indefinite, positiveInfinity, invalid

        static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    var kind: Kind {
        guard isValid else { return .invalid }
        if flags.contains(.positiveInfinity) { return .positiveInfinity }
        if flags.contains(.negativeInfinity) { return .negativeInfinity }
        if flags.contains(.indefinite) { return .indefinite }
        return .numeric
    }

    /// The infinity of the given sign.
    static func infinity(negative: Bool) -> MediaTime {
        negative ? .negativeInfinity : .positiveInfinity
    }

    /// The numeric time nearest `numerator / denominator` seconds at `timescale`, halving the
    /// timescale while the value overflows and giving an infinity when it overflows at timescale 1,
    /// as `CMTimeAdd`, `CMTimeMultiply` and their kin do. Rounds half away from zero.
    static func nearest(
        numerator: WideInteger, denominator: UInt64, timescale: Int32, epoch: Int64, wasRounded: Bool
    ) -> MediaTime {
        var candidateTimescale = timescale
        while true {
            if let scaled = numerator.multiplied(by: UInt64(candidateTimescale)) {
                let (quotient, isInexact) = scaled.divided(by: denominator, rounding: .roundHalfAwayFromZero)
                if let value = quotient.int64 {
                    let flags: Flags = wasRounded || isInexact ? [.valid, .hasBeenRounded] : .valid
                    return MediaTime(value: value, timescale: candidateTimescale, flags: flags, epoch: epoch)
                }
            }
            if candidateTimescale == 1 { return infinity(negative: numerator.isNegative) }
            candidateTimescale /= 2
        }
    }

    /// `CMTimeAdd` and `CMTimeSubtract`: the sum of `lhs` and `rhs`, or `rhs` negated.
    static func sum(_ lhs: MediaTime, _ rhs: MediaTime, subtracting: Bool) -> MediaTime {
        let lhsKind = lhs.kind
        var rhsKind = rhs.kind
        if subtracting {
            if rhsKind == .positiveInfinity {
                rhsKind = .negativeInfinity
            } else if rhsKind == .negativeInfinity {
                rhsKind = .positiveInfinity
            }
        }
        if lhsKind == .invalid || rhsKind == .invalid { return .invalid }
        let lhsInfinite = lhsKind == .positiveInfinity || lhsKind == .negativeInfinity
        let rhsInfinite = rhsKind == .positiveInfinity || rhsKind == .negativeInfinity
        switch (lhsInfinite, rhsInfinite) {
        case (true, true): return lhsKind == rhsKind ? infinity(negative: lhsKind == .negativeInfinity) : .invalid
        case (true, false): return infinity(negative: lhsKind == .negativeInfinity)
        case (false, true): return infinity(negative: rhsKind == .negativeInfinity)
        case (false, false): break
        }
        if lhsKind == .indefinite || rhsKind == .indefinite { return .indefinite }

        let epoch: Int64
        switch (lhs.epoch, rhs.epoch) {
        case let (left, right) where left == right: epoch = 0
        case let (left, 0): epoch = left
        case let (0, right): epoch = right
        default: return .invalid
        }
        let wasRounded = lhs.flags.contains(.hasBeenRounded) || rhs.flags.contains(.hasBeenRounded)
        let roundedFlags: Flags = wasRounded ? [.valid, .hasBeenRounded] : .valid

        if lhs.timescale == rhs.timescale {
            let (value, overflow) = subtracting
                ? lhs.value.subtractingReportingOverflow(rhs.value)
                : lhs.value.addingReportingOverflow(rhs.value)
            if !overflow, value != .min {
                return MediaTime(value: value, timescale: lhs.timescale, flags: roundedFlags, epoch: epoch)
            }
        }
        let lhsScale = UInt64(lhs.timescale)
        let rhsScale = UInt64(rhs.timescale)
        let lhsPart = WideInteger(lhs.value, times: rhsScale)
        let rhsPart = WideInteger(rhs.value, times: lhsScale)
        // Each part is below 2^95 in magnitude, so their sum always fits.
        let numerator = lhsPart.adding(subtracting ? rhsPart.negated : rhsPart) ?? .zero
        let leastCommonMultiple = lhsScale / greatestCommonDivisor(lhsScale, rhsScale) * rhsScale
        let timescale: Int32
        if lhs.timescale == rhs.timescale {
            timescale = lhs.timescale
        } else if leastCommonMultiple <= UInt64(maxTimescale) {
            timescale = Int32(leastCommonMultiple)
        } else {
            timescale = maxTimescale
        }
        return nearest(
            numerator: numerator, denominator: lhsScale * rhsScale, timescale: timescale,
            epoch: epoch, wasRounded: wasRounded
        )
    }

    /// The time with its sign inverted; an infinity of the other sign for infinities.
    public static prefix func - (time: MediaTime) -> MediaTime {
        switch time.kind {
        case .positiveInfinity: return .negativeInfinity
        case .negativeInfinity: return .positiveInfinity
        case .indefinite, .invalid: return time
        case .numeric:
            guard time.value != .min else { return .positiveInfinity }
            var negated = time
            negated.value = -time.value
            return negated
        }
    }

    /// The sum of two times, with `CMTimeAdd`'s rules for timescales, rounding, overflow and
    /// non-numeric operands.
    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        sum(lhs, rhs, subtracting: false)
    }

    /// The difference of two times, with `CMTimeSubtract`'s rules.
    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        sum(lhs, rhs, subtracting: true)
    }

    public static func += (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs + rhs }

    public static func -= (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs - rhs }

    /// The product with an integer, keeping the timescale unless the value overflows
    /// (`CMTimeMultiply`).
    public static func * (time: MediaTime, multiplier: Int32) -> MediaTime {
        time.multiplied(by: multiplier)
    }

    /// The product with an integer (`CMTimeMultiply`).
    public static func * (multiplier: Int32, time: MediaTime) -> MediaTime {
        time.multiplied(by: multiplier)
    }

    /// The product with a floating-point factor (`CMTimeMultiplyByFloat64`).
    public static func * (time: MediaTime, multiplier: Double) -> MediaTime {
        time.multiplied(by: multiplier)
    }

    public static func *= (time: inout MediaTime, multiplier: Int32) { time = time * multiplier }

    public static func *= (time: inout MediaTime, multiplier: Double) { time = time * multiplier }

    /// The sign-adjusted non-numeric result of scaling a non-numeric time, or nil for a numeric one.
    private func scaledNonNumeric(negative: Bool) -> MediaTime? {
        switch kind {
        case .invalid: return .invalid
        case .indefinite: return .indefinite
        case .positiveInfinity: return MediaTime.infinity(negative: negative)
        case .negativeInfinity: return MediaTime.infinity(negative: !negative)
        case .numeric: return nil
        }
    }

    /// The product with an integer (`CMTimeMultiply`): same timescale and epoch, halved timescale
    /// with rounding when the value overflows, an infinity when it overflows at timescale 1.
    public func multiplied(by multiplier: Int32) -> MediaTime {
        if let special = scaledNonNumeric(negative: multiplier < 0) { return special }
        let (product, overflow) = value.multipliedReportingOverflow(by: Int64(multiplier))
        if !overflow, product != .min {
            var result = self
            result.value = product
            return result
        }
        let numerator = WideInteger(value, times: UInt64(multiplier.magnitude))
        return MediaTime.nearest(
            numerator: multiplier < 0 ? numerator.negated : numerator,
            denominator: UInt64(timescale), timescale: timescale, epoch: epoch,
            wasRounded: flags.contains(.hasBeenRounded)
        )
    }

    /// The product with a floating-point factor (`CMTimeMultiplyByFloat64`). The result's timescale
    /// starts at this time's, doubled until it is at least 65536, and is halved while the value
    /// overflows. The product is computed in `Double`; any inexact step marks the result rounded.
    /// A NaN factor, or an infinite one applied to zero, gives an invalid time.
    public func multiplied(by multiplier: Double) -> MediaTime {
        guard !multiplier.isNaN else { return .invalid }
        if let special = scaledNonNumeric(negative: multiplier.sign == .minus) { return special }
        if multiplier.isInfinite {
            guard value != 0 else { return .invalid }
            return MediaTime.infinity(negative: (value < 0) != (multiplier < 0))
        }
        let valueAsDouble = Double(value)
        let product = valueAsDouble * multiplier
        let productIsExact = Int64(exactly: valueAsDouble) == value
            && product.isFinite
            && (-product).addingProduct(valueAsDouble, multiplier) == 0
        var candidateTimescale = Int64(timescale)
        while candidateTimescale < 65536 { candidateTimescale *= 2 }
        while true {
            let scaled = product * Double(candidateTimescale)
            let quotient = scaled / Double(timescale)
            let stepsAreExact = (-scaled).addingProduct(product, Double(candidateTimescale)) == 0
                && (-scaled).addingProduct(quotient, Double(timescale)) == 0
            let rounded = quotient.rounded(.toNearestOrAwayFromZero)
            if rounded.magnitude < 0x1p63 {
                let isInexact = !productIsExact || !stepsAreExact || rounded != quotient
                let wasRounded = isInexact || flags.contains(.hasBeenRounded)
                return MediaTime(
                    value: Int64(rounded), timescale: Int32(candidateTimescale),
                    flags: wasRounded ? [.valid, .hasBeenRounded] : .valid, epoch: epoch
                )
            }
            if candidateTimescale == 1 { return MediaTime.infinity(negative: quotient < 0) }
            candidateTimescale /= 2
        }
    }

    /// The product with `multiplier / divisor` (`CMTimeMultiplyByRatio`). The exact rational result
    /// is kept when it can be: in this time's timescale if possible, else in the reduced
    /// denominator when that is at most `maxTimescale`; otherwise the value is rounded at the
    /// largest timescale (from `maxTimescale`, halving) at which it fits. A zero divisor gives an
    /// infinity of the product's sign, or an invalid time when the product is zero.
    public func multiplied(by multiplier: Int32, dividedBy divisor: Int32) -> MediaTime {
        let negative = (multiplier < 0) != (divisor < 0)
        if let special = scaledNonNumeric(negative: negative) { return special }
        if divisor == 0 {
            guard value != 0, multiplier != 0 else { return .invalid }
            return MediaTime.infinity(negative: (value < 0) != (multiplier < 0))
        }
        let wasRounded = flags.contains(.hasBeenRounded)
        var numerator = WideInteger(value, times: UInt64(multiplier.magnitude))
        if negative { numerator = numerator.negated }
        let divisorMagnitude = UInt64(divisor.magnitude)

        let (sameScale, sameScaleInexact) = numerator.divided(by: divisorMagnitude, rounding: .roundTowardZero)
        if !sameScaleInexact, let newValue = sameScale.int64 {
            var result = self
            result.value = newValue
            return result
        }

        let denominator = UInt64(timescale) * divisorMagnitude
        let common = WideInteger.greatestCommonDivisor(numerator, WideInteger(denominator)).low
        let reducedDenominator = denominator / common
        if reducedDenominator <= UInt64(MediaTime.maxTimescale),
            let reducedValue = numerator.divided(by: common, rounding: .roundTowardZero).quotient.int64
        {
            return MediaTime(
                value: reducedValue, timescale: Int32(reducedDenominator),
                flags: wasRounded ? [.valid, .hasBeenRounded] : .valid, epoch: epoch
            )
        }
        return MediaTime.nearest(
            numerator: numerator, denominator: denominator, timescale: MediaTime.maxTimescale,
            epoch: epoch, wasRounded: wasRounded
        )
    }

    /// The time without its sign (`CMTimeAbsoluteValue`); +infinity for -infinity.
    public var absoluteValue: MediaTime {
        switch kind {
        case .negativeInfinity: return .positiveInfinity
        case .numeric where value < 0: return -self
        default: return self
        }
    }
}

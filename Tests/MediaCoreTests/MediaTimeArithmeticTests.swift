import MediaCore
import PropertyBased
import Testing

/// `numerator / denominator` rounded to an integer by `method`, computed independently of
/// MediaCore in `Int128`, with whether it was inexact. `toLargerScale` decides quickTime's
/// direction.
@available(macOS 15.0, *)
func referenceQuotient(
    _ numerator: Int128, _ denominator: Int128, _ method: MediaTime.RoundingMethod, toLargerScale: Bool = false
) -> (value: Int128, isInexact: Bool) {
    let (quotient, remainder) = numerator.quotientAndRemainder(dividingBy: denominator)
    guard remainder != 0 else { return (quotient, false) }
    let negative = numerator < 0
    let away = negative ? quotient - 1 : quotient + 1
    switch method {
    case .roundHalfAwayFromZero: return (remainder.magnitude * 2 >= denominator.magnitude ? away : quotient, true)
    case .roundTowardZero: return (quotient, true)
    case .roundAwayFromZero: return (away, true)
    case .roundTowardPositiveInfinity: return (negative ? quotient : away, true)
    case .roundTowardNegativeInfinity: return (negative ? away : quotient, true)
    case .quickTime:
        let value = toLargerScale ? away : quotient
        return (negative && value == 0 ? -1 : value, true)
    }
}

@Suite struct MediaTimeRounding {
    /// 7/4 and -7/4 seconds (±3.5 halves) and 1/5 and -1/5 (±0.4 halves) converted to timescale 2.
    @Test(arguments: [
        (MediaTime.RoundingMethod.roundHalfAwayFromZero, Int64(4), Int64(-4), Int64(0), Int64(0)),
        (.roundTowardZero, 3, -3, 0, 0),
        (.roundAwayFromZero, 4, -4, 1, -1),
        (.quickTime, 3, -3, 0, -1),
        (.roundTowardPositiveInfinity, 4, -3, 1, 0),
        (.roundTowardNegativeInfinity, 3, -4, 0, -1),
    ])
    func eachMethodOnPositiveAndNegativeValues(
        method: MediaTime.RoundingMethod, plusSeven: Int64, minusSeven: Int64, plusOne: Int64, minusOne: Int64
    ) {
        expectFields(MediaTime(value: 7, timescale: 4).convertScale(2, rounding: method), value: plusSeven, timescale: 2, rounded: true)
        expectFields(MediaTime(value: -7, timescale: 4).convertScale(2, rounding: method), value: minusSeven, timescale: 2, rounded: true)
        expectFields(MediaTime(value: 1, timescale: 5).convertScale(2, rounding: method), value: plusOne, timescale: 2, rounded: true)
        expectFields(MediaTime(value: -1, timescale: 5).convertScale(2, rounding: method), value: minusOne, timescale: 2, rounded: true)
    }

    @Test func halfRoundsAwayFromZeroByDefault() {
        expectFields(MediaTime(value: 1, timescale: 4).convertScale(2), value: 1, timescale: 2, rounded: true)
        expectFields(MediaTime(value: -1, timescale: 4).convertScale(2), value: -1, timescale: 2, rounded: true)
        expectFields(MediaTime(value: 5, timescale: 4).convertScale(2), value: 3, timescale: 2, rounded: true)
    }

    @Test func quickTimeRoundsAwayWhenGainingPrecision() {
        expectFields(MediaTime(value: 1, timescale: 3).convertScale(10, rounding: .quickTime), value: 4, timescale: 10, rounded: true)
        expectFields(MediaTime(value: -1, timescale: 3).convertScale(10, rounding: .quickTime), value: -4, timescale: 10, rounded: true)
        expectFields(MediaTime(value: 29, timescale: 30).convertScale(25, rounding: .quickTime), value: 24, timescale: 25, rounded: true)
    }

    @Test func exactConversionIsNotMarkedRounded() {
        expectFields(MediaTime(value: 1001, timescale: 30000).convertScale(60000), value: 2002, timescale: 60000)
        expectFields(MediaTime(value: 600, timescale: 600).convertScale(1), value: 1, timescale: 1)
        let alreadyRounded = MediaTime(value: 1, timescale: 3, flags: [.valid, .hasBeenRounded])
        expectFields(alreadyRounded.convertScale(6), value: 2, timescale: 6, rounded: true)
    }

    @Test func conversionKeepsTheEpoch() {
        expectFields(MediaTime(value: 3, timescale: 1, epoch: 9).convertScale(1000), value: 3000, timescale: 1000, epoch: 9)
    }

    @Test func overflowingConversionGivesInfinity() {
        #expect(MediaTime(value: .max, timescale: 1).convertScale(1000).isPositiveInfinity)
        #expect(MediaTime(value: -.max, timescale: 1).convertScale(1000).isNegativeInfinity)
        #expect(MediaTime(value: .max / 2, timescale: 1).convertScale(2).isNumeric)
    }

    @Test func nonNumericTimesPassThroughConversion() {
        #expect(MediaTime.positiveInfinity.convertScale(600).isPositiveInfinity)
        #expect(MediaTime.negativeInfinity.convertScale(600).isNegativeInfinity)
        #expect(MediaTime.indefinite.convertScale(600).isIndefinite)
        #expect(!MediaTime.invalid.convertScale(600).isValid)
        #expect(!MediaTime(value: 1, timescale: 1).convertScale(0).isValid)
    }

    @Test func conversionToAMultipleRoundTripsExactly() async {
        await propertyCheck(input: wideTime, Gen.int32(in: 1...1000)) { time, factor in
            let (finer, overflow) = time.timescale.multipliedReportingOverflow(by: factor)
            guard !overflow else { return }
            let converted = time.convertScale(finer)
            guard converted.isNumeric else {
                #expect(time.value.multipliedReportingOverflow(by: Int64(factor)).overflow, "\(time) * \(factor)")
                return
            }
            #expect(!converted.hasBeenRounded)
            #expect(converted == time)
            let back = converted.convertScale(time.timescale, rounding: .roundTowardZero)
            expectFields(back, value: time.value, timescale: time.timescale)
        }
    }

    @Test func everyMethodMatchesExactReference() async {
        guard #available(macOS 15.0, *) else { return }
        let methods = Gen.int(in: 0...MediaTime.RoundingMethod.allCases.count - 1)
            .map { MediaTime.RoundingMethod.allCases[$0] }
        await propertyCheck(input: wideTime, Gen.int32(in: 1...Int32.max), methods) { time, newTimescale, method in
            let converted = time.convertScale(newTimescale, rounding: method)
            guard newTimescale != time.timescale else {
                expectFields(converted, value: time.value, timescale: time.timescale)
                return
            }
            let (expected, isInexact) = referenceQuotient(
                Int128(time.value) * Int128(newTimescale), Int128(time.timescale), method,
                toLargerScale: newTimescale > time.timescale
            )
            guard let expectedValue = Int64(exactly: expected), expectedValue != .min else {
                #expect(converted.isPositiveInfinity == (time.value > 0), "\(time) -> \(newTimescale)")
                #expect(converted.isNegativeInfinity == (time.value < 0), "\(time) -> \(newTimescale)")
                return
            }
            expectFields(converted, value: expectedValue, timescale: newTimescale, rounded: isInexact)
        }
    }
}

@Suite struct MediaTimeAddition {
    @Test func theGuidesExample() {
        let time1 = MediaTime(value: 200, timescale: 2)
        let time2 = MediaTime(value: 400, timescale: 4)
        var time3 = MediaTime(seconds: 200.0 / 3, preferredTimescale: 3)
        // 200/3 s is 66.666…; times 3 it is 200.0 exactly in Double, so no rounding happened.
        expectFields(time3, value: 200, timescale: 3, rounded: false)
        time3 = time3 * Int32(3)
        #expect(time3 == MediaTime(value: 200, timescale: 1))
        time3 = time3 - time1
        #expect(time2 == time3)
        #expect(time3 == MediaTime(value: 100, timescale: 1))
    }

    @Test func resultUsesTheLeastCommonMultipleTimescale() {
        expectFields(MediaTime(value: 1, timescale: 2) + MediaTime(value: 1, timescale: 3), value: 5, timescale: 6)
        expectFields(MediaTime(value: 1, timescale: 600) + MediaTime(value: 1, timescale: 44100), value: 149, timescale: 88200)
        expectFields(MediaTime(value: 1, timescale: 30) + MediaTime(value: 1, timescale: 30), value: 2, timescale: 30)
        expectFields(MediaTime(value: 1, timescale: 4) - MediaTime(value: 1, timescale: 6), value: 1, timescale: 12)
    }

    @Test func anOversizedCommonMultipleFallsBackToTheMaximumTimescale() {
        let sum = MediaTime(value: 1, timescale: 999_999_937) + MediaTime(value: 1, timescale: 999_999_929)
        expectFields(sum, value: 2, timescale: MediaTime.maxTimescale, rounded: true)
        let sameLargeScale = MediaTime(value: 1, timescale: .max) + MediaTime(value: 1, timescale: .max)
        expectFields(sameLargeScale, value: 2, timescale: .max)
    }

    @Test func roundedOperandsMarkTheResult() {
        let rounded = MediaTime(value: 1, timescale: 3, flags: [.valid, .hasBeenRounded])
        expectFields(rounded + MediaTime(value: 1, timescale: 3), value: 2, timescale: 3, rounded: true)
        expectFields(MediaTime(value: 1, timescale: 2) - rounded, value: 1, timescale: 6, rounded: true)
    }

    @Test func overflowHalvesTheTimescaleThenGivesInfinity() {
        let nearMaximum = MediaTime(value: .max, timescale: 2)
        expectFields(nearMaximum + MediaTime(value: 1, timescale: 2), value: 1 << 62, timescale: 1)
        expectFields(nearMaximum + MediaTime(value: 2, timescale: 2), value: (1 << 62) + 1, timescale: 1, rounded: true)
        #expect((MediaTime(value: .max, timescale: 1) + MediaTime(value: 1, timescale: 1)).isPositiveInfinity)
        #expect((MediaTime(value: -.max, timescale: 1) - MediaTime(value: 5, timescale: 1)).isNegativeInfinity)
    }

    @Test func invalidOperandsGiveInvalid() {
        let one = MediaTime(value: 1, timescale: 1)
        for other in [one, .positiveInfinity, .negativeInfinity, .indefinite, .invalid] {
            #expect(!(MediaTime.invalid + other).isValid)
            #expect(!(other + .invalid).isValid)
            #expect(!(MediaTime.invalid - other).isValid)
            #expect(!(other - .invalid).isValid)
        }
    }

    @Test func infinitiesAndIndefiniteFollowCoreMedia() {
        let one = MediaTime(value: 1, timescale: 1)
        #expect((MediaTime.positiveInfinity + .positiveInfinity).isPositiveInfinity)
        #expect((MediaTime.negativeInfinity + .negativeInfinity).isNegativeInfinity)
        #expect(!(MediaTime.positiveInfinity + .negativeInfinity).isValid)
        #expect(!(MediaTime.negativeInfinity + .positiveInfinity).isValid)
        #expect(!(MediaTime.positiveInfinity - .positiveInfinity).isValid)
        #expect(!(MediaTime.negativeInfinity - .negativeInfinity).isValid)
        #expect((MediaTime.positiveInfinity - .negativeInfinity).isPositiveInfinity)
        #expect((MediaTime.negativeInfinity - .positiveInfinity).isNegativeInfinity)
        #expect((one - .positiveInfinity).isNegativeInfinity)
        #expect((one + .negativeInfinity).isNegativeInfinity)
        #expect((MediaTime.indefinite + .positiveInfinity).isPositiveInfinity)
        #expect((MediaTime.indefinite - .positiveInfinity).isNegativeInfinity)
        #expect((MediaTime.indefinite + one).isIndefinite)
        #expect((one - .indefinite).isIndefinite)
    }

    @Test func epochsFollowCoreMedia() {
        let inEpochOne = MediaTime(value: 5, timescale: 1, epoch: 1)
        let duration = MediaTime(value: 2, timescale: 1)
        expectFields(inEpochOne + duration, value: 7, timescale: 1, epoch: 1)
        expectFields(inEpochOne - duration, value: 3, timescale: 1, epoch: 1)
        expectFields(inEpochOne - MediaTime(value: 1, timescale: 1, epoch: 1), value: 4, timescale: 1)
        expectFields(inEpochOne + MediaTime(value: 1, timescale: 1, epoch: 1), value: 6, timescale: 1)
        #expect(!(inEpochOne + MediaTime(value: 1, timescale: 1, epoch: 2)).isValid)
    }

    @Test func compoundAssignmentAndNegation() {
        var time = MediaTime(value: 1, timescale: 2)
        time += MediaTime(value: 1, timescale: 3)
        expectFields(time, value: 5, timescale: 6)
        time -= MediaTime(value: 1, timescale: 6)
        expectFields(time, value: 4, timescale: 6)
        expectFields(-time, value: -4, timescale: 6)
        #expect((-MediaTime.positiveInfinity).isNegativeInfinity)
        #expect((-MediaTime.indefinite).isIndefinite)
        #expect((-MediaTime(value: .min, timescale: 1)).isPositiveInfinity)
    }

    @Test func additionIsCommutative() async {
        await propertyCheck(input: wideTime, wideTime) { a, b in
            let forward = a + b
            let backward = b + a
            #expect(forward.value == backward.value && forward.timescale == backward.timescale)
            #expect(forward.flags == backward.flags)
        }
    }

    @Test func exactAdditionIsAssociative() async {
        await propertyCheck(input: exactTime, exactTime, exactTime) { a, b, c in
            let left = (a + b) + c
            let right = a + (b + c)
            #expect(left == right)
            #expect(!left.hasBeenRounded && !right.hasBeenRounded)
        }
    }

    @Test func subtractingThenAddingRestoresTheTime() async {
        await propertyCheck(input: exactTime, exactTime) { a, b in
            let restored = a - b + b
            #expect(restored == a)
            #expect(!restored.hasBeenRounded)
            #expect((a - a) == .zero)
        }
    }

    @Test func sumMatchesExactReference() async {
        guard #available(macOS 15.0, *) else { return }
        await propertyCheck(input: wideTime, wideTime) { a, b in
            let sum = a + b
            let numerator = Int128(a.value) * Int128(b.timescale) + Int128(b.value) * Int128(a.timescale)
            let denominator = Int128(a.timescale) * Int128(b.timescale)
            let commonMultiple = denominator / Int128(gcd(Int64(a.timescale), Int64(b.timescale)))
            let preferred: Int32 = a.timescale == b.timescale
                ? a.timescale : (commonMultiple <= Int128(MediaTime.maxTimescale) ? Int32(commonMultiple) : MediaTime.maxTimescale)
            guard sum.isNumeric else {
                #expect((numerator / denominator).magnitude >= UInt128(Int64.max), "\(a) + \(b) = \(sum)")
                return
            }
            if sum.timescale != preferred {
                let atPreferred = referenceQuotient(numerator * Int128(preferred), denominator, .roundHalfAwayFromZero)
                #expect(atPreferred.value.magnitude >= UInt128(Int64.max), "\(a) + \(b) = \(sum)")
            }
            let (expected, isInexact) = referenceQuotient(numerator * Int128(sum.timescale), denominator, .roundHalfAwayFromZero)
            #expect(Int128(sum.value) == expected, "\(a) + \(b) = \(sum)")
            #expect(sum.hasBeenRounded == isInexact, "\(a) + \(b) = \(sum)")
        }
    }
}

func gcd(_ a: Int64, _ b: Int64) -> Int64 {
    var (x, y) = (a.magnitude, b.magnitude)
    while y != 0 { (x, y) = (y, x % y) }
    return Int64(x)
}

@Suite struct MediaTimeMultiplication {
    @Test func integerMultiplicationKeepsTheTimescale() {
        expectFields(MediaTime(value: 1, timescale: 3) * Int32(3), value: 3, timescale: 3)
        expectFields(Int32(-2) * MediaTime(value: 5, timescale: 600, epoch: 1), value: -10, timescale: 600, epoch: 1)
        var time = MediaTime(value: 7, timescale: 30)
        time *= Int32(0)
        expectFields(time, value: 0, timescale: 30)
    }

    @Test func integerMultiplicationOverflow() {
        expectFields(MediaTime(value: .max, timescale: 4) * Int32(2), value: .max, timescale: 2)
        expectFields(MediaTime(value: .max, timescale: 3) * Int32(2), value: 6_148_914_691_236_517_205, timescale: 1, rounded: true)
        #expect((MediaTime(value: .max, timescale: 1) * Int32(2)).isPositiveInfinity)
        #expect((MediaTime(value: .max, timescale: 1) * Int32(-2)).isNegativeInfinity)
    }

    @Test func integerMultiplicationOfNonNumericTimes() {
        #expect((MediaTime.positiveInfinity * Int32(-3)).isNegativeInfinity)
        #expect((MediaTime.negativeInfinity * Int32(-3)).isPositiveInfinity)
        #expect((MediaTime.positiveInfinity * Int32(2)).isPositiveInfinity)
        #expect((MediaTime.indefinite * Int32(2)).isIndefinite)
        #expect(!(MediaTime.invalid * Int32(2)).isValid)
    }

    @Test func floatingPointMultiplicationRaisesTheTimescale() {
        expectFields(MediaTime(value: 1, timescale: 1) * 0.5, value: 32768, timescale: 65536)
        expectFields(MediaTime(value: 600, timescale: 600) * 0.5, value: 38400, timescale: 76800)
        expectFields(MediaTime(value: 3, timescale: 90000) * 2.0, value: 6, timescale: 90000)
        expectFields(MediaTime(value: 1, timescale: 1) * (1.0 / 3), value: 21845, timescale: 65536, rounded: true)
        var time = MediaTime(value: 5, timescale: 100_000)
        time *= -2.0
        expectFields(time, value: -10, timescale: 100_000)
    }

    @Test func floatingPointMultiplicationEdges() {
        #expect((MediaTime(value: .max, timescale: 1) * 4.0).isPositiveInfinity)
        #expect((MediaTime(value: 1, timescale: 1) * -Double.infinity).isNegativeInfinity)
        #expect(!(MediaTime.zero * Double.infinity).isValid)
        #expect(!(MediaTime(value: 1, timescale: 1) * Double.nan).isValid)
        #expect((MediaTime.positiveInfinity * -0.5).isNegativeInfinity)
        #expect((MediaTime.indefinite * 2.0).isIndefinite)
        let large = MediaTime(value: 1 << 60, timescale: 1) * 2.0
        expectFields(large, value: 1 << 62, timescale: 2)
    }

    @Test func ratioMultiplicationKeepsExactValues() {
        expectFields(MediaTime(value: 300, timescale: 600).multiplied(by: 2, dividedBy: 3), value: 200, timescale: 600)
        expectFields(MediaTime(value: 1, timescale: 30).multiplied(by: 1, dividedBy: 2), value: 1, timescale: 60)
        expectFields(MediaTime(value: 1001, timescale: 30000).multiplied(by: -1, dividedBy: 7), value: -143, timescale: 30000)
        expectFields(MediaTime(value: 1, timescale: 1).multiplied(by: 1, dividedBy: -3), value: -1, timescale: 3)
    }

    @Test func ratioMultiplicationRoundsWhenTheExactValueDoesNotFit() {
        let result = MediaTime(value: 1, timescale: 999_999_937).multiplied(by: 1, dividedBy: 3)
        expectFields(result, value: 0, timescale: MediaTime.maxTimescale, rounded: true)
        let big = MediaTime(value: .max, timescale: 1).multiplied(by: 3, dividedBy: 2)
        #expect(big.isPositiveInfinity)
    }

    @Test func ratioMultiplicationByZeroDivisor() {
        #expect(MediaTime(value: 2, timescale: 1).multiplied(by: 3, dividedBy: 0).isPositiveInfinity)
        #expect(MediaTime(value: -2, timescale: 1).multiplied(by: 3, dividedBy: 0).isNegativeInfinity)
        #expect(!MediaTime(value: 0, timescale: 1).multiplied(by: 3, dividedBy: 0).isValid)
        #expect(!MediaTime(value: 2, timescale: 1).multiplied(by: 0, dividedBy: 0).isValid)
        #expect(MediaTime.positiveInfinity.multiplied(by: -1, dividedBy: 2).isNegativeInfinity)
        #expect(MediaTime.indefinite.multiplied(by: 1, dividedBy: 2).isIndefinite)
        #expect(!MediaTime.invalid.multiplied(by: 1, dividedBy: 2).isValid)
    }

    @Test func integerProductMatchesExactReference() async {
        guard #available(macOS 15.0, *) else { return }
        await propertyCheck(input: wideTime, Gen.int32(in: .min ... .max)) { time, multiplier in
            let product = time * multiplier
            let numerator = Int128(time.value) * Int128(multiplier)
            guard product.isNumeric else {
                #expect((numerator / Int128(time.timescale)).magnitude >= UInt128(Int64.max), "\(time) * \(multiplier)")
                return
            }
            let (expected, isInexact) = referenceQuotient(numerator * Int128(product.timescale), Int128(time.timescale), .roundHalfAwayFromZero)
            #expect(Int128(product.value) == expected, "\(time) * \(multiplier) = \(product)")
            #expect(product.hasBeenRounded == isInexact)
            if product.timescale != time.timescale {
                #expect(numerator.magnitude > UInt128(Int64.max) - 1)
            }
        }
    }

    @Test func ratioProductIsExactWhenTheTermsAreSmall() async {
        await propertyCheck(input: exactTime, Gen.int32(in: -1000...1000), Gen.int32(in: 1...1000)) { time, multiplier, divisor in
            let product = time.multiplied(by: multiplier, dividedBy: divisor)
            #expect(!product.hasBeenRounded, "\(time) * \(multiplier) / \(divisor)")
            #expect(product * divisor == time * multiplier, "\(time) * \(multiplier) / \(divisor)")
        }
    }
}

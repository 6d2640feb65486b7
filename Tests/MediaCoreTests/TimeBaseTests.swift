import MediaCore
import PropertyBased
import Testing

/// The one tick↔time converter: exact against `Int128` arithmetic done here, and right on the
/// time bases that the old truncating converter got wrong (a 29.97 fps AVI's 1001/30000).
@Suite struct TimeBaseTests {
    let ntsc = TimeBase(numerator: 1001, denominator: 30000)!

    @Test func aTimeBaseNeedsPositiveTerms() {
        #expect(TimeBase(numerator: 0, denominator: 0) == nil)
        #expect(TimeBase(numerator: 1, denominator: 0) == nil)
        #expect(TimeBase(numerator: -1, denominator: 25) == nil)
        #expect(TimeBase(numerator: 1, denominator: 90000) != nil)
    }

    @Test func tenSecondsOf29_97AreNotCountedAt29TicksPerSecond() {
        // 10 s = 299.7 ticks of 1001/30000 s: frames 0…299 start inside [0, 10 s), as ffmpeg -t 10 keeps 300.
        #expect(ntsc.ticks(of: MediaTime(value: 10, timescale: 1), rounding: .roundTowardPositiveInfinity) == 300)
        #expect(ntsc.ticks(of: MediaTime(value: 10, timescale: 1), rounding: .roundTowardNegativeInfinity) == 299)
        #expect(ntsc.ticks(of: MediaTime(value: 10, timescale: 1)) == 300)
        #expect(ntsc.ticks(of: MediaTime(value: 15, timescale: 1), rounding: .roundTowardPositiveInfinity) == 450)
        #expect(ntsc.time(ofTicks: 300) == MediaTime(value: 300_300, timescale: 30000))
        #expect(ntsc.time(ofTicks: 300).timescale == 30000, "exact in the time base's own denominator")
    }

    @Test func ticksRoundEachWay() {
        let base = TimeBase(numerator: 1, denominator: 4)!
        let threeEighths = MediaTime(value: 3, timescale: 8)   // 1.5 ticks
        #expect(base.ticks(of: threeEighths, rounding: .roundHalfAwayFromZero) == 2)
        #expect(base.ticks(of: threeEighths, rounding: .roundTowardZero) == 1)
        #expect(base.ticks(of: -threeEighths, rounding: .roundTowardNegativeInfinity) == -2)
        #expect(base.ticks(of: -threeEighths, rounding: .roundTowardPositiveInfinity) == -1)
        #expect(base.ticks(of: -threeEighths, rounding: .quickTime) == -2, "quickTime counts as half away from zero")
    }

    @Test func timesThatAreNotNumbersHaveNoTicks() {
        #expect(ntsc.ticks(of: .invalid) == nil)
        #expect(ntsc.ticks(of: .indefinite) == nil)
        #expect(ntsc.ticks(of: .positiveInfinity) == nil)
        #expect(TimeBase(numerator: 1, denominator: 90000)!.ticks(of: MediaTime(value: .max, timescale: 1)) == nil, "beyond 64 bits of ticks")
    }

    @Test func rangeBoundsClampInsteadOfFailing() {
        #expect(ntsc.clampedTicks(of: .positiveInfinity, rounding: .roundTowardPositiveInfinity) == TimeBase.safeTickBound)
        #expect(ntsc.clampedTicks(of: .negativeInfinity, rounding: .roundTowardNegativeInfinity) == -TimeBase.safeTickBound)
        #expect(TimeBase(numerator: 1, denominator: 90000)!.clampedTicks(of: MediaTime(value: -.max, timescale: 1), rounding: .roundTowardZero)
                == -TimeBase.safeTickBound)
        #expect(ntsc.clampedTicks(of: .invalid, rounding: .roundTowardZero) == nil)
    }

    @Test func aTickCountOverflowingTheProductIsStillNearlyExact() {
        let base = TimeBase(numerator: 1001, denominator: 30000)!
        let time = base.time(ofTicks: .max / 2)
        #expect(time.isNumeric)
        #expect(abs(time.seconds - Double(Int64.max / 2) * 1001 / 30000) / time.seconds < 1e-9)
    }

    @Test func ticksMatchExactReference() async {
        guard #available(macOS 15.0, *) else { return }
        let methods = Gen.int(in: 0...MediaTime.RoundingMethod.allCases.count - 1).map { MediaTime.RoundingMethod.allCases[$0] }
        await propertyCheck(input: wideTime, zip(Gen.int32(in: 1...Int32.max), Gen.int32(in: 1...Int32.max)), methods) { time, terms, method in
            let base = TimeBase(numerator: terms.0, denominator: terms.1)!
            let effective = method == .quickTime ? .roundHalfAwayFromZero : method
            let (expected, _) = referenceQuotient(Int128(time.value) * Int128(terms.1), Int128(time.timescale) * Int128(terms.0), effective)
            #expect(base.ticks(of: time, rounding: method) == Int64(exactly: expected).flatMap { $0 == .min ? nil : $0 },
                    "\(time) in \(base)")
        }
    }

    @Test func everyTickRoundTrips() async {
        await propertyCheck(input: Gen.int64(in: -1_000_000_000_000...1_000_000_000_000), zip(Gen.int32(in: 1...100_000), Gen.int32(in: 1...Int32.max))) { ticks, terms in
            let base = TimeBase(numerator: terms.0, denominator: terms.1)!
            let time = base.time(ofTicks: ticks)
            #expect(!time.hasBeenRounded)
            #expect(base.ticks(of: time, rounding: .roundTowardZero) == ticks, "\(ticks) ticks of \(base) = \(time)")
        }
    }
}

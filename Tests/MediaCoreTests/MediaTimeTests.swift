import Foundation
import MediaCore
import PropertyBased
import Testing

/// Expects every field of `time` to be exactly as given; `==` alone would accept 400/4 for 200/2.
func expectFields(
    _ time: MediaTime, value: Int64, timescale: Int32, rounded: Bool = false, epoch: Int64 = 0,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(time.isNumeric, "\(time) is not numeric", sourceLocation: sourceLocation)
    #expect(time.value == value, "\(time)", sourceLocation: sourceLocation)
    #expect(time.timescale == timescale, "\(time)", sourceLocation: sourceLocation)
    #expect(time.hasBeenRounded == rounded, "\(time)", sourceLocation: sourceLocation)
    #expect(time.epoch == epoch, "\(time)", sourceLocation: sourceLocation)
}

@Suite struct MediaTimeConstruction {
    @Test func secondsOfARationalTime() {
        #expect(MediaTime(value: 3, timescale: 2).seconds == 1.5)
        #expect(MediaTime(value: -1, timescale: 4).seconds == -0.25)
        #expect(MediaTime.invalid.seconds.isNaN)
        #expect(MediaTime.indefinite.seconds.isNaN)
        #expect(MediaTime.positiveInfinity.seconds == .infinity)
        #expect(MediaTime.negativeInfinity.seconds == -.infinity)
    }

    @Test func constantsHaveCoreMediaFlags() {
        #expect(MediaTime.zero.isNumeric && MediaTime.zero.value == 0 && MediaTime.zero.timescale == 1)
        #expect(!MediaTime.invalid.isValid && !MediaTime.invalid.isNumeric)
        #expect(MediaTime.indefinite.isValid && MediaTime.indefinite.isIndefinite && !MediaTime.indefinite.isNumeric)
        #expect(MediaTime.positiveInfinity.isPositiveInfinity && !MediaTime.positiveInfinity.isNegativeInfinity)
        #expect(MediaTime.negativeInfinity.isNegativeInfinity && !MediaTime.negativeInfinity.isNumeric)
        #expect(MediaTime.maxTimescale == 1_000_000_000)
    }

    @Test func numericTimeNeedsAPositiveTimescale() {
        #expect(!MediaTime(value: 1, timescale: 0).isValid)
        #expect(!MediaTime(value: 1, timescale: -30).isValid)
        var zeroed = MediaTime(value: 1, timescale: 30)
        zeroed.timescale = 0
        #expect(!zeroed.isValid)
        #expect(zeroed.seconds.isNaN)
    }

    @Test func roundedFlagOnlyCountsForNumericTimes() {
        let roundedInfinity = MediaTime(value: 0, timescale: 0, flags: [.valid, .positiveInfinity, .hasBeenRounded])
        #expect(!roundedInfinity.hasBeenRounded)
        #expect(MediaTime(value: 1, timescale: 3, flags: [.valid, .hasBeenRounded]).hasBeenRounded)
    }

    @Test func secondsAtPreferredTimescale() {
        expectFields(MediaTime(seconds: 1.5, preferredTimescale: 600), value: 900, timescale: 600)
        expectFields(MediaTime(seconds: 0.1, preferredTimescale: 10), value: 1, timescale: 10)
        expectFields(MediaTime(seconds: 1.0 / 3, preferredTimescale: 10), value: 3, timescale: 10, rounded: true)
        expectFields(MediaTime(seconds: 0.25, preferredTimescale: 2), value: 1, timescale: 2, rounded: true)
        expectFields(MediaTime(seconds: -0.25, preferredTimescale: 2), value: -1, timescale: 2, rounded: true)
        expectFields(MediaTime(seconds: -0.2, preferredTimescale: 2), value: 0, timescale: 2, rounded: true)
        expectFields(MediaTime(seconds: 0, preferredTimescale: 90000), value: 0, timescale: 90000)
    }

    @Test func secondsHalveTheTimescaleUntilTheValueFits() {
        expectFields(MediaTime(seconds: 1e16, preferredTimescale: 1000), value: 5_000_000_000_000_000_000, timescale: 500)
        #expect(MediaTime(seconds: 1e300, preferredTimescale: 600).isPositiveInfinity)
        #expect(MediaTime(seconds: -1e300, preferredTimescale: 600).isNegativeInfinity)
    }

    @Test func nonFiniteSecondsAndBadTimescales() {
        #expect(!MediaTime(seconds: .nan, preferredTimescale: 600).isValid)
        #expect(MediaTime(seconds: .infinity, preferredTimescale: 600).isPositiveInfinity)
        #expect(MediaTime(seconds: -.infinity, preferredTimescale: 600).isNegativeInfinity)
        #expect(!MediaTime(seconds: 1, preferredTimescale: 0).isValid)
        #expect(!MediaTime(seconds: 1, preferredTimescale: -600).isValid)
    }

    @Test func secondsRoundTripThroughAnExactTime() async {
        await propertyCheck(input: exactTime) { time in
            let back = MediaTime(seconds: time.seconds, preferredTimescale: time.timescale)
            #expect(back == time)
            #expect(back.timescale == time.timescale)
        }
    }
}

@Suite struct MediaTimeComparison {
    @Test func theGuidesEqualTimesInDifferentTimescales() {
        let time1 = MediaTime(value: 200, timescale: 2)
        let time2 = MediaTime(value: 400, timescale: 4)
        #expect(MediaTime.compare(time1, time2) == 0)
        #expect(time1 == time2)
        #expect(time1.hashValue == time2.hashValue)
        #expect(Set([time1, time2]).count == 1)
    }

    @Test func coreMediaOrderOfNonNumericTimes() {
        let ordered: [MediaTime] = [
            .negativeInfinity, MediaTime(value: -5, timescale: 1), .zero, MediaTime(value: 7, timescale: 3),
            .indefinite, .positiveInfinity, .invalid,
        ]
        for (lowerIndex, lower) in ordered.enumerated() {
            for (upperIndex, upper) in ordered.enumerated() {
                let expected = lowerIndex < upperIndex ? -1 : (lowerIndex == upperIndex ? 0 : 1)
                #expect(MediaTime.compare(lower, upper) == expected, "\(lower) vs \(upper)")
            }
        }
        #expect(ordered.reversed().sorted() == ordered)
    }

    @Test func invalidTimesAreAllEqual() {
        let otherInvalid = MediaTime(value: 12, timescale: 5, flags: [], epoch: 3)
        #expect(otherInvalid == .invalid)
        #expect(otherInvalid.hashValue == MediaTime.invalid.hashValue)
        let otherInfinity = MediaTime(value: 9, timescale: 7, flags: [.valid, .positiveInfinity])
        #expect(otherInfinity == .positiveInfinity)
    }

    @Test func aLaterEpochIsLaterWhateverTheValue() {
        let lateInEpochZero = MediaTime(value: 1_000_000, timescale: 1)
        let startOfEpochOne = MediaTime(value: 0, timescale: 1, epoch: 1)
        #expect(lateInEpochZero < startOfEpochOne)
        #expect(MediaTime(value: 5, timescale: 1, epoch: 1) != MediaTime(value: 5, timescale: 1, epoch: 2))
    }

    @Test func roundedFlagDoesNotAffectEquality() {
        let plain = MediaTime(value: 1, timescale: 3)
        let rounded = MediaTime(value: 1, timescale: 3, flags: [.valid, .hasBeenRounded])
        #expect(plain == rounded)
        #expect(plain.hashValue == rounded.hashValue)
    }

    @Test func extremeValuesCompareWithoutOverflow() {
        let huge = MediaTime(value: .max, timescale: 1)
        let slightlyLess = MediaTime(value: .max, timescale: 2)
        #expect(slightlyLess < huge)
        #expect(MediaTime(value: .min, timescale: 1) < MediaTime(value: .min, timescale: 2))
    }

    @Test func minimumMaximumAndAbsoluteValue() {
        let two = MediaTime(value: 2, timescale: 1)
        let three = MediaTime(value: 6, timescale: 2)
        #expect(min(two, three) == two)
        #expect(max(two, three) == three)
        #expect(min(MediaTime.invalid, two) == two)
        #expect(max(MediaTime.indefinite, .positiveInfinity) == .positiveInfinity)
        expectFields(MediaTime(value: -7, timescale: 3).absoluteValue, value: 7, timescale: 3)
        #expect(MediaTime.negativeInfinity.absoluteValue.isPositiveInfinity)
        #expect(MediaTime.indefinite.absoluteValue.isIndefinite)
        #expect(MediaTime(value: .min, timescale: 1).absoluteValue.isPositiveInfinity)
    }

    @Test func comparisonIsATotalOrder() async {
        await propertyCheck(input: anyTime, anyTime, anyTime) { a, b, c in
            let relations = [a < b, a == b, b < a].filter { $0 }
            #expect(relations.count == 1, "\(a) vs \(b)")
            #expect(MediaTime.compare(a, b) == -MediaTime.compare(b, a))
            if a <= b && b <= c { #expect(a <= c, "\(a) <= \(b) <= \(c)") }
            if a == b { #expect(a.hashValue == b.hashValue) }
        }
    }

    @Test func numericOrderAgreesWithSeconds() async {
        await propertyCheck(input: smallTime, smallTime) { a, b in
            #expect((a < b) == (a.seconds < b.seconds), "\(a) vs \(b)")
            #expect((a == b) == (a.seconds == b.seconds), "\(a) vs \(b)")
        }
    }

    @Test func equalTimesInOtherTimescalesHashAlike() async {
        await propertyCheck(input: exactTime, Gen.int32(in: 1...1000)) { time, factor in
            let rescaled = MediaTime(value: time.value * Int64(factor), timescale: time.timescale * factor)
            #expect(rescaled == time)
            #expect(rescaled.hashValue == time.hashValue)
        }
    }
}

@Suite struct MediaTimeDescriptionAndCoding {
    @Test func descriptionsLikeCoreMedia() {
        #expect(MediaTime(value: 200, timescale: 2).description == "{200/2 = 100.000}")
        #expect(MediaTime(value: 1, timescale: 3).description == "{1/3 = 0.333}")
        #expect(MediaTime(value: 2, timescale: 3).description == "{2/3 = 0.667}")
        #expect(MediaTime(value: -1, timescale: 8).description == "{-1/8 = -0.125}")
        #expect(MediaTime(value: 9999, timescale: 10000).description == "{9999/10000 = 1.000}")
        #expect(MediaTime.invalid.description == "{INVALID}")
        #expect(MediaTime.positiveInfinity.description == "{+INFINITY}")
        #expect(MediaTime.negativeInfinity.description == "{-INFINITY}")
        #expect(MediaTime.indefinite.description == "{INDEFINITE}")
        #expect(MediaTime(value: 3, timescale: 10, flags: [.valid, .hasBeenRounded]).description == "{3/10 = 0.300, rounded}")
        #expect(MediaTime(value: 5, timescale: 1, epoch: 2).description == "{5/1 = 5.000, epoch = 2}")
        #expect(MediaTime(value: .max, timescale: 1).description == "{9223372036854775807/1 = 9223372036854775807.000}")
    }

    @Test func codesWithStableKeys() throws {
        let time = MediaTime(value: 1001, timescale: 30000, flags: [.valid, .hasBeenRounded], epoch: 4)
        let data = try JSONEncoder().encode(time)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["value", "timescale", "flags", "epoch"])
        #expect(object["flags"] as? Int == 3)
        let decoded = try JSONDecoder().decode(MediaTime.self, from: data)
        expectFields(decoded, value: 1001, timescale: 30000, rounded: true, epoch: 4)

        let literal = Data(#"{"value":200,"timescale":2,"flags":1,"epoch":0}"#.utf8)
        expectFields(try JSONDecoder().decode(MediaTime.self, from: literal), value: 200, timescale: 2)
    }

    @Test func specialTimesSurviveCoding() throws {
        for time in specialTimes {
            let decoded = try JSONDecoder().decode(MediaTime.self, from: JSONEncoder().encode(time))
            #expect(decoded == time)
            #expect(decoded.flags == time.flags)
        }
    }
}

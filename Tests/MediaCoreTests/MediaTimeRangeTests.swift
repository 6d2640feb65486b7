import Foundation
import MediaCore
import PropertyBased
import Testing

private func seconds(_ value: Int64, _ timescale: Int32 = 1) -> MediaTime {
    MediaTime(value: value, timescale: timescale)
}

private let smallTimescales: [Int32] = [1, 2, 3, 24, 25, 30, 600]

/// Times near zero in small timescales, so that random ranges and times overlap often.
private let nearTime = zip(Gen.int64(in: -3000...3000), Gen.int(in: 0...smallTimescales.count - 1))
    .map { value, index in MediaTime(value: value, timescale: smallTimescales[index]) }

/// Nonempty ranges near zero.
private let nearRange = zip(nearTime, Gen.int64(in: 1...3000), Gen.int(in: 0...smallTimescales.count - 1))
    .map { input in
        let (start, length, index) = input
        return MediaTimeRange(start: start, duration: MediaTime(value: length, timescale: smallTimescales[index]))
    }

@Suite struct MediaTimeRangeBasics {
    @Test func aRangeDoesNotContainItsEnd() {
        let range = MediaTimeRange(start: seconds(1), duration: seconds(3))
        #expect(!range.contains(range.end))
        #expect(!range.containsTime(range.end))
        #expect(range.contains(range.start))
        #expect(range.contains(seconds(7, 2)))
        #expect(!range.contains(seconds(1, 2)))
        #expect(!range.contains(MediaTime(value: 2, timescale: 1, epoch: 1)))
        #expect(!range.contains(MediaTime.invalid))
    }

    @Test func startAndEnd() {
        let range = MediaTimeRange(start: seconds(1), end: seconds(9, 2))
        expectFields(range.duration, value: 7, timescale: 2)
        expectFields(range.end, value: 9, timescale: 2)
        let inEpoch = MediaTimeRange(start: MediaTime(value: 5, timescale: 1, epoch: 3), duration: seconds(2))
        expectFields(inEpoch.end, value: 7, timescale: 1, epoch: 3)
        #expect(!MediaTimeRange(start: seconds(4), end: seconds(2)).isValid)
        #expect(!MediaTimeRange.invalid.end.isValid)
    }

    @Test func validityFollowsCoreMedia() {
        #expect(MediaTimeRange.zero.isValid && MediaTimeRange.zero.isEmpty)
        #expect(!MediaTimeRange.invalid.isValid && !MediaTimeRange.invalid.isEmpty)
        #expect(!MediaTimeRange(start: seconds(0), duration: seconds(-1)).isValid)
        #expect(!MediaTimeRange(start: seconds(0), duration: MediaTime(value: 1, timescale: 1, epoch: 1)).isValid)
        #expect(!MediaTimeRange(start: .invalid, duration: seconds(1)).isValid)
        #expect(!MediaTimeRange(start: seconds(0), duration: .negativeInfinity).isValid)
        #expect(MediaTimeRange(start: MediaTime(value: 0, timescale: 1, epoch: 2), duration: seconds(1)).isValid)
        #expect(MediaTimeRange(start: seconds(3), duration: MediaTime(value: 0, timescale: 600)).isEmpty)
    }

    @Test func indefiniteAndInfiniteRanges() {
        let live = MediaTimeRange(start: seconds(0), duration: .indefinite)
        #expect(live.isValid && live.isIndefinite && !live.isEmpty)
        #expect(live.contains(seconds(1_000_000)))
        let forever = MediaTimeRange(start: seconds(0), duration: .positiveInfinity)
        #expect(forever.end.isPositiveInfinity)
        #expect(forever.contains(seconds(.max)))
        #expect(!forever.isIndefinite)
    }

    @Test func unionAndIntersectionKnownAnswers() {
        let range = MediaTimeRange(start: seconds(2), duration: seconds(4))
        let disjoint = MediaTimeRange(start: seconds(8), duration: seconds(1))
        let union = range.union(disjoint)
        expectFields(union.start, value: 2, timescale: 1)
        expectFields(union.end, value: 9, timescale: 1)
        let none = range.intersection(disjoint)
        expectFields(none.start, value: 0, timescale: 1)
        expectFields(none.duration, value: 0, timescale: 1)
        let touching = MediaTimeRange(start: seconds(6), duration: seconds(1))
        #expect(range.intersection(touching) == .zero)
        expectFields(range.intersection(touching).start, value: 0, timescale: 1)
        let overlap = range.intersection(MediaTimeRange(start: seconds(9, 2), duration: seconds(10)))
        expectFields(overlap.start, value: 9, timescale: 2)
        #expect(overlap.end == seconds(6))
        let otherEpoch = MediaTimeRange(start: MediaTime(value: 2, timescale: 1, epoch: 1), duration: seconds(1))
        #expect(!range.union(otherEpoch).isValid)
        #expect(!range.intersection(otherEpoch).isValid)
        #expect(!range.union(.invalid).isValid)
    }

    @Test func containsRange() {
        let range = MediaTimeRange(start: seconds(2), duration: seconds(4))
        #expect(range.contains(MediaTimeRange(start: seconds(3), duration: seconds(3))))
        #expect(range.contains(range))
        #expect(!range.contains(MediaTimeRange(start: seconds(3), duration: seconds(4))))
        #expect(!range.contains(MediaTimeRange(start: seconds(1), duration: seconds(1))))
        #expect(!range.contains(MediaTimeRange.invalid))
    }

    @Test func clampKnownAnswers() {
        let range = MediaTimeRange(start: seconds(2), duration: seconds(4))
        expectFields(range.clamp(seconds(7)), value: 6, timescale: 1)
        expectFields(range.clamp(seconds(1)), value: 2, timescale: 1)
        expectFields(range.clamp(seconds(7, 2)), value: 7, timescale: 2)
        #expect(range.clamp(.positiveInfinity) == seconds(6))
        #expect(!range.clamp(.invalid).isValid)
        #expect(!MediaTimeRange(start: seconds(2), duration: .zero).clamp(seconds(2)).isValid)
    }

    @Test func foldKnownAnswers() {
        let range = MediaTimeRange(start: seconds(2), duration: seconds(4))
        expectFields(seconds(7).fold(into: range), value: 3, timescale: 1)
        expectFields(seconds(6).fold(into: range), value: 2, timescale: 1)
        expectFields(seconds(1).fold(into: range), value: 5, timescale: 1)
        expectFields(seconds(-3).fold(into: range), value: 5, timescale: 1)
        expectFields(seconds(7, 2).fold(into: range), value: 7, timescale: 2)
        #expect(seconds(15, 2).fold(into: range) == seconds(7, 2))
        let thirds = MediaTimeRange(start: seconds(0), duration: seconds(1, 3))
        #expect(seconds(1, 2).fold(into: thirds) == seconds(1, 6))
        #expect(!MediaTime.positiveInfinity.fold(into: range).isValid)
        #expect(!seconds(3).fold(into: MediaTimeRange(start: seconds(2), duration: .zero)).isValid)
        #expect(!MediaTime(value: 3, timescale: 1, epoch: 1).fold(into: range).isValid)
    }

    @Test func descriptionAndCoding() throws {
        let range = MediaTimeRange(start: .zero, duration: seconds(600, 600))
        #expect(range.description == "{{0/1 = 0.000}, {600/600 = 1.000}}")
        let decoded = try JSONDecoder().decode(MediaTimeRange.self, from: JSONEncoder().encode(range))
        #expect(decoded == range)
        expectFields(decoded.duration, value: 600, timescale: 600)
    }

    @Test func equalityComparesTimesNotFields() {
        let range = MediaTimeRange(start: seconds(1), duration: seconds(2))
        let sameInOtherScale = MediaTimeRange(start: seconds(600, 600), duration: seconds(4, 2))
        #expect(range == sameInOtherScale)
        #expect(range.hashValue == sameInOtherScale.hashValue)
    }
}

@Suite struct MediaTimeRangeLaws {
    @Test func unionContainsBothRanges() async {
        await propertyCheck(input: nearRange, nearRange, nearTime) { a, b, time in
            let union = a.union(b)
            #expect(union.contains(a) && union.contains(b), "\(a) ∪ \(b) = \(union)")
            for probe in [time, a.start, b.start, a.end, b.end] where a.contains(probe) || b.contains(probe) {
                #expect(union.contains(probe), "\(probe) in \(a) ∪ \(b) = \(union)")
            }
        }
    }

    @Test func intersectionHoldsExactlyTheSharedTimes() async {
        await propertyCheck(input: nearRange, nearRange, nearTime) { a, b, time in
            let intersection = a.intersection(b)
            #expect(intersection.isValid)
            for probe in [time, a.start, b.start, a.end, b.end, a.start - MediaTime(value: 1, timescale: 600)] {
                #expect(intersection.contains(probe) == (a.contains(probe) && b.contains(probe)), "\(probe) in \(a) ∩ \(b)")
            }
            if !intersection.isEmpty {
                #expect(a.contains(intersection) && b.contains(intersection), "\(a) ∩ \(b) = \(intersection)")
            }
            #expect(intersection == b.intersection(a))
        }
    }

    @Test func aRangeHoldsItsStartButNotItsEnd() async {
        await propertyCheck(input: nearRange) { range in
            #expect(range.contains(range.start))
            #expect(!range.contains(range.end))
        }
    }

    @Test func clampLandsInTheClosedRange() async {
        await propertyCheck(input: nearRange, nearTime) { range, time in
            let clamped = range.clamp(time)
            #expect(clamped >= range.start && clamped <= range.end)
            if range.contains(time) { #expect(clamped == time) }
        }
    }

    @Test func foldingLandsInTheRangeAndIgnoresWholeDurations() async {
        await propertyCheck(input: nearRange, nearTime, Gen.int32(in: -5...5)) { range, time, loops in
            let folded = time.fold(into: range)
            #expect(range.contains(folded), "\(time) folded into \(range) = \(folded)")
            #expect(!folded.hasBeenRounded)
            #expect(folded.fold(into: range) == folded)
            #expect((time + range.duration * loops).fold(into: range) == folded)
        }
    }

    @Test func mappingATimeThereAndBackRestoresIt() async {
        await propertyCheck(input: nearRange, nearRange, nearTime) { source, target, time in
            let mapped = MediaTimeRange.mapTime(time, from: source, to: target)
            // A scale like (1/600 s) / (2799.29 s) has no exact 64-bit timescale: the result is
            // then rounded and says so. Exact results must come back exactly.
            let back = MediaTimeRange.mapTime(mapped, from: target, to: source)
            if !mapped.hasBeenRounded && !back.hasBeenRounded {
                #expect(back == time, "\(time) -> \(mapped) -> \(back)")
            } else {
                #expect(abs((back - time).seconds) < 1e-6 * max(1, abs(source.duration.seconds) / max(abs(target.duration.seconds), 1e-9)),
                        "\(time) -> \(mapped) -> \(back)")
            }
            #expect(MediaTimeRange.mapTime(source.start, from: source, to: target) == target.start)
            #expect(MediaTimeRange.mapTime(source.end, from: source, to: target) == target.end)
            if source.contains(time) { #expect(target.contains(mapped)) }
        }
    }
}

@Suite struct MediaTimeRangeMapping {
    private let source = MediaTimeRange(start: seconds(2), duration: seconds(4))
    private let target = MediaTimeRange(start: seconds(10), duration: seconds(8))

    @Test func mapsLinearly() {
        expectFields(MediaTimeRange.mapTime(seconds(3), from: source, to: target), value: 12, timescale: 1)
        expectFields(MediaTimeRange.mapTime(seconds(0), from: source, to: target), value: 6, timescale: 1)
        expectFields(MediaTimeRange.mapDuration(seconds(1), from: source, to: target), value: 2, timescale: 1)
        let slower = MediaTimeRange(start: seconds(0), duration: seconds(3))
        expectFields(MediaTimeRange.mapDuration(seconds(1), from: slower, to: source), value: 4, timescale: 3)
    }

    @Test func endsMapToEnds() {
        let thirds = MediaTimeRange(start: seconds(0), duration: seconds(1, 3))
        let odd = MediaTimeRange(start: seconds(7, 600), duration: seconds(1001, 30000))
        #expect(MediaTimeRange.mapTime(thirds.end, from: thirds, to: odd) == odd.end)
        #expect(MediaTimeRange.mapTime(thirds.start, from: thirds, to: odd) == odd.start)
    }

    @Test func infiniteRangesOffsetWithoutScaling() {
        let from = MediaTimeRange(start: seconds(0), duration: .positiveInfinity)
        let to = MediaTimeRange(start: seconds(10), duration: .positiveInfinity)
        expectFields(MediaTimeRange.mapTime(seconds(5), from: from, to: to), value: 15, timescale: 1)
    }

    @Test func invalidInputsMapToInvalid() {
        let empty = MediaTimeRange(start: seconds(2), duration: .zero)
        #expect(!MediaTimeRange.mapTime(seconds(3), from: empty, to: target).isValid)
        #expect(!MediaTimeRange.mapTime(seconds(3), from: source, to: empty).isValid)
        #expect(!MediaTimeRange.mapTime(MediaTime(value: 3, timescale: 1, epoch: 1), from: source, to: target).isValid)
        #expect(!MediaTimeRange.mapTime(.invalid, from: source, to: target).isValid)
        #expect(!MediaTimeRange.mapDuration(MediaTime(value: 1, timescale: 1, epoch: 1), from: source, to: target).isValid)
        #expect(!MediaTimeRange.mapDuration(seconds(1), from: empty, to: target).isValid)
    }

    @Test func ratiosBeyondInt32AreAppliedInDouble() {
        let long = MediaTimeRange(start: .zero, duration: seconds(3_000_000_019))
        let short = MediaTimeRange(start: .zero, duration: seconds(1))
        let mapped = MediaTimeRange.mapDuration(seconds(3_000_000_019), from: long, to: short)
        #expect(abs(mapped.seconds - 1) < 1e-9)
    }
}

@Suite struct MediaTimeMappingTests {
    private let source = MediaTimeRange(start: seconds(2), duration: seconds(4))
    private let target = MediaTimeRange(start: seconds(10), duration: seconds(8))

    @Test func aMappingOfTwoRanges() {
        let mapping = MediaTimeMapping(source: source, target: target)
        #expect(mapping.isValid && !mapping.isEmpty)
        #expect(mapping.source == source && mapping.target == target)
        #expect(mapping.description == "{source = \(source), target = \(target)}")
    }

    @Test func anEmptyEditHasNoSourceStart() {
        let edit = MediaTimeMapping.empty(target: target)
        #expect(edit.isValid && edit.isEmpty)
        #expect(!edit.source.start.isValid)
        #expect(edit.target == target)
        #expect(!MediaTimeMapping.empty(target: .invalid).isEmpty)
    }

    @Test func invalidMappings() {
        #expect(!MediaTimeMapping.invalid.isValid && !MediaTimeMapping.invalid.isEmpty)
        let durationInEpoch = MediaTimeRange(start: seconds(0), duration: MediaTime(value: 1, timescale: 1, epoch: 1))
        #expect(!MediaTimeMapping(source: durationInEpoch, target: target).isValid)
        #expect(MediaTimeMapping(source: durationInEpoch, target: target) == .invalid)
    }

    @Test func codingRoundTrip() throws {
        for mapping in [MediaTimeMapping(source: source, target: target), .empty(target: target), .invalid] {
            let decoded = try JSONDecoder().decode(MediaTimeMapping.self, from: JSONEncoder().encode(mapping))
            #expect(decoded == mapping)
            #expect(decoded.isEmpty == mapping.isEmpty)
        }
    }
}

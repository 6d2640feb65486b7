import Foundation

/// One segment of a composition track (`AVCompositionTrackSegment`): a stretch of a source
/// file's track mapped onto the composition's timeline, or an empty stretch (nothing plays).
/// When the source and target durations differ, the source plays faster or slower.
public struct CompositionTrackSegment: Sendable, Hashable, CustomStringConvertible {
    /// The file the media comes from; nil for an empty segment.
    public var sourceURL: URL?
    /// The track of `sourceURL` the media comes from (its `AssetTrack.trackID`); 0 when empty.
    public var sourceTrackID: Int
    /// Where the media sits in the source track (`source`) and on the composition track (`target`).
    public var timeMapping: MediaTimeMapping
    /// The inspected source track, which the reader opens (kept out of equality: the URL and
    /// track ID name it).
    let sourceTrack: AssetTrack?

    /// A segment playing `sourceRange` of `track` (from `url`) over `targetRange`.
    init(url: URL, track: AssetTrack, sourceRange: MediaTimeRange, targetRange: MediaTimeRange) {
        sourceURL = url
        sourceTrackID = track.trackID
        timeMapping = MediaTimeMapping(source: sourceRange, target: targetRange)
        sourceTrack = track
    }

    /// An empty segment over `timeRange` (`AVCompositionTrackSegment(timeRange:)`).
    public init(emptyTimeRange timeRange: MediaTimeRange) {
        sourceURL = nil
        sourceTrackID = 0
        timeMapping = .empty(target: timeRange)
        sourceTrack = nil
    }

    /// Nothing plays during this segment.
    public var isEmpty: Bool { sourceURL == nil || !timeMapping.source.start.isNumeric }

    /// The segment's stretch of the composition track.
    public var targetRange: MediaTimeRange { timeMapping.target }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.sourceURL == rhs.sourceURL && lhs.sourceTrackID == rhs.sourceTrackID && lhs.timeMapping == rhs.timeMapping
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(sourceURL)
        hasher.combine(sourceTrackID)
        hasher.combine(timeMapping)
    }

    public var description: String {
        isEmpty ? "empty \(timeMapping.target)" : "\(sourceURL?.lastPathComponent ?? "?")#\(sourceTrackID) \(timeMapping)"
    }

    /// The segment with its target moved by `offset` (the source unchanged).
    func shifted(by offset: MediaTime) -> Self {
        var moved = self
        moved.timeMapping.target.start = timeMapping.target.start + offset
        return moved
    }

    /// The part of the segment over `target` (which lies within it): the source part is the
    /// one that maps there, so cutting never changes what plays when.
    func restricted(to target: MediaTimeRange) -> Self {
        var part = self
        if isEmpty {
            part.timeMapping = .empty(target: target)
            return part
        }
        let source = timeMapping.source
        let start = MediaTimeRange.mapTime(target.start, from: timeMapping.target, to: source)
        let end = MediaTimeRange.mapTime(target.end, from: timeMapping.target, to: source)
        part.timeMapping = MediaTimeMapping(source: MediaTimeRange(start: start, end: end), target: target)
        return part
    }
}

/// Why a list of composition track segments is not a valid track timeline
/// (`validateTrackSegments:error:`).
public enum CompositionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A segment's target or source range is invalid, empty or not numeric.
    case invalidTimeRange(segment: Int)
    /// The segments leave nothing playing between two times.
    case gap(segment: Int, from: MediaTime, to: MediaTime)
    /// A segment starts before the previous one ends.
    case overlap(segment: Int, at: MediaTime)
    /// The first segment does not start at zero.
    case doesNotStartAtZero(start: MediaTime)
    /// An edit's time range is invalid, negative or not numeric.
    case invalidEditRange(MediaTimeRange)
    /// The source track has no media in the range asked for.
    case noSourceMedia(track: Int, range: MediaTimeRange)
    /// The track's media type cannot go into this composition track.
    case incompatibleTrack(expected: MediaType, got: MediaType)

    public var description: String {
        switch self {
        case .invalidTimeRange(let i): "segment \(i) has an invalid, empty or non-numeric time range"
        case .gap(let i, let from, let to):
            "segment \(i) leaves a gap from \(from.seconds) s to \(to.seconds) s (insert an empty segment there)"
        case .overlap(let i, let at): "segment \(i) starts at \(at.seconds) s, before the previous segment ends"
        case .doesNotStartAtZero(let start): "the first segment starts at \(start.seconds) s instead of 0"
        case .invalidEditRange(let range): "the edit's time range \(range) is invalid, negative or not numeric"
        case .noSourceMedia(let track, let range): "track \(track) has no media in \(range.start.seconds)–\(range.end.seconds) s"
        case .incompatibleTrack(let expected, let got): "a \(got) track cannot be inserted into a \(expected) composition track"
        }
    }
}

/// The edit operations of a composition track, as pure functions of its segment list: each
/// cuts segments at the edit's boundaries and moves what follows, never changing what plays
/// at a time the edit does not touch.
enum SegmentEditor {
    /// Where the track ends: the end of its last segment (zero when it has none).
    static func end(_ segments: [CompositionTrackSegment]) -> MediaTime {
        segments.last?.targetRange.end ?? .zero
    }

    /// The list with a cut at `time`, so that no segment spans it.
    static func split(_ segments: [CompositionTrackSegment], at time: MediaTime) -> [CompositionTrackSegment] {
        guard let i = segments.firstIndex(where: { $0.targetRange.start < time && time < $0.targetRange.end }) else { return segments }
        var result = segments
        let target = segments[i].targetRange
        result.replaceSubrange(i...i, with: [
            segments[i].restricted(to: MediaTimeRange(start: target.start, end: time)),
            segments[i].restricted(to: MediaTimeRange(start: time, end: target.end)),
        ])
        return result
    }

    /// `inserted` (which starts at zero) placed at `time`, moving what was there and after it
    /// later by `inserted`'s length. Past the end, an empty segment fills the gap first.
    static func insert(_ inserted: [CompositionTrackSegment], at time: MediaTime,
                       into segments: [CompositionTrackSegment]) -> [CompositionTrackSegment] {
        let length = end(inserted)
        guard length > .zero else { return segments }
        var result = split(segments, at: time)
        let trackEnd = end(result)
        if time > trackEnd {
            result.append(CompositionTrackSegment(emptyTimeRange: MediaTimeRange(start: trackEnd, end: time)))
        }
        let index = result.firstIndex { $0.targetRange.start >= time } ?? result.count
        for i in index..<result.count { result[i] = result[i].shifted(by: length) }
        result.insert(contentsOf: inserted.map { $0.shifted(by: time) }, at: index)
        return coalescingEmpties(result)
    }

    /// The list without `range`: what follows moves earlier by its duration.
    static func remove(_ range: MediaTimeRange, from segments: [CompositionTrackSegment]) -> [CompositionTrackSegment] {
        let cut = split(split(segments, at: range.start), at: range.end)
        var result: [CompositionTrackSegment] = []
        for segment in cut {
            let target = segment.targetRange
            if target.start >= range.start && target.end <= range.end { continue }
            result.append(target.start >= range.end ? segment.shifted(by: .zero - range.duration) : segment)
        }
        return coalescingEmpties(result)
    }

    /// The list with `range` stretched or squeezed to `duration`: the media in it plays at
    /// `range.duration / duration` speed, and what follows moves by the difference.
    static func scale(_ range: MediaTimeRange, to duration: MediaTime,
                      in segments: [CompositionTrackSegment]) -> [CompositionTrackSegment] {
        let scaled = MediaTimeRange(start: range.start, duration: duration)
        let cut = split(split(segments, at: range.start), at: range.end)
        return cut.map { segment in
            let target = segment.targetRange
            if target.end <= range.start { return segment }
            if target.start >= range.end { return segment.shifted(by: duration - range.duration) }
            var stretched = segment
            let start = MediaTimeRange.mapTime(target.start, from: range, to: scaled)
            let end = MediaTimeRange.mapTime(target.end, from: range, to: scaled)
            stretched.timeMapping.target = MediaTimeRange(start: start, end: end)
            return stretched
        }
    }

    /// Neighbouring empty segments merged into one.
    static func coalescingEmpties(_ segments: [CompositionTrackSegment]) -> [CompositionTrackSegment] {
        var result: [CompositionTrackSegment] = []
        for segment in segments where segment.targetRange.duration > .zero {
            if segment.isEmpty, let last = result.last, last.isEmpty {
                result[result.count - 1] = CompositionTrackSegment(emptyTimeRange: MediaTimeRange(start: last.targetRange.start, end: segment.targetRange.end))
            } else {
                result.append(segment)
            }
        }
        return result
    }

    /// Checks that the segments tile the track from zero, in order, with valid ranges.
    static func validate(_ segments: [CompositionTrackSegment]) throws(CompositionError) {
        var previousEnd = MediaTime.zero
        for (i, segment) in segments.enumerated() {
            let target = segment.targetRange
            guard target.isValid, target.start.isNumeric, target.duration.isNumeric, target.duration > .zero else {
                throw .invalidTimeRange(segment: i)
            }
            if !segment.isEmpty {
                let source = segment.timeMapping.source
                guard source.isValid, source.duration.isNumeric, source.duration > .zero else { throw .invalidTimeRange(segment: i) }
            }
            if i == 0 && target.start != .zero { throw .doesNotStartAtZero(start: target.start) }
            if target.start < previousEnd { throw .overlap(segment: i, at: target.start) }
            if target.start > previousEnd { throw .gap(segment: i, from: previousEnd, to: target.start) }
            previousEnd = target.end
        }
    }

    /// Checks that an edit's range is numeric with a start at or after zero and no negative duration.
    static func checkEditRange(_ range: MediaTimeRange) throws(CompositionError) {
        guard range.isValid, range.start.isNumeric, range.duration.isNumeric, range.start >= .zero, range.duration >= .zero else {
            throw .invalidEditRange(range)
        }
    }
}

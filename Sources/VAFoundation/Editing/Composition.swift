import Foundation

/// One track of a composition (`AVCompositionTrack`): its segments, each a stretch of a source
/// file's track or an empty stretch, tiling the track's timeline from zero.
public struct CompositionTrack: Sendable, Hashable {
    public let trackID: Int
    public let mediaType: MediaType
    public internal(set) var segments: [CompositionTrackSegment] = []
    /// The transform a player applies when showing the track (default: identity).
    public var preferredTransform: VideoTransform = .identity
    /// The volume a player applies to the track (default 1).
    public var preferredVolume: Float = 1
    /// The timescale of the track's media; 0 lets the writer choose.
    public var naturalTimeScale: Int32 = 0
    /// ISO 639-2/T language code; nil when undetermined.
    public var languageCode: String?
    public var isEnabled = true

    init(trackID: Int, mediaType: MediaType) {
        self.trackID = trackID
        self.mediaType = mediaType
    }

    /// From zero to the end of the last segment.
    public var timeRange: MediaTimeRange { MediaTimeRange(start: .zero, end: SegmentEditor.end(segments)) }

    /// The segment playing at `time` on the track (`segmentForTrackTime:`); nil outside it.
    public func segment(forTrackTime time: MediaTime) -> CompositionTrackSegment? {
        segments.first { $0.targetRange.start <= time && time < $0.targetRange.end }
    }

    /// The tracks the segments come from, in order of first use (without empty segments).
    var sourceTracks: [AssetTrack] {
        var seen = Set<ObjectIdentifier>()
        return segments.compactMap(\.sourceTrack).filter { seen.insert(ObjectIdentifier($0)).inserted }
    }

    /// The stored picture size of the first source (zero for audio or an empty track).
    public var naturalSize: Size { sourceTracks.first { $0.mediaType == .video }?.naturalSize ?? .zero }
}

/// An asset made of pieces of other assets (`AVComposition`): tracks whose segments map
/// stretches of source files onto one timeline. It can go wherever an asset can: to an
/// `AssetReader`, an `ExportSession` or an `AssetImageGenerator`.
///
/// `Composition` is immutable; `MutableComposition` edits. Both are safe to share between
/// tasks: a reader or an export takes a snapshot when it starts.
// @unchecked: open to `MutableComposition`; every piece of state is behind `store`'s mutex.
public class Composition: Asset, @unchecked Sendable {
    struct State {
        var tracks: [CompositionTrack] = []
        var naturalSize: Size = .zero
    }

    let store: Locked<State>

    init(state: State) {
        store = Locked(state)
        super.init(describedBy: URL(string: "composition:")!)
    }

    /// The tracks, in the order they were added.
    public var tracks: [CompositionTrack] { store.withLock { $0.tracks } }

    /// The end of the longest track.
    public var duration: MediaTime { tracks.map(\.timeRange.end).max() ?? .zero }

    /// The size the composition is meant to be shown at: as set, else its first video
    /// track's picture size after that track's transform.
    public var naturalSize: Size {
        let (set, tracks) = store.withLock { ($0.naturalSize, $0.tracks) }
        if set != .zero { return set }
        guard let video = tracks.first(where: { $0.mediaType == .video && !$0.sourceTracks.isEmpty }) else { return .zero }
        return video.naturalSize.applying(video.preferredTransform)
    }

    public func track(withTrackID trackID: Int) -> CompositionTrack? { tracks.first { $0.trackID == trackID } }

    public func tracks(withMediaType mediaType: MediaType) -> [CompositionTrack] { tracks.filter { $0.mediaType == mediaType } }

    /// An immutable copy of the composition as it is now (`copy`).
    public func copy() -> Composition { Composition(state: store.withLock { $0 }) }

    /// An editable copy (`mutableCopy`).
    public func mutableCopy() -> MutableComposition { MutableComposition(state: store.withLock { $0 }) }

    /// The composition seen as an inspected asset: one `AssetTrack` per composition track,
    /// with the format of its first source and the timing of all of them.
    override func inspection() async throws -> AssetInspection {
        let (tracks, duration) = (self.tracks, self.duration)
        return AssetInspection(containerFormat: ContainerFormat(name: "composition", longName: "VAFoundation composition"),
                               duration: duration, fileSize: 0, bitRate: 0,
                               tracks: tracks.compactMap { Self.assetTrack(for: $0, size: naturalSize) },
                               metadata: [], chapters: [], warnings: [])
    }

    /// An asset track standing for `track`; nil for a track with no media at all.
    static func assetTrack(for track: CompositionTrack, size: Size) -> AssetTrack? {
        let sources = track.sourceTracks
        guard let first = sources.first else { return nil }
        var format = first.formatDescription
        if track.mediaType == .video, size != .zero {
            // The composition's own size, as stored (before the track's transform).
            let stored = size.applying(track.preferredTransform)
            format.video?.width = Int(stored.width.rounded())
            format.video?.height = Int(stored.height.rounded())
        }
        let video = sources.filter { $0.mediaType == .video }
        let frameRate = video.map(\.nominalFrameRate).max() ?? 0
        let minFrame = video.map(\.minFrameDuration).filter(\.isNumeric).min() ?? .invalid
        let rates = Set(video.map(\.nominalFrameRate))
        let duration = track.timeRange.duration
        let bytes = sources.reduce(Int64(0)) { $0 + $1.totalSampleDataLength }
        let mapping = track.segments.map { AssetTrackSegment(timeMapping: $0.timeMapping) }
        return AssetTrack(
            trackID: track.trackID, streamIndex: -1, mediaType: track.mediaType, formatDescription: format,
            timeRange: track.timeRange, naturalTimeScale: track.naturalTimeScale > 0 ? track.naturalTimeScale : first.naturalTimeScale,
            naturalSize: track.mediaType == .video ? (size != .zero ? size.applying(track.preferredTransform) : first.naturalSize) : .zero,
            preferredTransform: track.preferredTransform, nominalFrameRate: frameRate, minFrameDuration: minFrame,
            isVariableFrameRate: rates.count > 1 || video.contains(where: \.isVariableFrameRate),
            estimatedDataRate: sources.map(\.estimatedDataRate).max() ?? 0, totalSampleDataLength: bytes,
            sampleCount: max(1, sources.reduce(0) { $0 + Int(Double($1.sampleCount) * min(1, duration.seconds / max($1.timeRange.duration.seconds, 0.001))) }),
            languageCode: track.languageCode, isEnabled: track.isEnabled,
            requiresFrameReordering: sources.contains(where: \.requiresFrameReordering), isAttachedPicture: false,
            segments: mapping, metadata: [], compositionTrack: track)
    }
}

/// A composition being edited (`AVMutableComposition`): add tracks, insert, remove and scale
/// time ranges on every track at once or on one track through its `MutableCompositionTrack`.
///
/// ```swift
/// let composition = MutableComposition()
/// try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: first.duration), of: firstAsset, at: .zero)
/// try await composition.insertTimeRange(secondRange, of: secondAsset, at: composition.duration)
/// ```
// @unchecked: every piece of state is behind the inherited `store` mutex.
public final class MutableComposition: Composition, @unchecked Sendable {
    /// An empty composition.
    public convenience init() { self.init(state: State()) }

    override init(state: State) { super.init(state: state) }

    /// The size the composition is meant to be shown at (zero: its first video track's).
    public override var naturalSize: Size {
        get { super.naturalSize }
        set { store.withLock { $0.naturalSize = newValue } }
    }

    /// Handles to edit each track.
    public var mutableTracks: [MutableCompositionTrack] { tracks.map { MutableCompositionTrack(composition: self, trackID: $0.trackID) } }

    public func mutableTrack(withTrackID trackID: Int) -> MutableCompositionTrack? {
        track(withTrackID: trackID).map { MutableCompositionTrack(composition: self, trackID: $0.trackID) }
    }

    /// Adds an empty track (`addMutableTrackWithMediaType:preferredTrackID:`). `preferredTrackID`
    /// 0 picks the next free ID; an ID already in use gives nil.
    public func addMutableTrack(withMediaType mediaType: MediaType, preferredTrackID: Int = 0) -> MutableCompositionTrack? {
        let id = store.withLock { s -> Int? in
            let used = Set(s.tracks.map(\.trackID))
            let id = preferredTrackID > 0 ? preferredTrackID : (used.max() ?? 0) + 1
            guard !used.contains(id) else { return nil }
            s.tracks.append(CompositionTrack(trackID: id, mediaType: mediaType))
            return id
        }
        return id.map { MutableCompositionTrack(composition: self, trackID: $0) }
    }

    public func removeTrack(_ track: MutableCompositionTrack) {
        store.withLock { $0.tracks.removeAll { $0.trackID == track.trackID } }
    }

    /// A track of the same media type that `track`'s media could go into (`mutableTrackCompatibleWithTrack:`).
    public func mutableTrack(compatibleWith track: AssetTrack) -> MutableCompositionTrack? {
        tracks.first { $0.mediaType == track.mediaType }.map { MutableCompositionTrack(composition: self, trackID: $0.trackID) }
    }

    /// Inserts `timeRange` of every video and audio track of `asset` at `time` on every track
    /// (`insertTimeRange:ofAsset:atTime:`): each source track goes into a composition track
    /// of its type (one per source track, added as needed); tracks that get nothing get an
    /// empty stretch, so the whole timeline after `time` moves as one.
    public func insertTimeRange(_ timeRange: MediaTimeRange, of asset: Asset, at time: MediaTime) async throws {
        try SegmentEditor.checkEditRange(timeRange)
        let all: [AssetTrack] = try await asset.load(.tracks)
        let sources = all.filter { track in track.mediaType == .audio || (track.mediaType == .video && !track.isAttachedPicture) }
        guard !sources.isEmpty else { throw MediaError(.noTracks, "has no video or audio track to insert", path: asset.displayPath) }
        var pieces: [(AssetTrack, [CompositionTrackSegment])] = []
        for source in sources {
            // A track with no media in the range (a late or short stream) gets empty time there.
            let made = (try? Self.segments(of: timeRange, of: source))
                ?? [CompositionTrackSegment(emptyTimeRange: MediaTimeRange(start: .zero, duration: timeRange.duration))]
            pieces.append((source, made))
        }
        guard pieces.contains(where: { $0.1.contains { !$0.isEmpty } }) else {
            throw CompositionError.noSourceMedia(track: sources[0].trackID, range: timeRange)
        }
        store.withLock { s in
            var used = Set<Int>()
            for (source, inserted) in pieces {
                let index: Int
                if let free = s.tracks.firstIndex(where: { $0.mediaType == source.mediaType && !used.contains($0.trackID) }) {
                    index = free
                } else {
                    var track = CompositionTrack(trackID: (s.tracks.map(\.trackID).max() ?? 0) + 1, mediaType: source.mediaType)
                    track.preferredTransform = source.preferredTransform
                    track.languageCode = source.languageCode
                    s.tracks.append(track)
                    index = s.tracks.count - 1
                }
                used.insert(s.tracks[index].trackID)
                s.tracks[index].segments = SegmentEditor.insert(inserted, at: time, into: s.tracks[index].segments)
            }
            let gap = [CompositionTrackSegment(emptyTimeRange: MediaTimeRange(start: .zero, duration: timeRange.duration))]
            for i in s.tracks.indices where !used.contains(s.tracks[i].trackID) && SegmentEditor.end(s.tracks[i].segments) > time {
                s.tracks[i].segments = SegmentEditor.insert(gap, at: time, into: s.tracks[i].segments)
            }
        }
    }

    /// Inserts nothing for `timeRange.duration` at `timeRange.start` on every track.
    public func insertEmptyTimeRange(_ timeRange: MediaTimeRange) throws(CompositionError) {
        try SegmentEditor.checkEditRange(timeRange)
        let gap = [CompositionTrackSegment(emptyTimeRange: MediaTimeRange(start: .zero, duration: timeRange.duration))]
        store.withLock { s in
            for i in s.tracks.indices { s.tracks[i].segments = SegmentEditor.insert(gap, at: timeRange.start, into: s.tracks[i].segments) }
        }
    }

    /// Removes `timeRange` from every track; what follows moves earlier.
    public func removeTimeRange(_ timeRange: MediaTimeRange) throws(CompositionError) {
        try SegmentEditor.checkEditRange(timeRange)
        store.withLock { s in
            for i in s.tracks.indices { s.tracks[i].segments = SegmentEditor.remove(timeRange, from: s.tracks[i].segments) }
        }
    }

    /// Plays `timeRange` of every track over `duration` instead: faster when shorter, slower
    /// when longer (`scaleTimeRange:toDuration:`). Audio keeps its pitch (time-stretched).
    public func scaleTimeRange(_ timeRange: MediaTimeRange, toDuration duration: MediaTime) throws(CompositionError) {
        try SegmentEditor.checkEditRange(timeRange)
        try SegmentEditor.checkEditRange(MediaTimeRange(start: timeRange.start, duration: duration))
        guard timeRange.duration > .zero, duration > .zero else { throw .invalidEditRange(timeRange) }
        store.withLock { s in
            for i in s.tracks.indices { s.tracks[i].segments = SegmentEditor.scale(timeRange, to: duration, in: s.tracks[i].segments) }
        }
    }

    /// The segments `timeRange` of `track` makes, starting at zero: its media where the track
    /// has some, empty where the range runs past the track's media.
    static func segments(of timeRange: MediaTimeRange, of track: AssetTrack) throws(CompositionError) -> [CompositionTrackSegment] {
        guard let path = track.sourcePath else { throw .noSourceMedia(track: track.trackID, range: timeRange) }
        let media = track.timeRange.intersection(timeRange)
        guard media.isValid, media.duration > .zero else { throw .noSourceMedia(track: track.trackID, range: timeRange) }
        var segments: [CompositionTrackSegment] = []
        if media.start > timeRange.start {
            segments.append(CompositionTrackSegment(emptyTimeRange: MediaTimeRange(start: .zero, duration: media.start - timeRange.start)))
        }
        segments.append(CompositionTrackSegment(url: URL(fileURLWithPath: path), track: track, sourceRange: media,
                                                targetRange: MediaTimeRange(start: media.start - timeRange.start, duration: media.duration)))
        if media.end < timeRange.end {
            segments.append(CompositionTrackSegment(emptyTimeRange: MediaTimeRange(start: media.end - timeRange.start, end: timeRange.duration)))
        }
        return segments
    }
}

/// A handle to edit one track of a `MutableComposition` (`AVMutableCompositionTrack`); every
/// change goes straight into the composition.
public final class MutableCompositionTrack: Sendable {
    public let composition: MutableComposition
    public let trackID: Int

    init(composition: MutableComposition, trackID: Int) {
        self.composition = composition
        self.trackID = trackID
    }

    /// The track as it is now (a copy).
    public var track: CompositionTrack { composition.track(withTrackID: trackID) ?? CompositionTrack(trackID: trackID, mediaType: .data) }
    public var mediaType: MediaType { track.mediaType }
    public var timeRange: MediaTimeRange { track.timeRange }
    public var naturalSize: Size { track.naturalSize }

    /// The segments; setting them checks them first (`validateTrackSegments`) and throws the
    /// first fault without changing the track.
    public var segments: [CompositionTrackSegment] { track.segments }

    public func setSegments(_ segments: [CompositionTrackSegment]) throws(CompositionError) {
        try validateSegments(segments)
        edit { $0.segments = segments }
    }

    /// Throws the first reason `segments` cannot be this track's timeline: a gap, an overlap,
    /// an invalid range, or a start other than zero.
    public func validateSegments(_ segments: [CompositionTrackSegment]) throws(CompositionError) {
        try SegmentEditor.validate(segments)
    }

    public var preferredTransform: VideoTransform {
        get { track.preferredTransform }
        set { edit { $0.preferredTransform = newValue } }
    }
    public var preferredVolume: Float {
        get { track.preferredVolume }
        set { edit { $0.preferredVolume = newValue } }
    }
    public var naturalTimeScale: Int32 {
        get { track.naturalTimeScale }
        set { edit { $0.naturalTimeScale = newValue } }
    }
    public var languageCode: String? {
        get { track.languageCode }
        set { edit { $0.languageCode = newValue } }
    }
    public var isEnabled: Bool {
        get { track.isEnabled }
        set { edit { $0.isEnabled = newValue } }
    }

    /// Inserts `timeRange` of `sourceTrack` at `time`, moving what was there later
    /// (`insertTimeRange:ofTrack:atTime:`). Past the track's end, an empty stretch fills the gap.
    public func insertTimeRange(_ timeRange: MediaTimeRange, of sourceTrack: AssetTrack, at time: MediaTime) throws(CompositionError) {
        try SegmentEditor.checkEditRange(timeRange)
        try SegmentEditor.checkEditRange(MediaTimeRange(start: time, duration: .zero))
        guard sourceTrack.mediaType == mediaType else { throw .incompatibleTrack(expected: mediaType, got: sourceTrack.mediaType) }
        let inserted = try MutableComposition.segments(of: timeRange, of: sourceTrack)
        edit { $0.segments = SegmentEditor.insert(inserted, at: time, into: $0.segments) }
    }

    /// Inserts the ranges one after another from `time` (`insertTimeRanges:ofTracks:atTime:`).
    public func insertTimeRanges(_ timeRanges: [MediaTimeRange], of sourceTracks: [AssetTrack], at time: MediaTime) throws(CompositionError) {
        var at = time
        for (range, source) in zip(timeRanges, sourceTracks) {
            try insertTimeRange(range, of: source, at: at)
            at = at + range.duration
        }
    }

    public func insertEmptyTimeRange(_ timeRange: MediaTimeRange) throws(CompositionError) {
        try SegmentEditor.checkEditRange(timeRange)
        let gap = [CompositionTrackSegment(emptyTimeRange: MediaTimeRange(start: .zero, duration: timeRange.duration))]
        edit { $0.segments = SegmentEditor.insert(gap, at: timeRange.start, into: $0.segments) }
    }

    public func removeTimeRange(_ timeRange: MediaTimeRange) throws(CompositionError) {
        try SegmentEditor.checkEditRange(timeRange)
        edit { $0.segments = SegmentEditor.remove(timeRange, from: $0.segments) }
    }

    public func scaleTimeRange(_ timeRange: MediaTimeRange, toDuration duration: MediaTime) throws(CompositionError) {
        try SegmentEditor.checkEditRange(timeRange)
        guard timeRange.duration > .zero, duration.isNumeric, duration > .zero else { throw .invalidEditRange(timeRange) }
        edit { $0.segments = SegmentEditor.scale(timeRange, to: duration, in: $0.segments) }
    }

    private func edit(_ change: (inout CompositionTrack) -> Void) {
        composition.store.withLock { s in
            if let i = s.tracks.firstIndex(where: { $0.trackID == trackID }) { change(&s.tracks[i]) }
        }
    }
}

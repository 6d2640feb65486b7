/// How one source track is drawn during one video composition instruction
/// (`AVMutableVideoCompositionLayerInstruction`): its transform, opacity and crop over time.
///
/// Each property is a timeline of set values and linear ramps. A value set at time t holds from
/// t until the next change; before the first change the default applies (identity transform,
/// opacity 1, no crop: the whole source); a ramp interpolates linearly over its time range and
/// its end value holds after it. A change made at the same start time as an earlier one replaces
/// it; otherwise a later-starting change takes over from its start, cutting short a ramp still
/// running. Ramps with an invalid or non-numeric time range are ignored.
public struct VideoCompositionLayerInstruction: Sendable, Hashable {
    /// The source track this instruction draws (`trackID`).
    public var trackID: Int
    var transformTimeline = RampTimeline<VideoTransform>()
    var opacityTimeline = RampTimeline<Double>()
    var cropTimeline = RampTimeline<Rect>()

    /// A layer instruction for `trackID` with every property at its default.
    public init(trackID: Int) {
        self.trackID = trackID
    }

    /// A layer instruction for `track` (`init(assetTrack:)`), which starts with the track's
    /// preferred transform, as `videoComposition(withPropertiesOf:)` does.
    public init(track: VideoCompositionSourceTrack) {
        self.init(trackID: track.trackID)
        setTransform(track.preferredTransform, at: .zero)
    }

    // MARK: Setting

    /// Sets the transform from source pixels to render coordinates from `time` on (`setTransform(_:at:)`).
    public mutating func setTransform(_ transform: VideoTransform, at time: MediaTime) {
        transformTimeline.set(transform, at: time)
    }

    /// Ramps the transform linearly, component by component, over `timeRange`
    /// (`setTransformRamp(fromStart:toEnd:timeRange:)`).
    public mutating func setTransformRamp(fromStart start: VideoTransform, toEnd end: VideoTransform, timeRange: MediaTimeRange) {
        transformTimeline.ramp(from: start, to: end, over: timeRange)
    }

    /// Sets the opacity (0 transparent … 1 opaque) from `time` on (`setOpacity(_:at:)`).
    public mutating func setOpacity(_ opacity: Double, at time: MediaTime) {
        opacityTimeline.set(opacity, at: time)
    }

    /// Ramps the opacity linearly over `timeRange` (`setOpacityRamp(fromStartOpacity:toEndOpacity:timeRange:)`).
    public mutating func setOpacityRamp(fromStartOpacity start: Double, toEndOpacity end: Double, timeRange: MediaTimeRange) {
        opacityTimeline.ramp(from: start, to: end, over: timeRange)
    }

    /// Sets the crop rectangle, in the source's pixel coordinates before the transform, from
    /// `time` on (`setCropRectangle(_:at:)`).
    public mutating func setCropRectangle(_ rectangle: Rect, at time: MediaTime) {
        cropTimeline.set(rectangle, at: time)
    }

    /// Ramps the crop rectangle linearly, edge by edge, over `timeRange`
    /// (`setCropRectangleRamp(fromStartCropRectangle:toEndCropRectangle:timeRange:)`).
    public mutating func setCropRectangleRamp(fromStartCropRectangle start: Rect, toEndCropRectangle end: Rect, timeRange: MediaTimeRange) {
        cropTimeline.ramp(from: start, to: end, over: timeRange)
    }

    // MARK: Reading

    /// The transform in effect at `time`; identity before the first change.
    public func transform(at time: MediaTime) -> VideoTransform { transformTimeline.value(at: time) ?? .identity }

    /// The opacity in effect at `time`; 1 before the first change.
    public func opacity(at time: MediaTime) -> Double { opacityTimeline.value(at: time) ?? 1 }

    /// The crop rectangle in effect at `time`; nil (the whole source) before the first change.
    public func cropRectangle(at time: MediaTime) -> Rect? { cropTimeline.value(at: time) }

    /// The transform ramp holding `time` (`getTransformRamp(for:…)`); see `RampSegment`.
    public func transformRamp(for time: MediaTime) -> RampSegment<VideoTransform>? { transformTimeline.segment(at: time) }

    /// The opacity ramp holding `time` (`getOpacityRamp(for:…)`); see `RampSegment`.
    public func opacityRamp(for time: MediaTime) -> RampSegment<Double>? { opacityTimeline.segment(at: time) }

    /// The crop rectangle ramp holding `time` (`getCropRectangleRamp(for:…)`); see `RampSegment`.
    public func cropRectangleRamp(for time: MediaTime) -> RampSegment<Rect>? { cropTimeline.segment(at: time) }

    /// Every opacity change in time order: ramps, and set values as ramps of no length.
    public var opacityChanges: [RampSegment<Double>] {
        opacityTimeline.changes.map { RampSegment(start: $0.start, end: $0.end, timeRange: $0.timeRange) }
    }

    /// Every transform change in time order: ramps, and set values as ramps of no length.
    public var transformChanges: [RampSegment<VideoTransform>] {
        transformTimeline.changes.map { RampSegment(start: $0.start, end: $0.end, timeRange: $0.timeRange) }
    }

    /// True when any property changes during `timeRange` (a ramp overlaps it, or a change starts
    /// inside it): a compositor cannot reuse one rendering across that range.
    public func containsTweening(in timeRange: MediaTimeRange) -> Bool {
        transformTimeline.changes(in: timeRange) || opacityTimeline.changes(in: timeRange) || cropTimeline.changes(in: timeRange)
    }
}

/// What a ramp getter returns (Apple's `start`, `end` and `timeRange` out-parameters): the values
/// at the start and end of the piece of the timeline holding the asked-for time. A set value
/// reads as a ramp from the value to itself, lasting until the next change (+infinity when none);
/// the held end of a ramp reads the same way until the next change. Getters return nil before the
/// first change and after the end of a last ramp, as Apple's return false.
public struct RampSegment<Value: Sendable & Hashable>: Sendable, Hashable {
    public var start: Value
    public var end: Value
    public var timeRange: MediaTimeRange
}

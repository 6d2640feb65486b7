/// A rectangle in picture coordinates (pixels, origin at the top left, y down), with Doubles so
/// ramps can pass through fractional positions. A layer instruction's crop rectangle is one.
public struct Rect: Sendable, Hashable, Codable, CustomStringConvertible {
    public var x: Double, y: Double, width: Double, height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        (self.x, self.y, self.width, self.height) = (x, y, width, height)
    }

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.init(x: Double(x), y: Double(y), width: Double(width), height: Double(height))
    }

    public static let zero = Rect(x: 0, y: 0, width: 0, height: 0)

    /// The first x to the right of the rectangle.
    public var maxX: Double { x + width }
    /// The first y below the rectangle.
    public var maxY: Double { y + height }
    /// True when the rectangle holds no area (or a side is NaN).
    public var isEmpty: Bool { !(width > 0 && height > 0) }

    /// The area both rectangles share, `zero` when they do not meet.
    public func intersection(_ other: Rect) -> Rect {
        let left = Swift.max(x, other.x), top = Swift.max(y, other.y)
        let right = Swift.min(maxX, other.maxX), bottom = Swift.min(maxY, other.maxY)
        guard right > left, bottom > top else { return .zero }
        return Rect(x: left, y: top, width: right - left, height: bottom - top)
    }

    public var description: String { "(\(x), \(y), \(width)x\(height))" }
}

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

/// Values that a ramp can interpolate linearly.
protocol LinearlyInterpolable: Sendable, Hashable {
    /// `from` when `fraction` is 0, `to` when it is 1, on the straight line between.
    static func interpolate(from: Self, to: Self, fraction: Double) -> Self
}

extension Double: LinearlyInterpolable {
    static func interpolate(from: Double, to: Double, fraction: Double) -> Double { from + (to - from) * fraction }
}

extension VideoTransform: LinearlyInterpolable {
    /// Component by component, as Core Animation and AVFoundation interpolate an affine transform.
    static func interpolate(from: VideoTransform, to: VideoTransform, fraction f: Double) -> VideoTransform {
        VideoTransform(a: .interpolate(from: from.a, to: to.a, fraction: f), b: .interpolate(from: from.b, to: to.b, fraction: f),
                       c: .interpolate(from: from.c, to: to.c, fraction: f), d: .interpolate(from: from.d, to: to.d, fraction: f),
                       tx: .interpolate(from: from.tx, to: to.tx, fraction: f), ty: .interpolate(from: from.ty, to: to.ty, fraction: f))
    }
}

extension Rect: LinearlyInterpolable {
    static func interpolate(from: Rect, to: Rect, fraction f: Double) -> Rect {
        Rect(x: .interpolate(from: from.x, to: to.x, fraction: f), y: .interpolate(from: from.y, to: to.y, fraction: f),
             width: .interpolate(from: from.width, to: to.width, fraction: f),
             height: .interpolate(from: from.height, to: to.height, fraction: f))
    }
}

/// One property's changes over time, sorted by start: set values (`isStep`) and ramps.
struct RampTimeline<Value: LinearlyInterpolable>: Sendable, Hashable {
    struct Change: Sendable, Hashable {
        var start: Value
        var end: Value
        /// For a ramp, its range; for a set value, a range starting at the time it was set.
        var timeRange: MediaTimeRange
        var isStep: Bool
    }

    private(set) var changes: [Change] = []

    mutating func set(_ value: Value, at time: MediaTime) {
        guard time.isNumeric else { return }
        insert(Change(start: value, end: value, timeRange: MediaTimeRange(start: time, duration: .zero), isStep: true))
    }

    mutating func ramp(from start: Value, to end: Value, over timeRange: MediaTimeRange) {
        guard timeRange.isValid, timeRange.start.isNumeric, timeRange.duration.isNumeric else { return }
        insert(Change(start: start, end: end, timeRange: timeRange, isStep: false))
    }

    private mutating func insert(_ change: Change) {
        changes.removeAll { $0.timeRange.start == change.timeRange.start }
        let index = changes.firstIndex { $0.timeRange.start > change.timeRange.start } ?? changes.endIndex
        changes.insert(change, at: index)
    }

    /// The index of the last change starting at or before `time`.
    private func index(at time: MediaTime) -> Int? {
        guard time.isValid else { return nil }
        return changes.lastIndex { $0.timeRange.start <= time }
    }

    /// The value at `time`, nil before the first change.
    func value(at time: MediaTime) -> Value? {
        guard let i = index(at: time) else { return nil }
        let change = changes[i]
        if change.isStep || time >= change.timeRange.end { return change.end }
        let elapsed = (time - change.timeRange.start).seconds
        let fraction = Swift.min(Swift.max(elapsed / change.timeRange.duration.seconds, 0), 1)
        return Value.interpolate(from: change.start, to: change.end, fraction: fraction)
    }

    func segment(at time: MediaTime) -> RampSegment<Value>? {
        guard let i = index(at: time) else { return nil }
        let change = changes[i]
        let next = i + 1 < changes.count ? changes[i + 1].timeRange.start : nil
        if !change.isStep, time < change.timeRange.end {
            return RampSegment(start: change.start, end: change.end, timeRange: change.timeRange)
        }
        let holdStart = change.isStep ? change.timeRange.start : change.timeRange.end
        if let next {
            return RampSegment(start: change.end, end: change.end, timeRange: MediaTimeRange(start: holdStart, end: next))
        }
        guard change.isStep else { return nil }
        return RampSegment(start: change.end, end: change.end, timeRange: MediaTimeRange(start: holdStart, duration: .positiveInfinity))
    }

    /// True when the value is not constant over `timeRange`.
    func changes(in timeRange: MediaTimeRange) -> Bool {
        changes.contains { change in
            if change.isStep { return change.timeRange.start > timeRange.start && timeRange.contains(change.timeRange.start) }
            return change.start != change.end && !timeRange.intersection(change.timeRange).isEmpty
        }
    }
}

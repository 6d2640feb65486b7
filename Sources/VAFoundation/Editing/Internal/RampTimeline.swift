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

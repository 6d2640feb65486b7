import Foundation
import VAFoundation

/// `--time-range` as typed: START-END or START+DURATION, each a time (`90.5`, `01:30.5`,
/// `00:01:30.5`) or a count of the source's video frames (`90f`). A range that counts frames
/// is resolved per input, once its video track's frame duration is known, exactly in MediaTime.
struct TimeRangeArgument: Sendable, Equatable, CustomStringConvertible {
    /// A point or length: a time, or a number of frames.
    enum Amount: Sendable, Equatable, CustomStringConvertible {
        case time(MediaTime)
        case frames(Int64)

        var description: String {
            switch self {
            case .time(let t): "\(t.value)/\(t.timescale)"
            case .frames(let n): "\(n)f"
            }
        }

        /// Seconds or `90f`; nil for anything else.
        init?(_ text: Substring) {
            if text.hasSuffix("f") || text.hasSuffix("F") {
                guard let frames = Int64(text.dropLast()), frames >= 0 else { return nil }
                self = .frames(frames)
            } else if let time = Vaf.Transcode.parseTime(String(text)) {
                self = .time(time)
            } else {
                return nil
            }
        }

        func resolved(frameDuration: MediaTime?) -> MediaTime? {
            switch self {
            case .time(let t): return t
            case .frames(let n):
                guard let frameDuration, let count = Int32(exactly: n) else { return nil }
                return frameDuration * count
            }
        }
    }

    var start: Amount
    /// The end (START-END) or the duration (START+DURATION).
    var end: Amount?
    var duration: Amount?
    /// The argument as typed, for messages.
    var text: String

    var countsFrames: Bool {
        [start, end, duration].contains { if case .frames = $0 { true } else { false } }
    }

    /// The range in canonical form (times as value/timescale, frames as `Nf`), for fingerprints.
    var canonical: String {
        "\(start)" + (end.map { "-\($0)" } ?? "") + (duration.map { "+\($0)" } ?? "")
    }

    var description: String { text }

    /// Parses START-END or START+DURATION; an empty START is 0 (`+90f`: the first 90 frames).
    init?(_ text: String) {
        self.text = text
        let plus = text.split(separator: "+", omittingEmptySubsequences: false)
        let dash = text.split(separator: "-", omittingEmptySubsequences: false)
        if plus.count == 2, !plus[1].isEmpty, let duration = Amount(plus[1]) {
            guard let start = plus[0].isEmpty ? .time(.zero) : Amount(plus[0]) else { return nil }
            (self.start, self.end, self.duration) = (start, nil, duration)
        } else if dash.count == 2, let start = Amount(dash[0]), let end = Amount(dash[1]) {
            (self.start, self.end, self.duration) = (start, end, nil)
        } else {
            return nil
        }
        // Ranges in one unit can be checked now; mixed ones once the frame rate is known.
        if case .time(let s) = self.start, case .time(let e)? = self.end, e <= s { return nil }
        if case .frames(let s) = self.start, case .frames(let e)? = self.end, e <= s { return nil }
        if case .time(let d)? = self.duration, d <= .zero { return nil }
        if case .frames(let d)? = self.duration, d <= 0 { return nil }
    }

    /// The range in time; nil when it counts frames and `frameDuration` is unknown, or when it
    /// ends before it starts.
    func resolved(frameDuration: MediaTime?) -> MediaTimeRange? {
        guard let start = start.resolved(frameDuration: frameDuration) else { return nil }
        let end: MediaTime?
        if let duration { end = duration.resolved(frameDuration: frameDuration).map { start + $0 } } else { end = self.end?.resolved(frameDuration: frameDuration) }
        guard let end, end > start else { return nil }
        return MediaTimeRange(start: start, end: end)
    }

    /// The exact duration of one frame of a constant-rate track: integer rates (25 → 1/25) and
    /// NTSC ones (29.97 → 1001/30000) from the nominal rate, else the shortest frame interval
    /// when it agrees with the rate, else the rate to a microsecond. Nil without a rate.
    static func frameDuration(nominalFrameRate: Float, minFrameDuration: MediaTime) -> MediaTime? {
        let rate = Double(nominalFrameRate)
        guard rate > 0, rate.isFinite else { return nil }
        let whole = rate.rounded()
        if abs(rate - whole) < 0.001, let n = Int32(exactly: whole) { return MediaTime(value: 1, timescale: n) }
        let ntsc = (rate * 1.001).rounded()
        if abs(rate - ntsc * 1000 / 1001) < 0.001, let n = Int32(exactly: ntsc * 1000) { return MediaTime(value: 1001, timescale: n) }
        if minFrameDuration.isNumeric, minFrameDuration > .zero, abs(1 / minFrameDuration.seconds - rate) / rate < 0.001 {
            return minFrameDuration
        }
        return MediaTime(value: 1_000_000, timescale: Int32((rate * 1_000_000).rounded()))
    }
}

/// Decides where a fragmented output's fragments end, and holds each track's samples until
/// the fragment they belong to is complete in every track.
///
/// The leading track (the first video track, else the first) sets the cuts: a fragment ends
/// before its first sync sample at or after the next boundary (`origin` plus a multiple of
/// `interval`, after the output's start at zero), or after a requested cut. Every other track's samples shown before that
/// sync sample belong to the fragment; it is complete once each of them has a sample shown
/// at or after the cut, or has finished. Pure bookkeeping: the caller writes what it returns.
struct FragmentCutter<Payload> {
    struct Item {
        var payload: Payload
        var track: Int
        /// Presentation and decode time, and duration, on the output's timeline.
        var time: MediaTime
        var decodeTime: MediaTime
        var duration: MediaTime
        var isSync: Bool
        var byteCount: Int

        /// The sample's facts, without the payload (which may then be freed).
        var withoutPayload: FragmentCutter<Void>.Item {
            .init(payload: (), track: track, time: time, decodeTime: decodeTime, duration: duration, isSync: isSync, byteCount: byteCount)
        }
    }

    private let leadTrack: Int
    private let interval: MediaTime
    private var nextBoundary: MediaTime
    /// Requested cuts, oldest first: each at the lead's first sync sample shown at or after
    /// its time. Several may wait at once, the encoder's delay behind the requests.
    private var requestedCuts: [MediaTime] = []
    /// Each track's samples not yet handed out, in decode order.
    private var queues: [[Item]]
    private var finished: [Bool]
    /// Where completed-but-not-yet-handed-out fragments end in the lead's queue (sample counts
    /// from its front), and the cut's time.
    private var cuts: [(leadCount: Int, time: MediaTime)] = []

    /// `interval` indefinite (or not numeric) cuts only where `requestCut(at:)` asks.
    init(trackCount: Int, leadTrack: Int, interval: MediaTime, origin: MediaTime) {
        self.leadTrack = leadTrack
        self.interval = interval
        nextBoundary = .positiveInfinity
        if interval.isNumeric && interval > .zero && origin.isNumeric {
            // A boundary at or before the output's start cuts nothing (an audio encoder's
            // priming packets come before it).
            nextBoundary = origin
            while nextBoundary <= .zero { nextBoundary = nextBoundary + interval }
        }
        queues = Array(repeating: [], count: trackCount)
        finished = Array(repeating: false, count: trackCount)
    }

    /// Ends the fragment under way before the lead's first sync sample shown at or after `time`.
    mutating func requestCut(at time: MediaTime) { requestedCuts.append(time) }

    mutating func add(_ item: Item) {
        if item.track == leadTrack && item.isSync {
            let leadSinceLastCut = queues[leadTrack].count - (cuts.last?.leadCount ?? 0)
            let requested = requestedCuts.contains { item.time >= $0 }
            let due = item.time >= nextBoundary || requested
            if due && leadSinceLastCut > 0 { cuts.append((queues[leadTrack].count, item.time)) }
            // One sync sample answers every request at or before its time.
            if requested { requestedCuts.removeAll { item.time >= $0 } }
            if due { advanceBoundary(past: item.time) }
        }
        queues[item.track].append(item)
    }

    private mutating func advanceBoundary(past time: MediaTime) {
        guard interval.isNumeric && interval > .zero else { return }
        while nextBoundary <= time { nextBoundary = nextBoundary + interval }
    }

    mutating func finish(track: Int) { finished[track] = true }

    /// The oldest fragment that is complete in every track, its samples in decode order
    /// across tracks; nil while none is. With `final`, whatever is left is the last one.
    mutating func nextFragment(final: Bool = false) -> [Item]? {
        guard let cut = cuts.first else {
            guard final, queues.contains(where: { !$0.isEmpty }) else { return nil }
            let rest = queues.flatMap { $0 }
            queues = queues.map { _ in [] }
            return Self.decodeOrder(rest)
        }
        var taken: [[Item]] = []
        for track in queues.indices {
            if track == leadTrack {
                taken.append(Array(queues[track].prefix(cut.leadCount)))
                continue
            }
            let count = queues[track].prefix { $0.time < cut.time }.count
            // Complete once a sample at or after the cut shows this track has passed it.
            guard final || finished[track] || count < queues[track].count else { return nil }
            taken.append(Array(queues[track].prefix(count)))
        }
        for track in queues.indices { queues[track].removeFirst(taken[track].count) }
        cuts.removeFirst()
        cuts = cuts.map { ($0.leadCount - cut.leadCount, $0.time) }
        return Self.decodeOrder(taken.flatMap { $0 })
    }

    private static func decodeOrder(_ items: [Item]) -> [Item] {
        items.enumerated().sorted { a, b in
            a.element.decodeTime != b.element.decodeTime ? a.element.decodeTime < b.element.decodeTime : a.offset < b.offset
        }.map(\.element)
    }
}

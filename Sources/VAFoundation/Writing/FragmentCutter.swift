/// Decides where a fragmented output's fragments end, and hands each sample on as soon as the
/// fragment it belongs to is known, so the muxer (which buffers the fragment it is writing)
/// holds a fragment's samples and the cutter only those it cannot place yet.
///
/// The leading track (the first video track, else the first) sets the cuts: a fragment ends
/// before its first sync sample at or after the next boundary (`origin` plus a multiple of
/// `interval`, after the output's start at zero), or after a requested cut. Every other track's samples shown before that
/// sync sample belong to the fragment; it is complete once each of them has a sample shown
/// at or after the cut, or has finished. Each fragment ends a segment, unless fragments start
/// at every lead sync sample: then only those at a boundary or a requested cut end one.
/// Pure bookkeeping: the caller writes and cuts as told.
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

    /// What the caller does next, in order.
    enum Step {
        /// Write the sample into the fragment under way.
        case write(Item)
        /// End the fragment under way: it holds these samples (in the order written); the
        /// segment ends with it, or goes on with the next fragment.
        case endFragment([FragmentCutter<Void>.Item], endsSegment: Bool)
    }

    private let leadTrack: Int
    private let interval: MediaTime
    private let fragmentsAtLeadSyncSamples: Bool
    private var nextBoundary: MediaTime
    /// Requested cuts, oldest first: each at the lead's first sync sample shown at or after
    /// its time. Several may wait at once, the encoder's delay behind the requests.
    private var requestedCuts: [MediaTime] = []
    /// Each track's samples not yet handed on, in decode order.
    private var queues: [Pending]
    private var finished: [Bool]
    /// How many lead samples have been handed on so far.
    private var leadHandedOn = 0
    /// Where known fragments end (after how many lead samples handed on in all), the cut's
    /// time, and whether the segment ends there too; the first ends the fragment under way.
    private var cuts: [(leadEnd: Int, time: MediaTime, endsSegment: Bool)] = []
    /// The samples handed on into the fragment under way.
    private var written: [FragmentCutter<Void>.Item] = []

    /// `interval` indefinite (or not numeric) cuts only where `requestCut(at:)` asks.
    /// `fragmentsAtLeadSyncSamples` starts a fragment at every lead sync sample.
    init(trackCount: Int, leadTrack: Int, interval: MediaTime, origin: MediaTime, fragmentsAtLeadSyncSamples: Bool = false) {
        self.leadTrack = leadTrack
        self.interval = interval
        self.fragmentsAtLeadSyncSamples = fragmentsAtLeadSyncSamples
        nextBoundary = .positiveInfinity
        if interval.isNumeric && interval > .zero && origin.isNumeric {
            // A boundary at or before the output's start cuts nothing (an audio encoder's
            // priming packets come before it).
            nextBoundary = origin
            while nextBoundary <= .zero { nextBoundary = nextBoundary + interval }
        }
        queues = Array(repeating: Pending(), count: trackCount)
        finished = Array(repeating: false, count: trackCount)
    }

    /// Ends the fragment under way before the lead's first sync sample shown at or after `time`.
    mutating func requestCut(at time: MediaTime) { requestedCuts.append(time) }

    mutating func add(_ item: Item) {
        if item.track == leadTrack && item.isSync {
            // The newest fragment has a lead sample: queued since the last known cut, or (with
            // none known) queued or written into the fragment under way.
            let leadQueued = leadHandedOn + queues[leadTrack].count
            let leadInNewest = cuts.last.map { leadQueued > $0.leadEnd }
                ?? (!queues[leadTrack].isEmpty || written.contains { $0.track == leadTrack })
            let requested = requestedCuts.contains { item.time >= $0 }
            let due = item.time >= nextBoundary || requested
            if leadInNewest && (due || fragmentsAtLeadSyncSamples) { cuts.append((leadQueued, item.time, due)) }
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

    /// The next thing to do: a sample to write into the fragment under way, or the end of
    /// that fragment once it is complete in every track; nil while nothing can be placed.
    /// With `final`, every track counts as finished, and what is left ends the last fragment.
    mutating func next(final: Bool = false) -> Step? {
        let cut = cuts.first
        for track in queues.indices {
            guard let first = queues[track].first else { continue }
            let belongs = if track == leadTrack {
                cut.map { $0.leadEnd > leadHandedOn } ?? true
            } else {
                // Another track's sample waits until the cut shows which fragment it is in.
                cut.map { first.time < $0.time } ?? final
            }
            guard belongs else { continue }
            queues[track].removeFirst()
            if track == leadTrack { leadHandedOn += 1 }
            written.append(first.withoutPayload)
            return .write(first)
        }
        guard !written.isEmpty else { return nil }
        var endsSegment = true
        if let cut {
            // Complete once every other track has passed the cut (a sample at or after it
            // waits) or ended.
            let complete = queues.indices.allSatisfy { $0 == leadTrack || final || finished[$0] || !queues[$0].isEmpty }
            guard complete, cut.leadEnd == leadHandedOn else { return nil }
            cuts.removeFirst()
            endsSegment = cut.endsSegment
        } else if !final {
            return nil
        }
        defer { written = [] }
        return .endFragment(written, endsSegment: endsSegment)
    }

    /// A track's samples waiting, taken from the front without moving the rest (audio can
    /// wait a whole fragment for the lead's cut). A sample taken is let go at once.
    private struct Pending {
        private var items: [Item?] = []
        private var head = 0

        var first: Item? { head < items.count ? items[head] : nil }
        var isEmpty: Bool { head == items.count }
        var count: Int { items.count - head }

        mutating func append(_ item: Item) { items.append(item) }

        mutating func removeFirst() {
            items[head] = nil
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 256 && head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
        }
    }
}


/// Keeps an export's lanes (one per track) within `window` of each other in media time.
///
/// Audio decodes and encodes far faster than video, so an unpaced audio lane runs ahead
/// until the writer's interleaving window stops it, and meanwhile the shared demuxer queues
/// every compressed video packet it passes: two seconds of a 60 Mbit/s camera file are 15 MB.
/// A lane more than `window` ahead of the slowest unfinished lane waits before reading its
/// next sample. The slowest lane never waits, so pacing cannot deadlock.
final class LanePacer: Sendable {
    private struct State {
        /// Latest end time handed over per lane (presentation time + duration).
        var positions: [MediaTime]
        var finished: [Bool]
        var waiters: [LockedContinuation<Bool, Never>] = []
    }

    private let window: MediaTime
    private let state: Locked<State>
    /// Lanes that hold no other lane back (subtitles: their next cue may be minutes away);
    /// they still wait for their own turn.
    private let sparse: Set<Int>

    init(lanes: Int, start: MediaTime, window: MediaTime, sparse: Set<Int> = []) {
        self.window = window
        self.sparse = sparse
        state = Locked(State(positions: Array(repeating: start, count: lanes), finished: Array(repeating: false, count: lanes)))
    }

    /// Returns once lane `i` is at most `window` ahead of every unfinished lane; throws
    /// `CancellationError` when the task is cancelled.
    func waitForTurn(_ i: Int) async throws {
        while true {
            try Task.checkCancellation()
            let mayGo = await withTaskCancellationHandler {
                await withLockedContinuation { (c: LockedContinuation<Bool, Never>) in
                    let now = state.withLock { s -> Bool? in
                        // Checked under the lock: a cancellation after it finds this waiter parked.
                        if Self.isWithinWindow(i, s, window, sparse: sparse) { return true }
                        if Task.isCancelled { return false }
                        s.waiters.append(c)
                        return nil
                    }
                    if let now { c.resume(returning: now) }
                }
            } onCancel: {
                wakeAll()
            }
            if mayGo { return }
        }
    }

    /// Records that lane `i` handed over media up to `end`; returns the position every lane has reached.
    @discardableResult
    func advance(_ i: Int, to end: MediaTime) -> MediaTime {
        let (reached, waiters) = state.withLock { s -> (MediaTime, [LockedContinuation<Bool, Never>]) in
            if end > s.positions[i] { s.positions[i] = end }
            defer { s.waiters = [] }
            return (s.positions.indices.filter { !sparse.contains($0) }.map { s.positions[$0] }.min() ?? end, s.waiters)
        }
        for waiter in waiters { waiter.resume(returning: false) }
        return reached
    }

    /// Lane `i` reads no more: the others stop waiting for it.
    func finish(_ i: Int) {
        state.withLock { $0.finished[i] = true }
        wakeAll()
    }

    private static func isWithinWindow(_ i: Int, _ s: State, _ window: MediaTime, sparse: Set<Int>) -> Bool {
        let slowest = s.positions.indices.filter { !s.finished[$0] && !sparse.contains($0) }.map { s.positions[$0] }.min() ?? s.positions[i]
        return s.positions[i] - slowest <= window
    }

    private func wakeAll() {
        let waiters = state.withLock { s -> [LockedContinuation<Bool, Never>] in
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume(returning: false) }
    }
}

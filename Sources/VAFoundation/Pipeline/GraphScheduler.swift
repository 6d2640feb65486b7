/// One edge of an export's graph: a reader output (demux, decode and process, on the output's
/// own thread) feeding a writer input (encode and mux, on the writer's thread). The scheduler
/// runs the edge's steps on its source's thread, one at a time: a step starts only once the
/// last one has returned, so what an edge keeps between steps is never touched by two threads
/// at once.
protocol ScheduledEdge: AnyObject, Sendable {
    /// Runs `job` on the thread of the output the edge reads now, then `then` once `job` and
    /// what it captured are let go.
    func onSourceThread(_ job: @escaping @Sendable () -> Void, then: @escaping @Sendable () -> Void)
    /// One step, on the source's thread: hand on what waits, read what comes next.
    func step() -> EdgeProgress
}

/// What an edge's step came to.
enum EdgeProgress: Sendable {
    /// It handed a sample on, or read one to hand on: step again.
    case again
    /// The input it feeds is not ready: step again once `whenReady` calls back (the writer's
    /// `AssetWriterInput.whenReady`: at its next change, or at once when the input is ready).
    case blocked(whenReady: @Sendable (_ wake: @escaping @Sendable () -> Void) -> Void)
    /// It needs work done off its source's thread first (the writer dropping an open group of
    /// pictures after a device failure): step again once `work` is done.
    case detour(@Sendable () async throws -> Void)
    case ended
    case failed(any Error)
}

/// Runs an export's graph: it knows every edge and decides which may step. An edge steps on
/// its source's thread as long as its input takes what it hands on; an edge whose input is
/// full (or too far ahead of another input, the writer's interleaving window) steps again only
/// when the writer says the input is ready. There are no tasks per edge and no polling: a
/// picture crosses from its decoder's thread to the writer's, and nowhere else.
///
/// The first edge to fail stops the graph: edges waiting for their input end at once, running
/// ones after their step, and `run` throws that failure once every edge has ended.
final class GraphScheduler: Sendable {
    private struct State {
        /// The edges still running; nil once one has ended. Emptied as the run ends, so no
        /// thread of the graph keeps an edge (and the decoders behind it) alive past `run`.
        var edges: [(any ScheduledEdge)?] = []
        var running = 0
        /// Edges waiting for their input to be ready.
        var blocked: Set<Int> = []
        var failure: (any Error)?
        var finished: LockedContinuation<Void, any Error>?
    }

    private let state = Locked(State())

    /// Runs `edges` until every one has ended; throws the first failure.
    func run(_ edges: [any ScheduledEdge]) async throws {
        guard !edges.isEmpty else { return }
        try await withLockedThrowingContinuation { (finished: LockedContinuation<Void, any Error>) in
            state.withLock { s in
                s.edges = edges
                s.running = edges.count
                s.finished = finished
            }
            for i in edges.indices { schedule(i) }
        }
    }

    /// Queues edge `i`'s next step on its source's thread.
    private func schedule(_ i: Int) {
        guard let edge = state.withLock({ $0.edges[i] }) else { return }
        let progress = Locked<EdgeProgress?>(nil)
        edge.onSourceThread({ [self] in
            let stopped = state.withLock { $0.failure != nil }
            let made = stopped ? EdgeProgress.ended : edge.step()
            progress.withLock { $0 = made }
        }, then: { [self] in
            guard let made = progress.withLock({ $0.take() }) else { return }
            advance(i, after: made)
        })
    }

    private func advance(_ i: Int, after progress: EdgeProgress) {
        switch progress {
        case .again:
            schedule(i)
        case .blocked(let whenReady):
            let stopped = state.withLock { s -> Bool in
                guard s.failure == nil else { return true }
                s.blocked.insert(i)
                return false
            }
            if stopped { return end(i, failure: nil) }
            whenReady { [weak self] in self?.unblock(i) }
        case .detour(let work):
            Task {
                do {
                    try await work()
                    schedule(i)
                } catch {
                    end(i, failure: error)
                }
            }
        case .ended:
            end(i, failure: nil)
        case .failed(let error):
            end(i, failure: error)
        }
    }

    /// Edge `i`'s input may be ready (or never will be: the next step finds out). Called once
    /// or more per wait: the edge steps once.
    private func unblock(_ i: Int) {
        guard state.withLock({ $0.blocked.remove(i) != nil }) else { return }
        schedule(i)
    }

    /// Edge `i` has ended, by `failure` when given: the first failure stops every other edge.
    private func end(_ i: Int, failure: (any Error)?) {
        let (finished, outcome) = state.withLock { s -> (LockedContinuation<Void, any Error>?, (any Error)?) in
            var ending = [i]
            if let failure, s.failure == nil {
                s.failure = failure
                ending += s.blocked
                s.blocked = []
            }
            for j in ending {
                s.edges[j] = nil
                s.running -= 1
            }
            guard s.running == 0 else { return (nil, nil) }
            s.edges = []
            defer { s.finished = nil }
            return (s.finished, s.failure)
        }
        guard let finished else { return }
        if let outcome { finished.resume(throwing: outcome) } else { finished.resume() }
    }
}

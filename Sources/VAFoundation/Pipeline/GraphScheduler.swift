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
    /// The input it feeds is not ready, or (a fan-out's branch) its source: step again once
    /// `whenReady` calls back (the writer's `AssetWriterInput.whenReady`, the fan-out's
    /// `waitToRead`: at their next change, or at once when ready).
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
/// One scheduler runs a whole ladder: each output's attempt is a group of edges (`run`), and
/// its branches' edges park on the shared decode as they do on their inputs. The first edge of
/// a group to fail stops that group: its edges waiting for their input end at once, running
/// ones after their step, and `run` throws that failure once every edge of the group has
/// ended. Other groups run on (the export decides whether one output's failure ends the others).
final class GraphScheduler: Sendable {
    /// One `run`: an output's edges, and how they are faring.
    private struct Group {
        var running: Int
        /// Its edges waiting for their input to be ready.
        var blocked: Set<Int> = []
        var failure: (any Error)?
        var finished: LockedContinuation<Void, any Error>?
    }

    private struct State {
        /// The edges still running, by number, with their group's. An edge's entry goes as it
        /// ends, so no thread of the graph keeps an edge (and the decoders behind it) alive past
        /// its group's `run`.
        var edges: [Int: (edge: any ScheduledEdge, group: Int)] = [:]
        var groups: [Int: Group] = [:]
        var nextEdge = 0
        var nextGroup = 0

        func isStopped(group: Int) -> Bool { groups[group]?.failure != nil }
    }

    private let state = Locked(State())

    /// Runs `edges` as one group until every one has ended; throws the group's first failure.
    func run(_ edges: [any ScheduledEdge]) async throws {
        guard !edges.isEmpty else { return }
        try await withLockedThrowingContinuation { (finished: LockedContinuation<Void, any Error>) in
            let numbers = state.withLock { s -> Range<Int> in
                let group = s.nextGroup
                s.nextGroup += 1
                s.groups[group] = Group(running: edges.count, finished: finished)
                let numbers = s.nextEdge..<(s.nextEdge + edges.count)
                s.nextEdge += edges.count
                for (number, edge) in zip(numbers, edges) { s.edges[number] = (edge, group) }
                return numbers
            }
            for i in numbers { schedule(i) }
        }
    }

    /// Queues edge `i`'s next step on its source's thread.
    private func schedule(_ i: Int) {
        guard let (edge, group) = state.withLock({ $0.edges[i] }) else { return }
        let progress = Locked<EdgeProgress?>(nil)
        edge.onSourceThread({ [self] in
            let stopped = state.withLock { $0.isStopped(group: group) }
            let made = stopped ? EdgeProgress.ended : edge.step()
            progress.withLock { $0 = made }
        }, then: { [self] in
            guard let made = progress.withLock({ $0.take() }) else { return }
            advance(i, of: group, after: made)
        })
    }

    private func advance(_ i: Int, of group: Int, after progress: EdgeProgress) {
        switch progress {
        case .again:
            schedule(i)
        case .blocked(let whenReady):
            let stopped = state.withLock { s -> Bool in
                guard !s.isStopped(group: group) else { return true }
                s.groups[group]?.blocked.insert(i)
                return false
            }
            if stopped { return end(i, of: group, failure: nil) }
            whenReady { [weak self] in self?.unblock(i, of: group) }
        case .detour(let work):
            Task {
                do {
                    try await work()
                    schedule(i)
                } catch {
                    end(i, of: group, failure: error)
                }
            }
        case .ended:
            end(i, of: group, failure: nil)
        case .failed(let error):
            end(i, of: group, failure: error)
        }
    }

    /// Edge `i`'s input may be ready (or never will be: the next step finds out). Called once
    /// or more per wait: the edge steps once.
    private func unblock(_ i: Int, of group: Int) {
        guard state.withLock({ $0.groups[group]?.blocked.remove(i) != nil }) else { return }
        schedule(i)
    }

    /// Edge `i` has ended, by `failure` when given: a group's first failure stops its other edges.
    private func end(_ i: Int, of group: Int, failure: (any Error)?) {
        let (finished, outcome) = state.withLock { s -> (LockedContinuation<Void, any Error>?, (any Error)?) in
            guard var g = s.groups[group] else { return (nil, nil) }
            var ending = [i]
            if let failure, g.failure == nil {
                g.failure = failure
                ending += g.blocked
                g.blocked = []
            }
            for j in ending where s.edges.removeValue(forKey: j) != nil { g.running -= 1 }
            guard g.running == 0 else {
                s.groups[group] = g
                return (nil, nil)
            }
            s.groups[group] = nil
            return (g.finished, g.failure)
        }
        guard let finished else { return }
        if let outcome { finished.resume(throwing: outcome) } else { finished.resume() }
    }
}

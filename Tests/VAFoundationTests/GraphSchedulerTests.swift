import Foundation
import MediaCore
import Testing
@testable import VAFoundation

/// The graph scheduler alone, with edges that count instead of decoding: where steps run,
/// how a full input holds its edge back, and how the first failure ends the run. A lost wake-up
/// hangs a run: the limit ends it, far enough off for a CI host busy with the other suites.
@Suite(.timeLimit(.minutes(5)))
struct GraphSchedulerTests {
    /// A bounded channel standing for a writer input: `capacity` items, taken by a thread of its own.
    final class Channel: Sendable {
        private struct State {
            var items: [Int] = []
            var taken: [Int] = []
            var wakes: [@Sendable () -> Void] = []
        }
        private let state = ConditionLocked(State())
        let capacity: Int

        init(capacity: Int) { self.capacity = capacity }

        func offer(_ item: Int) -> Bool {
            state.withLockWakingWaiters { s in
                guard s.items.count < capacity else { return false }
                s.items.append(item)
                return true
            }
        }

        func whenReady(_ wake: @escaping @Sendable () -> Void) {
            let now = state.withLock { s -> Bool in
                guard s.items.count >= capacity else { return true }
                s.wakes.append(wake)
                return false
            }
            if now { wake() }
        }

        /// Waits for an item and takes it, as a writer's thread would, then wakes whoever waits
        /// `times` times over.
        func take(wakingTimes times: Int) {
            let wakes = state.withLock(when: { !$0.items.isEmpty }) { s -> [@Sendable () -> Void] in
                s.taken.append(s.items.removeFirst())
                defer { s.wakes = [] }
                return s.wakes
            }
            for _ in 0..<times { for wake in wakes { wake() } }
        }

        /// Takes what is left without waiting.
        func takeRest() { state.withLock { s in s.taken += s.items; s.items = [] } }

        var taken: [Int] { state.withLock { $0.taken } }
    }

    /// Hands `count` numbers to `channel`, one per step, on a stage thread of its own; fails at
    /// step `failingAt` when given.
    final class CountingEdge: ScheduledEdge {
        private struct State {
            var next = 0
            var pending: Int?
            var steps = 0
            var stepsOffThread = 0
            var concurrentSteps = 0
            var inStep = false
        }
        let thread: StageThread
        let channel: Channel
        let count: Int
        let failingAt: Int?
        /// Runs in the failing step, before it fails.
        let beforeFailing: @Sendable () -> Void
        private let state = Locked(State())
        /// Ends as the edge fails.
        private let failure = AsyncStream<Never>.makeStream()

        /// On a stage thread of its own, or on `thread` beside other edges.
        init(count: Int, channel: Channel, failingAt: Int? = nil, beforeFailing: @escaping @Sendable () -> Void = {},
             thread: StageThread = StageThread(name: "vaf.test.edge")) {
            self.count = count
            self.channel = channel
            self.failingAt = failingAt
            self.beforeFailing = beforeFailing
            self.thread = thread
        }

        /// Suspends until the edge's failing step has run (its scheduler hears of it in the job's
        /// `then`, before the thread's next job). A suspension, not a blocked thread: the
        /// scheduler's tasks need the cooperative pool's few threads to start.
        func waitUntilFailed() async { for await _ in failure.stream {} }

        func onSourceThread(_ job: @escaping @Sendable () -> Void, then: @escaping @Sendable () -> Void) {
            thread.async(job, then: then)
        }

        func step() -> EdgeProgress {
            let onThread = thread.isCurrent
            let overlapping = state.withLock { s -> Bool in
                defer { s.inStep = true }
                s.steps += 1
                if !onThread { s.stepsOffThread += 1 }
                return s.inStep
            }
            defer { state.withLock { $0.inStep = false } }
            if overlapping { state.withLock { $0.concurrentSteps += 1 } }
            return state.withLock { s -> EdgeProgress in
                if let failingAt, s.steps == failingAt {
                    beforeFailing()
                    failure.continuation.finish()
                    return .failed(MediaError(.decodeFailed, "edge failed at step \(failingAt)"))
                }
                if let pending = s.pending {
                    guard channel.offer(pending) else { return .blocked { [channel] wake in channel.whenReady(wake) } }
                    s.pending = nil
                }
                guard s.next < count else { return .ended }
                s.pending = s.next
                s.next += 1
                return .again
            }
        }

        var steps: Int { state.withLock { $0.steps } }
        var stepsOffThread: Int { state.withLock { $0.stepsOffThread } }
        var concurrentSteps: Int { state.withLock { $0.concurrentSteps } }
    }

    /// An edge whose one step waits until `open()`: the run of its output cannot end before.
    final class GatedEdge: ScheduledEdge {
        let thread = StageThread(name: "vaf.test.gated")
        private let gate = ConditionLocked((entered: false, open: false))

        func open() { gate.withLockWakingWaiters { $0.open = true } }

        /// Waits until the edge is in its step (a scheduler stopped before then ends it unstepped).
        func waitUntilInStep() { gate.withLock(when: { $0.entered }) { _ in } }

        func onSourceThread(_ job: @escaping @Sendable () -> Void, then: @escaping @Sendable () -> Void) {
            thread.async(job, then: then)
        }

        func step() -> EdgeProgress {
            gate.withLockWakingWaiters { $0.entered = true }
            gate.withLock(when: { $0.open }) { _ in }
            return .ended
        }
    }

    /// Takes `count` items from `channel` on a thread of its own, waking its waiter `wakes` times per item.
    static func drain(_ channel: Channel, count: Int, wakes: Int) {
        Thread {
            for _ in 0..<count { channel.take(wakingTimes: wakes) }
        }.start()
    }

    @Test func everyStepRunsOnItsSourcesThreadAndAFullInputHoldsItsEdgeBack() async throws {
        let channel = Channel(capacity: 1)
        let edge = CountingEdge(count: 200, channel: channel)
        // Each item taken wakes the edge three times: it must still step once per wake-up.
        Self.drain(channel, count: 199, wakes: 3)
        try await GraphScheduler().run([edge])
        #expect(edge.stepsOffThread == 0)
        #expect(edge.concurrentSteps == 0)
        // Every number arrives, in order, through a channel of one.
        channel.takeRest()
        #expect(channel.taken == Array(0..<200))
    }

    @Test func theFirstFailureEndsTheRunOnceEveryEdgeHasEnded() async throws {
        // An edge whose input is never drained parks after its first item; the other fails.
        let parked = CountingEdge(count: 100, channel: Channel(capacity: 1))
        let failing = CountingEdge(count: 100, channel: Channel(capacity: 100), failingAt: 20)
        await #expect(throws: MediaError.self) { try await GraphScheduler().run([parked, failing]) }
        #expect(failing.steps == 20, "the failing edge stops at its failure")
        // The parked edge (3 steps: read, hand on, find its input full) ended without waiting
        // for an input that would never be ready, and was never stepped again.
        #expect(parked.steps <= 3)
    }

    @Test func oneSchedulerRunsSeveralOutputsAndAFailureEndsOnlyItsOwn() async throws {
        // One scheduler for a ladder: each output's edges are a group of their own.
        let scheduler = GraphScheduler()
        let parked = CountingEdge(count: 100, channel: Channel(capacity: 1))
        let failing = CountingEdge(count: 100, channel: Channel(capacity: 100), failingAt: 20)
        let channels = (0..<2).map { _ in Channel(capacity: 1000) }
        let healthy = channels.map { CountingEdge(count: 300, channel: $0) }
        let failed = Task { try await scheduler.run([parked, failing]) }
        let succeeded = Task { try await scheduler.run(healthy) }
        await #expect(throws: MediaError.self) { try await failed.value }
        try await succeeded.value
        #expect(failing.steps == 20)
        #expect(parked.steps <= 3, "the failing output's parked edge ended with it")
        for (channel, edge) in zip(channels, healthy) {
            channel.takeRest()
            #expect(channel.taken == Array(0..<300), "the other output ran to its end")
            #expect(edge.stepsOffThread == 0)
        }
    }

    /// While a failed output is still ending (an edge of it still in its step), another
    /// output's edges go on: its steps, queued after the failure on the same thread, run to
    /// the end. The other output's inputs are full until the failure has come, so it cannot
    /// finish first.
    @Test func aFailedOutputStillEndingStopsNoOther() async throws {
        let scheduler = GraphScheduler()
        let shared = StageThread(name: "vaf.test.shared")
        let gated = GatedEdge()
        let failing = CountingEdge(count: 100, channel: Channel(capacity: 100), failingAt: 20,
                                   beforeFailing: { gated.waitUntilInStep() }, thread: shared)
        let channels = (0..<2).map { _ in Channel(capacity: 1) }
        let healthy = channels.map { CountingEdge(count: 300, channel: $0, thread: shared) }
        let failed = Task { try await scheduler.run([failing, gated]) }
        let succeeded = Task { try await scheduler.run(healthy) }
        await failing.waitUntilFailed()
        for channel in channels { Self.drain(channel, count: 299, wakes: 1) }
        try await succeeded.value
        for channel in channels {
            channel.takeRest()
            #expect(channel.taken == Array(0..<300), "the other output ran to its end beside the failed one")
        }
        gated.open()
        await #expect(throws: MediaError.self) { try await failed.value }
    }

    @Test func edgesEndingAloneEndTheRun() async throws {
        let channels = (0..<3).map { _ in Channel(capacity: 1000) }
        let edges = channels.map { CountingEdge(count: 50, channel: $0) }
        try await GraphScheduler().run(edges)
        for channel in channels {
            channel.takeRest()
            #expect(channel.taken == Array(0..<50))
        }
    }
}

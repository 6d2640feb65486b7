import Foundation
import Testing
@testable import VAFoundation

/// The export's lane pacing: a lane ahead of the slowest by more than the window waits, the
/// slowest never does, a finished lane stops holding the others, cancellation ends a wait.
@Suite struct LanePacerTests {
    static let half = MediaTime(value: 1, timescale: 2)

    static func seconds(_ s: Double) -> MediaTime { MediaTime(seconds: s, preferredTimescale: 1000) }

    /// Starts `body`; after 100 ms, whether it is still waiting (a busy machine may not have
    /// started it yet, which reads as waiting too: the completion checks are the real test).
    static func isStillWaiting(_ body: @escaping @Sendable () async throws -> Void) async throws -> (Bool, Task<Void, any Error>) {
        final class Flag: Sendable { let isSet = Locked(false) }
        let returned = Flag()
        let task = Task {
            try await body()
            returned.isSet.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(100))
        return (!returned.isSet.withLock { $0 }, task)
    }

    @Test func aLaneWithinTheWindowGoesAndOneBeyondItWaitsForTheSlowest() async throws {
        let pacer = LanePacer(lanes: 2, start: .zero, window: Self.half)
        pacer.advance(0, to: Self.seconds(0.4))
        try await pacer.waitForTurn(0)
        pacer.advance(0, to: Self.seconds(0.9))
        try await pacer.waitForTurn(1)
        let (waiting, task) = try await Self.isStillWaiting { try await pacer.waitForTurn(0) }
        #expect(waiting, "0.9 s is more than 0.5 s ahead of the other lane at 0")
        pacer.advance(1, to: Self.seconds(0.5))
        try await task.value
        #expect(pacer.advance(1, to: Self.seconds(0.5)) == Self.seconds(0.5), "the position every lane reached")
    }

    @Test func aFinishedLaneNoLongerHoldsTheOthers() async throws {
        let pacer = LanePacer(lanes: 2, start: .zero, window: Self.half)
        pacer.advance(0, to: Self.seconds(3))
        let (waiting, task) = try await Self.isStillWaiting { try await pacer.waitForTurn(0) }
        #expect(waiting)
        pacer.finish(1)
        try await task.value
    }

    @Test func cancellingAWaitingLaneEndsItsWait() async throws {
        let pacer = LanePacer(lanes: 2, start: .zero, window: Self.half)
        pacer.advance(0, to: Self.seconds(3))
        let (waiting, task) = try await Self.isStillWaiting { try await pacer.waitForTurn(0) }
        #expect(waiting)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}

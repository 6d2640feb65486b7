#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import MediaCore
import Testing

struct LockedTests {
    @Test func incrementsFromManyThreadsAllCount() {
        let counter = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { counter.withLock { $0 += 1 } }
        }
        #expect(counter.withLock { $0 } == 80_000)
    }

    @Test func withLockReturnsAndRethrowsWhatItsBodyDoes() {
        struct Refused: Error, Equatable {}
        let names = Locked(["a"])
        #expect(names.withLock { $0.append("b"); return $0.count } == 2)
        #expect(throws: Refused.self) { try names.withLock { _ throws(Refused) in throw Refused() } }
        #expect(names.withLock { $0 } == ["a", "b"])
    }

    @Test func aContinuationResumedOnAQueueHandsItsValueOver() async {
        let queue = DispatchQueue(label: "LockedTests")
        for i in 0..<100 {
            let value = await withLockedContinuation { continuation in
                queue.async { continuation.resume(returning: i) }
            }
            #expect(value == i)
        }
    }

    @Test func aThrowingContinuationHandsTheErrorOver() async {
        struct Failed: Error {}
        await #expect(throws: Failed.self) {
            try await withLockedThrowingContinuation { (continuation: LockedContinuation<Int, any Error>) in
                DispatchQueue.global().async { continuation.resume(throwing: Failed()) }
            }
        }
    }
}

/// The one primitive threads block on: a value behind a lock, with a condition.
struct ConditionLockedTests {
    @Test func aWaiterSleepsUntilAnotherThreadMakesItsConditionTrue() {
        let queue = ConditionLocked<[Int]>([])
        DispatchQueue.global().async {
            for i in 0..<100 { queue.withLockWakingWaiters { $0.append(i) } }
        }
        let all = queue.withLock(when: { $0.count == 100 }) { $0 }
        #expect(all == Array(0..<100))
    }

    @Test func aTimedWaitEndsAtItsDeadlineWhenNothingComes() {
        let flag = ConditionLocked(false)
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let deadline = timespec(tv_sec: now.tv_sec + (now.tv_nsec >= 950_000_000 ? 1 : 0),
                                tv_nsec: (now.tv_nsec + 50_000_000) % 1_000_000_000)
        #expect(flag.withLock(when: { $0 }, deadline: deadline) { _, ready in ready } == false)
        flag.withLockWakingWaiters { $0 = true }
        #expect(flag.withLock(when: { $0 }, deadline: deadline) { _, ready in ready } == true, "ready at once, deadline or not")
    }
}

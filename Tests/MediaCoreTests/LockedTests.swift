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

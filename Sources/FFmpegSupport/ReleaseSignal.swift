#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import MediaCore
import Synchronization

/// Wakes whoever waits for a pooled buffer when one comes back, so pools never poll.
///
/// A pool calls `signal()` from its release callback (any thread, often inside FFmpeg).
/// Threads wait with `wait(until:)` on a condition variable; tasks wait with `next(deadline:)`,
/// whose continuation the next signal, the deadline or cancellation resumes. A waiter checks
/// the pool, reads `generation`, checks again and only then waits for a later generation, so
/// a release between its check and its wait is never missed.
final class ReleaseSignal: Sendable {
    /// Releases signalled so far: waiting threads sleep on its condition.
    private let count = ConditionLocked<UInt64>(0)
    private let waiters = Locked<[Int: LockedContinuation<Bool, Never>]>([:])
    private let nextWaiter = Atomic<Int>(0)

    /// How many releases were signalled so far.
    var generation: UInt64 { count.withLock { $0 } }

    /// A buffer came back: wake every waiting thread and task.
    func signal() {
        count.withLockWakingWaiters { $0 &+= 1 }
        let woken = waiters.withLock { w -> [LockedContinuation<Bool, Never>] in
            defer { w = [:] }
            return Array(w.values)
        }
        for waiter in woken { waiter.resume(returning: true) }
    }

    /// Blocks the calling thread until a release after `seen`, or the deadline (monotonic
    /// seconds); false when the deadline passed first.
    func wait(after seen: UInt64, until deadline: timespec) -> Bool {
        count.withLock(when: { $0 != seen }, deadline: deadline) { _, released in released }
    }

    /// Suspends the task until a release after `seen`, the deadline (then false), or cancellation (false).
    func next(after seen: UInt64, deadline: DispatchTime) async -> Bool {
        let id = nextWaiter.add(1, ordering: .relaxed).newValue
        return await withTaskCancellationHandler {
            await withLockedContinuation { (c: LockedContinuation<Bool, Never>) in
                let parked = waiters.withLock { w -> Bool in
                    // Checked under the waiters' lock: a signal or cancellation after it finds this waiter parked.
                    if generation != seen || Task.isCancelled { return false }
                    w[id] = c
                    return true
                }
                guard parked else {
                    c.resume(returning: generation != seen)
                    return
                }
                DispatchQueue.global().asyncAfter(deadline: deadline) { [weak self] in self?.resume(id, returning: false) }
            }
        } onCancel: {
            resume(id, returning: false)
        }
    }

    private func resume(_ id: Int, returning value: Bool) {
        waiters.withLock { $0.removeValue(forKey: id) }?.resume(returning: value)
    }

    /// The monotonic-clock time `seconds` from now, for `wait(after:until:)`.
    static func deadline(in seconds: Double) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanoseconds = Int(now.tv_nsec) + Int((seconds - seconds.rounded(.down)) * 1e9)
        return timespec(tv_sec: now.tv_sec + Int(seconds.rounded(.down)) + nanoseconds / 1_000_000_000,
                        tv_nsec: nanoseconds % 1_000_000_000)
    }
}

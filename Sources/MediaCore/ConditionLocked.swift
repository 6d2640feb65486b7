#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a lock, with a condition that threads sleep on until another thread
/// changes the value: `Locked` plus a `pthread_cond_t`, for threads that must block (a stage
/// thread waiting for jobs, a caller waiting for its job's result, a pool's waiter) and never
/// poll. Timed waits use the monotonic clock. Mutex and condition live on the heap (neither may
/// move once initialised) and are destroyed in deinit.
public final class ConditionLocked<Value>: @unchecked Sendable {
    // @unchecked: `value` is touched only while `mutex` is held (pthread_cond_wait re-takes it before returning), and crosses threads only as `sending`, as in Locked.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var value: Value

    public init(_ initialValue: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        precondition(pthread_cond_init(condition, &attributes) == 0, "pthread_cond_init failed")
        pthread_condattr_destroy(&attributes)
        value = initialValue
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock (not recursive), as `Locked.withLock`.
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` with the lock held, then wakes every thread waiting: for changes a waiter's
    /// `ready` may now accept.
    public func withLockWakingWaiters<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        return try body(&value)
    }

    /// Sleeps until `ready` holds for the value (checked first, then after every wake-up), then
    /// runs `body` with the lock still held.
    public func withLock<Result, E: Error>(when ready: (Value) -> Bool,
                                           _ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready(value) { pthread_cond_wait(condition, mutex) }
        return try body(&value)
    }

    /// Sleeps until `ready` holds or the monotonic clock passes `deadline`, then runs `body` with
    /// the lock held and whether `ready` held.
    public func withLock<Result, E: Error>(when ready: (Value) -> Bool, deadline: timespec,
                                           _ body: (inout sending Value, _ ready: Bool) throws(E) -> sending Result) throws(E) -> sending Result {
        var deadline = deadline
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var isReady = ready(value)
        while !isReady {
            let timedOut = pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT
            isReady = ready(value)
            if timedOut { break }
        }
        return try body(&value, isReady)
    }
}

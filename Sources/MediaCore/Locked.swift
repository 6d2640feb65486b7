#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a lock: `withLock` runs its body with the value while holding the lock,
/// as `Synchronization.Mutex` does. The project's one lock type.
///
/// It exists so that ThreadSanitizer can check the engine. With Swift 6.3.1 on Linux, `Mutex`
/// locks with raw futex system calls, which TSan cannot see, so it reports every access a
/// `Mutex` serialises as a race; `pthread_mutex_lock` and `pthread_mutex_unlock` are
/// intercepted by TSan, which then knows the accesses are ordered. The pthread mutex is
/// allocated on the heap because it must not move once initialised, and is destroyed in deinit.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: `value` is touched only inside `withLock`, while `mutex` is held, as in Mutex.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ initialValue: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed with \(status)")
        value = initialValue
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock, and returns what it returns. The lock
    /// is not recursive: `body` must not call `withLock` on the same `Locked`.
    /// The corresponding C functions are `pthread_mutex_lock` and `pthread_mutex_unlock`.
    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

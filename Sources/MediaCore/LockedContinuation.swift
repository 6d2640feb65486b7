/// A continuation whose result is handed to the awaiting task through a `Locked`, so that
/// ThreadSanitizer sees that what the resuming thread did happens before the task goes on.
/// Made by `withLockedContinuation` and `withLockedThrowingContinuation`; resume it exactly once.
///
/// Why not `CheckedContinuation` alone: with Swift 6.3.1, the runtime tells TSan of a resume
/// only when the task has already suspended. When the resume wins the race with the await
/// (`swift_continuation_await` finds the continuation resumed and goes on inline), the
/// ordering is an atomic inside the uninstrumented concurrency runtime, and TSan reports the
/// task's first reads of what the resumer made (a sample a reader queue decoded, say) as races.
/// The lock's unlock and lock are the edge TSan sees in both cases.
public struct LockedContinuation<T: Sendable, E: Error>: Sendable {
    private let continuation: CheckedContinuation<Void, Never>
    private let result: Locked<Result<T, E>?>

    fileprivate init(_ continuation: CheckedContinuation<Void, Never>, _ result: Locked<Result<T, E>?>) {
        self.continuation = continuation
        self.result = result
    }

    public func resume(with result: Result<T, E>) {
        self.result.withLock { $0 = result }
        continuation.resume()
    }

    public func resume(returning value: T) { resume(with: .success(value)) }

    public func resume(throwing error: E) { resume(with: .failure(error)) }
}

extension LockedContinuation where T == Void {
    public func resume() { resume(with: .success(())) }
}

/// Suspends the task until `body`'s continuation is resumed, and returns the value it was
/// resumed with; `withCheckedContinuation` with the hand-over visible to ThreadSanitizer.
public func withLockedContinuation<T: Sendable>(
    isolation: isolated (any Actor)? = #isolation,
    _ body: (LockedContinuation<T, Never>) -> Void
) async -> T {
    let result = Locked<Result<T, Never>?>(nil)
    await withCheckedContinuation(isolation: isolation) { body(LockedContinuation($0, result)) }
    return result.withLock { $0.take() }!.get()
}

/// Suspends the task until `body`'s continuation is resumed, and returns the value or throws
/// the error it was resumed with; `withCheckedThrowingContinuation` with the hand-over visible
/// to ThreadSanitizer.
public func withLockedThrowingContinuation<T: Sendable>(
    isolation: isolated (any Actor)? = #isolation,
    _ body: (LockedContinuation<T, any Error>) -> Void
) async throws -> T {
    let result = Locked<Result<T, any Error>?>(nil)
    await withCheckedContinuation(isolation: isolation) { body(LockedContinuation($0, result)) }
    return try result.withLock { $0.take() }!.get()
}

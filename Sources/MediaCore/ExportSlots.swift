/// Bounds how many exports run at once (in this process, or on one device); the rest wait
/// in `acquire`, in turn, until a running one calls `release`.
public actor ExportSlots {
    private let limit: Int
    private var running = 0
    private var waiters: [LockedContinuation<Void, Never>] = []

    public init(limit: Int) { self.limit = limit }

    /// Waits for a free slot and takes it; a cancelled wait takes none and throws.
    public func acquire() async throws {
        try Task.checkCancellation()
        if running < limit {
            running += 1
            return
        }
        await withLockedContinuation { waiters.append($0) }
        if Task.isCancelled {
            release()
            throw CancellationError()
        }
    }

    /// Gives a slot back: to the longest waiter, or to the pool.
    public func release() {
        if waiters.isEmpty {
            running = max(0, running - 1)
        } else {
            waiters.removeFirst().resume()
        }
    }
}

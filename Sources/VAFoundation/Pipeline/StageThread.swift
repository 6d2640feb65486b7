import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A stage's own thread: jobs run one after another, in the order given, on one thread that
/// runs nothing else (never Swift's cooperative pool, never a shared dispatch worker). The
/// stage's FFmpeg and VA contexts live on it, and `preconditionIsCurrent()` checks that.
///
/// Keeping a stage on one thread also keeps its allocations in one malloc arena: work hopping
/// between dispatch workers spreads a stage's frames over several arenas, which hold on to
/// the freed memory (peak RSS over a batch).
///
/// The thread waits for jobs on a condition variable (it never polls) and ends once the
/// stage thread is released and its queued jobs have run.
final class StageThread: Sendable {
    private let jobs: JobQueue
    /// The thread's name, for diagnostics ("vaf.writer"); it also names the OS thread, as `top -H`
    /// and `perf` show it, and the codec threads it starts (x264's, libavcodec's) inherit it.
    let name: String

    /// A stage thread named `name`, at most 15 bytes (Linux's limit for a thread's name).
    init(name: String) {
        precondition(name.utf8.count <= 15, "a stage thread's name has at most 15 bytes: \(name)")
        self.name = name
        jobs = JobQueue(threadName: name)
        let context = Unmanaged.passRetained(jobs).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let jobs = Unmanaged<JobQueue>.fromOpaque(context!).takeRetainedValue()
            jobs.run()
            return nil
        }, context)
        precondition(created == 0, "cannot start the \(name) thread: pthread_create returned \(created)")
        pthread_detach(thread)
        jobs.setThread(thread)
    }

    deinit { jobs.close() }

    /// Whether the caller runs on this stage's thread.
    var isCurrent: Bool { jobs.isCurrentThread }

    /// Traps unless called on this stage's thread: the check behind every confined context.
    func preconditionIsCurrent(file: StaticString = #fileID, line: UInt = #line) {
        precondition(isCurrent, "\(name): called off the stage's thread", file: file, line: line)
    }

    /// Runs `job` on the stage's thread after the jobs already queued.
    func async(_ job: @escaping @Sendable () -> Void) { jobs.push(job) }

    /// Runs `job` on the stage's thread after the jobs already queued, and waits for it, as
    /// `DispatchQueue.sync` does. Must not be called from the stage's own thread (it would
    /// wait for itself).
    func sync<T, E: Error>(_ job: () throws(E) -> T) throws(E) -> T {
        precondition(!isCurrent, "\(name): sync called on the stage's own thread")
        let result = withoutActuallyEscaping(job) { job -> Result<T, E> in
            let handed = BlockedCaller(job)
            let done = Completion<Result<T, E>>()
            jobs.push { done.complete(handed.run()) }
            return done.wait()
        }
        return try result.get()
    }
}

/// A closure handed to the stage's thread by a caller that blocks until it has run. The
/// closure is let go before the caller is woken, as `withoutActuallyEscaping` demands.
// @unchecked: the caller waits in `sync` until the job is done, so nothing it captured is used on two threads at once.
private final class BlockedCaller<T, E: Error>: @unchecked Sendable {
    private var job: (() throws(E) -> T)?

    init(_ job: @escaping () throws(E) -> T) { self.job = job }

    /// Runs the job once and drops it.
    func run() -> Result<T, E> {
        guard let job else { preconditionFailure("a blocked caller's job ran twice") }
        self.job = nil
        return Result { () throws(E) -> T in try job() }
    }
}

/// The job list and the condition the stage's thread sleeps on.
// @unchecked: every stored property is read and written only with `mutex` held.
private final class JobQueue: @unchecked Sendable {
    private let mutex = PThreadMutex()
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var pending: [@Sendable () -> Void] = []
    private var closed = false
    private var thread: pthread_t?
    private let threadName: String

    init(threadName: String) {
        self.threadName = threadName
        condition = .allocate(capacity: 1)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    func setThread(_ thread: pthread_t) { mutex.locked { self.thread = thread } }

    var isCurrentThread: Bool {
        mutex.locked { thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    func push(_ job: @escaping @Sendable () -> Void) {
        mutex.locked {
            precondition(!closed, "a job was queued on a stage thread that has ended")
            pending.append(job)
            pthread_cond_signal(condition)
        }
    }

    func close() {
        mutex.locked {
            closed = true
            pthread_cond_signal(condition)
        }
    }

    /// The thread's body: runs jobs until closed and drained.
    func run() {
        Thread.current.name = threadName
        while true {
            var batch: [(@Sendable () -> Void)?] = mutex.locked {
                while pending.isEmpty && !closed { pthread_cond_wait(condition, mutex.pointer) }
                defer { pending = [] }
                return pending
            }
            if batch.isEmpty { return }
            for index in batch.indices {
                // Taken out before it runs: what a job captured (a picture handed to the writer)
                // goes with it, not when the whole batch is done.
                let job = batch[index].take()
                job?()
            }
        }
    }
}

/// One result handed from the stage's thread to a caller blocked in `sync`.
// @unchecked: `value` is written once and read after, both with `mutex` held, by the caller that made it.
private final class Completion<T>: @unchecked Sendable {
    private let mutex = PThreadMutex()
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var value: T?

    init() {
        condition = .allocate(capacity: 1)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    func complete(_ result: T) {
        mutex.locked {
            value = result
            pthread_cond_signal(condition)
        }
    }

    func wait() -> T {
        mutex.locked {
            while true {
                if let value { return value }
                pthread_cond_wait(condition, mutex.pointer)
            }
        }
    }
}

/// A heap-allocated pthread mutex (it must not move), for the condition variables above.
// @unchecked: the mutex is only used through pthread calls, which synchronise.
private final class PThreadMutex: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        pointer = .allocate(capacity: 1)
        pthread_mutex_init(pointer, nil)
    }

    deinit {
        pthread_mutex_destroy(pointer)
        pointer.deallocate()
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(pointer)
        defer { pthread_mutex_unlock(pointer) }
        return try body()
    }
}

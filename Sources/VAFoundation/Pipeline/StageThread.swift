import Foundation
import MediaCore
import Synchronization
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
    }

    deinit { jobs.close() }

    /// Whether the caller runs on this stage's thread.
    var isCurrent: Bool { jobs.isCurrentThread }

    /// Traps unless called on this stage's thread: the check behind every confined context.
    func preconditionIsCurrent(file: StaticString = #fileID, line: UInt = #line) {
        precondition(isCurrent, "\(name): called off the stage's thread", file: file, line: line)
    }

    /// Runs `job` on the stage's thread after the jobs already queued, then `then` once `job`
    /// and everything it captured are released (a writer books a picture as queued until the
    /// picture is gone, not only encoded).
    func async(_ job: @escaping @Sendable () -> Void, then: (@Sendable () -> Void)? = nil) {
        jobs.push(Job(work: job, then: then))
    }

    /// Runs `job` on the stage's thread after the jobs already queued, and waits for it, as
    /// `DispatchQueue.sync` does. Must not be called from the stage's own thread (it would
    /// wait for itself).
    func sync<T, E: Error>(_ job: () throws(E) -> T) throws(E) -> T {
        precondition(!isCurrent, "\(name): sync called on the stage's own thread")
        let result = withoutActuallyEscaping(job) { job -> Result<T, E> in
            let handed = BlockedCaller(job)
            let done = Completion<Result<T, E>>()
            jobs.push(Job(work: { done.complete(handed.run()) }))
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

/// A job and what runs once it is released.
private struct Job: Sendable {
    let work: @Sendable () -> Void
    var then: (@Sendable () -> Void)? = nil
}

/// The job list the stage's thread sleeps on until a job comes.
private final class JobQueue: Sendable {
    private struct Jobs {
        /// Optional so the thread can take each job out of its batch before running it.
        var pending: [Job?] = []
        var closed = false
    }

    private let jobs = ConditionLocked(Jobs())
    /// The stage's thread (`pthread_t`), stored by the thread itself before it runs any job;
    /// 0 until then. Read without a lock on every confinement check.
    private let thread = Atomic<UInt>(0)
    private let threadName: String

    init(threadName: String) { self.threadName = threadName }

    var isCurrentThread: Bool { thread.load(ordering: .acquiring) == UInt(pthread_self()) }

    func push(_ job: Job) {
        jobs.withLockWakingWaiters {
            precondition(!$0.closed, "a job was queued on a stage thread that has ended")
            $0.pending.append(job)
        }
    }

    func close() { jobs.withLockWakingWaiters { $0.closed = true } }

    /// The thread's body: runs jobs until closed and drained.
    func run() {
        thread.store(UInt(pthread_self()), ordering: .releasing)
        Thread.current.name = threadName
        while true {
            var batch = jobs.withLock(when: { !$0.pending.isEmpty || $0.closed }) { jobs in
                defer { jobs.pending = [] }
                return jobs.pending
            }
            if batch.isEmpty { return }
            for index in batch.indices {
                // Taken out before it runs, and dropped before its `then`: what a job captured
                // (a picture handed to the writer) goes with it, not when the whole batch is done.
                var job = batch[index].take()
                job?.work()
                let then = job?.then
                job = nil
                then?()
            }
        }
    }
}

/// A result made on one thread and waited for, once, on another (a caller blocked in `sync`,
/// a segment opened ahead).
final class Completion<T>: Sendable {
    // @unchecked: the result is made on one thread and read once by the one waiting for it, which made this completion.
    private struct Handed: @unchecked Sendable { var value: T? }
    private let result = ConditionLocked(Handed(value: nil))

    func complete(_ value: T) { result.withLockWakingWaiters { $0 = Handed(value: value) } }

    func wait() -> T {
        result.withLock(when: { $0.value != nil }) { handed in
            guard let value = handed.value.take() else { preconditionFailure("a caller was woken without its job's result") }
            return value
        }
    }
}

import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// The shared state of one writer: its status, the inputs' back-pressure bookkeeping and the
/// thread that owns the encoders and the muxer. `AssetWriter` and its inputs hold it;
/// it holds neither, so dropping the writer mid-write can cancel it.
///
/// Threads: every FFmpeg call runs on `stage`, the writer's own thread (never Swift's
/// cooperative pool). Callers on any thread change `state` under its mutex; appends are
/// handed to `stage` with the sample; async callers wait on continuations resumed whenever
/// something that affects readiness changes.
final class WriterCore: Sendable {
    /// One input's side of the channel into the writer's thread: what it has queued there,
    /// counted in samples and in bytes, each bounded (`PipelineBounds`).
    struct InputState {
        var mediaType: MediaType
        var queued = 0
        var queuedBytes = 0
        /// Presentation time of the latest sample appended.
        var latest = MediaTime.invalid
        var finished = false
        /// The input's device failed; appends fail with this until it is resumed in software.
        var deviceFailure: MediaError?
    }

    /// What an append should do, decided under the lock.
    enum Decision: Sendable {
        case submit(WriterEngine)
        case notReady
        case failed(MediaError)
        /// Something changed while waiting; decide again.
        case retry
    }

    struct State {
        var status = AssetWriter.Status.unknown
        var error: MediaError?
        var engine: WriterEngine?
        /// What the engine left out on the way, kept from it once writing has finished.
        var warnings: [String] = []
        var inputs: [InputState] = []
        var sessionStart = MediaTime.invalid
        /// How far (media time) an input may run ahead of every other unfinished one before it
        /// is not ready: `PipelineBounds.interleavingWindow`, or an export's tighter window.
        var interleavingWindow = PipelineBounds.interleavingWindow
        var waiters: [LockedContinuation<Decision, Never>] = []
        /// Called at the next change, once each: a graph's edges waiting for their input.
        var readinessCallbacks: [@Sendable () -> Void] = []
        /// Counts wake-ups, so a waiter can tell whether something changed since it looked.
        var changes: UInt64 = 0
    }

    /// The writer's thread: the encoders and the muxer live on it.
    let stage: StageThread
    let state = Locked(State())
    let destinationPath: String
    /// Told the written duration each time a packet reaches the file (on the writer's thread).
    let writeObserver = Locked<(@Sendable (Double) -> Void)?>(nil)

    init(destinationPath: String) {
        self.destinationPath = destinationPath
        stage = StageThread(name: "vaf.writer")
    }

    var status: AssetWriter.Status { state.withLock { $0.status } }
    var error: MediaError? { state.withLock { $0.error } }

    // MARK: Inputs and readiness

    func addInput(mediaType: MediaType) -> Int {
        state.withLock { s in
            s.inputs.append(InputState(mediaType: mediaType))
            return s.inputs.count - 1
        }
    }

    func isReady(_ i: Int) -> Bool { state.withLock { Self.ready(i, $0) } }

    private static func ready(_ i: Int, _ s: State) -> Bool {
        guard s.status == .writing, i < s.inputs.count else { return false }
        let input = s.inputs[i]
        guard !input.finished, input.queued < PipelineBounds.writerQueuedSamples(for: input.mediaType),
              input.queued == 0 || input.queuedBytes < PipelineBounds.writerQueuedBytes else { return false }
        guard input.latest.isNumeric else { return true }
        // A subtitle track is sparse: its latest cue may be seconds behind the pictures with
        // nothing missing, so it holds no other input back (the muxer interleaves it as it comes).
        for (j, other) in s.inputs.enumerated() where j != i && !other.finished && other.mediaType != .subtitle {
            let position = other.latest.isNumeric ? other.latest : s.sessionStart
            guard position.isNumeric else { continue }
            if input.latest - position > s.interleavingWindow { return false }
        }
        return true
    }

    /// Decides, under the lock, whether `count` samples of input `i`, the latest at `time`,
    /// may be queued now, and books them if so. A batch is booked whole: the input is not
    /// ready again until it has been written.
    private func decide(_ i: Int, _ time: MediaTime, count: Int, bytes: Int, _ s: inout State) -> Decision {
        guard s.status == .writing, let engine = s.engine else {
            return .failed(s.error ?? MediaError(.invalidState, "cannot append: the writer is \(s.status), not writing", path: destinationPath))
        }
        guard s.sessionStart.isNumeric else {
            return .failed(MediaError(.invalidState, "call startSession(atSourceTime:) before appending", path: destinationPath))
        }
        guard !s.inputs[i].finished else {
            return .failed(MediaError(.invalidState, "input \(i) was marked as finished", path: destinationPath))
        }
        if let failure = s.inputs[i].deviceFailure { return .failed(failure) }
        guard time.isNumeric else {
            return .failed(MediaError(.invalidArgument, "input \(i): the sample's presentation time is not numeric", path: destinationPath))
        }
        guard Self.ready(i, s) else { return .notReady }
        s.inputs[i].queued += count
        s.inputs[i].queuedBytes += bytes
        if !s.inputs[i].latest.isNumeric || time > s.inputs[i].latest { s.inputs[i].latest = time }
        return .submit(engine)
    }

    /// Queues `samples` (in order, as one job) if input `i` is ready; false when it is not
    /// (back-pressure), and nothing is queued.
    func appendImmediately(_ samples: [SampleBuffer], input i: Int) throws(MediaError) -> Bool {
        guard let (time, bytes) = Self.booking(of: samples) else { return true }
        let decision = state.withLock { decide(i, time, count: samples.count, bytes: bytes, &$0) }
        switch decision {
        case .submit(let engine):
            submit(samples, bytes: bytes, input: i, engine: engine)
            return true
        case .notReady, .retry: return false
        case .failed(let error): throw error
        }
    }

    /// What `samples` book of an input: the newest presentation time (invalid when one has
    /// none) and their bytes; nil for no samples.
    private static func booking(of samples: [SampleBuffer]) -> (time: MediaTime, bytes: Int)? {
        guard let newest = samples.map(\.presentationTimeStamp).max() ?? samples.first?.presentationTimeStamp else { return nil }
        let time = samples.contains { !$0.presentationTimeStamp.isNumeric } ? .invalid : newest
        return (time, samples.reduce(0) { $0 + $1.hostByteCount })
    }

    /// Calls `callback` once input `i` may be ready: at once when it is (or never will be:
    /// finished, failed, or the writer stopped), else at the writer's next change. The
    /// callback should try again, and ask again when the input is still not ready.
    func whenReady(_ i: Int, _ callback: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            guard s.status == .writing, i < s.inputs.count, !s.inputs[i].finished, s.inputs[i].deviceFailure == nil,
                  !Self.ready(i, s) else { return true }
            s.readinessCallbacks.append(callback)
            return false
        }
        if now { callback() }
    }

    /// Waits until input `i` is ready, then queues `sample`. A cancelled task stops waiting
    /// and throws `cancelled`.
    func append(_ sample: SampleBuffer, input i: Int) async throws(MediaError) {
        try await append([sample], input: i)
    }

    /// Waits until input `i` is ready, then queues `samples` (in order) as one job for the
    /// writer's thread: copied packets cross threads a batch at a time, not one by one.
    func append(_ samples: [SampleBuffer], input i: Int) async throws(MediaError) {
        guard let (time, bytes) = Self.booking(of: samples) else { return }
        while true {
            if Task.isCancelled { throw MediaError(.cancelled, "input \(i): the appending task was cancelled", path: destinationPath) }
            let decision = await withTaskCancellationHandler {
                await withLockedContinuation { (c: LockedContinuation<Decision, Never>) in
                    let now = state.withLock { s -> Decision? in
                        let d = decide(i, time, count: samples.count, bytes: bytes, &s)
                        // Checked under the lock: a cancellation after it finds this waiter parked.
                        if case .notReady = d, !Task.isCancelled {
                            s.waiters.append(c)
                            return nil
                        }
                        return d
                    }
                    if let now { c.resume(returning: now) }
                }
            } onCancel: {
                wakeWaiters()
            }
            switch decision {
            case .submit(let engine):
                submit(samples, bytes: bytes, input: i, engine: engine)
                return
            case .failed(let error): throw error
            case .notReady, .retry: continue
            }
        }
    }

    /// Waits until input `i` is ready; false once it never will be (finished, or the writer stopped).
    func waitUntilReady(_ i: Int) async -> Bool {
        while true {
            if Task.isCancelled { return false }
            let decision = await withTaskCancellationHandler {
                await withLockedContinuation { (c: LockedContinuation<Decision, Never>) in
                    let now = state.withLock { s -> Decision? in
                        guard s.status == .writing, i < s.inputs.count, !s.inputs[i].finished else {
                            return .failed(MediaError(.invalidState, "input \(i) takes no more samples", path: destinationPath))
                        }
                        if Self.ready(i, s) || Task.isCancelled { return .retry }
                        s.waiters.append(c)
                        return nil
                    }
                    if let now { c.resume(returning: now) }
                }
            } onCancel: {
                wakeWaiters()
            }
            switch decision {
            case .failed: return false
            case .retry where isReady(i): return true
            default: continue
            }
        }
    }

    /// The wake-up count, for `waitForChange(since:)`.
    var changeCount: UInt64 { state.withLock { $0.changes } }

    /// Suspends until something in the writer changed (a sample booked or written, an input
    /// finished, the status) since the count was `seen`, or the task is cancelled.
    func waitForChange(since seen: UInt64) async {
        _ = await withTaskCancellationHandler {
            await withLockedContinuation { (c: LockedContinuation<Decision, Never>) in
                let parked = state.withLock { s -> Bool in
                    // Checked under the lock: a change or cancellation after it finds this waiter parked.
                    guard s.status == .writing, s.changes == seen, !Task.isCancelled else { return false }
                    s.waiters.append(c)
                    return true
                }
                if !parked { c.resume(returning: .retry) }
            }
        } onCancel: {
            wakeWaiters()
        }
    }

    /// Hands booked samples (`bytes` of host memory) to the writer's thread; their booking is
    /// released once they are written. The job lets go of them before it releases the booking,
    /// so the pictures are back in their pools before the appender may hand over more.
    private func submit(_ samples: [SampleBuffer], bytes: Int, input i: Int, engine: WriterEngine) {
        wakeWaiters()
        let count = samples.count
        // The booking is released once the job and the samples it captured are gone, so a
        // picture is back in the reader's pool before the input may take the next one.
        stage.async({ [self] in
            do {
                for sample in samples { try engine.process(sample, input: i) }
            } catch {
                if engine.awaitsResume(i) {
                    // The writer goes on; the input's appender resumes it in software.
                    let failure = error as? MediaError ?? MediaError(.hardwareFailed, "\(error)", path: destinationPath)
                    state.withLock { $0.inputs[i].deviceFailure = failure }
                } else {
                    fail(error, engine: engine)
                }
            }
        }, then: { [self] in
            state.withLock { s in
                s.inputs[i].queued -= count
                s.inputs[i].queuedBytes -= bytes
            }
            wakeWaiters()
        })
    }

    /// The writer's thread and a sink feeding its engine with no booking and no thread hop per
    /// sample: for a stage that reads and writes on that thread (a remux's edge, which steps
    /// there). Work queued before (the session's start and end) runs before the stage's first
    /// step. An error the engine raises through the sink fails the writer (its partial file goes).
    func writerThreadStage() throws(MediaError) -> (stage: StageThread, sink: WriterThreadSink) {
        let engine = try state.withLock { s throws(MediaError) -> WriterEngine in
            guard s.status == .writing, let engine = s.engine, s.sessionStart.isNumeric else {
                throw s.error ?? MediaError(.invalidState, "a writer-thread stage needs a writing writer with a started session; it is \(s.status)", path: destinationPath)
            }
            return engine
        }
        return (stage, WriterThreadSink(core: self, engine: engine))
    }

    /// Resumes input `i` in software after its device failed (or its source's did): see
    /// `WriterEngine.resumeInSoftware`. Returns where the appender must start again.
    func resumeInSoftware(input i: Int) async throws(MediaError) -> (resumeAt: MediaTime, framesKept: Int) {
        let engine = try state.withLock { s throws(MediaError) -> WriterEngine in
            guard s.status == .writing, let engine = s.engine else {
                throw s.error ?? MediaError(.invalidState, "cannot resume: the writer is \(s.status)", path: destinationPath)
            }
            return engine
        }
        let outcome: Result<(resumeAt: MediaTime, framesKept: Int), MediaError> = await withLockedContinuation { c in
            stage.async {
                c.resume(returning: Result { () throws(MediaError) in try engine.resumeInSoftware(input: i) })
            }
        }
        let resumed = try outcome.get()
        state.withLock { s in
            s.inputs[i].deviceFailure = nil
            s.inputs[i].latest = resumed.resumeAt
        }
        wakeWaiters()
        return resumed
    }

    func markFinished(_ i: Int) {
        let engine = state.withLock { s -> WriterEngine? in
            guard i < s.inputs.count, !s.inputs[i].finished else { return nil }
            s.inputs[i].finished = true
            return s.status == .writing ? s.engine : nil
        }
        wakeWaiters()
        guard let engine else { return }
        stage.async { [self] in
            do { try engine.finishInput(i) } catch { fail(error, engine: engine) }
        }
    }

    private func wakeWaiters() {
        let (waiters, callbacks) = state.withLock { s -> ([LockedContinuation<Decision, Never>], [@Sendable () -> Void]) in
            s.changes &+= 1
            defer {
                s.waiters = []
                s.readinessCallbacks = []
            }
            return (s.waiters, s.readinessCallbacks)
        }
        for waiter in waiters { waiter.resume(returning: .retry) }
        for callback in callbacks { callback() }
    }

    // MARK: Lifecycle

    /// Opens the encoders and the temporary file (on the writer's thread, waiting for it).
    func start(_ configuration: WriterConfiguration, inputs: [WriterInputConfiguration]) throws(MediaError) {
        let engine = WriterEngine(configuration: configuration, stage: stage, didWrite: writeObserver.withLock { $0 })
        try state.withLock { s throws(MediaError) in
            guard s.status == .unknown else {
                throw MediaError(.invalidState, "startWriting was already called (the writer is \(s.status))", path: destinationPath)
            }
            s.engine = engine
        }
        let outcome: Result<Void, MediaError> = stage.sync {
            do throws(MediaError) { try engine.open(inputs) } catch {
                engine.abandon()
                return .failure(error)
            }
            return .success(())
        }
        let cancelledWhileOpening = state.withLock { s -> Bool in
            // A cancel that came while the engine opened wins, and leaves the deletion of what
            // the engine created to this thread.
            if s.status == .cancelled { return true }
            switch outcome {
            case .success: s.status = .writing
            case .failure(let error):
                s.status = .failed
                s.error = error
                s.engine = nil
            }
            return false
        }
        if cancelledWhileOpening {
            stage.sync { engine.abandon() }
            throw MediaError(.cancelled, "writing was cancelled while the output was created", path: destinationPath)
        }
        if case .failure(let error) = outcome { throw error }
    }

    /// Refuses before startWriting; records the failure without opening anything.
    func failBeforeStart(_ error: MediaError) {
        state.withLock { s in
            guard s.status == .unknown else { return }
            s.status = .failed
            s.error = error
        }
    }

    /// Media seconds the engine has muxed so far (0 before writing starts).
    var writtenSeconds: Double {
        (state.withLock { $0.engine })?.writtenSeconds ?? 0
    }

    func startSession(at time: MediaTime) throws(MediaError) {
        let engine = try state.withLock { s throws(MediaError) -> WriterEngine in
            guard s.status == .writing, let engine = s.engine else {
                throw MediaError(.invalidState, "startSession needs a writing writer; it is \(s.status)", path: destinationPath)
            }
            guard !s.sessionStart.isValid else {
                throw MediaError(.invalidState, "a session was already started; only one is supported", path: destinationPath)
            }
            guard time.isNumeric else { throw MediaError(.invalidArgument, "the session start time is not numeric", path: destinationPath) }
            s.sessionStart = time
            return engine
        }
        stage.async { engine.startSession(at: time) }
        wakeWaiters()
    }

    /// Queues the end of the segment under way, behind the samples already appended.
    func flushSegment() throws(MediaError) {
        let engine = try state.withLock { s throws(MediaError) -> WriterEngine in
            guard s.status == .writing, let engine = s.engine, s.sessionStart.isNumeric else {
                throw s.error ?? MediaError(.invalidState, "flushSegment needs a started session", path: destinationPath)
            }
            return engine
        }
        stage.async { engine.flushSegment() }
    }

    func endSession(at time: MediaTime) throws(MediaError) {
        let engine = try state.withLock { s throws(MediaError) -> WriterEngine in
            guard s.status == .writing, let engine = s.engine, s.sessionStart.isNumeric else {
                throw MediaError(.invalidState, "endSession needs a started session", path: destinationPath)
            }
            guard time.isNumeric, time >= s.sessionStart else {
                throw MediaError(.invalidArgument, "the session end time must be numeric and not before its start", path: destinationPath)
            }
            return engine
        }
        stage.async { engine.endSession(at: time) }
    }

    /// Marks every input finished, flushes, writes the trailer and moves the file into place.
    func finish() async throws(MediaError) {
        let engine = try state.withLock { s throws(MediaError) -> WriterEngine in
            guard s.status == .writing, let engine = s.engine else {
                throw s.error ?? MediaError(.invalidState, "finishWriting needs a writing writer; it is \(s.status)", path: destinationPath)
            }
            for i in s.inputs.indices { s.inputs[i].finished = true }
            return engine
        }
        wakeWaiters()
        let result: Result<Void, MediaError> = await withLockedContinuation { c in
            stage.async { [self] in
                do throws(MediaError) {
                    try engine.finish()
                    let cancelled = state.withLock { s -> Bool in
                        guard s.status == .writing else { return true }
                        s.status = .completed
                        s.warnings = engine.warnings.withLock { $0 }
                        s.engine = nil
                        return false
                    }
                    // Cancelled while the file was being finished and moved into place: a
                    // cancelled writer leaves no file, so the one just moved there goes too.
                    // (`cancel` waits for this block, so it returns with the file gone.)
                    if cancelled { unlink(destinationPath) }
                    c.resume(returning: cancelled ? .failure(error ?? MediaError(.cancelled, "the writer was cancelled", path: destinationPath)) : .success(()))
                } catch {
                    fail(error, engine: engine)
                    c.resume(returning: .failure(self.error ?? error))
                }
            }
        }
        wakeWaiters()
        try result.get()
    }

    /// Stops writing and deletes the partial output; waits for queued work to stop.
    func cancel() {
        markCancelled()
        // Returns once the partial file is deleted, also when another thread cancelled first.
        stage.sync {}
    }

    /// Cancels without waiting: the status is cancelled when this returns (so a `start` under
    /// way deletes what it created), and the partial file's deletion is queued on the writer's
    /// thread. Callable from any thread, the writer's own included.
    func markCancelled() {
        state.withLock { s in
            guard s.status == .writing || s.status == .unknown else { return }
            // While `start` opens the engine (status unknown), `start` deletes what it created;
            // once writing, the deletion is queued under the lock, so a later cancel's wait
            // comes after it.
            if s.status == .writing, let engine = s.engine { stage.async { engine.abandon() } }
            s.status = .cancelled
            s.engine = nil
        }
        wakeWaiters()
    }

    /// Deletes the partial output and then records the failure (on the writer's thread), so
    /// whoever sees the writer failed finds no file. A cancel meanwhile wins.
    fileprivate func fail(_ error: any Error, engine: WriterEngine) {
        let mediaError = error as? MediaError ?? MediaError(.writeFailed, "\(error)", path: destinationPath)
        guard state.withLock({ $0.status == .writing }) else { return }
        engine.abandon()
        state.withLock { s in
            guard s.status == .writing else { return }
            s.status = .failed
            s.error = mediaError
            s.engine = nil
        }
        wakeWaiters()
    }
}

/// The engine as a writer-thread stage sees it (`WriterCore.runOnWriterThread`). Every call
/// checks that it runs on the writer's thread: the engine's FFmpeg contexts never leave it.
struct WriterThreadSink {
    fileprivate let core: WriterCore
    fileprivate let engine: WriterEngine

    /// False once the writer was cancelled or failed: the stage should stop.
    var isWriting: Bool { core.status == .writing }

    /// Encodes or copies `sample` into input `input` at once; an error fails the writer.
    func write(_ sample: SampleBuffer, input: Int) throws(MediaError) {
        try onEngine { engine throws(MediaError) in try engine.process(sample, input: input) }
    }

    /// Takes copied input `input`'s stream from `sample`, its first: see `WriterEngine.prepareCopy`.
    func prepareCopy(from sample: SampleBuffer, input: Int) throws(MediaError) {
        try onEngine { engine throws(MediaError) in try engine.prepareCopy(from: sample, input: input) }
    }

    /// Input `input` takes no sample decoded or shown before `time` (positive infinity: no
    /// more samples): see `WriterEngine.expectNoSample`.
    func expectNoSample(input: Int, before time: MediaTime) throws(MediaError) {
        try onEngine { engine throws(MediaError) in try engine.expectNoSample(input: input, before: time) }
    }

    /// Runs `body` on the engine, on the writer's thread; its error fails the writer.
    private func onEngine(_ body: (WriterEngine) throws(MediaError) -> Void) throws(MediaError) {
        core.stage.preconditionIsCurrent()
        do { try body(engine) } catch {
            core.fail(error, engine: engine)
            throw core.error ?? error
        }
    }

    /// Ends the session at `time`, as `AssetWriter.endSession(atSourceTime:)` does.
    func endSession(at time: MediaTime) {
        core.stage.preconditionIsCurrent()
        engine.endSession(at: time)
    }
}

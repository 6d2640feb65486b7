import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import MediaCore
@testable import VAFoundation

/// The stage thread every FFmpeg context of a stage is confined to, and the bounded channel
/// into the writer's thread.
struct StageThreadTests {
    /// Stands for a picture a job captures: says when it is released.
    final class Picture: Sendable {
        let released: Locked<Bool>
        init(released: Locked<Bool>) { self.released = released }
        deinit { released.withLock { $0 = true } }
    }

    @Test func jobsRunInOrderOnOneThreadThatIsTheStagesOwn() {
        let stage = StageThread(name: "test.stage")
        #expect(!stage.isCurrent, "the test's thread is not the stage's")
        let seen = Locked<[Int]>([])
        let threads = Locked<Set<pthread_t>>([])
        let onStage = Locked<[Bool]>([])
        for i in 0..<200 {
            stage.async {
                seen.withLock { $0.append(i) }
                threads.withLock { _ = $0.insert(pthread_self()) }
                onStage.withLock { $0.append(stage.isCurrent) }
            }
        }
        // `sync` queues behind them, so it returns after all 200 ran.
        let last = stage.sync { seen.withLock { $0.last } }
        #expect(last == 199)
        #expect(seen.withLock { $0 } == Array(0..<200), "jobs run in the order given")
        #expect(threads.withLock { $0.count } == 1, "every job ran on one thread")
        #expect(onStage.withLock { $0.allSatisfy { $0 } }, "isCurrent holds on the stage's thread")
    }

    @Test func theOSThreadCarriesTheStagesName() throws {
        // What `top -H` and `perf` show, and what the codec threads the stage starts inherit.
        let stage = StageThread(name: "vaf.test-name")
        let name = try stage.sync { try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) }
        #expect(name.trimmingCharacters(in: .newlines) == "vaf.test-name")
    }

    @Test func syncReturnsTheJobsValueAndRethrowsItsError() {
        let stage = StageThread(name: "test.sync")
        #expect(stage.sync { 6 * 7 } == 42)
        let error = MediaError(.ioError, "from the stage")
        #expect(throws: MediaError.self) {
            try stage.sync { () throws(MediaError) -> Int in throw error }
        }
        // A non-Sendable value made on the stage comes back whole.
        final class Box { var items: [Int] = [] }
        let box = stage.sync { () -> Box in
            let b = Box()
            b.items = [1, 2, 3]
            return b
        }
        #expect(box.items == [1, 2, 3])
    }

    /// What a job captured goes when that job has run, not when the jobs queued with it have:
    /// the writer's thread would otherwise hold a picture it encoded while it encodes the next.
    @Test func whatAJobCapturedIsReleasedBeforeTheNextJobRuns() {
        let stage = StageThread(name: "test.capture")
        let gate = DispatchSemaphore(value: 0)
        let released = Locked(false)
        let releasedBeforeNextJob = Locked<Bool?>(nil)
        stage.async { gate.wait() }
        do {
            let picture = Picture(released: released)
            stage.async { _ = picture }
        }
        // Queued with the first job while the thread waits at the gate: one batch.
        stage.async { releasedBeforeNextJob.withLock { $0 = released.withLock { $0 } } }
        gate.signal()
        stage.sync {}
        #expect(releasedBeforeNextJob.withLock { $0 } == true, "the first job's capture was gone when the second job ran")
    }

    @Test func aJobsThenRunsOnceWhatTheJobCapturedIsReleased() {
        let stage = StageThread(name: "test.then")
        let released = Locked(false)
        let seenByJob = Locked<Bool?>(nil), seenByThen = Locked<Bool?>(nil)
        let onStage = Locked(false)
        // The stage waits until this thread has let go of its own reference to the picture, so
        // the job's capture is the last one whatever the threads' speeds (TSan slows this one).
        let gate = DispatchSemaphore(value: 0)
        stage.async { gate.wait() }
        do {
            let picture = Picture(released: released)
            stage.async({ seenByJob.withLock { $0 = picture.released.withLock { $0 } } },
                        then: {
                            seenByThen.withLock { $0 = released.withLock { $0 } }
                            onStage.withLock { $0 = stage.isCurrent }
                        })
        }
        gate.signal()
        stage.sync {}
        #expect(seenByJob.withLock { $0 } == false, "the job ran with its picture")
        #expect(seenByThen.withLock { $0 } == true, "the picture was gone when `then` ran")
        #expect(onStage.withLock { $0 }, "`then` runs on the stage's thread")
    }

    @Test func jobsQueuedBeforeTheStageIsReleasedStillRun() {
        let ran = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        do {
            let stage = StageThread(name: "test.release")
            stage.async { gate.wait() }
            for _ in 0..<3 { stage.async { ran.signal() } }
        }
        // The stage object is gone; its thread drains what was queued, then ends.
        gate.signal()
        for _ in 0..<3 {
            #expect(ran.wait(timeout: .now() + 10) == .success, "a job queued before release ran")
        }
    }

    /// The writer's inputs are bounded in samples and in bytes (`PipelineBounds`).
    @Test func writerInputsAreBoundedInSamplesAndBytes() {
        let core = WriterCore(destinationPath: "/nonexistent/bounds.mp4")
        let video = core.addInput(mediaType: .video), audio = core.addInput(mediaType: .audio)
        core.state.withLock { $0.status = .writing }
        #expect(core.isReady(video) && core.isReady(audio))

        core.state.withLock { $0.inputs[video].queued = PipelineBounds.writerQueuedPictures - 1 }
        #expect(core.isReady(video), "below the picture bound")
        core.state.withLock { $0.inputs[video].queued = PipelineBounds.writerQueuedPictures }
        #expect(!core.isReady(video), "at the picture bound")

        core.state.withLock { $0.inputs[audio].queued = PipelineBounds.writerQueuedPictures }
        #expect(core.isReady(audio), "audio has its own, larger bound")
        core.state.withLock { s in
            s.inputs[audio].queued = 1
            s.inputs[audio].queuedBytes = PipelineBounds.writerQueuedBytes
        }
        #expect(!core.isReady(audio), "one sample over the byte bound holds the input")
        core.state.withLock { s in
            s.inputs[audio].queued = 0
            s.inputs[audio].queuedBytes = 0
        }
        #expect(core.isReady(audio), "an empty input always takes a sample, however large")
    }
}

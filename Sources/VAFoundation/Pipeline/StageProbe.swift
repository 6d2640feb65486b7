import FFmpegSupport
import MediaCore

/// The export's embedded test seam: attached to an `ExportSession`, it is told of every step
/// of every stage, on that stage's own thread, and may fail the step (by throwing) or slow it
/// (by blocking, as a slow encoder or disk would). Tests use it to fail, cancel and starve the
/// pipeline at each point deterministically; an export without one pays nothing.
final class StageProbe: Sendable {
    /// A point in the pipeline, told as it is reached.
    enum Step: Sendable, Equatable {
        /// The reader opened the file and prepared its decoders (on the export's task).
        case sourceOpened
        /// The writer created its temporary file, before opening the encoders (on the writer's thread).
        case outputCreated
        /// A reader output produced its `index`th sample (0-based), on the output's thread.
        case sampleRead(MediaType, index: Int, time: MediaTime)
        /// A decode shared by `branches` outputs of a multi-output export read its `index`th
        /// sample (0-based), once for all of them, on the thread of the output that asked first.
        case sharedSampleRead(MediaType, index: Int, branches: Int)
        /// The writer's engine took its `index`th sample of an input, to encode or copy, on
        /// the writer's thread.
        case sampleWritten(MediaType, index: Int, time: MediaTime)
        /// An encoder opened for `MediaType` media: a writer's, on its thread, or the one a
        /// multi-output export shares, on the export's task.
        case encoderOpened(MediaType)
        /// The writer is about to write the trailer and move the file into place.
        case finishing
    }

    private let onStep: @Sendable (Step) throws(MediaError) -> Void
    private let state = Locked(State())

    private struct State {
        var stages: [WeakStage] = []
        var peakQueuedPackets = 0
        var peakHeldAudio = (packets: 0, span: MediaTime.zero)
        var peakMuxerQueue = (packets: 0, bytes: 0, span: MediaTime.zero, outOfOrder: 0)
        var fanOutReadsParked = 0
        var fanOutReadsBlocked = 0
    }

    /// Weakly held stage state (a demuxer session, a writer engine), to see what outlives an export.
    private struct WeakStage: @unchecked Sendable {
        // @unchecked: only compared with nil, never used, and read under the probe's mutex.
        weak var object: AnyObject?
    }

    init(_ onStep: @escaping @Sendable (Step) throws(MediaError) -> Void) {
        self.onStep = onStep
    }

    func step(_ step: Step) throws(MediaError) { try onStep(step) }

    /// Remembers a stage's state object, weakly.
    func attach(_ stage: AnyObject) {
        state.withLock { $0.stages.append(WeakStage(object: stage)) }
    }

    /// Stage state objects still alive: none once an export is over and its session is gone.
    var liveStages: Int { state.withLock { $0.stages.filter { $0.object != nil }.count } }
    /// How many stage objects were attached in all.
    var attachedStages: Int { state.withLock { $0.stages.count } }

    /// Reads of a fan-out's branch that an edge was parked for (the fan-out woke it), and
    /// reads that blocked their thread waiting for another branch (none should, from an edge).
    var fanOutReadsParked: Int { state.withLock { $0.fanOutReadsParked } }
    var fanOutReadsBlocked: Int { state.withLock { $0.fanOutReadsBlocked } }
    func countFanOutRead(parked: Bool) {
        state.withLock { if parked { $0.fanOutReadsParked += 1 } else { $0.fanOutReadsBlocked += 1 } }
    }

    /// The most encoded audio the writer held back at once (so that `endSession` could still
    /// trim it): packets, and the time from the oldest to the newest.
    var peakHeldAudio: (packets: Int, span: MediaTime) { state.withLock { $0.peakHeldAudio } }
    func countHeldAudio(_ held: [Packet], timeBase: Rational) {
        guard let first = held.first?.pts, let last = held.last?.pts else { return }
        let span = timeBase.time(ofTicks: last - first)
        state.withLock {
            $0.peakHeldAudio = (max($0.peakHeldAudio.packets, held.count), max($0.peakHeldAudio.span, span))
        }
    }

    /// The most the muxer's interleaving queue held at once: packets, bytes, and the time from
    /// its earliest decode time to its latest; and the packets it wrote out of order.
    var peakMuxerQueue: (packets: Int, bytes: Int, span: MediaTime, outOfOrder: Int) { state.withLock { $0.peakMuxerQueue } }
    func countMuxerQueue(_ queue: (packets: Int, bytes: Int, span: MediaTime, outOfOrder: Int)) {
        state.withLock {
            let peak = $0.peakMuxerQueue
            $0.peakMuxerQueue = (max(peak.packets, queue.packets), max(peak.bytes, queue.bytes), max(peak.span, queue.span),
                                 max(peak.outOfOrder, queue.outOfOrder))
        }
    }

    /// The most compressed packets the demuxer held queued for outputs at once.
    var peakQueuedPackets: Int {
        get { state.withLock { $0.peakQueuedPackets } }
        set { state.withLock { $0.peakQueuedPackets = max($0.peakQueuedPackets, newValue) } }
    }
}

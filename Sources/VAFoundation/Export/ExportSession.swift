import FFmpegSupport
import HardwareAcceleration
import Foundation

/// Exports an asset to a new file with a preset (`AVAssetExportSession`): passthrough (remux)
/// or re-encode, trimmed to a time range, with a frame-rate policy, overrides of the preset's
/// codec, size and bit rates, an audio mix, and progress that counts the final mux step.
///
/// ```swift
/// let session = ExportSession(asset: asset, preset: .preset1280x720)
/// session.timeRange = MediaTimeRange(start: .zero, duration: MediaTime(value: 10, timescale: 1))
/// let result = try await session.export(to: url, as: .mp4)
/// ```
public final class ExportSession: Sendable {
    /// `AVAssetExportSession.Status`.
    public enum Status: String, Sendable { case unknown, waiting, exporting, completed, failed, cancelled }

    /// What `states(updateInterval:)` reports.
    public enum State: Sendable, Equatable {
        case pending
        /// Queued behind other exports (`maximumConcurrentExports`).
        case waiting
        /// Running; progress 0…1, the final mux step included.
        case exporting(progress: Double)
    }

    public let asset: Asset
    public let preset: ExportPreset
    private let probe = Locked<StageProbe?>(nil)
    public var presetName: String { preset.name }

    /// What the public properties set. An export reads them once, as it begins: the planner,
    /// the graph builder, the runner and every retry work from that snapshot.
    struct Settings {
        var timeRange = MediaTimeRange(start: .zero, duration: .positiveInfinity)
        var fileLengthLimit: Int64?
        var shouldOptimizeForNetworkUse = true
        var metadata: [MetadataItem]?
        var audioMix: AudioMix?
        var audioSelection: TrackSelection?
        var subtitleSelection = TrackSelection.all
        var subtitlesBurnedIn: TrackSelection?
        var loudnessTarget: LoudnessTarget?
        var audioTimePitchAlgorithm = AudioTimePitchAlgorithm.spectral
        var videoComposition: VideoComposition?
        var customVideoCompositor: (any VideoCompositing)?
        var frameRatePolicy: FrameRatePolicy = .automatic
        var videoCodec: VideoCodec?
        var videoBitRate: Int?
        var videoQuality: Double?
        var encoderSpeed: EncoderSpeed?
        var capsBitRatesAtSource = true
        var audioCodec: AudioCodec?
        var audioBitRate: Int?
        var outputSize: Size?
        var overwritesExistingFile = false
        var hardwarePolicy: HardwarePolicy = .auto
        var hardwareDeviceName: String?
        var hardwareDevice: VADevice?
        /// The shared decodes this session reads as one output of a multi-output export.
        var fanOut: FanOutBranch?
        /// The scheduler of the multi-output export this session is an output of: one for the
        /// whole ladder, each output's attempt a group of its edges. nil: the attempt has its own.
        var scheduler: GraphScheduler?
        /// This session is an output of a multi-output export, which holds one session slot of
        /// the device for all its outputs: waiting for slots of their own, beside outputs that
        /// wait for them, they could wait for ever.
        var holdsParentsDeviceSlot = false
        /// This session writes one rendition of a streaming package: segments, not a file.
        var rendition: RenditionOutput?
    }

    struct Run {
        var status: Status = .unknown
        var error: MediaError?
        var progress: Double = 0
        var reader: AssetReader?
        var writer: AssetWriter?
        var cancelled = false
        /// The attempt under way puts a stage on the device (so a failure restarts in software).
        var usesDevice = false
        /// Readers opened to resume a video track in software after its device failed.
        var resumedReaders: [AssetReader] = []
        /// Readers beside the main one: the subtitle tracks' own, and a loudness target's
        /// first pass while it measures; cancelled with the export.
        var sideReaders: [AssetReader] = []
        /// Where the video went on in software, and why.
        var resumption: (at: MediaTime, framesKept: Int, cause: String)?
        /// The attempt reads the source from its start instead of seeking to the range's start.
        var readsFromFileStart = false
        /// Not one track this export writes could be read: a multi-output export leaves this
        /// output out while another of its outputs has something to write.
        var readsNothing = false
        /// One session per output of a multi-output export (`export(to: [Output])`).
        var branches: [ExportSession] = []
        /// Told when the progress rises: a multi-output export follows its outputs' progress.
        var progressObserver: (@Sendable () -> Void)?
    }

    let settings = Locked(Settings())
    let run = Locked(Run())

    public init(asset: Asset, preset: ExportPreset) {
        self.asset = asset
        self.preset = preset
    }

    /// nil for an unknown preset name (case-insensitive; "1280x720", "AVAssetExportPresetHEVC1920x1080").
    public convenience init?(asset: Asset, presetName: String) {
        guard let preset = ExportPreset(named: presetName) else { return nil }
        self.init(asset: asset, preset: preset)
    }

    // MARK: Settings

    /// The part of the asset to export (default: all). Re-encoding is frame-accurate; passthrough
    /// starts at the preceding keyframe and an edit list makes playback start exactly here.
    public var timeRange: MediaTimeRange {
        get { settings.withLock { $0.timeRange } }
        set { settings.withLock { $0.timeRange = newValue } }
    }
    /// Stop cleanly, with a valid file, at this many bytes. A passthrough export never exceeds
    /// it (room is kept for the file's index); a re-encoding one counts its media at the target
    /// bit rates, so it may exceed it by up to a second of media.
    public var fileLengthLimit: Int64? {
        get { settings.withLock { $0.fileLengthLimit } }
        set { settings.withLock { $0.fileLengthLimit = newValue } }
    }
    /// Put the movie header first ("fast start") so playback can begin while downloading. Default true.
    public var shouldOptimizeForNetworkUse: Bool {
        get { settings.withLock { $0.shouldOptimizeForNetworkUse } }
        set { settings.withLock { $0.shouldOptimizeForNetworkUse = newValue } }
    }
    /// Metadata for the output; nil carries the source's over.
    public var metadata: [MetadataItem]? {
        get { settings.withLock { $0.metadata } }
        set { settings.withLock { $0.metadata = newValue } }
    }
    /// Volumes (and ramps) per audio track; the tracks it names are mixed. Ignored by passthrough.
    public var audioMix: AudioMix? {
        get { settings.withLock { $0.audioMix } }
        set { settings.withLock { $0.audioMix = newValue } }
    }
    /// Which audio tracks are kept, each as a track of its own with its language, title and
    /// default flag. Nil (the default): passthrough keeps every track, an encoding preset the
    /// default one (or a camera's two mono tracks as one stereo track). An `audioMix` (which
    /// mixes the tracks it names into one) wins over it.
    public var audioSelection: TrackSelection? {
        get { settings.withLock { $0.audioSelection } }
        set { settings.withLock { $0.audioSelection = newValue } }
    }
    /// Which subtitle tracks are kept (default `.all`): copied where the file type holds their
    /// format, converted between text formats where it holds another (SubRip to MP4's
    /// mov_text), and left out with a warning where it holds none (bitmaps in MP4).
    public var subtitleSelection: TrackSelection {
        get { settings.withLock { $0.subtitleSelection } }
        set { settings.withLock { $0.subtitleSelection = newValue } }
    }
    /// The subtitle track drawn into the picture, as HandBrake's burn-in does: the first the
    /// selection names (`.trackIDs([3])`, `.languages(["eng"])`); it is then not kept as a track
    /// of its own. Text (SubRip, ASS, WebVTT, mov_text) is drawn by libass, bitmaps (PGS, VobSub,
    /// DVB) as their decoder gives them, where ffmpeg's `overlay` would put them, in the picture's
    /// own colour matrix. The pictures
    /// are drawn on in host memory (a device still decodes and encodes). Not for passthrough
    /// or compositions.
    public var subtitlesBurnedIn: TrackSelection? {
        get { settings.withLock { $0.subtitlesBurnedIn } }
        set { settings.withLock { $0.subtitlesBurnedIn = newValue } }
    }
    /// Normalise each audio track written to this loudness (`.ebuR128`: −23 LUFS, at most
    /// −1 dBTP): a first pass measures it (libavfilter's `ebur128`), the export applies one
    /// linear gain, the largest that reaches the target without the true peak passing its
    /// limit, and the result reports both passes. Nil leaves the level alone.
    public var loudnessTarget: LoudnessTarget? {
        get { settings.withLock { $0.loudnessTarget } }
        set { settings.withLock { $0.loudnessTarget = newValue } }
    }
    /// How a composition's audio played faster or slower is stretched (default `.spectral`:
    /// pitch kept; `.varispeed` lets the pitch follow the speed).
    public var audioTimePitchAlgorithm: AudioTimePitchAlgorithm {
        get { settings.withLock { $0.audioTimePitchAlgorithm } }
        set { settings.withLock { $0.audioTimePitchAlgorithm = newValue } }
    }
    /// Composites the video tracks (`videoComposition`): its render size and frame duration
    /// become the source's, its instructions draw each picture. Nil exports the first video
    /// track as it is. Ignored by passthrough.
    public var videoComposition: VideoComposition? {
        get { settings.withLock { $0.videoComposition } }
        set { settings.withLock { $0.videoComposition = newValue } }
    }
    /// Draws the video composition's pictures instead of `SoftwareCompositor`.
    public var customVideoCompositor: (any VideoCompositing)? {
        get { settings.withLock { $0.customVideoCompositor } }
        set { settings.withLock { $0.customVideoCompositor = newValue } }
    }
    /// Keep the source's frame timing, or convert to a constant rate. Ignored by passthrough.
    public var frameRatePolicy: FrameRatePolicy {
        get { settings.withLock { $0.frameRatePolicy } }
        set { settings.withLock { $0.frameRatePolicy = newValue } }
    }
    /// Replaces the preset's video codec.
    public var videoCodec: VideoCodec? {
        get { settings.withLock { $0.videoCodec } }
        set { settings.withLock { $0.videoCodec = newValue } }
    }
    /// Replaces the preset's table bit rate (bits per second), the cap at the source's rate
    /// and `videoQuality`.
    public var videoBitRate: Int? {
        get { settings.withLock { $0.videoBitRate } }
        set { settings.withLock { $0.videoBitRate = newValue } }
    }
    /// Encode the video at this constant quality (0…1; `QualityScale` gives each encoder's
    /// CRF or VA-API level) instead of at a bit rate. While `capsBitRatesAtSource`, the rate the
    /// source needs stays the ceiling, so the output stays no larger than the source.
    public var videoQuality: Double? {
        get { settings.withLock { $0.videoQuality } }
        set { settings.withLock { $0.videoQuality = newValue } }
    }
    /// Encoding time traded for compression (the encoder's preset or VA-API quality level);
    /// nil keeps the encoder's default.
    public var encoderSpeed: EncoderSpeed? {
        get { settings.withLock { $0.encoderSpeed } }
        set { settings.withLock { $0.encoderSpeed = newValue } }
    }
    /// Cap the preset's table bit rates at what the source needs (default true): the video at
    /// the source's own rate scaled to the output's pixels, frame rate and codec, the audio at
    /// a lossy source's rate. The policy is `OutputSettingsAssistant.sourceMatchedVideoBitRate`'s.
    public var capsBitRatesAtSource: Bool {
        get { settings.withLock { $0.capsBitRatesAtSource } }
        set { settings.withLock { $0.capsBitRatesAtSource = newValue } }
    }
    /// Replaces the preset's audio codec.
    public var audioCodec: AudioCodec? {
        get { settings.withLock { $0.audioCodec } }
        set { settings.withLock { $0.audioCodec = newValue } }
    }
    public var audioBitRate: Int? {
        get { settings.withLock { $0.audioBitRate } }
        set { settings.withLock { $0.audioBitRate = newValue } }
    }
    /// Fit the output into this box instead of the preset's (never upscaled, even).
    public var outputSize: Size? {
        get { settings.withLock { $0.outputSize } }
        set { settings.withLock { $0.outputSize = newValue } }
    }
    /// Replace an existing file at the destination; otherwise its existence is an error.
    public var overwritesExistingFile: Bool {
        get { settings.withLock { $0.overwritesExistingFile } }
        set { settings.withLock { $0.overwritesExistingFile = newValue } }
    }

    /// Whether the video may use a VA-API device (default `.auto`: decode, scale and encode on
    /// the device where its probe says it can, software for the rest).
    public var hardwarePolicy: HardwarePolicy {
        get { settings.withLock { $0.hardwarePolicy } }
        set { settings.withLock { $0.hardwarePolicy = newValue } }
    }
    /// The render node or X11 display to use (nil: the first render node), opened once per process.
    public var hardwareDeviceName: String? {
        get { settings.withLock { $0.hardwareDeviceName } }
        set { settings.withLock { $0.hardwareDeviceName = newValue } }
    }
    /// A device already opened, used instead of `hardwareDeviceName`.
    public var hardwareDevice: VADevice? {
        get { settings.withLock { $0.hardwareDevice } }
        set { settings.withLock { $0.hardwareDevice = newValue } }
    }

    // MARK: State

    public var status: Status { run.withLock { $0.status } }
    public var error: MediaError? { run.withLock { $0.error } }
    /// 0…1; never goes backwards; reaches 1 only once the file is complete.
    public var progress: Double { run.withLock { $0.progress } }

    /// The export's state as it changes, at most once per `updateInterval` (every change of
    /// phase at once), until it ends. Pushed by the export as its status and the written
    /// duration change; nothing polls.
    public func states(updateInterval: Duration = .milliseconds(500)) -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .bufferingNewest(8))
        let id = observers.withLock { o -> Int in
            o.nextID += 1
            o.subscribers[o.nextID] = StateSubscriber(continuation: continuation, interval: updateInterval)
            return o.nextID
        }
        continuation.onTermination = { [weak self] _ in self?.observers.withLock { _ = $0.subscribers.removeValue(forKey: id) } }
        publishState()
        return stream
    }

    /// One `states()` stream and what it was last given.
    private struct StateSubscriber {
        let continuation: AsyncStream<State>.Continuation
        let interval: Duration
        var last: State?
        var lastYield: ContinuousClock.Instant?
    }

    private struct Observers {
        var subscribers: [Int: StateSubscriber] = [:]
        var nextID = 0
    }

    private let observers = Locked(Observers())

    /// Gives every `states()` stream the current state when it changed and its interval has
    /// passed (a change of phase always passes); ends the streams once the export ended.
    func publishState() {
        let (status, progress) = run.withLock { ($0.status, $0.progress) }
        let state: State = switch status {
        case .unknown: .pending
        case .waiting: .waiting
        default: .exporting(progress: progress)
        }
        let ended = [.completed, .failed, .cancelled].contains(status)
        let now = ContinuousClock.now
        // Yielded and finished outside the lock: finishing runs the stream's termination
        // handler, which takes the lock to remove its subscriber.
        let due = observers.withLock { o -> [(AsyncStream<State>.Continuation, yield: Bool)] in
            var actions: [(AsyncStream<State>.Continuation, yield: Bool)] = []
            for (id, var subscriber) in o.subscribers {
                let phaseChanged: Bool = switch (subscriber.last, state) {
                case (.exporting?, .exporting): false
                default: subscriber.last != state
                }
                let intervalPassed = subscriber.lastYield.map { now - $0 >= subscriber.interval } ?? true
                let yield = state != subscriber.last && (phaseChanged || intervalPassed || ended)
                if yield {
                    subscriber.last = state
                    subscriber.lastYield = now
                }
                if yield || ended { actions.append((subscriber.continuation, yield: yield)) }
                o.subscribers[id] = ended ? nil : subscriber
            }
            return actions
        }
        for (continuation, yield) in due {
            if yield { continuation.yield(state) }
            if ended { continuation.finish() }
        }
    }

    /// The embedded test seam (`StageProbe`): told of every stage's steps. Set before exporting.
    var stageProbe: StageProbe? {
        get { probe.withLock { $0 } }
        set { probe.withLock { $0 = newValue } }
    }

    /// The export was cancelled (a package built on it stops its own steps too).
    var isCancelled: Bool { run.withLock { $0.cancelled } }

    /// Stops the export; `export` throws a `.cancelled` error and leaves no file.
    public func cancelExport() {
        let (writer, branches) = markCancelled()
        for branch in branches { branch.cancelExport() }
        writer?.cancelWriting()
    }

    /// `cancelExport` for a task-cancellation handler, which must not block: the runtime holds
    /// the task's status lock while it runs, and the writer's queue may be resuming that very
    /// task (finishWriting), so waiting there for the queue deadlocks. The writer is marked
    /// cancelled at once (a file it is creating meanwhile is deleted as it opens), and the
    /// partial file's deletion is queued on its thread; the export's error path waits for it.
    func cancelExportWithoutWaiting() {
        let (writer, branches) = markCancelled()
        for branch in branches { branch.cancelExportWithoutWaiting() }
        writer?.cancelWritingWithoutWaiting()
    }

    /// Flags the export and its outputs' sessions cancelled, then stops its readers (so an
    /// output reading a shared decode sees the cancel before the decode's end); returns the
    /// writer and the outputs' sessions, still to be cancelled.
    private func markCancelled() -> (writer: AssetWriter?, branches: [ExportSession]) {
        let (readers, writer, branches) = run.withLock { r -> ([AssetReader], AssetWriter?, [ExportSession]) in
            r.cancelled = true
            return ((r.reader.map { [$0] } ?? []) + r.resumedReaders + r.sideReaders, r.writer, r.branches)
        }
        for branch in branches { branch.run.withLock { $0.cancelled = true } }
        for reader in readers { reader.cancelReading() }
        return (writer, branches)
    }
}

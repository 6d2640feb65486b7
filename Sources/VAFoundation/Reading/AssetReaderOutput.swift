import FFmpegSupport
import Foundation
import Synchronization
import HardwareAcceleration

/// Vends the samples of one or more tracks of a reader (`AVAssetReaderOutput`'s role).
///
/// `copyNextSampleBuffer()` blocks while it reads and decodes; `sampleBuffers` does the same
/// work off Swift's cooperative pool. One consumer at a time per output.
// @unchecked: open for subclassing (so not checkable); its own state is behind `state`'s mutex and the blocking work runs on `stage`.
public class AssetReaderOutput: @unchecked Sendable {
    public let mediaType: MediaType
    /// Hand out deep copies instead of shared references to decoded pictures and audio
    /// (`alwaysCopiesSampleData`; default false: decoded frames are shared, never copied).
    public var alwaysCopiesSampleData: Bool {
        get { state.withLock { $0.copies } }
        set { state.withLock { $0.copies = newValue } }
    }

    private struct State {
        var copies = false
        weak var owner: AssetReader?
        var finished = false
        var probe: StageProbe?
        var produced = 0
        var recoversFromDeviceFailures = false
        var weighsDamageAcrossTracks = false
        var timePitchAlgorithm = AudioTimePitchAlgorithm.spectral
        var decoderThreadCount = 0
    }

    private let state = Locked(State())
    /// Set while a thread is producing a sample: the decoders behind an output are confined to
    /// one consumer at a time, and a second one is refused instead of racing it.
    private let producing = Atomic<Bool>(false)
    /// The output's own thread: the blocking work of `copyNextSampleBuffer` for async consumers.
    private let stage = StageThread(name: "vaf.reader")

    init(mediaType: MediaType) {
        self.mediaType = mediaType
    }

    /// How audio that a composition plays faster or slower is stretched (`audioTimePitchAlgorithm`;
    /// default `.spectral`, pitch kept). Set before reading starts.
    public var audioTimePitchAlgorithm: AudioTimePitchAlgorithm {
        get { state.withLock { $0.timePitchAlgorithm } }
        set { state.withLock { $0.timePitchAlgorithm = newValue } }
    }

    var reader: AssetReader? {
        get { state.withLock { $0.owner } }
        set { state.withLock { $0.owner = newValue } }
    }

    var isFinished: Bool { state.withLock { $0.finished } }

    /// A device failure (its decoder or video processor giving up) ends only this output, not
    /// the reader: the export goes on with the track in software (set by the export).
    var recoversFromDeviceFailures: Bool {
        get { state.withLock { $0.recoversFromDeviceFailures } }
        set { state.withLock { $0.recoversFromDeviceFailures = newValue } }
    }

    /// A stream past the damage error rate (its every decodable frame already handed out) ends
    /// only this output, not the reader: the export weighs every track's damage together, as
    /// ffmpeg's error rate does (set by the export).
    var weighsDamageAcrossTracks: Bool {
        get { state.withLock { $0.weighsDamageAcrossTracks } }
        set { state.withLock { $0.weighsDamageAcrossTracks = newValue } }
    }

    /// Threads each video decoder behind this output may use; 0 lets FFmpeg choose (a frame
    /// thread per core, plus one). The export lowers it beside a software encoder
    /// (`PipelineBounds.decoderThreads(besideHostEncoderOf:)`). Set before reading starts.
    var decoderThreadCount: Int {
        get { state.withLock { $0.decoderThreadCount } }
        set { state.withLock { $0.decoderThreadCount = newValue } }
    }

    /// The export's test seam, told of each sample produced (set before reading starts).
    var probe: StageProbe? {
        get { state.withLock { $0.probe } }
        set { state.withLock { $0.probe = newValue } }
    }

    /// The demuxer streams this output reads.
    var streamIndices: [Int] { [] }

    /// Whether the output reads the reader's file (or composition) itself; false for one that
    /// takes its samples from elsewhere (a branch of a fan-out), which needs no demuxer.
    var readsFile: Bool { true }

    /// Told when the reader is cancelled, from the cancelling thread: an output waiting on
    /// something other than the reader's demuxer stops waiting.
    func readingCancelled() {}

    /// Opens decoders and converters; called once by `startReading()`.
    func prepare(session: DemuxSession, timeRange: MediaTimeRange) throws(MediaError) {}

    /// Opens what reading `tracks` of a composition needs; called once by `startReading()`.
    func prepare(composition tracks: [CompositionTrack], timeRange: MediaTimeRange) throws(MediaError) {
        throw MediaError(.unsupported, "this output cannot read a composition", path: "composition")
    }

    /// Produces the next sample, or nil at the end. Overridden by each output.
    func produceNext() throws(MediaError) -> SampleBuffer? { nil }

    /// nil when the next read would go on without waiting for another consumer (decoding is
    /// not waiting); else what registers a wake-up for when it would, which a graph's edge
    /// parks on instead of blocking its thread. Only a fan-out's branch ever waits.
    func waitToRead() -> (@Sendable (_ wake: @escaping @Sendable () -> Void) -> Void)? { nil }

    /// The next sample, or nil when the output is finished or the reader was cancelled.
    /// Throws the reader's error (and fails the reader) when reading or decoding fails.
    ///
    /// The output owns what it reads from, so it keeps working if the reader object itself is
    /// released; the reader only tracks status.
    public func copyNextSampleBuffer() throws -> SampleBuffer? {
        let reader = self.reader
        if let reader, !reader.isReading {
            if let error = reader.error { throw error }
            return nil
        }
        guard !isFinished else { return nil }
        guard producing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            throw MediaError(.invalidState, "two threads read one \(mediaType) output at once; an output has one consumer at a time",
                             path: reader?.asset.displayPath)
        }
        defer { producing.store(false, ordering: .releasing) }
        let sample: SampleBuffer?
        do {
            sample = try produceNext()
            if let sample, let (probe, index) = state.withLock({ s in s.probe.map { p in defer { s.produced += 1 }; return (p, s.produced) } }) {
                try probe.step(.sampleRead(mediaType, index: index, time: sample.presentationTimeStamp))
            }
        } catch {
            if (recoversFromDeviceFailures && (error.code == .hardwareFailed || error.code == .decodeFailed))
                || (weighsDamageAcrossTracks && error.underlying is DecodeTally) {
                state.withLock { $0.finished = true }
            } else {
                reader?.fail(error)
            }
            throw error
        }
        guard let sample else {
            state.withLock { $0.finished = true }
            reader?.outputDidFinish()
            return nil
        }
        return alwaysCopiesSampleData ? try sample.deepCopy() : sample
    }

    /// Closes the decoders and converters (and the device contexts under them) now, on the
    /// output's thread: called once the output's consumer is done, so that the device can be
    /// handed on at once. The output returns nil from then on.
    func releaseResources() {
        stage.sync {
            state.withLock { $0.finished = true }
            dropPipeline()
        }
    }

    /// Lets go of what `prepare` made; overridden by outputs that hold a pipeline.
    func dropPipeline() {}

    /// The samples as an async sequence; the blocking work runs on the output's thread.
    public var sampleBuffers: SampleBufferSequence { SampleBufferSequence(output: self) }

    /// Up to `maximumCount` samples spanning at most `maximumSpan` of decode time, read in one
    /// go (on the output's thread, by a graph's edge); empty at the end. For compressed
    /// samples, which are many and small. The span keeps a sparse track from making the
    /// shared demuxer queue far ahead for the others.
    func nextBatch(maximumCount: Int, maximumSpan: MediaTime) throws -> [SampleBuffer] {
        var batch: [SampleBuffer] = []
        batch.reserveCapacity(maximumCount)
        // Past the first sample, the batch ends where the next read would wait.
        while batch.count < maximumCount, batch.isEmpty || waitToRead() == nil, let sample = try copyNextSampleBuffer() {
            batch.append(sample)
            let first = batch[0].decodeTimeStamp.isNumeric ? batch[0].decodeTimeStamp : batch[0].presentationTimeStamp
            let last = sample.decodeTimeStamp.isNumeric ? sample.decodeTimeStamp : sample.presentationTimeStamp
            if first.isNumeric && last.isNumeric && last - first >= maximumSpan { break }
        }
        return batch
    }

    /// Runs `job` on the output's thread, then `then` once the job is let go: a graph's edge
    /// reads (decodes) where the output's decoders live.
    func onOwnThread(_ job: @escaping @Sendable () -> Void, then: @escaping @Sendable () -> Void) {
        stage.async(job, then: then)
    }

    /// `work`'s result, run on the output's thread. The caller goes on once the job, and the
    /// output it holds, are let go there: an export that ends with its last read leaves no
    /// decoder or demuxer alive on the output's thread behind it.
    private func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withLockedThrowingContinuation { continuation in
            let outcome = Locked<Result<T, any Error>?>(nil)
            onOwnThread({ outcome.withLock { $0 = Result { try work() } } },
                        then: { continuation.resume(with: outcome.withLock { $0.take() }!) })
        }
    }

    /// Runs `copyNextSampleBuffer` on the output's thread and waits for it, from a thread that
    /// may block (a fan-out branch's): the decoders behind the output stay on its thread.
    func nextOnOwnThread() throws -> SampleBuffer? {
        try stage.sync { () throws -> SampleBuffer? in try self.copyNextSampleBuffer() }
    }

    /// Runs `copyNextSampleBuffer` on the output's thread, off the cooperative pool.
    func nextAsync() async throws -> SampleBuffer? {
        try await onOwnThread { try self.copyNextSampleBuffer() }
    }
}

/// The samples of an output, read off Swift's cooperative pool; cancelling the consuming task
/// stops it between samples.
public struct SampleBufferSequence: AsyncSequence, Sendable {
    public typealias Element = SampleBuffer
    let output: AssetReaderOutput

    public struct AsyncIterator: AsyncIteratorProtocol {
        let output: AssetReaderOutput
        public mutating func next() async throws -> SampleBuffer? {
            try Task.checkCancellation()
            return try await output.nextAsync()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(output: output) }
}

/// What a track output vends when decoding (`outputSettings` of `AVAssetReaderTrackOutput`).
public enum ReaderOutputSettings: Sendable, Hashable {
    /// Decoded pictures in this format and size.
    case video(PixelBufferAttributes)
    /// Decoded audio as linear PCM in this layout.
    case audio(LinearPCMSettings)
}

/// An output that decodes video, on a VA-API device or on the host: the export places its
/// decoding (`ExportSession.placeDecoding`) the same way for a track and for a video composition.
protocol VideoDecodingOutput: AssetReaderOutput {
    var hardwareDevice: VADevice? { get set }
}

/// The samples of one track (`AVAssetReaderTrackOutput`): compressed as stored when
/// `outputSettings` is nil, else decoded and converted.
// @unchecked: `pipeline` is set by `prepare` before reading and then used by the output's one consumer, serialised by its thread.
public final class AssetReaderTrackOutput: AssetReaderOutput, VideoDecodingOutput, @unchecked Sendable {
    public let track: AssetTrack
    public let outputSettings: ReaderOutputSettings?
    private nonisolated(unsafe) var pipeline: TrackPipeline?
    private let device = Locked<VADevice?>(nil)
    /// Where an export's stages record what they did (set by the export before reading starts).
    let observations = Locked<StageObservations?>(nil)
    /// Surfaces a device decoder keeps beyond its references: more when its pictures go to
    /// several outputs at once (a fan-out), each holding some. Set before reading starts.
    let extraDeviceSurfaces = Locked(DecodeLoop.extraHardwareFrames)

    /// Decode video on this VA-API device (set before `startReading()`). With
    /// `PixelBufferAttributes(pixelFormat: .vaapiSurface, …)` the pictures stay in GPU surfaces,
    /// scaled by the device's video processor; with a host format each is downloaded once.
    /// Streams the device cannot decode fall back to software decoding by themselves.
    public var hardwareDevice: VADevice? {
        get { device.withLock { $0 } }
        set { device.withLock { $0 = newValue } }
    }

    /// An output for `track`. Throws when the settings do not fit the track's media type.
    public init(track: AssetTrack, outputSettings: ReaderOutputSettings?) throws {
        switch (outputSettings, track.mediaType) {
        case (.video, .video), (.audio, .audio), (nil, _): break
        default:
            throw MediaError(.invalidArgument, "\(String(describing: outputSettings)) cannot decode a \(track.mediaType) track")
        }
        self.track = track
        self.outputSettings = outputSettings
        super.init(mediaType: track.mediaType)
    }

    override var streamIndices: [Int] { [track.streamIndex] }

    override func prepare(session: DemuxSession, timeRange: MediaTimeRange) throws(MediaError) {
        switch outputSettings {
        case nil: pipeline = PassthroughPipeline(session: session, track: track, timeRange: timeRange)
        case .video(let attributes):
            pipeline = try VideoDecodePipeline(session: session, track: track, attributes: attributes, timeRange: timeRange,
                                               device: hardwareDevice, observations: observations.withLock { $0 },
                                               decoderThreads: decoderThreadCount, extraDeviceSurfaces: extraDeviceSurfaces.withLock { $0 })
        case .audio(let pcm): pipeline = try AudioDecodePipeline(session: session, track: track, pcm: pcm, timeRange: timeRange)
        }
    }

    override func prepare(composition tracks: [CompositionTrack], timeRange: MediaTimeRange) throws(MediaError) {
        guard let compositionTrack = track.compositionTrack.flatMap({ own in tracks.first { $0.trackID == own.trackID } }) else {
            throw MediaError(.invalidArgument, "track \(track.trackID) is not a track of the composition being read", path: "composition")
        }
        switch outputSettings {
        case nil:
            throw MediaError(.unsupported, "a composition track is read decoded: give the output video or audio settings", path: "composition")
        case .video(let attributes):
            pipeline = try CompositionTrackPipeline(track: compositionTrack, media: .video(attributes), timeRange: timeRange,
                                                    device: hardwareDevice, observations: observations.withLock { $0 },
                                                    decoderThreads: decoderThreadCount)
        case .audio(let pcm):
            pipeline = try CompositionTrackPipeline(track: compositionTrack, media: .audio(pcm, audioTimePitchAlgorithm), timeRange: timeRange)
        }
    }

    override func produceNext() throws(MediaError) -> SampleBuffer? { try pipeline?.next() }

    /// The damaged packets decoding skipped (and concealed), in words; nil when none. Read it
    /// once reading is done (the pipeline is its consumer's), before `releaseResources()`.
    var damageReport: String? { pipeline?.damageReport }
    /// Frames decoded and damaged packets skipped so far; nil when the output copies or has not started.
    var decodeTally: DecodeTally? { pipeline?.decodeTally }

    /// The threads the video decoder runs on once reading started (FFmpeg's count, after its
    /// default was resolved); nil for other outputs.
    var decoderThreadsInUse: Int? { (pipeline as? VideoDecodePipeline)?.loop.decoder.threadCount }

    override func dropPipeline() {
        pipeline?.stop()
        pipeline = nil
    }
}

extension SampleBuffer {
    /// A copy whose decoded picture or audio has its own memory.
    func deepCopy() throws -> SampleBuffer {
        let copied: Content
        switch content {
        case .compressed: return self
        case .pixelBuffer(let p): copied = .pixelBuffer(try p.copy())
        case .audio(let a): copied = .audio(try a.copy())
        }
        return SampleBuffer(content: copied, packet: nil, codecParameters: nil, presentationTimeStamp: presentationTimeStamp,
                            decodeTimeStamp: decodeTimeStamp, duration: duration, formatDescription: formatDescription,
                            attachments: attachments)
    }
}

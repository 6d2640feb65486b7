import Dispatch
import FFmpegSupport
import HardwareAcceleration

/// One track being written (`AVAssetWriterInput`'s role): it encodes the samples appended to
/// it with its output settings, or passes compressed samples through when it has none.
///
/// Back-pressure: `isReadyForMoreMediaData` turns false while a few samples wait to be
/// encoded, or while this input is more than a second ahead of another unfinished input
/// (so the file interleaves and memory stays bounded). `appendImmediately` then returns
/// false; `append` waits. Thread-safe.
public final class AssetWriterInput: Sendable {
    /// How an input encodes (AVFoundation's output-settings dictionary, typed).
    public enum OutputSettings: Sendable, Hashable {
        case video(VideoSettings)
        case audio(AudioSettings)
        /// Text subtitles converted to another text format (compressed samples of a text format in).
        case subtitle(SubtitleSettings)
    }

    public let mediaType: MediaType
    /// nil: samples are passed through as they are (compressed samples only).
    public let outputSettings: OutputSettings?
    /// What passed-through samples will look like; informative, since the codec parameters
    /// are taken from the first sample.
    public let sourceFormatHint: FormatDescription?

    private struct Properties {
        var transform = VideoTransform.identity
        var languageCode: String?
        var marksOutputTrackAsEnabled = true
        var metadata: [MetadataItem] = []
        var mediaTimeScale: Int32 = 0
        var expectsMediaDataInRealTime = false
        var hardwareDevice: VADevice?
        var observations: StageObservations?
        var resumable = false
        var source: WriterInputConfiguration.Source?
        var forcedKeyframeInterval: MediaTime?
        var sourceParameters: CodecParameters?
        var sparseEnd: MediaTime?
    }
    private let properties = Locked(Properties())

    /// The source file and track this input carries (set by the export before writing starts):
    /// the input's errors name them instead of the output and an input number.
    var source: WriterInputConfiguration.Source? {
        get { properties.withLock { $0.source } }
        set { properties.withLock { $0.source = newValue } }
    }

    /// The export may resume this video input in software after its device fails: the writer
    /// holds each group of pictures back until the next keyframe, so the open one can be
    /// dropped and redone (set by the export before writing starts).
    var resumable: Bool {
        get { properties.withLock { $0.resumable } }
        set { properties.withLock { $0.resumable = newValue } }
    }

    /// Makes the first picture at or after each multiple of this (after the session's
    /// start) a keyframe: renditions of a streaming package switch at the same times.
    var forcedKeyframeInterval: MediaTime? {
        get { properties.withLock { $0.forcedKeyframeInterval } }
        set { properties.withLock { $0.forcedKeyframeInterval = newValue } }
    }

    /// The copied stream's parameters, known before its first sample (set by the export before
    /// writing starts): a sparse track (subtitles) then holds back no other track's packets
    /// until its first cue.
    var sourceParameters: CodecParameters? {
        get { properties.withLock { $0.sourceParameters } }
        set { properties.withLock { $0.sourceParameters = newValue } }
    }

    /// Where a sparse track's samples stop being shown at the latest (source time; set by the
    /// export before writing starts): a subtitle cue outlasting the picture and sound is cut
    /// where they end, so it does not make the file longer.
    var sparseEnd: MediaTime? {
        get { properties.withLock { $0.sparseEnd } }
        set { properties.withLock { $0.sparseEnd = newValue } }
    }

    /// Where an export's stages record what they did (set by the export before writing starts).
    var observations: StageObservations? {
        get { properties.withLock { $0.observations } }
        set { properties.withLock { $0.observations = newValue } }
    }
    private let attachment = Locked<(core: WriterCore, index: Int)?>(nil)

    /// An input for `mediaType`. Throws `invalidArgument` when the settings are for another media type.
    public init(mediaType: MediaType, outputSettings: OutputSettings?, sourceFormatHint: FormatDescription? = nil) throws(MediaError) {
        switch outputSettings {
        case .video where mediaType != .video, .audio where mediaType != .audio, .subtitle where mediaType != .subtitle:
            throw MediaError(.invalidArgument, "\(mediaType) input given settings for another media type")
        default: break
        }
        guard outputSettings != nil || mediaType == .video || mediaType == .audio || sourceFormatHint != nil else {
            throw MediaError(.invalidArgument, "a passthrough \(mediaType) input needs a source format hint")
        }
        self.mediaType = mediaType
        self.outputSettings = outputSettings
        self.sourceFormatHint = sourceFormatHint
    }

    /// An input that encodes video with `settings`.
    public convenience init(videoSettings settings: VideoSettings) throws(MediaError) {
        try self.init(mediaType: .video, outputSettings: .video(settings))
    }

    /// An input that encodes audio with `settings`.
    public convenience init(audioSettings settings: AudioSettings) throws(MediaError) {
        try self.init(mediaType: .audio, outputSettings: .audio(settings))
    }

    /// The transform players apply to the pictures, written as the track's display matrix.
    /// Set before `startWriting()`.
    public var transform: VideoTransform {
        get { properties.withLock { $0.transform } }
        set { properties.withLock { $0.transform = newValue } }
    }
    /// ISO 639-2 language of the track ("eng"). Set before `startWriting()`.
    public var languageCode: String? {
        get { properties.withLock { $0.languageCode } }
        set { properties.withLock { $0.languageCode = newValue } }
    }
    /// The track is played by default (`AVAssetWriterInput.marksOutputTrackAsEnabled`): the
    /// container's default flag. False leaves the choice to the viewer (a second audio
    /// language, a subtitle track). Set before `startWriting()`.
    public var marksOutputTrackAsEnabled: Bool {
        get { properties.withLock { $0.marksOutputTrackAsEnabled } }
        set { properties.withLock { $0.marksOutputTrackAsEnabled = newValue } }
    }
    /// The track's own metadata (`AVAssetWriterInput.metadata`), such as its title
    /// ("Director's commentary"). Set before `startWriting()`.
    public var metadata: [MetadataItem] {
        get { properties.withLock { $0.metadata } }
        set { properties.withLock { $0.metadata = newValue } }
    }
    /// Time scale of the track's timestamps; 0 lets the writer choose (90 kHz for video, the
    /// sample rate for audio). In mp4/mov the first video input's value applies to every video
    /// track (FFmpeg's `video_track_timescale`). Set before `startWriting()`.
    public var mediaTimeScale: Int32 {
        get { properties.withLock { $0.mediaTimeScale } }
        set { properties.withLock { $0.mediaTimeScale = newValue } }
    }
    /// Samples come from a live source: encoders favour speed (x264 `veryfast`/`zerolatency`,
    /// faster SVT-AV1 and libvpx presets). Set before `startWriting()`.
    public var expectsMediaDataInRealTime: Bool {
        get { properties.withLock { $0.expectsMediaDataInRealTime } }
        set { properties.withLock { $0.expectsMediaDataInRealTime = newValue } }
    }

    /// Encode video on this VA-API device (`h264_vaapi`, `hevc_vaapi`, `mjpeg_vaapi`) instead of
    /// in software. GPU-surface pictures of the output size go to the encoder as they are;
    /// others are scaled by the device's video processor, and host pictures are uploaded once
    /// each. Set before `startWriting()`.
    public var hardwareDevice: VADevice? {
        get { properties.withLock { $0.hardwareDevice } }
        set { properties.withLock { $0.hardwareDevice = newValue } }
    }

    /// True when an append now would be accepted without waiting.
    public var isReadyForMoreMediaData: Bool {
        guard let (core, index) = attachment.withLock({ $0 }) else { return false }
        return core.isReady(index)
    }

    /// Queues `sample` for encoding if the input is ready; returns false (and queues nothing)
    /// when it is not. Throws when the writer is not writing, no session was started, the
    /// input was marked finished, or the writer failed (its error).
    public func appendImmediately(_ sample: SampleBuffer) throws(MediaError) -> Bool {
        try appendImmediately(contentsOf: [sample])
    }

    /// Queues `samples` in order as one job if the input is ready, as `append(contentsOf:)`
    /// does without waiting; false (and nothing queued) when it is not.
    func appendImmediately(contentsOf samples: [SampleBuffer]) throws(MediaError) -> Bool {
        let (core, index) = try writer()
        return try core.appendImmediately(samples, input: index)
    }

    /// Calls `callback` once the input may be ready for more (at once when it is, or when it
    /// never will be): for a graph's edge, which then tries its append again.
    func whenReady(_ callback: @escaping @Sendable () -> Void) {
        guard let (core, index) = attachment.withLock({ $0 }) else { return callback() }
        core.whenReady(index, callback)
    }

    /// Waits until the input is ready, then queues `sample`. Throws as `appendImmediately`
    /// does; an encoding error this sample causes is reported by a later append, by
    /// `finishWriting()` and by the writer's `error`.
    public func append(_ sample: SampleBuffer) async throws(MediaError) {
        let (core, index) = try writer()
        try await core.append(sample, input: index)
    }

    /// Waits until the input is ready, then queues `samples` in order as one job: for copied
    /// packets, which are small and many, so that they cross to the writer's queue in batches.
    func append(contentsOf samples: [SampleBuffer]) async throws(MediaError) {
        let (core, index) = try writer()
        try await core.append(samples, input: index)
    }

    /// Calls `block` on `queue` whenever the input is ready for more samples, until it is
    /// marked finished or the writer stops (AVFoundation's pull model). `block` should append
    /// while `isReadyForMoreMediaData` is true, and call `markAsFinished()` when it runs out.
    public func requestMediaDataWhenReady(on queue: DispatchQueue, using block: @escaping @Sendable () -> Void) {
        guard let (core, index) = attachment.withLock({ $0 }) else { return }
        Task {
            while await core.waitUntilReady(index) {
                let seen = core.changeCount
                await withLockedContinuation { (c: LockedContinuation<Void, Never>) in
                    queue.async {
                        block()
                        c.resume()
                    }
                }
                // A block that left the input ready is called again once something in the
                // writer changes (its own samples written, another input moving), not in a
                // busy loop. A block that appends nothing while nothing else moves must mark
                // the input finished, as with AVFoundation.
                if core.isReady(index) { await core.waitForChange(since: seen) }
            }
        }
    }

    /// Drops the open group of pictures and goes on with the software encoder (after a device
    /// failure); returns the source time to append from again and the pictures kept before it.
    func resumeInSoftware() async throws(MediaError) -> (resumeAt: MediaTime, framesKept: Int) {
        let (core, index) = try writer()
        return try await core.resumeInSoftware(input: index)
    }

    /// No more samples will be appended; the encoder is flushed and other inputs stop
    /// waiting for this one.
    public func markAsFinished() {
        guard let (core, index) = attachment.withLock({ $0 }) else { return }
        core.markFinished(index)
    }

    // MARK: Writer side

    var isAttached: Bool { attachment.withLock { $0 != nil } }

    /// The status of the writer this input belongs to, nil before it is added.
    var writerStatus: AssetWriter.Status? { attachment.withLock { $0?.core.status } }

    /// The input's number in its writer, for stages that feed the writer's engine directly.
    var writerIndex: Int? { attachment.withLock { $0?.index } }

    func attach(to core: WriterCore, index: Int) throws(MediaError) {
        try attachment.withLock { a throws(MediaError) in
            guard a == nil else { throw MediaError(.invalidState, "the input already belongs to a writer") }
            a = (core, index)
        }
    }

    func configurationSnapshot() -> WriterInputConfiguration {
        let p = properties.withLock { $0 }
        return WriterInputConfiguration(mediaType: mediaType, settings: outputSettings, sourceFormatHint: sourceFormatHint,
                                        transform: p.transform, languageCode: p.languageCode,
                                        marksOutputTrackAsEnabled: p.marksOutputTrackAsEnabled, metadata: p.metadata, mediaTimeScale: p.mediaTimeScale,
                                        expectsMediaDataInRealTime: p.expectsMediaDataInRealTime, hardwareDevice: p.hardwareDevice, resumable: p.resumable,
                                        observations: p.observations, source: p.source, forcedKeyframeInterval: p.forcedKeyframeInterval,
                                        sourceParameters: p.sourceParameters, sparseEnd: p.sparseEnd)
    }

    private func writer() throws(MediaError) -> (core: WriterCore, index: Int) {
        guard let a = attachment.withLock({ $0 }) else {
            throw MediaError(.invalidState, "the input was not added to a writer")
        }
        return a
    }
}

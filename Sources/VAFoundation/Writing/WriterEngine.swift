import Foundation
import FFmpegSupport
import HardwareAcceleration

/// What one input was configured with when writing started.
struct WriterInputConfiguration: Sendable {
    var mediaType: MediaType
    var settings: AssetWriterInput.OutputSettings?
    var sourceFormatHint: FormatDescription?
    var transform: VideoTransform
    var languageCode: String?
    /// The container's default flag for the track.
    var marksOutputTrackAsEnabled = true
    /// The track's own metadata (its title).
    var metadata: [MetadataItem] = []
    var mediaTimeScale: Int32
    var expectsMediaDataInRealTime: Bool
    /// Encode on this VA-API device instead of in software.
    var hardwareDevice: VADevice?
    /// Hold each group of pictures until the next keyframe, so that after a device failure
    /// the open one can be dropped and the input resumed in software from its keyframe.
    var resumable = false
    /// Told where the video stage encoded and scaled, and of each surface/host copy.
    var observations: StageObservations?
    /// What the input carries, when its caller knows (an export): the file and the track.
    var source: Source?
    /// Makes the first picture at or after each multiple of this (after the session's start)
    /// a keyframe, so that renditions encoded alike switch at the same times.
    var forcedKeyframeInterval: MediaTime?
    /// A copied stream's parameters, known before its first sample.
    var sourceParameters: CodecParameters?

    /// The clean aperture written for this track: its settings', or, for a copied video
    /// stream, the one its source format names (as AVFoundation's passthrough keeps it).
    var cleanAperture: CleanAperture? {
        guard mediaType == .video else { return nil }
        switch settings {
        case .video(let s): return s.cleanAperture
        case nil: return sourceFormatHint?.video?.cleanAperture
        default: return nil
        }
    }
    /// A subtitle input's cues are shown until this source time at the latest.
    var sparseEnd: MediaTime?

    /// A source file's track, as errors name it.
    struct Source: Sendable {
        var path: String
        /// "track 1 (video)".
        var track: String
    }
}

/// What the writer was configured with when writing started.
struct WriterConfiguration: Sendable {
    /// The file written, and its hidden partial twin; nil for a writer that hands its
    /// segments to a delegate.
    var file: (destination: URL, temporary: URL)?
    /// What errors name as the output: the destination's path, or what the segments are for.
    var displayPath: String
    var fileType: FileType
    var overwritesExistingFile: Bool
    var metadata: [MetadataItem]
    /// Chapters on the output's timeline.
    var chapters: [Chapter]
    var shouldOptimizeForNetworkUse: Bool
    var movieFragmentInterval: MediaTime
    /// How the output is cut into fragments or segments; nil writes one index at the end.
    var segmentation: WriterSegmentation?
    var movieTimeScale: Int32
    /// What the writer's caller knows it will write, when it knows (a remux: the source's
    /// index): lets a network-optimised mp4/mov reserve room for its index up front.
    var expectedContent: AssetWriter.ExpectedContent?
    /// The export's test seam, told of each sample taken and of finishing.
    var probe: StageProbe?
    /// A finished input's held audio waits for `finish`, where `endSession` may still trim it
    /// (`AssetWriter.keepsFinishedAudioTrimmable`).
    var keepsFinishedAudioTrimmable = true
}

/// The encoders, the muxer and the timing state of one writer. Every member is touched only
/// on the writer's thread (`WriterCore.stage`), which is what makes the unchecked
/// `Sendable` conformance sound: FFmpeg contexts never leave that thread. Each entry point
/// checks it runs there (`StageThread.preconditionIsCurrent`), so a call from elsewhere traps at once.
// @unchecked: confined to the writer's thread, checked at every entry point.
final class WriterEngine: @unchecked Sendable {
    /// One input's stage, stream and held-back packets.
    final class Pipeline {
        let configuration: WriterInputConfiguration
        var video: WriterVideoStage?
        var audio: WriterAudioStage?
        /// Converts a text subtitle input's cues to the format its settings name; nil when
        /// they are copied (the source's format already is that one).
        var subtitles: SubtitleConverter?
        /// Cues the converter refused (text in another encoding than UTF-8, damaged markup),
        /// left out as ffmpeg leaves them out: how many, and the first one's time and cause.
        var refusedCues = 0
        var firstRefusedCue: (time: MediaTime, cause: String)?
        var encoderName: String?
        var parameters: CodecParameters?
        /// Time base of the packets this pipeline produces.
        var timeBase = Rational(1, 90000)
        var codecTag: String?
        var streamIndex: Int?
        var finished = false
        /// Packets waiting for the header, or (audio) held back so `endSession` can trim them.
        var held: [Packet] = []
        /// The latest video packet, delivered once the next one shows its duration.
        var pendingVideo: Packet?
        var lastDuration: Int64 = 0
        /// Where the latest picture handed to the encoder stops being shown (its time plus its
        /// duration): the stream must last that long, which the last packet's duration makes up.
        var pictureEnd: Int64?
        /// How long each picture handed to the encoder and not yet back as a packet is shown,
        /// by its presentation time: encoders give packets no duration, and on variable-rate
        /// video with B-frames the gap to the next decode time is some other picture's length.
        var pictureDurations: [Int64: Int64] = [:]
        /// The first packet's presentation time less its decode time: the reorder delay the
        /// muxer's edit list takes off the decode timeline.
        var reorderDelay: Int64?
        var lastPTS: Int64?
        /// Decode time of the last packet written, in the muxer's time base of the stream.
        var lastWrittenDTS: Int64?
        /// Packets whose decode time had to be moved to keep decode times increasing.
        var dtsRepairs = 0
        /// Samples taken so far.
        var taken = 0
        /// A resumable input's packets since its latest keyframe, written once the next one comes.
        var openGOP: [Packet] = []
        /// Video packets delivered (written or waiting for the header) before the open group.
        var framesKept = 0
        /// The device under this input failed: its samples are ignored until it is resumed.
        var deviceFailed = false
        /// The next times (after the session's start) whose picture is made a keyframe: the
        /// input's forced keyframe interval, and the segments' boundaries.
        var nextForcedKeyframe: MediaTime?
        var nextSegmentKeyframe: MediaTime?

        init(_ configuration: WriterInputConfiguration) { self.configuration = configuration }
    }

    let configuration: WriterConfiguration
    private var muxer: Muxer?
    /// The lock on the partial file, held from its creation until it is renamed or removed.
    private var partialLock: PartialFileLock?
    private var pipelines: [Pipeline] = []
    private var headerWritten = false
    private var sessionStart = MediaTime.invalid
    private var sessionEnd = MediaTime.invalid
    private(set) var closed = false
    /// Holds each track's packets until their fragment is complete; nil when the output is
    /// not fragmented, or before the first packet.
    private var cutter: FragmentCutter<Packet>?
    /// `flushSegment()` was called: the leading input's next sample starts a segment.
    private var segmentFlushRequested = false
    /// Media segments handed out so far.
    private var segmentsWritten = 0
    /// The fragments of the segment under way: where each starts in the segment's bytes, and
    /// its samples.
    private var segmentFragments: [(start: Int, samples: [FragmentCutter<Void>.Item])] = []
    /// Cuts `flushSegment()` asked for before the cutter existed (the encoder's delay can hold
    /// back the first packets past several requests).
    private var pendingCuts: [MediaTime] = []
    /// The movie header of a fragmented output is written (with the first fragment: the
    /// muxer delays it until the first samples give the edit list its start).
    private var movieHeaderWritten = false

    /// Told the written duration (`writtenSeconds`) after each packet reaches the muxer.
    private let didWrite: (@Sendable (Double) -> Void)?

    /// The writer's thread, the only one the engine runs on.
    private let stage: StageThread

    init(configuration: WriterConfiguration, stage: StageThread, didWrite: (@Sendable (Double) -> Void)? = nil) {
        self.configuration = configuration
        self.stage = stage
        self.didWrite = didWrite
    }

    /// Traps unless called on the writer's thread: the engine's FFmpeg contexts live there.
    private func checkConfinement() { stage.preconditionIsCurrent() }

    /// How an error about input `i` names it: the source track it writes when the caller said
    /// (an export), else its index.
    private func subject(_ i: Int) -> String {
        pipelines[i].configuration.source.map { "writing \($0.track)" } ?? "input \(i)"
    }

    /// The file an error about input `i` names: its source when the caller said, else the output.
    private func errorPath(_ i: Int) -> String { pipelines[i].configuration.source?.path ?? path }

    /// What the writer left out and said nothing of on the way: cues a subtitle conversion
    /// refused. Read once writing has finished.
    let warnings = Locked<[String]>([])

    /// Seconds of media (after the session start) each input has handed to the muxer, and
    /// whether it is finished; readable from any thread.
    let written = Locked([Int: (seconds: Double, finished: Bool)]())

    /// The writer's true progress: how far the slowest unfinished input has reached the file.
    var writtenSeconds: Double {
        written.withLock { w in
            let open = w.values.filter { !$0.finished }
            return (open.isEmpty ? w.values.map(\.seconds).max() : open.map(\.seconds).min()) ?? 0
        }
    }

    private var path: String { configuration.displayPath }
    private var name: String { configuration.file?.destination.lastPathComponent ?? configuration.displayPath }

    // MARK: Opening

    /// Creates the temporary file and opens an encoder for every input that encodes.
    func open(_ inputs: [WriterInputConfiguration]) throws(MediaError) {
        checkConfinement()
        let fileType = configuration.fileType
        if configuration.segmentation != nil || configuration.movieTimeScale > 0 {
            guard Self.fragmentingMuxers.contains(fileType.muxerName) else {
                throw MediaError(.invalidArgument, "movie fragments, segments and the movie time scale apply to mp4/mov files, not \(fileType)", path: path)
            }
        }
        let muxer: Muxer
        if let file = configuration.file {
            // The partial file is created and locked before the muxer opens it, so it is never
            // there unlocked for another run's clean-up to take as abandoned. It is new and
            // empty, so the muxer writes into it without truncating it (see `Muxer.init`).
            do { partialLock = try PartialFileLock(creating: file.temporary) } catch {
                throw MediaError(error.code, "cannot create the output beside \(name)", path: path, underlying: error)
            }
            do { muxer = try Muxer(formatName: fileType.muxerName, path: file.temporary.path, truncating: false) } catch {
                let code: MediaError.Code = error.code == .permissionDenied ? .permissionDenied : .ioError
                throw MediaError(code, "cannot create the output beside \(name)", path: path, underlying: error)
            }
        } else {
            do { muxer = try Muxer(formatName: fileType.muxerName) } catch {
                throw MediaError(.ioError, "cannot open the \(fileType) segment muxer", path: path, underlying: error)
            }
        }
        // The cutter hands each fragment's packets on as it places them; the muxer keeps each
        // track's part of the fragment apart until it ends.
        muxer.writesInCallOrder = configuration.segmentation != nil
        self.muxer = muxer
        try configuration.probe?.step(.outputCreated)
        for (i, input) in inputs.enumerated() {
            let pipeline = Pipeline(input)
            pipelines.append(pipeline)
            switch input.settings {
            case .video(let settings):
                let timeBase = Rational(1, input.mediaTimeScale > 0 ? input.mediaTimeScale : 90000)
                let plan = if let device = input.hardwareDevice {
                    try WriterCodecs.hardwareVideoConfiguration(settings, timeBase: timeBase, globalHeader: muxer.needsGlobalHeader, device: device)
                } else {
                    try WriterCodecs.videoConfiguration(settings, timeBase: timeBase, globalHeader: muxer.needsGlobalHeader,
                                                        realTime: input.expectsMediaDataInRealTime)
                }
                try checkCompatible(plan.name, input: i, mediaType: .video)
                let encoder = try openEncoder(plan.name, plan.configuration, input: i)
                do {
                    pipeline.video = try WriterVideoStage(encoder: encoder, scalingMode: settings.scalingMode,
                                                          fullRange: settings.colorProperties?.fullRange, observations: input.observations)
                } catch {
                    throw MediaError(.encodeFailed, "cannot prepare frames for \(plan.name)", path: path, underlying: error)
                }
                pipeline.encoderName = plan.name
                pipeline.timeBase = encoder.timeBase
                pipeline.parameters = try parameters(of: encoder, input: i)
                if settings.codec == .hevc && ["mp4", "mov", "ipod"].contains(fileType.muxerName) { pipeline.codecTag = "hvc1" }
            case .audio(let settings):
                let plan = try WriterCodecs.audioConfiguration(settings, globalHeader: muxer.needsGlobalHeader)
                try checkCompatible(plan.name, input: i, mediaType: .audio)
                let encoder = try openEncoder(plan.name, plan.configuration, input: i)
                pipeline.audio = WriterAudioStage(encoder: encoder)
                pipeline.encoderName = plan.name
                pipeline.timeBase = encoder.timeBase
                pipeline.parameters = try parameters(of: encoder, input: i)
            case .subtitle, nil:
                // Known now when the caller said, else from the first sample's parameters.
                if let parameters = input.sourceParameters {
                    try adopt(parameters, timeScale: input.mediaTimeScale > 0 ? input.mediaTimeScale : 1000, pipeline, input: i)
                }
            }
        }
        // With only encoding inputs every stream is known now: write the header at once so
        // packets go to the file as they come instead of waiting in memory for the end.
        try writeHeaderIfReady()
    }

    private func checkCompatible(_ encoderName: String, input: Int, mediaType: MediaType) throws(MediaError) {
        guard let codec = Encoder.codec(ofEncoder: encoderName) else { return }
        if let reason = WriterCodecs.incompatibility(of: codec, in: configuration.fileType, mediaType: mediaType) {
            throw MediaError(.unsupported, "\(subject(input)): \(reason)", path: errorPath(input))
        }
    }

    private func openEncoder(_ name: String, _ c: Encoder.Configuration, input: Int) throws(MediaError) -> Encoder {
        try configuration.probe?.step(.encoderOpened(pipelines[input].configuration.mediaType))
        do { return try Encoder(name: name, configuration: c) } catch {
            let code: MediaError.Code = error.code == .invalidArgument ? .invalidArgument : .encodeFailed
            throw MediaError(code, "\(subject(input)): \(name) refused the output settings", path: errorPath(input), underlying: error)
        }
    }

    private func parameters(of encoder: Encoder, input: Int) throws(MediaError) -> CodecParameters {
        do { return try encoder.codecParameters() } catch {
            throw MediaError(.encodeFailed, "\(subject(input)): cannot read \(encoder.name)'s stream parameters", path: errorPath(input), underlying: error)
        }
    }

    // MARK: Session

    func startSession(at time: MediaTime) {
        checkConfinement()
        sessionStart = time
        let firstBoundary = segmentBoundary(after: .zero)
        for pipeline in pipelines where pipeline.video != nil {
            pipeline.nextForcedKeyframe = pipeline.configuration.forcedKeyframeInterval.map { _ in .zero }
            pipeline.nextSegmentKeyframe = firstBoundary
        }
    }

    /// Ends the segment under way before the leading input's next sample, which an encoding
    /// input makes a keyframe (`AssetWriter.flushSegment()`).
    func flushSegment() {
        checkConfinement()
        segmentFlushRequested = true
    }

    /// The first segment boundary after `time` (on the session's timeline): the segments'
    /// origin plus a multiple of their interval; nil without a regular interval.
    private func segmentBoundary(after time: MediaTime) -> MediaTime? {
        guard let segmentation = configuration.segmentation, segmentation.interval.isNumeric, segmentation.interval > .zero,
              sessionStart.isNumeric else { return nil }
        var boundary = segmentation.origin.isNumeric ? segmentation.origin - sessionStart : .zero
        while boundary <= time { boundary = boundary + segmentation.interval }
        return boundary
    }

    /// The leading input: the first video input, else the first; its keyframes set the cuts.
    private var leadPipeline: Pipeline? {
        pipelines.first { $0.configuration.mediaType == .video } ?? pipelines.first
    }

    /// Whether the picture at `time` must be a keyframe (a forced interval or a segment
    /// boundary is due), advancing the schedules past it.
    private func keyframeIsDue(at time: MediaTime, _ pipeline: Pipeline) -> Bool {
        var due = false
        if let next = pipeline.nextForcedKeyframe, time >= next, let interval = pipeline.configuration.forcedKeyframeInterval {
            due = true
            var following = next
            while following <= time { following = following + interval }
            pipeline.nextForcedKeyframe = following
        }
        if let next = pipeline.nextSegmentKeyframe, time >= next {
            due = true
            pipeline.nextSegmentKeyframe = segmentBoundary(after: time)
        }
        return due
    }

    /// Later samples at or after `time` are dropped; held audio packets are trimmed to it.
    func endSession(at time: MediaTime) {
        checkConfinement()
        sessionEnd = time
        for pipeline in pipelines {
            guard let audio = pipeline.audio else { continue }
            audio.limit = ticks(time - sessionStart, pipeline.timeBase)
            trimHeldAudio(pipeline)
        }
    }

    /// Drops held audio packets that start at or after the session end and shortens the one
    /// that straddles it.
    private func trimHeldAudio(_ pipeline: Pipeline) {
        guard sessionEnd.isNumeric else { return }
        let end = ticks(sessionEnd - sessionStart, pipeline.timeBase)
        pipeline.held = pipeline.held.compactMap { packet in
            guard let pts = packet.pts else { return packet }
            if pts >= end { return nil }
            if pts + packet.duration > end { packet.duration = end - pts }
            return packet
        }
    }

    // MARK: Samples

    /// Encodes (or passes through) one sample and writes the packets that became ready.
    func process(_ sample: SampleBuffer, input i: Int) throws(MediaError) {
        checkConfinement()
        guard !closed else { return }
        let pipeline = pipelines[i]
        guard !pipeline.deviceFailed else { return }
        let pts = sample.presentationTimeStamp
        if let probe = configuration.probe {
            try probe.step(.sampleWritten(pipeline.configuration.mediaType, index: pipeline.taken, time: pts))
            pipeline.taken += 1
        }
        if sessionEnd.isNumeric && pts >= sessionEnd { return }
        let relative = pts - sessionStart
        do {
            if let video = pipeline.video {
                guard case .pixelBuffer(let picture) = sample.content else {
                    throw MediaError(.invalidArgument, "input \(i) encodes video but was given a \(sample.formatDescription.mediaType) sample", path: path)
                }
                // The picture on screen at the session start opens the file, clipped to start
                // there (as AVFoundation does); earlier ones are dropped.
                var start = relative
                var shown = sample.duration
                if relative < .zero {
                    guard pipeline.lastPTS == nil, sample.duration.isNumeric, relative + sample.duration > .zero else { return }
                    shown = relative + sample.duration
                    start = .zero
                }
                let t = ticks(start, pipeline.timeBase)
                if let last = pipeline.lastPTS, t <= last {
                    throw MediaError(.invalidArgument, "\(subject(i)): presentation time \(pts.seconds) s is not after the previous picture's; video times must increase", path: errorPath(i))
                }
                pipeline.lastPTS = t
                // Phone files often give every sample a one-tick placeholder duration (1/600 s): a
                // picture said to last less than that floor has no duration of its own to keep.
                let duration = shown.isNumeric && shown >= Self.shortestPictureDuration ? ticks(shown, pipeline.timeBase) : 0
                if duration > 0 {
                    pipeline.pictureEnd = t + duration
                    // An encoder that renumbers or drops pictures would leave entries behind.
                    if pipeline.pictureDurations.count >= 1024 { pipeline.pictureDurations = [:] }
                    pipeline.pictureDurations[t] = duration
                }
                let flushed = takeFlushRequest(for: pipeline, at: start)
                let keyframe = keyframeIsDue(at: start, pipeline) || flushed
                try emit(video.encode(picture, pts: t, duration: duration, forcingKeyframe: keyframe), pipeline)
            } else if let audio = pipeline.audio {
                _ = takeFlushRequest(for: pipeline, at: relative)
                guard case .audio(let buffer) = sample.content else {
                    throw MediaError(.invalidArgument, "input \(i) encodes audio but was given a \(sample.formatDescription.mediaType) sample", path: path)
                }
                let start = ticks(relative, pipeline.timeBase)
                try emit(audio.encode(buffer, start: start), pipeline)
                try promiseNextAudio(pipeline)
            } else {
                try passThrough(sample, pipeline, input: i)
            }
        } catch let error as FFmpegError {
            let code: MediaError.Code = Self.isMuxerFailure(error) ? .writeFailed : .encodeFailed
            let failure = MediaError(code, "\(subject(i)): \(pipeline.encoderName.map { "\($0) failed" } ?? "writing failed") at \(pts.seconds) s", path: code == .writeFailed ? path : errorPath(i), underlying: error)
            if code == .encodeFailed && pipeline.configuration.resumable && pipeline.configuration.hardwareDevice != nil {
                pipeline.deviceFailed = true
                throw MediaError(.hardwareFailed, failure.message, path: failure.path, underlying: error)
            }
            throw failure
        } catch let error as VAError {
            // The video processor failed fitting a picture for the device's encoder.
            if pipeline.configuration.resumable && pipeline.configuration.hardwareDevice != nil { pipeline.deviceFailed = true }
            throw MediaError(.hardwareFailed, "\(subject(i)): the video processor failed at \(pts.seconds) s", path: errorPath(i), underlying: error)
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.encodeFailed, "\(subject(i)): \(error)", path: errorPath(i))
        }
    }

    private func passThrough(_ sample: SampleBuffer, _ pipeline: Pipeline, input i: Int) throws {
        guard case .compressed = sample.content, let source = sample.packet else {
            throw MediaError(.invalidArgument, "input \(i) has no output settings, so it takes compressed samples only", path: path)
        }
        try adoptParameters(of: sample, pipeline, input: i)
        var presentation = sample.presentationTimeStamp
        var duration = sample.duration
        if pipeline.configuration.mediaType == .subtitle {
            // A cue shown across the session's start is shown from the start; one over by then is left out.
            let end = presentation + duration
            if presentation < sessionStart {
                guard duration.isNumeric, end > sessionStart else { return }
                (presentation, duration) = (sessionStart, end - sessionStart)
            }
            let last = [sessionEnd, pipeline.configuration.sparseEnd ?? .invalid].filter(\.isNumeric).min()
            if let last, duration.isNumeric, end > last {
                guard presentation < last else { return }
                duration = last - presentation
            }
        }
        _ = takeFlushRequest(for: pipeline, at: presentation - sessionStart)
        let packet: Packet
        if let converter = pipeline.subtitles {
            // A cue that converts to nothing (an empty one) is left out; so is one the converter
            // refuses, said once the track is done, as ffmpeg warns and goes on.
            do {
                guard let converted = try converter.convert(source) else { return }
                packet = converted
            } catch {
                pipeline.refusedCues += 1
                if pipeline.firstRefusedCue == nil { pipeline.firstRefusedCue = (presentation, "\(error)") }
                return
            }
        } else {
            packet = try source.reference()
        }
        let pts = ticks(presentation - sessionStart, pipeline.timeBase)
        packet.pts = pts
        packet.dts = sample.decodeTimeStamp.isNumeric && presentation == sample.presentationTimeStamp
            ? ticks(sample.decodeTimeStamp - sessionStart, pipeline.timeBase) : pts
        packet.duration = duration.isNumeric ? ticks(duration, pipeline.timeBase) : 0
        try emit([packet], pipeline)
    }

    /// Takes a copying input's stream from its first sample's codec parameters, and writes the
    /// header once every input has its stream.
    private func adoptParameters(of sample: SampleBuffer, _ pipeline: Pipeline, input i: Int) throws {
        guard pipeline.parameters == nil else { return }
        guard let parameters = sample.codecParameters else {
            throw MediaError(.invalidArgument, "input \(i): the compressed sample carries no codec parameters to pass through", path: path)
        }
        let scale = pipeline.configuration.mediaTimeScale > 0 ? pipeline.configuration.mediaTimeScale
            : (sample.presentationTimeStamp.timescale > 0 ? sample.presentationTimeStamp.timescale : 90000)
        try adopt(parameters, timeScale: scale, pipeline, input: i)
        try writeHeaderIfReady()
    }

    /// Takes copied input `i`'s stream from `sample`, its first, before the sample is written:
    /// a remux knows every track's first sample at once, so the header need not wait for a
    /// track that starts late (its predecessors would be held until then).
    func prepareCopy(from sample: SampleBuffer, input i: Int) throws(MediaError) {
        checkConfinement()
        guard !closed, pipelines[i].video == nil, pipelines[i].audio == nil, case .compressed = sample.content else { return }
        do { try adoptParameters(of: sample, pipelines[i], input: i) } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.writeFailed, "cannot write the header", path: path, underlying: error as? FFmpegError)
        }
    }

    /// Takes `parameters` as a copying input's stream (converted first where its settings name
    /// another subtitle format), its packets counted in 1/`timeScale` s.
    private func adopt(_ parameters: CodecParameters, timeScale: Int32, _ pipeline: Pipeline, input i: Int) throws(MediaError) {
        var stored = parameters
        if case .subtitle(let settings) = pipeline.configuration.settings, parameters.codec.name != settings.codec.rawValue {
            do { pipeline.subtitles = try SubtitleConverter(source: parameters, target: settings.codec.rawValue) } catch {
                throw MediaError(.unsupported, "\(subject(i)): \(parameters.codec.name) subtitles cannot be converted to \(settings.codec)",
                                 path: errorPath(i), underlying: error)
            }
            stored = pipeline.subtitles?.parameters ?? parameters
        }
        if let reason = WriterCodecs.incompatibility(of: stored.codec, in: configuration.fileType, mediaType: pipeline.configuration.mediaType) {
            throw MediaError(.unsupported, "\(subject(i)): \(reason)", path: errorPath(i))
        }
        pipeline.parameters = stored
        pipeline.timeBase = Rational(1, timeScale)
    }

    // MARK: Resuming after a device failure

    /// True when input `i`'s device failed and it waits to be resumed in software (the
    /// writer itself goes on).
    func awaitsResume(_ i: Int) -> Bool {
        checkConfinement()
        return pipelines.indices.contains(i) && pipelines[i].deviceFailed
    }

    /// Drops input `i`'s open group of pictures and the frames its encoder holds, closes that
    /// encoder (and the device context under it) and opens the software encoder for the same
    /// settings, which writes its parameter sets in the stream. Returns the source time to
    /// resume from (the open group's keyframe; the session start when nothing was written)
    /// and how many pictures were kept before it.
    func resumeInSoftware(input i: Int) throws(MediaError) -> (resumeAt: MediaTime, framesKept: Int) {
        checkConfinement()
        let pipeline = pipelines[i]
        guard !closed, pipeline.configuration.resumable, let old = pipeline.video,
              case .video(let settings) = pipeline.configuration.settings else {
            throw MediaError(.invalidState, "input \(i) cannot be resumed in software", path: path)
        }
        let keyframe = (pipeline.openGOP.first ?? pipeline.pendingVideo)?.pts
        let resumeAt = keyframe.map { sessionStart + pipeline.timeBase.time(ofTicks: $0) } ?? sessionStart
        pipeline.openGOP = []
        pipeline.pendingVideo = nil
        pipeline.pictureDurations = [:]
        pipeline.lastPTS = nil
        pipeline.video = nil
        let plan = try WriterCodecs.videoConfiguration(settings, timeBase: old.encoder.timeBase, globalHeader: false,
                                                        realTime: pipeline.configuration.expectsMediaDataInRealTime)
        let encoder = try openEncoder(plan.name, plan.configuration, input: i)
        do {
            pipeline.video = try WriterVideoStage(encoder: encoder, scalingMode: settings.scalingMode,
                                                  fullRange: settings.colorProperties?.fullRange, observations: pipeline.configuration.observations)
        } catch {
            throw MediaError(.encodeFailed, "cannot prepare frames for \(plan.name)", path: path, underlying: error)
        }
        pipeline.encoderName = plan.name
        pipeline.deviceFailed = false
        return (resumeAt, pipeline.framesKept)
    }

    // MARK: Finishing

    /// Flushes input `i`'s encoder; after this it takes no more samples.
    func finishInput(_ i: Int) throws(MediaError) {
        checkConfinement()
        guard !closed else { return }
        let pipeline = pipelines[i]
        guard !pipeline.finished else { return }
        pipeline.finished = true
        if let first = pipeline.firstRefusedCue, case .subtitle(let settings) = pipeline.configuration.settings {
            let count = pipeline.refusedCues
            warnings.withLock {
                $0.append(String(format: "%@: %d cue%@ could not be converted to %@ and %@ left out (the first at %.3f s: %@)",
                                 subject(i), count, count == 1 ? "" : "s", settings.codec.rawValue, count == 1 ? "was" : "were",
                                 first.time.seconds, first.cause))
            }
        }
        do {
            if let video = pipeline.video { try emit(video.finish(), pipeline) }
            if let audio = pipeline.audio { try emit(audio.finish(), pipeline) }
            try flushPendingVideo(pipeline)
            try releaseOpenGOP(pipeline)
            try writeHeaderIfReady()
            if let stream = pipeline.streamIndex {
                written.withLock { $0[stream]?.finished = true }
                // A finished track's held packets are its last. In segments they go to the cutter
                // now, before it counts the track as complete, or they would land in a later
                // segment; an export writes them now so later pictures do not wait for them.
                // Otherwise they wait for `finish`, as a later `endSession` may still trim them.
                if headerWritten && (configuration.segmentation != nil || !configuration.keepsFinishedAudioTrimmable) {
                    let held = pipeline.held
                    pipeline.held = []
                    for packet in held { try write(packet, pipeline) }
                }
                if pipeline.held.isEmpty { try endStream(pipeline) } else { try promiseNextAudio(pipeline) }
                cutter?.finish(track: stream)
                try writeFragments(final: false)
            }
        } catch let error as MediaError {
            throw error
        } catch let error as FFmpegError where Self.isMuxerFailure(error) {
            throw MediaError(.writeFailed, "\(subject(i)): writing its last packets failed", path: path, underlying: error)
        } catch {
            throw MediaError(.encodeFailed, "\(subject(i)): flushing \(pipeline.encoderName ?? "the input") failed", path: errorPath(i),
                             underlying: error as? FFmpegError)
        }
    }

    /// Finishes every input, writes the trailer and moves the file to its destination.
    func finish() throws(MediaError) {
        checkConfinement()
        guard !closed, let muxer else { throw MediaError(.invalidState, "the writer is no longer writing", path: path) }
        for i in pipelines.indices { try finishInput(i) }
        guard headerWritten else {
            throw MediaError(.invalidState, "no input received a sample, so there is nothing to write", path: path)
        }
        try configuration.probe?.step(.finishing)
        do {
            for pipeline in pipelines {
                for packet in pipeline.held { try write(packet, pipeline) }
                pipeline.held = []
                try endStream(pipeline)
            }
            try writeFragments(final: true)
            try muxer.finish()
            try writeCleanApertures()
        } catch let error as FFmpegError {
            throw MediaError(.writeFailed, "cannot finish the file", path: path, underlying: error)
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.writeFailed, "cannot finish the file: \(error)", path: path)
        }
        self.muxer = nil
        closed = true
        // The encoders (and the device contexts under them) go now, on this thread, not whenever
        // the last reference to the engine happens to drop: the writer's caller may hand the
        // device to the next export as soon as this returns.
        pipelines = []
        if configuration.file != nil { try moveIntoPlace() }
    }

    /// A network-optimised file with a clean aperture and no room reserved for its index: the
    /// index is moved first with the aperture, in one pass, instead of by faststart and again.
    private var movesIndexFirstItself: Bool {
        configuration.shouldOptimizeForNetworkUse && configuration.segmentation == nil && indexReservation() == nil
            && pipelines.contains { $0.configuration.cleanAperture != nil }
    }

    /// Writes the tracks' clean apertures into the finished index of a whole QuickTime or MP4
    /// file (FFmpeg's muxer writes none); other files and fragmented ones carry none.
    private func writeCleanApertures() throws(MediaError) {
        guard let file = configuration.file, configuration.segmentation == nil,
              ["mp4", "mov", "ipod"].contains(configuration.fileType.muxerName) else { return }
        var apertures: [Int: CleanAperture] = [:]
        // FFmpeg 5.1 numbers each track its stream index + 1 (tracks without samples are left out).
        for pipeline in pipelines {
            if let stream = pipeline.streamIndex, let aperture = pipeline.configuration.cleanAperture { apertures[stream + 1] = aperture }
        }
        try MovieBoxes.setCleanApertures(apertures, path: file.temporary.path, movingIndexFirst: movesIndexFirstItself)
    }

    /// Closes and deletes the temporary file, and closes the encoders; later work is ignored.
    func abandon() {
        checkConfinement()
        muxer = nil
        pipelines = []
        closed = true
        if let file = configuration.file { unlink(file.temporary.path) }
        partialLock = nil
    }

    private func moveIntoPlace() throws(MediaError) {
        guard let file = configuration.file else { return }
        let temporary = file.temporary.path
        defer { partialLock = nil }
        if configuration.overwritesExistingFile {
            if rename(temporary, path) != 0 {
                let e = errno
                unlink(temporary)
                throw MediaError(.ioError, "cannot move the finished file into place: \(String(cString: strerror(e)))", path: path)
            }
            return
        }
        // link() fails if the destination exists, so a file that appeared meanwhile is never replaced.
        if link(temporary, path) == 0 {
            unlink(temporary)
            return
        }
        let e = errno
        unlink(temporary)
        if e == EEXIST {
            throw MediaError(.outputExists, "the destination appeared while writing and overwriting is not allowed", path: path)
        }
        throw MediaError(.ioError, "cannot move the finished file into place: \(String(cString: strerror(e)))", path: path)
    }

    // MARK: Muxing

    /// The shortest time a picture is taken to be shown for (2 ms: 480 frames/s still passes).
    static let shortestPictureDuration = MediaTime(value: 1, timescale: 500)

    /// Queues or writes packets produced for `pipeline` (timestamps in its time base). A video
    /// packet without a duration takes its picture's; failing that it waits for its successor,
    /// whose decode time gives one (the last one takes its predecessor's), so no picture ends
    /// up with zero length.
    private func emit(_ packets: [Packet], _ pipeline: Pipeline) throws {
        for packet in packets {
            guard pipeline.configuration.mediaType == .video else {
                try deliver(packet, pipeline)
                continue
            }
            if pipeline.reorderDelay == nil, let pts = packet.pts, let dts = packet.dts { pipeline.reorderDelay = pts - dts }
            if let pts = packet.pts, let shown = pipeline.pictureDurations.removeValue(forKey: pts), packet.duration <= 0 {
                packet.duration = shown
            }
            if let previous = pipeline.pendingVideo {
                if previous.duration <= 0, let a = previous.dts, let b = packet.dts, b > a { previous.duration = b - a }
                if previous.duration > 0 { pipeline.lastDuration = previous.duration }
                try deliver(previous, pipeline)
            }
            pipeline.pendingVideo = packet
        }
    }

    /// Delivers the video packet still waiting for a successor.
    private func flushPendingVideo(_ pipeline: Pipeline) throws {
        guard let last = pipeline.pendingVideo else { return }
        pipeline.pendingVideo = nil
        if last.duration <= 0 { last.duration = pipeline.lastDuration }
        // Encoders give packets no duration: the last one lasts until the last picture's end,
        // so a picture held long (variable-rate video, a composition's last frame) keeps its length.
        // On the decode timeline, shifted back by the reorder delay, that end is where the
        // last packet's duration must reach.
        // Never past that end when shown: with gaps in variable-rate video the last packet's
        // reorder offset can exceed the first one's, and the file would last a picture longer.
        if let end = pipeline.pictureEnd, let dts = last.dts ?? last.pts {
            var reach = end - (pipeline.reorderDelay ?? 0) - dts
            if let pts = last.pts { reach = min(reach, end - pts) }
            if reach > last.duration { last.duration = reach }
        }
        try deliver(last, pipeline)
    }

    private func deliver(_ packet: Packet, _ pipeline: Pipeline) throws {
        if pipeline.configuration.resumable && pipeline.video != nil {
            if packet.isKeyframe { try releaseOpenGOP(pipeline) }
            pipeline.openGOP.append(packet)
            return
        }
        try deliverNow(packet, pipeline)
    }

    /// Delivers a resumable input's held group of pictures: a later keyframe closed it.
    private func releaseOpenGOP(_ pipeline: Pipeline) throws {
        let group = pipeline.openGOP
        pipeline.openGOP = []
        pipeline.framesKept += group.count
        for packet in group { try deliverNow(packet, pipeline) }
    }

    private func deliverNow(_ packet: Packet, _ pipeline: Pipeline) throws {
        if !headerWritten || pipeline.audio != nil {
            pipeline.held.append(packet)
            if pipeline.audio != nil { trimHeldAudio(pipeline) }
            if headerWritten {
                try releaseHeldAudio(pipeline)
                if pipeline.audio != nil, let probe = configuration.probe { probe.countHeldAudio(pipeline.held, timeBase: pipeline.timeBase) }
            }
            return
        }
        try write(packet, pipeline)
    }

    /// Writes held audio packets older than the holdback window.
    private func releaseHeldAudio(_ pipeline: Pipeline) throws {
        guard let newest = pipeline.held.last?.pts else { return }
        let window = ticks(PipelineBounds.audioHoldback, pipeline.timeBase)
        while let first = pipeline.held.first, let pts = first.pts, newest - pts > window {
            pipeline.held.removeFirst()
            try write(first, pipeline)
        }
    }

    /// Tells the muxer's interleaving queue when an encoded audio stream's next packet comes at
    /// the earliest: its oldest held packet, or before any, its first sample less the encoder's
    /// priming. Packets decoded before it then do not wait for it (audio held back behind the
    /// pictures, or a sound track starting late).
    private func promiseNextAudio(_ pipeline: Pipeline) throws {
        guard headerWritten, configuration.segmentation == nil, let muxer, let stream = pipeline.streamIndex,
              let bound = pipeline.held.first.flatMap({ $0.dts ?? $0.pts }) ?? pipeline.audio?.earliestPacketTime else { return }
        try muxer.promiseNoPacket(inStream: stream, before: bound, timeBase: pipeline.timeBase)
    }

    /// Copied input `i` takes no sample decoded or shown before `time` (source time; positive
    /// infinity once it takes none): the muxer need not hold its other streams' earlier packets
    /// for it. Encoding inputs are left out: their encoders decide their packets' times.
    func expectNoSample(input i: Int, before time: MediaTime) throws(MediaError) {
        checkConfinement()
        let pipeline = pipelines[i]
        guard !closed, headerWritten, configuration.segmentation == nil, pipeline.video == nil, pipeline.audio == nil,
              let muxer, let stream = pipeline.streamIndex else { return }
        // Packets the writer still holds go first; one tick less covers rounding to ticks.
        guard time.isNumeric || time.isPositiveInfinity else { return }
        var bound = time.isNumeric ? ticks(time - sessionStart, pipeline.timeBase) - 1 : Int64.max
        for case let packet? in [pipeline.pendingVideo, pipeline.openGOP.first, pipeline.held.first] {
            if let dts = packet.dts { bound = min(bound, dts) }
            if let pts = packet.pts { bound = min(bound, pts) }
        }
        do { try muxer.promiseNoPacket(inStream: stream, before: bound, timeBase: pipeline.timeBase) } catch {
            throw MediaError(.writeFailed, "cannot write packets after the header", path: path, underlying: error)
        }
        configuration.probe?.countMuxerQueue(muxer.interleavingQueue)
    }

    /// Whether a failure is the muxer's (writing the file: a full disk) rather than a codec's.
    static func isMuxerFailure(_ error: FFmpegError) -> Bool {
        ["av_interleaved", "av_write", "avformat", "avio"].contains(where: error.function.hasPrefix)
    }

    /// Tells the muxer that `pipeline` has written its last packet, so nothing waits for it.
    private func endStream(_ pipeline: Pipeline) throws {
        guard configuration.segmentation == nil, let muxer, let stream = pipeline.streamIndex else { return }
        try muxer.endStream(stream)
        configuration.probe?.countMuxerQueue(muxer.interleavingQueue)
    }

    private func write(_ packet: Packet, _ pipeline: Pipeline) throws {
        guard let muxer, let stream = pipeline.streamIndex else { return }
        packet.streamIndex = stream
        if let end = packet.pts.map({ $0 + max(packet.duration, 0) }) {
            let seconds = Double(end) * pipeline.timeBase.doubleValue
            written.withLock { $0[stream] = (max($0[stream]?.seconds ?? 0, seconds), $0[stream]?.finished ?? false) }
        }
        packet.rescaleTimestamps(from: pipeline.timeBase, to: muxer.timeBase(ofStream: stream))
        // Muxers refuse a packet decoded after it is shown. Copied packets of damaged files
        // carry such times (a transport stream's corrupt timestamp): both become the median of
        // the two and the earliest next decode time, as ffmpeg guesses.
        if let pts = packet.pts, let dts = packet.dts, dts > pts {
            let next = (pipeline.lastWrittenDTS ?? pts - 1) + 1
            let median = max(min(pts, dts), min(max(pts, dts), next))
            (packet.pts, packet.dts) = (median, median)
            pipeline.dtsRepairs += 1
        }
        // Muxers refuse decode times that do not increase. Copied packets can carry such times
        // (a mended jump in a transport stream, rounding between time bases): move the decode
        // time just past the previous one and keep the picture shown no earlier, as ffmpeg does.
        if let last = pipeline.lastWrittenDTS, let dts = packet.dts, dts <= last {
            packet.dts = last + 1
            if let pts = packet.pts, pts < last + 1 { packet.pts = last + 1 }
            pipeline.dtsRepairs += 1
        }
        if let dts = packet.dts { pipeline.lastWrittenDTS = dts }
        if configuration.segmentation != nil {
            try cut(packet, stream: stream, timeBase: muxer.timeBase(ofStream: stream))
        } else {
            try muxer.write(packet)
            configuration.probe?.countMuxerQueue(muxer.interleavingQueue)
        }
        didWrite?(writtenSeconds)
    }

    // MARK: Fragments and segments

    /// Answers a `flushSegment()` call with the leading input's next sample, at `time`: the
    /// cutter ends the segment before it. True when it did (an encoding input then makes the
    /// picture a keyframe).
    private func takeFlushRequest(for pipeline: Pipeline, at time: MediaTime) -> Bool {
        guard segmentFlushRequested, pipeline === leadPipeline else { return false }
        segmentFlushRequested = false
        if cutter != nil { cutter!.requestCut(at: time) } else { pendingCuts.append(time) }
        return true
    }

    /// Hands a packet (in its stream's final time base) to the fragment cutter and writes
    /// every fragment that became complete.
    private func cut(_ packet: Packet, stream: Int, timeBase: Rational) throws {
        guard let segmentation = configuration.segmentation else { return }
        if cutter == nil {
            let streams = pipelines.compactMap(\.streamIndex)
            let lead = leadPipeline?.streamIndex ?? streams.min() ?? 0
            let origin = segmentation.origin.isNumeric ? segmentation.origin - sessionStart : .zero
            let fragmentsAtKeyframes = segmentation.fragmentsAtEveryKeyframe && leadPipeline?.configuration.mediaType == .video
            var fresh = FragmentCutter<Packet>(trackCount: (streams.max() ?? 0) + 1, leadTrack: lead, interval: segmentation.interval,
                                              origin: origin, fragmentsAtLeadSyncSamples: fragmentsAtKeyframes)
            for pipeline in pipelines where pipeline.finished { if let index = pipeline.streamIndex { fresh.finish(track: index) } }
            for time in pendingCuts { fresh.requestCut(at: time) }
            pendingCuts = []
            cutter = fresh
        }
        let pts = packet.pts ?? packet.dts ?? 0
        cutter!.add(.init(payload: packet, track: stream, time: timeBase.time(ofTicks: pts),
                          decodeTime: timeBase.time(ofTicks: packet.dts ?? pts), duration: timeBase.time(ofTicks: max(packet.duration, 0)),
                          isSync: packet.isKeyframe, byteCount: packet.size))
        try writeFragments(final: false)
    }

    /// Writes what the cutter can place into the fragment under way, and ends each fragment
    /// complete in every track (the last one too, when `final`) with its own `moof`, handing
    /// segments to the handler.
    private func writeFragments(final: Bool) throws {
        guard let muxer else { return }
        while let step = cutter?.next(final: final) {
            switch step {
            case .write(let item):
                try muxer.write(item.payload)
            case .endFragment(let samples, let endsSegment):
                try writeMovieHeaderIfNeeded()
                let handler = configuration.segmentation?.handler
                let opensSegment = segmentFragments.isEmpty
                // A CMAF segment opens with its type box, written ahead of its first fragment into the segment's bytes.
                if opensSegment && handler != nil && configuration.segmentation?.profile == .mpeg4CMAFCompliant {
                    muxer.writeRawBytes(SegmentBoxes.segmentType)
                }
                segmentFragments.append((opensSegment ? 0 : muxer.writtenByteCount, samples))
                try muxer.flushFragment()
                guard endsSegment else { continue }
                segmentsWritten += 1
                let fragments = segmentFragments
                segmentFragments = []
                guard let handler else { continue }
                let data = Self.data(try muxer.takeWrittenBytes())
                let report = SegmentReport(segmentType: .separable, sequenceNumber: segmentsWritten,
                                           trackReports: trackReports(fragments, in: data))
                try handler(data, .separable, report)
            }
        }
    }

    /// Writes the movie header (the muxer's first flush, with `delay_moov`, writes only it)
    /// and hands it out as the initialization segment.
    private func writeMovieHeaderIfNeeded() throws {
        guard !movieHeaderWritten, let muxer else { return }
        movieHeaderWritten = true
        try muxer.flushFragment()
        guard let handler = configuration.segmentation?.handler else { return }
        try handler(Self.data(try muxer.takeWrittenBytes()), .initialization, nil)
    }

    /// The bytes a memory muxer wrote, as `Data` without a copy: their buffer lives as long as it.
    private static func data(_ bytes: WrittenBytes) -> Data {
        guard let start = bytes.baseAddress else { return Data() }
        return Data(bytesNoCopy: start, count: bytes.count, deallocator: .custom { _, _ in withExtendedLifetime(bytes) {} })
    }

    /// Each track's part of a segment, as its report gives it.
    private func trackReports(_ fragments: [(start: Int, samples: [FragmentCutter<Void>.Item])], in data: Data) -> [SegmentTrackReport] {
        let segment = fragments.flatMap(\.samples)
        let tracks = Set(segment.map(\.track)).sorted()
        return tracks.compactMap { track in
            let items = segment.filter { $0.track == track }
            guard let earliest = items.map(\.time).min(), let end = items.map({ $0.time + $0.duration }).max(),
                  let pipeline = pipelines.first(where: { $0.streamIndex == track }) else { return nil }
            let mediaType = pipeline.configuration.mediaType
            var first: SegmentSampleInformation?
            var keyframes: [SegmentKeyframeInformation] = []
            for fragment in fragments where mediaType == .video {
                guard let sample = fragment.samples.first(where: { $0.track == track }) else { continue }
                // Where the sample is and how long it is as stored: the muxer rewrites start codes as lengths.
                let stored = SegmentBoxes.firstSample(ofTrack: track + 1, in: data, from: fragment.start)
                if first == nil {
                    first = SegmentSampleInformation(presentationTimeStamp: sample.time, offset: stored?.offset ?? 0,
                                                     length: stored?.length ?? sample.byteCount, isSyncSample: sample.isSync)
                }
                // A keyframe opening a fragment: a player can fetch it alone, from its fragment's start.
                if sample.isSync, let stored, stored.length > 0 {
                    keyframes.append(SegmentKeyframeInformation(presentationTimeStamp: sample.time, fragmentOffset: fragment.start,
                                                                endOffset: stored.offset + stored.length))
                }
            }
            return SegmentTrackReport(trackID: track + 1, mediaType: mediaType, earliestPresentationTimeStamp: earliest,
                                      duration: end - earliest, firstVideoSampleInformation: first, keyframes: keyframes,
                                      sampleCount: items.count)
        }
    }

    /// Adds the streams and writes the header once every input that will write has its parameters.
    private func writeHeaderIfReady() throws(MediaError) {
        guard !headerWritten, let muxer else { return }
        guard pipelines.allSatisfy({ $0.parameters != nil || $0.finished }) else { return }
        let writing = pipelines.filter { $0.parameters != nil }
        guard !writing.isEmpty else { return }
        do {
            for pipeline in writing {
                guard let parameters = pipeline.parameters else { continue }
                let index = try muxer.addStream(parameters: parameters, timeBase: pipeline.timeBase, codecTag: pipeline.codecTag)
                pipeline.streamIndex = index
                written.withLock { $0[index] = (0, pipeline.finished) }
                if let language = pipeline.configuration.languageCode { try muxer.setLanguage(language, ofStream: index) }
                for item in pipeline.configuration.metadata { try muxer.setMetadata(item.value, forKey: item.key, ofStream: index) }
                muxer.setDefault(pipeline.configuration.marksOutputTrackAsEnabled, ofStream: index)
                let t = pipeline.configuration.transform
                if pipeline.configuration.mediaType == .video && t != .identity {
                    try muxer.setDisplayMatrix(Self.displayMatrix(t), ofStream: index)
                }
                // HDR10 static metadata: the settings' when encoding, the source's when copying.
                if pipeline.configuration.mediaType == .video {
                    let hint = pipeline.configuration.sourceFormatHint?.video
                    var mastering = hint?.masteringDisplay, light = hint?.contentLightLevel
                    if case .video(let s) = pipeline.configuration.settings { (mastering, light) = (s.masteringDisplay, s.contentLightLevel) }
                    if let mastering { try muxer.setMasteringDisplay(mastering, ofStream: index) }
                    if let light { try muxer.setContentLightLevel(light, ofStream: index) }
                }
            }
            for item in configuration.metadata { try muxer.setMetadata(item.value, forKey: item.key) }
            for (id, chapter) in configuration.chapters.enumerated() {
                let micro = Rational(1, 1_000_000)
                guard let start = micro.ticks(of: chapter.timeRange.start), let end = micro.ticks(of: chapter.timeRange.end) else { continue }
                try muxer.addChapter(id: Int64(id), start: start, end: end, timeBase: micro, title: chapter.title)
            }
            try muxer.writeHeader(options: muxerOptions())
        } catch {
            throw MediaError(.writeFailed, "cannot write the \(configuration.fileType) header", path: path, underlying: error)
        }
        headerWritten = true
        do {
            for pipeline in writing {
                let held = pipeline.held
                pipeline.held = []
                if pipeline.audio != nil {
                    pipeline.held = held
                    try releaseHeldAudio(pipeline)
                } else {
                    for packet in held { try write(packet, pipeline) }
                }
            }
        } catch {
            throw MediaError(.writeFailed, "cannot write packets after the header", path: path, underlying: error as? FFmpegError)
        }
    }

    /// The muxers that write movie fragments (and take the mp4 options below).
    private static let fragmentingMuxers: Set<String> = ["mp4", "mov", "ipod"]

    private func muxerOptions() -> [(name: String, value: String)] {
        guard Self.fragmentingMuxers.contains(configuration.fileType.muxerName) else { return [] }
        var options: [(name: String, value: String)] = []
        var flags = ""
        if let segmentation = configuration.segmentation {
            // The writer ends each fragment itself (`FragmentCutter`).
            flags += "+frag_custom+delay_moov+default_base_moof"
            options.append(("use_editlist", "1"))
            if segmentation.handler != nil { flags += "+skip_trailer" }
            if segmentation.profile == .mpeg4CMAFCompliant { flags += "+cmaf+dash" }
        } else if configuration.shouldOptimizeForNetworkUse {
            // Room reserved for the index after the header puts it first without faststart's
            // second pass, which reads and rewrites the whole file.
            if let reserved = indexReservation() {
                options.append(("moov_size", String(reserved)))
            } else if !movesIndexFirstItself {
                flags += "+faststart"
            }
        }
        // Reverse-DNS keys (a camera's location, make, model, creation date) are written as
        // QuickTime metadata, as the camera wrote them; without this flag FFmpeg drops them.
        if configuration.metadata.contains(where: \.isReverseDNS) { flags += "+use_metadata_tags" }
        if !flags.isEmpty { options.append(("movflags", flags)) }
        if configuration.movieTimeScale > 0 { options.append(("movie_timescale", String(configuration.movieTimeScale))) }
        // FFmpeg doubles a video track's time scale until it reaches 10 000 unless told one.
        if let scale = pipelines.first(where: { $0.configuration.mediaType == .video && $0.configuration.mediaTimeScale > 0 })?
            .configuration.mediaTimeScale {
            options.append(("video_track_timescale", String(scale)))
        }
        return options
    }

    /// Bytes to reserve for the mp4/mov index (moov) ahead of the media, or nil to leave it to
    /// faststart: a bound no index of the expected samples can exceed (FFmpeg fails the file if
    /// its index outgrows the room), used only where that bound is under 0.5 % of the media, so
    /// the unused room is negligible next to the time faststart's rewrite of the file costs.
    private func indexReservation() -> Int? {
        guard let expected = configuration.expectedContent, expected.sampleCount > 0 else { return nil }
        // Per sample at worst: size 4, time 8, composition offset 8, sync 4, dependency 1,
        // chunk offset 8, chunk map 12, sample group 8 (a chunk per sample, nothing run-length
        // coded). Per track: its headers, sample description and codec configuration.
        let tracks = pipelines.reduce(0) { $0 + 4096 + ($1.parameters?.extradataSize ?? 0) }
        let metadata = configuration.metadata.reduce(0) { $0 + 64 + $1.key.utf8.count + $1.value.utf8.count }
        let bound = 16_384 + tracks + metadata + 64 * expected.sampleCount
        return Int64(bound) * 200 <= expected.mediaBytes ? bound : nil
    }

    /// The QuickTime track matrix for `t`: a, b, u / c, d, v / tx, ty, w, 16.16 fixed point
    /// except u, v, w (2.30), which is how FFmpeg stores a display matrix.
    static func displayMatrix(_ t: VideoTransform) -> [Int32] {
        func fixed(_ v: Double) -> Int32 { Int32(clamping: Int64((v * 65536).rounded())) }
        return [fixed(t.a), fixed(t.b), 0, fixed(t.c), fixed(t.d), 0, fixed(t.tx), fixed(t.ty), 1 << 30]
    }

    /// `time` in units of `timeBase`, rounded to nearest; 0 for a time that is not numeric.
    private func ticks(_ time: MediaTime, _ timeBase: Rational) -> Int64 {
        timeBase.ticks(of: time) ?? 0
    }
}

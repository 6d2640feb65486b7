import FFmpegSupport
import HardwareAcceleration
import Foundation
import Synchronization

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
    public var presetName: String { preset.name }

    private struct Settings {
        var timeRange = MediaTimeRange(start: .zero, duration: .positiveInfinity)
        var fileLengthLimit: Int64?
        var shouldOptimizeForNetworkUse = true
        var metadata: [MetadataItem]?
        var audioMix: AudioMix?
        var frameRatePolicy: FrameRatePolicy = .automatic
        var videoCodec: VideoCodec?
        var videoBitRate: Int?
        var audioCodec: AudioCodec?
        var audioBitRate: Int?
        var outputSize: (width: Int, height: Int)?
        var overwritesExistingFile = false
        var hardwarePolicy: HardwarePolicy = .auto
        var hardwareDeviceName: String?
        var hardwareDevice: VideoDevice?
    }

    private struct Run {
        var status: Status = .unknown
        var error: MediaError?
        var progress: Double = 0
        var reader: AssetReader?
        var writer: AssetWriter?
        var cancelled = false
        /// The attempt under way puts a stage on the device (so a failure restarts in software).
        var usesDevice = false
    }

    private let settings = Mutex(Settings())
    private let run = Mutex(Run())

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
    /// Stop cleanly, with a valid file, once the output reaches this many bytes (it may exceed
    /// it by up to a second of media).
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
    /// Replaces the preset's table bit rate (bits per second).
    public var videoBitRate: Int? {
        get { settings.withLock { $0.videoBitRate } }
        set { settings.withLock { $0.videoBitRate = newValue } }
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
    public var outputSize: (width: Int, height: Int)? {
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
    public var hardwareDevice: VideoDevice? {
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

    private let observers = Mutex(Observers())

    /// Gives every `states()` stream the current state when it changed and its interval has
    /// passed (a change of phase always passes); ends the streams once the export ended.
    private func publishState() {
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

    /// Stops the export; `export` throws a `.cancelled` error and leaves no file.
    public func cancelExport() {
        markCancelled()?.cancelWriting()
    }

    /// `cancelExport` for a task-cancellation handler, which must not block: the runtime holds
    /// the task's status lock while it runs, and the writer's queue may be resuming that very
    /// task (finishWriting), so waiting there for the queue deadlocks. The writer is cancelled
    /// from another thread instead.
    private func cancelExportWithoutWaiting() {
        if let writer = markCancelled() { DispatchQueue.global().async { writer.cancelWriting() } }
    }

    /// Flags the export cancelled and stops its reader; returns the writer, still to be cancelled.
    private func markCancelled() -> AssetWriter? {
        let (reader, writer) = run.withLock { r -> (AssetReader?, AssetWriter?) in
            r.cancelled = true
            return (r.reader, r.writer)
        }
        reader?.cancelReading()
        return writer
    }

    // MARK: Presets and compatibility

    /// Every preset name but Passthrough, as `allExportPresets()` lists them.
    public static func allExportPresets() -> [String] { ExportPreset.all.filter { !$0.isPassthrough }.map(\.name) }

    /// The presets that can export `asset` (those needing video are left out for audio-only assets).
    public static func exportPresets(compatibleWith asset: Asset) async throws -> [String] {
        var names: [String] = []
        for preset in ExportPreset.all where !preset.isPassthrough {
            if await compatibility(ofExportPreset: preset.name, with: asset, outputFileType: nil) { names.append(preset.name) }
        }
        return names
    }

    /// True when `preset` can export `asset` to `outputFileType` (nil: to any of its types).
    public static func compatibility(ofExportPreset presetName: String, with asset: Asset, outputFileType: FileType?) async -> Bool {
        guard let preset = ExportPreset(named: presetName), let tracks = try? await asset.load(.tracks) else { return false }
        if let outputFileType, !preset.fileTypes.contains(outputFileType) { return false }
        let hasVideo = tracks.contains { $0.mediaType == .video && !$0.isAttachedPicture && $0.sampleCount > 0 }
        let hasAudio = tracks.contains { $0.mediaType == .audio }
        if preset.isPassthrough { return !tracks.isEmpty }
        if preset.videoCodec != nil { return hasVideo || hasAudio }
        return hasAudio
    }

    /// The file types this preset writes, without looking at the asset.
    public var supportedFileTypes: [FileType] { preset.fileTypes }

    /// The file types that can hold this asset's tracks with this preset.
    public var compatibleFileTypes: [FileType] {
        get async {
            var types: [FileType] = []
            for type in preset.fileTypes where await Self.compatibility(ofExportPreset: preset.name, with: asset, outputFileType: type) {
                types.append(type)
            }
            return types
        }
    }

    /// Expected output size in bytes: table rates × duration for re-encodes, sample bytes for passthrough.
    public var estimatedOutputFileLength: Int64 {
        get async throws {
            let (tracks, duration) = try await asset.load(.tracks, .duration)
            let seconds = exportDuration(assetDuration: duration)
            if preset.isPassthrough {
                let rate = tracks.reduce(0.0) { $0 + Double($1.estimatedDataRate) }
                return Int64(rate * seconds / 8)
            }
            let plan = try await makeAssistant(tracks: tracks)
            let bits = Double(plan.videoSettings?.averageBitRate ?? 0) + Double(plan.audioSettings?.bitRate ?? 0)
            return Int64(bits * seconds / 8)
        }
    }

    /// How much of the asset fits in `fileLengthLimit` (the whole range when there is no limit).
    public var estimatedMaximumDuration: MediaTime {
        get async throws {
            let duration = try await asset.load(.duration)
            let seconds = exportDuration(assetDuration: duration)
            guard let limit = fileLengthLimit else { return MediaTime(seconds: seconds, preferredTimescale: 600) }
            let length = try await estimatedOutputFileLength
            guard length > 0 else { return MediaTime(seconds: seconds, preferredTimescale: 600) }
            return MediaTime(seconds: min(seconds, seconds * Double(limit) / Double(length)), preferredTimescale: 600)
        }
    }

    private func exportDuration(assetDuration: MediaTime) -> Double {
        let range = timeRange
        let end = min(range.end.isNumeric ? range.end.seconds : .infinity, assetDuration.seconds)
        return max(0, end - (range.start.isNumeric ? range.start.seconds : 0))
    }

    /// The settings assistant for this export, fed with the source's formats and the overrides.
    func makeAssistant(tracks: [AssetTrack]) async throws -> OutputSettingsAssistant {
        let s = settings.withLock { $0 }
        var effectivePreset = preset
        if let codec = s.videoCodec, codec != preset.videoCodec, preset.videoCodec != nil {
            effectivePreset = preset.replacingVideoCodec(codec)
        }
        guard var assistant = OutputSettingsAssistant(preset: effectivePreset) else {
            throw MediaError(.invalidArgument, "the \(preset.name) preset has no encoding settings", path: asset.url.path)
        }
        if let video = Self.primaryVideoTrack(tracks) {
            assistant.sourceVideoFormat = video.formatDescription
            assistant.sourceVideoTransform = video.preferredTransform
            if video.nominalFrameRate > 0 {
                assistant.sourceVideoAverageFrameDuration = MediaTime(seconds: 1 / Double(video.nominalFrameRate), preferredTimescale: 90000)
            }
            if video.minFrameDuration.isNumeric { assistant.sourceVideoMinFrameDuration = video.minFrameDuration }
        }
        assistant.sourceAudioFormat = Self.primaryAudioTrack(tracks)?.formatDescription
        assistant.frameRatePolicy = s.frameRatePolicy
        assistant.videoBitRateOverride = s.videoBitRate
        if let size = s.outputSize { assistant.sizeOverride = size }
        return assistant
    }

    /// The video track an export encodes: the first enabled one with samples that is not a cover picture.
    public static func primaryVideoTrack(_ tracks: [AssetTrack]) -> AssetTrack? {
        let video = tracks.filter { $0.mediaType == .video && !$0.isAttachedPicture && $0.sampleCount > 0 }
        return video.first { $0.isEnabled } ?? video.first
    }

    static func primaryAudioTrack(_ tracks: [AssetTrack]) -> AssetTrack? {
        let audio = tracks.filter { $0.mediaType == .audio && $0.sampleCount > 0 }
        return audio.first { $0.isEnabled } ?? audio.first
    }

    // MARK: Exporting

    /// Exports to `url` as `fileType`, writing a temporary file beside it and renaming it on
    /// success: a failed or cancelled export leaves nothing behind. Task cancellation cancels.
    public func export(to url: URL, as fileType: FileType) async throws -> ExportResult {
        try begin()
        do {
            try await ExportSlots.shared.acquire()
        } catch {
            finish(MediaError(.cancelled, "export cancelled while waiting", path: url.path))
            throw MediaError(.cancelled, "export cancelled while waiting", path: url.path)
        }
        defer { Task { await ExportSlots.shared.release() } }
        run.withLock { $0.status = .exporting }
        publishState()
        let started = ContinuousClock.now
        let transfersBefore = HostTransferCounter.totals
        do {
            var result = try await withTaskCancellationHandler {
                try await performWithFallback(to: url, as: fileType)
            } onCancel: {
                cancelExportWithoutWaiting()
            }
            let elapsed = ContinuousClock.now - started
            result.elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let transfers = HostTransferCounter.totals
            result.hostTransfers = transfers.count - transfersBefore.count
            result.hostTransferBytes = transfers.bytes - transfersBefore.bytes
            run.withLock {
                $0.progress = 1
                $0.status = .completed
            }
            publishState()
            return result
        } catch {
            let cancelled = run.withLock { $0.cancelled } || Task.isCancelled
            // The cancellation handler only started cancelling the writer: finish it here, so
            // the partial file is gone before this returns.
            if cancelled { run.withLock { $0.writer }?.cancelWriting() }
            let mediaError = cancelled ? MediaError(.cancelled, "export cancelled", path: url.path)
                : (error as? MediaError ?? MediaError(.encodeFailed, "\(error)", path: url.path))
            finish(mediaError)
            throw mediaError
        }
    }

    /// Runs the export; when the device fails under a hardware or hybrid path, abandons that
    /// attempt (its partial file is deleted) and restarts the output from the beginning in software.
    private func performWithFallback(to url: URL, as fileType: FileType) async throws -> ExportResult {
        do {
            return try await performDroppingEmptyTracks(to: url, as: fileType, softwareOnly: false)
        } catch {
            let (usedDevice, cancelled) = run.withLock { ($0.usesDevice, $0.cancelled) }
            guard usedDevice, !cancelled, !Task.isCancelled, hardwarePolicy != .off else { throw error }
            let cause = (error as? MediaError).map { e in e.message + (e.underlying.map { " (\($0))" } ?? "") } ?? "\(error)"
            guard hardwarePolicy != .require else {
                throw MediaError(.hardwareFailed, "the device failed mid-export and the hardware policy 'require' rules out redoing it in software: \(cause)",
                                 path: asset.url.path, underlying: (error as? MediaError)?.underlying)
            }
            var result = try await performDroppingEmptyTracks(to: url, as: fileType, softwareOnly: true)
            result.fallbackReason = cause
            result.pathReason = "software after the device failed mid-export (\(cause)); restarted from the beginning"
            return result
        }
    }

    /// Runs the export; when a track's data turns out unreadable (its index lists samples, but
    /// not one can be read), redoes the export without that track and says so, as long as
    /// another track is left to export. ffmpeg likewise writes what it can read.
    private func performDroppingEmptyTracks(to url: URL, as fileType: FileType, softwareOnly: Bool) async throws -> ExportResult {
        var unreadable: [ExportResult.DroppedTrack] = []
        while true {
            do {
                var result = try await perform(to: url, as: fileType, softwareOnly: softwareOnly, leavingOut: unreadable)
                result.warnings += unreadable.map { "track \($0.trackID) (\($0.mediaType)): \($0.reason); exported without it" }
                return result
            } catch let empty as TrackYieldedNothing {
                guard empty.otherLanes > 0, !run.withLock({ $0.cancelled }), !Task.isCancelled else { throw empty.error }
                unreadable.append(.init(trackID: empty.trackID, mediaType: empty.mediaType.rawValue,
                                        reason: "no sample of it could be read (the file is damaged)"))
            }
        }
    }

    /// A lane ended without one sample although its track lists some.
    private struct TrackYieldedNothing: Error {
        var trackID: Int
        var mediaType: MediaType
        /// How many other lanes the export had: with none, there is nothing to export without this one.
        var otherLanes: Int
        var error: MediaError
    }

    private func begin() throws {
        try run.withLock { r throws(MediaError) in
            guard r.status == .unknown else {
                throw MediaError(.invalidState, "an export session runs once; this one is \(r.status.rawValue)", path: asset.url.path)
            }
            r.status = .waiting
        }
        publishState()
    }

    private func finish(_ error: MediaError) {
        run.withLock {
            $0.status = error.code == .cancelled ? .cancelled : .failed
            $0.error = error
        }
        publishState()
    }

    /// Raises the progress, never lowering it, and tells the `states()` streams.
    func advance(to value: Double) {
        let raised = run.withLock { r -> Bool in
            let next = max(r.progress, min(value, 0.999))
            defer { r.progress = next }
            return next > r.progress
        }
        if raised { publishState() }
    }

    /// One attempt at the export. However it fails, its reader and writer are stopped and its
    /// temporary file is deleted before it returns.
    private func perform(to url: URL, as fileType: FileType, softwareOnly: Bool,
                         leavingOut unreadable: [ExportResult.DroppedTrack]) async throws -> ExportResult {
        do {
            return try await attempt(to: url, as: fileType, softwareOnly: softwareOnly, leavingOut: unreadable)
        } catch {
            let (reader, writer) = run.withLock { ($0.reader, $0.writer) }
            reader?.cancelReading()
            writer?.cancelWriting()
            throw error
        }
    }

    private func attempt(to url: URL, as fileType: FileType, softwareOnly: Bool,
                         leavingOut unreadable: [ExportResult.DroppedTrack]) async throws -> ExportResult {
        guard preset.fileTypes.contains(fileType) else {
            throw MediaError(.invalidArgument, "the \(preset.name) preset cannot write \(fileType) files (it writes \(preset.fileTypes.map(\.rawValue).joined(separator: ", ")))", path: url.path)
        }
        let (tracks, duration) = try await asset.load(.tracks, .duration)
        let s = settings.withLock { $0 }
        let range = s.timeRange
        let start = range.start.isNumeric ? range.start : .zero
        let endSeconds = min(range.end.isNumeric ? range.end.seconds : .infinity, duration.seconds)
        let totalSeconds = max(endSeconds - start.seconds, 0.001)
        guard endSeconds > start.seconds else {
            throw MediaError(.invalidArgument, "the time range \(start.seconds)–\(endSeconds) s holds no media", path: asset.url.path)
        }

        let reader = AssetReader(asset: asset)
        reader.timeRange = range
        let writer = try AssetWriter(url: url, fileType: fileType, overwritesExistingFile: s.overwritesExistingFile)
        writer.shouldOptimizeForNetworkUse = s.shouldOptimizeForNetworkUse
        // Carry the source's metadata over, minus what the muxer writes itself.
        let muxerKeys: Set<String> = ["major_brand", "minor_version", "compatible_brands", "encoder"]
        let sourceMetadata = try await asset.load(.metadata)
        writer.metadata = s.metadata ?? sourceMetadata.filter { !muxerKeys.contains($0.key) }
        run.withLock {
            $0.reader = reader
            $0.writer = writer
            $0.usesDevice = false
        }
        if run.withLock({ $0.cancelled }) { throw MediaError(.cancelled, "export cancelled", path: url.path) }

        let unreadableIDs = Set(unreadable.map(\.trackID))
        var plan = try await makePlan(tracks: tracks.filter { !unreadableIDs.contains($0.trackID) }, fileType: fileType, softwareOnly: softwareOnly)
        plan.droppedTracks += unreadable
        var result = ExportResult(outputURL: url, fileType: fileType, preset: preset.name)
        result.videoSettings = plan.videoSettings
        result.audioSettings = plan.audioSettings
        result.videoEncoder = plan.videoEncoder
        result.frameRate = plan.frameRate
        result.path = plan.path
        result.pathReason = plan.pathReason
        result.hardwareDevice = plan.device.map { "\($0.path) (\($0.driverName ?? $0.vendor))" }
        result.droppedTracks = plan.droppedTracks
        // What inspecting the source found wrong (damage, mended timestamp jumps) stays true of the output's source.
        result.warnings = (try await asset.load(.warnings)).map { "source: \($0)" } + plan.warnings
        var lanes: [Lane] = []
        for track in plan.passthroughTracks {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
            let input = try AssetWriterInput(mediaType: track.mediaType, outputSettings: nil, sourceFormatHint: track.formatDescription)
            if track.mediaType == .video { input.transform = track.preferredTransform }
            if let language = track.languageCode { input.languageCode = language }
            lanes.append(Lane(track: track, output: output, input: input, converter: nil, copiesPackets: true))
        }
        if let video = plan.videoTrack, let videoSettings = plan.videoSettings {
            let hardware = plan.hardware
            let attributes = if hardware?.scalesOnDevice == true {
                // Decoded, scaled and encoded on the device: the reader's video processor fits
                // the picture, the encoder reads its surfaces.
                PixelBufferAttributes(pixelFormat: .vaapiSurface, width: videoSettings.width, height: videoSettings.height,
                                      scalingMode: videoSettings.scalingMode)
            } else {
                PixelBufferAttributes(pixelFormat: videoSettings.pixelFormat ?? .yuv420p)
            }
            let output = try AssetReaderTrackOutput(track: video, outputSettings: .video(attributes))
            if hardware?.decodesOnDevice == true { output.hardwareDevice = plan.device }
            let input = try AssetWriterInput(mediaType: .video, outputSettings: .video(videoSettings))
            if hardware?.encodesOnDevice == true { input.hardwareDevice = plan.device }
            input.transform = video.preferredTransform
            let converter = plan.frameRate.map { FrameRateConverter(framesPerSecond: $0, start: start) }
            lanes.append(Lane(track: video, output: output, input: input, converter: converter, bitRate: videoSettings.averageBitRate ?? 0))
        }
        if let audioSettings = plan.audioSettings, let first = plan.audioTracks.first {
            let pcm = LinearPCMSettings(sampleRate: audioSettings.sampleRate, channelCount: audioSettings.channelCount,
                                        channelLayout: audioSettings.channelLayout, bitDepth: 32, isFloat: true, isInterleaved: false)
            let output: AssetReaderOutput
            if plan.audioTracks.count == 1 && s.audioMix == nil {
                output = try AssetReaderTrackOutput(track: first, outputSettings: .audio(pcm))
            } else {
                let mix = try AssetReaderAudioMixOutput(audioTracks: plan.audioTracks, audioSettings: pcm)
                mix.audioMix = s.audioMix
                output = mix
            }
            let input = try AssetWriterInput(mediaType: .audio, outputSettings: .audio(audioSettings))
            if let language = first.languageCode { input.languageCode = language }
            lanes.append(Lane(track: first, output: output, input: input, converter: nil, bitRate: audioSettings.bitRate ?? 128_000))
        }
        guard !lanes.isEmpty else {
            throw MediaError(.noTracks, "nothing to export with \(preset.name): \(result.droppedTracks.map { "track \($0.trackID) (\($0.reason))" }.joined(separator: ", "))", path: asset.url.path)
        }
        for lane in lanes {
            guard writer.canAdd(lane.input) else {
                throw MediaError(.unsupported, "a \(fileType) file cannot hold track \(lane.track.trackID) as configured", path: url.path)
            }
            try writer.add(lane.input)
            try reader.add(lane.output)
        }
        // Exports sharing a device wait for one of its session slots. The release task holds
        // the slots only, not the device, so the device closes when its last user is done.
        let slots = plan.device?.sessions
        if let slots {
            run.withLock { $0.usesDevice = true }
            try await slots.acquire()
        }
        defer { if let slots { Task { await slots.release() } } }
        // Progress counts what reached the file, not what was handed over: encoders hold back
        // up to dozens of frames, written while finishing. The writer pushes each step.
        writer.observeWrittenDuration { [weak self] seconds in self?.advance(to: 0.97 * seconds / totalSeconds) }
        try reader.startReading()
        try writer.startWriting()
        try writer.startSession(atSourceTime: start)
        if range.end.isNumeric && range.end.seconds < duration.seconds { try writer.endSession(atSourceTime: range.end) }

        let limit = s.fileLengthLimit
        let tally = LaneTally(lanes: lanes.count)
        let pacer = LanePacer(lanes: lanes.count, start: start, window: Self.laneWindow)
        let end = range.end
        let laneCount = lanes.count
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, lane) in lanes.enumerated() {
                group.addTask {
                    defer { pacer.finish(i) }
                    var converter = lane.converter
                    var samples = lane.output.sampleBuffers.makeAsyncIterator()
                    while true {
                        try Task.checkCancellation()
                        try await pacer.waitForTurn(i)
                        let batch: [SampleBuffer]
                        if lane.copiesPackets {
                            // Copied packets travel in batches (one sample at a time under a
                            // file-length limit, which is checked per sample).
                            batch = try await lane.output.nextBatchAsync(maximumCount: limit == nil ? Self.packetBatch : 1,
                                                                         maximumSpan: Self.packetBatchSpan)
                            if batch.isEmpty { break }
                            try await lane.input.append(contentsOf: batch)
                            tally.counts.withLock { $0[i] += batch.count }
                        } else {
                            guard let sample = try await samples.next() else { break }
                            batch = [sample]
                            for out in converter != nil ? converter!.push(sample) : [sample] {
                                try await lane.input.append(out)
                                tally.counts.withLock { $0[i] += 1 }
                            }
                        }
                        let last = batch[batch.count - 1]
                        // Bytes on disk lag behind the writer's queue: also count what was handed
                        // to it (exact for copied packets, the target rate for encoded media).
                        let handed = tally.bytes.withLock { b -> Int64 in
                            if lane.copiesPackets {
                                b[i] += batch.reduce(0) { $0 + Int64($1.totalSampleSize) }
                            } else {
                                b[i] = Int64(max(0, last.presentationTimeStamp.seconds - start.seconds) * Double(lane.bitRate) / 8)
                            }
                            return b.reduce(0, +)
                        }
                        let batchEnd = batch.map { $0.presentationTimeStamp + $0.duration }.filter(\.isNumeric).max() ?? last.presentationTimeStamp
                        let reached = pacer.advance(i, to: batchEnd)
                        if let limit, max(writer.bytesWritten, handed) >= limit {
                            // End the file where every track has arrived, so a track running
                            // ahead in the writer's interleave window is cut there too.
                            if reached > start { try? writer.endSession(atSourceTime: reached) }
                            reader.cancelReading()
                            break
                        }
                    }
                    if var c = converter {
                        let stop = end.isNumeric ? min(end.seconds, duration.seconds) : duration.seconds
                        for out in c.finish(end: MediaTime(seconds: stop, preferredTimescale: 90000)) {
                            try await lane.input.append(out)
                            tally.counts.withLock { $0[i] += 1 }
                        }
                    }
                    let stoppedForLimit = limit.map { l in tally.bytes.withLock { $0.reduce(0, +) } >= l } ?? false
                    if tally.counts.withLock({ $0[i] }) == 0 && !stoppedForLimit && reader.status != .cancelled {
                        let error = MediaError(.corruptOrTruncated, "track \(lane.track.trackID) (\(lane.track.mediaType)) yielded no samples: the file is truncated or its data unreadable",
                                               path: self.asset.url.path)
                        throw TrackYieldedNothing(trackID: lane.track.trackID, mediaType: lane.track.mediaType,
                                                  otherLanes: laneCount - 1, error: error)
                    }
                    lane.input.markAsFinished()
                }
            }
            // The first lane to fail ends the export: leaving the group cancels the other lanes,
            // which may be waiting for the failed lane in the writer's interleaving window.
            // (`waitForAll` would wait for them, and they would wait forever.)
            while try await group.next() != nil {}
        }
        if let error = reader.error { throw error }
        if run.withLock({ $0.cancelled }) { throw MediaError(.cancelled, "export cancelled", path: url.path) }
        try await writer.finishWriting()
        let written = tally.counts.withLock { $0 }
        for (i, lane) in lanes.enumerated() where lane.track.mediaType == .video { result.videoFrames = written[i] }
        result.stoppedAtFileLengthLimit = limit.map { l in tally.bytes.withLock { $0.reduce(0, +) } >= l || writer.bytesWritten >= l } ?? false
        result.outputBytes = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
        result.durationSeconds = totalSeconds
        return result
    }

    /// What exporting to a `fileType` file would do, without doing it: the settings, encoder,
    /// frame rate and path chosen, and the tracks left out with the reason (`vaf transcode --dry-run`).
    public func plan(fileType: FileType) async throws -> ExportPlan {
        guard preset.fileTypes.contains(fileType) else {
            throw MediaError(.invalidArgument, "the \(preset.name) preset cannot write \(fileType) files", path: asset.url.path)
        }
        return try await makePlan(tracks: try await asset.load(.tracks), fileType: fileType, softwareOnly: false)
    }

    /// The device per the settings, or nil and why there is none.
    private func resolveDevice(_ s: Settings) -> (device: VideoDevice?, problem: String?) {
        if let device = s.hardwareDevice { return (device, nil) }
        do { return (try VideoDevice.shared(s.hardwareDeviceName), nil) } catch { return (nil, error.message) }
    }

    private func makePlan(tracks: [AssetTrack], fileType: FileType, softwareOnly: Bool) async throws -> ExportPlan {
        let s = settings.withLock { $0 }
        var plan = ExportPlan(frameRatePolicy: preset.isPassthrough ? .passthrough : s.frameRatePolicy)
        if preset.isPassthrough {
            for track in tracks {
                if let reason = passthroughRefusal(track, fileType: fileType) {
                    plan.droppedTracks.append(.init(trackID: track.trackID, mediaType: track.mediaType.rawValue, reason: reason))
                } else {
                    plan.passthroughTracks.append(track)
                }
            }
            plan.pathReason = "passthrough copies compressed samples; nothing is decoded or encoded"
        } else {
            let assistant = try await makeAssistant(tracks: tracks)
            let video = preset.videoCodec == nil ? nil : Self.primaryVideoTrack(tracks)
            if var videoSettings = assistant.videoSettings, let video {
                if let codec = s.videoCodec { videoSettings.codec = codec }
                // libx265 budgets bits per frame from the declared rate and ignores timestamps
                // (libx264 follows them), so a variable-rate source declared at its fastest rate
                // ends far below the target bit rate: declare the average rate to it.
                if videoSettings.codec == .hevc, assistant.outputFrameRate == nil, video.nominalFrameRate > 0 {
                    videoSettings.expectedSourceFrameRate = Double(video.nominalFrameRate)
                }
                plan.videoTrack = video
                plan.videoSettings = videoSettings
                plan.videoEncoder = assistant.videoEncoder
                plan.frameRate = assistant.outputFrameRate
                let policy = softwareOnly ? .off : s.hardwarePolicy
                let (device, problem) = policy == .off ? (nil, nil) : resolveDevice(s)
                let decision = try Self.hardwareJob(video, settings: videoSettings).decide(
                    policy: policy, capabilities: device?.capabilities, problem: problem)
                plan.hardware = decision
                if decision.decodesOnDevice || decision.encodesOnDevice { plan.device = device }
                if let encoder = decision.encoder {
                    plan.videoEncoder = EncoderChoice(encoder: encoder, path: .hardware, reason: decision.reason)
                }
            }
            for track in tracks where track.mediaType != .audio && track.trackID != plan.videoTrack?.trackID {
                let reason: String
                if track.mediaType != .video {
                    reason = "\(track.mediaType) tracks are not re-encoded"
                } else if preset.videoCodec == nil {
                    reason = "the \(preset.name) preset is audio only"
                } else {
                    reason = track.isAttachedPicture ? "cover picture" : (track.sampleCount == 0 ? "the track has no samples" : "only the first video track is exported")
                }
                plan.droppedTracks.append(.init(trackID: track.trackID, mediaType: track.mediaType.rawValue, reason: reason))
            }
            let audioTracks = Self.audioTracks(tracks, mix: s.audioMix)
            if var audioSettings = assistant.audioSettings, !audioTracks.isEmpty {
                if let codec = s.audioCodec { audioSettings.codec = codec }
                if let bitRate = s.audioBitRate { audioSettings.bitRate = bitRate }
                plan.audioSettings = audioSettings
                plan.audioTracks = audioTracks
            }
            for track in tracks where track.mediaType == .audio && !audioTracks.contains(where: { $0 === track }) {
                plan.droppedTracks.append(.init(trackID: track.trackID, mediaType: "audio",
                                                reason: track.sampleCount == 0 ? "the track has no samples" : "only the default audio track is exported without an audio mix"))
            }
            plan.path = plan.hardware?.path ?? .software
            plan.pathReason = plan.hardware?.reason ?? "audio is encoded in software"
        }
        let videoTracks = plan.passthroughTracks.filter { $0.mediaType == .video } + (plan.videoTrack.map { [$0] } ?? [])
        if fileType == .mkv || fileType == .webm, let rotated = videoTracks.first(where: { $0.preferredTransform != .identity }) {
            plan.warnings.append("FFmpeg 5.1's Matroska muxer cannot store rotation: track \(rotated.trackID) (rotate \(rotated.preferredTransform.rotationDegrees)°) will play unrotated; use mp4 or mov to keep it")
        }
        return plan
    }

    /// The source and target facts the hardware decision needs for `track` encoded with `settings`.
    static func hardwareJob(_ track: AssetTrack, settings: VideoSettings) -> HardwareJob {
        let source = track.formatDescription.video
        return HardwareJob(
            sourceCodec: track.formatDescription.codec, sourceBitDepth: source?.bitDepth ?? 8,
            sourceChroma: HardwareJob.chroma(ofPixelFormat: source?.pixelFormat),
            sourceSize: PictureSize(width: source?.width ?? settings.width, height: source?.height ?? settings.height),
            targetCodec: settings.codec,
            targetBitDepth: settings.pixelFormat == .yuv420p10 || (settings.profile?.contains("10") ?? false) ? 10 : 8,
            targetSize: PictureSize(width: settings.width, height: settings.height))
    }

    /// Why passthrough cannot copy `track` into a `fileType` file, nil when it can.
    private func passthroughRefusal(_ track: AssetTrack, fileType: FileType) -> String? {
        if track.sampleCount == 0 { return "the track has no samples" }
        if track.mediaType == .data { return "data tracks (\(track.formatDescription.codecTag ?? "unknown")) are not copied" }
        if track.isAttachedPicture { return "cover pictures are not copied" }
        guard let codec = CodecID(name: track.formatDescription.codec) else { return "codec \(track.formatDescription.codec) is unknown" }
        return WriterCodecs.incompatibility(of: codec, in: fileType, mediaType: track.mediaType)
    }

    /// The audio tracks to export: those the mix names (all audio if it names none), else the default one.
    static func audioTracks(_ tracks: [AssetTrack], mix: AudioMix?) -> [AssetTrack] {
        let audio = tracks.filter { $0.mediaType == .audio && $0.sampleCount > 0 }
        guard let mix else { return primaryAudioTrack(tracks).map { [$0] } ?? [] }
        let named = audio.filter { track in mix.inputParameters.contains { $0.trackID == track.trackID } }
        return named.isEmpty ? audio : named
    }

    /// How far (media time) one lane may read ahead of the slowest: what the demuxer queues
    /// for the slow lane meanwhile is what an export holds in compressed packets.
    static let laneWindow = MediaTime(value: 1, timescale: 2)

    /// Samples written and progress (0…1 of the range) per lane, shared by the lane tasks.
    private final class LaneTally: Sendable {
        let counts: Mutex<[Int]>
        /// Bytes handed to the writer per lane (estimated from the bit rate for encoded lanes).
        let bytes: Mutex<[Int64]>
        init(lanes: Int) {
            bytes = Mutex([Int64](repeating: 0, count: lanes))
            counts = Mutex([Int](repeating: 0, count: lanes))
        }
    }

    /// One track's way from reader to writer.
    private struct Lane: @unchecked Sendable {
        let track: AssetTrack
        let output: AssetReaderOutput
        let input: AssetWriterInput
        let converter: FrameRateConverter?
        /// Target bits per second of an encoded lane, 0 for passthrough.
        var bitRate = 0
        /// The lane copies compressed packets (passthrough): they cross threads in batches.
        var copiesPackets = false
    }

    /// Copied packets handed from reader to writer at once, and the most decode time one
    /// batch may span: a thread hop per batch instead of per packet, with batches short enough
    /// (a quarter second) to stay well inside the lanes' pacing window.
    static let packetBatch = 64
    static let packetBatchSpan = MediaTime(value: 1, timescale: 4)
}

/// What an export will do: the settings and encoder chosen, the path and why, and what is left out.
public struct ExportPlan: Sendable {
    public var videoSettings: VideoSettings?
    public var audioSettings: AudioSettings?
    public var videoEncoder: EncoderChoice?
    /// The constant output frame rate, nil when the source timing is kept.
    public var frameRate: Double?
    public var frameRatePolicy: FrameRatePolicy
    public var path: ExportResult.Path = .software
    public var pathReason = ""
    /// Which video stages run on the device, nil when nothing is encoded.
    public var hardware: HardwareDecision?
    /// The device the hardware stages run on; nil when every stage runs in software.
    public var device: VideoDevice?
    public var droppedTracks: [ExportResult.DroppedTrack] = []
    public var warnings: [String] = []
    /// Tracks copied as stored (passthrough).
    var passthroughTracks: [AssetTrack] = []
    var videoTrack: AssetTrack?
    var audioTracks: [AssetTrack] = []

    init(frameRatePolicy: FrameRatePolicy) {
        self.frameRatePolicy = frameRatePolicy
    }
}

/// What an export did: where, how, with which settings and encoders, and what it cost.
public struct ExportResult: Sendable, Codable {
    /// Which path a stream took: software, hardware (decode, scale and encode on the GPU) or hybrid.
    public enum Path: String, Sendable, Codable { case software, hybrid, hardware }

    public struct DroppedTrack: Sendable, Codable, Hashable {
        public var trackID: Int
        public var mediaType: String
        public var reason: String
    }

    public var outputURL: URL
    public var fileType: FileType
    public var preset: String
    public var videoSettings: VideoSettings?
    public var audioSettings: AudioSettings?
    public var videoEncoder: EncoderChoice?
    /// The constant output frame rate, nil when the source timing was kept.
    public var frameRate: Double?
    public var videoFrames = 0
    public var durationSeconds = 0.0
    public var outputBytes: Int64 = 0
    public var elapsedSeconds = 0.0
    public var path: Path = .software
    public var pathReason = ""
    /// Copies between GPU surfaces and host memory during the export, and their bytes.
    public var hostTransfers = 0
    public var hostTransferBytes = 0
    /// The VA-API device used ("/dev/dri/renderD128 (iHD)"), nil for the software path.
    public var hardwareDevice: String?
    /// Set when the device failed mid-export and the output was redone in software: the failure.
    public var fallbackReason: String?
    public var droppedTracks: [DroppedTrack] = []
    public var stoppedAtFileLengthLimit = false
    /// Things the output could not keep from the source, e.g. rotation in Matroska.
    public var warnings: [String] = []

    init(outputURL: URL, fileType: FileType, preset: String) {
        self.outputURL = outputURL
        self.fileType = fileType
        self.preset = preset
    }

    /// Media seconds exported per wall-clock second.
    public var speed: Double { elapsedSeconds > 0 ? durationSeconds / elapsedSeconds : 0 }
}

/// Bounds how many exports run at once in this process; the rest wait (`.waiting`).
actor ExportSlots {
    static let shared = ExportSlots(limit: max(1, ProcessInfo.processInfo.activeProcessorCount))
    private let limit: Int
    private var running = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) { self.limit = limit }

    func acquire() async throws {
        try Task.checkCancellation()
        if running < limit {
            running += 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
        if Task.isCancelled {
            release()
            throw CancellationError()
        }
    }

    func release() {
        if waiters.isEmpty {
            running = max(0, running - 1)
        } else {
            waiters.removeFirst().resume()
        }
    }
}

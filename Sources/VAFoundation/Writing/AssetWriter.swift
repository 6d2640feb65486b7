import Foundation
import FFmpegSupport

/// Writes media samples into a new file (`AVAssetWriter`'s role): encodes pictures and audio
/// with FFmpeg's software encoders, or passes compressed samples through, and muxes them into
/// mp4, mov, m4v, m4a, mkv or webm; or cuts them into fragmented-MPEG-4 segments for HLS and
/// DASH, handed to a delegate (`init(fileType:)`, `outputFileTypeProfile`).
///
/// The file is written beside the destination under a hidden temporary name and renamed
/// into place only when `finishWriting()` succeeds; a failed, cancelled or abandoned write
/// leaves nothing behind. All members may be used from any thread; encoding and muxing run
/// on one serial queue per writer.
public final class AssetWriter: Sendable {
    /// Where a writer is in its life (`AVAssetWriter.Status`).
    public enum Status: Int, Sendable, CustomStringConvertible {
        case unknown, writing, completed, failed, cancelled
        public var description: String { ["unknown", "writing", "completed", "failed", "cancelled"][rawValue] }
    }

    /// The file written; nil for a writer that hands segments to its delegate.
    public let outputURL: URL?
    public let outputFileType: FileType
    /// True when an existing file at `outputURL` may be replaced.
    public let overwritesExistingFile: Bool

    private struct Options {
        var inputs: [AssetWriterInput] = []
        var metadata: [MetadataItem] = []
        var chapters: [Chapter] = []
        var shouldOptimizeForNetworkUse = false
        var movieFragmentInterval = MediaTime.invalid
        var outputFileTypeProfile: FileTypeProfile?
        var preferredOutputSegmentInterval = MediaTime.invalid
        var initialSegmentStartTime = MediaTime.invalid
        weak var delegate: (any AssetWriterDelegate)?
        var segmentHandler: SegmentHandler?
        var fragmentsAtEveryKeyframe = false
        var movieTimeScale: Int32 = 0
        var expectedContent: ExpectedContent?
        var probe: StageProbe?
        var keepsFinishedAudioTrimmable = true
    }
    private let options = Locked(Options())
    /// The hidden partial file being written, once `startWriting` has run.
    private let partialFile = Locked<URL?>(nil)
    let core: WriterCore

    /// A writer for `url`. Throws `outputExists` if the file exists and `overwritesExistingFile`
    /// is false, `invalidArgument` if the directory is missing.
    public init(url: URL, fileType: FileType, overwritesExistingFile: Bool = false) throws(MediaError) {
        guard url.isFileURL else { throw MediaError(.invalidArgument, "the output must be a file URL", path: url.absoluteString) }
        let directory = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MediaError(.invalidArgument, "the output directory does not exist", path: url.path)
        }
        if !overwritesExistingFile && FileManager.default.fileExists(atPath: url.path) {
            throw MediaError(.outputExists, "the output exists and overwriting was not allowed", path: url.path)
        }
        outputURL = url
        outputFileType = fileType
        self.overwritesExistingFile = overwritesExistingFile
        core = WriterCore(destinationPath: url.path)
    }

    /// A writer that writes no file: it cuts the media into fragmented-MPEG-4 segments and
    /// hands each to its `delegate` (`AVAssetWriter(contentType:)`). Set `outputFileTypeProfile`
    /// and a delegate before `startWriting()`. `fileType` must be mp4, m4v, m4a or mov.
    public init(fileType: FileType) {
        outputURL = nil
        outputFileType = fileType
        overwritesExistingFile = false
        core = WriterCore(destinationPath: "\(fileType) segments")
    }

    /// How far (media time) one input may run ahead of every other unfinished one: appends
    /// to it wait meanwhile. An export, whose tracks are read independently, keeps this short
    /// (`PipelineBounds.exportInterleavingWindow`); a caller appending in file order needs the default
    /// (`PipelineBounds.interleavingWindow`).
    var interleavingWindow: MediaTime {
        get { core.state.withLock { $0.interleavingWindow } }
        set { core.state.withLock { $0.interleavingWindow = newValue } }
    }

    /// What errors name as the output.
    private var displayPath: String { outputURL?.path ?? core.destinationPath }

    /// A writer that is dropped while writing cancels, deleting its partial output.
    deinit { core.cancel() }

    public var status: Status { core.status }
    /// Why the writer failed; nil unless `status` is `.failed`.
    public var error: MediaError? { core.error }

    /// Container metadata (title, artist…), written by key. Set before `startWriting()`.
    public var metadata: [MetadataItem] {
        get { options.withLock { $0.metadata } }
        set { options.withLock { $0.metadata = newValue } }
    }
    /// Chapter markers on the output's timeline (MP4/MOV: a QuickTime chapter track and Nero
    /// chapters; Matroska: its chapters). Set before `startWriting()`.
    public var chapters: [Chapter] {
        get { options.withLock { $0.chapters } }
        set { options.withLock { $0.chapters = newValue } }
    }
    /// Puts the mp4/mov index (moov) before the media data (FFmpeg's `faststart`). No effect
    /// on Matroska, whose index is found through its seek head. Set before `startWriting()`.
    public var shouldOptimizeForNetworkUse: Bool {
        get { options.withLock { $0.shouldOptimizeForNetworkUse } }
        set { options.withLock { $0.shouldOptimizeForNetworkUse = newValue } }
    }
    /// The export's test seam (set before `startWriting()`).
    /// Whether an input's held-back audio stays trimmable by `endSession` after the input is
    /// finished (AVFoundation's contract, the default). An export turns it off: it ends its
    /// session after writing starts only where its unfinished tracks have arrived (a length
    /// limit), never inside a finished track, so that audio goes to the muxer at once and the
    /// pictures after it do not wait for it.
    var keepsFinishedAudioTrimmable: Bool {
        get { options.withLock { $0.keepsFinishedAudioTrimmable } }
        set { options.withLock { $0.keepsFinishedAudioTrimmable = newValue } }
    }

    var probe: StageProbe? {
        get { options.withLock { $0.probe } }
        set { options.withLock { $0.probe = newValue } }
    }

    /// The engine (encoders and muxer) while writing, for the export's test seam.
    var engine: AnyObject? { core.state.withLock { $0.engine } }

    /// What the writer left out on the way and says once it has finished (cues a subtitle
    /// conversion refused).
    var warnings: [String] { core.state.withLock { $0.warnings } }

    /// How many samples and bytes of media the writer will be given at most.
    struct ExpectedContent: Sendable {
        var sampleCount: Int
        var mediaBytes: Int64
    }

    /// At most what will be written, when the caller knows it (a remux knows from the source's
    /// index): a network-optimised mp4/mov then reserves room for its index instead of
    /// rewriting the file at the end. Set before `startWriting()`.
    var expectedContent: ExpectedContent? {
        get { options.withLock { $0.expectedContent } }
        set { options.withLock { $0.expectedContent = newValue } }
    }

    /// Writes a fragmented mp4/mov with a fragment (moof) about this often; `.invalid`
    /// (the default) writes one index at the end. Set before `startWriting()`.
    public var movieFragmentInterval: MediaTime {
        get { options.withLock { $0.movieFragmentInterval } }
        set { options.withLock { $0.movieFragmentInterval = newValue } }
    }
    /// The kind of segments to write (`AVAssetWriter.outputFileTypeProfile`). A writer with a
    /// file writes them into it as fragments; one made with `init(fileType:)` hands them to
    /// its delegate. Set before `startWriting()`.
    public var outputFileTypeProfile: FileTypeProfile? {
        get { options.withLock { $0.outputFileTypeProfile } }
        set { options.withLock { $0.outputFileTypeProfile = newValue } }
    }
    /// How long segments should last: each ends before the first sync sample of the leading
    /// track (the first video input) at or after a multiple of this past
    /// `initialSegmentStartTime`, and an encoding video input makes that picture a keyframe.
    /// `.indefinite` ends one only at `flushSegment()`. Set before `startWriting()`.
    public var preferredOutputSegmentInterval: MediaTime {
        get { options.withLock { $0.preferredOutputSegmentInterval } }
        set { options.withLock { $0.preferredOutputSegmentInterval = newValue } }
    }
    /// Where segment boundaries are counted from, on the appended samples' timeline; invalid
    /// (the default) counts from the session's start. Set before `startWriting()`.
    public var initialSegmentStartTime: MediaTime {
        get { options.withLock { $0.initialSegmentStartTime } }
        set { options.withLock { $0.initialSegmentStartTime = newValue } }
    }
    /// Receives the segments of a writer made with `init(fileType:)`; held weakly.
    public var delegate: (any AssetWriterDelegate)? {
        get { options.withLock { $0.delegate } }
        set { options.withLock { $0.delegate = newValue } }
    }
    /// Receives the segments in the library's own callers, instead of a delegate: an error
    /// it throws fails the writer (and its output goes). Set before `startWriting()`.
    var segmentHandler: SegmentHandler? {
        get { options.withLock { $0.segmentHandler } }
        set { options.withLock { $0.segmentHandler = newValue } }
    }
    /// Each keyframe of the leading video track starts a fragment of its own within its
    /// segment, so a player can fetch a keyframe alone (an HLS I-frame playlist's byte
    /// ranges). Set before `startWriting()`.
    var fragmentsAtEveryKeyframe: Bool {
        get { options.withLock { $0.fragmentsAtEveryKeyframe } }
        set { options.withLock { $0.fragmentsAtEveryKeyframe = newValue } }
    }

    /// Ends the segment under way: the leading input's next sample opens the next one (an
    /// encoding video input makes it a keyframe; a passthrough one should give a sync sample,
    /// else the segment ends at its next one). For `preferredOutputSegmentInterval` `.indefinite`.
    public func flushSegment() throws(MediaError) {
        guard options.withLock({ $0.outputFileTypeProfile != nil }) else {
            throw MediaError(.invalidState, "flushSegment needs an outputFileTypeProfile", path: displayPath)
        }
        try core.flushSegment()
    }

    /// Time scale of the mp4/mov movie header; 0 lets FFmpeg choose. Set before `startWriting()`.
    public var movieTimeScale: Int32 {
        get { options.withLock { $0.movieTimeScale } }
        set { options.withLock { $0.movieTimeScale = newValue } }
    }

    public var inputs: [AssetWriterInput] { options.withLock { $0.inputs } }

    /// Media types this file type can hold.
    public var availableMediaTypes: [MediaType] { outputFileType == .m4a ? [.audio] : [.video, .audio, .subtitle] }

    /// True when `input` can be added: writing has not started, it belongs to no writer, its
    /// media type fits the file type and its settings can be encoded into it.
    public func canAdd(_ input: AssetWriterInput) -> Bool { (try? check(input)) != nil }

    /// Adds `input`; throws the reason `canAdd` would return false.
    public func add(_ input: AssetWriterInput) throws(MediaError) {
        try check(input)
        try input.attach(to: core, index: core.addInput(mediaType: input.mediaType))
        options.withLock { $0.inputs.append(input) }
    }

    private func check(_ input: AssetWriterInput) throws(MediaError) {
        guard status == .unknown else { throw MediaError(.invalidState, "inputs must be added before startWriting", path: displayPath) }
        guard !input.isAttached else { throw MediaError(.invalidState, "the input already belongs to a writer", path: displayPath) }
        guard availableMediaTypes.contains(input.mediaType) else {
            throw MediaError(.unsupported, "a \(outputFileType) file cannot hold \(input.mediaType)", path: displayPath)
        }
        if let error = incompatibility(input.outputSettings, input.mediaType) { throw error }
    }

    /// True when `outputSettings` can be encoded and stored in this file type
    /// (nil settings, passthrough, are judged when the first sample arrives).
    public func canApply(outputSettings: AssetWriterInput.OutputSettings?, forMediaType mediaType: MediaType) -> Bool {
        incompatibility(outputSettings, mediaType) == nil
    }

    /// Why `settings` cannot be used for `mediaType` in this file type, nil when they can.
    private func incompatibility(_ settings: AssetWriterInput.OutputSettings?, _ mediaType: MediaType) -> MediaError? {
        let path = displayPath
        guard availableMediaTypes.contains(mediaType) else {
            return MediaError(.unsupported, "a \(outputFileType) file cannot hold \(mediaType)", path: path)
        }
        let name: String
        do {
            switch settings {
            case nil: return nil
            case .video(let s):
                guard mediaType == .video else { return MediaError(.invalidArgument, "video settings given for a \(mediaType) input", path: path) }
                name = try WriterCodecs.videoConfiguration(s, timeBase: Rational(1, 90000), globalHeader: false, realTime: false).name
                if let aperture = s.cleanAperture, let problem = WriterCodecs.cleanApertureProblem(aperture, settings: s, fileType: outputFileType) {
                    return MediaError(.unsupported, problem, path: path)
                }
            case .audio(let s):
                guard mediaType == .audio else { return MediaError(.invalidArgument, "audio settings given for a \(mediaType) input", path: path) }
                name = try WriterCodecs.audioConfiguration(s, globalHeader: false).name
            case .subtitle(let s):
                guard mediaType == .subtitle else { return MediaError(.invalidArgument, "subtitle settings given for a \(mediaType) input", path: path) }
                guard let codec = CodecID(name: s.codec.rawValue), codec.isTextSubtitle else {
                    return MediaError(.invalidArgument, "\(s.codec) is not a text subtitle format", path: path)
                }
                return WriterCodecs.incompatibility(of: codec, in: outputFileType, mediaType: mediaType).map { MediaError(.unsupported, $0, path: path) }
            }
        } catch {
            var error = error
            error.path = path
            return error
        }
        guard let codec = Encoder.codec(ofEncoder: name) else { return MediaError(.unsupported, "encoder \(name) is missing", path: path) }
        return WriterCodecs.incompatibility(of: codec, in: outputFileType, mediaType: mediaType).map { MediaError(.unsupported, $0, path: path) }
    }

    /// Creates the temporary output and opens every input's encoder; after this the inputs
    /// take samples (once a session is started). Blocks while encoders open. On failure the
    /// writer's status is `.failed` and the error is thrown.
    public func startWriting() throws(MediaError) {
        let snapshot = options.withLock { $0 }
        guard !snapshot.inputs.isEmpty else {
            let error = MediaError(.invalidState, "add at least one input before startWriting", path: displayPath)
            core.failBeforeStart(error)
            throw error
        }
        if let outputURL, !overwritesExistingFile && FileManager.default.fileExists(atPath: outputURL.path) {
            let error = MediaError(.outputExists, "the output exists and overwriting was not allowed", path: displayPath)
            core.failBeforeStart(error)
            throw error
        }
        let segmentation: WriterSegmentation?
        do throws(MediaError) { segmentation = try Self.segmentation(snapshot, writesFile: outputURL != nil, writer: self) } catch {
            core.failBeforeStart(error)
            throw error
        }
        let askedForAperture = snapshot.inputs.contains { input in
            if case .video(let s) = input.outputSettings, s.cleanAperture != nil { return true }
            return false
        }
        if segmentation != nil, askedForAperture {
            let error = MediaError(.unsupported, "fragments and segments cannot carry a clean aperture here; write a whole file", path: displayPath)
            core.failBeforeStart(error)
            throw error
        }
        let file = outputURL.map { (destination: $0, temporary: Self.temporaryURL(beside: $0)) }
        partialFile.withLock { $0 = file?.temporary }
        let configuration = WriterConfiguration(
            file: file, displayPath: displayPath, fileType: outputFileType,
            overwritesExistingFile: overwritesExistingFile, metadata: snapshot.metadata, chapters: snapshot.chapters,
            shouldOptimizeForNetworkUse: snapshot.shouldOptimizeForNetworkUse,
            movieFragmentInterval: snapshot.movieFragmentInterval, segmentation: segmentation, movieTimeScale: snapshot.movieTimeScale,
            expectedContent: snapshot.expectedContent, probe: snapshot.probe,
            keepsFinishedAudioTrimmable: snapshot.keepsFinishedAudioTrimmable)
        try core.start(configuration, inputs: snapshot.inputs.map { $0.configurationSnapshot() })
    }

    /// How the options cut the output: segments where a profile is set (to the delegate or
    /// handler when there is no file), fragments where only `movieFragmentInterval` is.
    private static func segmentation(_ o: Options, writesFile: Bool, writer: AssetWriter) throws(MediaError) -> WriterSegmentation? {
        let path = writer.displayPath
        guard let profile = o.outputFileTypeProfile else {
            guard writesFile else {
                throw MediaError(.invalidState, "a writer without a file needs an outputFileTypeProfile for its segments", path: path)
            }
            let fragment = o.movieFragmentInterval
            guard fragment.isNumeric && fragment > .zero else { return nil }
            return WriterSegmentation(profile: nil, interval: fragment, origin: .invalid, handler: nil)
        }
        let interval = o.preferredOutputSegmentInterval
        guard interval.isIndefinite || (interval.isNumeric && interval > .zero) else {
            throw MediaError(.invalidArgument, "segments need a positive preferredOutputSegmentInterval, or .indefinite", path: path)
        }
        var handler: SegmentHandler?
        if !writesFile {
            if let own = o.segmentHandler {
                handler = own
            } else if o.delegate != nil {
                handler = { [weak writer] data, type, report in
                    guard let writer, let delegate = writer.delegate else { return }
                    delegate.assetWriter(writer, didOutputSegmentData: data, segmentType: type, segmentReport: report)
                }
            } else {
                throw MediaError(.invalidState, "a writer without a file needs a delegate for its segments", path: path)
            }
        }
        return WriterSegmentation(profile: profile, interval: interval, origin: o.initialSegmentStartTime, handler: handler,
                                  fragmentsAtEveryKeyframe: o.fragmentsAtEveryKeyframe)
    }

    /// Calls `observer` with `writtenDuration` each time a packet reaches the file, on the
    /// writer's queue (keep it short). Set before `startWriting()`.
    func observeWrittenDuration(_ observer: @escaping @Sendable (Double) -> Void) {
        core.writeObserver.withLock { $0 = observer }
    }

    /// The writer's own thread and a sink into its engine (see `WriterCore.writerThreadStage`).
    func writerThreadStage() throws(MediaError) -> (stage: StageThread, sink: WriterThreadSink) {
        try core.writerThreadStage()
    }

    /// Seconds of media after the session start that have reached the file (encoded and muxed):
    /// what progress should count, since encoders hold frames back.
    public var writtenDuration: Double { core.writtenSeconds }

    /// Bytes written so far: the size of the partial file on disk while writing (the muxer's
    /// last few kilobytes may still be buffered), the output's size once finished.
    public var bytesWritten: Int64 {
        guard let outputURL else { return 0 }
        let path = status == .completed ? outputURL.path : (partialFile.withLock { $0 }?.path ?? outputURL.path)
        return (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// Starts the single session at `time`: samples earlier than it are dropped and
    /// timestamps are written relative to it.
    public func startSession(atSourceTime time: MediaTime) throws(MediaError) { try core.startSession(at: time) }

    /// Ends the session at `time`: later samples are dropped, audio is trimmed to it.
    public func endSession(atSourceTime time: MediaTime) throws(MediaError) { try core.endSession(at: time) }

    /// Marks every input finished, flushes the encoders, completes the file and moves it to
    /// `outputURL`. Throws (and leaves no file) if anything failed.
    public func finishWriting() async throws(MediaError) { try await core.finish() }

    /// Stops writing and deletes the partial output. Blocks until queued work stops; does
    /// nothing once the writer completed or failed.
    public func cancelWriting() { core.cancel() }

    /// `cancelWriting` without waiting for the partial file's deletion (queued on the writer's
    /// thread); a later `cancelWriting` waits for it. For cancellation handlers, which must not block.
    func cancelWritingWithoutWaiting() { core.markCancelled() }

    /// `.name.vaf-partial-PID-XXXXXX.ext` in the destination's directory. The writer holds a
    /// lock on it while it writes (`PartialFileLock`), which is what tells a later run that the
    /// file is still being written; the PID in the name only tells a person whose file it was.
    static func temporaryURL(beside url: URL) -> URL {
        let ext = url.pathExtension
        let base = url.deletingPathExtension().lastPathComponent
        let random = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let name = ".\(base).vaf-partial-\(getpid())-\(random)" + (ext.isEmpty ? "" : ".\(ext)")
        return url.deletingLastPathComponent().appendingPathComponent(name)
    }

    /// Removes the partial files that writers no longer running left for `destinations` (a
    /// process killed with SIGKILL, by the OOM killer or a power cut cannot remove its own).
    /// Only files named as a writer of one of those destinations names them are touched, and
    /// only when their lock can be taken: a writer still running anywhere (another PID
    /// namespace, another NFS client) holds it. Returns the files removed.
    @discardableResult
    public static func removeStalePartialFiles(for destinations: [URL]) -> [URL] {
        let byDirectory = Dictionary(grouping: destinations.map(\.standardizedFileURL)) { $0.deletingLastPathComponent() }
        return byDirectory.flatMap { directory, outputs in
            let names = Set(outputs.map(\.lastPathComponent))
            return removeStalePartialFiles(in: directory) { names.contains($0) }
        }
    }

    /// Removes the abandoned partial files in `directory` of the destinations whose names
    /// `isDestination` accepts: for outputs whose names are not known before they are made
    /// (`vaf thumbnails`' NAME-001.jpg…, as many as the images). Returns the files removed.
    @discardableResult
    public static func removeStalePartialFiles(in directory: URL, where isDestination: (String) -> Bool) -> [URL] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        var removed: [URL] = []
        for entry in entries.sorted() {
            guard let destination = destinationName(ofPartial: entry), isDestination(destination) else { continue }
            let file = directory.appendingPathComponent(entry)
            if PartialFileLock.removeIfAbandoned(file.path) { removed.append(file) }
        }
        return removed
    }

    /// The name of the destination a partial file's name stands for
    /// (`.name.vaf-partial-PID-XXXXXX.ext` → `name.ext`), nil for any other name.
    static func destinationName(ofPartial name: String) -> String? {
        guard name.hasPrefix("."), let marker = name.range(of: ".vaf-partial-", options: .backwards) else { return nil }
        let base = name[name.index(after: name.startIndex)..<marker.lowerBound]
        let tail = name[marker.upperBound...].split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let fields = tail[0].split(separator: "-", omittingEmptySubsequences: false)
        guard !base.isEmpty, fields.count == 2, let pid = Int32(fields[0]), pid > 0,
              !fields[1].isEmpty, fields[1].allSatisfy(\.isHexDigit) else { return nil }
        return tail.count == 2 ? "\(base).\(tail[1])" : String(base)
    }
}

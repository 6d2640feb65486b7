import FFmpegSupport
import Foundation

/// What a rendition of a streaming package takes from a multi-output export: its media, its
/// size and rate, and where its segments go.
struct RenditionOutput: Sendable {
    var writesVideo: Bool
    /// The audio track it writes (AAC-LC stereo); nil for none.
    var audioTrackID: Int?
    var outputSize: Size?
    /// The rung's rate, in place of the preset table's (still capped at the source's).
    var tableVideoBitRate: Int?
    var segments: Segments

    struct Segments: Sendable {
        var profile: FileTypeProfile
        var interval: MediaTime
        /// Keyframes at every multiple of this, in every rendition alike.
        var keyframeInterval: MediaTime
        var handler: SegmentHandler
    }
}

/// Turns one asset into an HLS and DASH streaming package from one read of the source: an
/// adaptive-bit-rate ladder of video renditions, one AAC stereo rendition per audio
/// language, cut into CMAF segments that the HLS playlists and the DASH manifest both list,
/// and a WebVTT rendition per text subtitle track (`exportSession.subtitleSelection` chooses).
///
/// ```swift
/// let packager = StreamingPackager(asset: Asset(url: movie))
/// packager.ladder = [StreamingRung(width: 1280, height: 720, bitRate: 3_000_000),
///                    StreamingRung(width: 640, height: 360, bitRate: 730_000)]
/// let result = try await packager.package(to: URL(fileURLWithPath: "out/movie"))
/// ```
///
/// The package is built in a hidden folder beside its destination and renamed into place
/// once complete: a reader never sees half a package, and a failure or cancellation leaves
/// nothing.
public final class StreamingPackager: Sendable {
    /// Which manifests a package gets; both list the same segment files.
    public struct Formats: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let hls = Formats(rawValue: 1)
        public static let dash = Formats(rawValue: 2)
        public static let both: Formats = [.hls, .dash]
    }

    struct Options {
        var ladder: [StreamingRung]?
        var videoCodec = VideoCodec.h264
        var segmentDuration = MediaTime(value: 6, timescale: 1)
        var formats = Formats.both
        var replacesExistingPackage = false
    }

    public let asset: Asset
    /// The export under the package: its hardware policy and device, its time range, its
    /// progress and cancellation.
    public let exportSession: ExportSession
    private let options = Locked(Options())

    public init(asset: Asset) {
        self.asset = asset
        exportSession = ExportSession(asset: asset, preset: .highestQuality)
    }

    /// The video rungs; nil (the default) is the `auto` ladder (`StreamingRung.automatic`).
    public var ladder: [StreamingRung]? {
        get { options.withLock { $0.ladder } }
        set { options.withLock { $0.ladder = newValue } }
    }
    /// H.264 (default) or HEVC.
    public var videoCodec: VideoCodec {
        get { options.withLock { $0.videoCodec } }
        set { options.withLock { $0.videoCodec = newValue } }
    }
    /// How long segments last (default 6 s): each starts with a keyframe at a multiple of it.
    public var segmentDuration: MediaTime {
        get { options.withLock { $0.segmentDuration } }
        set { options.withLock { $0.segmentDuration = newValue } }
    }
    public var formats: Formats {
        get { options.withLock { $0.formats } }
        set { options.withLock { $0.formats = newValue } }
    }
    /// Replace a package (or anything else) at the destination once the new one is complete;
    /// otherwise an existing destination is an error. The old one stays until then.
    public var replacesExistingPackage: Bool {
        get { options.withLock { $0.replacesExistingPackage } }
        set { options.withLock { $0.replacesExistingPackage = newValue } }
    }

    /// The keyframe interval of every rendition: 2 s (Apple's rule 1.12) where the segment
    /// duration is a whole number of those, else the segment duration itself, so that every
    /// segment boundary falls on a forced keyframe.
    var keyframeInterval: MediaTime {
        let two = MediaTime(value: 2, timescale: 1)
        let segment = segmentDuration
        var multiple = two
        while multiple < segment { multiple = multiple + two }
        return multiple == segment ? two : segment
    }

    /// The source's video track, as the export picks it.
    private func videoTrack() async throws -> AssetTrack? {
        let tracks = try await asset.load(.tracks)
        return ExportSession.primaryVideoTrack(tracks)
    }

    /// The ladder this package will have: the rungs given, or the `auto` ladder for the source.
    public func plannedLadder() async throws -> [StreamingRung] {
        guard let video = try await videoTrack(), let format = video.formatDescription.video else { return ladder ?? [] }
        // As it is shown: its pixels' shape, then its rotation (a phone held upright).
        let shown = format.presentationDimensions(usePixelAspectRatio: true, useCleanAperture: false).applying(video.preferredTransform)
        if let given = ladder {
            // Rungs given the other way round from the picture are turned to it (1920x1080 for a
            // phone held upright is 1080x1920), as they were when the pictures kept their matrix.
            let portrait = shown.height > shown.width
            return given.map { rung in
                (rung.height > rung.width) == portrait || rung.width == rung.height ? rung
                    : StreamingRung(width: rung.height, height: rung.width, bitRate: rung.bitRate)
            }
        }
        return StreamingRung.automatic(sourceWidth: Int(shown.width.rounded()), sourceHeight: Int(shown.height.rounded()),
                                       frameRate: Double(video.nominalFrameRate), codec: videoCodec)
    }

    /// A rendition as planned, before anything is written (`vaf package --dry-run`).
    public struct PlannedRendition: Sendable, Equatable {
        public var folder: String
        public var mediaType: MediaType
        /// FFmpeg's name for the codec it is written in ("h264", "aac", "webvtt").
        public var codec: String
        public var size: Size?
        public var language: String?
        /// The target rate, bits per second (the rung's, or the audio encoder's); 0 for subtitles.
        public var bitRate: Int
    }

    /// Every rendition this package will have, in the order the manifests list them: the
    /// ladder's rungs, an AAC stereo rendition per audio language, and a WebVTT rendition per
    /// text subtitle track kept; with why each subtitle track left out is.
    public func plannedRenditions() async throws -> (renditions: [PlannedRendition], leftOut: [String]) {
        let video = try await videoTrack()
        let rungs = video == nil ? [] : try await plannedLadder()
        let codec = videoCodec
        var planned = zip(rungs, StreamingRung.folderNames(rungs)).map { rung, name in
            PlannedRendition(folder: name, mediaType: .video, codec: codec.rawValue, size: Size(width: rung.width, height: rung.height),
                             language: nil, bitRate: rung.bitRate)
        }
        let audio = try await audioTracks()
        let tracks = try await asset.load(.tracks)
        for (track, name) in zip(audio, Self.folderNames(audio, kind: "audio")) {
            // Planned as its export will plan it: AAC-LC stereo at the rate the source needs.
            var settings = exportSession.settings.withLock { $0 }
            settings.rendition = RenditionOutput(writesVideo: false, audioTrackID: track.trackID, outputSize: nil, tableVideoBitRate: nil,
                                                 segments: .init(profile: .mpeg4CMAFCompliant, interval: segmentDuration,
                                                                 keyframeInterval: keyframeInterval, handler: { _, _, _ in }))
            let plan = try await exportSession.makePlan(tracks: tracks, fileType: .mp4, softwareOnly: true, settings: settings)
            guard let output = plan.audioOutputs.first else { continue }
            planned.append(PlannedRendition(folder: name, mediaType: .audio, codec: output.settings.codec.rawValue, size: nil,
                                            language: track.languageCode, bitRate: output.settings.bitRate ?? 0))
        }
        let (subtitles, leftOut) = try await subtitleTracks()
        for (track, name) in zip(subtitles, Self.folderNames(subtitles, kind: "subtitles")) {
            planned.append(PlannedRendition(folder: name, mediaType: .subtitle, codec: "webvtt", size: nil, language: track.languageCode, bitRate: 0))
        }
        return (planned, leftOut)
    }

    /// The audio tracks that become renditions: one per language (the first track of each),
    /// the enabled one first; one track when none names its language.
    func audioTracks() async throws -> [AssetTrack] {
        let tracks = try await asset.load(.tracks)
        let audio = tracks.filter { $0.mediaType == .audio && $0.sampleCount > 0 }
        var chosen: [AssetTrack] = []
        for track in audio where !chosen.contains(where: { $0.languageCode == track.languageCode }) { chosen.append(track) }
        return chosen.sorted { $0.isEnabled && !$1.isEnabled }
    }

    /// The text subtitle tracks that become WebVTT renditions: those the export session's
    /// `subtitleSelection` keeps (all by default) but the one it burns in; and why each other
    /// subtitle track is left out (a bitmap track cannot be WebVTT).
    func subtitleTracks() async throws -> (kept: [AssetTrack], leftOut: [String]) {
        let tracks = try await asset.load(.tracks)
        let subtitles = tracks.filter { $0.mediaType == .subtitle && $0.sampleCount > 0 }
        let burnt = exportSession.subtitlesBurnedIn?.select(subtitles).first
        var kept: [AssetTrack] = [], leftOut: [String] = []
        for track in exportSession.subtitleSelection.select(subtitles) where track !== burnt {
            let name = track.formatDescription.codec
            if let codec = CodecID(name: name), SubtitleConverter.canConvert(codec, to: "webvtt") {
                kept.append(track)
            } else {
                let why = CodecID(name: name)?.isTextSubtitle == true ? "this libavcodec cannot convert it to WebVTT"
                    : "bitmap subtitles cannot be WebVTT"
                leftOut.append("subtitle track \(track.trackID) (\(name)) is left out of the package: \(why)")
            }
        }
        return (kept, leftOut)
    }

    /// Writes the package at `url` (a folder, which must not exist): see the type's summary.
    public func package(to url: URL) async throws -> StreamingPackageResult {
        let destination = url.standardizedFileURL
        let parent = destination.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: parent.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MediaError(.invalidArgument, "the output directory does not exist", path: parent.path)
        }
        let replaces = options.withLock { $0.replacesExistingPackage }
        if !replaces && FileManager.default.fileExists(atPath: destination.path) {
            throw MediaError(.outputExists, "the package folder exists", path: destination.path)
        }
        let audio = try await audioTracks()
        let video = try await videoTrack()
        // Rungs given by hand make nothing of a source without pictures.
        let rungs = video == nil ? [] : try await plannedLadder()
        guard !rungs.isEmpty || !audio.isEmpty else {
            throw MediaError(.noTracks, "nothing to package: the source has no video or audio with samples", path: asset.displayPath)
        }
        let o = options.withLock { $0 }
        guard o.segmentDuration.isNumeric, o.segmentDuration >= MediaTime(value: 1, timescale: 1) else {
            throw MediaError(.invalidArgument, "the segment duration must be at least 1 s", path: asset.displayPath)
        }
        Self.removeAbandonedBuildingFolders(for: [destination])
        // Built hidden beside the destination, renamed into place when complete. A lock file in
        // it, held until then, tells a later run that it is still being built.
        let building = AssetWriter.temporaryURL(beside: destination)
        let lockFile = building.appendingPathComponent(Self.lockFileName)
        let lock: PartialFileLock
        do {
            try FileManager.default.createDirectory(at: building, withIntermediateDirectories: false)
            lock = try PartialFileLock(creating: lockFile)
        } catch {
            try? FileManager.default.removeItem(at: building)
            throw MediaError(.ioError, "cannot create the package folder: \(error)", path: destination.path)
        }
        do {
            let result = try await build(in: building, destination: destination, rungs: rungs, audio: audio, options: o)
            unlink(lockFile.path)
            try withExtendedLifetime(lock) { () throws(MediaError) in try Self.moveIntoPlace(building, destination, replacing: replaces) }
            return result
        } catch {
            try? FileManager.default.removeItem(at: building)
            // The hidden folder is gone: the error names the package the user asked for.
            guard var failure = error as? MediaError, failure.path?.hasPrefix(building.path) == true else { throw error }
            failure.path = destination.path + String(failure.path!.dropFirst(building.path.count))
            failure.message = failure.message.replacingOccurrences(of: building.path, with: destination.path)
            throw failure
        }
    }

    /// The lock file inside a package being built.
    static let lockFileName = ".vaf-building.lock"

    /// Renames the built package to `destination`. A package there, when replaced, is moved
    /// aside first, removed once the new one is in place, and moved back if it cannot be.
    private static func moveIntoPlace(_ building: URL, _ destination: URL, replacing: Bool) throws(MediaError) {
        let old = AssetWriter.temporaryURL(beside: destination)
        let movedAside = replacing && rename(destination.path, old.path) == 0
        if rename(building.path, destination.path) != 0 {
            let e = errno
            if movedAside { rename(old.path, destination.path) }
            throw MediaError(e == EEXIST || e == ENOTEMPTY ? .outputExists : .ioError,
                             "cannot move the finished package into place: \(String(cString: strerror(e)))", path: destination.path)
        }
        if movedAside { try? FileManager.default.removeItem(at: old) }
    }

    /// Removes the hidden building folders that runs no longer running left for packages at
    /// `destinations` (a SIGKILL, the OOM killer): only folders named as a package of one of
    /// them is built, and only when the lock file inside can be taken (a run still building,
    /// anywhere, holds it). Returns the folders removed.
    @discardableResult
    public static func removeAbandonedBuildingFolders(for destinations: [URL]) -> [URL] {
        let byDirectory = Dictionary(grouping: destinations.map(\.standardizedFileURL)) { $0.deletingLastPathComponent() }
        var removed: [URL] = []
        for (directory, packages) in byDirectory {
            let names = Set(packages.map(\.lastPathComponent))
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
            for entry in entries.sorted() {
                guard let package = AssetWriter.destinationName(ofPartial: entry), names.contains(package) else { continue }
                let folder = directory.appendingPathComponent(entry)
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue,
                      PartialFileLock.removeIfAbandoned(folder.appendingPathComponent(lockFileName).path) else { continue }
                try? FileManager.default.removeItem(at: folder)
                removed.append(folder)
            }
        }
        return removed
    }

    private func build(in folder: URL, destination: URL, rungs: [StreamingRung], audio: [AssetTrack],
                       options o: Options) async throws -> StreamingPackageResult {
        exportSession.videoCodec = o.videoCodec
        if exportSession.videoComposition == nil, let upright = try await uprightComposition() {
            exportSession.videoComposition = upright
        }
        let (recorders, outputs) = try renditionOutputs(in: folder, rungs: rungs, audio: audio, options: o)
        let results = try await exportSession.export(to: outputs)
        // A rendition fails alone only when its track cannot be read at all: the package is
        // made without it, as a transcode leaves such a track out.
        var kept: [(recorder: RenditionRecorder, export: ExportResult)] = []
        var leftOut: [String] = []
        for (recorder, result) in zip(recorders, results) {
            switch result {
            case .success(let export):
                kept.append((recorder, export))
            case .failure(let error):
                try? FileManager.default.removeItem(at: recorder.folder)
                leftOut.append("the \(recorder.name) rendition is left out of the package: \(error.message)")
            }
        }
        for (recorder, export) in kept where recorder.mediaType == .audio {
            if let settings = export.audioSettings { recorder.audioFormat(sampleRate: settings.sampleRate, channels: settings.channelCount) }
        }
        let reports = try kept.map { try $0.recorder.report() }
        let finalVideo = reports.filter { $0.mediaType == .video }
        let finalAudio = reports.filter { $0.mediaType == .audio }
        var (finalSubtitles, warnings) = try await writeSubtitles(in: folder, besideMedia: finalVideo + finalAudio, options: o)
        warnings = leftOut + warnings
        if o.formats.contains(.hls) {
            for report in reports + finalSubtitles {
                let rendition = folder.appendingPathComponent(report.folder)
                try OutputFile.write(Data(StreamingPlaylists.mediaPlaylist(report).utf8), to: rendition.appendingPathComponent("index.m3u8"))
                if report.mediaType == .video {
                    try OutputFile.write(Data(StreamingPlaylists.iFramePlaylist(report).utf8), to: rendition.appendingPathComponent("iframes.m3u8"))
                }
            }
            try OutputFile.write(Data(StreamingPlaylists.masterPlaylist(video: finalVideo, audio: finalAudio, subtitles: finalSubtitles).utf8),
                                 to: folder.appendingPathComponent("master.m3u8"))
        }
        if o.formats.contains(.dash) {
            try OutputFile.write(Data(StreamingPlaylists.dashManifest(video: finalVideo, audio: finalAudio, subtitles: finalSubtitles).utf8),
                                 to: folder.appendingPathComponent("manifest.mpd"))
        }
        return StreamingPackageResult(url: destination, video: finalVideo, audio: finalAudio, subtitles: finalSubtitles, exports: kept.map(\.export),
                                      keyframeInterval: keyframeInterval, warnings: warnings)
    }

    /// A rotated source (a phone held upright) is drawn upright: many players ignore an fMP4
    /// track's rotation matrix, and the playlists give the size as shown. Nil for an upright source.
    private func uprightComposition() async throws -> VideoComposition? {
        guard let video = try await videoTrack(), video.preferredTransform != .identity else { return nil }
        // The primary track alone, at its average rate: the shortest interval of a phone's
        // variable rate would multiply its pictures.
        // To the container's end or the last picture's, whichever is later: a container's
        // duration is rounded, and can end before its video does (0.1 s against 0.100067 s).
        let (duration, tracks) = try await asset.load(.duration, .tracks)
        let pictureEnd = tracks.filter { $0.mediaType == .video && !$0.isAttachedPicture }.map(\.timeRange.end).max() ?? duration
        var upright = VideoComposition.videoComposition(withPropertiesOf: [VideoCompositionSourceTrack(track: video)],
                                                        duration: max(duration, pictureEnd))
        // Anamorphic pixels are widened before the turn: the picture is drawn as it is shown.
        if let format = video.formatDescription.video, format.width > 0 {
            let shown = format.presentationDimensions(usePixelAspectRatio: true, useCleanAperture: false)
            let widening = shown.width / Double(format.width)
            if abs(widening - 1) > 0.001 {
                let turn = video.preferredTransform
                let turned = VideoTransform(rotationDegrees: turn.rotationDegrees, mirrored: turn.isMirrored, size: shown)
                let drawn = VideoTransform(a: turned.a * widening, b: turned.b * widening, c: turned.c, d: turned.d, tx: turned.tx, ty: turned.ty)
                let size = shown.applying(turned)
                upright.renderSize = Size(width: Int((size.width / 2).rounded()) * 2, height: Int((size.height / 2).rounded()) * 2)
                for i in upright.instructions.indices {
                    for j in upright.instructions[i].layerInstructions.indices {
                        upright.instructions[i].layerInstructions[j].setTransform(drawn, at: .zero)
                    }
                }
            }
        }
        let millihertz = Int32(clamping: Int64((Double(video.nominalFrameRate) * 1000).rounded()))
        if millihertz > 0 {
            upright.frameDuration = max(upright.frameDuration, MediaTime(value: 1000, timescale: millihertz))
        }
        return upright
    }

    /// One output of the export per rung and per audio track, each writing its segments to a
    /// recorder of its rendition's folder.
    private func renditionOutputs(in folder: URL, rungs: [StreamingRung], audio: [AssetTrack],
                                  options o: Options) throws -> (recorders: [RenditionRecorder], outputs: [ExportSession.Output]) {
        var recorders: [RenditionRecorder] = []
        var outputs: [ExportSession.Output] = []
        func segments(_ recorder: RenditionRecorder) -> RenditionOutput.Segments {
            .init(profile: .mpeg4CMAFCompliant, interval: o.segmentDuration, keyframeInterval: keyframeInterval,
                  handler: { data, type, report in try recorder.take(data, type: type, report: report) })
        }
        for (rung, name) in zip(rungs, StreamingRung.folderNames(rungs)) {
            let recorder = try RenditionRecorder(folder: folder.appendingPathComponent(name), name: name, mediaType: .video)
            recorders.append(recorder)
            var output = ExportSession.Output(url: recorder.folder, fileType: .mp4)
            output.rendition = RenditionOutput(writesVideo: true, audioTrackID: nil, outputSize: Size(width: rung.width, height: rung.height),
                                               tableVideoBitRate: rung.bitRate, segments: segments(recorder))
            outputs.append(output)
        }
        // One default rendition in the group (RFC 8216 4.3.4.1.1): the first enabled track
        // (audioTracks() puts it first), or none.
        let defaultTrack = audio.first(where: \.isEnabled)?.trackID
        for (track, name) in zip(audio, Self.folderNames(audio, kind: "audio")) {
            let recorder = try RenditionRecorder(folder: folder.appendingPathComponent(name), name: name, mediaType: .audio)
            recorder.language = track.languageCode
            recorder.isDefault = track.trackID == defaultTrack
            recorders.append(recorder)
            var output = ExportSession.Output(url: recorder.folder, fileType: .mp4)
            output.rendition = RenditionOutput(writesVideo: false, audioTrackID: track.trackID, outputSize: nil, tableVideoBitRate: nil,
                                               segments: segments(recorder))
            outputs.append(output)
        }
        return (recorders, outputs)
    }

    /// The text subtitle renditions, cut on the media's segment grid, over what the picture and
    /// sound last; with warnings for the tracks and cues left out.
    private func writeSubtitles(in folder: URL, besideMedia media: [StreamingRenditionReport],
                                options o: Options) async throws -> (renditions: [StreamingRenditionReport], warnings: [String]) {
        let (subtitleTracks, leftOut) = try await subtitleTracks()
        let grid = (media.first { $0.mediaType == .video } ?? media.first)?.segments.map { ($0.start, $0.duration) } ?? []
        let end = media.map(\.duration).max() ?? .zero
        var renditions: [StreamingRenditionReport] = []
        var warnings = leftOut
        // At most one rendition of the group is the default (RFC 8216 4.3.4.1.1): the first the source marks.
        let defaultSubtitles = subtitleTracks.first(where: \.isMarkedDefault)?.trackID
        for (track, name) in zip(subtitleTracks, Self.folderNames(subtitleTracks, kind: "subtitles")) {
            let read: (cues: [WebVTTCue], refused: Int)
            do {
                read = try StreamingSubtitles.cues(of: track, in: asset, range: exportSession.timeRange, end: end) {
                    Task.isCancelled || self.exportSession.isCancelled
                }
            } catch {
                if error.code == .cancelled { throw error }
                // A subtitle track that cannot be read costs the package that track, not its pictures and sound.
                warnings.append("subtitle track \(track.trackID) is left out of the package: \(error.message)")
                continue
            }
            if read.refused > 0 {
                warnings.append("subtitle track \(track.trackID): \(read.refused) damaged cue\(read.refused == 1 ? "" : "s") left out")
            }
            renditions.append(try StreamingSubtitles.write(read.cues, to: folder.appendingPathComponent(name), name: name, grid: grid,
                                                           language: track.languageCode, isDefault: track.trackID == defaultSubtitles,
                                                           segmented: o.formats.contains(.hls)))
        }
        return (renditions, warnings)
    }

    /// Rendition folders for `tracks` of one `kind`: the kind alone for one track, else the kind
    /// and each track's language, numbered where a language comes again.
    static func folderNames(_ tracks: [AssetTrack], kind: String) -> [String] {
        tracks.count == 1 ? [kind] : tracks.enumerated().map { i, track in
            "\(kind)-\(track.languageCode ?? "und")" + (tracks.prefix(i).contains { $0.languageCode == track.languageCode } ? "-\(i)" : "")
        }
    }
}

/// What `StreamingPackager.package(to:)` wrote.
public struct StreamingPackageResult: Sendable {
    /// The package's folder.
    public var url: URL
    /// Each video rendition, largest first, and each audio rendition, measured from its segments.
    public var video: [StreamingRenditionReport]
    public var audio: [StreamingRenditionReport]
    /// Each WebVTT subtitle rendition: its HLS segments, or its whole file in a DASH-only package.
    public var subtitles: [StreamingRenditionReport]
    /// Each video and audio rendition's export, in the same order (video, then audio): path, encoder, warnings.
    public var exports: [ExportResult]
    /// The forced keyframe interval every video rendition shares.
    public var keyframeInterval: MediaTime
    /// What the package leaves out of the source, and why (a bitmap subtitle track).
    public var warnings: [String]
}

/// Writes one rendition's segments into its folder as the writer hands them out, and keeps
/// what the playlists need of each. A retried attempt starts over with a new initialization
/// segment: what the failed one wrote goes.
final class RenditionRecorder: Sendable {
    let folder: URL
    let name: String
    let mediaType: MediaType
    private struct State {
        var codec: String?
        var size: Size?
        var segments: [StreamingRenditionReport.Segment] = []
        var language: String?
        var isDefault = false
        var sampleRate: Int?
        var channels: Int?
    }
    private let state = Locked(State())

    init(folder: URL, name: String, mediaType: MediaType) throws(MediaError) {
        self.folder = folder
        self.name = name
        self.mediaType = mediaType
        do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false) } catch {
            throw MediaError(.ioError, "cannot create the rendition folder: \(error.localizedDescription)", path: folder.path)
        }
    }

    var language: String? {
        get { state.withLock { $0.language } }
        set { state.withLock { $0.language = newValue } }
    }
    var isDefault: Bool {
        get { state.withLock { $0.isDefault } }
        set { state.withLock { $0.isDefault = newValue } }
    }

    func audioFormat(sampleRate: Int, channels: Int) {
        state.withLock {
            $0.sampleRate = sampleRate
            $0.channels = channels
        }
    }

    /// Writes a segment the writer handed out; throws when it cannot be written.
    func take(_ data: Data, type: SegmentType, report: SegmentReport?) throws {
        switch type {
        case .initialization:
            let stale = state.withLock { s -> [String] in
                defer {
                    s.segments = []
                    s.codec = SegmentBoxes.codecString(initialization: data)
                    s.size = SegmentBoxes.pictureSize(initialization: data)
                }
                return s.segments.map(\.file)
            }
            for file in stale { try? FileManager.default.removeItem(at: folder.appendingPathComponent(file)) }
            try write(data, "init.mp4")
        case .separable:
            guard let track = report?.trackReports.first(where: { $0.mediaType == mediaType }) ?? report?.trackReports.first else {
                throw MediaError(.writeFailed, "a segment came without its report", path: folder.path)
            }
            let number = state.withLock { $0.segments.count } + 1
            let file = String(format: "segment-%05d.m4s", number)
            try write(data, file)
            let first = track.keyframes.first?.presentationTimeStamp ?? .zero
            let keyframes = track.keyframes.map {
                StreamingRenditionReport.Keyframe(offset: $0.presentationTimeStamp - first, byteOffset: $0.fragmentOffset,
                                                  byteCount: $0.endOffset - $0.fragmentOffset)
            }
            state.withLock {
                $0.segments.append(.init(file: file, start: track.earliestPresentationTimeStamp, duration: track.duration, bytes: data.count,
                                         keyframes: keyframes, sampleCount: track.sampleCount))
            }
        }
    }

    private func write(_ data: Data, _ file: String) throws {
        let url = folder.appendingPathComponent(file)
        do { try data.write(to: url) } catch {
            throw MediaError(.ioError, "cannot write \(name)/\(file): \(error.localizedDescription)", path: url.path)
        }
    }

    /// The rendition as written: each segment lasts until the next one starts, so the
    /// playlist's durations add up to the rendition's.
    func report() throws(MediaError) -> StreamingRenditionReport {
        let s = state.withLock { $0 }
        guard let codec = s.codec, !s.segments.isEmpty else {
            throw MediaError(.writeFailed, "the \(name) rendition wrote no segments", path: folder.path)
        }
        var segments = s.segments
        // The package starts at zero: an audio encoder's priming, before it, is cut by the edit list.
        if segments[0].start < .zero {
            segments[0].duration = segments[0].duration + segments[0].start
            segments[0].start = .zero
        }
        for i in segments.indices.dropLast() { segments[i].duration = segments[i + 1].start - segments[i].start }
        return StreamingRenditionReport(folder: name, mediaType: mediaType, codec: codec, width: s.size?.pixelWidth, height: s.size?.pixelHeight,
                                        language: s.language, isDefault: s.isDefault, channelCount: s.channels, sampleRate: s.sampleRate,
                                        segments: segments)
    }
}

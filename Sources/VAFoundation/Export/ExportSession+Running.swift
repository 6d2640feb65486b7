import FFmpegSupport
import HardwareAcceleration
import Foundation

/// The runner: one attempt wires the reader's outputs to the writer's inputs edge by edge;
/// around it, cancellation, the retry without unreadable tracks and the software fallback.
extension ExportSession {
    // MARK: Exporting

    /// Exports to `url` as `fileType`, writing a temporary file beside it and renaming it on
    /// success: a failed or cancelled export leaves nothing behind. Task cancellation cancels.
    public func export(to url: URL, as fileType: FileType) async throws -> ExportResult {
        try begin()
        try await acquireSlot(path: url.path)
        defer { Task { await ExportSlots.shared.release() } }
        return try await exportHoldingSlot(to: url, as: fileType)
    }

    /// Waits for one of the process's export slots (`.waiting` meanwhile); a cancel while
    /// waiting ends the export.
    func acquireSlot(path: String) async throws {
        do {
            try await ExportSlots.shared.acquire()
        } catch {
            finish(MediaError(.cancelled, "export cancelled while waiting", path: path))
            throw MediaError(.cancelled, "export cancelled while waiting", path: path)
        }
    }

    /// The export once it may run: an output of a multi-output export runs under the slot its
    /// parent holds.
    func exportHoldingSlot(to url: URL, as fileType: FileType) async throws -> ExportResult {
        try await runningPhase(path: url.path) {
            let started = ContinuousClock.now
            // Every attempt works from the settings as the export began: a setting changed
            // while it runs applies to the next export, never to a retry of this one.
            let settings = settings.withLock { $0 }
            var result = try await performWithFallback(to: url, as: fileType, settings: settings)
            let elapsed = ContinuousClock.now - started
            result.elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return result
        }
    }

    /// Runs `body` as the export's running phase, for one output or several: `.exporting`, a
    /// task cancellation cancels it, and success is `.completed` at progress 1. A failure is
    /// finished as `.cancelled` or `.failed`, once the writer's partial file is gone, and thrown
    /// as a `MediaError` about `path`.
    func runningPhase<T>(path: String, _ body: () async throws -> T) async throws -> T {
        run.withLock { $0.status = .exporting }
        publishState()
        do {
            let value = try await withTaskCancellationHandler {
                try await body()
            } onCancel: {
                cancelExportWithoutWaiting()
            }
            run.withLock {
                $0.progress = 1
                $0.status = .completed
            }
            publishState()
            return value
        } catch {
            let cancelled = run.withLock { $0.cancelled } || Task.isCancelled
            // The cancellation handler only started cancelling the writer: finish it here, so
            // the partial file is gone before this returns.
            if cancelled { run.withLock { $0.writer }?.cancelWriting() }
            let mediaError = cancelled ? Self.cancelled(path: path)
                : (error as? MediaError ?? MediaError(.encodeFailed, "\(error)", path: path))
            finish(mediaError)
            throw mediaError
        }
    }

    /// Runs the export; when the device fails under a hardware or hybrid path, abandons that
    /// attempt (its partial file is deleted) and restarts the output from the beginning in software.
    private func performWithFallback(to url: URL, as fileType: FileType, settings s: Settings) async throws -> ExportResult {
        do {
            return try await performDroppingEmptyTracks(to: url, as: fileType, softwareOnly: false, settings: s)
        } catch {
            let (usedDevice, cancelled) = run.withLock { ($0.usesDevice, $0.cancelled) }
            guard usedDevice, !cancelled, !Task.isCancelled, s.hardwarePolicy != .off else { throw error }
            let cause = (error as? MediaError).map { e in e.message + (e.underlying.map { " (\($0))" } ?? "") } ?? "\(error)"
            guard s.hardwarePolicy != .require else {
                throw MediaError(.hardwareFailed, "the device failed mid-export and the hardware policy 'require' rules out redoing it in software: \(cause)",
                                 path: asset.displayPath, underlying: (error as? MediaError)?.underlying)
            }
            var result = try await performDroppingEmptyTracks(to: url, as: fileType, softwareOnly: true, settings: s)
            result.fallbackReason = cause
            result.pathReason = "software after the device failed mid-export (\(cause)); restarted from the beginning"
            return result
        }
    }

    /// Runs the export; when a track's data turns out unreadable (its index lists samples, but
    /// not one can be read), redoes the export without that track and says so, as long as
    /// another track is left to export. ffmpeg likewise writes what it can read.
    private func performDroppingEmptyTracks(to url: URL, as fileType: FileType, softwareOnly: Bool,
                                            settings s: Settings) async throws -> ExportResult {
        var unreadable: [ExportResult.DroppedTrack] = []
        while true {
            do {
                var result = try await perform(to: url, as: fileType, softwareOnly: softwareOnly, leavingOut: unreadable, settings: s)
                result.warnings += unreadable.map { "track \($0.trackID) (\($0.mediaType)): \($0.reason); exported without it" }
                return result
            } catch let empty as TrackYieldedNothing {
                guard !run.withLock({ $0.cancelled }), !Task.isCancelled else { throw empty.error }
                // A seek can land where nothing decodes (FFmpeg 5.1's Ogg Opus): read from the
                // file's start and drop what lies before the range, as ffmpeg's output-side trim
                // does, before deciding the track is unreadable.
                if s.timeRange.start > .zero, run.withLock({ r in defer { r.readsFromFileStart = true }; return !r.readsFromFileStart }) { continue }
                guard empty.otherEdges > 0 else {
                    run.withLock { $0.readsNothing = true }
                    throw empty.error
                }
                unreadable.append(.init(trackID: empty.trackID, mediaType: empty.mediaType.rawValue,
                                        reason: "no sample of it could be read (the file is damaged)"))
            }
        }
    }

    /// An edge ended without one sample although its track lists some.
    struct TrackYieldedNothing: Error {
        var trackID: Int
        var mediaType: MediaType
        /// How many other edges the export had: with none, there is nothing to export without this one.
        var otherEdges: Int
        var error: MediaError
    }

    func begin() throws {
        try run.withLock { r throws(MediaError) in
            guard r.status == .unknown else {
                throw MediaError(.invalidState, "an export session runs once; this one is \(r.status.rawValue)", path: asset.displayPath)
            }
            r.status = .waiting
        }
        publishState()
    }

    func finish(_ error: MediaError) {
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
        if raised {
            publishState()
            run.withLock { $0.progressObserver }?()
        }
    }

    /// One attempt at the export. However it fails, its reader and writer are stopped and its
    /// temporary file is deleted before it returns.
    private func perform(to url: URL, as fileType: FileType, softwareOnly: Bool,
                         leavingOut unreadable: [ExportResult.DroppedTrack], settings s: Settings) async throws -> ExportResult {
        defer {
            // What the demuxer held queued at most, for the test seam.
            if let probe = stageProbe, let queued = run.withLock({ $0.reader })?.demuxSession?.peakQueuedPackets {
                probe.peakQueuedPackets = queued
            }
        }
        do {
            return try await attempt(to: url, as: fileType, softwareOnly: softwareOnly, leavingOut: unreadable, settings: s)
        } catch {
            let (reader, writer) = run.withLock { ($0.reader, $0.writer) }
            reader?.cancelReading()
            writer?.cancelWriting()
            throw error
        }
    }

    /// One attempt: plan, build the graph, run it, finish the file, and say what was written.
    private func attempt(to url: URL, as fileType: FileType, softwareOnly: Bool,
                         leavingOut unreadable: [ExportResult.DroppedTrack], settings s: Settings) async throws -> ExportResult {
        // An output of a multi-output export reads the shared decodes in its first attempt
        // (a retry decodes on its own), and lets go of them as the attempt ends, whatever the
        // end, so it never holds the other outputs back.
        let shares = s.fanOut?.claim() ?? []
        defer { for share in shares { share.detach() } }
        guard canWrite(fileType) else {
            throw MediaError(.invalidArgument, "the \(preset.name) preset cannot write \(fileType) files (it writes \(preset.fileTypes.map(\.rawValue).joined(separator: ", ")))", path: url.path)
        }
        let (allTracks, duration) = try await asset.load(.tracks, .duration)
        let span = try ExportSpan(range: s.timeRange, duration: duration, path: asset.displayPath)
        let unreadableIDs = Set(unreadable.map(\.trackID))
        let tracks = allTracks.filter { !unreadableIDs.contains($0.trackID) }
        let (reader, writer) = try await makeReaderAndWriter(url: url, fileType: fileType, settings: s, span: span)
        var plan = try await makePlan(tracks: tracks, fileType: fileType, softwareOnly: softwareOnly, settings: s)
        plan.droppedTracks += unreadable
        var result = try await startingResult(of: plan, url: url, fileType: fileType)
        let graph = try await buildGraph(of: plan, tracks: tracks, sourceTracks: allTracks, shares: shares, settings: s, span: span,
                                         reader: reader, writer: writer, fileType: fileType, url: url, result: &result)
        // Exports sharing a device wait for one of its session slots. The release task holds
        // the slots only, not the device, so the device closes when its last user is done.
        // The outputs of a multi-output export run under the one slot their export holds.
        if plan.device != nil { run.withLock { $0.usesDevice = true } }
        let slots = s.holdsParentsDeviceSlot ? nil : plan.device?.sessions
        if let slots { try await slots.acquire() }
        defer { if let slots { Task { await slots.release() } } }
        let tally = try await runGraph(graph, span: span, limit: s.fileLengthLimit, url: url)
        result.warnings += try Self.weighDamage(tally.overDamaged.withLock { $0 }, edges: graph.edges)
        try await graph.writer.finishWriting()
        result.warnings += graph.writer.warnings
        // A cancel that came while the file was being finished still wins: the file goes.
        try removeFileIfCancelled(url)
        try await describeWritten(graph, tally: tally, plan: plan, span: span, settings: s, url: url, fileType: fileType, into: &result)
        return result
    }

    /// The attempt's reader and writer, known to the session from here on so that a cancel reaches them.
    private func makeReaderAndWriter(url: URL, fileType: FileType, settings s: Settings,
                                     span: ExportSpan) async throws -> (AssetReader, AssetWriter) {
        let reader = AssetReader(asset: asset)
        reader.timeRange = s.timeRange
        reader.seeksToRangeStart = !run.withLock { $0.readsFromFileStart }
        let writer: AssetWriter
        if let rendition = s.rendition {
            // A streaming package's rendition: segments to its handler, no file, no metadata.
            writer = AssetWriter(fileType: fileType)
            writer.outputFileTypeProfile = rendition.segments.profile
            writer.preferredOutputSegmentInterval = rendition.segments.interval
            writer.segmentHandler = rendition.segments.handler
            writer.fragmentsAtEveryKeyframe = true
        } else {
            writer = try AssetWriter(url: url, fileType: fileType, overwritesExistingFile: s.overwritesExistingFile)
            writer.shouldOptimizeForNetworkUse = s.shouldOptimizeForNetworkUse
            // Carry the source's metadata over, minus what the muxer writes itself, and its chapters.
            let sourceMetadata = try await asset.load(.metadata)
            writer.metadata = s.metadata ?? MetadataItem.carriedOver(sourceMetadata)
            writer.chapters = Chapter.carriedOver(try await asset.load(.chapters), from: span.start, to: span.stop)
        }
        writer.probe = stageProbe
        // The tracks are read independently: the writer's inputs keep them within the edges'
        // window of each other, which bounds what the demuxer queues for a track behind.
        writer.interleavingWindow = PipelineBounds.exportInterleavingWindow
        writer.keepsFinishedAudioTrimmable = false
        run.withLock {
            $0.reader = reader
            $0.writer = writer
            $0.usesDevice = false
            $0.resumedReaders = []
            $0.sideReaders = []
            $0.resumption = nil
        }
        try throwIfCancelled(path: url.path)
        return (reader, writer)
    }

    /// Starts the graph and runs its edges to their end.
    private func runGraph(_ graph: ExportGraph, span: ExportSpan, limit: Int64?, url: URL) async throws -> EdgeTally {
        // Progress counts what reached the file, not what was handed over: encoders hold back
        // up to dozens of frames, written while finishing. The writer pushes each step.
        let seconds = span.seconds
        graph.writer.observeWrittenDuration { [weak self] written in self?.advance(to: 0.97 * written / seconds) }
        try start(graph, span: span)
        let tally = EdgeTally(edges: graph.edges.count, sparse: Set(graph.edges.indices.filter { graph.edges[$0].isSparse }))
        try await runEdges(graph.edges, EdgeContext(reader: graph.reader, writer: graph.writer, span: span, limit: limit, tally: tally,
                                                    edgeCount: graph.edges.count))
        if let error = graph.reader.error ?? graph.subtitleReader?.error { throw error }
        try throwIfCancelled(path: url.path)
        return tally
    }

    /// Opens the readers and creates the file; the writer's session starts at the range's start
    /// and ends at its end when the range ends before the asset.
    private func start(_ graph: ExportGraph, span: ExportSpan) throws {
        try graph.reader.startReading()
        try graph.subtitleReader?.startReading()
        if let demux = graph.subtitleReader?.demuxSession {
            // Subtitles are sparse: known up front, their stream does not hold the file's
            // header (and every other track's packets) back until its first cue.
            for edge in graph.edges where edge.isSparse {
                edge.input.sourceParameters = try demux.codecParameters(stream: edge.track.streamIndex)
            }
        }
        let probe = stageProbe
        if let probe {
            if let demux = graph.reader.demuxSession { probe.attach(demux) }
            try probe.step(.sourceOpened)
        }
        try graph.writer.startWriting()
        if let probe, let engine = graph.writer.engine { probe.attach(engine) }
        try graph.writer.startSession(atSourceTime: span.start)
        if span.range.end.isNumeric && span.range.end < span.duration { try graph.writer.endSession(atSourceTime: span.range.end) }
    }

    /// Throws a cancel when the export was cancelled, once the file written is gone.
    func removeFileIfCancelled(_ url: URL) throws(MediaError) {
        guard isCancelled else { return }
        unlink(url.path)
        throw Self.cancelled(path: url.path)
    }

    /// Throws the export's cancel, about `path`, once it was cancelled.
    func throwIfCancelled(path: String) throws(MediaError) {
        if isCancelled { throw Self.cancelled(path: path) }
    }

    /// The error a cancelled export ends with.
    static func cancelled(path: String) -> MediaError { MediaError(.cancelled, "export cancelled", path: path) }

    /// The failure of an edge whose track yielded no sample although it lists some.
    func yieldedNothing(_ edge: Edge, besideEdges others: Int) -> TrackYieldedNothing {
        let error = MediaError(.corruptOrTruncated, "track \(edge.track.trackID) (\(edge.track.mediaType)) yielded no samples: the file is truncated or its data unreadable",
                               path: asset.displayPath)
        return TrackYieldedNothing(trackID: edge.track.trackID, mediaType: edge.track.mediaType, otherEdges: others, error: error)
    }

    /// Goes on with a video edge in software after its device failed: the writer drops the
    /// open group of pictures and switches to the software encoder, and a new reader decodes
    /// the track in software from that group's keyframe. Nothing before it is redone.
    func resumeInSoftware(_ edge: Edge, replacing failed: AssetReaderOutput, after failure: MediaError,
                                  end: MediaTime) async throws -> (output: AssetReaderTrackOutput, at: MediaTime, framesKept: Int) {
        guard let settings = edge.resumesWith else { throw failure }
        // The device decoder goes, and the shared demuxer stops queueing the track for it.
        failed.releaseResources()
        let (resumeAt, framesKept) = try await edge.input.resumeInSoftware()
        let reader = AssetReader(asset: asset)
        reader.timeRange = MediaTimeRange(start: resumeAt, duration: end.isNumeric ? end - resumeAt : .positiveInfinity)
        var attributes = PixelBufferAttributes(pixelFormat: settings.pixelFormat ?? .yuv420p, width: settings.width, height: settings.height,
                                               scalingMode: settings.scalingMode, colorProperties: Self.toneMapping(from: edge.track, to: settings))
        attributes.burnedSubtitles = edge.burnedSubtitles
        let output = try AssetReaderTrackOutput(track: edge.track, outputSettings: .video(attributes))
        output.decoderThreadCount = PipelineBounds.decoderThreads(besideHostEncoderOf: settings.codec)
        output.probe = stageProbe
        try reader.add(output)
        let cause = failure.message + (failure.underlying.map { " (\($0))" } ?? "")
        let cancelled = run.withLock { r -> Bool in
            r.resumedReaders.append(reader)
            r.resumption = (resumeAt, framesKept, cause)
            return r.cancelled
        }
        if cancelled { throw Self.cancelled(path: asset.displayPath) }
        try reader.startReading()
        return (output, resumeAt, framesKept)
    }

    /// What a file's index (the MP4 movie box: sample sizes, times, chunk offsets, sync
    /// samples) may take for `samples` samples in `tracks` tracks: a little more than FFmpeg's
    /// muxer writes, so a file-length limit holds with the index included.
    static func indexBytes(samples: Int, tracks: Int) -> Int64 {
        Int64(4096 + 1024 * tracks + 20 * samples)
    }
}

extension ExportSlots {
    /// The process's bound on exports running at once: one per core.
    static let shared = ExportSlots(limit: max(1, ProcessInfo.processInfo.activeProcessorCount))
}

extension ExportSession {
    /// The colours the reader converts `track`'s pictures to for `settings`: the settings' own
    /// when the source is HDR (PQ or HLG) and the settings are not, so the pictures are
    /// tone-mapped to match their tags; nil (the source's colours) otherwise.
    static func toneMapping(from track: AssetTrack, to settings: VideoSettings) -> ColorProperties? {
        guard ColorProperties.isHDR(transfer: track.formatDescription.video?.colorTransfer),
              let target = settings.colorProperties, target.transfer != nil,
              !ColorProperties.isHDR(transfer: target.transfer) else { return nil }
        return target
    }

    /// Decodes `output`'s video on `device` where the plan decodes there; on the host beside a
    /// software encoder, with the threads `PipelineBounds` gives a decoder there.
    static func placeDecoding(of output: some VideoDecodingOutput, hardware: HardwareDecision?, device: VADevice?,
                              encodingTo settings: VideoSettings) {
        if hardware?.decodesOnDevice == true {
            output.hardwareDevice = device
        } else if hardware?.encodesOnDevice != true {
            output.decoderThreadCount = PipelineBounds.decoderThreads(besideHostEncoderOf: settings.codec)
        }
    }
}

import FFmpegSupport
import HardwareAcceleration
import Foundation

/// The runner: one attempt wires the reader's outputs to the writer's inputs lane by lane;
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
                guard empty.otherLanes > 0 else { throw empty.error }
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
        result.warnings += try Self.weighDamage(tally.overDamaged.withLock { $0 }, lanes: graph.lanes)
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
        } else {
            writer = try AssetWriter(url: url, fileType: fileType, overwritesExistingFile: s.overwritesExistingFile)
            writer.shouldOptimizeForNetworkUse = s.shouldOptimizeForNetworkUse
            // Carry the source's metadata over, minus what the muxer writes itself, and its chapters.
            let sourceMetadata = try await asset.load(.metadata)
            writer.metadata = s.metadata ?? MetadataItem.carriedOver(sourceMetadata)
            writer.chapters = Chapter.carriedOver(try await asset.load(.chapters), from: span.start, to: span.stop)
        }
        writer.probe = stageProbe
        // The tracks are read independently: the writer's inputs keep them within the lanes'
        // window of each other, which bounds what the demuxer queues for a track behind.
        writer.interleavingWindow = PipelineBounds.laneWindow
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

    /// Starts the graph and runs it to its end: the remux loop when every lane copies packets, the lanes otherwise.
    private func runGraph(_ graph: ExportGraph, span: ExportSpan, limit: Int64?, url: URL) async throws -> LaneTally {
        // Progress counts what reached the file, not what was handed over: encoders hold back
        // up to dozens of frames, written while finishing. The writer pushes each step.
        let seconds = span.seconds
        graph.writer.observeWrittenDuration { [weak self] written in self?.advance(to: 0.97 * written / seconds) }
        try start(graph, span: span)
        let tally = LaneTally(lanes: graph.lanes.count, sparse: Set(graph.lanes.indices.filter { graph.lanes[$0].isSparse }))
        if graph.lanes.allSatisfy(\.copiesPackets) {
            try await copyPackets(graph.lanes, reader: graph.reader, writer: graph.writer, start: span.start, limit: limit, tally: tally)
        } else {
            try await runLanes(graph.lanes, LaneContext(reader: graph.reader, writer: graph.writer, span: span, limit: limit, tally: tally,
                                                        laneCount: graph.lanes.count))
        }
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
            for lane in graph.lanes where lane.isSparse {
                lane.input.sourceParameters = try demux.codecParameters(stream: lane.track.streamIndex)
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

    /// What every lane task of one attempt shares.
    private struct LaneContext: Sendable {
        let reader: AssetReader
        let writer: AssetWriter
        let span: ExportSpan
        let limit: Int64?
        let tally: LaneTally
        let laneCount: Int
    }

    /// Runs one task per lane, each pulling from its reader output and appending to its writer
    /// input. The writer's inputs are the one flow-control rule: an input is not ready while
    /// it holds its bound of samples or bytes, or runs more than `PipelineBounds.laneWindow`
    /// ahead of another, and the lane appending to it suspends until it is.
    private func runLanes(_ lanes: [Lane], _ context: LaneContext) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, lane) in lanes.enumerated() {
                group.addTask { try await self.runLane(i, lane, context) }
            }
            // The first lane to fail ends the export: leaving the group cancels the other lanes,
            // which may be waiting for the failed lane in the writer's interleaving window.
            // (`waitForAll` would wait for them, and they would wait forever.)
            while try await group.next() != nil {}
        }
    }

    /// A decoding lane's reading: its output (a software one once its device failed), the
    /// output's samples and the frame-rate converter.
    private struct LaneReading {
        var output: AssetReaderOutput
        var samples: SampleBufferSequence.AsyncIterator
        var converter: FrameRateConverter?
        /// The lane may still go on in software, once, when its device fails.
        var resumable: Bool

        init(_ lane: Lane) {
            output = lane.output
            samples = lane.output.sampleBuffers.makeAsyncIterator()
            converter = lane.converter
            resumable = lane.resumesWith != nil
        }
    }

    /// Lane `i`'s task: read, append, count, until its output ends or the file reaches its limit.
    private func runLane(_ i: Int, _ lane: Lane, _ context: LaneContext) async throws {
        var reading = LaneReading(lane)
        reading: while true {
            try Task.checkCancellation()
            let batch: [SampleBuffer]
            if lane.copiesPackets {
                guard let copied = try await copyBatch(i, lane, context) else { break }
                batch = copied
            } else {
                switch try await decodeStep(i, lane, &reading, context) {
                case .handed(let sample): batch = [sample]
                case .resumed: continue reading
                case .ended: break reading
                }
            }
            if handOver(batch, lane: i, lane, context) { break }
        }
        let tally = context.tally
        if var converter = reading.converter {
            let end = context.span.range.end
            for out in converter.finish(end: end.isNumeric ? min(end, context.span.duration) : context.span.duration) {
                try await lane.input.append(out)
                tally.counts.withLock { $0[i] += 1 }
            }
        }
        let stoppedForLimit = tally.limitReached.withLock { $0 } || (context.limit.map { l in tally.bytes.withLock { $0.reduce(0, +) } >= l } ?? false)
        if tally.counts.withLock({ $0[i] }) == 0 && !stoppedForLimit && context.reader.status != .cancelled && !lane.isSparse {
            throw yieldedNothing(lane, besideLanes: context.laneCount - 1)
        }
        lane.input.markAsFinished()
    }

    /// A copying lane's next batch of packets, handed to its input (one packet at a time under
    /// a file-length limit, checked per packet); nil at the end, or where the limit ends the file.
    private func copyBatch(_ i: Int, _ lane: Lane, _ context: LaneContext) async throws -> [SampleBuffer]? {
        let (limit, tally) = (context.limit, context.tally)
        let batch = try await lane.output.nextBatchAsync(maximumCount: limit == nil ? PipelineBounds.packetBatch : 1,
                                                         maximumSpan: PipelineBounds.packetBatchSpan)
        if batch.isEmpty { return nil }
        // Under a limit, a packet that would take the file past it (its index included) is not
        // written: the file ends where every track has arrived.
        if let limit {
            let adding = batch.reduce(Int64(0)) { $0 + Int64($1.totalSampleSize) }
            let (handed, samples) = (tally.bytes.withLock { $0.reduce(0, +) }, tally.counts.withLock { $0.reduce(0, +) })
            if handed + adding + Self.indexBytes(samples: samples + batch.count, tracks: context.laneCount) > limit {
                tally.reached(i, batch[0].presentationTimeStamp)
                tally.limitReached.withLock { $0 = true }
                stopAtLengthLimit(context)
                return nil
            }
        }
        try await lane.input.append(contentsOf: batch)
        tally.counts.withLock { $0[i] += batch.count }
        return batch
    }

    /// What one step of a decoding lane did.
    private enum DecodeStep {
        /// Appended this sample (or what the frame-rate converter made of it).
        case handed(SampleBuffer)
        /// Went on in software after the device failed: nothing was appended.
        case resumed
        case ended
    }

    /// Reads a decoding lane's next sample and appends it. A device failure makes the lane go
    /// on in software; damage past the error rate ends it; a track of which not one packet
    /// decodes is left out of the export.
    private func decodeStep(_ i: Int, _ lane: Lane, _ reading: inout LaneReading, _ context: LaneContext) async throws -> DecodeStep {
        let tally = context.tally
        do {
            guard let sample = try await reading.samples.next() else { return .ended }
            for out in reading.converter != nil ? reading.converter!.push(sample) : [sample] {
                try await lane.input.append(out)
                tally.counts.withLock { $0[i] += 1 }
            }
            return .handed(sample)
        } catch let failure as MediaError where reading.resumable && Self.isDeviceFailure(failure, of: reading.output) {
            // Once: the software stages that take over have no device to lose.
            reading.resumable = false
            let resumed = try await resumeInSoftware(lane, replacing: reading.output, after: failure, end: context.span.range.end)
            reading.output = resumed.output
            reading.samples = resumed.output.sampleBuffers.makeAsyncIterator()
            reading.converter = reading.converter.map { FrameRateConverter(resuming: $0, at: resumed.at) }
            tally.counts.withLock { $0[i] = resumed.framesKept }
            return .resumed
        } catch let failure as MediaError where failure.underlying is DecodeTally && tally.counts.withLock({ $0[i] }) > 0 {
            // More than 2/3 of the track's packets were damaged, and what decoded is written.
            // Whether that fails the export is weighed over every track once all are done, as
            // ffmpeg's error rate is.
            tally.overDamaged.withLock { $0.append((lane.track, failure)) }
            return .ended
        } catch let failure as MediaError where failure.code == .decodeFailed && !Self.isDeviceFailure(failure, of: reading.output)
                    && tally.counts.withLock({ $0[i] }) == 0 {
            // Not one packet of the track decodes: it is as unreadable as a track without
            // packets, and is left out the same way (ffmpeg writes the other tracks).
            throw TrackYieldedNothing(trackID: lane.track.trackID, mediaType: lane.track.mediaType,
                                      otherLanes: context.laneCount - 1, error: failure)
        }
    }

    /// Counts what lane `i` handed over in `batch`. Returns true
    /// where the file reached its length limit: the file then ends where every track has
    /// arrived, so a track running ahead in the writer's interleave window is cut there too.
    private func handOver(_ batch: [SampleBuffer], lane i: Int, _ lane: Lane, _ context: LaneContext) -> Bool {
        let last = batch[batch.count - 1]
        // Bytes on disk lag behind the writer's queue: also count what was handed to it (exact
        // for copied packets, the target rate for encoded media).
        let handed = context.tally.bytes.withLock { b -> Int64 in
            if lane.copiesPackets {
                b[i] += batch.reduce(0) { $0 + Int64($1.totalSampleSize) }
            } else {
                b[i] = Int64(max(0, last.presentationTimeStamp.seconds - context.span.start.seconds) * Double(lane.bitRate) / 8)
            }
            return b.reduce(0, +)
        }
        let batchEnd = batch.map { $0.presentationTimeStamp + $0.duration }.filter(\.isNumeric).max() ?? last.presentationTimeStamp
        context.tally.reached(i, batchEnd)
        guard let limit = context.limit, max(context.writer.bytesWritten, handed) >= limit else { return false }
        stopAtLengthLimit(context)
        return true
    }

    /// The file has reached its length limit: it ends where every track has arrived, and the
    /// source is read no further.
    private func stopAtLengthLimit(_ context: LaneContext) {
        let reached = context.tally.arrivedByAll(from: context.span.start)
        if reached > context.span.start { try? context.writer.endSession(atSourceTime: reached) }
        context.reader.cancelReading()
    }

    /// The failure of a lane whose track yielded no sample although it lists some.
    private func yieldedNothing(_ lane: Lane, besideLanes others: Int) -> TrackYieldedNothing {
        let error = MediaError(.corruptOrTruncated, "track \(lane.track.trackID) (\(lane.track.mediaType)) yielded no samples: the file is truncated or its data unreadable",
                               path: asset.displayPath)
        return TrackYieldedNothing(trackID: lane.track.trackID, mediaType: lane.track.mediaType, otherLanes: others, error: error)
    }

    /// A failure of the device under a video lane: a stage on the device (the decoder, which
    /// rethrows at once there, the video processor, or the encoder) gave up.
    private static func isDeviceFailure(_ error: MediaError, of output: AssetReaderOutput) -> Bool {
        error.code == .hardwareFailed || (error.code == .decodeFailed && (output as? AssetReaderTrackOutput)?.hardwareDevice != nil)
    }

    /// Goes on with a video lane in software after its device failed: the writer drops the
    /// open group of pictures and switches to the software encoder, and a new reader decodes
    /// the track in software from that group's keyframe. Nothing before it is redone.
    private func resumeInSoftware(_ lane: Lane, replacing failed: AssetReaderOutput, after failure: MediaError,
                                  end: MediaTime) async throws -> (output: AssetReaderTrackOutput, at: MediaTime, framesKept: Int) {
        guard let settings = lane.resumesWith else { throw failure }
        // The device decoder goes, and the shared demuxer stops queueing the track for it.
        failed.releaseResources()
        let (resumeAt, framesKept) = try await lane.input.resumeInSoftware()
        let reader = AssetReader(asset: asset)
        reader.timeRange = MediaTimeRange(start: resumeAt, duration: end.isNumeric ? end - resumeAt : .positiveInfinity)
        var attributes = PixelBufferAttributes(pixelFormat: settings.pixelFormat ?? .yuv420p, width: settings.width, height: settings.height,
                                               scalingMode: settings.scalingMode, colorProperties: Self.toneMapping(from: lane.track, to: settings))
        attributes.burnedSubtitles = lane.burnedSubtitles
        let output = try AssetReaderTrackOutput(track: lane.track, outputSettings: .video(attributes))
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

    /// A remux (every lane copies packets) runs as one stage on the writer's thread: it reads
    /// the source in decode-time order across the tracks and hands each packet straight to the
    /// muxer, with no queue and no thread hop between demuxer and muxer.
    private func copyPackets(_ lanes: [Lane], reader: AssetReader, writer: AssetWriter, start: MediaTime,
                             limit: Int64?, tally: LaneTally) async throws {
        let inputs = lanes.map { $0.input.writerIndex ?? -1 }
        let outputs = lanes.map(\.output)
        try await writer.runOnWriterThread { sink in
            // The next sample of each lane, read ahead by one; nil once the lane has ended.
            var next: [SampleBuffer?] = try outputs.map { try $0.copyNextSampleBuffer() }
            var handedBytes: Int64 = 0
            var handedSamples = 0
            while sink.isWriting {
                // The earliest in decode order goes first (samples without a time at once).
                var earliest: Int?
                for (i, sample) in next.enumerated() {
                    guard let sample else { continue }
                    guard let e = earliest, let current = next[e] else { earliest = i; continue }
                    if Self.decodeOrder(sample) < Self.decodeOrder(current) { earliest = i }
                }
                guard let i = earliest, let sample = next[i] else { break }
                let size = Int64(sample.totalSampleSize)
                // Under a limit, a packet that would take the file past it (its index included)
                // is not written: the file ends where every track has arrived.
                if let limit, handedBytes + size + Self.indexBytes(samples: handedSamples + 1, tracks: lanes.count) > limit {
                    let reached = next.compactMap { $0?.presentationTimeStamp }.filter(\.isNumeric).min() ?? start
                    if reached > start { sink.endSession(at: reached) }
                    tally.limitReached.withLock { $0 = true }
                    reader.cancelReading()
                    break
                }
                try sink.write(sample, input: inputs[i])
                tally.reached(i, sample.presentationTimeStamp + sample.duration)
                handedBytes += size
                handedSamples += 1
                tally.counts.withLock { $0[i] += 1 }
                tally.bytes.withLock { $0[i] += size }
                next[i] = try outputs[i].copyNextSampleBuffer()
            }
        }
        for (i, lane) in lanes.enumerated() {
            let stoppedForLimit = tally.limitReached.withLock { $0 }
            if tally.counts.withLock({ $0[i] }) == 0 && !stoppedForLimit && reader.status != .cancelled && !lane.isSparse {
                throw yieldedNothing(lane, besideLanes: lanes.count - 1)
            }
        }
        for lane in lanes { lane.input.markAsFinished() }
    }

    /// Where a sample stands in decode order: its decode time, else its presentation time;
    /// one with neither comes first.
    private static func decodeOrder(_ sample: SampleBuffer) -> MediaTime {
        let t = sample.decodeTimeStamp.isNumeric ? sample.decodeTimeStamp : sample.presentationTimeStamp
        return t.isNumeric ? t : .negativeInfinity
    }

    /// What a file's index (the MP4 movie box: sample sizes, times, chunk offsets, sync
    /// samples) may take for `samples` samples in `tracks` tracks: a little more than FFmpeg's
    /// muxer writes, so a file-length limit holds with the index included.
    static func indexBytes(samples: Int, tracks: Int) -> Int64 {
        Int64(4096 + 1024 * tracks + 20 * samples)
    }

    /// Samples written and progress (0…1 of the range) per lane, shared by the lane tasks.
    final class LaneTally: Sendable {
        /// A copying lane stopped short of the file-length limit.
        let limitReached = Locked(false)
        /// Tracks more than 2/3 of whose packets were damaged, with their failure.
        let overDamaged = Locked<[(track: AssetTrack, failure: MediaError)]>([])
        let counts: Locked<[Int]>
        /// Bytes handed to the writer per lane (estimated from the bit rate for encoded lanes).
        let bytes: Locked<[Int64]>
        /// Where each lane's samples handed to the writer end (source time); nil before any.
        let ends: Locked<[MediaTime?]>
        /// Lanes that hold no other back (subtitles: their next cue may be minutes away).
        let sparse: Set<Int>
        init(lanes: Int, sparse: Set<Int>) {
            self.sparse = sparse
            bytes = Locked([Int64](repeating: 0, count: lanes))
            counts = Locked([Int](repeating: 0, count: lanes))
            ends = Locked([MediaTime?](repeating: nil, count: lanes))
        }

        /// Records that lane `i` has handed samples up to `end`.
        func reached(_ i: Int, _ end: MediaTime) {
            guard end.isNumeric else { return }
            ends.withLock { $0[i] = max($0[i] ?? end, end) }
        }

        /// Where every lane but the sparse ones has arrived: the earliest of their ends, `start`
        /// for a lane with none yet. A file-length limit ends the file there.
        func arrivedByAll(from start: MediaTime) -> MediaTime {
            ends.withLock { ends in ends.indices.filter { !sparse.contains($0) }.map { ends[$0] ?? start }.min() } ?? start
        }
    }
}

/// Bounds how many exports run at once in this process; the rest wait (`.waiting`).
actor ExportSlots {
    static let shared = ExportSlots(limit: max(1, ProcessInfo.processInfo.activeProcessorCount))
    private let limit: Int
    private var running = 0
    private var waiters: [LockedContinuation<Void, Never>] = []

    init(limit: Int) { self.limit = limit }

    func acquire() async throws {
        try Task.checkCancellation()
        if running < limit {
            running += 1
            return
        }
        await withLockedContinuation { waiters.append($0) }
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
    static func placeDecoding(of output: some VideoDecodingOutput, hardware: HardwareDecision?, device: VideoDevice?,
                              encodingTo settings: VideoSettings) {
        if hardware?.decodesOnDevice == true {
            output.hardwareDevice = device
        } else if hardware?.encodesOnDevice != true {
            output.decoderThreadCount = PipelineBounds.decoderThreads(besideHostEncoderOf: settings.codec)
        }
    }
}

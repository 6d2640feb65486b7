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
            var result = try await performWithFallback(to: url, as: fileType)
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
            let mediaError = cancelled ? MediaError(.cancelled, "export cancelled", path: path)
                : (error as? MediaError ?? MediaError(.encodeFailed, "\(error)", path: path))
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
                                 path: asset.displayPath, underlying: (error as? MediaError)?.underlying)
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
                guard !run.withLock({ $0.cancelled }), !Task.isCancelled else { throw empty.error }
                // A seek can land where nothing decodes (FFmpeg 5.1's Ogg Opus): read from the
                // file's start and drop what lies before the range, as ffmpeg's output-side trim
                // does, before deciding the track is unreadable.
                let seeked = settings.withLock { $0.timeRange.start > .zero }
                if seeked, run.withLock({ r in defer { r.readsFromFileStart = true }; return !r.readsFromFileStart }) { continue }
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
                         leavingOut unreadable: [ExportResult.DroppedTrack]) async throws -> ExportResult {
        defer {
            // What the demuxer held queued at most, for the test seam.
            if let probe = stageProbe, let queued = run.withLock({ $0.reader })?.demuxSession?.peakQueuedPackets {
                probe.peakQueuedPackets = queued
            }
        }
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
        // An output of a multi-output export reads the shared decodes in its first attempt
        // (a retry decodes on its own), and lets go of them as the attempt ends, whatever the
        // end, so it never holds the other outputs back.
        let shares = settings.withLock { $0.fanOut }?.claim() ?? []
        defer { for share in shares { share.detach() } }
        guard canWrite(fileType) else {
            throw MediaError(.invalidArgument, "the \(preset.name) preset cannot write \(fileType) files (it writes \(preset.fileTypes.map(\.rawValue).joined(separator: ", ")))", path: url.path)
        }
        let (tracks, duration) = try await asset.load(.tracks, .duration)
        let s = settings.withLock { $0 }
        let range = s.timeRange
        let start = range.start.isNumeric ? range.start : .zero
        // Where the exported media ends: the range's end, or the asset's.
        let stop = range.end.isNumeric ? min(range.end, duration) : duration
        guard stop > start else {
            // An empty range of a file with media is the range's fault; a file without samples is its own.
            guard duration > .zero else {
                throw MediaError(.noTracks, "the file holds no media: its tracks have no samples", path: asset.displayPath)
            }
            throw MediaError(.invalidArgument, "the time range \(start.seconds)–\(stop.seconds) s holds no media", path: asset.displayPath)
        }
        // Progress and the reported duration are fractions and seconds for people, not engine time.
        let totalSeconds = max((stop - start).seconds, 0.001)

        let reader = AssetReader(asset: asset)
        reader.timeRange = range
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
            writer.chapters = Chapter.carriedOver(try await asset.load(.chapters), from: start, to: stop)
        }
        let probe = stageProbe
        writer.probe = probe
        run.withLock {
            $0.reader = reader
            $0.writer = writer
            $0.usesDevice = false
            $0.resumedReaders = []
            $0.sideReaders = []
            $0.resumption = nil
        }
        if run.withLock({ $0.cancelled }) { throw MediaError(.cancelled, "export cancelled", path: url.path) }

        let unreadableIDs = Set(unreadable.map(\.trackID))
        var plan = try await makePlan(tracks: tracks.filter { !unreadableIDs.contains($0.trackID) }, fileType: fileType, softwareOnly: softwareOnly)
        plan.droppedTracks += unreadable
        // The shared decodes this plan reads; the others are let go at once.
        let shareable = Self.shareableDecodes(of: plan, settings: s)
        let usedShares = shares.filter { shareable.contains($0.request) }
        for share in shares where !shareable.contains(share.request) { share.detach() }
        func sharedOutput(for track: AssetTrack?) -> AssetReaderOutput? {
            usedShares.first { $0.request.trackID == track?.trackID }.map { FanOutBranchOutput($0.source, branch: $0.branch) }
        }
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
        // What the video stages really do, reported instead of the plan where they differ.
        let observations = StageObservations()
        var lanes: [Lane] = []
        for track in plan.passthroughTracks {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
            let input = try AssetWriterInput(mediaType: track.mediaType, outputSettings: nil, sourceFormatHint: track.formatDescription)
            if track.mediaType == .video { input.transform = track.preferredTransform }
            Self.carryTrackTraits(of: track, to: input, fileType: fileType)
            lanes.append(Lane(track: track, output: output, input: input, converter: nil, copiesPackets: true))
        }
        if let video = plan.videoTrack, let videoSettings = plan.videoSettings {
            let hardware = plan.hardware
            var attributes = if hardware?.scalesOnDevice == true {
                // Decoded, scaled and encoded on the device: the reader's video processor fits
                // the picture, the encoder reads its surfaces.
                PixelBufferAttributes(pixelFormat: .vaapiSurface, width: videoSettings.width, height: videoSettings.height,
                                      scalingMode: videoSettings.scalingMode)
            } else if videoSettings.colorProperties?.fullRange == nil {
                // Fitted to the output size where it is decoded, in host memory: what waits
                // for the encoder is the smaller picture, and the scaling runs beside encoding.
                PixelBufferAttributes(pixelFormat: videoSettings.pixelFormat ?? .yuv420p, width: videoSettings.width,
                                      height: videoSettings.height, scalingMode: videoSettings.scalingMode)
            } else {
                // A range conversion is the writer's: it fits and converts in one pass.
                PixelBufferAttributes(pixelFormat: videoSettings.pixelFormat ?? .yuv420p)
            }
            // Interlaced pictures are deinterlaced (the writer makes progressive video only);
            // HDR pictures going to SDR settings are tone-mapped where they are decoded.
            attributes.colorProperties = Self.toneMapping(from: video, to: videoSettings)
            attributes.burnedSubtitles = plan.burnedSubtitles
            // Every video track goes to the compositor, which draws the upright picture.
            let videoTracks = tracks.filter { $0.mediaType == .video && !$0.isAttachedPicture && !unreadableIDs.contains($0.trackID) }
            if let composition = s.videoComposition {
                do {
                    try composition.validate(forTrackIDs: Set(videoTracks.map(\.trackID)),
                                             timeRange: MediaTimeRange(start: .zero, end: videoTracks.map(\.timeRange.end).max() ?? duration))
                } catch {
                    throw MediaError(.invalidArgument, "the video composition is invalid: \(error)", path: asset.displayPath)
                }
            }
            let output: AssetReaderOutput
            if let shared = sharedOutput(for: video) {
                // Decoded (or composited) once for every output; this output's writer fits the picture.
                output = shared
            } else if let composition = s.videoComposition {
                let compositing = try AssetReaderVideoCompositionOutput(videoTracks: videoTracks)
                compositing.videoComposition = composition
                compositing.customVideoCompositor = s.customVideoCompositor
                Self.placeDecoding(of: compositing, hardware: hardware, device: plan.device, encodingTo: videoSettings)
                compositing.observations = observations
                output = compositing
            } else {
                let trackOutput = try AssetReaderTrackOutput(track: video, outputSettings: .video(attributes))
                Self.placeDecoding(of: trackOutput, hardware: hardware, device: plan.device, encodingTo: videoSettings)
                trackOutput.observations.withLock { $0 = observations }
                output = trackOutput
            }
            var encoded = videoSettings
            if let segments = s.rendition?.segments, let average = encoded.averageBitRate, encoded.maxBitRate == nil {
                // HLS authoring (rule 1.19): no segment's rate above twice the average.
                encoded.maxBitRate = average * 3 / 2
                encoded.maxBitRateWindow = min(segments.keyframeInterval, MediaTime(value: 1, timescale: 1))
            }
            let input = try AssetWriterInput(mediaType: .video, outputSettings: .video(encoded))
            input.forcedKeyframeInterval = s.rendition?.segments.keyframeInterval
            if hardware?.encodesOnDevice == true { input.hardwareDevice = plan.device }
            input.observations = observations
            input.transform = s.videoComposition == nil ? video.preferredTransform : .identity
            let converter = plan.frameRate.map { FrameRateConverter(framesPerSecond: $0, start: start) }
            // On a device, unless the policy requires it, a failure resumes the video in software.
            // A video composition cannot resume mid-way: a failure redoes the export in software.
            // A streaming rendition cannot either: its segments and init.mp4 describe the device's
            // stream; its whole attempt is redone in software instead.
            let resumable = hardware != nil && hardwarePolicy != .require && s.videoComposition == nil && s.rendition == nil
            input.resumable = resumable
            output.recoversFromDeviceFailures = resumable && hardware?.decodesOnDevice == true
            lanes.append(Lane(track: video, output: output, input: input, converter: converter, bitRate: videoSettings.averageBitRate ?? 0,
                              resumesWith: resumable ? videoSettings : nil, burnedSubtitles: plan.burnedSubtitles))
        }
        // A loudness target: a first pass measures each audio track as it will be encoded.
        var gains: [Float?] = Array(repeating: nil, count: plan.audioOutputs.count)
        /// Where each normalised audio output's entry is in `result.loudness`.
        var normalized: [Int: Int] = [:]
        if let target = s.loudnessTarget {
            for (i, audio) in plan.audioOutputs.enumerated() {
                // Read as the export reads it: the same range, the same start, damage weighed the same way.
                let measuring = sideReader(like: reader)
                if run.withLock({ $0.cancelled }) { throw MediaError(.cancelled, "export cancelled", path: url.path) }
                let measuringOutput = try audioOutput(for: audio, gain: nil, settings: s)
                measuringOutput.weighsDamageAcrossTracks = true
                let ids = audio.tracks.map(\.trackID)
                let tracksNamed = ids.map(String.init).joined(separator: "+")
                let measured: Loudness?
                do {
                    measured = try await LoudnessMeter.measure(measuringOutput, of: measuring, path: asset.displayPath)
                } catch let error as MediaError where error.code != .cancelled {
                    // The export weighs damage over every track and may still write the file: it is written unnormalised.
                    result.warnings.append("track \(tracksNamed) (audio): its loudness could not be measured (\(error.message)); it is left alone")
                    run.withLock { $0.sideReaders.removeAll { $0 === measuring } }
                    continue
                }
                run.withLock { $0.sideReaders.removeAll { $0 === measuring } }
                if run.withLock({ $0.cancelled }) { throw MediaError(.cancelled, "export cancelled", path: url.path) }
                guard let measured else {
                    result.warnings.append("track \(tracksNamed) (audio) is silent: its loudness is left alone")
                    continue
                }
                let wanted = target.integrated - measured.integrated
                let gain = min(wanted, target.truePeak - measured.truePeak)
                if gain < wanted - 0.05 {
                    result.warnings.append(String(format: "track %@ (audio) reaches %.1f LUFS, not %.1f: more gain would take its true peak (%.1f dBTP measured) above %.1f dBTP, and the normalisation is linear (no limiter)",
                                                  tracksNamed, measured.integrated + gain, target.integrated, measured.truePeak, target.truePeak))
                }
                gains[i] = Float(pow(10, gain / 20))
                normalized[i] = result.loudness.count
                result.loudness.append(LoudnessNormalization(trackIDs: ids, measured: measured, gain: gain, result: nil))
            }
        }
        for (i, audio) in plan.audioOutputs.enumerated() {
            let (first, audioSettings) = (audio.tracks[0], audio.settings)
            let output: AssetReaderOutput
            if let shared = sharedOutput(for: first), audio.tracks.count == 1 {
                output = shared
            } else {
                output = try audioOutput(for: audio, gain: gains[i], settings: s)
            }
            output.audioTimePitchAlgorithm = s.audioTimePitchAlgorithm
            let input = try AssetWriterInput(mediaType: .audio, outputSettings: .audio(audioSettings))
            Self.carryTrackTraits(of: first, to: input, fileType: fileType)
            lanes.append(Lane(track: first, output: output, input: input, converter: nil, bitRate: audioSettings.bitRate ?? 128_000))
        }
        // Where the picture and sound end: a cue shown past it is cut there.
        let mediaEnd = lanes.map(\.track.timeRange.end).filter(\.isNumeric).max()
        for (track, settings) in plan.subtitleTracks {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
            let input = try AssetWriterInput(mediaType: .subtitle, outputSettings: settings.map { .subtitle($0) }, sourceFormatHint: track.formatDescription)
            Self.carryTrackTraits(of: track, to: input, fileType: fileType)
            input.sparseEnd = mediaEnd
            lanes.append(Lane(track: track, output: output, input: input, converter: nil, copiesPackets: true))
        }
        Self.markDefaultTracks(lanes)
        // Subtitles alone are no export of a file with pictures or sound that could not be kept.
        guard lanes.contains(where: { !$0.isSparse }) || !tracks.contains(where: { $0.mediaType == .video || $0.mediaType == .audio }) else {
            throw MediaError(.noTracks, "nothing to export with \(preset.name): \(result.droppedTracks.map { "track \($0.trackID) (\($0.reason))" }.joined(separator: ", "))", path: asset.displayPath)
        }
        // Subtitles are read by a reader of their own: the shared one would queue every other
        // track's packets up to the next cue, which may be minutes away.
        let subtitleReader = lanes.contains(where: \.isSparse) ? sideReader(like: reader) : nil
        for lane in lanes {
            lane.output.probe = probe
            lane.output.weighsDamageAcrossTracks = true
            lane.input.source = .init(path: asset.displayPath, track: "track \(lane.track.trackID) (\(lane.track.mediaType))")
            guard writer.canAdd(lane.input) else {
                throw MediaError(.unsupported, "a \(fileType) file cannot hold track \(lane.track.trackID) as configured", path: url.path)
            }
            try writer.add(lane.input)
            try (lane.isSparse ? subtitleReader ?? reader : reader).add(lane.output)
        }
        // A remux writes at most the source's samples, known from its index: enough for the
        // writer to reserve the index's room instead of rewriting the file to put it first.
        if lanes.allSatisfy(\.copiesPackets), s.fileLengthLimit == nil,
           lanes.allSatisfy({ $0.track.sampleCount > 0 && $0.track.totalSampleDataLength > 0 }) {
            writer.expectedContent = .init(sampleCount: lanes.reduce(0) { $0 + $1.track.sampleCount },
                                           mediaBytes: lanes.reduce(0) { $0 + $1.track.totalSampleDataLength })
        }
        // Exports sharing a device wait for one of its session slots. The release task holds
        // the slots only, not the device, so the device closes when its last user is done.
        // The outputs of a multi-output export run under the one slot their export holds.
        if plan.device != nil { run.withLock { $0.usesDevice = true } }
        let slots = s.holdsParentsDeviceSlot ? nil : plan.device?.sessions
        if let slots { try await slots.acquire() }
        defer { if let slots { Task { await slots.release() } } }
        // Progress counts what reached the file, not what was handed over: encoders hold back
        // up to dozens of frames, written while finishing. The writer pushes each step.
        writer.observeWrittenDuration { [weak self] seconds in self?.advance(to: 0.97 * seconds / totalSeconds) }
        try reader.startReading()
        try subtitleReader?.startReading()
        if let demux = subtitleReader?.demuxSession {
            // Subtitles are sparse: known up front, their stream does not hold the file's
            // header (and every other track's packets) back until its first cue.
            for lane in lanes where lane.isSparse {
                lane.input.sourceParameters = try demux.codecParameters(stream: lane.track.streamIndex)
            }
        }
        if let probe {
            if let demux = reader.demuxSession { probe.attach(demux) }
            try probe.step(.sourceOpened)
        }
        try writer.startWriting()
        if let probe, let engine = writer.engine { probe.attach(engine) }
        try writer.startSession(atSourceTime: start)
        if range.end.isNumeric && range.end < duration { try writer.endSession(atSourceTime: range.end) }

        let limit = s.fileLengthLimit
        let tally = LaneTally(lanes: lanes.count)
        if lanes.allSatisfy(\.copiesPackets) {
            try await copyPackets(lanes, reader: reader, writer: writer, start: start, limit: limit, tally: tally)
        } else {
            try await runLanes(lanes, reader: reader, writer: writer, start: start, end: range.end, duration: duration,
                               limit: limit, tally: tally)
        }
        if let error = reader.error ?? subtitleReader?.error { throw error }
        if run.withLock({ $0.cancelled }) { throw MediaError(.cancelled, "export cancelled", path: url.path) }
        result.warnings += try Self.weighDamage(tally.overDamaged.withLock { $0 }, lanes: lanes)
        try await writer.finishWriting()
        result.warnings += writer.warnings
        // A cancel that came while the file was being finished still wins: the file goes.
        if run.withLock({ $0.cancelled }) {
            unlink(url.path)
            throw MediaError(.cancelled, "export cancelled", path: url.path)
        }
        let written = tally.counts.withLock { $0 }
        for (i, lane) in lanes.enumerated() where lane.track.mediaType == .video { result.videoFrames = written[i] }
        result.stoppedAtFileLengthLimit = tally.limitReached.withLock { $0 }
            || (limit.map { l in tally.bytes.withLock { $0.reduce(0, +) } >= l || writer.bytesWritten >= l } ?? false)
        if !result.stoppedAtFileLengthLimit {
            result.warnings += Self.endedEarly(lanes, ends: tally.ends.withLock { $0 }, rangeEnd: range.end)
        }
        if s.rendition == nil {
            result.outputBytes = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
            // Said from what the file holds, read back, not from what was handed to the muxer.
            let readBack = (try? AssetInspector.containerMetadata(path: url.path)) ?? []
            let kept = Set(readBack.map { $0.key.lowercased() })
            let lost = writer.metadata.map(\.key).filter { !kept.contains($0.lowercased()) }
            if !lost.isEmpty {
                result.warnings.append("metadata a \(fileType) file cannot hold was left out: \(lost.joined(separator: ", "))")
            }
            // The second pass's result, measured from the file as a player decodes it. It
            // informs: a failure to measure it is a warning, not a failure of the file written.
            if !normalized.isEmpty {
                let file = Asset(url: url)
                let fileTracks: [AssetTrack] = (try? await file.load(.tracks)) ?? []
                let writtenAudio = fileTracks.filter { $0.mediaType == .audio }
                for (output, entry) in normalized where writtenAudio.indices.contains(output) {
                    let reading = AssetReader(asset: file)
                    run.withLock { $0.sideReaders.append(reading) }
                    defer { run.withLock { $0.sideReaders.removeAll { $0 === reading } } }
                    let pcm = LinearPCMSettings(sampleRate: nil, channelCount: nil, channelLayout: nil, bitDepth: 32, isFloat: true, isInterleaved: false)
                    do {
                        result.loudness[entry].result = try await LoudnessMeter.measure(
                            try AssetReaderTrackOutput(track: writtenAudio[output], outputSettings: .audio(pcm)), of: reading, path: url.path)
                    } catch {
                        result.warnings.append("the loudness of the written audio track \(output + 1) could not be measured again: \(error)")
                    }
                }
                // A cancel that came while measuring still wins: the file goes.
                if run.withLock({ $0.cancelled }) {
                    unlink(url.path)
                    throw MediaError(.cancelled, "export cancelled", path: url.path)
                }
            }
        }
        for lane in lanes {
            if let damage = (lane.output as? AssetReaderTrackOutput)?.damageReport {
                result.warnings.append("track \(lane.track.trackID) (\(lane.track.mediaType)): \(damage)")
            }
            // Decoders close before the device's session slot is handed on (on return).
            lane.output.releaseResources()
        }
        let ran = observations.snapshot
        result.hostTransfers = ran.transfers
        result.hostTransferBytes = ran.transferBytes
        let resumption = run.withLock { $0.resumption }
        if resumption == nil, let path = observations.path, path != plan.path {
            result.warnings.append("planned the \(plan.path.rawValue) path but ran the \(path.rawValue) one: \(observations.summary)")
            result.path = path
            result.pathReason = "\(observations.summary) (the plan was: \(plan.pathReason))"
        }
        if let resumed = resumption {
            let seconds = String(format: "%.3f", resumed.at.seconds)
            result.fallbackReason = resumed.cause
            result.path = .software
            result.pathReason = "the device failed mid-export (\(resumed.cause)); the video went on in software from the keyframe at \(seconds) s, keeping the \(resumed.framesKept) pictures before it"
            result.warnings.append("device failure: the video went on in software from the keyframe at \(seconds) s (picture \(resumed.framesKept)): \(resumed.cause)")
        }
        result.durationSeconds = totalSeconds
        return result
    }

    /// A reader of the asset beside `main`, reading the same range from the same start, and
    /// cancelled with the export.
    private func sideReader(like main: AssetReader) -> AssetReader {
        let side = AssetReader(asset: asset)
        side.timeRange = main.timeRange
        side.seeksToRangeStart = main.seeksToRangeStart
        run.withLock { $0.sideReaders.append(side) }
        return side
    }

    /// The reader output that decodes `audio`'s tracks as its encoder takes them: one track as
    /// it is, or several mixed (or placed side by side), at `gain` (linear) when given.
    private func audioOutput(for audio: AudioOutputPlan, gain: Float?, settings s: Settings) throws -> AssetReaderOutput {
        let pcm = Self.decodedPCM(for: audio.settings)
        let output: AssetReaderOutput
        if audio.tracks.count == 1 && s.audioMix == nil && gain == nil {
            output = try AssetReaderTrackOutput(track: audio.tracks[0], outputSettings: .audio(pcm))
        } else {
            let mix = try AssetReaderAudioMixOutput(audioTracks: audio.tracks, audioSettings: pcm)
            let ids = audio.tracks.map(\.trackID)
            mix.audioMix = gain.map { (s.audioMix ?? AudioMix()).scaled(by: $0, trackIDs: ids) } ?? s.audioMix
            mix.placesTracksAsChannels = audio.mergesMonoTracks
            output = mix
        }
        output.audioTimePitchAlgorithm = s.audioTimePitchAlgorithm
        return output
    }

    /// What a kept track keeps of its source: its language and its title. MP4 and QuickTime
    /// store ISO 639-2/T codes ("fra") and a track's title as its handler name; Matroska keeps
    /// the source's spelling and its title.
    static func carryTrackTraits(of track: AssetTrack, to input: AssetWriterInput, fileType: FileType) {
        let matroska = fileType.muxerName == "matroska" || fileType == .webm
        if let language = track.languageCode {
            input.languageCode = matroska ? language : TrackSelection.normalizedLanguage(language)
        }
        if let title = track.metadata.first(where: { $0.key.lowercased() == "title" })?.value {
            input.metadata = [MetadataItem(key: matroska ? "title" : "handler_name", value: title)]
        }
    }

    /// Which kept tracks play by default, at most one of each kind: the first picture and sound
    /// track the source plays by default (or its first when it marks none), and the subtitle
    /// track the source marks so (subtitles marked by no one stay off).
    private static func markDefaultTracks(_ lanes: [Lane]) {
        for kind in [MediaType.video, .audio, .subtitle] {
            let kept = lanes.filter { $0.track.mediaType == kind }
            let chosen = kind == .subtitle ? kept.first { $0.track.isMarkedDefault }
                : kept.first { $0.track.isMarkedDefault } ?? kept.first { $0.track.isEnabled } ?? kept.first
            for lane in kept { lane.input.marksOutputTrackAsEnabled = lane.input === chosen?.input }
        }
    }

    /// Runs one task per lane, each pulling from its reader output and appending to its writer
    /// input, paced so that no lane runs far ahead of the slowest.
    private func runLanes(_ lanes: [Lane], reader: AssetReader, writer: AssetWriter, start: MediaTime, end: MediaTime,
                          duration: MediaTime, limit: Int64?, tally: LaneTally) async throws {
        let pacer = LanePacer(lanes: lanes.count, start: start, window: PipelineBounds.laneWindow,
                              sparse: Set(lanes.indices.filter { lanes[$0].isSparse }))
        let laneCount = lanes.count
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, lane) in lanes.enumerated() {
                group.addTask {
                    defer { pacer.finish(i) }
                    var converter = lane.converter
                    var output = lane.output
                    var samples = output.sampleBuffers.makeAsyncIterator()
                    var resumable = lane.resumesWith != nil
                    while true {
                        try Task.checkCancellation()
                        try await pacer.waitForTurn(i)
                        let batch: [SampleBuffer]
                        if lane.copiesPackets {
                            // Copied packets travel in batches (one sample at a time under a
                            // file-length limit, which is checked per sample).
                            batch = try await lane.output.nextBatchAsync(maximumCount: limit == nil ? PipelineBounds.packetBatch : 1,
                                                                         maximumSpan: PipelineBounds.packetBatchSpan)
                            if batch.isEmpty { break }
                            // Under a limit, a packet that would take the file past it (its index
                            // included) is not written: the file ends where every track has arrived.
                            if let limit {
                                let adding = batch.reduce(Int64(0)) { $0 + Int64($1.totalSampleSize) }
                                let (handed, samples) = (tally.bytes.withLock { $0.reduce(0, +) }, tally.counts.withLock { $0.reduce(0, +) })
                                if handed + adding + Self.indexBytes(samples: samples + batch.count, tracks: laneCount) > limit {
                                    let reached = pacer.advance(i, to: batch[0].presentationTimeStamp)
                                    if reached > start { try? writer.endSession(atSourceTime: reached) }
                                    tally.limitReached.withLock { $0 = true }
                                    reader.cancelReading()
                                    break
                                }
                            }
                            try await lane.input.append(contentsOf: batch)
                            tally.counts.withLock { $0[i] += batch.count }
                        } else {
                            do {
                                guard let sample = try await samples.next() else { break }
                                batch = [sample]
                                for out in converter != nil ? converter!.push(sample) : [sample] {
                                    try await lane.input.append(out)
                                    tally.counts.withLock { $0[i] += 1 }
                                }
                            } catch let failure as MediaError where resumable && Self.isDeviceFailure(failure, of: output) {
                                // Once: the software stages that take over have no device to lose.
                                resumable = false
                                let resumed = try await self.resumeInSoftware(lane, replacing: output, after: failure, end: end)
                                output = resumed.output
                                samples = output.sampleBuffers.makeAsyncIterator()
                                converter = converter.map { FrameRateConverter(resuming: $0, at: resumed.at) }
                                tally.counts.withLock { $0[i] = resumed.framesKept }
                                continue
                            } catch let failure as MediaError where failure.underlying is DecodeTally && tally.counts.withLock({ $0[i] }) > 0 {
                                // More than 2/3 of the track's packets were damaged, and what
                                // decoded is written. Whether that fails the export is weighed
                                // over every track once all are done, as ffmpeg's error rate is.
                                tally.overDamaged.withLock { $0.append((lane.track, failure)) }
                                break
                            } catch let failure as MediaError where failure.code == .decodeFailed && !Self.isDeviceFailure(failure, of: output)
                                        && tally.counts.withLock({ $0[i] }) == 0 {
                                // Not one packet of the track decodes: it is as unreadable as a
                                // track without packets, and is left out the same way (ffmpeg
                                // writes the other tracks).
                                throw TrackYieldedNothing(trackID: lane.track.trackID, mediaType: lane.track.mediaType,
                                                          otherLanes: laneCount - 1, error: failure)
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
                        tally.reached(i, batchEnd)
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
                        for out in c.finish(end: end.isNumeric ? min(end, duration) : duration) {
                            try await lane.input.append(out)
                            tally.counts.withLock { $0[i] += 1 }
                        }
                    }
                    let stoppedForLimit = tally.limitReached.withLock { $0 } || (limit.map { l in tally.bytes.withLock { $0.reduce(0, +) } >= l } ?? false)
                    if tally.counts.withLock({ $0[i] }) == 0 && !stoppedForLimit && reader.status != .cancelled && !lane.isSparse {
                        let error = MediaError(.corruptOrTruncated, "track \(lane.track.trackID) (\(lane.track.mediaType)) yielded no samples: the file is truncated or its data unreadable",
                                               path: self.asset.displayPath)
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
    }

    /// ffmpeg's error rate over the whole export: tracks more than 2/3 of whose packets were
    /// damaged fail it only when the damaged packets are more than 2/3 of every track's packets
    /// together (intact audio beside damaged video keeps the file). Returns the warnings.
    private static func weighDamage(_ overDamaged: [(track: AssetTrack, failure: MediaError)], lanes: [Lane]) throws(MediaError) -> [String] {
        guard let first = overDamaged.first else { return [] }
        let total = lanes.compactMap { ($0.output as? AssetReaderTrackOutput)?.decodeTally }.reduce(DecodeTally(decoded: 0, damaged: 0), +)
        if total.exceedsErrorRate { throw first.failure }
        return overDamaged.compactMap { entry in
            // Every entry's cause is its tally: the lane keeps only such failures.
            (entry.failure.underlying as? DecodeTally).map { own in
                "track \(entry.track.trackID) (\(entry.track.mediaType)): \(own.damaged) damaged packets against \(own.decoded) decoded frames, over 2/3; written as far as it decodes, since all tracks together (\(total.damaged) of \(total.damaged + total.decoded)) stay under ffmpeg's error rate"
            }
        }
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
        if cancelled { throw MediaError(.cancelled, "export cancelled", path: asset.displayPath) }
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
                let error = MediaError(.corruptOrTruncated, "track \(lane.track.trackID) (\(lane.track.mediaType)) yielded no samples: the file is truncated or its data unreadable",
                                       path: asset.displayPath)
                throw TrackYieldedNothing(trackID: lane.track.trackID, mediaType: lane.track.mediaType,
                                          otherLanes: lanes.count - 1, error: error)
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

    /// Tracks whose samples ended well before the end their container declares (within the
    /// range): the rest of their data could not be read (an index entry FFmpeg refused, data
    /// cut off), and the output is that much shorter. ffmpeg copies such files silently.
    private static func endedEarly(_ lanes: [Lane], ends: [MediaTime?], rangeEnd: MediaTime) -> [String] {
        zip(lanes, ends).compactMap { lane, end in
            // Subtitles and data are sparse: their last sample may well end before the movie.
            guard let end, lane.track.mediaType == .video || lane.track.mediaType == .audio,
                  lane.track.timeRange.duration > .zero else { return nil }
            let declared = rangeEnd.isNumeric ? min(lane.track.timeRange.end, rangeEnd) : lane.track.timeRange.end
            guard declared.isNumeric, declared - end > AssetVerification.missingTolerance else { return nil }
            return String(format: "track %d (%@): its samples end at %.3f s, %.3f s before the end its container declares (%.3f s): the rest could not be read",
                          lane.track.trackID, lane.track.mediaType.rawValue, end.seconds, (declared - end).seconds, declared.seconds)
        }
    }

    /// What a file's index (the MP4 movie box: sample sizes, times, chunk offsets, sync
    /// samples) may take for `samples` samples in `tracks` tracks: a little more than FFmpeg's
    /// muxer writes, so a file-length limit holds with the index included.
    static func indexBytes(samples: Int, tracks: Int) -> Int64 {
        Int64(4096 + 1024 * tracks + 20 * samples)
    }

    /// Samples written and progress (0…1 of the range) per lane, shared by the lane tasks.
    private final class LaneTally: Sendable {
        /// A copying lane stopped short of the file-length limit.
        let limitReached = Locked(false)
        /// Tracks more than 2/3 of whose packets were damaged, with their failure.
        let overDamaged = Locked<[(track: AssetTrack, failure: MediaError)]>([])
        let counts: Locked<[Int]>
        /// Bytes handed to the writer per lane (estimated from the bit rate for encoded lanes).
        let bytes: Locked<[Int64]>
        /// Where each lane's samples handed to the writer end (source time); nil before any.
        let ends: Locked<[MediaTime?]>
        init(lanes: Int) {
            bytes = Locked([Int64](repeating: 0, count: lanes))
            counts = Locked([Int](repeating: 0, count: lanes))
            ends = Locked([MediaTime?](repeating: nil, count: lanes))
        }

        /// Records that lane `i` has handed samples up to `end`.
        func reached(_ i: Int, _ end: MediaTime) {
            guard end.isNumeric else { return }
            ends.withLock { $0[i] = max($0[i] ?? end, end) }
        }
    }

    /// One track's way from reader to writer.
    // @unchecked: the frame-rate converter it carries is copied into its lane's task and used there alone.
    private struct Lane: @unchecked Sendable {
        let track: AssetTrack
        let output: AssetReaderOutput
        let input: AssetWriterInput
        let converter: FrameRateConverter?
        /// Target bits per second of an encoded lane, 0 for passthrough.
        var bitRate = 0
        /// The lane copies compressed packets (passthrough): they cross threads in batches.
        var copiesPackets = false
        /// A video lane on a device that goes on in software, from its open group's keyframe,
        /// when the device fails: its output settings for that.
        var resumesWith: VideoSettings?
        /// The subtitles drawn into the video's pictures, drawn again by a resumed reader.
        var burnedSubtitles: SubtitleBurnIn?
        /// Subtitles: the track may well have no sample in the range.
        var isSparse: Bool { track.mediaType == .subtitle }
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

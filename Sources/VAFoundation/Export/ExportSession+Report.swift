import Foundation

/// The result: what the plan chose, then what the attempt wrote, read back where it can be.
extension ExportSession {
    /// The result as the plan has it, before anything runs.
    func startingResult(of plan: ExportPlan, url: URL, fileType: FileType) async throws -> ExportResult {
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
        return result
    }

    /// Completes `result` with what the attempt wrote: the pictures, where a length limit or
    /// the source's data ended it, the file's size and metadata, the loudness reached, the
    /// damage skipped and the path the stages really ran. The decoders close here.
    func describeWritten(_ graph: ExportGraph, tally: EdgeTally, plan: ExportPlan, span: ExportSpan, settings s: Settings,
                         url: URL, fileType: FileType, into result: inout ExportResult) async throws {
        let written = tally.counts.withLock { $0 }
        for (i, edge) in graph.edges.enumerated() where edge.track.mediaType == .video { result.videoFrames = written[i] }
        result.stoppedAtFileLengthLimit = tally.limitReached.withLock { $0 }
            || (s.fileLengthLimit.map { l in tally.bytes.withLock { $0.reduce(0, +) } >= l || graph.writer.bytesWritten >= l } ?? false)
        if !result.stoppedAtFileLengthLimit {
            result.warnings += Self.endedEarly(graph.edges, ends: tally.ends.withLock { $0 }, rangeEnd: span.range.end)
        }
        if s.rendition == nil {
            Self.describeFile(url, writer: graph.writer, fileType: fileType, into: &result)
            try await measureWrittenLoudness(url, normalized: graph.normalized, into: &result)
        }
        for edge in graph.edges {
            if let damage = (edge.output as? AssetReaderTrackOutput)?.damageReport {
                result.warnings.append("track \(edge.track.trackID) (\(edge.track.mediaType)): \(damage)")
            }
            // Decoders close before the device's session slot is handed on (on return).
            edge.output.releaseResources()
        }
        describeStages(graph.observations, plan: plan, into: &result)
        result.duration = Self.writtenLength(span, ends: tally.ends.withLock { $0 }, sparse: tally.sparse)
    }

    /// How long the output lasts: to where its last picture or sound ends, within the span (a
    /// file whose header claims more than its data holds ends early).
    static func writtenLength(_ span: ExportSpan, ends: [MediaTime?], sparse: Set<Int>) -> MediaTime {
        guard let latest = ends.indices.filter({ !sparse.contains($0) }).compactMap({ ends[$0] }).max() else { return span.length }
        return min(max(latest - span.start, .zero), span.length)
    }

    /// The file's size, and the metadata it could not hold: said from what the file holds,
    /// read back, not from what was handed to the muxer.
    private static func describeFile(_ url: URL, writer: AssetWriter, fileType: FileType, into result: inout ExportResult) {
        result.outputBytes = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
        let readBack = (try? AssetInspector.containerMetadata(path: url.path)) ?? []
        let kept = Set(readBack.map { $0.key.lowercased() })
        let lost = writer.metadata.map(\.key).filter { !kept.contains($0.lowercased()) }
        if !lost.isEmpty {
            result.warnings.append("metadata a \(fileType) file cannot hold was left out: \(lost.joined(separator: ", "))")
        }
    }

    /// A loudness target's second pass: each normalised track measured in the file as a player
    /// decodes it. It informs: a failure to measure is a warning, not a failure of the file. A
    /// cancel that came meanwhile still wins, and the file goes.
    private func measureWrittenLoudness(_ url: URL, normalized: [Int: Int], into result: inout ExportResult) async throws {
        guard !normalized.isEmpty else { return }
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
        try removeFileIfCancelled(url)
    }

    /// The host transfers the stages made, and the path they ran where it is not the plan's: a
    /// device that failed mid-export, or a stage that could not do on the device what the plan said.
    private func describeStages(_ observations: StageObservations, plan: ExportPlan, into result: inout ExportResult) {
        let ran = observations.snapshot
        result.hostTransfers = ran.transfers
        result.hostTransferBytes = ran.transferBytes
        if let resumed = run.withLock({ $0.resumption }) {
            let seconds = String(format: "%.3f", resumed.at.seconds)
            result.fallbackReason = resumed.cause
            result.path = .software
            result.pathReason = "the device failed mid-export (\(resumed.cause)); the video went on in software from the keyframe at \(seconds) s, keeping the \(resumed.framesKept) pictures before it"
            result.warnings.append("device failure: the video went on in software from the keyframe at \(seconds) s (picture \(resumed.framesKept)): \(resumed.cause)")
        } else if let path = observations.path, path != plan.path {
            result.warnings.append("planned the \(plan.path.rawValue) path but ran the \(path.rawValue) one: \(observations.summary)")
            result.path = path
            result.pathReason = "\(observations.summary) (the plan was: \(plan.pathReason))"
        }
    }

    /// ffmpeg's error rate over the whole export: tracks more than 2/3 of whose packets were
    /// damaged fail it only when the damaged packets are more than 2/3 of every track's packets
    /// together (intact audio beside damaged video keeps the file). Returns the warnings.
    static func weighDamage(_ overDamaged: [(track: AssetTrack, failure: MediaError)], edges: [Edge]) throws(MediaError) -> [String] {
        guard let first = overDamaged.first else { return [] }
        let total = edges.compactMap { ($0.output as? AssetReaderTrackOutput)?.decodeTally }.reduce(DecodeTally(decoded: 0, damaged: 0), +)
        if total.exceedsErrorRate { throw first.failure }
        return overDamaged.compactMap { entry in
            // Every entry's cause is its tally: the edge keeps only such failures.
            (entry.failure.underlying as? DecodeTally).map { own in
                "track \(entry.track.trackID) (\(entry.track.mediaType)): \(own.damaged) damaged packets against \(own.decoded) decoded frames, over 2/3; written as far as it decodes, since all tracks together (\(total.damaged) of \(total.damaged + total.decoded)) stay under ffmpeg's error rate"
            }
        }
    }

    /// Tracks whose samples ended well before the end their container declares (within the
    /// range): the rest of their data could not be read (an index entry FFmpeg refused, data
    /// cut off), and the output is that much shorter. ffmpeg copies such files silently.
    static func endedEarly(_ edges: [Edge], ends: [MediaTime?], rangeEnd: MediaTime) -> [String] {
        zip(edges, ends).compactMap { edge, end in
            // Subtitles and data are sparse: their last sample may well end before the movie.
            guard let end, edge.track.mediaType == .video || edge.track.mediaType == .audio,
                  edge.track.timeRange.duration > .zero else { return nil }
            let declared = rangeEnd.isNumeric ? min(edge.track.timeRange.end, rangeEnd) : edge.track.timeRange.end
            guard declared.isNumeric, declared - end > AssetVerification.missingTolerance else { return nil }
            return String(format: "track %d (%@): its samples end at %.3f s, %.3f s before the end its container declares (%.3f s): the rest could not be read",
                          edge.track.trackID, edge.track.mediaType.rawValue, end.seconds, (declared - end).seconds, declared.seconds)
        }
    }

}

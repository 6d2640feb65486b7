import Foundation

/// The graph builder: from a plan, the reader outputs, writer inputs and the edges joining
/// them, added to one attempt's reader and writer. Nothing runs here but a loudness target's
/// first pass.
extension ExportSession {
    /// The part of the source an attempt exports.
    struct ExportSpan {
        let range: MediaTimeRange
        /// Where the exported media starts: the range's start, or 0.
        let start: MediaTime
        /// Where the exported media ends: the range's end, or the asset's.
        let stop: MediaTime
        /// The asset's duration.
        let duration: MediaTime

        /// Throws when the range holds no media: the range's fault for a file with media, the
        /// file's own for one without samples.
        init(range: MediaTimeRange, duration: MediaTime, path: String) throws(MediaError) {
            self.range = range
            self.duration = duration
            start = Self.start(of: range)
            stop = range.end.isNumeric ? min(range.end, duration) : duration
            guard stop > start else {
                guard duration > .zero else {
                    throw MediaError(.noTracks, "the file holds no media: its tracks have no samples", path: path)
                }
                throw MediaError(.invalidArgument, "the time range \(start.seconds)–\(stop.seconds) s holds no media", path: path)
            }
        }

        /// Where a writer's session for `range` starts: its start, or 0 for an open one.
        static func start(of range: MediaTimeRange) -> MediaTime { range.start.isNumeric ? range.start : .zero }

        /// How long the exported media lasts.
        var length: MediaTime { stop - start }

        /// The length in seconds, for progress: a fraction for people, not engine time.
        var seconds: Double { max(length.seconds, 0.001) }
    }

    /// One attempt's graph: the readers, the writer, and an edge from each reader output to its writer input.
    struct ExportGraph {
        let reader: AssetReader
        /// The subtitle tracks' own reader, when any is kept.
        let subtitleReader: AssetReader?
        let writer: AssetWriter
        let edges: [Edge]
        /// What the video stages really do, reported instead of the plan where they differ.
        let observations: StageObservations
        /// Where each normalised audio output's entry is in the result's `loudness`.
        let normalized: [Int: Int]
    }

    /// One track's way from reader to writer.
    // @unchecked: the frame-rate converter it carries is copied into its edge's runner and used there by one step at a time.
    struct Edge: @unchecked Sendable {
        let track: AssetTrack
        let output: AssetReaderOutput
        let input: AssetWriterInput
        let converter: FrameRateConverter?
        /// Target bits per second of an encoded edge, 0 for passthrough.
        var bitRate = 0
        /// The edge copies compressed packets (passthrough): they cross threads in batches.
        var copiesPackets = false
        /// The packets copied are a shared encode's, not the source's (a multi-output export's audio).
        var copiesSharedEncode = false
        /// A video edge on a device that goes on in software, from its open group's keyframe,
        /// when the device fails: its output settings for that.
        var resumesWith: VideoSettings?
        /// The subtitles drawn into the video's pictures, drawn again by a resumed reader.
        var burnedSubtitles: SubtitleBurnIn?
        /// Subtitles: the track may well have no sample in the range.
        var isSparse: Bool { track.mediaType == .subtitle }
    }

    /// Builds `plan`'s graph on `reader` and `writer` from the kept `tracks` (those of
    /// `sourceTracks` not found unreadable): outputs that a multi-output export decodes once
    /// read `shares`, the rest decode on their own. A loudness target measures each audio
    /// output first, noting what it found in `result`.
    func buildGraph(of plan: ExportPlan, tracks: [AssetTrack], sourceTracks: [AssetTrack], shares: [FanOutBranch.Share],
                    settings s: Settings, span: ExportSpan,
                    reader: AssetReader, writer: AssetWriter, fileType: FileType, url: URL,
                    result: inout ExportResult) async throws -> ExportGraph {
        // The shared decodes this plan reads; the others are let go at once.
        let shareable = Self.shareableDecodes(of: plan, settings: s, fileType: fileType)
        let used = shares.filter { shareable.contains($0.request) }
        for share in shares where !shareable.contains(share.request) { share.detach() }
        let observations = StageObservations()
        var edges = try Self.passthroughEdges(of: plan, fileType: fileType)
        if let video = try videoEdge(of: plan, tracks: tracks, shares: used, settings: s, span: span, observations: observations) {
            edges.append(video)
        }
        let (gains, normalized) = try await measureLoudness(of: plan, settings: s, beside: reader, url: url, result: &result)
        edges += try audioEdges(of: plan, gains: gains, shares: used, settings: s, fileType: fileType)
        edges += try Self.subtitleEdges(of: plan, besideMediaOf: edges, fileType: fileType)
        Self.markDefaultTracks(edges)
        // Subtitles alone are no export of a file with pictures or sound that could not be kept
        // (left out by the plan, or found unreadable by an earlier attempt).
        guard edges.contains(where: { !$0.isSparse }) || !sourceTracks.contains(where: { $0.mediaType == .video || $0.mediaType == .audio }) else {
            throw MediaError(.noTracks, "nothing to export with \(preset.name): \(result.droppedTracks.map { "track \($0.trackID) (\($0.reason))" }.joined(separator: ", "))", path: asset.displayPath)
        }
        let subtitleReader = try connect(edges, reader: reader, writer: writer, fileType: fileType, url: url)
        // A remux writes at most the source's samples, known from its index: enough for the
        // writer to reserve the index's room instead of rewriting the file to put it first.
        if edges.allSatisfy({ $0.copiesPackets && !$0.copiesSharedEncode }), s.fileLengthLimit == nil,
           edges.allSatisfy({ $0.track.sampleCount > 0 && $0.track.totalSampleDataLength > 0 }) {
            writer.expectedContent = .init(sampleCount: edges.reduce(0) { $0 + $1.track.sampleCount },
                                           mediaBytes: edges.reduce(0) { $0 + $1.track.totalSampleDataLength })
        }
        return ExportGraph(reader: reader, subtitleReader: subtitleReader, writer: writer, edges: edges,
                           observations: observations, normalized: normalized)
    }

    /// The shared decode of `track` that this output reads, as its own reader output.
    private static func sharedOutput(for track: AssetTrack?, in shares: [FanOutBranch.Share]) -> AssetReaderOutput? {
        shares.first { $0.request.trackID == track?.trackID }.map { FanOutBranchOutput($0.source, branch: $0.branch) }
    }

    private static func passthroughEdges(of plan: ExportPlan, fileType: FileType) throws -> [Edge] {
        try plan.passthroughTracks.map { track in
            let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
            let input = try AssetWriterInput(mediaType: track.mediaType, outputSettings: nil, sourceFormatHint: track.formatDescription)
            if track.mediaType == .video { input.transform = track.preferredTransform }
            carryTrackTraits(of: track, to: input, fileType: fileType)
            return Edge(track: track, output: output, input: input, converter: nil, copiesPackets: true)
        }
    }

    /// The edge encoding the plan's video track, or its video composition's pictures; nil when the plan encodes no video.
    private func videoEdge(of plan: ExportPlan, tracks: [AssetTrack], shares: [FanOutBranch.Share], settings s: Settings,
                           span: ExportSpan, observations: StageObservations) throws -> Edge? {
        guard let video = plan.videoTrack, let videoSettings = plan.videoSettings else { return nil }
        let hardware = plan.hardware
        let output = try videoOutput(of: plan, track: video, settings: videoSettings, tracks: tracks, shares: shares,
                                     session: s, duration: span.duration, observations: observations)
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
        let converter = plan.frameRate.map { FrameRateConverter(framesPerSecond: $0, start: span.start) }
        // On a device, unless the policy requires it, a failure resumes the video in software.
        // A video composition cannot resume mid-way: a failure redoes the export in software.
        // A streaming rendition cannot either: its segments and init.mp4 describe the device's
        // stream; its whole attempt is redone in software instead.
        let resumable = hardware != nil && s.hardwarePolicy != .require && s.videoComposition == nil && s.rendition == nil
        input.resumable = resumable
        output.recoversFromDeviceFailures = resumable && hardware?.decodesOnDevice == true
        return Edge(track: video, output: output, input: input, converter: converter, bitRate: videoSettings.averageBitRate ?? 0,
                    resumesWith: resumable ? videoSettings : nil, burnedSubtitles: plan.burnedSubtitles)
    }

    /// Where the video edge's pictures come from: the shared decode, the video composition, or the track decoded.
    private func videoOutput(of plan: ExportPlan, track video: AssetTrack, settings videoSettings: VideoSettings, tracks: [AssetTrack],
                             shares: [FanOutBranch.Share], session s: Settings, duration: MediaTime,
                             observations: StageObservations) throws -> AssetReaderOutput {
        // Every video track goes to the compositor, which draws the upright picture.
        let videoTracks = tracks.filter { $0.mediaType == .video && !$0.isAttachedPicture }
        if let composition = s.videoComposition {
            do {
                try composition.validate(forTrackIDs: Set(videoTracks.map(\.trackID)),
                                         timeRange: MediaTimeRange(start: .zero, end: videoTracks.map(\.timeRange.end).max() ?? duration))
            } catch {
                throw MediaError(.invalidArgument, "the video composition is invalid: \(error)", path: asset.displayPath)
            }
        }
        if let shared = Self.sharedOutput(for: video, in: shares) {
            // Decoded (or composited) once for every output; this output's writer fits the picture.
            return shared
        }
        if let composition = s.videoComposition {
            let compositing = try AssetReaderVideoCompositionOutput(videoTracks: videoTracks)
            compositing.videoComposition = composition
            compositing.customVideoCompositor = s.customVideoCompositor
            Self.placeDecoding(of: compositing, hardware: plan.hardware, device: plan.device, encodingTo: videoSettings)
            compositing.observations = observations
            return compositing
        }
        var attributes = Self.decodedPictures(for: videoSettings, scaledOnDevice: plan.hardware?.scalesOnDevice == true)
        // Interlaced pictures are deinterlaced (the writer makes progressive video only);
        // HDR pictures going to SDR settings are tone-mapped where they are decoded.
        attributes.colorProperties = Self.toneMapping(from: video, to: videoSettings)
        attributes.burnedSubtitles = plan.burnedSubtitles
        let trackOutput = try AssetReaderTrackOutput(track: video, outputSettings: .video(attributes))
        Self.placeDecoding(of: trackOutput, hardware: plan.hardware, device: plan.device, encodingTo: videoSettings)
        trackOutput.observations.withLock { $0 = observations }
        return trackOutput
    }

    /// The pictures a video track is decoded into for `settings`.
    private static func decodedPictures(for settings: VideoSettings, scaledOnDevice: Bool) -> PixelBufferAttributes {
        if scaledOnDevice {
            // Decoded, scaled and encoded on the device: the reader's video processor fits
            // the picture, the encoder reads its surfaces.
            return PixelBufferAttributes(pixelFormat: .vaapiSurface, width: settings.width, height: settings.height,
                                         scalingMode: settings.scalingMode)
        }
        if settings.colorProperties?.fullRange == nil {
            // Fitted to the output size where it is decoded, in host memory: what waits
            // for the encoder is the smaller picture, and the scaling runs beside encoding.
            return PixelBufferAttributes(pixelFormat: settings.pixelFormat ?? .yuv420p, width: settings.width,
                                         height: settings.height, scalingMode: settings.scalingMode)
        }
        // A range conversion is the writer's: it fits and converts in one pass.
        return PixelBufferAttributes(pixelFormat: settings.pixelFormat ?? .yuv420p)
    }

    /// A loudness target's first pass: each audio output measured as it will be encoded. Returns
    /// each output's linear gain (nil: left alone) and where its entry is in `result.loudness`.
    private func measureLoudness(of plan: ExportPlan, settings s: Settings, beside reader: AssetReader, url: URL,
                                 result: inout ExportResult) async throws -> (gains: [Float?], normalized: [Int: Int]) {
        var gains: [Float?] = Array(repeating: nil, count: plan.audioOutputs.count)
        var normalized: [Int: Int] = [:]
        guard let target = s.loudnessTarget else { return (gains, normalized) }
        for (i, audio) in plan.audioOutputs.enumerated() {
            let tracksNamed = audio.tracks.map { String($0.trackID) }.joined(separator: "+")
            let measured: Loudness?
            do {
                measured = try await measureLoudness(of: audio, settings: s, beside: reader, url: url)
            } catch let error as MediaError where error.code != .cancelled {
                // The export weighs damage over every track and may still write the file: it is written unnormalised.
                result.warnings.append("track \(tracksNamed) (audio): its loudness could not be measured (\(error.message)); it is left alone")
                continue
            }
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
            result.loudness.append(LoudnessNormalization(trackIDs: audio.tracks.map(\.trackID), measured: measured, gain: gain, result: nil))
        }
        return (gains, normalized)
    }

    /// Measures one audio output by a reader beside `reader`: the same range, the same start,
    /// damage weighed the same way. A cancel before or after it ends the export.
    private func measureLoudness(of audio: AudioOutputPlan, settings s: Settings, beside reader: AssetReader, url: URL) async throws -> Loudness? {
        let measuring = sideReader(like: reader)
        defer { run.withLock { $0.sideReaders.removeAll { $0 === measuring } } }
        try throwIfCancelled(path: url.path)
        let output = try audioOutput(for: audio, gain: nil, settings: s)
        output.weighsDamageAcrossTracks = true
        let measured = try await LoudnessMeter.measure(output, of: measuring, path: asset.displayPath)
        try throwIfCancelled(path: url.path)
        return measured
    }

    private func audioEdges(of plan: ExportPlan, gains: [Float?], shares: [FanOutBranch.Share], settings s: Settings,
                            fileType: FileType) throws -> [Edge] {
        try plan.audioOutputs.enumerated().map { i, audio in
            let (first, audioSettings) = (audio.tracks[0], audio.settings)
            let share = audio.tracks.count == 1 ? shares.first { $0.request.trackID == first.trackID } : nil
            if let share, let encoded = share.source.source as? SharedAudioEncodingOutput {
                // Encoded once for every output that writes it alike: its packets are copied here.
                let input = try AssetWriterInput(mediaType: .audio, outputSettings: nil)
                input.sourceParameters = encoded.parameters
                input.mediaTimeScale = Int32(audioSettings.sampleRate)
                Self.carryTrackTraits(of: first, to: input, fileType: fileType)
                return Edge(track: first, output: FanOutBranchOutput(share.source, branch: share.branch), input: input, converter: nil,
                            bitRate: audioSettings.bitRate ?? 128_000, copiesPackets: true, copiesSharedEncode: true)
            }
            let output = try share.map { FanOutBranchOutput($0.source, branch: $0.branch) } ?? audioOutput(for: audio, gain: gains[i], settings: s)
            output.audioTimePitchAlgorithm = s.audioTimePitchAlgorithm
            let input = try AssetWriterInput(mediaType: .audio, outputSettings: .audio(audioSettings))
            Self.carryTrackTraits(of: first, to: input, fileType: fileType)
            return Edge(track: first, output: output, input: input, converter: nil, bitRate: audioSettings.bitRate ?? 128_000)
        }
    }

    /// The kept subtitle tracks' edges, copied or converted; a cue shown past the end of the
    /// picture and sound of `edges` is cut there.
    private static func subtitleEdges(of plan: ExportPlan, besideMediaOf edges: [Edge], fileType: FileType) throws -> [Edge] {
        let mediaEnd = edges.map(\.track.timeRange.end).filter(\.isNumeric).max()
        return try plan.subtitleTracks.map { track, settings in
            let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
            let input = try AssetWriterInput(mediaType: .subtitle, outputSettings: settings.map { .subtitle($0) }, sourceFormatHint: track.formatDescription)
            carryTrackTraits(of: track, to: input, fileType: fileType)
            input.sparseEnd = mediaEnd
            return Edge(track: track, output: output, input: input, converter: nil, copiesPackets: true)
        }
    }

    /// Adds each edge's output to its reader and its input to the writer. Subtitles are read by
    /// a reader of their own, returned: the shared one would queue every other track's packets
    /// up to the next cue, which may be minutes away.
    private func connect(_ edges: [Edge], reader: AssetReader, writer: AssetWriter, fileType: FileType, url: URL) throws -> AssetReader? {
        let subtitleReader = edges.contains(where: \.isSparse) ? sideReader(like: reader) : nil
        for edge in edges {
            edge.output.probe = stageProbe
            edge.output.weighsDamageAcrossTracks = true
            edge.input.source = .init(path: asset.displayPath, track: "track \(edge.track.trackID) (\(edge.track.mediaType))")
            guard writer.canAdd(edge.input) else {
                throw MediaError(.unsupported, "a \(fileType) file cannot hold track \(edge.track.trackID) as configured", path: url.path)
            }
            try writer.add(edge.input)
            try (edge.isSparse ? subtitleReader ?? reader : reader).add(edge.output)
        }
        return subtitleReader
    }

    /// A reader of the asset beside `main`, reading the same range from the same start, and
    /// cancelled with the export.
    func sideReader(like main: AssetReader) -> AssetReader {
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
    private static func markDefaultTracks(_ edges: [Edge]) {
        for kind in [MediaType.video, .audio, .subtitle] {
            let kept = edges.filter { $0.track.mediaType == kind }
            let chosen = kind == .subtitle ? kept.first { $0.track.isMarkedDefault }
                : kept.first { $0.track.isMarkedDefault } ?? kept.first { $0.track.isEnabled } ?? kept.first
            for edge in kept { edge.input.marksOutputTrackAsEnabled = edge.input === chosen?.input }
        }
    }
}

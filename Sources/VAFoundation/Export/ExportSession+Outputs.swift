import FFmpegSupport
import Foundation
import HardwareAcceleration

/// Several outputs from one read of the source: a ladder's renditions decoded once, each
/// output's writer fitting and encoding the shared pictures side by side.
extension ExportSession {
    /// One output of a multi-output export (`export(to:)` with a list): where, as what, and
    /// with which preset; the session's other settings (time range, frame rate, codecs, bit
    /// rates, audio mix, hardware policy) apply to every output.
    public struct Output: Sendable {
        public var url: URL
        public var fileType: FileType
        /// The output's preset; nil takes the session's.
        public var preset: ExportPreset?
        /// An optional output's failure ends that output alone; by default the first failing
        /// output fails the whole export, and every output is removed.
        public var isOptional: Bool

        /// A rendition of a streaming package (`StreamingPackager`) writes segments to its
        /// handler instead of a file at `url`, which then only names it.
        var rendition: RenditionOutput?

        public init(url: URL, fileType: FileType, preset: ExportPreset? = nil, isOptional: Bool = false) {
            self.url = url
            self.fileType = fileType
            self.preset = preset
            self.isOptional = isOptional
        }
    }

    /// Exports the asset to every output from one read of the source: each video and audio
    /// track that two or more outputs decode alike (in host memory, at the source's size) is
    /// decoded once and handed to every one of them by reference, and each output's writer
    /// fits and encodes it on its own thread. A slow output holds the decode back; none runs
    /// more than `PipelineBounds.fanOutWindow` samples ahead of the slowest.
    ///
    /// Returns one result per output, in order: a failure only for an optional output, or for
    /// one whose every track turned out unreadable while another output has something to
    /// write (as one output leaves an unreadable track out, an export leaves out an output
    /// made only of such tracks). The first other output to fail ends the export: the others
    /// are cancelled, every output (finished ones included) is removed, and its error is
    /// thrown. One `states()` stream follows the slowest output still running.
    public func export(to outputs: [Output]) async throws -> [Result<ExportResult, MediaError>] {
        guard !outputs.isEmpty else {
            throw MediaError(.invalidArgument, "an export needs at least one output", path: asset.displayPath)
        }
        let destinations = outputs.map(\.url.standardizedFileURL.path)
        if let shared = destinations.first(where: { path in destinations.filter { $0 == path }.count > 1 }) {
            throw MediaError(.invalidArgument, "two outputs of one export are written to the same file", path: shared)
        }
        try begin()
        try await acquireSlot(path: asset.displayPath)
        defer { Task { await ExportSlots.shared.release() } }
        return try await runningPhase(path: asset.displayPath) { try await exportBranches(outputs) }
    }

    /// Runs one session per output over the shared decodes; see `export(to:)`.
    private func exportBranches(_ outputs: [Output]) async throws -> [Result<ExportResult, MediaError>] {
        // Every output, and the shared decodes, work from the settings as the export began.
        let common = settings.withLock { $0 }
        // One scheduler knows every output's edges, and the branches' of the shared decodes.
        let scheduler = GraphScheduler()
        let branches = outputs.map { output -> ExportSession in
            let branch = ExportSession(asset: asset, preset: output.preset ?? preset)
            branch.settings.withLock {
                $0 = common
                $0.scheduler = scheduler
                $0.holdsParentsDeviceSlot = true
                if let rendition = output.rendition {
                    $0.rendition = rendition
                    if let size = rendition.outputSize { $0.outputSize = size }
                }
            }
            branch.stageProbe = stageProbe
            return branch
        }
        let cancelled = run.withLock { r -> Bool in
            r.branches = branches
            return r.cancelled
        }
        if cancelled { throw Self.cancelled(path: asset.displayPath) }
        for branch in branches {
            branch.run.withLock { $0.progressObserver = { [weak self] in self?.followSlowestBranch() } }
        }
        let (reader, device) = try await shareDecodes(among: branches, writing: outputs, settings: common)
        run.withLock { $0.reader = reader }
        defer { reader?.cancelReading() }
        // One session slot of the device for every output: they are one job.
        if let device { try await device.sessions.acquire() }
        defer { if let device { Task { await device.sessions.release() } } }
        try throwIfCancelled(path: asset.displayPath)
        try reader?.startReading()

        var results = [Result<ExportResult, MediaError>?](repeating: nil, count: outputs.count)
        var firstFailure: MediaError?
        await withTaskGroup(of: (Int, Result<ExportResult, MediaError>).self) { group in
            for (i, branch) in branches.enumerated() {
                let output = outputs[i]
                group.addTask {
                    defer { branch.settings.withLock { $0.fanOut }?.detachAll() }
                    do {
                        try branch.begin()
                        return (i, .success(try await branch.exportHoldingSlot(to: output.url, as: output.fileType)))
                    } catch {
                        return (i, .failure(error as? MediaError ?? MediaError(.encodeFailed, "\(error)", path: output.url.path)))
                    }
                }
            }
            for await (i, result) in group {
                results[i] = result
                guard case .failure(let error) = result, !outputs[i].isOptional, firstFailure == nil,
                      !branches[i].run.withLock({ $0.readsNothing }) else { continue }
                // The others' cancellations are not the cause: the first required failure is.
                firstFailure = error
                for branch in branches { branch.cancelExport() }
            }
        }
        if let firstFailure {
            // The export failed as a whole: no output of it is left, finished ones included.
            for (i, result) in results.enumerated() where outputs[i].rendition == nil {
                if case .success = result { unlink(outputs[i].url.path) }
            }
            throw firstFailure
        }
        let finished = results.map { $0! }
        // Outputs left out for want of a readable track need another to carry the export.
        if !finished.contains(where: { if case .success = $0 { true } else { false } }),
           let unreadable = finished.indices.first(where: { branches[$0].run.withLock { $0.readsNothing } }),
           case .failure(let error) = finished[unreadable] {
            throw error
        }
        return finished
    }

    /// The progress of the slowest output still running, as the export's.
    private func followSlowestBranch() {
        let branches = run.withLock { $0.branches }
        guard let slowest = branches.filter({ $0.status != .failed }).map(\.progress).min() else { return }
        advance(to: slowest)
    }

    /// Opens one reader for every decode that two or more outputs would each make alike, and
    /// gives each of those outputs its branch of it; no reader when no decode is shared. The
    /// outputs are planned here as their sessions will plan them; one whose plan differs when
    /// it runs (or fails here) decodes on its own. Also returns the device the outputs' plans use.
    private func shareDecodes(among branches: [ExportSession], writing outputs: [Output],
                              settings s: Settings) async throws -> (AssetReader?, VADevice?) {
        let tracks = try await asset.load(.tracks)
        var wanted: [SharedDecodeRequest: [Int]] = [:]
        var order: [SharedDecodeRequest] = []
        var device: VADevice?
        for (i, branch) in branches.enumerated() {
            guard branch.canWrite(outputs[i].fileType),
                  let plan = try? await branch.makePlan(tracks: tracks, fileType: outputs[i].fileType, softwareOnly: false,
                                                        settings: branch.settings.withLock { $0 }) else { continue }
            device = device ?? plan.device
            for request in Self.shareableDecodes(of: plan, settings: s, fileType: outputs[i].fileType) {
                if wanted[request] == nil { order.append(request) }
                wanted[request, default: []].append(i)
            }
        }
        let shared = order.filter { wanted[$0]!.count > 1 }
        guard !shared.isEmpty else { return (nil, device) }
        let reader = AssetReader(asset: asset)
        reader.timeRange = s.timeRange
        // Where every output's writer session starts, for the audio encoded once.
        let sessionStart = ExportSpan.start(of: s.timeRange)
        var shares = [[FanOutBranch.Share]](repeating: [], count: branches.count)
        for request in shared {
            guard let track = tracks.first(where: { $0.trackID == request.trackID }) else { continue }
            let users = wanted[request]!
            if request.composited, let composition = s.videoComposition {
                // The video composition drawn once (a rotated source turned upright); each output's writer fits it.
                let videoTracks = tracks.filter { $0.mediaType == .video && !$0.isAttachedPicture }
                let compositing = try AssetReaderVideoCompositionOutput(videoTracks: videoTracks)
                compositing.videoComposition = composition
                compositing.customVideoCompositor = s.customVideoCompositor
                if let codec = request.encoderCodec { compositing.decoderThreadCount = PipelineBounds.decoderThreads(besideHostEncoderOf: codec) }
                try reader.add(compositing)
                let fanOut = FanOutSource(source: compositing, branches: users.count, capacity: PipelineBounds.fanOutWindow(for: .video), probe: stageProbe)
                for (branch, user) in users.enumerated() {
                    shares[user].append(FanOutBranch.Share(request: request, source: fanOut, branch: branch))
                }
                continue
            }
            let output = try AssetReaderTrackOutput(track: track, outputSettings: request.settings)
            if let device = request.device {
                output.hardwareDevice = device
                output.extraDeviceSurfaces.withLock { $0 = PipelineBounds.fanOutDeviceSurfaces(branches: users.count) }
            } else if track.mediaType == .video, let codec = request.encoderCodec {
                output.decoderThreadCount = PipelineBounds.decoderThreads(besideHostEncoderOf: codec)
            }
            output.audioTimePitchAlgorithm = s.audioTimePitchAlgorithm
            let source: AssetReaderOutput = if let encoding = request.encoding {
                try SharedAudioEncodingOutput(decoding: output, settings: encoding.settings, globalHeader: encoding.globalHeader,
                                              sessionStart: sessionStart, path: asset.displayPath,
                                              probe: stageProbe)
            } else {
                output
            }
            // A track past the damage rate ends its branches alone: each export weighs it.
            source.weighsDamageAcrossTracks = true
            try reader.add(source)
            let fanOut = FanOutSource(source: source, branches: users.count, capacity: PipelineBounds.fanOutWindow(for: track.mediaType),
                                      probe: stageProbe)
            for (branch, user) in users.enumerated() {
                shares[user].append(FanOutBranch.Share(request: request, source: fanOut, branch: branch))
            }
        }
        for (i, branch) in branches.enumerated() where !shares[i].isEmpty {
            branch.settings.withLock { $0.fanOut = FanOutBranch(shares[i]) }
        }
        return (reader, device)
    }

    /// The decodes of `plan` that outputs of a multi-output export can share: its video track
    /// decoded at the source's size (each output's writer fits it), in host memory, or into
    /// surfaces of the plan's device when the plan decodes, scales and encodes there (each
    /// output's video processor scales it), or its video composition drawn in host memory at
    /// its render size (every output has the export's one composition); and a single audio
    /// track played without a mix, as PCM in the plan's layout. None where the plan decodes
    /// otherwise: partly on a device, a composition on a device, or mixing tracks.
    static func shareableDecodes(of plan: ExportPlan, settings s: Settings, fileType: FileType) -> [SharedDecodeRequest] {
        var requests: [SharedDecodeRequest] = []
        let onDevice = plan.device != nil && plan.hardware?.scalesOnDevice == true
        if s.videoComposition != nil, plan.device == nil, let video = plan.videoTrack, let videoSettings = plan.videoSettings {
            requests.append(SharedDecodeRequest(trackID: video.trackID, settings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)),
                                                encoderCodec: videoSettings.codec, composited: true))
        }
        if s.videoComposition == nil, plan.device == nil || onDevice, let video = plan.videoTrack, let videoSettings = plan.videoSettings {
            var attributes = onDevice ? PixelBufferAttributes(pixelFormat: .vaapiSurface)
                : PixelBufferAttributes(pixelFormat: videoSettings.pixelFormat ?? .yuv420p, colorProperties: toneMapping(from: video, to: videoSettings))
            attributes.burnedSubtitles = plan.burnedSubtitles
            requests.append(SharedDecodeRequest(trackID: video.trackID, settings: .video(attributes), encoderCodec: videoSettings.codec,
                                                device: onDevice ? plan.device : nil))
        }
        // A loudness target's gain is applied where the audio is read: each output reads its own.
        for output in plan.audioOutputs where s.audioMix == nil && s.loudnessTarget == nil && !output.mergesMonoTracks && output.tracks.count == 1 {
            // A file-length limit ends each output where its own tracks arrived, and its writer
            // trims the audio it encodes there: copied packets it could not trim.
            let encoding = s.fileLengthLimit != nil ? nil
                : SharedDecodeRequest.AudioEncoding(settings: output.settings, globalHeader: Muxer.needsGlobalHeader(formatName: fileType.muxerName))
            requests.append(SharedDecodeRequest(trackID: output.tracks[0].trackID, settings: .audio(decodedPCM(for: output.settings)), encoderCodec: nil,
                                                encoding: encoding))
        }
        return requests
    }

    /// The PCM an export decodes audio into for `settings`: the output's rate and layout, as
    /// 32-bit float planes (what the encoders take).
    static func decodedPCM(for settings: AudioSettings) -> LinearPCMSettings {
        LinearPCMSettings(sampleRate: settings.sampleRate, channelCount: settings.channelCount,
                          channelLayout: settings.channelLayout, bitDepth: 32, isFloat: true, isInterleaved: false)
    }
}

/// A decode an output of a multi-output export asks for: one track, decoded with these
/// settings, on this device or on the host.
struct SharedDecodeRequest: Hashable, Sendable {
    var trackID: Int
    var settings: ReaderOutputSettings
    /// The video codec the decoded pictures go to, which sets the decoder's threads; not part
    /// of what makes two requests alike.
    var encoderCodec: VideoCodec?
    /// The device decoding into surfaces; nil decodes on the host.
    var device: VADevice?
    /// The export's video composition is drawn (from every video track), not the track decoded.
    var composited = false
    /// Audio encoded once too, with these settings, for muxers that do (or do not) want the
    /// codec's header apart; its packets are copied into each output.
    var encoding: AudioEncoding?

    struct AudioEncoding: Hashable, Sendable {
        var settings: AudioSettings
        var globalHeader: Bool
    }

    static func == (a: SharedDecodeRequest, b: SharedDecodeRequest) -> Bool {
        a.trackID == b.trackID && a.settings == b.settings && a.device === b.device && a.composited == b.composited
            && a.encoding == b.encoding
    }
    func hash(into hasher: inout Hasher) {
        hasher.combine(trackID)
        hasher.combine(settings)
        hasher.combine(composited)
        hasher.combine(encoding)
    }
}

/// The shared decodes one output of a multi-output export reads instead of decoding itself.
final class FanOutBranch: Sendable {
    /// One shared decode: the request it serves, and this output's branch of it.
    struct Share: Sendable {
        let request: SharedDecodeRequest
        let source: FanOutSource
        let branch: Int

        func detach() { source.detach(branch: branch) }
    }

    let shares: [Share]
    private let claimed = Locked(false)

    init(_ shares: [Share]) { self.shares = shares }

    /// The shares, to the output's first attempt alone: a shared decode cannot be read twice,
    /// so a retried attempt decodes on its own.
    func claim() -> [Share] {
        claimed.withLock { taken in
            defer { taken = true }
            return taken ? [] : shares
        }
    }

    /// Lets go of every share, used or not: the output is done, and holds no one back.
    func detachAll() {
        for share in shares { share.detach() }
    }
}

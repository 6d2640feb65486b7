import FFmpegSupport
import HardwareAcceleration
import Foundation

/// The planner: which tracks an export copies, encodes or leaves out, with which settings,
/// encoders and hardware path, decided from the asset's tracks and the session's settings
/// alone (no file is opened for writing).
extension ExportSession {
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

    /// Expected output size in bytes: target rates × duration for re-encodes (a constant-quality
    /// encode counts its ceiling), sample bytes for passthrough.
    public var estimatedOutputFileLength: Int64 {
        get async throws { try await estimatedLength(settings: settings.withLock { $0 }) }
    }

    /// How much of the asset fits in `fileLengthLimit` (the whole range when there is no limit).
    public var estimatedMaximumDuration: MediaTime {
        get async throws {
            let s = settings.withLock { $0 }
            let duration = try await asset.load(.duration)
            let seconds = Self.exportDuration(of: s.timeRange, assetDuration: duration)
            guard let limit = s.fileLengthLimit else { return MediaTime(seconds: seconds, preferredTimescale: 600) }
            let length = try await estimatedLength(settings: s)
            guard length > 0 else { return MediaTime(seconds: seconds, preferredTimescale: 600) }
            return MediaTime(seconds: min(seconds, seconds * Double(limit) / Double(length)), preferredTimescale: 600)
        }
    }

    /// `estimatedOutputFileLength` for the settings `s`, read once by the caller.
    private func estimatedLength(settings s: Settings) async throws -> Int64 {
        let (tracks, duration) = try await asset.load(.tracks, .duration)
        let seconds = Self.exportDuration(of: s.timeRange, assetDuration: duration)
        if preset.isPassthrough {
            let rate = tracks.reduce(0.0) { $0 + Double($1.estimatedDataRate) }
            return Int64(rate * seconds / 8)
        }
        let plan = try await makeAssistant(tracks: tracks, settings: s)
        let video = plan.videoSettings.flatMap { $0.averageBitRate ?? $0.maxBitRate } ?? 0
        let bits = Double(video) + Double(plan.audioSettings?.bitRate ?? 0)
        return Int64(bits * seconds / 8)
    }

    /// Seconds of the asset `range` covers; estimates are figures for people, in seconds.
    private static func exportDuration(of range: MediaTimeRange, assetDuration: MediaTime) -> Double {
        let end = min(range.end.isNumeric ? range.end.seconds : .infinity, assetDuration.seconds)
        return max(0, end - (range.start.isNumeric ? range.start.seconds : 0))
    }

    /// The settings assistant for this export, fed with the source's formats and the overrides.
    func makeAssistant(tracks: [AssetTrack], fileType: FileType? = nil, audioTrack: AssetTrack? = nil,
                       settings s: Settings) async throws -> OutputSettingsAssistant {
        var effectivePreset = preset
        if let codec = Self.codecs(s, preset: preset, fileType: fileType).video, codec != preset.videoCodec, preset.videoCodec != nil {
            effectivePreset = preset.replacingVideoCodec(codec)
        }
        guard var assistant = OutputSettingsAssistant(preset: effectivePreset) else {
            throw MediaError(.invalidArgument, "the \(preset.name) preset has no encoding settings", path: asset.displayPath)
        }
        if let video = Self.primaryVideoTrack(tracks) {
            assistant.sourceVideoFormat = video.formatDescription
            assistant.sourceVideoTransform = video.preferredTransform
            if video.nominalFrameRate > 0 {
                assistant.sourceVideoAverageFrameDuration = MediaTime(seconds: 1 / Double(video.nominalFrameRate), preferredTimescale: 90000)
            }
            if video.minFrameDuration.isNumeric { assistant.sourceVideoMinFrameDuration = video.minFrameDuration }
            if let composition = s.videoComposition {
                // The compositor's pictures are the source: its size, upright, at its frame rate.
                assistant.sourceVideoFormat?.video?.width = Int(composition.renderSize.width.rounded())
                assistant.sourceVideoFormat?.video?.height = Int(composition.renderSize.height.rounded())
                assistant.sourceVideoFormat?.video?.pixelAspectRatio = nil
                assistant.sourceVideoTransform = .identity
                if composition.frameDuration.isNumeric, composition.frameDuration > .zero {
                    assistant.sourceVideoAverageFrameDuration = composition.frameDuration
                    assistant.sourceVideoMinFrameDuration = composition.frameDuration
                }
            }
        }
        let audio = audioTrack ?? Self.primaryAudioTrack(tracks)
        assistant.sourceAudioFormat = audio?.formatDescription
        let duration = try? await asset.load(.duration)
        // A composition has no file of its own: its tracks' rates are their sources'.
        let fileRate = asset.url.isFileURL ? Self.fileBitRate(of: asset.url, duration: duration) : nil
        // A track's rate is its sample bytes over its presented duration; samples an edit list
        // hides count in the bytes but not the duration. The whole file's rate bounds it.
        func rate(_ track: AssetTrack?) -> Int? {
            guard let track, track.estimatedDataRate > 0 else { return nil }
            let own = Int(track.estimatedDataRate.rounded())
            return fileRate.map { min(own, $0) } ?? own
        }
        assistant.sourceVideoBitRate = rate(Self.primaryVideoTrack(tracks))
        assistant.sourceAudioBitRate = rate(audio)
        assistant.frameRatePolicy = s.frameRatePolicy
        if let duration, duration.isNumeric {
            let start = s.timeRange.start.isNumeric ? max(s.timeRange.start, .zero) : .zero
            let end = s.timeRange.end.isNumeric ? min(s.timeRange.end, duration) : duration
            if end > start { assistant.sourceDuration = end - start }
        }
        assistant.videoBitRateOverride = s.videoBitRate
        assistant.videoQuality = s.videoQuality
        assistant.encoderSpeed = s.encoderSpeed
        assistant.capsBitRatesAtSource = s.capsBitRatesAtSource
        if let size = s.outputSize { assistant.sizeOverride = size }
        assistant.tableVideoBitRate = s.rendition?.tableVideoBitRate
        return assistant
    }

    /// The file's bytes over its duration in bits per second; nil when either is unknown.
    static func fileBitRate(of url: URL, duration: MediaTime?) -> Int? {
        guard let duration, duration.isNumeric, duration > .zero,
              let bytes = Asset.fileSize(atPath: url.path),
              bytes > 0 else { return nil }
        return Int((Double(bytes) * 8 / duration.seconds).rounded())
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

    /// What exporting to a `fileType` file would do, without doing it: the settings, encoder,
    /// frame rate and path chosen, and the tracks left out with the reason (`vaf transcode --dry-run`).
    public func plan(fileType: FileType) async throws -> ExportPlan {
        guard canWrite(fileType) else {
            throw MediaError(.invalidArgument, "the \(preset.name) preset cannot write \(fileType) files", path: asset.displayPath)
        }
        return try await makePlan(tracks: try await asset.load(.tracks), fileType: fileType, softwareOnly: false, settings: settings.withLock { $0 })
    }

    /// The video codecs a WebM file holds.
    static let webMVideoCodecs: Set<VideoCodec> = [.vp9, .av1]

    /// True when this export can write `fileType`: the preset's own types, and WebM for any
    /// encoding preset (its codecs become WebM's).
    func canWrite(_ fileType: FileType) -> Bool {
        preset.fileTypes.contains(fileType) || (fileType == .webm && !preset.isPassthrough)
    }

    /// The codecs an export writes: the overrides, else the preset's; for WebM a preset's
    /// H.264/HEVC video becomes VP9 and its audio Opus, the codecs WebM holds.
    static func codecs(_ s: Settings, preset: ExportPreset, fileType: FileType?) -> (video: VideoCodec?, audio: AudioCodec?) {
        guard fileType == .webm else { return (s.videoCodec, s.audioCodec) }
        let video = s.videoCodec ?? preset.videoCodec.map { webMVideoCodecs.contains($0) ? $0 : .vp9 }
        let audio = s.audioCodec ?? preset.audioCodec.map { _ in AudioCodec.opus }
        return (video, audio)
    }

    /// The device per the settings, or nil and why there is none.
    private func resolveDevice(_ s: Settings) -> (device: VADevice?, problem: String?) {
        if let device = s.hardwareDevice { return (device, nil) }
        do { return (try VADevice.shared(s.hardwareDeviceName), nil) } catch { return (nil, error.message) }
    }

    /// The plan for the tracks and the settings `s` (the export's snapshot), from them alone.
    func makePlan(tracks allTracks: [AssetTrack], fileType: FileType, softwareOnly: Bool, settings s: Settings) async throws -> ExportPlan {
        // A rendition of a streaming package writes its video, or one audio track, alone.
        let tracks = s.rendition.map { rendition in
            allTracks.filter { ($0.mediaType == .video && rendition.writesVideo) || ($0.mediaType == .audio && $0.trackID == rendition.audioTrackID) }
        } ?? allTracks
        var plan = ExportPlan(frameRatePolicy: preset.isPassthrough ? .passthrough : s.frameRatePolicy)
        let isComposition = asset is Composition
        if preset.isPassthrough && isComposition {
            throw MediaError(.unsupported, "passthrough copies one file's packets and cannot export a composition; use an encoding preset", path: asset.displayPath)
        }
        // A streaming rendition's tracks leave the subtitles out: the video renditions burn them in all the same.
        let burned = try s.subtitlesBurnedIn.map { selection throws(MediaError) in try burnIn(selection, tracks: allTracks, isComposition: isComposition, settings: s) }
        plan.burnedSubtitles = burned?.burnIn
        if !isComposition && s.rendition == nil {
            let soft = tracks.filter { $0.mediaType == .subtitle && $0 !== burned?.track }
            Self.planSubtitles(soft, selection: s.subtitleSelection, fileType: fileType, into: &plan)
            if let burned {
                plan.droppedTracks.append(.init(trackID: burned.track.trackID, mediaType: "subtitle", reason: "burnt into the picture"))
            }
        }
        if preset.isPassthrough {
            planPassthrough(tracks, settings: s, fileType: fileType, into: &plan)
        } else {
            try await planEncoding(tracks, settings: s, fileType: fileType, softwareOnly: softwareOnly, into: &plan)
        }
        let videoTracks = plan.passthroughTracks.filter { $0.mediaType == .video } + (plan.videoTrack.map { [$0] } ?? [])
        if fileType == .mkv || fileType == .webm, let rotated = videoTracks.first(where: { $0.preferredTransform != .identity }) {
            plan.warnings.append("FFmpeg 5.1's Matroska muxer cannot store rotation: track \(rotated.trackID) (rotate \(rotated.preferredTransform.rotationDegrees)°) will play unrotated; use mp4 or mov to keep it")
        }
        return plan
    }

    /// Passthrough: every track but subtitles copied, unless the audio selection leaves it out
    /// or the file type cannot hold it as stored.
    private func planPassthrough(_ tracks: [AssetTrack], settings s: Settings, fileType: FileType, into plan: inout ExportPlan) {
        let keptAudio = s.audioSelection.map { $0.select(tracks.filter { $0.mediaType == .audio }) }
        for track in tracks where track.mediaType != .subtitle {
            if let keptAudio, let selection = s.audioSelection, track.mediaType == .audio, !keptAudio.contains(where: { $0 === track }) {
                plan.droppedTracks.append(.init(trackID: track.trackID, mediaType: "audio", reason: "not selected (audio: \(selection.description))"))
            } else if let reason = passthroughRefusal(track, fileType: fileType) {
                plan.droppedTracks.append(.init(trackID: track.trackID, mediaType: track.mediaType.rawValue, reason: reason))
            } else {
                plan.passthroughTracks.append(track)
            }
        }
        plan.pathReason = "passthrough copies compressed samples; nothing is decoded or encoded"
    }

    /// An encoding preset: the video track and its hardware path, the audio outputs, and the tracks left out.
    private func planEncoding(_ tracks: [AssetTrack], settings s: Settings, fileType: FileType, softwareOnly: Bool,
                              into plan: inout ExportPlan) async throws {
        let assistant = try await makeAssistant(tracks: tracks, fileType: fileType, settings: s)
        let codecs = Self.codecs(s, preset: preset, fileType: fileType)
        if fileType == .webm { try checkWebM(s, codecs: codecs, into: &plan) }
        let video = preset.videoCodec == nil ? nil : Self.primaryVideoTrack(tracks)
        if var videoSettings = assistant.videoSettings, let video {
            if let codec = codecs.video { videoSettings.codec = codec }
            // libx265 budgets bits per frame from the declared rate and ignores timestamps
            // (libx264 follows them), so a variable-rate source declared at its fastest rate
            // ends far below the target bit rate: declare the average rate to it.
            if videoSettings.codec == .hevc, assistant.outputFrameRate == nil, video.nominalFrameRate > 0 {
                videoSettings.expectedSourceFrameRate = Double(video.nominalFrameRate)
            }
            plan.videoTrack = video
            plan.videoSettings = videoSettings
            plan.warnings += Self.lossWarnings(reencoding: video, to: videoSettings)
            plan.videoEncoder = assistant.videoEncoder
            plan.frameRate = assistant.outputFrameRate
            try planHardware(for: video, tracks: tracks, settings: s, softwareOnly: softwareOnly, into: &plan)
        }
        for track in tracks where track.mediaType != .audio && track.mediaType != .subtitle && track.trackID != plan.videoTrack?.trackID {
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
        try await planAudio(tracks, assistant: assistant, codecs: codecs, settings: s, fileType: fileType, into: &plan)
        plan.path = plan.hardware?.path ?? .software
        plan.pathReason = plan.hardware?.reason ?? "audio is encoded in software"
    }

    /// A WebM file holds VP9 or AV1 video and Opus audio: other codecs asked for are refused,
    /// and a preset's own are replaced with a warning.
    private func checkWebM(_ s: Settings, codecs: (video: VideoCodec?, audio: AudioCodec?), into plan: inout ExportPlan) throws {
        if let asked = s.videoCodec, !Self.webMVideoCodecs.contains(asked) {
            throw MediaError(.invalidArgument, "a WebM file holds VP9 or AV1 video, not \(asked); choose vp9 or av1, or another container", path: asset.displayPath)
        }
        if let asked = s.audioCodec, asked != .opus {
            throw MediaError(.invalidArgument, "a WebM file holds Opus audio here, not \(asked); choose opus, or another container", path: asset.displayPath)
        }
        if s.videoCodec == nil || s.audioCodec == nil, preset.videoCodec.map({ !Self.webMVideoCodecs.contains($0) }) ?? false || preset.audioCodec != .opus {
            plan.warnings.append("a WebM file holds VP9/AV1 video and Opus audio: the \(preset.name) preset is written as \(codecs.video.map { "\($0)" } ?? "no video") + \(codecs.audio.map { "\($0)" } ?? "no audio")")
        }
    }

    /// Which video stages run on the device, and the device, for the plan's video settings.
    private func planHardware(for video: AssetTrack, tracks: [AssetTrack], settings s: Settings, softwareOnly: Bool,
                              into plan: inout ExportPlan) throws {
        guard let videoSettings = plan.videoSettings else { return }
        let policy = softwareOnly ? .off : s.hardwarePolicy
        let (device, problem) = policy == .off ? (nil, nil) : resolveDevice(s)
        let decision: HardwareDecision
        if let composition = s.videoComposition {
            decision = try Self.compositionDecision(composition, sources: Self.videoSources(tracks), settings: videoSettings,
                                                    customCompositor: s.customVideoCompositor, policy: policy,
                                                    device: device, problem: problem)
        } else if asset is Composition {
            decision = try Self.plainCompositionDecision(sources: Self.videoSources([video]), settings: videoSettings, policy: policy,
                                                         burning: plan.burnedSubtitles, device: device, problem: problem)
        } else {
            decision = try Self.filteredHardwareJob(video, settings: videoSettings, burning: plan.burnedSubtitles)
                .decide(policy: policy, capabilities: device?.capabilities, problem: problem)
        }
        plan.hardware = decision
        if decision.decodesOnDevice || decision.encodesOnDevice { plan.device = device }
        if let encoder = decision.encoder {
            plan.videoEncoder = EncoderChoice(encoder: encoder, path: .hardware, reason: decision.reason)
        }
    }

    /// The audio tracks written: each selected track as its own, or one made of several (an
    /// audio mix's, a composition's, or a camera's mono pair placed as left and right); the
    /// others are left out, each with its reason.
    private func planAudio(_ tracks: [AssetTrack], assistant: OutputSettingsAssistant, codecs: (video: VideoCodec?, audio: AudioCodec?),
                           settings s: Settings, fileType: FileType, into plan: inout ExportPlan) async throws {
        let isComposition = asset is Composition
        let selection = s.audioMix == nil && !isComposition && s.rendition == nil ? s.audioSelection : nil
        let monoPair = selection == nil && s.audioMix == nil && !isComposition ? Self.monoTrackPair(tracks) : nil
        let groups: [[AssetTrack]] = if let selection {
            selection.select(tracks.filter { $0.mediaType == .audio && $0.sampleCount > 0 }).map { [$0] }
        } else {
            [monoPair ?? Self.audioTracks(tracks, mix: s.audioMix, mixesAllByDefault: isComposition)].filter { !$0.isEmpty }
        }
        let primary = Self.primaryAudioTrack(tracks)
        for group in groups {
            // The assistant's audio settings are the primary track's: another track gets its own.
            let own = group[0] === primary || selection == nil ? assistant : try await makeAssistant(tracks: tracks, fileType: fileType, audioTrack: group[0], settings: s)
            guard var audioSettings = own.audioSettings else { continue }
            if let monoPair {
                // Camera and broadcast files record one microphone per mono track: the first two are left and right.
                audioSettings.channelCount = 2
                audioSettings.channelLayout = "stereo"
                plan.warnings.append("the mono audio tracks \(monoPair[0].trackID) and \(monoPair[1].trackID) are written as one stereo track (left, right)")
            }
            if let codec = codecs.audio { audioSettings.codec = codec }
            if let bitRate = s.audioBitRate { audioSettings.bitRate = bitRate }
            if s.rendition != nil {
                // A streaming package's audio is AAC-LC stereo, which every player takes.
                audioSettings.codec = .aac
                audioSettings.channelCount = 2
                audioSettings.channelLayout = "stereo"
            }
            Self.fitToEncoder(&audioSettings, warnings: &plan.warnings)
            plan.audioOutputs.append(AudioOutputPlan(tracks: group, settings: audioSettings, mergesMonoTracks: monoPair != nil))
        }
        plan.audioSettings = plan.audioOutputs.first?.settings
        let written = plan.audioOutputs.flatMap(\.tracks)
        for track in tracks where track.mediaType == .audio && !written.contains(where: { $0 === track }) {
            let reason = track.sampleCount == 0 ? "the track has no samples"
                : selection.map { "not selected (audio: \($0.description))" }
                ?? (monoPair != nil ? "only the first two mono tracks are kept (as left and right)" : "only the default audio track is exported without an audio mix or an audio selection")
            plan.droppedTracks.append(.init(trackID: track.trackID, mediaType: "audio", reason: reason))
        }
        if let selection, groups.isEmpty, selection != .none, tracks.contains(where: { $0.mediaType == .audio && $0.sampleCount > 0 }) {
            plan.warnings.append("no audio track matches the audio selection \(selection.description): the output has no sound")
        }
    }

    /// Audio settings moved to what their encoder takes: the nearest standard layout and
    /// sample rate, and a bit rate within its per-channel ceiling.
    private static func fitToEncoder(_ audioSettings: inout AudioSettings, warnings: inout [String]) {
        guard let encoder = try? WriterCodecs.audioEncoderName(audioSettings) else { return }
        // The nearest layout the encoder takes; the reader remixes to it.
        let source = audioSettings.channelLayout
        let layout = ChannelLayouts.closest(to: source, channelCount: audioSettings.channelCount, forEncoder: encoder)
        if let source, layout.name != source, !source.hasSuffix(" channels") {
            warnings.append("the \(source) channel layout is written as \(layout.name), the nearest that \(encoder) stores as a standard layout")
        }
        audioSettings.channelLayout = layout.name
        audioSettings.channelCount = layout.channelCount
        // The nearest rate the encoder takes (Opus: 48 kHz for a 44.1 kHz source); the writer resamples.
        audioSettings.sampleRate = WriterCodecs.nearestSampleRate(to: audioSettings.sampleRate, forEncoder: encoder)
        if let rate = audioSettings.bitRate { audioSettings.bitRate = min(rate, min(64_000 * layout.channelCount, 512_000)) }
    }

    /// The video tracks of the files a video composition draws from: a composition's segments' sources, or the asset's own.
    static func videoSources(_ tracks: [AssetTrack]) -> [AssetTrack] {
        let video = tracks.filter { $0.mediaType == .video && !$0.isAttachedPicture }
        return video.flatMap { track in track.compositionTrack.map { $0.sourceTracks.filter { $0.mediaType == .video } } ?? [track] }
    }

    /// Where a plain composition's segments run (no video composition): decoded, scaled by the
    /// video processor, joined and encoded on the device when it takes every stage of every
    /// source with no filter in host memory (a gap then shows one black surface drawn by the
    /// video processor); else decoded and joined in host memory, as before a device was asked for.
    static func plainCompositionDecision(sources: [AssetTrack], settings: VideoSettings, policy: HardwarePolicy, burning: SubtitleBurnIn?,
                                         device: VADevice?, problem: String?) throws(MediaError) -> HardwareDecision {
        let joinedOnHost = "software: a composition's segments are decoded from their files and joined in host memory"
        guard policy != .off else { return .software("\(joinedOnHost) (hardware is off)") }
        guard policy != .hybrid else { return .software("\(joinedOnHost) (hybrid puts one stage on the device; a composition is joined there whole or not at all)") }
        let decisions = try sources.map { source throws(MediaError) in
            try filteredHardwareJob(source, settings: settings, burning: burning).decide(policy: .auto, capabilities: device?.capabilities, problem: problem)
        }
        let name = device?.capabilities.driver.map { "the \($0) device" } ?? "the device"
        if let encoder = decisions.first?.encoder, !decisions.isEmpty, decisions.allSatisfy({ $0.path == .hardware && $0.scalesOnDevice }) {
            let deinterlaced = decisions.contains { $0.deinterlacing == .device }
            return HardwareDecision(path: .hardware, decodesOnDevice: true, encodesOnDevice: true, encoder: encoder,
                                    reason: "full hardware on \(name): the composition's \(sources.count) source\(sources.count == 1 ? "" : "s") decoded\(deinterlaced ? " and deinterlaced" : "") and scaled by the video processor, joined on the device, \(encoder); a gap shows one black surface drawn there",
                                    deinterlacing: deinterlaced ? .device : nil)
        }
        let why = decisions.first { $0.path != .hardware || !$0.scalesOnDevice }?.reason ?? "the composition has no video source"
        if policy == .require {
            throw MediaError(.hardwareFailed, "--hw require: \(name) cannot decode, scale and encode every segment of this composition (\(why))")
        }
        return .software("\(joinedOnHost) (\(why))")
    }

    /// Where a video composition of `sources` runs: decoded, drawn by the video processor and
    /// encoded on the device when it decodes every source and encodes the target; else drawn in
    /// host memory, encoded on the device when it can (one upload per picture).
    static func compositionDecision(_ composition: VideoComposition, sources: [AssetTrack], settings: VideoSettings,
                                    customCompositor: (any VideoCompositing)?, policy: HardwarePolicy,
                                    device: VADevice?, problem: String?) throws(MediaError) -> HardwareDecision {
        let drawer = customCompositor.map { "\(type(of: $0))" } ?? "the software compositor"
        guard policy != .off else { return .software("software: the video composition is drawn by \(drawer) in host memory (hardware is off)") }
        let decisions = try sources.map { source throws(MediaError) in
            try hardwareJob(source, settings: settings).decide(policy: policy == .hybrid ? .auto : policy,
                                                               capabilities: device?.capabilities, problem: problem)
        }
        let name = device?.capabilities.driver.map { "the \($0) device" } ?? "the device"
        let vpp = device?.capabilities.videoProcessing != nil
        let hostOnly: String? = if customCompositor != nil {
            "the custom compositor \(drawer) draws in host memory"
        } else if !(composition.animationTool?.layers.isEmpty ?? true) {
            "overlays are drawn in host memory"
        } else if policy == .hybrid {
            "hybrid (forced)"
        } else if !vpp {
            "\(name) has no video processor"
        } else if let interlaced = sources.first(where: isInterlaced), let device, !HardwareJob.deinterlacesOnVPP(device.capabilities) {
            // The device compositor draws surfaces only; bwdif's pictures are in host memory.
            "track \(interlaced.trackID)'s source is interlaced and \(name)'s video processor does not deinterlace by bob: its pictures are deinterlaced by bwdif in host memory"
        } else if let refused = decisions.first(where: { !$0.decodesOnDevice }) {
            refused.reason
        } else {
            nil
        }
        let encoder = decisions.first?.encoder
        if hostOnly == nil, let encoder, decisions.allSatisfy({ $0.decodesOnDevice && $0.encodesOnDevice }) {
            let interlaced = sources.contains(where: isInterlaced)
            let deinterlacing = interlaced ? ", interlaced pictures deinterlaced by the video processor (bob, deinterlace_vaapi)" : ""
            return HardwareDecision(path: .hardware, decodesOnDevice: true, encodesOnDevice: true, encoder: encoder,
                                    reason: "full hardware on \(name): \(sources.count) source\(sources.count == 1 ? "" : "s") decoded\(deinterlacing), the video composition drawn by the video processor, \(encoder); no frame copied to host memory",
                                    deinterlacing: interlaced ? .device : nil)
        }
        let why = hostOnly ?? decisions.first { $0.encoder == nil }?.reason ?? "the device cannot take every stage"
        if let encoder, decisions.allSatisfy(\.encodesOnDevice) {
            return HardwareDecision(path: .hybrid, decodesOnDevice: false, encodesOnDevice: true, encoder: encoder,
                                    reason: "hybrid: software decode, the video composition drawn by \(drawer) in host memory (\(why)), one upload per frame, \(encoder) on \(name)")
        }
        if policy == .require {
            throw MediaError(.hardwareFailed, "--hw require: \(name) can take no stage of this video composition (\(why))")
        }
        return .software("software: the video composition is drawn by \(drawer) in host memory (\(why))")
    }

    /// The source and target facts the hardware decision needs for `track` encoded with `settings`.
    static func hardwareJob(_ track: AssetTrack, settings: VideoSettings) -> HardwareJob {
        let source = track.formatDescription.video
        return HardwareJob(
            sourceCodec: track.formatDescription.codec, sourceBitDepth: source?.bitDepth ?? 8,
            sourceChroma: HardwareJob.chroma(ofPixelFormat: source?.pixelFormat),
            sourceSize: Size(width: source?.width ?? settings.width, height: source?.height ?? settings.height),
            targetCodec: settings.codec,
            targetBitDepth: settings.pixelFormat == .yuv420p10 || (settings.profile?.contains("10") ?? false) ? 10 : 8,
            targetSize: Size(width: settings.width, height: settings.height))
    }

    /// `track`'s job with the filters its pictures go through on the way: deinterlacing (the
    /// writer makes progressive pictures only), tone mapping to SDR settings, and `burning`.
    static func filteredHardwareJob(_ track: AssetTrack, settings: VideoSettings, burning: SubtitleBurnIn?) -> HardwareJob {
        var job = hardwareJob(track, settings: settings)
        job.deinterlaces = isInterlaced(track)
        job.toneMapsHDR = toneMapping(from: track, to: settings) != nil
        job.burnsSubtitles = burning != nil
        job.subtitlesAreBitmaps = burning?.isBitmap == true
        return job
    }

    /// True when `track` says it is interlaced: its field order names two fields per frame.
    /// (The reader's filters also deinterlace pictures flagged interlaced in a stream that says
    /// it is progressive; the plan cannot know of those.)
    static func isInterlaced(_ track: AssetTrack) -> Bool {
        ["tt", "bb", "tb", "bt"].contains(track.formatDescription.video?.fieldOrder ?? "progressive")
    }

    /// What re-encoding `track` with `settings` leaves out that the source carries, said rather
    /// than dropped in silence: a Dolby Vision RPU (the output keeps the base layer) and an
    /// alpha channel (ProRes 4444, VP9 or PNG with transparency) the output format lacks.
    static func lossWarnings(reencoding track: AssetTrack, to settings: VideoSettings) -> [String] {
        var warnings: [String] = []
        let video = track.formatDescription.video
        if let dolbyVision = video?.dolbyVision, dolbyVision.hasRPU {
            warnings.append("track \(track.trackID) (video): its Dolby Vision metadata (profile \(dolbyVision.profile), RPU) is dropped; the output keeps the base layer's picture")
        }
        let output = PixelFormatID(settings.pixelFormat ?? .yuv420p)
        if let source = video?.pixelFormat.flatMap(PixelFormatID.init(name:)), source.hasAlpha, output?.hasAlpha != true {
            warnings.append("track \(track.trackID) (video): its alpha channel (\(source)) is dropped; \(output.map { "\($0)" } ?? "the output format") has none")
        }
        return warnings
    }

    /// The subtitle track `selection` names first, to draw into the picture, checked: a track of
    /// this file that this libavfilter (text, through libass) or libavcodec (bitmaps) can draw,
    /// exported by an encoding preset.
    private func burnIn(_ selection: TrackSelection, tracks: [AssetTrack], isComposition: Bool,
                        settings s: Settings) throws(MediaError) -> (track: AssetTrack, burnIn: SubtitleBurnIn) {
        let path = asset.displayPath
        if preset.isPassthrough {
            throw MediaError(.invalidArgument, "passthrough copies the pictures as they are and cannot burn subtitles into them; use an encoding preset", path: path)
        }
        if isComposition { throw MediaError(.unsupported, "subtitles are burnt into one file's pictures, not a composition's", path: path) }
        if s.videoComposition != nil {
            throw MediaError(.unsupported, "subtitles are burnt into decoded pictures, not into a video composition's; burn them in a first export", path: path)
        }
        let subtitles = tracks.filter { $0.mediaType == .subtitle }
        guard let track = selection.select(subtitles).first else {
            let available = subtitles.map { "\($0.trackID)\($0.languageCode.map { " (\($0))" } ?? "")" }
            throw MediaError(.invalidArgument, "no subtitle track matches \(selection.description) to burn in; the file has \(available.isEmpty ? "none" : available.joined(separator: ", "))", path: path)
        }
        let name = track.formatDescription.codec
        guard let codec = CodecID(name: name) else {
            throw MediaError(.unsupported, "subtitle track \(track.trackID) is \(name), which this libavcodec does not know", path: path)
        }
        if codec.isTextSubtitle {
            guard FilterGraph.hasFilter("subtitles") else {
                throw MediaError(.unsupported, "this libavfilter has no subtitles filter (libass) to burn subtitles in with", path: path)
            }
            return (track, SubtitleBurnIn(path: asset.url.path, streamIndex: track.streamIndex))
        }
        guard BitmapSubtitleDecoder.canDecode(codec) else {
            throw MediaError(.unsupported, "subtitle track \(track.trackID) is \(name), which this libavcodec cannot decode to draw", path: path)
        }
        return (track, SubtitleBurnIn(path: asset.url.path, streamIndex: track.streamIndex, isBitmap: true))
    }

    /// Plans the subtitle tracks `selection` keeps: copied where a `fileType` file holds their
    /// format, converted where it holds another text format (as ffmpeg converts SubRip to
    /// mov_text for MP4), and left out with a warning where it holds neither (bitmaps in MP4).
    static func planSubtitles(_ tracks: [AssetTrack], selection: TrackSelection, fileType: FileType, into plan: inout ExportPlan) {
        let kept = selection.select(tracks)
        for track in tracks {
            let name = track.formatDescription.codec
            guard kept.contains(where: { $0 === track }) else {
                plan.droppedTracks.append(.init(trackID: track.trackID, mediaType: "subtitle", reason: "not selected (subtitles: \(selection.description))"))
                continue
            }
            if track.sampleCount == 0 {
                plan.droppedTracks.append(.init(trackID: track.trackID, mediaType: "subtitle", reason: "the track has no samples"))
                continue
            }
            guard let codec = CodecID(name: name) else {
                plan.droppedTracks.append(.init(trackID: track.trackID, mediaType: "subtitle", reason: "codec \(name) is unknown"))
                continue
            }
            if WriterCodecs.incompatibility(of: codec, in: fileType, mediaType: .subtitle) == nil {
                plan.subtitleTracks.append((track, nil))
            } else if codec.isTextSubtitle, let target = textSubtitleCodec(for: fileType), SubtitleConverter.canConvert(codec, to: target.rawValue) {
                plan.subtitleTracks.append((track, SubtitleSettings(codec: target)))
            } else {
                let reason = codec.isTextSubtitle && textSubtitleCodec(for: fileType) != nil
                    ? "\(name) subtitles cannot be converted to \(textSubtitleCodec(for: fileType)!) here (this libavcodec has no \(name) decoder)"
                    : "a \(fileType) file cannot hold \(codec.isTextSubtitle ? "" : "bitmap ")\(name) subtitles"
                plan.droppedTracks.append(.init(trackID: track.trackID, mediaType: "subtitle", reason: reason))
                plan.warnings.append("track \(track.trackID) (subtitle) is left out: \(reason)\(fileType == .mkv ? "" : "; an mkv file keeps it")")
            }
        }
    }

    /// The text subtitle format a `fileType` file holds, nil when it holds none.
    static func textSubtitleCodec(for fileType: FileType) -> SubtitleCodec? {
        switch fileType {
        case .mp4, .mov, .m4v: .movText
        case .mkv: .subRip
        case .webm: .webVTT
        default: nil
        }
    }

    /// Why passthrough cannot copy `track` into a `fileType` file, nil when it can.
    private func passthroughRefusal(_ track: AssetTrack, fileType: FileType) -> String? {
        if track.sampleCount == 0 { return "the track has no samples" }
        if track.mediaType == .data { return "data tracks (\(track.formatDescription.codecTag ?? "unknown")) are not copied" }
        if track.isAttachedPicture { return "cover pictures are not copied" }
        guard let codec = CodecID(name: track.formatDescription.codec) else { return "codec \(track.formatDescription.codec) is unknown" }
        return WriterCodecs.incompatibility(of: codec, in: fileType, mediaType: track.mediaType)
    }

    /// The first two audio tracks as left and right, when the file records sound the way cameras
    /// and broadcast recorders do: two or more enabled mono PCM tracks at one sample rate, none in
    /// another language than the first. Nil otherwise (one track is exported, or the mix's).
    static func monoTrackPair(_ tracks: [AssetTrack]) -> [AssetTrack]? {
        let audio = tracks.filter { $0.mediaType == .audio && $0.sampleCount > 0 && $0.isEnabled }
        guard audio.count >= 2, let rate = audio[0].formatDescription.audio?.sampleRate,
              audio.allSatisfy({ $0.formatDescription.audio?.channelCount == 1 && $0.formatDescription.audio?.sampleRate == rate
                  && $0.formatDescription.codec.hasPrefix("pcm_") && ($0.languageCode == nil || $0.languageCode == audio[0].languageCode) })
        else { return nil }
        return Array(audio.prefix(2))
    }

    /// The audio tracks to export: those the mix names (all audio if it names none), else the
    /// default one; a composition's enabled tracks are all mixed, as AVFoundation mixes them.
    static func audioTracks(_ tracks: [AssetTrack], mix: AudioMix?, mixesAllByDefault: Bool = false) -> [AssetTrack] {
        let audio = tracks.filter { $0.mediaType == .audio && $0.sampleCount > 0 }
        if mix == nil && mixesAllByDefault { return audio.filter(\.isEnabled) }
        guard let mix else { return primaryAudioTrack(tracks).map { [$0] } ?? [] }
        let named = audio.filter { track in mix.inputParameters.contains { $0.trackID == track.trackID } }
        return named.isEmpty ? audio : named
    }
}

/// One audio track of an export's output: the source tracks it is made of (one; or several,
/// mixed or placed side by side as channels) and how it is encoded.
struct AudioOutputPlan: Sendable {
    var tracks: [AssetTrack]
    var settings: AudioSettings
    /// `tracks` are mono tracks placed side by side as the channels of one track, not mixed.
    var mergesMonoTracks = false
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
    public var device: VADevice?
    public var droppedTracks: [ExportResult.DroppedTrack] = []
    public var warnings: [String] = []
    /// Tracks copied as stored (passthrough).
    var passthroughTracks: [AssetTrack] = []
    /// The text subtitles drawn into the video's pictures.
    var burnedSubtitles: SubtitleBurnIn?
    /// Subtitle tracks kept, each with the text format it is converted to (nil: copied as stored).
    var subtitleTracks: [(track: AssetTrack, settings: SubtitleSettings?)] = []
    var videoTrack: AssetTrack?
    /// The output's audio tracks, in order.
    var audioOutputs: [AudioOutputPlan] = []

    init(frameRatePolicy: FrameRatePolicy) {
        self.frameRatePolicy = frameRatePolicy
    }
}

import Dispatch
import Foundation
import VAFoundation

/// One input's export in a batch, with every choice the command line made.
struct BatchJob: Sendable {
    var input: String
    var output: String
    var preset: ExportPreset
    var fileType: FileType
    var overwrite: Bool
    var frameRate: FrameRatePolicy = .automatic
    var timeRange: MediaTimeRange?
    /// A `--time-range` that counts video frames (`+90f`): resolved into `timeRange` with the
    /// input's frame rate when the job runs.
    var frameCountedRange: TimeRangeArgument?
    var size: Size?
    var videoCodec: VideoCodec?
    var audioCodec: AudioCodec?
    var videoBitRate: Int?
    /// `--quality`, 0–100.
    var quality: Int?
    var speed: EncoderSpeed?
    var audioBitRate: Int?
    /// `--audio` and `--subtitles`: the tracks kept.
    var audioSelection: TrackSelection?
    var subtitleSelection = TrackSelection.all
    /// `--burn-subtitles`: the subtitle track drawn into the picture.
    var subtitlesBurnedIn: TrackSelection?
    /// `--loudness`: the loudness each audio track is normalised to.
    var loudness: LoudnessTarget?
    var hardwarePolicy: HardwarePolicy = .auto
    /// Render node or X11 display for the hardware path; nil takes the first render node.
    var hardwareDevice: String?
    /// Set when the plan itself is invalid for this input (e.g. a manifest names an unknown preset).
    var planError: String?
    /// The directory every output must stay inside (symbolic links included).
    var outputDirectory: String?
    /// What earlier runs completed in the output directory, to resume from.
    var journal: ResumeJournal?
    /// `--watermark`: an image drawn over the video (through a video composition).
    var watermark: Watermark?
    /// `--no-overwrite`: an output made earlier with other settings is skipped, not redone.
    var keepsStaleOutputs = false
    /// The shard of the batch this job belongs to, recorded in its report; nil when unsharded.
    var shard: ShardAssignment?

    func makeSession(asset: Asset? = nil) -> ExportSession {
        let session = ExportSession(asset: asset ?? Asset(url: URL(fileURLWithPath: input)), preset: preset)
        session.frameRatePolicy = frameRate
        if let timeRange { session.timeRange = timeRange }
        session.outputSize = size
        session.videoCodec = videoCodec
        session.audioCodec = audioCodec
        session.videoBitRate = videoBitRate
        session.videoQuality = quality.map { Double($0) / 100 }
        session.encoderSpeed = speed
        session.audioBitRate = audioBitRate
        session.audioSelection = audioSelection
        session.subtitleSelection = subtitleSelection
        session.subtitlesBurnedIn = subtitlesBurnedIn
        session.loudnessTarget = loudness
        session.overwritesExistingFile = overwrite
        session.hardwarePolicy = hardwarePolicy
        session.hardwareDeviceName = hardwareDevice
        return session
    }

    var baseReport: JobReport {
        var report = JobReport(input: input, output: output, status: .failed, preset: preset.name,
                               inputBytes: Asset.fileSize(atPath: input))
        report.shard = shard
        return report
    }

    /// Why this job writes nothing, when its output exists: done before with the same settings,
    /// kept by `--no-overwrite`, or not vaf's to replace. Nil when it runs (a stale output of
    /// vaf's own is replaced).
    func resumeSkip() -> String? {
        guard !overwrite, FileManager.default.fileExists(atPath: output) else { return nil }
        switch journal?.decision(forExisting: output, plan: planFingerprint) ?? .unknown {
        case .done: return "done: made earlier from this input with the same settings"
        case .stale where keepsStaleOutputs: return "skipped (different settings): made earlier with other settings, and --no-overwrite keeps it"
        case .stale: return nil
        case .unknown: return "the output exists (use --overwrite to replace it)"
        }
    }

    /// Why writing `output` would leave the output directory (a symbolic link inside it
    /// pointing out), nil when it stays inside.
    func escapeThroughLink() -> String? { Self.escapeThroughLink(of: output, from: outputDirectory) }

    /// Why writing `output` (a file, or `vaf package`'s folder) would leave `outputDirectory`
    /// through a symbolic link inside it, nil when it stays inside: each existing folder between
    /// the directory and the output is resolved (folders still to be made cannot be links).
    static func escapeThroughLink(of output: String, from outputDirectory: String?) -> String? {
        guard let outputDirectory else { return nil }
        let base = URL(fileURLWithPath: outputDirectory).standardizedFileURL
        let root = base.resolvingSymlinksInPath().path
        let parent = URL(fileURLWithPath: output).deletingLastPathComponent().standardizedFileURL
        guard parent.path.hasPrefix(base.path) else { return nil }
        var folder = base
        for component in parent.path.dropFirst(base.path.count).split(separator: "/") {
            folder.appendPathComponent(String(component))
            guard FileManager.default.fileExists(atPath: folder.path) else { break }
            let real = folder.resolvingSymlinksInPath().path
            if real != root && !real.hasPrefix(root.hasSuffix("/") ? root : root + "/") {
                return "\(JobReport.oneLine(output)): refused: \(JobReport.oneLine(folder.path)) is a symbolic link out of the output directory (to \(JobReport.oneLine(real)))"
            }
        }
        return nil
    }

    /// The report of a job that does not run: its plan is invalid, its output would leave the
    /// output directory, or resuming skips it. Nil when it runs.
    func reportWithoutRunning() -> JobReport? {
        var report = baseReport
        if let planError { return report.failing(planError) }
        if let escape = escapeThroughLink() { return report.failing(escape) }
        guard let reason = resumeSkip() else { return nil }
        report.status = .skipped
        report.error = reason
        return report
    }

    /// The plan for this input without exporting: the settings the assistant chose.
    func dryRun() async -> JobReport {
        if let done = reportWithoutRunning() { return done }
        var report = baseReport
        do {
            let asset = Asset(url: URL(fileURLWithPath: input))
            let session = try await resolvingFrameCounts(asset).makeSession(asset: asset)
            try await watermark?.apply(to: session, asset: asset)
            let plan = try await session.plan(fileType: fileType)
            report.status = .planned
            report.fill(plan)
        } catch {
            report = report.failing(error)
        }
        return report
    }

    /// Exports, reporting progress; never throws: failures become the report's status.
    func run(display: ProgressDisplay) async -> JobReport {
        if let done = reportWithoutRunning() { return done }
        let report = baseReport
        // Past the checks an existing output is a stale one of vaf's own: it is made again.
        let replacesStale = !overwrite && FileManager.default.fileExists(atPath: output)
        do {
            try FileManager.default.createDirectory(at: URL(fileURLWithPath: output).deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            return report.failing("\(output): cannot create its directory: \(error.localizedDescription)", code: JobReport.directoryFailureCode(error))
        }
        let asset = Asset(url: URL(fileURLWithPath: input))
        let job: BatchJob
        do { job = try await resolvingFrameCounts(asset) } catch {
            return report.failing(error)
        }
        let session = job.makeSession(asset: asset)
        if replacesStale { session.overwritesExistingFile = true }
        do { try await watermark?.apply(to: session, asset: asset) } catch {
            return report.failing(error)
        }
        let (seconds, fps) = await job.progressScale(of: asset)
        journal?.recordStart(output: output, plan: planFingerprint)
        var finished = await export(session, seconds: seconds, frameRate: fps, display: display, report: report)
        if finished.status == .completed {
            if replacesStale { finished.warnings.append("made again: the output was made earlier with other settings") }
            journal?.record(output: output, plan: planFingerprint)
        }
        return finished
    }

    /// The report of a job whose output another run (a retried pod, a second shard on the same
    /// folder) made meanwhile from this input with the same settings, as the journal says:
    /// skipped, not failed. Nil when that is not why `error` happened.
    func madeMeanwhile(_ error: any Error) -> JobReport? {
        guard (error as? MediaError)?.code == .outputExists, let journal, journal.madeByAnotherRun(output, plan: planFingerprint) else { return nil }
        var report = baseReport
        report.status = .skipped
        report.error = "done: made meanwhile by another run from this input with the same settings"
        return report
    }

    /// What a progress bar needs to show fps and speed: the media seconds exported and the frame rate.
    func progressScale(of asset: Asset) async -> (seconds: Double, frameRate: Double) {
        let tracks = (try? await asset.load(.tracks)) ?? []
        let assetSeconds = (try? await asset.load(.duration).seconds) ?? 0
        let range = timeRange.map { min($0.end.seconds, assetSeconds) - $0.start.seconds } ?? assetSeconds
        let sourceRate = Double(ExportSession.primaryVideoTrack(tracks)?.nominalFrameRate ?? 0)
        return (max(range, 0), frameRate.outputFrameRate(sourceFrameRate: sourceRate) ?? sourceRate)
    }

    /// Runs one input's jobs, each reported: a single output as a plain export, several as one
    /// export from one decode of the input (`ExportSession.export(to: [Output])`). Jobs that do
    /// not run (skipped as done, refused) are reported as such. Never throws.
    static func run(_ unit: [BatchJob], display: ProgressDisplay) async -> [JobReport] {
        var reports = unit.map { $0.reportWithoutRunning() }
        let running = unit.indices.filter { reports[$0] == nil }
        if running.count == 1 {
            reports[running[0]] = await unit[running[0]].run(display: display)
        } else if running.count > 1 {
            for (i, report) in zip(running, await runTogether(running.map { unit[$0] }, display: display)) { reports[i] = report }
        }
        return reports.map { $0! }
    }

    /// Several outputs of one input (the jobs differ only in preset, output and container)
    /// made from one decode, with one progress bar. A failure of one fails them all, and none
    /// is left: the outputs are one export.
    private static func runTogether(_ jobs: [BatchJob], display: ProgressDisplay) async -> [JobReport] {
        var reports = jobs.map(\.baseReport)
        func failingAll(_ error: any Error) -> [JobReport] { reports.map { $0.failing(error) } }
        // Past the checks an existing output is a stale one of vaf's own: it is made again.
        let replacesStale = jobs.map { !$0.overwrite && FileManager.default.fileExists(atPath: $0.output) }
        for job in jobs {
            do {
                try FileManager.default.createDirectory(at: URL(fileURLWithPath: job.output).deletingLastPathComponent(), withIntermediateDirectories: true)
            } catch {
                return reports.map { $0.failing("\(job.output): cannot create its directory: \(error.localizedDescription)", code: JobReport.directoryFailureCode(error)) }
            }
        }
        let asset = Asset(url: URL(fileURLWithPath: jobs[0].input))
        let first: BatchJob
        do { first = try await jobs[0].resolvingFrameCounts(asset) } catch { return failingAll(error) }
        let session = first.makeSession(asset: asset)
        if replacesStale.contains(true) { session.overwritesExistingFile = true }
        do { try await first.watermark?.apply(to: session, asset: asset) } catch { return failingAll(error) }
        let (seconds, fps) = await first.progressScale(of: asset)
        let outputs = jobs.map { ExportSession.Output(url: URL(fileURLWithPath: $0.output), fileType: $0.fileType, preset: $0.preset) }
        for job in jobs { job.journal?.recordStart(output: job.output, plan: job.planFingerprint) }
        let name = "\(URL(fileURLWithPath: first.input).lastPathComponent) (\(jobs.count) outputs)"
        do {
            let results = try await withProgress(of: session, name: name, seconds: seconds, frameRate: fps, display: display) {
                try await session.export(to: outputs)
            }
            for (i, result) in results.enumerated() {
                switch result {
                case .success(let written):
                    reports[i].status = .completed
                    reports[i].fill(written)
                    if replacesStale[i] { reports[i].warnings.append("made again: the output was made earlier with other settings") }
                    jobs[i].journal?.record(output: jobs[i].output, plan: jobs[i].planFingerprint)
                case .failure(let error):
                    reports[i] = jobs[i].madeMeanwhile(error) ?? reports[i].failing(error)
                }
            }
        } catch {
            reports = zip(jobs, reports).map { job, report in job.madeMeanwhile(error) ?? report.failing(error) }
            if (error as? MediaError)?.code == .cancelled || Task.isCancelled {
                for i in reports.indices { reports[i].status = .cancelled }
            }
        }
        return reports
    }

    /// Runs `body` (an export of `session`) with a progress bar named `name` of `seconds`
    /// media seconds at `frameRate`, ended with the outcome.
    static func withProgress<T>(of session: ExportSession, name: String, seconds: Double, frameRate fps: Double, display: ProgressDisplay,
                                _ body: () async throws -> T) async throws -> T {
        let id = await display.begin(name: name, seconds: seconds, frameRate: fps)
        let watcher = Task {
            for await state in session.states(updateInterval: .milliseconds(250)) {
                if case .exporting(let progress) = state { await display.update(id, progress: progress) }
            }
        }
        defer { watcher.cancel() }
        do {
            let value = try await body()
            await display.end(id, status: JobReport.Status.completed.rawValue)
            return value
        } catch {
            let cancelled = (error as? MediaError)?.code == .cancelled || Task.isCancelled
            await display.end(id, status: (cancelled ? JobReport.Status.cancelled : .failed).rawValue)
            throw error
        }
    }

    /// This job with a `--time-range` in frames resolved in time with the frame duration of
    /// `asset`'s video track; an error naming the input when it has no video with a frame rate.
    func resolvingFrameCounts(_ asset: Asset) async throws -> BatchJob {
        guard let frameCountedRange else { return self }
        let track = ExportSession.primaryVideoTrack((try? await asset.load(.tracks)) ?? [])
        let frameDuration = track.flatMap { TimeRangeArgument.frameDuration(nominalFrameRate: $0.nominalFrameRate, minFrameDuration: $0.minFrameDuration) }
        guard let frameDuration else {
            throw TimeRangeError(description: "\(input): --time-range \(frameCountedRange) counts video frames, but the input has no video track with a frame rate")
        }
        guard let range = frameCountedRange.resolved(frameDuration: frameDuration) else {
            throw TimeRangeError(description: "\(input): --time-range \(frameCountedRange) ends before it starts at \(frameDuration.seconds.formatted()) s a frame")
        }
        var job = self
        job.timeRange = range
        return job
    }

    /// Runs `session` into `output` with a progress bar of `seconds` media seconds at
    /// `frameRate`, and returns `report` completed or failed (shared with `vaf render`).
    func export(_ session: ExportSession, seconds: Double, frameRate fps: Double, display: ProgressDisplay, report: JobReport) async -> JobReport {
        var report = report
        do {
            let result = try await Self.withProgress(of: session, name: URL(fileURLWithPath: input).lastPathComponent, seconds: seconds,
                                                     frameRate: fps, display: display) {
                try await session.export(to: URL(fileURLWithPath: output), as: fileType)
            }
            report.status = .completed
            report.fill(result)
        } catch {
            if let skipped = madeMeanwhile(error) { return skipped }
            report = report.failing(error)
            if (error as? MediaError)?.code == .cancelled || Task.isCancelled { report.status = .cancelled }
        }
        return report
    }
}

/// A frame-counted `--time-range` that does not fit an input.
struct TimeRangeError: Error, CustomStringConvertible {
    var description: String
}

/// What happened to one input: one line of `vaf transcode --json`, whose schema is
/// `Schemas/vaf-transcode.schema.json`.
struct JobReport: Encodable, Sendable {
    /// The version of the line's layout: raised when a key changes meaning or goes away.
    static let schemaVersion = 1

    enum Status: String, Encodable, Sendable { case completed, failed, skipped, cancelled, planned }

    var input: String
    var output: String
    var status: Status
    var error: String?
    /// The failure's kind (`MediaError.Code`), which says whether retrying may help; nil unless failed.
    var errorCode: String?
    var preset: String
    var videoCodec: String?
    var width: Int?
    var height: Int?
    /// Output frame rate: the constant rate, or nil when the source timing was kept.
    var frameRate: Double?
    var frameRatePolicy: String?
    var frames: Int?
    /// Media seconds exported.
    var seconds: Double?
    /// Media seconds per wall-clock second.
    var speed: Double?
    var elapsedSeconds: Double?
    var inputBytes: Int64?
    var outputBytes: Int64?
    var videoBitRate: Int?
    /// The peak video rate (the cap at what the source needs), null when uncapped.
    var videoMaxBitRate: Int?
    /// `--quality` (0–100) for a constant-quality encode, null for a bit-rate one.
    var quality: Int?
    var encoder: String?
    var path: String?
    var pathReason: String?
    var hostTransfers: Int?
    var hostTransferBytes: Int?
    var hardwareDevice: String?
    var fallbackReason: String?
    var droppedTracks: [ExportResult.DroppedTrack] = []
    var warnings: [String] = []
    /// The shard of the batch this input was run in and what chose it; nil when unsharded.
    var shard: ShardAssignment?
    /// A streaming package's renditions (`vaf package`), as its playlists declare them.
    var renditions: [PackageRendition]?
    /// `--loudness`: each audio track's loudness measured, the gain applied and the result.
    var loudness: [LoudnessNormalization]?

    init(input: String, output: String, status: Status, preset: String, inputBytes: Int64?) {
        self.input = input
        self.output = output
        self.status = status
        self.preset = preset
        self.inputBytes = inputBytes
    }

    /// A constant-quality target as `--quality` spells it (0–100); nil for a bit-rate encode.
    private func qualityPercent(_ settings: VideoSettings?) -> Int? {
        guard let settings, settings.averageBitRate == nil, let q = settings.quality else { return nil }
        return Int((q * 100).rounded())
    }

    /// This report failed with `message`, of kind `code` (nil: a cause in the input or the
    /// command's settings, where retrying cannot help).
    /// This report for a job a stopping signal kept from starting.
    var interruptedBeforeItStarted: JobReport {
        var report = self
        report.status = .cancelled
        report.error = "interrupted before it started"
        return report
    }

    func failing(_ message: String, code: MediaError.Code? = nil) -> JobReport {
        var copy = self
        copy.status = .failed
        copy.error = message
        copy.errorCode = code?.rawValue
        return copy
    }

    /// This report failed with `error`: its one-line description, and its kind when it is a `MediaError`.
    func failing(_ error: any Error) -> JobReport {
        let mediaError = error as? MediaError
        return failing(mediaError?.description ?? "\(error)", code: mediaError?.code)
    }

    /// Failures that another try may not meet (the sysexits `EX_TEMPFAIL` kind): the device
    /// failed or is missing here, or the disk or network failed or filled up. Every other
    /// failure lies in the input or the settings, and retrying cannot help (`EX_DATAERR`).
    static let temporaryFailures: Set<String> = [MediaError.Code.hardwareFailed, .ioError, .writeFailed].map(\.rawValue).reduce(into: []) { $0.insert($1) }

    /// What a command exits with when `reports` hold failures, for a scheduler to act on: 75
    /// (`EX_TEMPFAIL`) when any failure is temporary, else 65 (`EX_DATAERR`); nil without failures.
    static func failureExitCode(_ reports: [JobReport]) -> Int32? {
        let failures = reports.filter { $0.status == .failed }
        guard !failures.isEmpty else { return nil }
        return failures.contains { $0.errorCode.map(temporaryFailures.contains) == true } ? exitTemporaryFailure : exitBadInput
    }

    /// The kind of a failure to create an output's folder: no permission or a read-only file
    /// system is the setup's (retrying cannot help); anything else (a full disk, an I/O error) may pass.
    static func directoryFailureCode(_ error: any Error) -> MediaError.Code {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        let posix = underlying?.domain == NSPOSIXErrorDomain ? Int32(underlying!.code) : nil
        let refused = posix.map { [EACCES, EPERM, EROFS].contains($0) } ?? ((error as NSError).code == CocoaError.fileWriteNoPermission.rawValue)
        return refused ? .permissionDenied : .ioError
    }

    /// A report of nothing in particular, to judge a failure that belongs to no one input.
    static let baseline = JobReport(input: "", output: "", status: .failed, preset: "", inputBytes: nil)

    /// sysexits' `EX_DATAERR`: some input is bad; retrying cannot help.
    static let exitBadInput: Int32 = 65
    /// sysexits' `EX_TEMPFAIL`: a temporary failure; retrying, on this node or another, may help.
    static let exitTemporaryFailure: Int32 = 75

    mutating func fill(_ plan: ExportPlan) {
        videoCodec = plan.videoSettings?.codec.rawValue
        width = plan.videoSettings?.width
        height = plan.videoSettings?.height
        videoBitRate = plan.videoSettings?.averageBitRate
        videoMaxBitRate = plan.videoSettings?.maxBitRate
        quality = qualityPercent(plan.videoSettings)
        frameRate = plan.frameRate
        frameRatePolicy = plan.frameRatePolicy.description
        encoder = plan.videoEncoder.map { "\($0.encoder) (\($0.path.rawValue))" }
        path = plan.path.rawValue
        pathReason = plan.pathReason
        hardwareDevice = plan.device.map { "\($0.path) (\($0.driverName ?? $0.vendor))" }
        droppedTracks = plan.droppedTracks
        warnings = plan.warnings
    }

    mutating func fill(_ result: ExportResult) {
        videoCodec = result.videoSettings?.codec.rawValue
        width = result.videoSettings?.width
        height = result.videoSettings?.height
        videoBitRate = result.videoSettings?.averageBitRate
        videoMaxBitRate = result.videoSettings?.maxBitRate
        quality = qualityPercent(result.videoSettings)
        frameRate = result.frameRate
        frames = result.videoFrames
        seconds = result.durationSeconds
        speed = result.speed
        elapsedSeconds = result.elapsedSeconds
        outputBytes = result.outputBytes
        encoder = result.videoEncoder.map { "\($0.encoder) (\($0.path.rawValue))" }
        path = result.path.rawValue
        pathReason = result.pathReason
        hostTransfers = result.hostTransfers
        hostTransferBytes = result.hostTransferBytes
        hardwareDevice = result.hardwareDevice
        fallbackReason = result.fallbackReason
        droppedTracks = result.droppedTracks
        warnings = result.warnings
        loudness = result.loudness.isEmpty ? nil : result.loudness
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion, input, output, status, error, errorCode, preset, videoCodec, width, height, frameRate, frameRatePolicy, frames, seconds, speed
        case elapsedSeconds, inputBytes, outputBytes, videoBitRate, videoMaxBitRate, quality, encoder, path, pathReason, hostTransfers, hostTransferBytes
        case hardwareDevice, fallbackReason, droppedTracks, warnings, shard, renditions, loudness
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Self.schemaVersion, forKey: .schemaVersion)
        try c.encode(input, forKey: .input)
        try c.encode(output, forKey: .output)
        try c.encode(status, forKey: .status)
        try c.encode(error, forKey: .error)
        try c.encode(errorCode, forKey: .errorCode)
        try c.encode(preset, forKey: .preset)
        try c.encode(videoCodec, forKey: .videoCodec)
        try c.encode(width, forKey: .width)
        try c.encode(height, forKey: .height)
        try c.encode(frameRate, forKey: .frameRate)
        try c.encode(frameRatePolicy, forKey: .frameRatePolicy)
        try c.encode(frames, forKey: .frames)
        try c.encode(seconds, forKey: .seconds)
        try c.encode(speed, forKey: .speed)
        try c.encode(elapsedSeconds, forKey: .elapsedSeconds)
        try c.encode(inputBytes, forKey: .inputBytes)
        try c.encode(outputBytes, forKey: .outputBytes)
        try c.encode(videoBitRate, forKey: .videoBitRate)
        try c.encode(videoMaxBitRate, forKey: .videoMaxBitRate)
        try c.encode(quality, forKey: .quality)
        try c.encode(self.encoder, forKey: .encoder)
        try c.encode(path, forKey: .path)
        try c.encode(pathReason, forKey: .pathReason)
        try c.encode(hostTransfers, forKey: .hostTransfers)
        try c.encode(hostTransferBytes, forKey: .hostTransferBytes)
        try c.encode(hardwareDevice, forKey: .hardwareDevice)
        try c.encode(fallbackReason, forKey: .fallbackReason)
        try c.encode(droppedTracks, forKey: .droppedTracks)
        try c.encode(warnings, forKey: .warnings)
        try c.encode(shard, forKey: .shard)
        try c.encodeIfPresent(renditions, forKey: .renditions)
        try c.encodeIfPresent(loudness, forKey: .loudness)
    }

    /// `text` with newlines, tabs and other control characters escaped, so it stays one line.
    static func oneLine(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.properties.generalCategory == .control: result += String(format: "\\x%02X", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// The end-of-batch summary fitted to `width` columns (no line reaches the last column):
    /// one row per input, then counts. The numbers keep their columns; the file names are
    /// elided to what is left, and on a narrow terminal each input takes a name line over a
    /// line of numbers. A failure's cause follows its row, wrapped, so it is never cut.
    static func table(_ reports: [JobReport], width: Int) -> String {
        let room = max(width - 1, 20)
        func numbers(_ r: JobReport) -> [String] {
            [r.seconds.map { String(format: "%.2f s", $0) } ?? "-",
             "\(r.inputBytes.map(formatBytes) ?? "-") → \(r.outputBytes.map(formatBytes) ?? "-")",
             r.speed.map { String(format: "%.1fx", $0) } ?? "-",
             r.status.rawValue]
        }
        // The number columns are as wide as their widest value or header; names get the rest.
        let headers = ["duration", "size before → after", "speed", "status"]
        let columns = (0..<4).map { i in ([headers[i]] + reports.map { numbers($0)[i] }).map(TerminalText.width).max() ?? 0 }
        func numberCells(_ cells: [String]) -> String {
            "  " + TerminalText.rightAligned(cells[0], columns[0]) + "  " + TerminalText.column(cells[1], columns[1])
                + "  " + TerminalText.rightAligned(cells[2], columns[2]) + "  " + cells[3]
        }
        let nameRoom = room - (columns.reduce(0, +) + 8)
        let longest = reports.flatMap { [$0.input, $0.output].map { TerminalText.width(Self.oneLine(URL(fileURLWithPath: $0).lastPathComponent)) } }.max() ?? 0
        // Input and output names side by side when each gets 20 columns; else the input's alone
        // (the output's follows from it and --name); else a name line over a line of numbers.
        let nameColumns = min(max(longest, 6), (nameRoom - 1) / 2)
        let layout: (input: Int, output: Int)? =
            nameColumns >= 20 ? (nameColumns, nameColumns) : nameRoom >= 12 ? (min(max(longest, 6), nameRoom), 0) : nil
        var lines: [String] = []
        if let layout {
            var header = TerminalText.column("input", layout.input)
            if layout.output > 0 { header += " " + TerminalText.column("output", layout.output) }
            lines.append(header + numberCells(headers))
        }
        for r in reports {
            // One line per input, whatever the names hold: control characters are escaped.
            let input = Self.oneLine(URL(fileURLWithPath: r.input).lastPathComponent)
            let output = Self.oneLine(URL(fileURLWithPath: r.output).lastPathComponent)
            let n = numbers(r)
            if let layout {
                var line = TerminalText.column(input, layout.input)
                if layout.output > 0 { line += " " + TerminalText.column(output, layout.output) }
                lines.append(line + numberCells(n))
            } else {
                lines.append(TerminalText.elided(input + " → " + output, to: room))
                lines += TerminalText.wrapped(n, columns: room, indent: "  ", firstIndent: "  ")
            }
            if let error = r.error, r.status != .completed {
                lines += TerminalText.wrappedWords(Self.oneLine(error), columns: room, indent: "    ")
            }
        }
        let counts = Dictionary(grouping: reports, by: \.status).map { "\($0.value.count) \($0.key.rawValue)" }.sorted()
        let countFields = ["\(reports.count) inputs:" + (counts.first.map { " " + $0 } ?? "")] + counts.dropFirst()
        lines += TerminalText.wrapped(countFields, columns: room, separator: ", ")
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Runs a batch's jobs, `concurrency` at a time. SIGINT (Ctrl-C), SIGTERM (Kubernetes,
/// Slurm, systemd) and SIGHUP (a closed terminal) cancel the running ones: their partial
/// files are removed, jobs not yet started are reported cancelled, and the summary is printed.
struct BatchRunner {
    /// Each input's jobs: one per output, made together from one decode of the input.
    let units: [[BatchJob]]
    let concurrency: Int
    let progress: ProgressDisplay

    /// The signals that stop a batch.
    static let stoppingSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// Every job's report, and the first stopping signal received, if any. `onReport` is given
    /// each report as its job ends (jobs a signal kept from starting, at the end), one at a time.
    func run(onReport: @escaping @Sendable (JobReport) -> Void = { _ in }) async -> (reports: [JobReport], signal: Int32?) {
        let (units, progress) = (self.units, self.progress)
        let batch = Task { () -> [JobReport] in
            await Self.runEach(units, concurrency: concurrency) { unit in
                await BatchJob.run(unit, display: progress)
            } ended: { unitReports in
                for report in unitReports {
                    await progress.record(report.status)
                    onReport(report)
                }
            } unstarted: { unit in
                unit.map { job in
                    let report = job.baseReport.interruptedBeforeItStarted
                    onReport(report)
                    return report
                }
            }.flatMap { $0 }
        }
        let (reports, signal) = await Self.cancellingOnSignals(batch)
        await progress.finish()
        return (reports, signal)
    }

    /// Runs `work` on each item, `concurrency` at a time, starting them in order, and gives
    /// `ended` each result as its item ends, one at a time. Once the calling task is cancelled
    /// (a stopping signal) no item starts: each one left gets `unstarted`'s result instead,
    /// once the running ones have ended. Returns the results in the items' order.
    static func runEach<Item: Sendable, Output: Sendable>(_ items: [Item], concurrency: Int,
                                                          _ work: @escaping @Sendable (Item) async -> Output,
                                                          ended: (Output) async -> Void,
                                                          unstarted: (Item) -> Output) async -> [Output] {
        var results = [Output?](repeating: nil, count: items.count)
        await withTaskGroup(of: (Int, Output).self) { group in
            var next = 0
            func startNext() {
                guard next < items.count else { return }
                let (index, item) = (next, items[next])
                next += 1
                group.addTask { (index, await work(item)) }
            }
            for _ in 0..<min(max(1, concurrency), items.count) { startNext() }
            while let (index, output) = await group.next() {
                results[index] = output
                await ended(output)
                if !Task.isCancelled { startNext() }
            }
        }
        return results.enumerated().map { i, output in output ?? unstarted(items[i]) }
    }

    /// Removes the partial files of `outputs` that writers killed outright (SIGKILL, the OOM
    /// killer, a container stopped) left, saying so on stderr; live writers' are kept, as their locks show.
    static func removeStalePartialFiles(of outputs: [String]) {
        for stale in AssetWriter.removeStalePartialFiles(for: outputs.map { URL(fileURLWithPath: $0) }) {
            FileHandle.standardError.write(Data("vaf: removed \(stale.path), a partial file whose writer is gone\n".utf8))
        }
    }

    /// `task`'s value once it ends, with the first stopping signal received meanwhile, which
    /// cancels it (shared with `vaf render` and `vaf thumbnails`). A reader of stdout that goes
    /// away (`EPIPE`) stops it too, reported as SIGPIPE.
    static func cancellingOnSignals<T: Sendable>(_ task: Task<T, Never>) async -> (T, Int32?) {
        let received = Locked<Int32?>(nil)
        let stop: @Sendable (Int32) -> Void = { number in
            received.withLock { if $0 == nil { $0 = number } }
            task.cancel()
        }
        let sources = stoppingSignals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop(number) }
            source.resume()
            return source
        }
        StandardOutput.whenReaderGoes { stop(SIGPIPE) }
        defer {
            sources.forEach { $0.cancel() }
            StandardOutput.whenReaderGoes(nil)
        }
        let value = await task.value
        return (value, received.withLock { $0 })
    }
}

/// Progress on stderr. On a terminal: a bar per running export and, for a batch, the line
/// "N of M done, K failed, elapsed MM:SS, ETA MM:SS", redrawn in place, every line fitted to
/// the terminal's width so none wraps. Otherwise (a log file, a pipe): plain lines without
/// escape codes, one when an input starts and ends, and at most one per input every 10 s.
actor ProgressDisplay {
    private struct Job {
        var name: String
        /// Media seconds the job exports, and its output frame rate (0 for audio only).
        var seconds: Double
        var frameRate: Double
        var started = ContinuousClock.now
        var progress = 0.0
        var lastPrinted = ContinuousClock.now

        var state: ProgressLayout.JobState {
            ProgressLayout.JobState(name: name, progress: progress, elapsed: (ContinuousClock.now - started).seconds,
                                    mediaSeconds: seconds, frameRate: frameRate)
        }
    }

    /// How often a log gets a progress line per input.
    static let plainInterval: Duration = .seconds(10)

    private let enabled: Bool
    /// Inputs in the batch; the batch line is shown when there is more than one.
    private let total: Int
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private let started = ContinuousClock.now
    private var jobs: [Int: Job] = [:]
    private var nextID = 0
    /// Rows of the frame last drawn, which the next redraw moves up over and erases.
    private var drawnLines = 0
    private var finished = 0
    private var failed = 0

    init(enabled: Bool, total: Int = 1) {
        self.enabled = enabled
        self.total = total
    }

    func begin(name: String, seconds: Double, frameRate: Double) -> Int {
        nextID += 1
        jobs[nextID] = Job(name: name, seconds: seconds, frameRate: frameRate)
        if isTerminal { redraw() } else { writeLines(["\(name): started"]) }
        return nextID
    }

    func update(_ id: Int, progress: Double) {
        jobs[id]?.progress = progress
        if isTerminal {
            redraw()
        } else if let job = jobs[id], ContinuousClock.now - job.lastPrinted >= Self.plainInterval {
            jobs[id]?.lastPrinted = ContinuousClock.now
            writeLines([ProgressLayout.plainLine(job.state, width: TerminalWidth.current())])
        }
    }

    func end(_ id: Int, status: String) {
        guard let job = jobs.removeValue(forKey: id) else { return }
        let line = "\(job.name): \(status) in \(String(format: "%.1f", (ContinuousClock.now - job.started).seconds)) s"
        if isTerminal { redraw(above: [line]) } else { writeLines([line]) }
    }

    /// Counts an input that ended (skipped ones included) in the batch line.
    func record(_ status: JobReport.Status) {
        finished += 1
        if status == .failed { failed += 1 }
        if isTerminal { redraw() } else if total > 1 { writeLines([batchLine(width: TerminalWidth.current())]) }
    }

    /// Erases the bars before the summary is printed.
    func finish() {
        guard enabled, isTerminal else { return }
        FileHandle.standardError.write(Data(replacingFrame(with: []).utf8))
    }

    private func batchLine(width: Int) -> String {
        let elapsed = (ContinuousClock.now - started).seconds
        let remaining = ProgressLayout.batchRemaining(finished: finished, total: total,
                                                      runningProgress: jobs.values.map(\.progress), elapsed: elapsed)
        return ProgressLayout.batchLine(done: finished, total: total, failed: failed, elapsed: elapsed, remaining: remaining, width: width)
    }

    /// Draws the frame (the bars and the batch line) over the previous one, with `permanent`
    /// lines printed above it, in one write.
    private func redraw(above permanent: [String] = []) {
        guard enabled, isTerminal else { return }
        let width = TerminalWidth.current()
        var frame = jobs.keys.sorted().compactMap { jobs[$0].map { ProgressLayout.barLine($0.state, width: width) } }
        if total > 1 { frame.append(batchLine(width: width)) }
        let fitted = permanent.map { TerminalText.truncated($0, to: max(width - 1, 1)) }
        FileHandle.standardError.write(Data(replacingFrame(with: fitted + frame).utf8))
        drawnLines = frame.count
    }

    /// The text that overwrites the frame last drawn with `lines`, row by row: up to its first
    /// row, each line erased (ESC[2K) and written, rows left over erased and the cursor brought
    /// back under the new lines. Every line drawn is shorter than the width, so it took exactly
    /// one row. (Erasing line by line, not to the end of the screen, keeps terminals such as
    /// tmux from pushing the screen into their history when the frame starts at the top.)
    private func replacingFrame(with lines: [String]) -> String {
        var text = "\r" + (drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : "")
        for line in lines { text += "\u{1B}[2K" + line + "\n" }
        let leftOver = drawnLines - lines.count
        if leftOver > 0 { text += String(repeating: "\u{1B}[2K\n", count: leftOver) + "\u{1B}[\(leftOver)A" }
        drawnLines = 0
        return text
    }

    /// Writes `lines` to a log (not a terminal), each fitted to the width.
    private func writeLines(_ lines: [String]) {
        guard enabled else { return }
        let width = TerminalWidth.current()
        FileHandle.standardError.write(Data(lines.map { TerminalText.truncated($0, to: max(width - 1, 1)) + "\n" }.joined().utf8))
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

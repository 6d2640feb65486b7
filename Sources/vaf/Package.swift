import ArgumentParser
import Foundation
import VAFoundation

/// One rendition of a package in `vaf package`'s JSON line: what its playlists declare.
struct PackageRendition: Encodable, Sendable {
    var folder: String
    var mediaType: String
    var codecs: String
    var width: Int?
    var height: Int?
    var frameRate: Double?
    var language: String?
    /// Peak and average bits per second, measured from the segments written.
    var bandwidth: Int
    var averageBandwidth: Int
    var segments: Int
    var samples: Int
    var seconds: Double

    /// A rendition as planned, before anything is measured: its folder, codec, box, language and target rate.
    init(planned p: StreamingPackager.PlannedRendition) {
        folder = p.folder
        mediaType = p.mediaType.rawValue
        codecs = p.codec
        width = p.size?.pixelWidth
        height = p.size?.pixelHeight
        language = p.language
        bandwidth = p.bitRate
        averageBandwidth = p.bitRate
        segments = 0
        samples = 0
        seconds = 0
    }

    init(_ r: StreamingRenditionReport) {
        folder = r.folder
        mediaType = r.mediaType.rawValue
        codecs = r.codec
        width = r.width
        height = r.height
        frameRate = r.mediaType == .video ? (r.frameRate * 1000).rounded() / 1000 : nil
        language = r.language
        bandwidth = r.peakBitRate
        averageBandwidth = r.averageBitRate
        segments = r.segments.count
        samples = r.sampleCount
        seconds = r.duration.seconds
    }
}

extension Vaf {
    /// `vaf package`: HLS and DASH packages, one per input, each from one decode of its input.
    struct Package: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Package files as HLS and DASH streams: a ladder of renditions in CMAF segments.",
            discussion: """
                Each input becomes the folder --output-dir/NAME (mirroring a directory input's tree) \
                holding master.m3u8 (HLS), manifest.mpd (DASH) and a folder per rendition (1080p/, \
                720p/…, audio/) with init.mp4, segment-NNNNN.m4s, index.m3u8 and, for video, the \
                I-frame playlist iframes.m3u8. HLS and DASH list the same segment files. The input \
                is decoded once: every video rendition is scaled and encoded from that one decode. \
                Every video rendition has a keyframe every 2 s (or at every segment boundary when \
                the segment duration is not a multiple of 2 s) at the same times, and segments cut \
                on them; each keyframe opens a fragment, which the I-frame playlist lists as a byte \
                range. Each audio language of the source becomes one AAC-LC stereo rendition, and \
                each text subtitle track (SubRip, ASS, mov_text, WebVTT) a WebVTT rendition \
                (subtitles/ or subtitles-LANG/: segment-NNNNN.vtt on the video's segments for HLS, \
                subtitles.vtt whole for DASH); --subtitles chooses them. Bitmap subtitles (PGS, \
                VobSub) are left out with a warning.

                --ladder auto follows the video table of Apple's HLS Authoring Specification (H.264 \
                or HEVC column), keeping the rungs at or below the source's displayed size, each rate \
                capped at what the source needs; --ladder 1920x1080@6M,1280x720@3M,… sets them.

                A package is built in a hidden folder and renamed into place once complete: a \
                failure or a signal leaves nothing. Re-running resumes: a package recorded in \
                --output-dir/.vaf-journal.jsonl as made from the same input with the same settings \
                is skipped. Shards, --json lines (schema: Schemas/vaf-package.schema.json), exit codes and \
                signals are those of vaf transcode.
                """
        )

        @Argument(help: "Media files and directories to package.")
        var inputs: [String] = []

        @Option(help: ArgumentHelp("Where packages go.", valueName: "dir"))
        var outputDir: String = "vaf-out"

        @Option(help: ArgumentHelp("hls, dash or both.", valueName: "format"))
        var format: String = "both"

        @Option(help: ArgumentHelp("auto, or the rungs as WxH@RATE,… (1920x1080@6M,1280x720@3M).", valueName: "ladder"))
        var ladder: String = "auto"

        @Option(help: ArgumentHelp("h264 or hevc.", valueName: "codec"))
        var videoCodec: String = "h264"

        @Option(help: ArgumentHelp("Target segment duration in seconds (whole seconds, at least 1).", valueName: "seconds"))
        var segmentDuration: Int = 6

        @Option(help: ArgumentHelp("Subtitle tracks that become WebVTT renditions: all (default), none, languages (eng,fra) or track IDs.",
                                   valueName: "tracks"))
        var subtitles: String = "all"

        @Option(help: ArgumentHelp("VA-API use: auto, require, hybrid or off (as for vaf transcode).", valueName: "mode"))
        var hw: String = "auto"

        @Option(help: ArgumentHelp("VA-API device: a render node or an X11 display.", valueName: "path"))
        var device: String?

        @Option(help: ArgumentHelp("Packages to make at once.", valueName: "n"))
        var jobs: Int = 1

        @Flag(help: "Replace existing packages instead of skipping them.")
        var overwrite = false

        @Flag(help: "Print each input's package folder and renditions (ladder, audio, subtitles) without packaging.")
        var dryRun = false

        @Flag(help: "Print a JSON report, one object per input, on stdout.")
        var json = false

        @Option(help: ArgumentHelp("Take shard I of N (0-based) of the input list.", valueName: "I/N"))
        var shard: String?

        @Option(help: ArgumentHelp("The number of shards a scheduler's index counts (Kubernetes Indexed Jobs).", valueName: "n"))
        var shardCount: Int?

        @OptionGroup var logging: LoggingOptions

        var formats: StreamingPackager.Formats? {
            switch format.lowercased() {
            case "hls": .hls
            case "dash": .dash
            case "both": .both
            default: nil
            }
        }

        /// The rungs given by `--ladder`; nil for auto.
        func rungs() throws -> [StreamingRung]? {
            guard ladder.lowercased() != "auto" else { return nil }
            let rungs = ladder.split(separator: ",").map { StreamingRung(parsing: String($0)) }
            guard !rungs.isEmpty, rungs.allSatisfy({ $0 != nil }) else {
                throw ValidationError("Bad --ladder '\(ladder)': use auto or WxH@RATE,… such as 1920x1080@6M,1280x720@3000k.")
            }
            let given = rungs.map { $0! }
            if let repeated = given.first(where: { rung in given.filter { $0 == rung }.count > 1 }) {
                throw ValidationError("--ladder gives \(repeated) twice: each rung makes one rendition.")
            }
            if let odd = given.first(where: { $0.width % 2 != 0 || $0.height % 2 != 0 }) {
                throw ValidationError("--ladder rung \(odd) has an odd side: 4:2:0 video needs even widths and heights.")
            }
            return given
        }

        func validate() throws {
            guard !inputs.isEmpty else { throw ValidationError("Give at least one input file or directory.") }
            guard formats != nil else { throw ValidationError("--format takes hls, dash or both.") }
            _ = try rungs()
            guard ["h264", "hevc"].contains(videoCodec.lowercased()) else { throw ValidationError("--video-codec takes h264 or hevc.") }
            guard (1...60).contains(segmentDuration) else { throw ValidationError("--segment-duration takes 1 to 60 seconds.") }
            guard HardwarePolicy(rawValue: hw.lowercased()) != nil else { throw ValidationError("--hw takes auto, require, hybrid or off.") }
            guard TrackSelection(argument: subtitles) != nil else {
                throw ValidationError("Bad --subtitles '\(subtitles)'; use all, none, languages (eng,fra) or track IDs (3,4).")
            }
            guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1.") }
            try ShardAssignment.checkOptions(shard: shard, shardCount: shardCount)
        }

        /// Everything that decides a package, for the journal, with the package layout it is made in.
        var settingsText: String {
            "package format=\(format.lowercased()) ladder=\(ladder) codec=\(videoCodec.lowercased()) segment=\(segmentDuration) hw=\(hw.lowercased())"
                + (subtitles.lowercased() == "all" ? "" : " subtitles=\(subtitles)") + " layout=\(Self.layout)"
        }

        /// What a package holds, by version: 2 adds the WebVTT renditions of text subtitles. A
        /// package the journal records under another layout is made again on a rerun.
        static let layout = 2

        func run() async throws {
            logging.apply()
            let assignment = try ShardAssignment.forThisProcess(option: shard, countOption: shardCount)
            let jobs = try plannedJobs(assignment: assignment)
            let lines = JSONLines(enabled: json)
            if dryRun {
                var reports: [JobReport] = []
                for job in jobs {
                    let report = await job.dryRun()
                    lines.write(report)
                    reports.append(report)
                    if !json && !logging.quiet { print(job.planLine(report)) }
                }
                if let code = JobReport.failureExitCode(reports) { throw ExitCode(code) }
                return
            }
            // Folders that runs killed outright left half built are removed (live ones are locked).
            for stale in StreamingPackager.removeAbandonedBuildingFolders(for: jobs.map { URL(fileURLWithPath: $0.folder) }) {
                FileHandle.standardError.write(Data("vaf: removed \(stale.path), a package folder whose builder is gone\n".utf8))
            }
            let display = ProgressDisplay(enabled: !logging.quiet, total: jobs.count)
            let concurrency = self.jobs
            let (reports, signal) = await BatchRunner.cancellingOnSignals(Task {
                await Self.runJobs(jobs, concurrency: concurrency, display: display, lines: lines)
            })
            await display.finish()
            if !logging.quiet {
                let table = JobReport.table(reports, width: TerminalWidth.current())
                if json { FileHandle.standardError.write(Data(table.utf8)) } else { StandardOutput.write(Data(table.utf8)) }
            }
            if let signal { throw ExitCode(128 + signal) }
            if reports.contains(where: { $0.status == .cancelled }) { throw ExitCode(130) }
            if let code = JobReport.failureExitCode(reports) { throw ExitCode(code) }
        }

        /// One job per input of this process's shard. Folders are named over the whole batch,
        /// then the shard is taken: every shard names an input's package alike.
        private func plannedJobs(assignment: ShardAssignment?) throws -> [PackageJob] {
            let all: [BatchInput]
            do { all = try InputCollector.collect(inputs, manifests: [], outputDirectory: outputDir) } catch let error as MediaError {
                FileHandle.standardError.write(Data("vaf: \(JobReport.oneLine(error.description))\n".utf8))
                throw ExitCode(JobReport.failureExitCode([JobReport.baseline.failing(error)]) ?? JobReport.exitBadInput)
            }
            let namer = OutputNamer(directory: outputDir, template: "{dir}/{name}")
            var taken: [String: Int] = [:]
            let journal = ResumeJournal(directory: outputDir)
            var jobs = all.enumerated().map { index, input -> PackageJob in
                var folder = namer.path(for: input, index: index, preset: "", fileExtension: "")
                taken[folder, default: 0] += 1
                if let n = taken[folder], n > 1 { folder += "-\(n)" }
                return PackageJob(input: input.path, folder: folder, command: self, journal: journal, shard: assignment)
            }
            if let assignment {
                jobs = assignment.shard.select(jobs.map { [$0] }).flatMap { $0 }
                if !logging.quiet {
                    FileHandle.standardError.write(Data("vaf: shard \(assignment.shard) from \(assignment.summary): \(jobs.count) of \(all.count) inputs\n".utf8))
                }
            }
            return jobs
        }

        /// Runs `jobs`, `concurrency` at a time, in input order; each report is written as it
        /// ends. A job a signal kept from starting is reported cancelled.
        private static func runJobs(_ jobs: [PackageJob], concurrency: Int, display: ProgressDisplay, lines: JSONLines) async -> [JobReport] {
            await BatchRunner.runEach(jobs, concurrency: concurrency) { job in
                await job.run(display: display)
            } ended: { report in
                await display.record(report.status)
                lines.write(report)
            } unstarted: { job in
                let report = job.baseReport.interruptedBeforeItStarted
                lines.write(report)
                return report
            }
        }
    }
}

/// One input's package.
struct PackageJob: Sendable {
    var input: String
    var folder: String
    var outputDirectory: String
    var formats: StreamingPackager.Formats
    var rungs: [StreamingRung]?
    var codec: VideoCodec
    var segmentSeconds: Int
    var hardwarePolicy: HardwarePolicy
    var hardwareDevice: String?
    var subtitleSelection: TrackSelection
    var overwrite: Bool
    var settingsText: String
    var journal: ResumeJournal
    var shard: ShardAssignment?

    init(input: String, folder: String, command: Vaf.Package, journal: ResumeJournal, shard: ShardAssignment?) {
        self.input = input
        self.folder = folder
        outputDirectory = command.outputDir
        formats = command.formats ?? .both
        rungs = try? command.rungs()
        codec = command.videoCodec.lowercased() == "hevc" ? .hevc : .h264
        segmentSeconds = command.segmentDuration
        hardwarePolicy = HardwarePolicy(rawValue: command.hw.lowercased()) ?? .auto
        hardwareDevice = command.device
        subtitleSelection = TrackSelection(argument: command.subtitles) ?? .all
        overwrite = command.overwrite
        settingsText = command.settingsText
        self.journal = journal
        self.shard = shard
    }

    var baseReport: JobReport {
        var report = JobReport(input: input, output: folder, status: .failed, preset: "package", inputBytes: Asset.fileSize(atPath: input))
        report.shard = shard
        return report
    }

    /// The file the journal records for the package: its master playlist, or its manifest
    /// when it has no HLS.
    var marker: String {
        URL(fileURLWithPath: folder).appendingPathComponent(formats.contains(.hls) ? "master.m3u8" : "manifest.mpd").path
    }

    /// The input's identity and every setting, for the journal.
    var fingerprint: String { ResumeJournal.fingerprint(ResumeJournal.identity(ofInput: input) + [settingsText]) }

    /// Why the package is not made: done before with the same settings, or something not
    /// vaf's is there. Nil when it is made (a stale package of vaf's own is replaced).
    func skipReason() -> String? {
        guard !overwrite, FileManager.default.fileExists(atPath: folder) else { return nil }
        switch journal.decision(forExisting: marker, plan: fingerprint) {
        case .done: return "done: packaged earlier from this input with the same settings"
        case .stale: return nil
        case .unknown: return "the package folder exists (use --overwrite to replace it)"
        }
    }

    func makePackager(_ asset: Asset) -> StreamingPackager {
        let packager = StreamingPackager(asset: asset)
        packager.ladder = rungs
        packager.videoCodec = codec
        packager.segmentDuration = MediaTime(value: Int64(segmentSeconds), timescale: 1)
        packager.formats = formats
        packager.exportSession.hardwarePolicy = hardwarePolicy
        packager.exportSession.hardwareDeviceName = hardwareDevice
        packager.exportSession.subtitleSelection = subtitleSelection
        return packager
    }

    func dryRun() async -> JobReport {
        var report = baseReport
        if let reason = skipReason() {
            report.status = .skipped
            report.error = reason
            return report
        }
        let asset = Asset(url: URL(fileURLWithPath: input))
        do {
            let packager = makePackager(asset)
            let (renditions, leftOut) = try await packager.plannedRenditions()
            _ = try await asset.load(.duration)
            report.status = .planned
            report.renditions = renditions.map(PackageRendition.init(planned:))
            report.warnings = leftOut
        } catch {
            report = report.failing(error)
        }
        return report
    }

    /// One line of the dry run's plan: the package folder and its renditions.
    func planLine(_ report: JobReport) -> String {
        guard report.status == .planned else { return "\(JobReport.oneLine(input)): \(report.status.rawValue): \(report.error ?? "")" }
        let renditions = (report.renditions ?? []).map { r in
            switch r.mediaType {
            case MediaType.video.rawValue: "\(r.width ?? 0)x\(r.height ?? 0)@\(r.bandwidth / 1000)k"
            case MediaType.audio.rawValue: "\(r.folder) \(r.codecs)@\(r.bandwidth / 1000)k"
            default: "\(r.folder) \(r.codecs)"
            }
        }
        return "\(JobReport.oneLine(input)) → \(JobReport.oneLine(folder))/: \(renditions.joined(separator: ", "))"
    }

    /// Packages the input; never throws: a failure becomes the report's status.
    func run(display: ProgressDisplay) async -> JobReport {
        var report = baseReport
        if let escape = BatchJob.escapeThroughLink(of: folder, from: outputDirectory) { return report.failing(escape) }
        if let reason = skipReason() {
            report.status = .skipped
            report.error = reason
            return report
        }
        let replacesStale = FileManager.default.fileExists(atPath: folder)
        do {
            try FileManager.default.createDirectory(at: URL(fileURLWithPath: folder).deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            return report.failing("\(folder): cannot create its directory: \(error.localizedDescription)", code: JobReport.directoryFailureCode(error))
        }
        let asset = Asset(url: URL(fileURLWithPath: input))
        let packager = makePackager(asset)
        packager.replacesExistingPackage = replacesStale
        journal.recordStart(output: marker, plan: fingerprint)
        let seconds = (try? await asset.load(.duration).seconds) ?? 0
        let fps = Double(ExportSession.primaryVideoTrack((try? await asset.load(.tracks)) ?? [])?.nominalFrameRate ?? 0)
        do {
            let result = try await BatchJob.withProgress(of: packager.exportSession, name: URL(fileURLWithPath: input).lastPathComponent,
                                                         seconds: seconds, frameRate: fps, display: display) {
                try await packager.package(to: URL(fileURLWithPath: folder))
            }
            report.status = .completed
            report.renditions = (result.video + result.audio + result.subtitles).map(PackageRendition.init)
            report.seconds = result.video.first?.duration.seconds ?? result.audio.first?.duration.seconds
            report.outputBytes = (result.video + result.audio + result.subtitles).reduce(Int64(0)) { $0 + Int64($1.segments.reduce(0) { $0 + $1.bytes }) }
            report.videoCodec = codec.rawValue
            report.width = result.video.first?.width
            report.height = result.video.first?.height
            report.warnings = Array(Set(result.exports.flatMap(\.warnings) + result.warnings)).sorted()
            if replacesStale { report.warnings.append("made again: the package was made earlier with other settings") }
            journal.record(output: marker, plan: fingerprint)
        } catch {
            // Another run (a retried pod, a second shard) finished this package meanwhile.
            if (error as? MediaError)?.code == .outputExists, journal.madeByAnotherRun(marker, plan: fingerprint) {
                report.status = .skipped
                report.error = "done: packaged meanwhile by another run from this input with the same settings"
                return report
            }
            report = report.failing(error)
            if (error as? MediaError)?.code == .cancelled || Task.isCancelled { report.status = .cancelled }
        }
        return report
    }
}

import ArgumentParser
import FFmpegSupport
import Foundation
import VAFoundation

extension Vaf {
    /// `vaf transcode`: batch exports with the AVFoundation presets, resumable and shardable.
    struct Transcode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Transcode files, directories or manifests with an export preset.",
            discussion: """
                Inputs are files, directories (searched recursively for media files) and --manifest \
                files (JSON lines: {"input": "...", "output": "...", "preset": "..."}). Each input becomes \
                one export into --output-dir, mirroring the input tree; output paths never leave that directory. \
                A repeated --preset makes one output per preset from one decode of the input (a ladder), \
                named by the {preset} field of --name (default {dir}/{name}-{preset}.{ext} then). \
                Re-running a batch resumes it: outputs recorded in --output-dir/.vaf-journal.jsonl as made \
                from the same input with the same settings are skipped, ones made with other settings are \
                made again (kept with --no-overwrite), and files vaf did not make are left alone unless \
                --overwrite. One bad input never stops the batch: it is reported with its cause.

                Progress goes to stderr (bars on a terminal, periodic lines otherwise); the summary table \
                goes to stdout, or to stderr with --json, which prints one JSON object per line on stdout \
                as each input ends (schema: Schemas/vaf-transcode.schema.json).

                Farms: --shard I/N takes every N-th input starting at I (0-based); without it the shard \
                comes from the scheduler: JOB_COMPLETION_INDEX of --shard-count or VAF_SHARD_COUNT \
                (Kubernetes Indexed Jobs), SLURM_ARRAY_TASK_ID with _MIN, _MAX, _STEP and _COUNT (Slurm \
                arrays; a stepped array's task ID-MIN/STEP), AWS_BATCH_JOB_ARRAY_INDEX/_SIZE (AWS Batch), \
                BATCH_TASK_INDEX/_COUNT (Google Cloud Batch) or CLOUD_RUN_TASK_INDEX/_COUNT (Cloud Run). \
                The shard and its source are said on stderr and in each JSON line; an index without a \
                count, or values that name no one shard, are usage errors, never a full batch.

                Exit status: 0 when every input completed or was skipped; 65 (EX_DATAERR) when inputs \
                failed for causes in the input or the settings, where retrying cannot help; 75 \
                (EX_TEMPFAIL) when any failure is temporary (the device failed or is missing, a full \
                disk, an I/O error: errorCode hardwareFailed, ioError or writeFailed), where retrying \
                may help; 130 after \
                Ctrl-C (SIGINT), 143 after SIGTERM, 129 after SIGHUP (each cancels running exports and \
                removes their partial files; finished outputs are kept); 64 for a usage error.
                """
        )

        @Argument(help: "Media files and directories to transcode (an existing file is a file even if its name starts with a dash; -- ends the options).")
        var inputs: [String] = []

        @Option(help: ArgumentHelp("A JSON-lines manifest of inputs (repeatable).", valueName: "file"))
        var manifest: [String] = []

        @Option(help: ArgumentHelp("Export preset, case-insensitive: 1280x720, HEVC1920x1080, passthrough… (see --list-presets); default 1280x720. Repeat it for one output per preset from one decode.", valueName: "name"))
        var preset: [String] = []

        /// The presets asked for, in order: each input makes one output per preset.
        var presets: [String] { preset.isEmpty ? ["1280x720"] : preset }

        /// The name template: `--name`, whose default gains `-{preset}` when several presets
        /// each make an output.
        var nameTemplate: String {
            presets.count > 1 && name == OutputNamer.defaultTemplate ? "{dir}/{name}-{preset}.{ext}" : name
        }

        @Flag(help: "List the presets and exit.")
        var listPresets = false

        @Option(help: ArgumentHelp("Where outputs go.", valueName: "dir"))
        var outputDir: String = "vaf-out"

        @Option(help: ArgumentHelp("Output name template with {name} {ext} {preset} {dir} {index}.", valueName: "template"))
        var name: String = "{dir}/{name}.{ext}"

        @Option(help: ArgumentHelp("Container: mp4, mov, m4v, m4a, mkv or webm (default: mp4, m4a for AppleM4A).", valueName: "type"))
        var container: String?

        @Option(name: .customLong("frame-rate"),
                help: ArgumentHelp("passthrough (keep every frame and its timing), auto (keep up to 60 fps, convert faster to 30), or a constant rate such as 30, 29.97 or 30000/1001.", valueName: "policy"))
        var frameRate: String = "auto"

        @Option(name: .customLong("time-range"),
                help: ArgumentHelp("Export only START-END or START+DURATION, in seconds, [HH:]MM:SS(.fff) or video frames (5-15, 5+10, 00:01:30.5-00:02:00, +90f).", valueName: "range"))
        var timeRange: String?

        @Option(help: ArgumentHelp("Replace the preset's video codec: h264, hevc, av1, vp9, mjpeg.", valueName: "codec"))
        var videoCodec: String?

        @Option(help: ArgumentHelp("Replace the preset's video bit rate, e.g. 4M or 2500k (no cap at the source's rate then).", valueName: "rate"))
        var videoBitrate: String?

        @Option(help: ArgumentHelp("""
            Encode at constant quality 0–100 instead of a bit rate (55 = each encoder's usual default: \
            x264 CRF 23, x265 CRF 28; see README), never above the rate the source needs.
            """, valueName: "0-100"))
        var quality: Int?

        @Option(help: ArgumentHelp("Encoder speed: slower, slow, medium, fast, faster or fastest (x264/x265 preset, SVT-AV1 preset, VA-API quality level).", valueName: "speed"))
        var speed: String?

        @Option(help: ArgumentHelp("Replace the audio codec: aac, opus, flac, alac.", valueName: "codec"))
        var audioCodec: String?

        @Option(help: ArgumentHelp("Replace the audio bit rate, e.g. 128k.", valueName: "rate"))
        var audioBitrate: String?

        @Option(help: ArgumentHelp("""
            Audio tracks to keep, each as a track of its own with its language, title and default flag: \
            default (the one the source plays by default), all, none, languages (eng,fra) or track IDs as vaf info numbers them (2,3). \
            Without it, passthrough keeps every track and an encoding preset the default one.
            """, valueName: "tracks"))
        var audio: String?

        @Option(help: ArgumentHelp("""
            Subtitle tracks to keep: all (default), none, languages (eng,fra) or track IDs. Text subtitles are \
            converted where the container needs it (SubRip and ASS to mov_text in MP4, to WebVTT in WebM); \
            ones it cannot hold (bitmaps in MP4) are left out with a warning.
            """, valueName: "tracks"))
        var subtitles: String = "all"

        @Option(name: .customLong("burn-subtitles"), help: ArgumentHelp("""
            Draw a subtitle track into the picture: text (SubRip, ASS, WebVTT, mov_text) with libass, bitmaps \
            (PGS, VobSub, DVB) as decoded. Give its track ID or language (eng). It is then not kept as a track of \
            its own; a file without such a track fails.
            """, valueName: "track|lang"))
        var burnSubtitles: String?

        @Option(help: ArgumentHelp("""
            Normalise each audio track's loudness in two passes (measured by ebur128, then one linear gain): \
            ebu-r128 (-23 LUFS, true peak at most -1 dBTP) or I=LUFS:TP=dBTP (I=-16:TP=-1.5). The JSON reports both passes.
            """, valueName: "target"))
        var loudness: String?

        @Option(help: ArgumentHelp("Fit the video into WxH instead of the preset's box (never upscaled).", valueName: "WxH"))
        var size: String?

        @Option(help: ArgumentHelp("""
            VA-API use: auto (decode, scale and encode on the GPU where it can, software for the rest; \
            a device failing mid-export goes on in software from the last keyframe), require (fail when no stage can \
            run on the GPU), hybrid (exactly one stage on the GPU), off.
            """, valueName: "mode"))
        var hw: String = "auto"

        @Option(help: ArgumentHelp("Draw a PNG/JPEG over the video at its own size: top-left corner at x,y of the source's upright picture (default 16,16), opacity 0–1 (default 1).",
                                   valueName: "image[:x,y[,opacity]]"))
        var watermark: String?

        @Option(help: ArgumentHelp("VA-API device: a render node (/dev/dri/renderD129) or an X11 display (:0); default the first render node.", valueName: "path"))
        var device: String?

        @Option(help: ArgumentHelp("Exports to run at once.", valueName: "n"))
        var jobs: Int = 1

        @Flag(help: "Replace existing outputs instead of skipping them.")
        var overwrite = false

        @Flag(help: "Never replace an existing output, even one vaf made earlier with other settings.")
        var noOverwrite = false

        @Flag(help: "Print the plan (each input, the settings chosen, the output path) without exporting.")
        var dryRun = false

        @Flag(help: "Print a JSON report, one object per input, on stdout.")
        var json = false

        @Option(help: ArgumentHelp("Take shard I of N (0-based) of the input list.", valueName: "I/N"))
        var shard: String?

        @Option(help: ArgumentHelp("The number of shards a scheduler's index counts: a Kubernetes Indexed Job's completions (wins over VAF_SHARD_COUNT).", valueName: "n"))
        var shardCount: Int?

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            if listPresets { return }
            guard !inputs.isEmpty || !manifest.isEmpty else { throw ValidationError("Give at least one input file, directory or --manifest.") }
            for preset in presets where ExportPreset(named: preset) == nil {
                throw ValidationError("Unknown preset '\(preset)'; see vaf transcode --list-presets.")
            }
            let named = presets.compactMap { ExportPreset(named: $0)?.name }
            if let repeated = named.first(where: { name in named.filter { $0 == name }.count > 1 }) {
                throw ValidationError("--preset \(repeated) is given twice: each preset makes one output.")
            }
            if presets.count > 1 && !nameTemplate.contains("{preset}") {
                throw ValidationError("--name \(name) and \(presets.count) presets conflict: every preset makes an output, so the name must contain {preset}.")
            }
            if let container, FileType(fileExtension: container) == nil { throw ValidationError("Unknown container '\(container)'; use mp4, mov, m4v, m4a, mkv or webm.") }
            guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1.") }
            _ = try parsedFrameRate()
            _ = try parsedTimeRange()
            _ = try parsedSize()
            if let v = videoBitrate, BitRate.parse(v) == nil { throw ValidationError("Bad --video-bitrate '\(v)'; use e.g. 4M or 2500k.") }
            if let a = audioBitrate, BitRate.parse(a) == nil { throw ValidationError("Bad --audio-bitrate '\(a)'; use e.g. 128k.") }
            if let c = videoCodec, ![.h264, .hevc, .av1, .vp9, .mjpeg].contains(VideoCodec(rawValue: c.lowercased())) {
                throw ValidationError("Unknown --video-codec '\(c)'; use h264, hevc, av1, vp9 or mjpeg.")
            }
            guard HardwarePolicy(rawValue: hw.lowercased()) != nil else {
                throw ValidationError("--hw takes auto, require, hybrid or off.")
            }
            if let c = audioCodec, ![.aac, .opus, .flac, .alac].contains(AudioCodec(rawValue: c.lowercased())) {
                throw ValidationError("Unknown --audio-codec '\(c)'; use aac, opus, flac or alac.")
            }
            if let audio, TrackSelection(argument: audio) == nil {
                throw ValidationError("Bad --audio '\(audio)'; use default, all, none, languages (eng,fra) or track IDs (2,3).")
            }
            if TrackSelection(argument: subtitles) == nil {
                throw ValidationError("Bad --subtitles '\(subtitles)'; use all, none, languages (eng,fra) or track IDs (3,4).")
            }
            if let loudness, LoudnessTarget(argument: loudness) == nil {
                throw ValidationError("Bad --loudness '\(loudness)'; use ebu-r128 or I=LUFS:TP=dBTP, e.g. I=-16:TP=-1.5 (I from -70 to -5, TP from -9 to 0).")
            }
            if let burnSubtitles {
                switch TrackSelection(argument: burnSubtitles) {
                case .trackIDs(let ids) where ids.count == 1: break
                case .languages(let codes) where codes.count == 1: break
                default: throw ValidationError("Bad --burn-subtitles '\(burnSubtitles)'; give one track ID (3) or one language (eng).")
                }
            }
            if let watermark, Watermark(argument: watermark) == nil {
                throw ValidationError("Bad --watermark '\(watermark)'; use IMAGE, IMAGE:x,y or IMAGE:x,y,opacity with opacity 0 to 1.")
            }
            try ShardAssignment.checkOptions(shard: shard, shardCount: shardCount)
            if let quality, !(0...100).contains(quality) { throw ValidationError("--quality takes 0 to 100 (55 is each encoder's usual default).") }
            if let speed, EncoderSpeed(rawValue: speed.lowercased()) == nil {
                throw ValidationError("Unknown --speed '\(speed)'; use \(EncoderSpeed.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            try checkConflicts()
        }

        /// Options that cannot all apply are a usage error naming both, never silently dropped.
        func checkConflicts() throws {
            if let quality, let videoBitrate {
                throw ValidationError("--quality \(quality) and --video-bitrate \(videoBitrate) conflict: a constant-quality encode has no target bit rate; give one of them.")
            }
            if let preset = presets.first(where: { ExportPreset(named: $0)?.isPassthrough == true }) {
                let encoding: [(String, String?)] = [
                    ("--video-codec", videoCodec), ("--audio-codec", audioCodec), ("--video-bitrate", videoBitrate),
                    ("--audio-bitrate", audioBitrate), ("--quality", quality.map(String.init)), ("--speed", speed), ("--size", size),
                    ("--burn-subtitles", burnSubtitles), ("--loudness", loudness),
                ]
                if let (option, value) = encoding.first(where: { $0.1 != nil }), let value {
                    throw ValidationError("--preset \(preset) and \(option) \(value) conflict: passthrough copies the streams as they are; choose a re-encoding preset (1280x720, HEVC1920x1080, …) to set \(option).")
                }
                if !["auto", "automatic"].contains(frameRate.lowercased()) {
                    throw ValidationError("--preset \(preset) and --frame-rate \(frameRate) conflict: passthrough keeps the source's frames; choose a re-encoding preset to change the rate.")
                }
            }
            if container?.lowercased() == "webm" || Self.fixedExtension(of: nameTemplate) == "webm" {
                if let codec = videoCodec, !["vp9", "av1"].contains(codec.lowercased()) {
                    throw ValidationError("--video-codec \(codec) and a WebM output conflict: WebM holds vp9 or av1 video.")
                }
                if let codec = audioCodec, codec.lowercased() != "opus" {
                    throw ValidationError("--audio-codec \(codec) and a WebM output conflict: WebM holds opus audio here.")
                }
            }
            if overwrite && noOverwrite {
                throw ValidationError("--overwrite and --no-overwrite conflict: choose one.")
            }
            if let fixed = Self.fixedExtension(of: name) {
                guard let type = FileType(fileExtension: fixed) else {
                    throw ValidationError("--name \(name) names a .\(fixed) file, which vaf cannot write; use {ext} or one of mp4, mov, m4v, m4a, mkv, webm.")
                }
                if let container, FileType(fileExtension: container) != type {
                    throw ValidationError("--name \(name) and --container \(container) conflict: the name says .\(fixed) but the data would be \(container.lowercased()); make them agree or use {ext} in --name.")
                }
            }
        }

        /// The extension a `--name` template spells out literally ("out.mkv", "{name}.mov"), nil
        /// when it uses `{ext}` or has none.
        static func fixedExtension(of template: String) -> String? {
            let last = template.split(separator: "/").last.map(String.init) ?? template
            guard !last.contains("{ext}"), let dot = last.lastIndex(of: "."), dot != last.startIndex else { return nil }
            let ext = String(last[last.index(after: dot)...])
            return ext.isEmpty || ext.contains("{") || ext.contains("}") ? nil : ext.lowercased()
        }

        /// The container for a job with `preset`: `--container`, else the one `--name` spells,
        /// else mp4 (m4a for AppleM4A).
        func fileType(for preset: ExportPreset) -> FileType {
            if let type = container.flatMap({ FileType(fileExtension: $0) }) { return type }
            if let type = Self.fixedExtension(of: nameTemplate).flatMap({ FileType(fileExtension: $0) }) { return type }
            return preset == .appleM4A ? .m4a : .mp4
        }

        func run() async throws {
            logging.apply()
            if listPresets {
                print(ExportPreset.all.map(presetLine).joined(separator: "\n"))
                return
            }
            let units: [[BatchJob]]
            do { units = try makePlan(shard: try shardAssignment()) } catch let error as MediaError {
                // The inputs themselves cannot be read (a folder without media): one line, and the
                // exit status a scheduler acts on.
                FileHandle.standardError.write(Data("vaf: \(JobReport.oneLine(error.description))\n".utf8))
                throw ExitCode(JobReport.failureExitCode([JobReport.baseline.failing(error)]) ?? JobReport.exitBadInput)
            }
            let plan = units.flatMap { $0 }
            let lines = JSONLines(enabled: json)
            if dryRun {
                let reports = await plan.asyncMap { job in
                    let report = await job.dryRun()
                    lines.write(report)
                    return report
                }
                emit(reports)
                if let code = JobReport.failureExitCode(reports) { throw ExitCode(code) }
                return
            }
            BatchRunner.removeStalePartialFiles(of: plan.map(\.output))
            // A batch is many exports in one process: keep its peak near one export's. (One
            // export gains nothing from it and would pay a mapping per large packet.)
            if plan.count > 1 { ProcessMemory.returnLargeBuffersToTheSystem() }
            let runner = BatchRunner(units: units, concurrency: jobs, progress: ProgressDisplay(enabled: !logging.quiet, total: plan.count))
            let (reports, signal) = await runner.run(onReport: { lines.write($0) })
            emit(reports)
            // 128 + the signal, as shells report a process it stopped: 130 SIGINT, 143 SIGTERM,
            // 129 SIGHUP, 141 SIGPIPE (stdout's reader went away).
            if let signal { throw ExitCode(128 + signal) }
            if reports.contains(where: { $0.status == .cancelled }) { throw ExitCode(130) }
            if let code = JobReport.failureExitCode(reports) { throw ExitCode(code) }
        }

        private func presetLine(_ p: ExportPreset) -> String {
            let video = p.videoCodec.map { "\($0)" + (p.box.map { " fit in \($0)" } ?? " at source size") } ?? (p.isPassthrough ? "copy" : "none")
            let audio = p.audioCodec.map { "\($0)" } ?? (p.isPassthrough ? "copy" : "none")
            return "\(p.name.padding(toLength: 20, withPad: " ", startingAt: 0)) video \(video.padding(toLength: 26, withPad: " ", startingAt: 0)) audio \(audio.padding(toLength: 5, withPad: " ", startingAt: 0)) files \(p.fileTypes.map(\.rawValue).joined(separator: ","))"
        }

        /// Every input of this shard, each with its jobs (one per output, all made from one
        /// decode of the input), their output paths decided over the whole batch.
        func makePlan(shard assignment: ShardAssignment?) throws -> [[BatchJob]] {
            let all = try InputCollector.collect(inputs, manifests: manifest, outputDirectory: outputDir)
            let askedPresets = presets.map { ExportPreset(named: $0)! }
            let namer = OutputNamer(directory: outputDir, template: nameTemplate)
            var taken: [String: Int] = [:]
            var units: [[BatchJob]] = []
            let journal = ResumeJournal(directory: outputDir)
            for (index, input) in all.enumerated() {
                // A manifest line naming its preset makes that one output (an unknown one fails alone).
                let inputPresets = input.preset.map { [ExportPreset(named: $0) ?? askedPresets[0]] } ?? askedPresets
                var unit: [BatchJob] = []
                for jobPreset in inputPresets {
                    var job = try makeJob(input, index: index, preset: jobPreset, ladder: inputPresets.count > 1, namer: namer, taken: &taken)
                    job.journal = journal
                    job.shard = assignment
                    unit.append(job)
                }
                units.append(unit)
            }
            guard let assignment else { return units }
            // Shards split inputs, never one input's outputs: they share its decode.
            let selected = assignment.shard.select(units)
            // The shard is said, with what chose it, so a log shows which slice this process ran.
            if !logging.quiet {
                FileHandle.standardError.write(Data("vaf: shard \(assignment.shard) from \(assignment.summary): \(selected.count) of \(units.count) inputs\n".utf8))
            }
            return selected
        }

        /// The job making `input`'s output with `jobPreset`; `ladder` when the input makes one
        /// output per preset (a manifest's own output name then gains the preset's).
        private func makeJob(_ input: BatchInput, index: Int, preset jobPreset: ExportPreset, ladder: Bool, namer: OutputNamer,
                             taken: inout [String: Int]) throws -> BatchJob {
            let type = fileType(for: jobPreset)
            var path = namer.path(for: input, index: index, preset: jobPreset.name, fileExtension: type.fileExtension)
            if ladder, input.output != nil {
                let url = URL(fileURLWithPath: path)
                path = url.deletingPathExtension().path + "-\(OutputNamer.clean(jobPreset.name))." + url.pathExtension
            }
            // Two inputs with the same name must not share an output: number the later ones.
            taken[path, default: 0] += 1
            if let n = taken[path], n > 1 {
                let url = URL(fileURLWithPath: path)
                path = url.deletingPathExtension().path + "-\(n)." + url.pathExtension
            }
            var job = BatchJob(input: input.path, output: path, preset: jobPreset, fileType: type, overwrite: overwrite)
            if let p = input.preset, ExportPreset(named: p) == nil { job.planError = "unknown preset '\(p)' in the manifest" }
            job.frameRate = try parsedFrameRate()
            if let range = try parsedTimeRange() {
                if range.countsFrames { job.frameCountedRange = range } else { job.timeRange = range.resolved(frameDuration: nil) }
            }
            job.size = try parsedSize()
            job.videoCodec = videoCodec.map { VideoCodec(rawValue: $0.lowercased()) }
            job.audioCodec = audioCodec.map { AudioCodec(rawValue: $0.lowercased()) }
            job.videoBitRate = videoBitrate.flatMap(BitRate.parse)
            job.quality = quality
            job.speed = speed.flatMap { EncoderSpeed(rawValue: $0.lowercased()) }
            job.audioBitRate = audioBitrate.flatMap(BitRate.parse)
            job.audioSelection = audio.flatMap(TrackSelection.init(argument:))
            job.subtitleSelection = TrackSelection(argument: subtitles) ?? .all
            job.subtitlesBurnedIn = burnSubtitles.flatMap(TrackSelection.init(argument:))
            job.loudness = loudness.flatMap(LoudnessTarget.init(argument:))
            job.hardwarePolicy = HardwarePolicy(rawValue: hw.lowercased()) ?? .auto
            job.hardwareDevice = device
            job.watermark = watermark.flatMap(Watermark.init(argument:))
            job.outputDirectory = outputDir
            job.keepsStaleOutputs = noOverwrite
            return job
        }

        /// The shard this process runs, read once from the options and the environment.
        func shardAssignment() throws -> ShardAssignment? {
            try ShardAssignment.forThisProcess(option: shard, countOption: shardCount)
        }

        func parsedFrameRate() throws -> FrameRatePolicy {
            try Self.parseFrameRate(frameRate)
        }

        /// `--frame-rate`: passthrough, auto, or a constant rate (shared with `vaf render`).
        static func parseFrameRate(_ frameRate: String) throws -> FrameRatePolicy {
            switch frameRate.lowercased() {
            case "passthrough", "keep": return .passthrough
            case "auto", "automatic": return .automatic
            default:
                // 30, 29.97 or 30000/1001.
                let parts = frameRate.split(separator: "/", omittingEmptySubsequences: false).map { Double($0) }
                let fps: Double? = switch parts.count {
                case 1: parts[0]
                case 2: parts[0].flatMap { n in parts[1].flatMap { d in d > 0 ? n / d : nil } }
                default: nil
                }
                guard let fps, fps > 0, fps <= 240 else {
                    throw ValidationError("Bad --frame-rate '\(frameRate)': use passthrough, auto or a rate in frames per second (0–240): 30, 29.97 or 30000/1001.")
                }
                return .constant(fps)
            }
        }

        /// A time as people type it: seconds (`90`, `90.5`), `MM:SS(.fff)` or `HH:MM:SS(.fff)`,
        /// converted exactly (decimal fractions become a power-of-ten time scale).
        static func parseTime(_ text: String) -> MediaTime? {
            let fields = text.split(separator: ":", omittingEmptySubsequences: false)
            guard (1...3).contains(fields.count) else { return nil }
            var seconds: Int64 = 0
            for field in fields.dropLast() {
                guard let whole = Int64(field), whole >= 0 else { return nil }
                seconds = seconds * 60 + whole
            }
            let last = fields.last!.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...2).contains(last.count), let whole = Int64(last[0]), whole >= 0 else { return nil }
            if fields.count > 1 && whole >= 60 { return nil }
            seconds = seconds * 60 + whole
            guard last.count == 2 else { return MediaTime(value: seconds, timescale: 1) }
            let digits = last[1]
            guard !digits.isEmpty, digits.count <= 6, let fraction = Int64(digits) else { return nil }
            var scale: Int64 = 1
            for _ in 0..<digits.count { scale *= 10 }
            return MediaTime(value: seconds * scale + fraction, timescale: Int32(scale))
        }

        func parsedTimeRange() throws -> TimeRangeArgument? {
            guard let timeRange else { return nil }
            guard let range = TimeRangeArgument(timeRange) else {
                throw ValidationError("Bad --time-range '\(timeRange)': use START-END or START+DURATION, each in seconds (90.5), as MM:SS or HH:MM:SS(.fff), or in video frames (90f), with END after START: 00:01:30.5-00:02:00, 5+10, +90f.")
            }
            return range
        }

        func parsedSize() throws -> Size? {
            try size.map(Self.parseSize)
        }

        /// `--size WxH` as the export's box; a usage error otherwise (shared with `vaf render`).
        static func parseSize(_ text: String) throws -> Size {
            let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2, parts[0] >= 2, parts[1] >= 2 else { throw ValidationError("--size takes WxH, e.g. 1280x720.") }
            return Size(width: parts[0], height: parts[1])
        }

        /// The summary table, fitted to the terminal: on stdout, or on stderr when stdout carries
        /// the JSON lines. With `--quiet`, only each failure, one line on stderr.
        private func emit(_ reports: [JobReport]) {
            if logging.quiet {
                let failures = reports.filter { $0.status == .failed }.map { report in
                    let error = report.error ?? "failed"
                    // Most causes name their file already.
                    return "vaf: " + JobReport.oneLine(error.hasPrefix(report.input) ? error : "\(report.input): \(error)") + "\n"
                }
                if !failures.isEmpty { FileHandle.standardError.write(Data(failures.joined().utf8)) }
                return
            }
            let table = JobReport.table(reports, width: TerminalWidth.current())
            if json {
                FileHandle.standardError.write(Data(table.utf8))
            } else {
                print(table, terminator: "")
            }
        }
    }
}

/// JSON lines on stdout (`--json`): each value one compact object on its own line, written
/// with one `write` as soon as it is known, so a reader acts on each input as it ends.
struct JSONLines: Sendable {
    let enabled: Bool

    func write(_ value: some Encodable) {
        guard enabled else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var data = try? encoder.encode(value) else { return }
        data.append(UInt8(ascii: "\n"))
        StandardOutput.write(data)
    }
}

/// Parses bit rates written like 4M, 2500k or 128000.
enum BitRate {
    static func parse(_ text: String) -> Int? {
        let t = text.lowercased()
        let (digits, scale): (Substring, Double) = t.hasSuffix("m") ? (t.dropLast(), 1e6) : t.hasSuffix("k") ? (t.dropLast(), 1e3) : (Substring(t), 1)
        guard let value = Double(digits), value > 0 else { return nil }
        return Int(value * scale)
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}

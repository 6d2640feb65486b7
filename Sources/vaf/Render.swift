import ArgumentParser
import Foundation
import VAFoundation

extension Vaf {
    /// `vaf render`: an OpenTimelineIO timeline exported as one movie through a composition.
    struct Render: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Render an OpenTimelineIO timeline (.otio) to a movie.",
            discussion: """
                Each enabled Video and Audio track of the timeline becomes a track of the movie: its clips \
                (the source_range of each clip's file) play one after another, gaps and disabled clips are \
                black or silent, several video tracks are stacked (later ones on top) and several audio \
                tracks are mixed. Dissolves (SMPTE_Dissolve) blend across their cut, and LinearTimeWarp \
                speed changes play the clip faster or slower. The movie has the timeline's constant \
                frame rate (--frame-rate timeline). Media paths are taken relative to the \
                timeline's folder; file:// URLs work too. Other effects, nested stacks and missing media \
                are refused with the clip and the cause named. --dry-run prints the composition instead.

                The output is written to a temporary file and renamed, so no partial file is left. With \
                --json, one JSON object is printed on stdout when the render ends (schema: \
                Schemas/vaf-render.schema.json).

                Exit status: 0 when the movie was written, 1 when the timeline or the export failed, 64 for \
                a usage error; 130 after Ctrl-C (SIGINT), 143 after SIGTERM, 129 after SIGHUP (each removes \
                the partial file).
                """
        )

        @Argument(help: "The timeline, an OpenTimelineIO JSON file (.otio).")
        var timeline: String

        @Option(name: [.customShort("o"), .long], help: ArgumentHelp("The movie to write (default: the timeline's name with .mp4, beside it).", valueName: "file"))
        var output: String?

        @Option(help: ArgumentHelp("Export preset, case-insensitive: 1280x720, HEVC1920x1080… (see vaf transcode --list-presets).", valueName: "name"))
        var preset: String = "1280x720"

        @Option(name: .customLong("frame-rate"),
                help: ArgumentHelp("timeline (the timeline's rate, constant: its global_start_time's or first video clip's), or as vaf transcode: passthrough, auto, 30, 29.97, 30000/1001.", valueName: "policy"))
        var frameRate: String = "timeline"

        @Option(help: ArgumentHelp("Fit the video into WxH instead of the preset's box (never upscaled).", valueName: "WxH"))
        var size: String?

        @Option(help: ArgumentHelp("Encode at constant quality 0–100 instead of a bit rate (55 = each encoder's usual default).", valueName: "0-100"))
        var quality: Int?

        @Option(help: ArgumentHelp("""
            VA-API use, as vaf transcode's: auto (decode, composite and encode on the GPU where it can), require, \
            hybrid, off.
            """, valueName: "mode"))
        var hw: String = "auto"

        @Option(help: ArgumentHelp("VA-API device: a render node (/dev/dri/renderD129) or an X11 display (:0); default the first render node.", valueName: "path"))
        var device: String?

        @Flag(help: "Print a JSON report on stdout.")
        var json = false

        @Flag(help: "Replace the output if it exists.")
        var overwrite = false

        @Flag(help: "Print the composition it would render (each track's segments, the video composition's layers) without rendering.")
        var dryRun = false

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard let chosen = ExportPreset(named: preset) else { throw ValidationError("Unknown preset '\(preset)'; see vaf transcode --list-presets.") }
            if chosen.isPassthrough { throw ValidationError("--preset \(preset) copies streams, which a timeline cannot: choose a re-encoding preset (1280x720, HEVC1920x1080, …).") }
            if let size { _ = try Transcode.parseSize(size) }
            if frameRate.lowercased() != "timeline" { _ = try Transcode.parseFrameRate(frameRate) }
            if let quality, !(0...100).contains(quality) { throw ValidationError("--quality takes 0 to 100 (55 is each encoder's usual default).") }
            guard HardwarePolicy(rawValue: hw.lowercased()) != nil else { throw ValidationError("--hw takes auto, require, hybrid or off.") }
            _ = try fileType()
        }

        /// Where the movie goes: `--output`, else the timeline's base name + .mp4 beside it.
        var outputPath: String {
            output ?? URL(fileURLWithPath: timeline).deletingPathExtension().appendingPathExtension("mp4").path
        }

        /// The container `--output`'s extension names (mp4 by default).
        func fileType() throws -> FileType {
            let ext = URL(fileURLWithPath: outputPath).pathExtension
            guard let type = FileType(fileExtension: ext.isEmpty ? "mp4" : ext) else {
                throw ValidationError("--output \(outputPath) names a .\(ext) file, which vaf cannot write; use .mp4, .mov, .m4v, .mkv or .webm.")
            }
            return type
        }

        func run() async throws {
            logging.apply()
            var job = BatchJob(input: timeline, output: outputPath, preset: ExportPreset(named: preset)!, fileType: try fileType(), overwrite: overwrite)
            job.size = try size.map(Transcode.parseSize)
            job.quality = quality
            job.hardwarePolicy = HardwarePolicy(rawValue: hw.lowercased()) ?? .auto
            job.hardwareDevice = device
            var report = RenderReport(job: job.baseReport)
            // A dry run prints its plan instead of the render's report.
            var printsReport = true
            defer { if printsReport { report.print(json: json) } }
            // A dry run writes nothing, so an existing output does not stop it.
            if !overwrite && !dryRun && FileManager.default.fileExists(atPath: job.output) {
                report.job = report.job.failing("\(job.output): the output exists (use --overwrite to replace it)", code: .outputExists)
                throw ExitCode(JobReport.exitBadInput)
            }
            let composition: MutableComposition
            var drawing: (video: VideoComposition?, audio: AudioMix?) = (nil, nil)
            do {
                let (built, timelineReport) = try await OpenTimelineIO.composition(contentsOf: URL(fileURLWithPath: timeline))
                composition = built
                drawing = (timelineReport.videoComposition, timelineReport.audioMix)
                report.timeline = RenderReport.Timeline(timelineReport)
                // A constant rate fills gaps (a trailing one included) with repeated black frames.
                job.frameRate = frameRate.lowercased() == "timeline"
                    ? timelineReport.frameRate.map(FrameRatePolicy.constant) ?? .automatic : try Transcode.parseFrameRate(frameRate)
            } catch {
                report.job = error is MediaError ? report.job.failing(error) : report.job.failing("\(timeline): \(error)")
                throw ExitCode(JobReport.exitBadInput)
            }
            if dryRun {
                printsReport = false
                let plan = RenderPlan(timeline: timeline, output: job.output, composition: composition, videoComposition: drawing.video,
                                      warnings: report.timeline?.warnings ?? [])
                if json { JSONLines(enabled: true).write(plan) } else { Swift.print(plan.text, terminator: "") }
                return
            }
            BatchRunner.removeStalePartialFiles(of: [job.output])
            let video = (try? await composition.loadTracks(withMediaType: .video))?.first
            let (render, started) = (job, report.job)
            let fps = render.frameRate.outputFrameRate(sourceFrameRate: Double(video?.nominalFrameRate ?? 0)) ?? Double(video?.nominalFrameRate ?? 0)
            // Ctrl-C, SIGTERM and SIGHUP cancel the export, which removes its partial file.
            let session = render.makeSession(asset: composition)
            session.videoComposition = drawing.video
            if let mix = drawing.audio { session.audioMix = mix }
            let (exported, signal) = await BatchRunner.cancellingOnSignals(Task {
                await render.export(session, seconds: composition.duration.seconds,
                                    frameRate: fps, display: ProgressDisplay(enabled: !logging.quiet), report: started)
            })
            report.job = exported
            // 128 + the signal, as shells report a process it stopped: 130 SIGINT, 143 SIGTERM, 129 SIGHUP.
            if let signal { throw ExitCode(128 + signal) }
            if let code = JobReport.failureExitCode([report.job]) { throw ExitCode(code) }
            if report.job.status != .completed { throw ExitCode(130) }
        }
    }
}

/// The line `vaf render --json` prints (schema `Schemas/vaf-render.schema.json`): the export's
/// keys as `vaf transcode --json` writes them, plus what the timeline put in the movie.
struct RenderReport: Encodable {
    /// What the timeline contributed, in seconds for JSON readers.
    struct Timeline: Encodable {
        struct Track: Encodable {
            var name: String
            var mediaType: String
            var clips: Int
            var disabledClips: Int
            var gaps: Int
            var durationSeconds: Double
        }

        var name: String
        /// Nil when the timeline names no rate.
        var frameRate: Double?
        var durationSeconds: Double
        var tracks: [Track]
        var skippedTracks: [String]
        var warnings: [String]

        init(_ report: TimelineReport) {
            name = report.name
            frameRate = report.frameRate
            durationSeconds = report.duration.seconds
            tracks = report.tracks.map {
                Track(name: $0.name, mediaType: $0.mediaType.rawValue, clips: $0.clips, disabledClips: $0.disabledClips,
                      gaps: $0.gaps, durationSeconds: $0.duration.seconds)
            }
            skippedTracks = report.skippedTracks
            warnings = report.warnings
        }

        enum CodingKeys: String, CodingKey { case name, frameRate, durationSeconds, tracks, skippedTracks, warnings }

        /// Every key, `frameRate` as null when unknown.
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(frameRate, forKey: .frameRate)
            try c.encode(durationSeconds, forKey: .durationSeconds)
            try c.encode(tracks, forKey: .tracks)
            try c.encode(skippedTracks, forKey: .skippedTracks)
            try c.encode(warnings, forKey: .warnings)
        }
    }

    var job: JobReport
    /// Nil when the timeline could not be read.
    var timeline: Timeline?

    enum CodingKeys: String, CodingKey { case timeline }

    func encode(to encoder: any Encoder) throws {
        try job.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(timeline, forKey: .timeline)
    }

    /// The JSON line on stdout, or on failure one line on stderr naming the file and the cause.
    func print(json: Bool) {
        if json { JSONLines(enabled: true).write(self) }
        if let error = job.error, job.status != .completed {
            FileHandle.standardError.write(Data("vaf render: \(JobReport.oneLine(error))\n".utf8))
        } else if !json {
            let warnings = timeline?.warnings ?? []
            for warning in warnings { FileHandle.standardError.write(Data("vaf render: warning: \(JobReport.oneLine(warning))\n".utf8)) }
            Swift.print("\(job.output): \(String(format: "%.2f", job.seconds ?? 0)) s from \(timeline?.tracks.count ?? 0) track\(timeline?.tracks.count == 1 ? "" : "s")")
        }
    }
}

/// What `vaf render --dry-run` prints: the composition the timeline makes, segment by segment,
/// and the video composition's layers, in seconds for readers (schemaVersion 1).
struct RenderPlan: Encodable {
    struct Segment: Encodable {
        /// Nil for an empty segment.
        var file: String?
        var sourceStart: Double?
        var sourceEnd: Double?
        var targetStart: Double
        var targetEnd: Double

        enum CodingKeys: String, CodingKey { case file, sourceStart, sourceEnd, targetStart, targetEnd }

        /// Every key, the source ones as null for an empty segment.
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(file, forKey: .file)
            try c.encode(sourceStart, forKey: .sourceStart)
            try c.encode(sourceEnd, forKey: .sourceEnd)
            try c.encode(targetStart, forKey: .targetStart)
            try c.encode(targetEnd, forKey: .targetEnd)
        }
    }

    struct Track: Encodable {
        var trackID: Int
        var mediaType: String
        var segments: [Segment]
    }

    struct Change: Encodable {
        var start: Double
        var end: Double
        var from: Double
        var to: Double
    }

    struct Layer: Encodable {
        var trackID: Int
        /// Opacity set values (start = end) and ramps, in time order.
        var opacity: [Change]
    }

    struct Instruction: Encodable {
        var start: Double
        var end: Double
        /// Top first, as `VideoCompositionInstruction.layerInstructions`.
        var layers: [Layer]
    }

    struct Drawing: Encodable {
        var renderWidth: Int
        var renderHeight: Int
        var frameDuration: Double
        var instructions: [Instruction]
    }

    let schemaVersion = 1
    var timeline: String
    var output: String
    var durationSeconds: Double
    var tracks: [Track]
    /// Nil when the video plays as it is (one track, no dissolves).
    var videoComposition: Drawing?
    var warnings: [String]

    enum CodingKeys: String, CodingKey { case schemaVersion, timeline, output, durationSeconds, tracks, videoComposition, warnings }

    init(timeline: String, output: String, composition: Composition, videoComposition: VideoComposition?, warnings: [String]) {
        self.timeline = timeline
        self.output = output
        self.warnings = warnings
        durationSeconds = composition.duration.seconds
        tracks = composition.tracks.map { track in
            Track(trackID: track.trackID, mediaType: track.mediaType.rawValue, segments: track.segments.map { s in
                Segment(file: s.isEmpty ? nil : s.sourceURL?.path, sourceStart: s.isEmpty ? nil : s.timeMapping.source.start.seconds,
                        sourceEnd: s.isEmpty ? nil : s.timeMapping.source.end.seconds,
                        targetStart: s.targetRange.start.seconds, targetEnd: s.targetRange.end.seconds)
            })
        }
        self.videoComposition = videoComposition.map { v in
            Drawing(renderWidth: Int(v.renderSize.width.rounded()), renderHeight: Int(v.renderSize.height.rounded()),
                    frameDuration: v.frameDuration.seconds, instructions: v.instructions.map { i in
                        Instruction(start: i.timeRange.start.seconds, end: i.timeRange.end.seconds, layers: i.layerInstructions.map { l in
                            Layer(trackID: l.trackID, opacity: l.opacityChanges.map {
                                Change(start: $0.timeRange.start.seconds, end: $0.timeRange.end.seconds, from: $0.start, to: $0.end)
                            })
                        })
                    })
        }
    }

    /// Every key, the video composition as null when there is none.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schemaVersion, forKey: .schemaVersion)
        try c.encode(timeline, forKey: .timeline)
        try c.encode(output, forKey: .output)
        try c.encode(durationSeconds, forKey: .durationSeconds)
        try c.encode(tracks, forKey: .tracks)
        try c.encode(videoComposition, forKey: .videoComposition)
        try c.encode(warnings, forKey: .warnings)
    }

    /// The plan as lines for people: one per segment, then the layers.
    var text: String {
        var lines = ["\(timeline) → \(output): \(String(format: "%.3f", durationSeconds)) s"]
        for track in tracks {
            lines.append("track \(track.trackID) (\(track.mediaType))")
            for s in track.segments {
                let target = String(format: "%8.3f–%8.3f s", s.targetStart, s.targetEnd)
                if let file = s.file, let from = s.sourceStart, let to = s.sourceEnd {
                    lines.append("  \(target)  \(URL(fileURLWithPath: file).lastPathComponent) \(String(format: "%.3f–%.3f s", from, to))")
                } else {
                    lines.append("  \(target)  (empty)")
                }
            }
        }
        if let drawing = videoComposition {
            lines.append("video composition \(drawing.renderWidth)x\(drawing.renderHeight), frame \(String(format: "%.5f", drawing.frameDuration)) s")
            for instruction in drawing.instructions {
                let layers = instruction.layers.map { l in
                    "track \(l.trackID)" + l.opacity.filter { $0.start != $0.end }
                        .map { String(format: " fades %.2f→%.2f over %.3f–%.3f s", $0.from, $0.to, $0.start, $0.end) }.joined()
                }
                lines.append(String(format: "  %.3f–%.3f s: ", instruction.start, instruction.end) + layers.joined(separator: "; "))
            }
        }
        lines += warnings.map { "warning: \($0)" }
        return lines.joined(separator: "\n") + "\n"
    }
}

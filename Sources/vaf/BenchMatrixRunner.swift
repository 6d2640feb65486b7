import BenchKit
import ChildProcess
import Foundation
import VAFoundation

/// Everything one `vaf bench` invocation decided from its options.
struct BenchConfiguration: Sendable {
    var quick: Bool
    var runs: Int
    var warmups: Int
    var seconds: Double
    var syntheticSources: [SyntheticSource]
    var inputs: [String]
    var targets: [BenchTarget]
    var paths: [BenchPath]
    var sourceCodec: VideoCodec
    var workDirectory: URL
    var quality: Bool
    /// Seconds after which a run is killed.
    var timeLimit: Double
    var vaf: String
    var ffmpeg: String?
    var device: BenchDevice
}

/// Runs the matrix: makes the sources, checks which paths can run each job, runs warm-ups and
/// measured rounds with the paths interleaved (round i runs every path once before round i + 1),
/// measures quality once per job and path, and assembles the report.
struct BenchMatrixRunner {
    let configuration: BenchConfiguration
    /// Where progress lines go (stderr).
    let log: @Sendable (String) -> Void

    func run() async -> BenchReport {
        let c = configuration
        let started = ISO8601DateFormatter().string(from: Date())
        let scratch = c.workDirectory.appendingPathComponent("scratch")
        try? FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let hasHardwareOption = await transcodeHasHardwareOption(scratch: scratch)
        let commands = BenchCommands(vaf: c.vaf, ffmpeg: c.ffmpeg, device: c.device.path, transcodeHasHardwareOption: hasHardwareOption)
        let ffmpegVersion = await c.ffmpeg.asyncFlatMap { await firstLine(of: [$0, "-version"], scratch: scratch) }

        var sources: [SourceInfo] = []
        var jobs: [JobResult] = []
        for synthetic in c.syntheticSources {
            let url = synthetic.url(in: c.workDirectory.appendingPathComponent("sources"), codec: c.sourceCodec, seconds: c.seconds)
            log("source \(synthetic.name): \(FileManager.default.fileExists(atPath: url.path) ? "checking" : "generating") \(url.lastPathComponent)")
            do {
                try await synthetic.make(at: url, codec: c.sourceCodec, seconds: c.seconds)
                sources.append(try await SourceInfo.load(id: synthetic.name, url: url, synthetic: true))
            } catch {
                jobs.append(unreadable(synthetic.name, "cannot generate the source: \(error)"))
            }
        }
        for input in c.inputs {
            var id = URL(fileURLWithPath: input).lastPathComponent
            while sources.contains(where: { $0.id == id }) { id += "'" }
            do {
                sources.append(try await SourceInfo.load(id: id, url: URL(fileURLWithPath: input), synthetic: false))
            } catch {
                jobs.append(unreadable(id, "cannot read the source: \(error)"))
            }
        }
        let work = sources.flatMap { source in c.targets.map { (source, $0) } }
        for (index, (source, target)) in work.enumerated() {
            log("job \(index + 1)/\(work.count): \(source.id)/\(target.rawValue)")
            jobs.append(await runJob(source: source, target: target, commands: commands, scratch: scratch))
        }
        let ratios = BenchAnalysis.ratios(jobs)
        let settings = BenchSettings(quick: c.quick, warmups: c.warmups, runs: c.runs, seconds: c.seconds, sourceCodec: c.sourceCodec.rawValue,
                                     targets: c.targets.map(\.rawValue), paths: c.paths.map(\.rawValue), quality: c.quality)
        return BenchReport(createdAt: started, settings: settings, machine: MachineInfo.current(ffmpegVersion: ffmpegVersion, device: c.device),
                           sources: sources, jobs: jobs, ratios: ratios, targets: BenchAnalysis.targets(jobs: jobs, ratios: ratios))
    }

    /// A job row for a source that could not be made or read: every path failed with `reason`.
    private func unreadable(_ id: String, _ reason: String) -> JobResult {
        JobResult(id: "\(id)/-", source: id, target: "-", summary: reason, preset: "-", outputWidth: nil, outputHeight: nil,
                  outputFrameRate: nil, videoBitRate: nil,
                  paths: configuration.paths.map { PathResult(path: $0.rawValue, tool: $0.tool, status: .failed, reason: reason) })
    }

    /// One path of one job while it runs.
    private struct PathRun {
        let path: BenchPath
        var result: PathResult
        var command: [String]
        /// Where FFmpeg writes (ours is named by its JSON).
        var output: URL
        var progress: URL
        var active: Bool
        var succeededOnce = false
    }

    /// Plans the job, finds which paths can run it, then runs the interleaved rounds.
    private func runJob(source: SourceInfo, target: BenchTarget, commands: BenchCommands, scratch: URL) async -> JobResult {
        let c = configuration
        let id = "\(source.id)/\(target.rawValue)"
        let preset = target.preset(for: source)
        if let why = target.inapplicability(to: source) {
            return JobResult(id: id, source: source.id, target: target.rawValue, summary: "not applicable: \(why)", preset: preset.name,
                             outputWidth: nil, outputHeight: nil, outputFrameRate: nil, videoBitRate: nil,
                             paths: c.paths.map { PathResult(path: $0.rawValue, tool: $0.tool, status: .skipped, reason: why) })
        }
        let settings: JobSettings
        do {
            settings = try await JobSettings.plan(source: source, target: target)
        } catch {
            return JobResult(id: id, source: source.id, target: target.rawValue, summary: "cannot plan: \(error)", preset: preset.name,
                             outputWidth: nil, outputHeight: nil, outputFrameRate: nil, videoBitRate: nil,
                             paths: c.paths.map { PathResult(path: $0.rawValue, tool: $0.tool, status: .failed, reason: "cannot plan the export: \(error)") })
        }
        let directory = c.workDirectory.appendingPathComponent("outputs").appendingPathComponent("\(source.id)-\(target.rawValue)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let fileType = target.fileType(for: source)

        var runs: [PathRun] = []
        for path in c.paths {
            let output = directory.appendingPathComponent("\(path.rawValue).\(fileType.fileExtension)")
            let progress = scratch.appendingPathComponent("progress-\(source.id)-\(target.rawValue)-\(path.rawValue).txt")
            var result = PathResult(path: path.rawValue, tool: path.tool, status: .measured)
            if path.usesDevice { result.label = c.device.label }
            let command: Result<[String], BenchSkip>
            if path.usesDevice && c.device.path == nil {
                command = .failure(BenchSkip("no usable VA-API device: \(c.device.problem ?? "none found")"))
            } else if path.usesDevice && target == .remux {
                command = .failure(BenchSkip("a remux decodes and encodes nothing: there is no device work"))
            } else if path == .ffmpegVAAPI, let codec = settings.videoCodec, !c.device.encodes(codec) {
                command = .failure(BenchSkip("the device lists no \(codec.rawValue) encode entry point, so ffmpeg has no *_vaapi encoder to run"))
            } else if path.tool == "vaf" {
                command = commands.ours(path, source: source, target: target, directory: directory, name: path.rawValue)
            } else {
                command = commands.ffmpeg(path, source: source, target: target, settings: settings, output: output, progress: progress)
            }
            switch command {
            case .failure(let skip):
                result.status = .skipped
                result.reason = skip.reason
                runs.append(PathRun(path: path, result: result, command: [], output: output, progress: progress, active: false))
            case .success(let arguments):
                result.command = arguments
                var run = PathRun(path: path, result: result, command: arguments, output: output, progress: progress, active: true)
                if path.tool == "vaf", let skip = await dryRun(arguments, path: path, scratch: scratch) {
                    run.result.status = .skipped
                    run.result.reason = skip.reason
                    run.active = false
                }
                runs.append(run)
            }
        }

        let rounds = c.warmups + c.runs
        for round in 0..<rounds {
            let measured = round >= c.warmups
            for i in runs.indices where runs[i].active {
                let label = measured ? "run \(round - c.warmups + 1)/\(c.runs)" : "warm-up \(round + 1)/\(c.warmups)"
                await runOnce(&runs[i], round: measured ? round - c.warmups : nil, source: source, scratch: scratch)
                let r = runs[i].result
                if let last = r.runs.last, measured, runs[i].active {
                    log(String(format: "  %@ %@ %@: %.1f fps, %.2f s", id, runs[i].path.rawValue, label, last.fps, last.wallSeconds))
                } else if !runs[i].active {
                    log("  \(id) \(runs[i].path.rawValue) \(label): \(r.status.rawValue): \(r.reason ?? "")")
                }
            }
        }
        let paths = runs.map { finish($0.result, source: source) }
        return JobResult(id: id, source: source.id, target: target.rawValue, summary: settings.summary(target: target), preset: preset.name,
                         outputWidth: settings.width, outputHeight: settings.height, outputFrameRate: settings.frameRate,
                         videoBitRate: settings.videoBitRate, paths: paths)
    }

    /// `vaf transcode --dry-run --json` with the run's options: nil when the plan takes the
    /// requested path, else why the path cannot run (the child's own words).
    private func dryRun(_ command: [String], path: BenchPath, scratch: URL) async -> BenchSkip? {
        let arguments = Array(command.dropFirst()) + ["--dry-run"]
        guard let child = try? await ChildProcess.run(command[0], arguments, environment: ProcessInfo.processInfo.environment,
                                                         scratchDirectory: scratch, timeLimit: 120) else {
            return BenchSkip("cannot start \(command[0])")
        }
        guard let row = Self.firstRow(child.stdout) else { return BenchSkip(child.failure ?? "the dry run printed no plan") }
        if row["status"] as? String != "planned" {
            return BenchSkip((row["error"] as? String) ?? child.failure ?? "the dry run did not plan the export")
        }
        if let planned = row["path"] as? String, planned != path.rawValue {
            return BenchSkip("requested \(path.rawValue), but the plan runs \(planned): \(row["pathReason"] as? String ?? "no reason given")")
        }
        return nil
    }

    /// What a vaf run says of itself in its JSON report: its frames and host bytes (SoftVA's own
    /// count where the driver counts), its output, encoder and the path it ran. Nil once the
    /// run is failed for a missing or failed report.
    private func readReport(of run: inout PathRun, child: ChildProcessResult, counters: URL) -> (frames: Int?, hostBytes: Int64?)? {
        let c = configuration
        guard let row = Self.firstRow(child.stdout) else {
            fail(&run, child.failure ?? "the transcode printed no report")
            return nil
        }
        guard row["status"] as? String == "completed" else {
            fail(&run, (row["error"] as? String) ?? child.failure ?? "the transcode did not complete")
            return nil
        }
        let frames = row["frames"] as? Int
        // On SoftVA the driver's own count of host image bytes is the independent witness;
        // our report's count is taken only where no driver counts.
        let hostBytes = c.device.isSoftVA && run.path.usesDevice ? Self.softVAHostBytes(counters)
            : (row["hostTransferBytes"] as? Int).map(Int64.init)
        if let path = row["output"] as? String { run.output = URL(fileURLWithPath: path) }
        run.result.encoder = row["encoder"] as? String
        let actual = row["path"] as? String
        run.result.actualPath = actual
        if let actual, actual != run.path.rawValue {
            run.result.status = .mismatch
            run.result.reason = "requested \(run.path.rawValue), ran \(actual): \(row["pathReason"] as? String ?? "no reason given")"
        }
        return (frames, hostBytes)
    }

    /// One run of one path; measured runs (with `round`) are recorded, the first one also gets quality.
    private func runOnce(_ run: inout PathRun, round: Int?, source: SourceInfo, scratch: URL) async {
        let c = configuration
        var environment = ProcessInfo.processInfo.environment
        let counters = scratch.appendingPathComponent("softva-counters-\(UUID().uuidString.prefix(8)).txt")
        if c.device.isSoftVA && run.path.usesDevice { environment["SOFTVA_COUNTERS"] = counters.path }
        defer { try? FileManager.default.removeItem(at: counters) }
        try? FileManager.default.removeItem(at: run.progress)
        let child: ChildProcessResult
        do {
            child = try await ChildProcess.run(run.command[0], Array(run.command.dropFirst()), environment: environment,
                                                  scratchDirectory: scratch, timeLimit: c.timeLimit)
        } catch {
            fail(&run, "\(error)")
            return
        }
        var frames: Int?
        var hostBytes: Int64?
        if run.path.tool == "vaf" {
            guard let report = readReport(of: &run, child: child, counters: counters) else { return }
            (frames, hostBytes) = report
        } else {
            guard child.succeeded else {
                fail(&run, child.failure ?? "ffmpeg failed")
                return
            }
            frames = Self.progressFrames(run.progress)
            run.result.encoder = run.command.firstIndex(of: "-c:v").map { run.command[$0 + 1] } ?? "copy"
            if c.device.isSoftVA && run.path.usesDevice { hostBytes = Self.softVAHostBytes(counters) }
            if hostBytes != nil { run.result.hostTransferSource = "softva" }
        }
        if run.path.tool == "vaf" && hostBytes != nil {
            run.result.hostTransferSource = c.device.isSoftVA && run.path.usesDevice ? "softva" : "vaf"
        }
        run.succeededOnce = true
        guard let round else { return }
        let output = run.output
        let outputBytes = (try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? NSNumber)?.int64Value ?? 0
        let measurement = RunMeasurement(round: round, wallSeconds: child.wallSeconds, userSeconds: child.userSeconds,
                                         systemSeconds: child.systemSeconds, peakRSSBytes: child.peakRSSBytes,
                                         frames: frames ?? source.frames, mediaSeconds: source.seconds, outputBytes: outputBytes,
                                         hostTransferBytes: hostBytes)
        run.result.runs.append(measurement)
        // The frame count is the tool's own word; ffprobe counts the output's video packets
        // once per path, and a difference makes the row a mismatch.
        if run.result.runs.count == 1, let frames, let probe = ChildProcess.which("ffprobe"),
           let child = try? await ChildProcess.run(probe, ["-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                                                          "stream=nb_read_packets", "-of", "csv=p=0", output.path],
                                                  scratchDirectory: scratch, timeLimit: 120),
           let counted = Int(child.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), counted != frames {
            run.result.status = .mismatch
            run.result.reason = "\(run.path.tool) reported \(frames) frames, ffprobe counts \(counted) in the output"
        }
        if run.result.runs.count == 1 && c.quality {
            do {
                run.result.quality = try await BenchQuality.measure(output: output, source: URL(fileURLWithPath: source.path),
                                                                    ffmpeg: c.ffmpeg, scratch: scratch)
            } catch {
                run.result.qualityProblem = "\(error)"
            }
        }
    }

    /// Stops a path after a failed run. A failing FFmpeg baseline is a failure too, not a skip:
    /// a comparison whose baseline did not run must not read as one that was not asked for.
    private func fail(_ run: inout PathRun, _ reason: String) {
        run.active = false
        run.result.status = .failed
        run.result.reason = reason
    }

    /// The path's statistics over its measured runs.
    private func finish(_ result: PathResult, source: SourceInfo) -> PathResult {
        var r = result
        guard !r.runs.isEmpty, r.status == .measured || r.status == .mismatch else { return r }
        r.fps = Statistic(r.runs.map(\.fps))
        r.speed = Statistic(r.runs.map(\.speed))
        r.wallSeconds = Statistic(r.runs.map(\.wallSeconds))
        r.cpuSeconds = Statistic(r.runs.map(\.cpuSeconds))
        r.peakRSSBytes = Statistic(r.runs.map { Double($0.peakRSSBytes) })
        r.frames = r.runs.first?.frames
        r.outputBytes = r.runs.first?.outputBytes
        if let bytes = r.outputBytes, source.seconds > 0 { r.bitRate = Double(bytes) * 8 / source.seconds }
        if let host = Statistic(r.runs.compactMap { $0.hostTransferBytes.map(Double.init) }) {
            r.hostTransferBytes = Int64(host.median)
            if let frames = r.frames, frames > 0 { r.hostTransferBytesPerFrame = host.median / Double(frames) }
        }
        return r
    }

    /// The first object `vaf transcode --json` printed: its first JSON line, or the first
    /// element of the one array that builds before JSON lines printed.
    static func firstRow(_ stdout: String) -> [String: Any]? {
        for line in stdout.split(separator: "\n") where line.hasPrefix("{") {
            if let row = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] { return row }
        }
        guard let start = stdout.firstIndex(of: "[") else { return nil }
        let json = (try? JSONSerialization.jsonObject(with: Data(stdout[start...].utf8))) as? [[String: Any]]
        return json?.first
    }

    /// The last `frame=N` of an FFmpeg `-progress` file.
    static func progressFrames(_ url: URL) -> Int? {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
        return text.split(separator: "\n").last { $0.hasPrefix("frame=") }.flatMap { Int($0.dropFirst("frame=".count)) }
    }

    /// `host_transfer_bytes` from SoftVA's counters file.
    static func softVAHostBytes(_ url: URL) -> Int64? {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
        return text.split(separator: "\n").last { $0.hasPrefix("host_transfer_bytes=") }
            .flatMap { Int64($0.dropFirst("host_transfer_bytes=".count)) }
    }

    /// Whether `vaf transcode` takes `--hw` (the lead's hardware paths).
    private func transcodeHasHardwareOption(scratch: URL) async -> Bool {
        let help = try? await ChildProcess.run(configuration.vaf, ["transcode", "--help"], environment: ProcessInfo.processInfo.environment,
                                                  scratchDirectory: scratch, timeLimit: 60)
        return help?.stdout.contains("--hw ") == true || help?.stdout.contains("--hw <") == true
    }

    /// The first line a program prints, e.g. `ffmpeg -version`.
    private func firstLine(of command: [String], scratch: URL) async -> String? {
        let child = try? await ChildProcess.run(command[0], Array(command.dropFirst()), environment: ProcessInfo.processInfo.environment,
                                                   scratchDirectory: scratch, timeLimit: 60)
        return child?.stdout.split(separator: "\n").first.map(String.init)
    }
}

extension Optional {
    /// `flatMap` for an async transform.
    func asyncFlatMap<U>(_ transform: (Wrapped) async -> U?) async -> U? {
        guard let value = self else { return nil }
        return await transform(value)
    }
}

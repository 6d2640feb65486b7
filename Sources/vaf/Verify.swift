import ArgumentParser
import Foundation
import VAFoundation
import HardwareAcceleration

extension Vaf {
    /// `vaf verify`: a health check of media files, by decoding every packet of every track.
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check media files for damage by decoding every packet of every track.",
            discussion: """
                Each file is read to its end and every audio and video packet decoded (video on the \
                VA-API device when there is one and its driver takes the stream (where damage inside a \
                picture goes unreported: --hw off checks it in software); subtitle and data \
                tracks are read). One line per file gives its verdict: ok, damaged or unreadable, \
                with what was found: packets the decoder refused and frames it concealed, with their \
                times; data cut short or unreadable from some point on; a track or the file ending \
                more than 0.5 s before it declares; timestamps that go back, or leave a gap of more \
                than 10 s (ffmpeg's discontinuity threshold: a variable frame rate holds pictures for seconds).

                Batches take files and directories (walked for media files), --jobs, shards and \
                --json lines (schema: Schemas/vaf-verify.schema.json). With --journal DIR each \
                verdict is recorded in DIR/.vaf-verify-journal.jsonl, and a later run skips the files \
                recorded there as verified unchanged, with their recorded verdict.

                Exit status: 0 when every file is ok; 65 when any is damaged or unreadable; 75 when \
                a check could not run for a reason that may pass (--hw require without a device, an \
                I/O error); 64 for a usage error; 130 after Ctrl-C (SIGINT), 143 after SIGTERM, 129 \
                after SIGHUP and 141 when stdout's reader goes away.
                """
        )

        @Argument(help: "Media files and directories to check.")
        var inputs: [String] = []

        @Option(help: ArgumentHelp("Files checked at once.", valueName: "n"))
        var jobs: Int = 1

        @Option(help: ArgumentHelp("VA-API use: auto (decode video on the device when there is one), require (fail without one) or off.",
                                   valueName: "mode"))
        var hw: String = "auto"

        @Option(help: ArgumentHelp("VA-API device: a render node or an X11 display.", valueName: "path"))
        var device: String?

        @Option(help: ArgumentHelp("Record verdicts in DIR/.vaf-verify-journal.jsonl and skip files recorded there as verified, unchanged since.",
                                   valueName: "dir"))
        var journal: String?

        @Flag(help: "Print a JSON report, one object per file, on stdout.")
        var json = false

        @Option(help: ArgumentHelp("Take shard I of N (0-based) of the file list.", valueName: "I/N"))
        var shard: String?

        @Option(help: ArgumentHelp("The number of shards a scheduler's index counts (Kubernetes Indexed Jobs).", valueName: "n"))
        var shardCount: Int?

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard !inputs.isEmpty else { throw ValidationError("Give at least one media file or directory.") }
            guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1.") }
            guard [HardwarePolicy.auto, .require, .off].contains(HardwarePolicy(rawValue: hw.lowercased())) else {
                throw ValidationError("--hw takes auto, require or off.")
            }
            if device != nil && hw.lowercased() == "off" { throw ValidationError("--device names a device for --hw auto or require, not --hw off.") }
            try ShardAssignment.checkOptions(shard: shard, shardCount: shardCount)
        }

        func run() async throws {
            logging.apply()
            let assignment = try ShardAssignment.forThisProcess(option: shard, countOption: shardCount)
            var files: [BatchInput]
            do { files = try InputCollector.collect(inputs, manifests: []) } catch let error as MediaError {
                FileHandle.standardError.write(Data("vaf verify: \(JobReport.oneLine(error.description))\n".utf8))
                throw ExitCode(JobReport.exitBadInput)
            }
            let total = files.count
            if let assignment {
                files = assignment.shard.select(files)
                if !logging.quiet {
                    FileHandle.standardError.write(Data("vaf: shard \(assignment.shard) from \(assignment.summary): \(files.count) of \(total) files\n".utf8))
                }
            }
            if let journal {
                do { try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: true) } catch {
                    FileHandle.standardError.write(Data("vaf verify: cannot create the journal's directory \(journal): \(error.localizedDescription)\n".utf8))
                    throw ExitCode(JobReport.exitTemporaryFailure)
                }
            }
            let job = VerifyJob(hardware: HardwarePolicy(rawValue: hw.lowercased()) ?? .auto, device: device,
                                journal: journal.map { ResumeJournal(directory: $0, fileName: ResumeJournal.verifyFileName) }, shard: assignment)
            let lines = JSONLines(enabled: json)
            let quiet = logging.quiet
            let (reports, signal) = await BatchRunner.cancellingOnSignals(Task { [jobs] in
                await BatchRunner.runEach(files, concurrency: jobs) { input in
                    await job.run(input.path)
                } ended: { report in
                    report.print(lines, quiet: quiet)
                } unstarted: { input in
                    var report = VerifyReport(input: input.path, status: .cancelled)
                    report.error = "interrupted before it started"
                    report.print(lines, quiet: quiet)
                    return report
                }
            })
            if !quiet { FileHandle.standardError.write(Data((VerifyReport.summary(reports) + "\n").utf8)) }
            if let signal { throw ExitCode(128 + signal) }
            if reports.contains(where: { $0.status == .cancelled }) { throw ExitCode(130) }
            if let code = VerifyReport.exitCode(reports) { throw ExitCode(code) }
        }
    }
}

/// How `vaf verify` checks one file.
struct VerifyJob: Sendable {
    var hardware: HardwarePolicy
    var device: String?
    var journal: ResumeJournal?
    var shard: ShardAssignment?

    /// Failures that say what the file is: no demuxer or decoder reads it.
    static let findings: Set<MediaError.Code> = [.notMediaFile, .corruptOrTruncated, .noTracks, .unsupported, .decodeFailed]

    /// Everything besides the file that decides a verdict, for the journal.
    var settingsText: String { "verify hw=\(hardware.rawValue)" }

    func fingerprint(_ input: String) -> String { ResumeJournal.fingerprint(ResumeJournal.identity(ofInput: input) + [settingsText]) }

    /// Checks `input`; never throws: a check that cannot run becomes the report's status.
    func run(_ input: String) async -> VerifyReport {
        var report = VerifyReport(input: input, status: .failed)
        report.shard = shard
        report.inputBytes = Asset.fileSize(atPath: input)
        let plan = fingerprint(input)
        if let journal, let recorded = journal.recordedVerdict(of: input, plan: plan),
           let verdict = AssetVerification.Verdict(rawValue: recorded) {
            report.status = .skipped
            report.verdict = verdict
            report.error = "verified earlier, unchanged since: \(recorded)"
            return report
        }
        let verifier = AssetVerifier(url: URL(fileURLWithPath: input))
        if hardware != .off {
            do { verifier.hardwareDevice = try VADevice.shared(device) } catch {
                if hardware == .require {
                    report.error = "\(input): --hw require: \(error.message)"
                    report.errorCode = MediaError.Code.hardwareFailed.rawValue
                    return report
                }
            }
        }
        let started = ContinuousClock.now
        do {
            let result = try await verifier.verify()
            report.fill(result)
        } catch let error as MediaError where error.code == .cancelled || Task.isCancelled {
            report.status = .cancelled
            report.error = error.description
            return report
        } catch let error as MediaError where Self.findings.contains(error.code) {
            // A file no demuxer or decoder can read is the check's finding: unreadable.
            report.status = .completed
            report.verdict = .unreadable
            report.problems = [error.description]
        } catch {
            // Not a finding about the file's media (missing, a device, the disk, memory): the
            // check could not run, and may on another try.
            let failure = error as? MediaError
            report.error = failure?.description ?? "\(input): \(error)"
            report.errorCode = (failure?.code ?? .ioError).rawValue
            return report
        }
        report.elapsedSeconds = (ContinuousClock.now - started).seconds
        if let verdict = report.verdict { journal?.record(output: input, plan: plan, verdict: verdict.rawValue) }
        return report
    }
}

/// One file's line of `vaf verify` (schema: Schemas/vaf-verify.schema.json).
struct VerifyReport: Encodable, Sendable {
    enum Status: String, Encodable, Sendable { case completed, skipped, failed, cancelled }

    struct Track: Encodable, Sendable {
        struct Jump: Encodable, Sendable {
            var at: Double
            var by: Double
        }

        var stream: Int
        var mediaType: String
        var codec: String
        var decoder: String?
        var packets: Int
        var frames: Int
        /// Times in seconds; null where the packet had none.
        var damagedPackets: [Double?]
        var concealedFrames: [Double?]
        var timestampJumps: [Jump]
        var start: Double?
        var end: Double?
        var declaredEnd: Double?
        var missingSeconds: Double?
        /// Video samples the container's index lists that could not be read.
        var unreadSamples: Int?
        var undecodable: String?
    }

    var schemaVersion = 1
    var input: String
    var status: Status
    var verdict: AssetVerification.Verdict?
    var problems: [String] = []
    var tracks: [Track] = []
    var readFailure: String?
    var decodedOnDevice: Bool?
    var notes: [String] = []
    var inputBytes: Int64?
    var elapsedSeconds: Double?
    var error: String?
    var errorCode: String?
    var shard: ShardAssignment?

    init(input: String, status: Status) {
        self.input = input
        self.status = status
    }

    mutating func fill(_ result: AssetVerification) {
        status = .completed
        verdict = result.verdict
        problems = result.problems
        readFailure = result.readFailure
        decodedOnDevice = result.decodedOnDevice
        notes = result.notes
        tracks = result.tracks.map { t in
            func seconds(_ time: MediaTime?) -> Double? { time.flatMap { $0.isNumeric ? $0.seconds : nil } }
            return Track(stream: t.streamIndex, mediaType: t.mediaType.rawValue, codec: t.codec, decoder: t.decoder, packets: t.packets,
                         frames: t.frames, damagedPackets: t.damagedPackets.map(seconds), concealedFrames: t.concealedFrames.map(seconds),
                         timestampJumps: t.timestampJumps.map { Track.Jump(at: $0.at.seconds, by: $0.by.seconds) },
                         start: seconds(t.start), end: seconds(t.end), declaredEnd: seconds(t.declaredEnd),
                         missingSeconds: seconds(t.missing), unreadSamples: t.unreadSamples, undecodable: t.undecodable)
        }
    }

    /// The JSON line, or the human line: "FILE: ok (video h264 300 frames, audio aac 431 frames)"
    /// on stdout, a failure on stderr.
    func print(_ lines: JSONLines, quiet: Bool) {
        if lines.enabled { return lines.write(self) }
        let name = JobReport.oneLine(input)
        switch (status, verdict) {
        case (.completed, .some(let verdict)):
            let detail = verdict == .ok
                ? " (" + tracks.filter { $0.decoder != nil }.map { "\($0.mediaType) \($0.codec) \($0.frames) frames" }.joined(separator: ", ") + ")"
                : ": " + problems.map(JobReport.oneLine).joined(separator: "; ")
            StandardOutput.write(Data("\(name): \(verdict.rawValue)\(detail)\n".utf8))
        case (.skipped, _):
            if !quiet { StandardOutput.write(Data("\(name): skipped: \(error ?? "")\n".utf8)) }
        default:
            FileHandle.standardError.write(Data("\(name): \(status.rawValue): \(JobReport.oneLine(error ?? ""))\n".utf8))
        }
    }

    /// "verified 12 files: 10 ok, 1 damaged, 1 unreadable" (with skipped, failed and cancelled ones when any).
    static func summary(_ reports: [VerifyReport]) -> String {
        let verdicts = AssetVerification.Verdict.allCases.compactMap { v -> String? in
            let n = reports.filter { $0.status == .completed && $0.verdict == v }.count
            return n > 0 ? "\(n) \(v.rawValue)" : nil
        }
        let others = [VerifyReport.Status.skipped, .failed, .cancelled].compactMap { s -> String? in
            let n = reports.filter { $0.status == s }.count
            return n > 0 ? "\(n) \(s.rawValue)" : nil
        }
        return "verified \(reports.count) file\(reports.count == 1 ? "" : "s"): " + (verdicts + others).joined(separator: ", ")
    }

    /// 75 when a check could not run for a temporary reason, else 65 when a file is damaged,
    /// unreadable or could not be checked; nil when every file is ok.
    static func exitCode(_ reports: [VerifyReport]) -> Int32? {
        if reports.contains(where: { $0.status == .failed && $0.errorCode.map(JobReport.temporaryFailures.contains) == true }) {
            return JobReport.exitTemporaryFailure
        }
        if reports.contains(where: { $0.status == .failed || ($0.verdict != nil && $0.verdict != .ok) }) { return JobReport.exitBadInput }
        return nil
    }
}

extension AssetVerification.Verdict: Encodable {}

import Foundation
import VAFoundation

/// What a batch recorded about the outputs it completed, so a re-run resumes only those made
/// from the same input with the same settings: `.vaf-journal.jsonl` in the output directory,
/// one JSON line per completed output (`{"output": …, "plan": …, "bytes": …}`), the last line
/// for an output winning. Each line is appended with one `write` under an exclusive `flock`
/// of the journal, and read under a shared one, so runs and shards sharing the directory never
/// tear or lose a line, on NFS too (where `O_APPEND` alone is not atomic across clients and
/// Linux emulates `flock` with whole-file locks the server keeps).
final class ResumeJournal: Sendable {
    static let fileName = ".vaf-journal.jsonl"
    /// `vaf verify`'s journal, apart from the exports' so a folder can hold both without one
    /// command's lines standing for the other's.
    static let verifyFileName = ".vaf-verify-journal.jsonl"

    struct Entry: Codable, Equatable {
        /// The output's path relative to the output directory.
        var output: String
        /// The fingerprint of the input and settings that made it.
        var plan: String
        /// Its size when it was completed: a file changed since is not trusted. `started` for a
        /// line that says a run began making it.
        var bytes: Int64
        /// The run that wrote a `started` line; nil on completed lines.
        var run: String?
        /// What `vaf verify` found in the file the line names (there the input itself); nil on
        /// other commands' lines.
        var verdict: String?
    }

    /// The `bytes` of a line that records a start, not a completion.
    static let started: Int64 = -1

    let directory: URL
    /// The journal's name in `directory`.
    let fileName: String
    /// Completed outputs, the last line for each winning.
    private let entries: Locked<[String: Entry]>
    /// Who started making each output, and with which plan.
    private let starts = Locked<[String: [Entry]]>([:])
    /// This process's name in `started` lines.
    let runID = "\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"

    /// The journal `fileName` of `directory`, with what earlier runs recorded (none when it has no journal).
    init(directory: String, fileName: String = ResumeJournal.fileName) {
        self.directory = URL(fileURLWithPath: directory).standardizedFileURL
        self.fileName = fileName
        entries = Locked([:])
        reload()
    }

    private var path: String { directory.appendingPathComponent(fileName).path }

    /// Reads the journal again: what other runs on the directory recorded since.
    func reload() {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var locked: Int32
        repeat { locked = flock(fd, LOCK_SH) } while locked != 0 && errno == EINTR
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            data.append(contentsOf: buffer[0..<count])
        }
        var found: [String: Entry] = [:]
        var begun: [String: [Entry]] = [:]
        for line in data.split(separator: UInt8(ascii: "\n")) {
            guard let entry = try? JSONDecoder().decode(Entry.self, from: Data(line)) else { continue }
            if entry.bytes == Self.started { begun[entry.output, default: []].append(entry) } else { found[entry.output] = entry }
        }
        entries.withLock { $0 = found }
        starts.withLock { $0 = begun }
    }

    /// What a run should do with an output that already exists.
    enum Decision: Equatable {
        /// Made from this input with these settings and unchanged since: skip it.
        case done
        /// Made by vaf with other settings (or changed since): make it again.
        case stale
        /// Not made by vaf as far as the journal knows: leave it alone.
        case unknown
    }

    /// What to do with `output`, which exists: from what the journal held when last read, and
    /// read again when it does not know the output (another run may have just made it).
    func decision(forExisting output: String, plan: String) -> Decision {
        if entries.withLock({ $0[relative(output)] }) == nil { reload() }
        guard let entry = entries.withLock({ $0[relative(output)] }) else { return .unknown }
        let bytes = Asset.fileSize(atPath: output)
        return entry.plan == plan && entry.bytes == bytes ? .done : .stale
    }

    /// The verdict recorded for `file` when it was verified with `plan` and has not changed
    /// size since; nil when it was not.
    func recordedVerdict(of file: String, plan: String) -> String? {
        guard decision(forExisting: file, plan: plan) == .done else { return nil }
        return entries.withLock { $0[relative(file)]?.verdict }
    }

    /// Whether `output`, which appeared while this run made it, is another run's making from the
    /// same plan (a retried Job's first pod, a second shard on the folder): completed with it
    /// by the journal, or started with it by another run (whose completion line may still be
    /// on its way: it moved the file into place just before).
    func madeByAnotherRun(_ output: String, plan: String) -> Bool {
        reload()
        let key = relative(output)
        if let done = entries.withLock({ $0[key] }), done.plan == plan, done.bytes == Asset.fileSize(atPath: output) { return true }
        return starts.withLock { $0[key] ?? [] }.contains { $0.plan == plan && $0.run != runID }
    }

    /// Records that this run starts making `output` with `plan`.
    func recordStart(output: String, plan: String) {
        append(Entry(output: relative(output), plan: plan, bytes: Self.started, run: runID))
    }

    /// Records a completed output, and for a verified file its verdict.
    func record(output: String, plan: String, verdict: String? = nil) {
        guard let bytes = Asset.fileSize(atPath: output) else { return }
        let entry = Entry(output: relative(output), plan: plan, bytes: bytes, verdict: verdict)
        entries.withLock { $0[entry.output] = entry }
        append(entry)
    }

    /// Appends `entry` as one line, under the journal's exclusive lock.
    private func append(_ entry: Entry) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard var line = try? encoder.encode(entry) else { return }
        line.append(UInt8(ascii: "\n"))
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var locked: Int32
        repeat { locked = flock(fd, LOCK_EX) } while locked != 0 && errno == EINTR
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    private func relative(_ output: String) -> String {
        let path = URL(fileURLWithPath: output).standardizedFileURL.path
        let base = directory.path.hasSuffix("/") ? directory.path : directory.path + "/"
        return path.hasPrefix(base) ? String(path.dropFirst(base.count)) : path
    }
}

extension BatchJob {
    /// A fingerprint of everything that decides this job's output: the input's identity (its
    /// real path, size and modification time) and every setting (`ResumeJournal.fingerprint`).
    var planFingerprint: String {
        let fields: [String] = ResumeJournal.identity(ofInput: input) + [
            "preset=\(preset.name)", "type=\(fileType.rawValue)", "frameRate=\(frameRate)",
            "range=\(timeRange.map { "\($0.start.value)/\($0.start.timescale)+\($0.duration.value)/\($0.duration.timescale)" } ?? "all")",
            "size=\(size.map { "\($0.width)x\($0.height)" } ?? "preset")", "videoCodec=\(videoCodec?.rawValue ?? "preset")",
            "audioCodec=\(audioCodec?.rawValue ?? "preset")", "videoBitRate=\(videoBitRate.map(String.init) ?? "preset")",
            "quality=\(quality.map(String.init) ?? "none")", "speed=\(speed?.rawValue ?? "default")",
            "audioBitRate=\(audioBitRate.map(String.init) ?? "preset")",
        ] + (audioSelection.map { ["audio=\($0.description)"] } ?? [])
            + (subtitleSelection == .all ? [] : ["subtitles=\(subtitleSelection.description)"])
            + (subtitlesBurnedIn.map { ["burnSubtitles=\($0.description)"] } ?? [])
            + (loudness.map { ["loudness=\($0.description)"] } ?? []) + (watermark.map { ["watermark=\($0.url.path)@\($0.origin.x),\($0.origin.y)*\($0.opacity)"] } ?? [])
            + (frameCountedRange.map { ["rangeInFrames=\($0.canonical)"] } ?? [])
        return ResumeJournal.fingerprint(fields)
    }
}

extension ResumeJournal {
    /// What identifies an input file: its real path, size and modification time.
    static func identity(ofInput input: String) -> [String] {
        let url = URL(fileURLWithPath: input).resolvingSymlinksInPath()
        let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
        let modified = (attributes?[.modificationDate] as? Date).map { String(Int64($0.timeIntervalSince1970 * 1000)) } ?? "?"
        return ["input=\(url.path)", "bytes=\(Asset.fileSize(atPath: url.path).map(String.init) ?? "?")", "modified=\(modified)"]
    }

    /// FNV-1a 64 of the fields, one a line: stable across runs and machines, which Swift's
    /// `Hasher` is not.
    static func fingerprint(_ fields: [String]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in fields.joined(separator: "\n").utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}

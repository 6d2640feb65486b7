import Foundation
import VAFoundation

/// What a batch recorded about the outputs it completed, so a re-run resumes only those made
/// from the same input with the same settings: `.vaf-journal.jsonl` in the output directory,
/// one JSON line per completed output (`{"output": …, "plan": …, "bytes": …}`), the last line
/// for an output winning. Lines are appended with one `write` each (O_APPEND), so several
/// jobs and several shards sharing the directory never interleave them.
final class ResumeJournal: Sendable {
    static let fileName = ".vaf-journal.jsonl"

    struct Entry: Codable, Equatable {
        /// The output's path relative to the output directory.
        var output: String
        /// The fingerprint of the input and settings that made it.
        var plan: String
        /// Its size when it was completed: a file changed since is not trusted.
        var bytes: Int64
    }

    let directory: URL
    private let entries: Locked<[String: Entry]>

    /// The journal of `directory`, with what earlier runs recorded (none when it has no journal).
    init(directory: String) {
        self.directory = URL(fileURLWithPath: directory).standardizedFileURL
        var found: [String: Entry] = [:]
        if let text = try? String(contentsOf: self.directory.appendingPathComponent(Self.fileName), encoding: .utf8) {
            for line in text.split(separator: "\n") {
                if let entry = try? JSONDecoder().decode(Entry.self, from: Data(line.utf8)) { found[entry.output] = entry }
            }
        }
        entries = Locked(found)
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

    func decision(forExisting output: String, plan: String) -> Decision {
        guard let entry = entries.withLock({ $0[relative(output)] }) else { return .unknown }
        let bytes = Asset.fileSize(atPath: output)
        return entry.plan == plan && entry.bytes == bytes ? .done : .stale
    }

    /// Records a completed output.
    func record(output: String, plan: String) {
        guard let bytes = Asset.fileSize(atPath: output) else { return }
        let entry = Entry(output: relative(output), plan: plan, bytes: bytes)
        entries.withLock { $0[entry.output] = entry }
        guard var line = try? JSONEncoder().encode(entry) else { return }
        line.append(UInt8(ascii: "\n"))
        let path = directory.appendingPathComponent(Self.fileName).path
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
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
    /// real path, size and modification time) and every setting. FNV-1a 64 of a canonical text:
    /// stable across runs and machines, which Swift's `Hasher` is not.
    var planFingerprint: String {
        let url = URL(fileURLWithPath: input).resolvingSymlinksInPath()
        let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
        let modified = (attributes?[.modificationDate] as? Date).map { String(Int64($0.timeIntervalSince1970 * 1000)) } ?? "?"
        let fields: [String] = [
            "input=\(url.path)", "bytes=\(Asset.fileSize(atPath: url.path).map(String.init) ?? "?")", "modified=\(modified)",
            "preset=\(preset.name)", "type=\(fileType.rawValue)", "frameRate=\(frameRate)",
            "range=\(timeRange.map { "\($0.start.value)/\($0.start.timescale)+\($0.duration.value)/\($0.duration.timescale)" } ?? "all")",
            "size=\(size.map { "\($0.width)x\($0.height)" } ?? "preset")", "videoCodec=\(videoCodec?.rawValue ?? "preset")",
            "audioCodec=\(audioCodec?.rawValue ?? "preset")", "videoBitRate=\(videoBitRate.map(String.init) ?? "preset")",
            "quality=\(quality.map(String.init) ?? "none")", "speed=\(speed?.rawValue ?? "default")",
            "audioBitRate=\(audioBitRate.map(String.init) ?? "preset")",
        ] + (watermark.map { ["watermark=\($0.url.path)@\($0.origin.x),\($0.origin.y)*\($0.opacity)"] } ?? [])
            + (frameCountedRange.map { ["rangeInFrames=\($0.canonical)"] } ?? [])
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in fields.joined(separator: "\n").utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}

import ArgumentParser
import Foundation
import VAFoundation

extension Vaf {
    /// `vaf info`: what each file holds, for people (a summary) or programs (`--json`).
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the container, duration, tracks and metadata of media files.",
            discussion: """
                With --json, prints one JSON object per line, per file as it is read; the schema \
                is Schemas/vaf-info.schema.json (README.md, "vaf info --json"). A file that cannot \
                be read gets an "error" object instead and its one-line error goes to stderr; the \
                others are still reported. Exit status: 0 when every file was read, 1 when any failed.
                """
        )

        @Argument(help: "Media files to inspect.")
        var files: [String]

        @Flag(help: "Print JSON instead of the readable summary.")
        var json = false

        @Flag(help: "Read every packet's timestamp for exact durations and frame timing (one pass over each file).")
        var precise = false

        func run() async throws {
            var failed = false
            let lines = JSONLines(enabled: json)
            for file in files {
                let (report, error) = await InfoReport.make(path: file, precise: precise)
                if let error {
                    failed = true
                    FileHandle.standardError.write(Data("vaf: \(error.description)\n".utf8))
                }
                lines.write(report)
                if !json, error == nil { print(report.summary, terminator: "") }
            }
            if failed { throw ExitCode(1) }
        }
    }
}

extension InfoReport {
    /// The readable summary: one header line per file, one line per track.
    var summary: String {
        var lines = [path]
        var container = "  container  \(self.container ?? "?")"
        if let long = containerLongName { container += " (\(long))" }
        lines.append(container)
        var overview = "  duration   \(durationSeconds.map { formatSeconds($0) } ?? "unknown")"
        if let fileSize { overview += ", \(formatBytes(fileSize))" }
        if let bitRate { overview += ", \(formatRate(bitRate))" }
        lines.append(overview)
        for t in tracks {
            var line = "  track \(t.trackID)".padding(toLength: 13, withPad: " ", startingAt: 0)
            line += t.mediaType.padding(toLength: 9, withPad: " ", startingAt: 0)
            line += t.codec ?? t.codecTag.map { "\($0) (no decoder)" } ?? "unknown codec"
            if let profile = t.profile { line += " (\(profile))" }
            if let v = t.video {
                line += ", \(v.width)x\(v.height)"
                if v.rotation != 0 || v.mirrored || (v.displayWidth, v.displayHeight) != (v.width, v.height) {
                    line += " → \(v.displayWidth)x\(v.displayHeight)"
                    if v.rotation != 0 { line += " (rotate \(v.rotation)°)" }
                    if v.mirrored { line += " (mirrored)" }
                }
                if v.attachedPicture {
                    line += ", cover picture"
                } else if let fps = v.nominalFrameRate {
                    line += String(format: ", %.3f fps", fps) + (v.variableFrameRate ? " VFR" : "")
                }
                if let depth = v.bitDepth { line += ", \(depth)-bit" }
                if let pf = v.pixelFormat { line += " \(pf)" }
                if let trc = v.colorTransfer, trc == "smpte2084" || trc == "arib-std-b67" { line += ", HDR \(trc)" }
                if let field = v.fieldOrder, field != "progressive" { line += ", interlaced (\(field))" }
            }
            if let a = t.audio {
                line += ", \(a.sampleRate) Hz, \(a.channelLayout ?? "\(a.channels) channels")"
            }
            if let language = t.language { line += ", \(language)" }
            if let d = t.durationSeconds { line += ", \(formatSeconds(d))" }
            lines.append(line)
        }
        if !chapters.isEmpty { lines.append("  chapters   \(chapters.count)") }
        for key in ["title", "creation_time", "location", "com.apple.quicktime.location.ISO6709", "com.apple.quicktime.model"] {
            if let value = metadata[key] { lines.append("  \(key): \(value)") }
        }
        for warning in warnings { lines.append("  warning: \(warning)") }
        return lines.joined(separator: "\n") + "\n"
    }
}

func formatSeconds(_ s: Double) -> String { String(format: "%.3f s", s) }
func formatBytes(_ n: Int64) -> String {
    n >= 1_000_000 ? String(format: "%.1f MB", Double(n) / 1e6) : String(format: "%.0f KB", Double(n) / 1e3)
}
func formatRate(_ bps: Int) -> String {
    bps >= 1_000_000 ? String(format: "%.2f Mb/s", Double(bps) / 1e6) : String(format: "%.0f kb/s", Double(bps) / 1e3)
}

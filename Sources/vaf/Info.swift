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
                others are still reported. Exit status: 0 when every file was read, 1 when any failed; \
                130, 143 or 129 after SIGINT, SIGTERM or SIGHUP and 141 when stdout's reader goes away, \
                each of which stops it between files.
                """
        )

        @Argument(help: "Media files to inspect.")
        var files: [String]

        @Flag(help: "Print JSON instead of the readable summary.")
        var json = false

        @Flag(help: "Read every packet's timestamp for exact durations and frame timing (one pass over each file).")
        var precise = false

        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            logging.apply()
            // SIGINT, SIGTERM, SIGHUP and a closed stdout stop it between files, as `vaf transcode`.
            let (failed, signal) = await BatchRunner.cancellingOnSignals(Task { [files, json, precise] in
                var failed = false
                let lines = JSONLines(enabled: json)
                for file in files where !Task.isCancelled {
                    let (report, error) = await InfoReport.make(path: file, precise: precise)
                    if let error {
                        failed = true
                        FileHandle.standardError.write(Data("vaf: \(error.description)\n".utf8))
                    }
                    lines.write(report)
                    if !json, error == nil { StandardOutput.write(Data(report.summary.utf8)) }
                }
                return failed
            })
            // 128 + the signal: 130 SIGINT, 143 SIGTERM, 129 SIGHUP, 141 SIGPIPE.
            if let signal { throw ExitCode(128 + signal) }
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
                if let m = v.masteringDisplay { line += ", " + Self.describe(m) }
                if let c = v.contentLightLevel { line += ", MaxCLL \(c.maxContentLightLevel) nits, MaxFALL \(c.maxFrameAverageLightLevel) nits" }
                if let d = v.dolbyVision { line += ", " + Self.describe(d) }
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

extension InfoReport {
    /// "mastering display R(0.708,0.292) G(0.170,0.797) B(0.131,0.046) WP(0.3127,0.3290) 0.0050-1000 nits".
    static func describe(_ m: MasteringDisplay) -> String {
        var text = "mastering display"
        func xy(_ p: [Double]?, _ format: String) -> String { (p ?? []).map { String(format: format, $0) }.joined(separator: ",") }
        if m.red != nil {
            text += " R(\(xy(m.red, "%.3f"))) G(\(xy(m.green, "%.3f"))) B(\(xy(m.blue, "%.3f"))) WP(\(xy(m.whitePoint, "%.4f")))"
        }
        if let low = m.minLuminance, let high = m.maxLuminance { text += String(format: " %.4f-%.0f nits", low, high) }
        return text
    }

    /// "Dolby Vision 8.4 (profile 8, level 2, RPU, BL, base layer compatible: HLG)".
    static func describe(_ d: DolbyVisionConfiguration) -> String {
        let compatibility = [0: "none", 1: "HDR10", 2: "SDR", 4: "HLG", 6: "BT.2020 SDR"][d.baseLayerCompatibilityID] ?? "\(d.baseLayerCompatibilityID)"
        let layers = [d.hasRPU ? "RPU" : nil, d.hasBaseLayer ? "BL" : nil, d.hasEnhancementLayer ? "EL" : nil].compactMap { $0 }
        return "Dolby Vision \(d.profile).\(d.baseLayerCompatibilityID) (profile \(d.profile), level \(d.level), "
            + layers.joined(separator: "+") + ", base layer compatible: \(compatibility))"
    }
}

func formatSeconds(_ s: Double) -> String { String(format: "%.3f s", s) }
func formatBytes(_ n: Int64) -> String {
    n >= 1_000_000 ? String(format: "%.1f MB", Double(n) / 1e6) : String(format: "%.0f KB", Double(n) / 1e3)
}
func formatRate(_ bps: Int) -> String {
    bps >= 1_000_000 ? String(format: "%.2f Mb/s", Double(bps) / 1e6) : String(format: "%.0f kb/s", Double(bps) / 1e3)
}

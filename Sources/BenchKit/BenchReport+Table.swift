import Foundation

extension BenchReport {
    /// The terminal table: one line per job and path with medians and spreads, skipped and failed
    /// paths with their reason, then the ratios against FFmpeg and the targets.
    public func table() -> String {
        var lines: [String] = []
        lines.append("vaf bench: \(settings.warmups) warm-up + \(settings.runs) interleaved runs per path; medians, ± (max − min) / median")
        var machineLine = "machine: \(machine.cpuModel ?? "unknown CPU"), \(machine.logicalCores) cores; vaf \(machine.vafBuild) build"
        if machine.vafBuild != "release" { machineLine += " (numbers are only comparable for release builds)" }
        lines.append(machineLine)
        if let device = machine.device {
            lines.append("device: \(device) (\(machine.deviceLabel ?? machine.driver ?? "VA-API"))")
        } else if let problem = machine.deviceProblem {
            lines.append("device: none: \(problem)")
        }
        lines.append("ffmpeg: \(machine.ffmpegVersion ?? "not used")")
        lines.append("")
        let header = ["job", "path", "fps", "±%", "×rt", "wall s", "CPU s", "RSS MiB", "host B/f", "size", "bitrate", "PSNR-Y", "PSNR", "SSIM"]
        var rows: [[String]] = [header]
        var notes: [String] = []
        for job in jobs {
            for path in job.paths {
                let name = path.label.map { "\(path.path) [\($0)]" } ?? path.path
                switch path.status {
                case .measured, .mismatch:
                    let q = path.quality
                    rows.append([
                        job.id, name + (path.status == .mismatch ? " (ran \(path.actualPath ?? "?"))" : ""),
                        Self.number(path.fps?.median, 1), Self.number(path.fps?.relativeSpreadPercent, 1),
                        Self.number(path.speed?.median, 2), Self.number(path.wallSeconds?.median, 2),
                        Self.number(path.cpuSeconds?.median, 2), Self.number(path.peakRSSBytes.map { $0.median / 1_048_576 }, 0),
                        Self.number(path.hostTransferBytesPerFrame, 0), path.outputBytes.map(Self.bytes) ?? "-",
                        path.bitRate.map(Self.bitRate) ?? "-", Self.number(q?.psnrY, 2), Self.number(q?.psnr, 2), Self.number(q?.ssim, 4),
                    ])
                    if let problem = path.qualityProblem { notes.append("\(job.id) \(path.path): quality not computed: \(problem)") }
                case .skipped, .failed:
                    notes.append("\(job.id) \(name): \(path.status.rawValue): \(path.reason ?? "no reason given")")
                }
            }
        }
        lines += Self.align(rows)
        if !notes.isEmpty {
            lines.append("")
            lines += notes
        }
        if !ratios.isEmpty {
            lines.append("")
            lines.append("ratios, pair by pair (median [min–max] of run i ours / run i baseline):")
            for r in ratios {
                lines.append("  \(r.job): \(r.numerator) / \(r.denominator) \(r.metric) = \(Self.number(r.ratio.median, 3)) [\(Self.number(r.ratio.min, 3))–\(Self.number(r.ratio.max, 3))]")
            }
        }
        lines.append("")
        lines.append("targets (reported, not enforced):")
        for t in targets {
            let verdict = t.met.map { $0 ? "met" : "NOT met" } ?? "not measured"
            let value = t.value.map { Self.number($0, 3) } ?? "-"
            lines.append("  \(t.name): \(verdict) (\(value) vs \(Self.number(t.threshold, 2))\(t.job.map { ", \($0)" } ?? "")): \(t.description)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Rows padded into columns: text left-aligned in the first two, numbers right-aligned after.
    static func align(_ rows: [[String]]) -> [String] {
        guard let columns = rows.map(\.count).max() else { return [] }
        let widths = (0..<columns).map { c in rows.map { c < $0.count ? $0[c].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { c, cell in
                let pad = String(repeating: " ", count: widths[c] - cell.count)
                return c < 2 ? cell + pad : pad + cell
            }.joined(separator: "  ")
        }
    }

    /// `value` with `decimals` decimals, "-" when nil.
    static func number(_ value: Double?, _ decimals: Int) -> String {
        guard let value, value.isFinite else { return "-" }
        return String(format: "%.\(decimals)f", value)
    }

    /// Bytes as kB/MB/GB (powers of 1000, like the bit rates).
    static func bytes(_ count: Int64) -> String {
        let value = Double(count)
        if value >= 1e9 { return String(format: "%.2f GB", value / 1e9) }
        if value >= 1e6 { return String(format: "%.1f MB", value / 1e6) }
        if value >= 1e3 { return String(format: "%.0f kB", value / 1e3) }
        return "\(count) B"
    }

    /// Bits per second as kbit/s or Mbit/s.
    static func bitRate(_ bps: Double) -> String {
        bps >= 1e6 ? String(format: "%.2f Mb/s", bps / 1e6) : String(format: "%.0f kb/s", bps / 1e3)
    }
}

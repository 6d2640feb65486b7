import Foundation

extension BenchReport {
    /// The CSV columns, in order.
    public static let csvColumns = [
        "job", "source", "target", "path", "tool", "status", "reason", "actual_path", "label", "encoder", "runs",
        "fps_median", "fps_min", "fps_max", "fps_q1", "fps_q3", "fps_spread_pct", "speed_median", "wall_s_median", "cpu_s_median",
        "peak_rss_bytes_median", "frames", "host_transfer_bytes", "host_transfer_bytes_per_frame", "output_bytes", "bit_rate",
        "psnr_y", "psnr_u", "psnr_v", "psnr", "ssim_y", "ssim_u", "ssim_v", "ssim", "quality_frames",
    ]

    /// One header line, then one line per job and path (RFC 4180: fields with commas, quotes or
    /// line breaks are quoted; empty fields for unknown values).
    public func csv() -> String {
        var lines = [Self.csvColumns.joined(separator: ",")]
        for job in jobs {
            for p in job.paths {
                let q = p.quality
                let fields: [String?] = [
                    job.id, job.source, job.target, p.path, p.tool, p.status.rawValue, p.reason, p.actualPath, p.label, p.encoder, String(p.runs.count),
                    d(p.fps?.median), d(p.fps?.min), d(p.fps?.max), d(p.fps?.q1), d(p.fps?.q3), d(p.fps?.relativeSpreadPercent),
                    d(p.speed?.median), d(p.wallSeconds?.median), d(p.cpuSeconds?.median), d(p.peakRSSBytes?.median),
                    p.frames.map(String.init), p.hostTransferBytes.map(String.init), d(p.hostTransferBytesPerFrame),
                    p.outputBytes.map(String.init), d(p.bitRate),
                    d(q?.psnrY), d(q?.psnrU), d(q?.psnrV), d(q?.psnr), d(q?.ssimY), d(q?.ssimU), d(q?.ssimV), d(q?.ssim), q.map { String($0.frames) },
                ]
                lines.append(fields.map { Self.csvField($0 ?? "") }.joined(separator: ","))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func d(_ value: Double?) -> String? {
        guard let value, value.isFinite else { return nil }
        return String(value)
    }

    /// A field quoted when it holds a comma, a quote or a line break.
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

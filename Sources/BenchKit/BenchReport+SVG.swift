import Foundation

extension BenchReport {
    /// Colours of the paths in the chart; FFmpeg's are greys so ours stand out against them.
    static let pathColors: [String: String] = [
        "software": "#1f77b4", "hybrid": "#9467bd", "hardware": "#2ca02c", "ffmpeg": "#7f7f7f", "ffmpeg-vaapi": "#b0b0b0",
    ]

    /// A self-contained SVG chart: per job, one bar per path with the median frames/s and a
    /// min–max whisker (bars scaled per job, since a 4K encode and a remux differ a hundredfold),
    /// and the quality of that path's output beside it. Skipped and failed paths show their reason.
    public func svg() -> String {
        let width = 1100, labelWidth = 200, barLeft = 210, barWidth = 420, qualityLeft = 760
        let rowHeight = 22, jobGap = 14
        var y = 64
        var body: [String] = []
        for job in jobs {
            body.append(text(x: 10, y: y, "\(job.id): \(job.summary)", attributes: "font-weight=\"bold\""))
            y += rowHeight
            let scale = job.paths.compactMap { $0.fps?.max }.max() ?? 0
            for path in job.paths {
                let name = path.label.map { "\(path.path) [\($0)]" } ?? path.path
                body.append(text(x: labelWidth, y: y, Self.truncated(name, 34), attributes: "text-anchor=\"end\""))
                if let fps = path.fps, scale > 0, path.status == .measured || path.status == .mismatch {
                    let length = Double(barWidth) * fps.median / scale
                    let color = Self.pathColors[path.path] ?? "#444444"
                    body.append("<rect x=\"\(barLeft)\" y=\"\(y - 13)\" width=\(quoted(length)) height=\"14\" fill=\"\(color)\"\(path.status == .mismatch ? " fill-opacity=\"0.4\"" : "")/>")
                    let low = Double(barLeft) + Double(barWidth) * fps.min / scale
                    let high = Double(barLeft) + Double(barWidth) * fps.max / scale
                    body.append("<line x1=\(quoted(low)) x2=\(quoted(high)) y1=\"\(y - 6)\" y2=\"\(y - 6)\" stroke=\"#000\" stroke-width=\"1.5\"/>")
                    let label = String(format: "%.1f fps ±%.0f%%", fps.median, fps.relativeSpreadPercent)
                        + (path.status == .mismatch ? " (ran \(path.actualPath ?? "?"))" : "")
                    body.append(text(x: Int(high.rounded()) + 6, y: y, label, attributes: "font-size=\"11\""))
                    let quality = path.quality.map { String(format: "PSNR-Y %.2f dB · PSNR %.2f dB · SSIM %.4f", $0.psnrY ?? $0.psnr, $0.psnr, $0.ssim) }
                        ?? (path.qualityProblem.map { "quality: \(Self.truncated($0, 50))" } ?? "quality not computed")
                    body.append(text(x: qualityLeft, y: y, quality, attributes: "font-size=\"11\""))
                } else {
                    let why = "\(path.status.rawValue): \(path.reason ?? "no reason given")"
                    body.append(text(x: barLeft, y: y, Self.truncated(why, 130), attributes: "fill=\"#888\" font-style=\"italic\" font-size=\"11\""))
                }
                y += rowHeight
            }
            y += jobGap
        }
        let height = y + 10
        var title = "vaf bench — \(machine.cpuModel ?? "unknown CPU"), \(machine.logicalCores) cores, vaf \(machine.vafBuild)"
        if let device = machine.device { title += ", device \(device) (\(machine.deviceLabel ?? machine.driver ?? "VA-API"))" }
        let subtitle = "frames/s: median of \(settings.runs) interleaved runs, whisker min–max; quality of the first measured output against the source"
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="#fff"/>
            \(text(x: 10, y: 22, title, attributes: "font-size=\"15\" font-weight=\"bold\""))
            \(text(x: 10, y: 42, subtitle, attributes: "fill=\"#555\""))
            \(body.joined(separator: "\n"))
            </svg>

            """
    }

    private func text(x: Int, y: Int, _ content: String, attributes: String = "") -> String {
        "<text x=\"\(x)\" y=\"\(y)\"\(attributes.isEmpty ? "" : " " + attributes)>\(Self.escaped(content))</text>"
    }

    private func quoted(_ value: Double) -> String { "\"" + String(format: "%.1f", value) + "\"" }

    /// Text safe inside an XML element.
    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// At most `count` characters, with an ellipsis when cut.
    static func truncated(_ text: String, _ count: Int) -> String {
        text.count <= count ? text : String(text.prefix(count - 1)) + "…"
    }
}

import Foundation

extension BenchReport {
    /// Colours of the paths in the chart; FFmpeg's are greys so ours stand out against them.
    static let pathColors: [String: String] = [
        "software": "#1f77b4", "hybrid": "#9467bd", "hardware": "#2ca02c", "ffmpeg": "#7f7f7f", "ffmpeg-vaapi": "#b0b0b0",
    ]

    /// A self-contained SVG chart: per job, one bar per measured path with the median frames/s,
    /// a min–max whisker and that spread written beside it (bars scaled per job, since a 4K
    /// encode and a remux differ a hundredfold, with an axis in frames/s under them), the
    /// quality of that path's output, and each ratio against FFmpeg, marked inconclusive when
    /// the two paths' spreads overlap. Skipped paths share one row with their reasons; failed
    /// paths show theirs.
    public func svg() -> String {
        let width = 1100, labelWidth = 200, barLeft = 210, barWidth = 420, qualityLeft = 760
        let rowHeight = 22, jobGap = 14
        var y = 64
        var body: [String] = []
        for job in jobs {
            body.append(text(x: 10, y: y, "\(job.id): \(job.summary)", attributes: "font-weight=\"bold\""))
            y += rowHeight
            let scale = Self.axisMaximum(job.paths.compactMap { $0.fps?.max }.max() ?? 0)
            var drewBars = false
            for path in job.paths where path.status != .skipped {
                let name = path.label.map { "\(path.path) [\($0)]" } ?? path.path
                body.append(text(x: labelWidth, y: y, Self.truncated(name, 34), attributes: "text-anchor=\"end\""))
                if let fps = path.fps, scale > 0, path.status == .measured || path.status == .mismatch {
                    drewBars = true
                    let length = Double(barWidth) * fps.median / scale
                    let color = Self.pathColors[path.path] ?? "#444444"
                    body.append("<rect x=\"\(barLeft)\" y=\"\(y - 13)\" width=\(quoted(length)) height=\"14\" fill=\"\(color)\"\(path.status == .mismatch ? " fill-opacity=\"0.4\"" : "")/>")
                    let low = Double(barLeft) + Double(barWidth) * fps.min / scale
                    let high = Double(barLeft) + Double(barWidth) * fps.max / scale
                    body.append("<line x1=\(quoted(low)) x2=\(quoted(high)) y1=\"\(y - 6)\" y2=\"\(y - 6)\" stroke=\"#000\" stroke-width=\"1.5\"/>")
                    body.append(text(x: Int(high.rounded()) + 6, y: y, Self.barLabel(fps) + (path.status == .mismatch ? " (ran \(path.actualPath ?? "?"))" : ""),
                                     attributes: "font-size=\"11\""))
                    let quality = path.quality.map { String(format: "PSNR-Y %.2f dB · PSNR %.2f dB · SSIM %.4f", $0.psnrY ?? $0.psnr, $0.psnr, $0.ssim) }
                        ?? (path.qualityProblem.map { "quality: \(Self.truncated($0, 50))" } ?? "quality not computed")
                    body.append(text(x: qualityLeft, y: y, quality, attributes: "font-size=\"11\""))
                } else {
                    let why = "\(path.status.rawValue): \(path.reason ?? "no reason given")"
                    body.append(text(x: barLeft, y: y, Self.truncated(why, 130), attributes: "fill=\"#888\" font-style=\"italic\" font-size=\"11\""))
                }
                y += rowHeight
            }
            if drewBars {
                body += axis(left: barLeft, width: barWidth, y: y - 4, maximum: scale)
                y += rowHeight + 6
            }
            for note in ratioNotes(for: job) {
                body.append(text(x: barLeft, y: y, note, attributes: "font-size=\"11\"\(note.contains("inconclusive") ? " fill=\"#b35900\"" : "")"))
                y += rowHeight - 4
            }
            let skipped = job.paths.filter { $0.status == .skipped }
            if !skipped.isEmpty {
                let list = skipped.map { "\($0.path) (\($0.reason ?? "no reason given"))" }.joined(separator: "; ")
                body.append(text(x: labelWidth, y: y, "skipped", attributes: "text-anchor=\"end\" fill=\"#888\""))
                body.append(text(x: barLeft, y: y, Self.truncated(list, 150), attributes: "fill=\"#888\" font-style=\"italic\" font-size=\"11\""))
                y += rowHeight
            }
            y += jobGap
        }
        let height = y + 10
        var title = "vaf bench — \(machine.cpuModel ?? "unknown CPU"), \(machine.logicalCores) cores, vaf \(machine.vafBuild)"
        if let device = machine.device { title += ", device \(device) (\(machine.deviceLabel ?? machine.driver ?? "VA-API"))" }
        let subtitle = "frames/s: median of \(settings.runs) interleaved runs, whisker and the figures beside each bar min–max; quality of the first measured output against the source"
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="#fff"/>
            \(text(x: 10, y: 22, title, attributes: "font-size=\"15\" font-weight=\"bold\""))
            \(text(x: 10, y: 42, subtitle, attributes: "fill=\"#555\""))
            \(body.joined(separator: "\n"))
            </svg>

            """
    }

    /// The text beside a bar: the median and the spread it was measured with.
    static func barLabel(_ fps: Statistic) -> String {
        String(format: "%.1f fps, runs %.1f–%.1f", fps.median, fps.min, fps.max)
    }

    /// The frames/s at the axis's right end: `value` rounded up to 1, 2, 4, 5 or 8 times a power
    /// of ten, so that the quarter ticks read as round numbers and the bars fill most of the width.
    public static func axisMaximum(_ value: Double) -> Double {
        guard value > 0 else { return 0 }
        let power = pow(10, (log10(value)).rounded(.down))
        return [1, 2, 4, 5, 8, 10].map { $0 * power }.first { $0 >= value * (1 - 1e-12) } ?? 10 * power
    }

    /// A frames/s axis under a job's bars: a line, five ticks and their values.
    private func axis(left: Int, width: Int, y: Int, maximum: Double) -> [String] {
        var parts = ["<line x1=\"\(left)\" x2=\"\(left + width)\" y1=\"\(y)\" y2=\"\(y)\" stroke=\"#555\"/>"]
        for step in 0...4 {
            let x = left + width * step / 4
            let value = maximum * Double(step) / 4
            parts.append("<line x1=\"\(x)\" x2=\"\(x)\" y1=\"\(y)\" y2=\"\(y + 4)\" stroke=\"#555\"/>")
            let label = value == value.rounded() ? String(format: "%.0f", value) : String(format: "%.1f", value)
            parts.append(text(x: x, y: y + 15, step == 4 ? label + " fps" : label, attributes: "font-size=\"10\" fill=\"#555\" text-anchor=\"middle\""))
        }
        return parts
    }

    /// One line per frames/s ratio of `job` against FFmpeg: the paired median, and whether the
    /// paths' min–max spreads overlap, which leaves the ratio inconclusive (either could be faster).
    public func ratioNotes(for job: JobResult) -> [String] {
        ratios.filter { $0.job == job.id && $0.metric == "fps" }.compactMap { ratio in
            guard let ours = job.paths.first(where: { $0.path == ratio.numerator })?.fps,
                  let theirs = job.paths.first(where: { $0.path == ratio.denominator })?.fps else { return nil }
            let head = String(format: "%@ / %@: %.3f×", ratio.numerator, ratio.denominator, ratio.ratio.median)
            let spans = String(format: "%.1f–%.1f vs %.1f–%.1f fps", ours.min, ours.max, theirs.min, theirs.max)
            return ours.min <= theirs.max && theirs.min <= ours.max
                ? "\(head), inconclusive: the spreads overlap (\(spans))"
                : "\(head) (spreads apart: \(spans))"
        }
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

import Foundation

/// How many columns the terminal has, so that no progress or summary line wraps: a wrapped
/// line takes two rows, and a redraw that moves up one row per line would leave stale bars.
enum TerminalWidth {
    /// The columns of the terminal on stderr, else on stdout (ioctl TIOCGWINSZ), else `COLUMNS`,
    /// else 80. Read on each use, so a resized terminal is followed.
    static func current(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int {
        resolve(terminalColumns: columns(of: STDERR_FILENO) ?? columns(of: STDOUT_FILENO), columnsVariable: environment["COLUMNS"])
    }

    /// The width from what is known: a terminal's columns first, then the `COLUMNS` variable,
    /// then 80 (what a line printer or log viewer usually shows).
    static func resolve(terminalColumns: Int?, columnsVariable: String?) -> Int {
        if let terminalColumns, terminalColumns > 0 { return terminalColumns }
        if let text = columnsVariable, let columns = Int(text.trimmingCharacters(in: .whitespaces)), columns > 0 { return columns }
        return 80
    }

    /// The columns of the terminal open on `descriptor`, nil when it is not a terminal.
    /// The corresponding C call is `ioctl(fd, TIOCGWINSZ, …)`.
    private static func columns(of descriptor: Int32) -> Int? {
        var size = winsize()
        guard ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}

/// Text measured and cut in terminal columns: East Asian wide characters take two, combining
/// marks none, everything else one.
enum TerminalText {
    static func width(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + columns(of: $1) }
    }

    private static func columns(of scalar: Unicode.Scalar) -> Int {
        let v = scalar.value
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if v < 0x20 || (0x7F..<0xA0).contains(v) { return 0 }
        let wide: [ClosedRange<UInt32>] = [0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
                                           0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
                                           0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD]
        return wide.contains { $0.contains(v) } ? 2 : 1
    }

    /// `text` cut to at most `columns` columns with an ellipsis at the end when it is longer.
    static func truncated(_ text: String, to columns: Int) -> String {
        guard width(text) > columns else { return text }
        guard columns > 0 else { return "" }
        var result = "", used = 0
        for character in text {
            let w = width(String(character))
            if used + w > columns - 1 { break }
            result.append(character)
            used += w
        }
        return result + "…"
    }

    /// `text` cut to at most `columns` columns by replacing its middle with an ellipsis, which
    /// keeps a file name's start and its extension ("holiday-…-04.mp4").
    static func elided(_ text: String, to columns: Int) -> String {
        guard width(text) > columns else { return text }
        guard columns > 2 else { return truncated(text, to: columns) }
        let characters = Array(text)
        let tailBudget = (columns - 1) / 2, headBudget = columns - 1 - tailBudget
        var head = "", headWidth = 0
        for character in characters {
            let w = width(String(character))
            if headWidth + w > headBudget { break }
            head.append(character)
            headWidth += w
        }
        var tail: [Character] = [], tailWidth = 0
        for character in characters.reversed() {
            let w = width(String(character))
            if tailWidth + w > tailBudget { break }
            tail.insert(character, at: 0)
            tailWidth += w
        }
        return head + "…" + String(tail)
    }

    /// `text` elided to `columns` and padded with spaces to exactly that width.
    static func column(_ text: String, _ columns: Int) -> String {
        let cut = elided(text, to: columns)
        return cut + String(repeating: " ", count: max(0, columns - width(cut)))
    }

    /// `text` padded with spaces on the left to `columns`, for numbers.
    static func rightAligned(_ text: String, _ columns: Int) -> String {
        String(repeating: " ", count: max(0, columns - width(text))) + text
    }

    /// `fields` laid out on as few lines as fit in `columns`, joined by `separator`, the first
    /// line starting with `firstIndent` and the others with `indent`; a field too long for
    /// any line is truncated.
    static func wrapped(_ fields: [String], columns: Int, separator: String = "  ", indent: String = "  ", firstIndent: String = "") -> [String] {
        var lines: [String] = []
        var current = ""
        for field in fields {
            if current.isEmpty {
                current = (lines.isEmpty ? firstIndent : indent) + field
            } else if width(current) + width(separator) + width(field) <= columns {
                current += separator + field
            } else {
                lines.append(current)
                current = indent + field
            }
        }
        if !current.isEmpty { lines.append(current) }
        return lines.map { truncated($0, to: columns) }
    }

    /// `text` broken at spaces into lines of at most `columns` columns, each starting with
    /// `indent`; a word longer than a line is cut into pieces.
    static func wrappedWords(_ text: String, columns: Int, indent: String) -> [String] {
        let room = max(1, columns - width(indent))
        var pieces: [String] = []
        for word in text.split(separator: " ", omittingEmptySubsequences: true).map(String.init) {
            var rest = word
            while width(rest) > room {
                var piece = "", used = 0
                for character in rest {
                    let w = width(String(character))
                    if used + w > room { break }
                    piece.append(character)
                    used += w
                }
                if piece.isEmpty { piece = String(rest.prefix(1)) }
                pieces.append(piece)
                rest = String(rest.dropFirst(piece.count))
            }
            if !rest.isEmpty { pieces.append(rest) }
        }
        return wrapped(pieces, columns: columns, separator: " ", indent: indent, firstIndent: indent)
    }

    /// A duration as MM:SS (minutes not capped at 59, so a long batch reads 125:08).
    static func clock(_ seconds: Double) -> String {
        let total = Int(max(0, seconds).rounded())
        return String(format: "%02d:%02d", total / 60, total % 60)
    }
}

/// The lines of `vaf transcode`'s progress, each fitted to a width: pure functions of what
/// they show, so they can be tested at any width without a terminal.
enum ProgressLayout {
    /// What one running export's line shows.
    struct JobState {
        var name: String
        /// Fraction done, 0…1.
        var progress: Double
        /// Wall-clock seconds since it started.
        var elapsed: Double
        /// Media seconds the export covers, and its output frame rate (0 for audio only).
        var mediaSeconds: Double
        var frameRate: Double

        var clampedProgress: Double { max(0, min(progress, 1)) }
        /// Media seconds per wall-clock second.
        var speed: Double { elapsed > 0 ? clampedProgress * mediaSeconds / elapsed : 0 }
        /// Seconds left at the rate so far; nil before there is a rate to go by.
        var remaining: Double? {
            clampedProgress > 0.01 ? elapsed * (1 - clampedProgress) / clampedProgress : nil
        }

        var percentText: String { String(format: "%5.1f%%", clampedProgress * 100) }
        var framesText: String? { frameRate > 0 ? String(format: "%6.1f fps", speed * frameRate) : nil }
        var speedText: String { String(format: "%5.2fx", speed) }
        var etaText: String { "ETA " + (remaining.map(TerminalText.clock) ?? "--:--") }
    }

    /// The bar line of one export on a terminal, at most `width - 1` columns (a line that fills
    /// the last column makes some terminals wrap): name, bar, percentage, fps, speed, ETA; on a
    /// narrow terminal fps, then speed, then the bar give way, and the name is elided.
    static func barLine(_ job: JobState, width: Int) -> String {
        let room = max(width - 1, 1)
        let variants: [[String]] = [
            [job.percentText, job.framesText, job.speedText, job.etaText].compactMap { $0 },
            [job.percentText, job.speedText, job.etaText],
            [job.percentText, job.etaText],
        ]
        for fields in variants {
            let stats = fields.joined(separator: "  ")
            let nameAndBar = room - TerminalText.width(stats) - 3
            let nameColumns = min(28, nameAndBar - 8)
            guard nameColumns >= 8 else { continue }
            let barColumns = min(24, nameAndBar - nameColumns)
            let filled = Int(job.clampedProgress * Double(barColumns))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: barColumns - filled)
            return TerminalText.column(job.name, nameColumns) + " " + bar + "  " + stats
        }
        return TerminalText.truncated(TerminalText.elided(job.name, to: max(room / 2, 1)) + " " + job.percentText.trimmingCharacters(in: .whitespaces), to: room)
    }

    /// A progress line without a bar or escape codes, for logs: "clip.mp4: 45.0%, 120.3 fps, 2.10x, ETA 00:12".
    /// Narrow widths drop fps, then speed, as the bar line does.
    static func plainLine(_ job: JobState, width: Int) -> String {
        let room = max(width - 1, 1)
        let variants: [[String?]] = [[job.percentText, job.framesText, job.speedText, job.etaText],
                                     [job.percentText, job.speedText, job.etaText], [job.percentText, job.etaText]]
        for fields in variants {
            let text = fields.compactMap { $0?.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
            let nameColumns = room - TerminalText.width(text) - 2
            if nameColumns >= 12 { return TerminalText.elided(job.name, to: nameColumns) + ": " + text }
        }
        return TerminalText.truncated(TerminalText.elided(job.name, to: room / 2) + ": " + job.percentText.trimmingCharacters(in: .whitespaces), to: room)
    }

    /// The batch line: "N of M done, K failed, elapsed MM:SS, ETA MM:SS", shortened to fit.
    static func batchLine(done: Int, total: Int, failed: Int, elapsed: Double, remaining: Double?, width: Int) -> String {
        let room = max(width - 1, 1)
        let eta = remaining.map(TerminalText.clock) ?? "--:--"
        let full = "\(done) of \(total) done, \(failed) failed, elapsed \(TerminalText.clock(elapsed)), ETA \(eta)"
        if TerminalText.width(full) <= room { return full }
        let compact = "\(done)/\(total) done, \(failed) failed, \(TerminalText.clock(elapsed)), ETA \(eta)"
        return TerminalText.truncated(compact, to: room)
    }

    /// Seconds until the whole batch ends at the rate so far, from the share of the work done
    /// (finished inputs, plus the fraction of each running one); nil before there is a rate.
    static func batchRemaining(finished: Int, total: Int, runningProgress: [Double], elapsed: Double) -> Double? {
        guard total > 0 else { return nil }
        let share = (Double(finished) + runningProgress.map { max(0, min($0, 1)) }.reduce(0, +)) / Double(total)
        guard share > 0.01 else { return nil }
        return share >= 1 ? 0 : elapsed * (1 - share) / share
    }
}

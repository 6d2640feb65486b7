/// Where an ASS or SSA subtitle event stands on the picture, as WebVTT cue settings (line,
/// position, align), so a sign at the top of the picture stays at the top of a package's
/// WebVTT rendition. FFmpeg's WebVTT encoder drops every override tag, placement included.
///
/// An event's place comes from its first `\an` (or legacy `\a`) override, else its style's
/// alignment; an event with `\pos(x,y)` is placed at that point of the script's `PlayResX` by
/// `PlayResY` canvas, and one with `\move` where its move starts (the first of the two wins,
/// as in libass). Margins and rotation are not carried.
struct ASSPlacement: Equatable {
    /// The script's canvas and each style's alignment (numeric-keypad numbering: 1-3 bottom,
    /// 4-6 middle, 7-9 top; left, centre, right).
    struct Script: Equatable {
        var width: Double
        var height: Double
        var alignments: [String: Int]
    }

    /// Reads the canvas and the styles' alignments from a script header (the track's codec
    /// configuration), with libass's defaults for a missing canvas size.
    static func script(header: String) -> Script {
        var width: Double?, height: Double?
        var alignments: [String: Int] = [:]
        var section = "", format: [String] = []
        for raw in header.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") { section = line.lowercased(); format = []; continue }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch (section, key) {
            case ("[script info]", "playresx"): width = Double(value)
            case ("[script info]", "playresy"): height = Double(value)
            case ("[v4+ styles]", "format"), ("[v4 styles]", "format"):
                format = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            case ("[v4+ styles]", "style"), ("[v4 styles]", "style"):
                let fields = value.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
                guard let name = format.firstIndex(of: "name"), let alignment = format.firstIndex(of: "alignment"),
                      fields.indices.contains(name), fields.indices.contains(alignment), let number = Int(fields[alignment]) else { continue }
                alignments[fields[name]] = section == "[v4 styles]" ? keypad(legacy: number) : number
            default: continue
            }
        }
        switch (width, height) {
        case let (w?, h?): return Script(width: w, height: h, alignments: alignments)
        case let (w?, nil): return Script(width: w, height: w == 1280 ? 1024 : w * 3 / 4, alignments: alignments)
        case let (nil, h?): return Script(width: h == 1024 ? 1280 : h * 4 / 3, height: h, alignments: alignments)
        case (nil, nil): return Script(width: 384, height: 288, alignments: alignments)
        }
    }

    /// SSA's alignment (1-3 bottom, +4 top, +8 middle) in keypad numbering.
    static func keypad(legacy: Int) -> Int {
        let column = (legacy & 3) == 0 ? 2 : legacy & 3
        if legacy & 4 != 0 { return column + 6 }
        if legacy & 8 != 0 { return column + 3 }
        return column
    }

    /// A SubRip track's canvas: SubRip has no styles, but its cues may open with ASS overrides
    /// (`{\an8}` puts a cue at the top), which FFmpeg's SubRip decoder reads on libass's
    /// default canvas.
    static let subRip = Script(width: 384, height: 288, alignments: [:])

    /// The WebVTT cue settings for an event as FFmpeg hands it out ("ReadOrder,Layer,Style,Name,
    /// MarginL,MarginR,MarginV,Effect,Text"); empty for the default place, bottom centre.
    static func cueSettings(event: String, script: Script) -> String {
        let fields = event.split(separator: ",", maxSplits: 8, omittingEmptySubsequences: false)
        guard fields.count == 9 else { return "" }
        return cueSettings(style: fields[2].trimmingCharacters(in: .whitespaces), text: fields[8], script: script)
    }

    /// The WebVTT cue settings for `text` (with its override blocks) in `style`.
    static func cueSettings(style: String?, text: Substring, script: Script) -> String {
        var alignment = style.flatMap { script.alignments[$0] } ?? script.alignments["Default"] ?? 2
        var point: (x: Double, y: Double)?
        var alignmentOverridden = false
        for block in overrideBlocks(in: text) {
            for tag in block.split(separator: "\\", omittingEmptySubsequences: false).dropFirst() {
                if !alignmentOverridden, tag.hasPrefix("an"), let n = Int(tag.dropFirst(2)), (1...9).contains(n) {
                    alignment = n
                    alignmentOverridden = true
                } else if !alignmentOverridden, tag.hasPrefix("a"), let n = Int(tag.dropFirst()), n > 0 {
                    alignment = keypad(legacy: n)
                    alignmentOverridden = true
                } else if point == nil, let numbers = arguments(of: "pos", in: tag), numbers.count == 2 {
                    point = (numbers[0], numbers[1])
                } else if point == nil, let numbers = arguments(of: "move", in: tag), [4, 6].contains(numbers.count) {
                    // WebVTT cannot move a cue: it stays where the move starts, where it first shows.
                    point = (numbers[0], numbers[1])
                }
            }
        }
        let column = (alignment - 1) % 3, row = (alignment - 1) / 3
        let textAlign = ["left", "center", "right"][column]
        if let point, script.width > 0, script.height > 0 {
            let line = "line:\(percent(point.y / script.height)),\(["end", "center", "start"][row])"
            let position = "position:\(percent(point.x / script.width)),\(["line-left", "center", "line-right"][column])"
            return "\(line) \(position) align:\(textAlign)"
        }
        var settings: [String] = []
        if row == 2 { settings.append("line:0") }
        if row == 1 { settings.append("line:50%,center") }
        if column != 1 { settings.append("align:\(textAlign)") }
        return settings.joined(separator: " ")
    }

    /// The numbers of an override tag `name(a,b,…)`; nil for another tag or a number that does not read.
    private static func arguments(of name: String, in tag: Substring) -> [Double]? {
        guard tag.hasPrefix(name + "("), let close = tag.firstIndex(of: ")") else { return nil }
        let fields = tag[tag.index(tag.startIndex, offsetBy: name.count + 1)..<close].split(separator: ",")
        let numbers = fields.compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        return numbers.count == fields.count ? numbers : nil
    }

    /// The `{…}` override blocks of an event's text.
    private static func overrideBlocks(in text: Substring) -> [Substring] {
        var blocks: [Substring] = []
        var rest = text
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            blocks.append(rest[rest.index(after: open)..<close])
            rest = rest[rest.index(after: close)...]
        }
        return blocks
    }

    /// A fraction of the canvas as a WebVTT percentage, within 0-100 %, to 0.01 %.
    private static func percent(_ fraction: Double) -> String {
        let hundredths = Int((min(max(fraction, 0), 1) * 10_000).rounded())
        let whole = hundredths / 100, rest = hundredths % 100
        return rest == 0 ? "\(whole)%" : rest % 10 == 0 ? "\(whole).\(rest / 10)%" : "\(whole).\(rest < 10 ? "0" : "")\(rest)%"
    }
}

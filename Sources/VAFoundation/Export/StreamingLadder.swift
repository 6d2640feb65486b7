/// One rung of a streaming ladder: the box its pictures fit in and its video bit rate.
public struct StreamingRung: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    /// Average video bits per second: capped at what the source needs while the export
    /// caps bit rates (its default).
    public var bitRate: Int

    public init(width: Int, height: Int, bitRate: Int) {
        self.width = width
        self.height = height
        self.bitRate = bitRate
    }

    /// `1280x720@3M`, the form `--ladder` takes.
    public var description: String {
        let rate = bitRate % 1_000_000 == 0 ? "\(bitRate / 1_000_000)M" : bitRate % 1000 == 0 ? "\(bitRate / 1000)k" : "\(bitRate)"
        return "\(width)x\(height)@\(rate)"
    }

    /// Parses `WxH@RATE` (RATE in bits per second, or with a `k` or `M` suffix); nil when malformed.
    public init?(parsing text: String) {
        let parts = text.split(separator: "@")
        guard parts.count == 2 else { return nil }
        let size = parts[0].lowercased().split(separator: "x")
        guard size.count == 2, let w = Int(size[0]), let h = Int(size[1]), w > 0, h > 0 else { return nil }
        var rateText = String(parts[1])
        var scale = 1.0
        if rateText.hasSuffix("M") || rateText.hasSuffix("m") { scale = 1_000_000; rateText.removeLast() }
        else if rateText.hasSuffix("k") || rateText.hasSuffix("K") { scale = 1000; rateText.removeLast() }
        guard let value = Double(rateText), value > 0, value * scale >= 1000, value * scale < 1e9 else { return nil }
        self.init(width: w, height: h, bitRate: Int((value * scale).rounded()))
    }

    /// The video table of Apple's "HLS Authoring Specification for Apple Devices" (rule 1.18):
    /// 16:9 sizes and their bit rates, H.264 and HEVC columns. Where a size has two rates, the
    /// higher one is for sources faster than 30 frames a second.
    static let appleH264: [(width: Int, height: Int, rates: [Int])] = [
        (416, 234, [145_000]), (640, 360, [365_000]), (768, 432, [730_000, 1_100_000]), (960, 540, [2_000_000]),
        (1280, 720, [3_000_000, 4_500_000]), (1920, 1080, [6_000_000, 7_800_000]),
    ]
    static let appleHEVC: [(width: Int, height: Int, rates: [Int])] = [
        (640, 360, [145_000]), (768, 432, [300_000]), (960, 540, [600_000, 900_000]), (1280, 720, [2_400_000, 3_400_000]),
        (1920, 1080, [4_500_000, 5_800_000]), (2560, 1440, [8_100_000]), (3840, 2160, [11_600_000, 16_800_000]),
    ]

    /// The `auto` ladder for a source displayed at `width`x`height` (square pixels) and
    /// `frameRate`: the table's rungs whose box the source reaches on one side at least, each
    /// fitted into its box with the source's display aspect, never upscaled (a portrait source
    /// fits the turned box), even-sized. A source smaller than the table's smallest rung gets one rung
    /// at its own size and that rung's rate.
    public static func automatic(sourceWidth width: Int, sourceHeight height: Int, frameRate: Double,
                                 codec: VideoCodec) -> [StreamingRung] {
        guard width > 0, height > 0 else { return [] }
        let table = codec == .hevc ? appleHEVC : appleH264
        let portrait = height > width
        let (long, short) = portrait ? (height, width) : (width, height)
        var rungs: [StreamingRung] = []
        for row in table where row.height <= short || row.width <= long {
            let scale = min(Double(row.width) / Double(long), Double(row.height) / Double(short), 1)
            let fittedLong = max(2, Int((Double(long) * scale / 2).rounded()) * 2)
            let fittedShort = max(2, Int((Double(short) * scale / 2).rounded()) * 2)
            let rate = frameRate > 31 ? row.rates.last! : row.rates.first!
            let rung = portrait ? StreamingRung(width: fittedShort, height: fittedLong, bitRate: rate)
                : StreamingRung(width: fittedLong, height: fittedShort, bitRate: rate)
            if !rungs.contains(where: { $0.width == rung.width && $0.height == rung.height }) { rungs.append(rung) }
        }
        if rungs.isEmpty, let first = table.first {
            rungs = [StreamingRung(width: max(2, width & ~1), height: max(2, height & ~1), bitRate: first.rates[0])]
        }
        return rungs.sorted { $0.width * $0.height > $1.width * $1.height }
    }

    /// The rendition's folder name: its short side ("720p"), with the rate when two rungs
    /// share it ("720p-4500k"), and with the size too when that is not enough ("960x720-3000k");
    /// a rung given twice is numbered.
    static func folderNames(_ rungs: [StreamingRung]) -> [String] {
        let short = { (r: StreamingRung) in min(r.width, r.height) }
        var names = rungs.map { rung -> String in
            let sameSide = rungs.filter { short($0) == short(rung) }
            guard sameSide.count > 1 else { return "\(short(rung))p" }
            let sameRate = sameSide.filter { $0.bitRate == rung.bitRate }
            return sameRate.count > 1 ? "\(rung.width)x\(rung.height)-\(rung.bitRate / 1000)k" : "\(short(rung))p-\(rung.bitRate / 1000)k"
        }
        for i in names.indices where names[..<i].contains(names[i]) { names[i] += "-\(i + 1)" }
        return names
    }
}

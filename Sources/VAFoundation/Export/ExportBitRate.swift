/// Apple's export bit-rate tables (`AVExportBitRate.plist`), interpolated by macroblock count:
/// the rates Apple's presets produce, used by the presets and the output-settings assistant.
enum ExportBitRate {
    /// One tier: the largest picture it covers and its rate at 30 fps.
    struct Tier {
        let width: Int
        let height: Int
        let bitsPerSecond: Double
        var macroblocks: Double { Double(((width + 15) / 16) * ((height + 15) / 16)) }
    }

    /// H.264 presets (`AVAssetExportBitRateBasic`).
    static let basic: [Tier] = [
        Tier(width: 320, height: 180, bitsPerSecond: 763_359), Tier(width: 320, height: 240, bitsPerSecond: 1_000_000),
        Tier(width: 640, height: 360, bitsPerSecond: 2_671_756), Tier(width: 640, height: 480, bitsPerSecond: 3_500_000),
        Tier(width: 960, height: 540, bitsPerSecond: 5_250_000), Tier(width: 960, height: 720, bitsPerSecond: 6_877_500),
        Tier(width: 1280, height: 720, bitsPerSecond: 10_500_000), Tier(width: 1280, height: 960, bitsPerSecond: 13_755_000),
        Tier(width: 1920, height: 1080, bitsPerSecond: 15_000_000), Tier(width: 1920, height: 1440, bitsPerSecond: 19_650_000),
        Tier(width: 3840, height: 2160, bitsPerSecond: 25_000_000),
    ]

    /// HEVC presets (`AVAssetExportBitRateHEVCBasic`).
    static let hevc: [Tier] = [
        Tier(width: 320, height: 180, bitsPerSecond: 763_359), Tier(width: 320, height: 240, bitsPerSecond: 1_000_000),
        Tier(width: 640, height: 360, bitsPerSecond: 2_671_756), Tier(width: 640, height: 480, bitsPerSecond: 3_500_000),
        Tier(width: 960, height: 540, bitsPerSecond: 5_250_000), Tier(width: 960, height: 720, bitsPerSecond: 6_877_500),
        Tier(width: 1280, height: 720, bitsPerSecond: 8_400_000), Tier(width: 1280, height: 960, bitsPerSecond: 11_004_000),
        Tier(width: 1920, height: 1080, bitsPerSecond: 11_250_000), Tier(width: 1920, height: 1440, bitsPerSecond: 14_737_500),
        Tier(width: 3840, height: 2160, bitsPerSecond: 15_000_000),
    ]

    /// The table's rate for a `width`×`height` output at `frameRate`: linear in macroblock count
    /// between the tiers around it (proportional below the smallest, capped at the largest),
    /// times Apple's frame-rate factor relative to 30 fps.
    static func bitsPerSecond(width: Int, height: Int, frameRate: Double, table: [Tier]) -> Int {
        let mb = Double(((width + 15) / 16) * ((height + 15) / 16))
        let sorted = table.sorted { $0.macroblocks < $1.macroblocks }
        var rate: Double
        if let first = sorted.first, mb <= first.macroblocks {
            rate = first.bitsPerSecond * mb / first.macroblocks
        } else if let last = sorted.last, mb >= last.macroblocks {
            rate = last.bitsPerSecond
        } else {
            let upper = sorted.firstIndex { $0.macroblocks >= mb }!
            let (lo, hi) = (sorted[upper - 1], sorted[upper])
            let t = (mb - lo.macroblocks) / (hi.macroblocks - lo.macroblocks)
            rate = lo.bitsPerSecond + t * (hi.bitsPerSecond - lo.bitsPerSecond)
        }
        return Int((rate * frameRateFactor(frameRate)).rounded())
    }

    /// Apple's adjustment for frame rates other than 30: ×1.5 at 60 fps, ×0.75 at 15 fps.
    static func frameRateFactor(_ frameRate: Double) -> Double {
        guard frameRate > 0 else { return 1 }
        let r = frameRate / 30
        if r >= 0.5 { return 0.5 * r + 0.5 }
        if r >= 0.3 { return 3.25 * r - 0.875 }
        return 0.1
    }

    /// Bits a codec needs for a picture relative to H.264 at the same quality (FFmpeg's codec
    /// names): what the cap at the source's rate scales by. Rough, published ratios (HEVC and
    /// VP9 save about 30%, AV1 about 40%, MPEG-2 needs about twice H.264's bits); intra-only
    /// codecs need many times more. nil for codecs not listed, which get no cap.
    static func relativeCost(of codec: String) -> Double? {
        switch codec {
        case "h264": 1
        case "hevc", "vp9": 0.7
        case "av1": 0.6
        case "vp8": 1.1
        case "mpeg4", "h263", "msmpeg4v3", "wmv3", "vc1": 1.5
        case "mpeg2video", "mpeg1video": 2
        case "mjpeg", "prores", "dnxhd", "dvvideo", "ffv1", "huffyuv", "rawvideo", "png", "qtrle": 8
        default: nil
        }
    }
}

/// The codec-neutral quality scale (`VideoSettings.quality`, 0…1; `vaf transcode --quality`,
/// 0–100) in each encoder's own terms, and `EncoderSpeed` in each encoder's speed setting.
///
/// Quality 0.55 (`--quality 55`) is each encoder's customary default: x264 CRF 23, x265 CRF 28
/// (which FFmpeg's H.265 guide equates with x264's 23), libvpx-vp9 CRF 31 and SVT-AV1 and
/// libaom CRF 35 (their guides' recommended starting points for 1080p). Quality 0 is each
/// scale's worst value, 1 its best (0, lossless for x264), and values between are linear
/// between those three anchors. VA-API drivers take an H.264-style quantiser (1–51) for ICQ,
/// QVBR and CQP: they get x264's column, at least 1.
///
/// | quality | libx264 / VA-API | libx265 | libvpx-vp9 | libsvtav1, libaom-av1 |
/// |---|---|---|---|---|
/// | 0   | 51 | 51 | 63 | 63 |
/// | 25  | 38 | 41 | 48 | 50 |
/// | 55  | 23 | 28 | 31 | 35 |
/// | 70  | 15 | 19 | 21 | 24 |
/// | 85  | 8  | 9  | 10 | 12 |
/// | 100 | 0 (VA-API: 1) | 0  | 0  | 1  |
public enum QualityScale {
    /// The value of `quality` every encoder's default corresponds to.
    public static let encoderDefault = 0.55

    /// The encoder's constant-quality value for `quality` (0…1, clamped): x264's, x265's,
    /// libvpx's and the AV1 encoders' `crf`, or a VA-API driver's quantiser; nil for an
    /// encoder without such a scale.
    public static func constantQuality(_ quality: Double, encoder: String) -> Int? {
        let (worst, atDefault, best): (Double, Double, Double)
        switch encoder {
        case "libx264": (worst, atDefault, best) = (51, 23, 0)
        case _ where encoder.hasSuffix("_vaapi"): return constantQuality(quality, encoder: "libx264").map { max(1, $0) }
        case "libx265": (worst, atDefault, best) = (51, 28, 0)
        case "libvpx-vp9": (worst, atDefault, best) = (63, 31, 0)
        case "libsvtav1", "libaom-av1": (worst, atDefault, best) = (63, 35, 1)
        default: return nil
        }
        let q = min(1, max(0, quality))
        let value = q <= encoderDefault
            ? worst + (atDefault - worst) * q / encoderDefault
            : atDefault + (best - atDefault) * (q - encoderDefault) / (1 - encoderDefault)
        return Int(value.rounded())
    }

    /// The encoder's speed option for `speed`: its name and value, nil for an encoder without one.
    ///
    /// | speed | x264, x265 `preset` | libsvtav1 `preset` | libvpx-vp9 `cpu-used` | libaom-av1 `cpu-used` | VA-API quality level |
    /// |---|---|---|---|---|---|
    /// | slower  | slower    | 4  | 1 | 3 | 1 |
    /// | slow    | slow      | 6  | 2 | 4 | 2 |
    /// | medium  | medium    | 8  | 3 | 5 | 4 |
    /// | fast    | fast      | 10 | 4 | 6 | 5 |
    /// | faster  | faster    | 11 | 5 | 7 | 6 |
    /// | fastest | ultrafast | 12 | 8 (realtime) | 8 | 7 |
    ///
    /// A VA-API quality level beyond the driver's range is clamped to it by FFmpeg.
    public static func speedSetting(_ speed: EncoderSpeed, encoder: String) -> (option: String, value: String)? {
        let index = EncoderSpeed.allCases.firstIndex(of: speed)!
        switch encoder {
        case "libx264", "libx265":
            return ("preset", ["slower", "slow", "medium", "fast", "faster", "ultrafast"][index])
        case "libsvtav1": return ("preset", ["4", "6", "8", "10", "11", "12"][index])
        case "libvpx-vp9": return ("cpu-used", ["1", "2", "3", "4", "5", "8"][index])
        case "libaom-av1": return ("cpu-used", ["3", "4", "5", "6", "7", "8"][index])
        case _ where encoder.hasSuffix("_vaapi"): return ("compression_level", ["1", "2", "4", "5", "6", "7"][index])
        default: return nil
        }
    }
}

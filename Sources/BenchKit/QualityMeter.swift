import Foundation

/// Accumulates PSNR and SSIM over the frame pairs of two clips (a transcode's output and its
/// source at the same size), averaging as FFmpeg's `psnr` and `ssim` filters do in their
/// end-of-stream summary:
///
/// - PSNR per plane averages the per-frame mean squared errors over frames, then converts to
///   dB: 10·log10(255² / mean MSE). The overall PSNR does the same with each frame's MSE
///   weighted by plane size, which for 4:2:0 is (4·MSE_Y + MSE_U + MSE_V) / 6.
/// - SSIM per plane is the mean over frames of each plane's mean window SSIM; "all" weights
///   the planes by their sample counts the same way.
///
/// Where the average MSE is 0 (identical pictures) FFmpeg prints `inf`; JSON has no infinity,
/// so PSNR values are capped at ``QualityMeter/psnrCap`` dB.
public struct QualityMeter: Sendable {
    /// The largest PSNR reported, in dB: identical pictures get this value instead of infinity.
    public static let psnrCap = 100.0

    public private(set) var frames = 0
    private var planeMSE: [Double] = []
    private var weightedMSE = 0.0
    private var planeSSIM: [Double] = []
    private var weightedSSIM = 0.0

    public init() {}

    /// Why two pictures cannot be compared.
    public struct Mismatch: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// Adds one pair of pictures, each given as its planes (Y, U, V). Planes must match in
    /// count and size, and every plane needs at least 8×8 samples for SSIM.
    public mutating func add(_ a: [PlaneView], _ b: [PlaneView]) throws(Mismatch) {
        guard a.count == b.count, !a.isEmpty else { throw Mismatch(description: "\(a.count) planes against \(b.count)") }
        for (pa, pb) in zip(a, b) where pa.width != pb.width || pa.height != pb.height {
            throw Mismatch(description: "plane \(pa.width)x\(pa.height) against \(pb.width)x\(pb.height)")
        }
        if frames == 0 {
            planeMSE = Array(repeating: 0, count: a.count)
            planeSSIM = Array(repeating: 0, count: a.count)
        } else if planeMSE.count != a.count {
            throw Mismatch(description: "\(a.count) planes after pictures with \(planeMSE.count)")
        }
        let samples = a.map { Double($0.width * $0.height) }
        let total = samples.reduce(0, +)
        var ssims: [Double] = []
        for (pa, pb) in zip(a, b) {
            guard let s = PlaneMetrics.ssim(pa, pb) else {
                throw Mismatch(description: "a \(pa.width)x\(pa.height) plane is too small for SSIM (8x8 at least)")
            }
            ssims.append(s)
        }
        var frameMSE = 0.0, frameSSIM = 0.0
        for i in a.indices {
            let mse = PlaneMetrics.meanSquaredError(a[i], b[i])
            planeMSE[i] += mse
            planeSSIM[i] += ssims[i]
            frameMSE += mse * samples[i] / total
            frameSSIM += ssims[i] * samples[i] / total
        }
        weightedMSE += frameMSE
        weightedSSIM += frameSSIM
        frames += 1
    }

    /// The averages so far; nil before the first pair.
    public var summary: QualitySummary? {
        guard frames > 0 else { return nil }
        let n = Double(frames)
        func plane(_ values: [Double], _ i: Int) -> Double? { i < values.count ? values[i] : nil }
        return QualitySummary(
            frames: frames,
            psnrY: plane(planeMSE, 0).map { Self.psnr(meanSquaredError: $0 / n) },
            psnrU: plane(planeMSE, 1).map { Self.psnr(meanSquaredError: $0 / n) },
            psnrV: plane(planeMSE, 2).map { Self.psnr(meanSquaredError: $0 / n) },
            psnr: Self.psnr(meanSquaredError: weightedMSE / n),
            ssimY: plane(planeSSIM, 0).map { $0 / n },
            ssimU: plane(planeSSIM, 1).map { $0 / n },
            ssimV: plane(planeSSIM, 2).map { $0 / n },
            ssim: weightedSSIM / n)
    }

    /// 10·log10(255² / MSE) for 8-bit samples, capped at ``psnrCap``.
    public static func psnr(meanSquaredError mse: Double) -> Double {
        guard mse > 0 else { return psnrCap }
        return min(psnrCap, 10 * log10(255.0 * 255.0 / mse))
    }
}

/// PSNR (dB) and SSIM of a clip against its reference, averaged over `frames` frame pairs.
public struct QualitySummary: Codable, Sendable, Hashable {
    public var frames: Int
    public var psnrY: Double?
    public var psnrU: Double?
    public var psnrV: Double?
    /// Overall PSNR, planes weighted by size.
    public var psnr: Double
    public var ssimY: Double?
    public var ssimU: Double?
    public var ssimV: Double?
    /// SSIM of all planes, weighted by size (FFmpeg's "All").
    public var ssim: Double

    public init(frames: Int, psnrY: Double?, psnrU: Double?, psnrV: Double?, psnr: Double,
                ssimY: Double?, ssimU: Double?, ssimV: Double?, ssim: Double) {
        self.frames = frames
        self.psnrY = psnrY
        self.psnrU = psnrU
        self.psnrV = psnrV
        self.psnr = psnr
        self.ssimY = ssimY
        self.ssimU = ssimU
        self.ssimV = ssimV
        self.ssim = ssim
    }
}

/// Per-plane error measures, computed the way FFmpeg's `psnr` and `ssim` filters compute them so
/// that our numbers can be checked against theirs.
public enum PlaneMetrics {
    /// Σ (a − b)² over the plane.
    public static func sumOfSquaredErrors(_ a: PlaneView, _ b: PlaneView) -> UInt64 {
        precondition(a.width == b.width && a.height == b.height, "planes differ in size")
        var total: UInt64 = 0
        for y in 0..<a.height {
            let rowA = a.baseAddress + y * a.bytesPerRow
            let rowB = b.baseAddress + y * b.bytesPerRow
            var rowSum: UInt32 = 0
            for x in 0..<a.width {
                let d = Int32(rowA[x]) &- Int32(rowB[x])
                rowSum &+= UInt32(bitPattern: d &* d)
            }
            total &+= UInt64(rowSum)
        }
        return total
    }

    /// Mean squared error: the sum of squared errors over the plane's sample count.
    public static func meanSquaredError(_ a: PlaneView, _ b: PlaneView) -> Double {
        Double(sumOfSquaredErrors(a, b)) / Double(a.width * a.height)
    }

    /// The mean SSIM of the plane as FFmpeg's `ssim` filter (after x264) computes it: sums over
    /// 4×4 blocks, combined into overlapping 8×8 windows on a 4-pixel grid; the partial blocks at
    /// the right and bottom edges are left out. Nil when the plane has fewer than 8×8 samples.
    public static func ssim(_ a: PlaneView, _ b: PlaneView) -> Double? {
        precondition(a.width == b.width && a.height == b.height, "planes differ in size")
        let blockColumns = a.width / 4, blockRows = a.height / 4
        guard blockColumns >= 2, blockRows >= 2 else { return nil }
        // Two rows of 4×4 block sums (s1, s2, ss, s12 per block), the previous and the current.
        var previous = [BlockSums](repeating: BlockSums(), count: blockColumns)
        var current = previous
        blockSums(a, b, blockRow: 0, into: &previous)
        var total = 0.0
        for row in 1..<blockRows {
            blockSums(a, b, blockRow: row, into: &current)
            var rowTotal = 0.0
            for i in 0..<(blockColumns - 1) {
                let w = previous[i] + previous[i + 1] + current[i] + current[i + 1]
                rowTotal += windowSSIM(w)
            }
            total += rowTotal
            swap(&previous, &current)
        }
        return total / Double((blockRows - 1) * (blockColumns - 1))
    }

    /// Sums of a, b, a² + b² and a·b over one 4×4 block (or four of them: one 8×8 window).
    struct BlockSums {
        var s1: Int64 = 0
        var s2: Int64 = 0
        var ss: Int64 = 0
        var s12: Int64 = 0

        static func + (l: BlockSums, r: BlockSums) -> BlockSums {
            BlockSums(s1: l.s1 + r.s1, s2: l.s2 + r.s2, ss: l.ss + r.ss, s12: l.s12 + r.s12)
        }
    }

    /// The block sums of one row of 4×4 blocks.
    private static func blockSums(_ a: PlaneView, _ b: PlaneView, blockRow: Int, into sums: inout [BlockSums]) {
        sums.withUnsafeMutableBufferPointer { out in
            for z in 0..<out.count {
                var s1: Int32 = 0, s2: Int32 = 0, ss: Int32 = 0, s12: Int32 = 0
                for y in 0..<4 {
                    let rowA = a.baseAddress + (blockRow * 4 + y) * a.bytesPerRow + z * 4
                    let rowB = b.baseAddress + (blockRow * 4 + y) * b.bytesPerRow + z * 4
                    for x in 0..<4 {
                        let va = Int32(rowA[x]), vb = Int32(rowB[x])
                        s1 &+= va
                        s2 &+= vb
                        ss &+= va &* va &+ vb &* vb
                        s12 &+= va &* vb
                    }
                }
                out[z] = BlockSums(s1: Int64(s1), s2: Int64(s2), ss: Int64(ss), s12: Int64(s12))
            }
        }
    }

    /// SSIM of one 8×8 window from its sums, with x264's constants for 8-bit samples.
    private static func windowSSIM(_ w: BlockSums) -> Double {
        let c1: Int64 = 416      // (int)(.01*.01*255*255*64 + .5)
        let c2: Int64 = 235_963  // (int)(.03*.03*255*255*64*63 + .5)
        let variances = w.ss * 64 - w.s1 * w.s1 - w.s2 * w.s2
        let covariance = w.s12 * 64 - w.s1 * w.s2
        let numerator = Double(2 * w.s1 * w.s2 + c1) * Double(2 * covariance + c2)
        let denominator = Double(w.s1 * w.s1 + w.s2 * w.s2 + c1) * Double(variances + c2)
        return numerator / denominator
    }
}

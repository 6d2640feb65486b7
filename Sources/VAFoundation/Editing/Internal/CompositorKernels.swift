/// The software compositor's pixel loops, over one plane at a time. They use only the standard
/// library and MediaCore's `VideoTransform`, so they can be compiled on their own for timing.

/// One plane of a source picture: `width`×`height` samples, rows `stride` samples apart.
struct SourcePlane<Sample: FixedWidthInteger & UnsignedInteger> {
    let base: UnsafePointer<Sample>
    let stride: Int
    let width: Int
    let height: Int

    init(base: UnsafePointer<Sample>, stride: Int, width: Int, height: Int) {
        precondition(width >= 0 && height >= 0 && width <= stride, "a \(width)-sample row does not fit a \(stride)-sample stride")
        (self.base, self.stride, self.width, self.height) = (base, stride, width, height)
    }
}

/// One plane of the picture being drawn.
struct TargetPlane<Sample: FixedWidthInteger & UnsignedInteger> {
    let base: UnsafeMutablePointer<Sample>
    let stride: Int
    let width: Int
    let height: Int

    init(base: UnsafeMutablePointer<Sample>, stride: Int, width: Int, height: Int) {
        precondition(width >= 0 && height >= 0 && width <= stride, "a \(width)-sample row does not fit a \(stride)-sample stride")
        (self.base, self.stride, self.width, self.height) = (base, stride, width, height)
    }
}

/// An area of a plane in its sample coordinates: `x0 ..< x1`, `y0 ..< y1`.
struct PlaneBox: Equatable {
    var x0: Double, y0: Double, x1: Double, y1: Double

    var isEmpty: Bool { !(x1 > x0 && y1 > y0) }
    var isIntegral: Bool { [x0, y0, x1, y1].allSatisfy { $0.rounded() == $0 } }

    func clipped(width: Int, height: Int) -> PlaneBox {
        PlaneBox(x0: max(x0, 0), y0: max(y0, 0), x1: min(x1, Double(width)), y1: min(y1, Double(height)))
    }
}

enum CompositorKernels {
    /// Sets every sample of `plane` to `value`.
    static func fill<Sample: FixedWidthInteger & UnsignedInteger>(_ plane: TargetPlane<Sample>, with value: Sample) {
        for y in 0..<plane.height {
            (plane.base + y * plane.stride).update(repeating: value, count: plane.width)
        }
    }

    /// Draws the `crop` area of `source` into `target` through `transform` (source sample
    /// coordinates to target ones, `CGAffineTransform` layout), blending with `opacity`.
    ///
    /// Each target sample whose centre maps back inside the crop area takes the bilinear sample of
    /// the source there (neighbours outside the crop area are clamped to its edge, so nothing
    /// outside it bleeds in) and becomes `source·opacity + target·(1 − opacity)`; samples whose
    /// centre maps outside stay as they are. An integer translation is a row copy (or row blend),
    /// a scale and translation uses per-column and per-row tables, anything else maps each sample.
    static func draw<Sample: FixedWidthInteger & UnsignedInteger>(_ source: SourcePlane<Sample>, crop: PlaneBox, transform t: VideoTransform, opacity: Double,
                             into target: TargetPlane<Sample>) {
        let crop = crop.clipped(width: source.width, height: source.height)
        let determinant = t.a * t.d - t.b * t.c
        guard !crop.isEmpty, opacity > 0, determinant.isFinite, abs(determinant) > 1e-12,
              [t.tx, t.ty].allSatisfy(\.isFinite) else { return }
        let opacity = min(opacity, 1)
        let corners = [(crop.x0, crop.y0), (crop.x1, crop.y0), (crop.x0, crop.y1), (crop.x1, crop.y1)]
            .map { (t.a * $0.0 + t.c * $0.1 + t.tx, t.b * $0.0 + t.d * $0.1 + t.ty) }
        let bounds = PlaneBox(x0: corners.map(\.0).min()!.rounded(.down), y0: corners.map(\.1).min()!.rounded(.down),
                              x1: corners.map(\.0).max()!.rounded(.up), y1: corners.map(\.1).max()!.rounded(.up))
            .clipped(width: target.width, height: target.height)
        guard !bounds.isEmpty else { return }
        if t.b == 0, t.c == 0 {
            if t.a == 1, t.d == 1, t.tx.rounded() == t.tx, t.ty.rounded() == t.ty, crop.isIntegral {
                drawTranslated(source, crop: crop, dx: Int(t.tx), dy: Int(t.ty), opacity: opacity, into: target)
            } else {
                drawScaled(source, crop: crop, transform: t, bounds: bounds, opacity: Float(opacity), into: target)
            }
        } else if isQuarterTurn(t), crop.isIntegral {
            drawTurned(source, crop: crop, transform: t, determinant: determinant, bounds: bounds, opacity: opacity, into: target)
        } else {
            drawMapped(source, crop: crop, transform: t, determinant: determinant, bounds: bounds,
                       opacity: Float(opacity), into: target)
        }
    }

    /// An integer translation of an integral crop area: rows copied, or blended in 16-bit fixed point.
    private static func drawTranslated<Sample: FixedWidthInteger & UnsignedInteger>(_ source: SourcePlane<Sample>, crop: PlaneBox, dx: Int, dy: Int, opacity: Double,
                                               into target: TargetPlane<Sample>) {
        let x0 = max(Int(crop.x0) + dx, 0), x1 = min(Int(crop.x1) + dx, target.width)
        let y0 = max(Int(crop.y0) + dy, 0), y1 = min(Int(crop.y1) + dy, target.height)
        guard x1 > x0, y1 > y0 else { return }
        let count = x1 - x0
        let weight = UInt32((opacity * 65536).rounded())
        for y in y0..<y1 {
            let from = source.base + (y - dy) * source.stride + (x0 - dx)
            let to = target.base + y * target.stride + x0
            if weight >= 65536 {
                to.update(from: from, count: count)
            } else {
                blendRow(from, into: to, count: count, weight: weight)
            }
        }
    }

    /// `to = (from·weight + to·(65536 − weight)) / 65536`, rounded.
    private static func blendRow<Sample: FixedWidthInteger & UnsignedInteger>(_ from: UnsafePointer<Sample>, into to: UnsafeMutablePointer<Sample>, count: Int, weight: UInt32) {
        let inverse = 65536 - weight
        for i in 0..<count {
            let mixed = UInt32(truncatingIfNeeded: from[i]) &* weight &+ UInt32(truncatingIfNeeded: to[i]) &* inverse &+ 32768
            to[i] = Sample(truncatingIfNeeded: mixed >> 16)
        }
    }

    /// A sample as a Float, through `Int32` so the conversion is one instruction once specialised.
    @inline(__always)
    private static func level<Sample: FixedWidthInteger & UnsignedInteger>(_ sample: Sample) -> Float {
        Float(Int32(truncatingIfNeeded: sample))
    }

    /// Where one target column (or row) samples the source: two neighbours and the weight of the second.
    private struct Tap {
        var first: Int, second: Int, weight: Float
    }

    /// The taps for target positions `from ..< to` along one axis, where the source coordinate of
    /// target position p is `(p − offset) / scale`; only positions whose centre falls in
    /// `low ..< high` are kept. Returns the first kept position and the taps from there on.
    private static func taps(from: Int, to: Int, scale: Double, offset: Double, low: Double, high: Double, size: Int) -> (start: Int, taps: [Tap]) {
        let first = max(Int(low.rounded(.down)), 0), last = min(Int(high.rounded(.up)) - 1, size - 1)
        var start = to
        var taps: [Tap] = []
        for p in from..<to {
            let u = (Double(p) + 0.5 - offset) / scale
            guard u >= low, u < high else {
                if !taps.isEmpty { break }
                continue
            }
            if taps.isEmpty { start = p }
            let position = u - 0.5
            let whole = position.rounded(.down)
            let i = Int(whole)
            taps.append(Tap(first: min(max(i, first), last), second: min(max(i + 1, first), last), weight: Float(position - whole)))
        }
        return (start, taps)
    }

    /// A scale and translation: bilinear sampling from per-column and per-row tables.
    private static func drawScaled<Sample: FixedWidthInteger & UnsignedInteger>(_ source: SourcePlane<Sample>, crop: PlaneBox, transform t: VideoTransform,
                                           bounds: PlaneBox, opacity: Float, into target: TargetPlane<Sample>) {
        let columns = taps(from: Int(bounds.x0), to: Int(bounds.x1), scale: t.a, offset: t.tx, low: crop.x0, high: crop.x1, size: source.width)
        let rows = taps(from: Int(bounds.y0), to: Int(bounds.y1), scale: t.d, offset: t.ty, low: crop.y0, high: crop.y1, size: source.height)
        let keep = 1 - opacity
        for (r, row) in rows.taps.enumerated() {
            let upper = source.base + row.first * source.stride
            let lower = source.base + row.second * source.stride
            let out = target.base + (rows.start + r) * target.stride + columns.start
            let fy = row.weight
            for (c, column) in columns.taps.enumerated() {
                let fx = column.weight
                let top = level(upper[column.first]) * (1 - fx) + level(upper[column.second]) * fx
                let bottom = level(lower[column.first]) * (1 - fx) + level(lower[column.second]) * fx
                let value = top * (1 - fy) + bottom * fy
                out[c] = Sample(truncatingIfNeeded: Int32(value * opacity + level(out[c]) * keep + 0.5))
            }
        }
    }

    /// True for a turn by a multiple of 90°, possibly mirrored, by a whole number of samples:
    /// every target sample then takes exactly one source sample.
    private static func isQuarterTurn(_ t: VideoTransform) -> Bool {
        let units = [t.a, t.b, t.c, t.d]
        return units.allSatisfy { $0 == 0 || $0 == 1 || $0 == -1 } && abs(t.a * t.d - t.b * t.c) == 1
            && t.tx.rounded() == t.tx && t.ty.rounded() == t.ty
    }

    /// The side of the square tiles the mapped paths walk, so that reading the source across its
    /// rows (a quarter turn reads down its columns) stays in cache.
    private static let tile = 32

    /// A quarter turn of an integral crop area: each target sample copies (or blends) the one
    /// source sample its centre maps to, whose offset is linear in x and y.
    private static func drawTurned<Sample>(_ source: SourcePlane<Sample>, crop: PlaneBox, transform t: VideoTransform,
                                           determinant: Double, bounds: PlaneBox, opacity: Double, into target: TargetPlane<Sample>) {
        // The inverse of (x, y) ↦ (a·x + c·y + tx, b·x + d·y + ty), all in whole numbers: the source
        // sample under target sample (x, y) is (ua·x + uc·y + u0, vb·x + vd·y + v0).
        let ua = Int(t.d / determinant), uc = Int(-t.c / determinant), vb = Int(-t.b / determinant), vd = Int(t.a / determinant)
        let ut = (t.c * t.ty - t.d * t.tx) / determinant, vt = (t.b * t.tx - t.a * t.ty) / determinant
        let u0 = Int((Double(ua + uc) * 0.5 + ut - 0.5).rounded()), v0 = Int((Double(vb + vd) * 0.5 + vt - 0.5).rounded())
        let stepX = ua + vb * source.stride, stepY = uc + vd * source.stride
        let origin = u0 + v0 * source.stride
        let weight = UInt32((opacity * 65536).rounded()), inverse = 65536 - weight
        // The crop area maps onto an axis-aligned rectangle: `bounds`, where every sample is covered.
        for tileY in Swift.stride(from: Int(bounds.y0), to: Int(bounds.y1), by: tile) {
            for tileX in Swift.stride(from: Int(bounds.x0), to: Int(bounds.x1), by: tile) {
                for y in tileY..<min(tileY + tile, Int(bounds.y1)) {
                    let out = target.base + y * target.stride
                    let rowStart = origin + y * stepY
                    for x in tileX..<min(tileX + tile, Int(bounds.x1)) {
                        let sample = source.base[rowStart + x * stepX]
                        if weight >= 65536 {
                            out[x] = sample
                        } else {
                            let mixed = UInt32(truncatingIfNeeded: sample) &* weight &+ UInt32(truncatingIfNeeded: out[x]) &* inverse &+ 32768
                            out[x] = Sample(truncatingIfNeeded: mixed >> 16)
                        }
                    }
                }
            }
        }
    }

    /// Any invertible transform: each target sample's centre is mapped back into the source.
    ///
    /// Source positions step across a row in 32.32 fixed point and samples are weighed with
    /// 16-bit bilinear weights, so the loop has no floating point; the blend rounds once.
    private static func drawMapped<Sample: FixedWidthInteger & UnsignedInteger>(_ source: SourcePlane<Sample>, crop: PlaneBox, transform t: VideoTransform, determinant: Double,
                                                                               bounds: PlaneBox, opacity: Float, into target: TargetPlane<Sample>) {
        // The inverse of (x, y) ↦ (a·x + c·y + tx, b·x + d·y + ty).
        let ua = t.d / determinant, uc = -t.c / determinant, ut = (t.c * t.ty - t.d * t.tx) / determinant
        let vb = -t.b / determinant, vd = t.a / determinant, vt = (t.b * t.tx - t.a * t.ty) / determinant
        // A layer shrunk more than 65536 times is smaller than a sample: skipping it keeps every
        // source position below 2^31 samples, well inside the fixed-point range.
        guard [ua, uc, vb, vd].allSatisfy({ abs($0) <= 65536 }) else { return }
        let one = 4_294_967_296.0
        func fixed(_ value: Double) -> Int { Int((min(max(value, -0x1p30), 0x1p30) * one).rounded()) }
        let (stepU, stepV) = (fixed(ua), fixed(vb))
        let (cropX0, cropX1, cropY0, cropY1) = (fixed(crop.x0), fixed(crop.x1), fixed(crop.y0), fixed(crop.y1))
        let firstColumn = max(Int(crop.x0.rounded(.down)), 0), lastColumn = min(Int(crop.x1.rounded(.up)) - 1, source.width - 1)
        let firstRow = max(Int(crop.y0.rounded(.down)), 0), lastRow = min(Int(crop.y1.rounded(.up)) - 1, source.height - 1)
        let weight = Int((Double(opacity) * 65536).rounded()), keep = 65536 - weight
        let half = 1 << 31
        for tileY in Swift.stride(from: Int(bounds.y0), to: Int(bounds.y1), by: tile) {
            for tileX in Swift.stride(from: Int(bounds.x0), to: Int(bounds.x1), by: tile) {
                for y in tileY..<min(tileY + tile, Int(bounds.y1)) {
                    let centreY = Double(y) + 0.5, centreX = Double(tileX) + 0.5
                    var u = fixed(ua * centreX + uc * centreY + ut), v = fixed(vb * centreX + vd * centreY + vt)
                    let out = target.base + y * target.stride
                    for x in tileX..<min(tileX + tile, Int(bounds.x1)) {
                        defer { u &+= stepU; v &+= stepV }
                        guard u >= cropX0, u < cropX1, v >= cropY0, v < cropY1 else { continue }
                        // The sample grid is offset by half a sample: positions are of sample centres.
                        let pu = u &- half, pv = v &- half
                        let i = pu >> 32, j = pv >> 32
                        let fx = (pu >> 16) & 0xFFFF, fy = (pv >> 16) & 0xFFFF
                        let i0 = min(max(i, firstColumn), lastColumn), i1 = min(max(i + 1, firstColumn), lastColumn)
                        let j0 = min(max(j, firstRow), lastRow), j1 = min(max(j + 1, firstRow), lastRow)
                        let upper = source.base + j0 * source.stride, lower = source.base + j1 * source.stride
                        let top = Int(upper[i0]) &* (65536 - fx) &+ Int(upper[i1]) &* fx
                        let bottom = Int(lower[i0]) &* (65536 - fx) &+ Int(lower[i1]) &* fx
                        let value = top &* (65536 - fy) &+ bottom &* fy
                        let mixed = value &* weight &+ (Int(out[x]) << 32) &* keep &+ (1 << 47)
                        out[x] = Sample(truncatingIfNeeded: mixed >> 48)
                    }
                }
            }
        }
    }
}

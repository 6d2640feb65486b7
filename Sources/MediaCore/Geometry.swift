/// A width and height in pixels (or display units once a transform is applied).
public struct Size: Sendable, Hashable, Codable, CustomStringConvertible {
    public var width: Double
    public var height: Double
    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }
    public init(width: Int, height: Int) { self.init(width: Double(width), height: Double(height)) }
    public static let zero = Size(width: 0, height: 0)
    public var description: String { "\(Int(width.rounded()))x\(Int(height.rounded()))" }

    /// Whether a picture of `other`'s size fits in one of this size.
    public func fits(_ other: Size) -> Bool { other.width <= width && other.height <= height }

    /// The size after `transform`, as absolute extents (what a player shows).
    public func applying(_ transform: VideoTransform) -> Size {
        Size(width: abs(transform.a * width + transform.c * height),
             height: abs(transform.b * width + transform.d * height))
    }
}

/// The transform a player applies to a video picture, with `CGAffineTransform`'s layout: a point (x, y) maps to
/// (a·x + c·y + tx, b·x + d·y + ty). A track's `preferredTransform` is one of these.
public struct VideoTransform: Sendable, Hashable, Codable {
    public var a: Double, b: Double, c: Double, d: Double, tx: Double, ty: Double
    public init(a: Double, b: Double, c: Double, d: Double, tx: Double, ty: Double) {
        (self.a, self.b, self.c, self.d, self.tx, self.ty) = (a, b, c, d, tx, ty)
    }
    public static let identity = VideoTransform(a: 1, b: 0, c: 0, d: 1, tx: 0, ty: 0)

    /// The transform a player applies to show a `size` picture turned `degrees` clockwise
    /// (0, 90, 180, 270), mirrored horizontally first if `mirrored`; translated so the
    /// result starts at the origin, as QuickTime writers store it.
    public init(rotationDegrees degrees: Int, mirrored: Bool = false, size: Size) {
        let (w, h) = (size.width, size.height)
        var t: VideoTransform
        switch ((degrees % 360) + 360) % 360 {
        case 90: t = VideoTransform(a: 0, b: 1, c: -1, d: 0, tx: h, ty: 0)
        case 180: t = VideoTransform(a: -1, b: 0, c: 0, d: -1, tx: w, ty: h)
        case 270: t = VideoTransform(a: 0, b: -1, c: 1, d: 0, tx: 0, ty: w)
        default: t = .identity
        }
        if mirrored {
            // Flip x before rotating: x' = w - x.
            t = VideoTransform(a: -t.a, b: -t.b, c: t.c, d: t.d, tx: t.a * w + t.tx, ty: t.b * w + t.ty)
        }
        self = t
    }

    /// Clockwise rotation in degrees a player applies (0, 90, 180 or 270), to the nearest quarter turn.
    public var rotationDegrees: Int {
        // Undo a horizontal flip first, then read where the x axis points.
        let (x, y) = isMirrored ? (-a, -b) : (a, b)
        if abs(x) >= abs(y) { return x >= 0 ? 0 : 180 }
        return y > 0 ? 90 : 270
    }

    /// True when the transform flips the picture (negative determinant).
    public var isMirrored: Bool { a * d - b * c < 0 }
}

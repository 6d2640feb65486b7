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

    /// The sides in whole pixels, rounded toward zero, for code that counts pixels: a side that
    /// is negative or not a number counts as 0, one beyond `Int32.max` as `Int32.max`, so a
    /// caller's odd size cannot trap the conversion.
    public var pixelWidth: Int { Self.pixels(width) }
    public var pixelHeight: Int { Self.pixels(height) }

    private static func pixels(_ side: Double) -> Int {
        side.isNaN ? 0 : Int(min(max(side, 0), Double(Int32.max)))
    }

    /// Whether a picture of `other`'s size fits in one of this size.
    public func fits(_ other: Size) -> Bool { other.width <= width && other.height <= height }

    /// The size after `transform`, as absolute extents (what a player shows).
    public func applying(_ transform: VideoTransform) -> Size {
        Size(width: abs(transform.a * width + transform.c * height),
             height: abs(transform.b * width + transform.d * height))
    }
}

/// A rectangle in picture coordinates (pixels, origin at the top left, y down), with Doubles
/// as `CGRect` has, so ramps can pass through fractional positions. A layer instruction's crop
/// rectangle is one; so are the regions a scaler reads and writes, in whole pixels.
public struct Rect: Sendable, Hashable, Codable, CustomStringConvertible {
    public var x: Double, y: Double, width: Double, height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        (self.x, self.y, self.width, self.height) = (x, y, width, height)
    }

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.init(x: Double(x), y: Double(y), width: Double(width), height: Double(height))
    }

    public static let zero = Rect(x: 0, y: 0, width: 0, height: 0)

    /// The first x to the right of the rectangle.
    public var maxX: Double { x + width }
    /// The first y below the rectangle.
    public var maxY: Double { y + height }
    /// True when the rectangle holds no area (or a side is NaN).
    public var isEmpty: Bool { !(width > 0 && height > 0) }
    public var size: Size { Size(width: width, height: height) }

    /// The origin in whole pixels, rounded toward zero; one not a number counts as 0, one
    /// beyond the `Int32` range as its bound, so a caller's odd rectangle cannot trap.
    public var pixelX: Int { Self.pixels(x) }
    public var pixelY: Int { Self.pixels(y) }
    /// The sides in whole pixels, as `Size` counts them (a negative side is 0).
    public var pixelWidth: Int { size.pixelWidth }
    public var pixelHeight: Int { size.pixelHeight }

    private static func pixels(_ coordinate: Double) -> Int {
        coordinate.isNaN ? 0 : Int(min(max(coordinate, Double(Int32.min)), Double(Int32.max)))
    }

    /// The area both rectangles share, `zero` when they do not meet.
    public func intersection(_ other: Rect) -> Rect {
        let left = Swift.max(x, other.x), top = Swift.max(y, other.y)
        let right = Swift.min(maxX, other.maxX), bottom = Swift.min(maxY, other.maxY)
        guard right > left, bottom > top else { return .zero }
        return Rect(x: left, y: top, width: right - left, height: bottom - top)
    }

    public var description: String { "(\(x), \(y), \(width)x\(height))" }
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

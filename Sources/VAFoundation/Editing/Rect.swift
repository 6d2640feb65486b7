/// A rectangle in picture coordinates (pixels, origin at the top left, y down), with Doubles so
/// ramps can pass through fractional positions. A layer instruction's crop rectangle is one.
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

    /// The area both rectangles share, `zero` when they do not meet.
    public func intersection(_ other: Rect) -> Rect {
        let left = Swift.max(x, other.x), top = Swift.max(y, other.y)
        let right = Swift.min(maxX, other.maxX), bottom = Swift.min(maxY, other.maxY)
        guard right > left, bottom > top else { return .zero }
        return Rect(x: left, y: top, width: right - left, height: bottom - top)
    }

    public var description: String { "(\(x), \(y), \(width)x\(height))" }
}

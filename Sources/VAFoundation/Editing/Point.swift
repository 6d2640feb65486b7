/// A point in picture coordinates (pixels, origin at the top left, y down), with Doubles so
/// ramps can pass through fractional positions. An overlay layer's position is one.
public struct Point: Sendable, Hashable, Codable, CustomStringConvertible {
    public var x: Double, y: Double

    /// A point from its coordinates.
    public init(x: Double, y: Double) {
        (self.x, self.y) = (x, y)
    }

    /// The picture's top-left corner.
    public static let zero = Point(x: 0, y: 0)

    /// "(x, y)", for messages.
    public var description: String { "(\(x), \(y))" }
}

extension Point: LinearlyInterpolable {
    static func interpolate(from: Point, to: Point, fraction f: Double) -> Point {
        Point(x: .interpolate(from: from.x, to: to.x, fraction: f), y: .interpolate(from: from.y, to: to.y, fraction: f))
    }
}

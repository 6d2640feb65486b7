/// The kind of media a track carries, as `AVMediaType` names it.
public struct MediaType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let video = MediaType(rawValue: "video")
    public static let audio = MediaType(rawValue: "audio")
    public static let subtitle = MediaType(rawValue: "subtitle")
    public static let data = MediaType(rawValue: "data")

    public var description: String { rawValue }
}

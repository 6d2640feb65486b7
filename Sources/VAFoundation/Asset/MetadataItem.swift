/// One metadata entry of an asset or track (`AVMetadataItem`'s role): the container's key,
/// where it came from, the common identifier it maps to, and its value as text.
public struct MetadataItem: Sendable, Hashable, Codable {
    /// A metadata key understood across containers (`AVMetadataIdentifier`'s common keys).
    public struct Identifier: RawRepresentable, Hashable, Sendable, Codable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let title = Identifier(rawValue: "title")
        public static let artist = Identifier(rawValue: "artist")
        public static let album = Identifier(rawValue: "album")
        public static let creationDate = Identifier(rawValue: "creationDate")
        /// ISO 6709 location text such as "+52.3693+006.6761+10.535/".
        public static let location = Identifier(rawValue: "location")
        public static let make = Identifier(rawValue: "make")
        public static let model = Identifier(rawValue: "model")
        public static let software = Identifier(rawValue: "software")
        public static let comment = Identifier(rawValue: "comment")
        public static let copyright = Identifier(rawValue: "copyright")
        public static let description = Identifier(rawValue: "description")
        public static let language = Identifier(rawValue: "language")
    }

    /// The container's key as FFmpeg reports it ("com.apple.quicktime.make", "creation_time").
    public var key: String
    /// The common identifier this key maps to, nil for container-specific keys.
    public var identifier: Identifier?
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
        self.identifier = Self.commonIdentifiers[key.lowercased()]
    }

    private static let commonIdentifiers: [String: Identifier] = [
        "title": .title, "com.apple.quicktime.title": .title,
        "artist": .artist, "album_artist": .artist, "com.apple.quicktime.artist": .artist,
        "album": .album,
        "creation_time": .creationDate, "date": .creationDate, "com.apple.quicktime.creationdate": .creationDate,
        "location": .location, "com.apple.quicktime.location.iso6709": .location,
        "make": .make, "com.apple.quicktime.make": .make, "com.android.manufacturer": .make,
        "model": .model, "com.apple.quicktime.model": .model, "com.android.model": .model,
        "software": .software, "com.apple.quicktime.software": .software, "encoder": .software,
        "comment": .comment, "com.apple.quicktime.comment": .comment,
        "copyright": .copyright, "com.apple.quicktime.copyright": .copyright,
        "description": .description, "com.apple.quicktime.description": .description,
        "language": .language,
    ]

    /// Items for every key of `dictionary`, sorted by key so output is stable.
    /// `items` as they should be written into a `fileType` file: the container keys a muxer
    /// writes itself are left out, and location, make and model given only under QuickTime's
    /// reverse-DNS keys are also given under the common keys (MP4's `©xyz`, MOV's `©mak`/`©mod`),
    /// which players that ignore QuickTime metadata read.
    static func carriedOver(_ items: [MetadataItem]) -> [MetadataItem] {
        let muxerKeys: Set<String> = ["major_brand", "minor_version", "compatible_brands", "encoder"]
        var carried = items.filter { !muxerKeys.contains($0.key.lowercased()) }
        let keys = Set(carried.map { $0.key.lowercased() })
        for (common, quickTime) in [("location", "com.apple.quicktime.location.iso6709"), ("make", "com.apple.quicktime.make"),
                                    ("model", "com.apple.quicktime.model")] where !keys.contains(common) {
            if let item = carried.first(where: { $0.key.lowercased() == quickTime }) {
                carried.append(MetadataItem(key: common, value: item.value))
            }
        }
        return carried
    }

    /// True for reverse-DNS keys ("com.apple.quicktime.make"), which mp4/mov files hold only
    /// in QuickTime metadata (`mdta` keys).
    var isReverseDNS: Bool { key.split(separator: ".").count >= 3 }

    static func items(_ dictionary: [String: String]) -> [MetadataItem] {
        dictionary.keys.sorted().map { MetadataItem(key: $0, value: dictionary[$0]!) }
    }
}

/// A point on Earth parsed from ISO 6709 text ("+34.0754-118.2543/", "+52.3693+006.6761+10.535/").
public struct GeoLocation: Sendable, Hashable, Codable {
    public var latitude: Double
    public var longitude: Double
    public var altitude: Double?

    /// Parses the decimal-degree form of ISO 6709 that cameras and phones write.
    public init?(iso6709 text: String) {
        var numbers: [Double] = []
        var current = ""
        for character in text {
            if character == "+" || character == "-" || character == "/" {
                if !current.isEmpty {
                    guard let n = Double(current) else { return nil }
                    numbers.append(n)
                }
                current = character == "/" ? "" : String(character)
                if character == "/" { break }
            } else if character.isNumber || character == "." {
                current.append(character)
            } else {
                return nil
            }
        }
        if !current.isEmpty, let n = Double(current) { numbers.append(n) }
        guard numbers.count >= 2, abs(numbers[0]) <= 90, abs(numbers[1]) <= 180 else { return nil }
        latitude = numbers[0]
        longitude = numbers[1]
        altitude = numbers.count > 2 ? numbers[2] : nil
    }
}

extension Array where Element == MetadataItem {
    /// The first item with `identifier`, e.g. `metadata.first(.title)`.
    public func first(_ identifier: MetadataItem.Identifier) -> MetadataItem? {
        first { $0.identifier == identifier }
    }
}

/// A rational media time with Core Media's `CMTime` semantics: `value / timescale` seconds.
///
/// Non-numeric times (invalid, indefinite, ±infinity) are flagged, never encoded in the value.
public struct MediaTime: Sendable, Hashable {
    /// The flags of a `MediaTime`, with `CMTimeFlags`' bit values.
    public struct Flags: OptionSet, Sendable, Hashable, Codable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let valid = Flags(rawValue: 1 << 0)
        public static let hasBeenRounded = Flags(rawValue: 1 << 1)
        public static let positiveInfinity = Flags(rawValue: 1 << 2)
        public static let negativeInfinity = Flags(rawValue: 1 << 3)
        public static let indefinite = Flags(rawValue: 1 << 4)
    }

    public var value: Int64
    public var timescale: Int32
    public var flags: Flags
    public var epoch: Int64

    public init(value: Int64, timescale: Int32, flags: Flags = .valid, epoch: Int64 = 0) {
        self.value = value
        self.timescale = timescale
        self.flags = timescale > 0 ? flags : flags.subtracting(.valid)
        self.epoch = epoch
    }

    public static let zero = MediaTime(value: 0, timescale: 1)
    public static let invalid = MediaTime(value: 0, timescale: 0, flags: [])

    public var isValid: Bool { flags.contains(.valid) }

    /// The time in seconds; NaN when invalid.
    public var seconds: Double {
        guard isValid else { return .nan }
        return Double(value) / Double(timescale)
    }
}

/// A time range with `CMTimeRange` semantics: `start ..< start + duration`.
public struct MediaTimeRange: Sendable, Hashable {
    public var start: MediaTime
    public var duration: MediaTime
    public init(start: MediaTime, duration: MediaTime) {
        self.start = start
        self.duration = duration
    }
}

/// A mapping from a source range to a target range (`CMTimeMapping`); an empty edit has an invalid source start.
public struct MediaTimeMapping: Sendable, Hashable {
    public var source: MediaTimeRange
    public var target: MediaTimeRange
    public init(source: MediaTimeRange, target: MediaTimeRange) {
        self.source = source
        self.target = target
    }
}

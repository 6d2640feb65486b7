/// An error from the media engine: what kind of failure, a one-line message naming the file
/// and the cause, and the lower-level error (FFmpeg, VA-API, POSIX) that caused it.
public struct MediaError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Open, so new kinds can be added without breaking callers.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The file does not exist.
        public static let fileNotFound = Code(rawValue: "fileNotFound")
        /// The file exists but this process may not read (or write) it.
        public static let permissionDenied = Code(rawValue: "permissionDenied")
        /// The path names a directory or device, not a regular file.
        public static let notARegularFile = Code(rawValue: "notARegularFile")
        /// The file is empty or no demuxer recognises its contents.
        public static let notMediaFile = Code(rawValue: "notMediaFile")
        /// The file is recognised but its structure or data is damaged or cut short.
        public static let corruptOrTruncated = Code(rawValue: "corruptOrTruncated")
        /// The file holds no audio, video, subtitle or data tracks.
        public static let noTracks = Code(rawValue: "noTracks")
        /// A codec, format or setting exists but this build or device cannot handle it.
        public static let unsupported = Code(rawValue: "unsupported")
        /// Decoding failed.
        public static let decodeFailed = Code(rawValue: "decodeFailed")
        /// Encoding failed.
        public static let encodeFailed = Code(rawValue: "encodeFailed")
        /// Writing the output container failed.
        public static let writeFailed = Code(rawValue: "writeFailed")
        /// The output already exists and overwriting was not allowed.
        public static let outputExists = Code(rawValue: "outputExists")
        /// A caller passed an argument or combination of settings that cannot work.
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// The operation was called in a state that does not allow it.
        public static let invalidState = Code(rawValue: "invalidState")
        /// The operation was cancelled.
        public static let cancelled = Code(rawValue: "cancelled")
        /// The hardware device failed or is missing.
        public static let hardwareFailed = Code(rawValue: "hardwareFailed")
        /// An input/output error from the operating system.
        public static let ioError = Code(rawValue: "ioError")
    }

    public var code: Code
    /// One line: the file and the cause, e.g. "clip.mp4: moov atom missing (file truncated?)".
    public var message: String
    /// The file the error concerns, if any.
    public var path: String?
    /// The lower-level error, e.g. an `FFmpegError` with its code and the failing call.
    public var underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, path: String? = nil, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.underlying = underlying
    }

    public var description: String {
        var line = path.map { "\($0): \(message)" } ?? message
        if let underlying { line += " (\(underlying))" }
        return line
    }

    /// Lets `catch MediaError.Code.fileNotFound` match a `MediaError` with that code.
    public static func ~= (code: Code, error: MediaError) -> Bool { error.code == code }
}

extension MediaError.Code {
    /// Lets `catch MediaError.Code.fileNotFound` match any error that is a `MediaError` with that code.
    public static func ~= (code: MediaError.Code, error: any Error) -> Bool {
        (error as? MediaError)?.code == code
    }
}

internal import CFFmpeg

/// An error returned by an FFmpeg call: the negative `AVERROR` code, FFmpeg's text for it,
/// and the name of the call that failed.
public struct FFmpegError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An FFmpeg error code, open so codes added by newer FFmpeg releases round-trip.
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// End of file: a state for readers and decoders, surfaced as an error only by calls
        /// that cannot return it as a state.
        public static let endOfFile = Code(rawValue: cffmpeg_AVERROR_EOF())
        /// EAGAIN: the call needs the other side (input or output) first.
        public static let tryAgain = Code(rawValue: cffmpeg_averror(EAGAIN))
        public static let invalidData = Code(rawValue: cffmpeg_AVERROR_INVALIDDATA())
        public static let invalidArgument = Code(rawValue: cffmpeg_averror(EINVAL))
        public static let outOfMemory = Code(rawValue: cffmpeg_averror(ENOMEM))
        public static let noSuchFile = Code(rawValue: cffmpeg_averror(ENOENT))
        public static let permissionDenied = Code(rawValue: cffmpeg_averror(EACCES))
        public static let ioError = Code(rawValue: cffmpeg_averror(EIO))
        public static let decoderNotFound = Code(rawValue: cffmpeg_AVERROR_DECODER_NOT_FOUND())
        public static let encoderNotFound = Code(rawValue: cffmpeg_AVERROR_ENCODER_NOT_FOUND())
        public static let notSupported = Code(rawValue: cffmpeg_averror(ENOSYS))
        public static let patchWelcome = Code(rawValue: -0x4557_4150) // FFERRTAG('P','A','W','E')
        /// AVERROR_EXTERNAL: a library under FFmpeg failed (libavcodec's VA-API code returns it
        /// for driver errors; we use it for failed VA calls of our own).
        public static let externalFailure = Code(rawValue: -0x2054_5845) // FFERRTAG('E','X','T',' ')
    }

    public let code: Code
    /// The name of the failing FFmpeg call, e.g. `avcodec_send_packet`.
    public let function: String

    public init(code: Code, function: String) {
        self.code = code
        self.function = function
    }

    init(_ rawCode: Int32, _ function: String) {
        self.init(code: Code(rawValue: rawCode), function: function)
    }

    /// FFmpeg's own text for the code. The corresponding C function is `av_strerror`.
    public var message: String { Self.message(for: code.rawValue) }

    public var description: String { "\(function): \(message) (\(code.rawValue))" }

    static func message(for code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: Int(cffmpeg_AV_ERROR_MAX_STRING_SIZE()))
        av_strerror(code, &buffer, buffer.count)
        let end = buffer.firstIndex(of: 0) ?? buffer.endIndex
        return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension FFmpegError.Code {
    /// Lets `catch FFmpegError.Code.invalidData` match an `FFmpegError` with that code.
    public static func ~= (code: FFmpegError.Code, error: any Error) -> Bool {
        (error as? FFmpegError)?.code == code
    }
}

/// Throws an `FFmpegError` naming `function` when `result` is negative; returns it otherwise.
@discardableResult
func check(_ result: Int32, _ function: String) throws(FFmpegError) -> Int32 {
    if result < 0 { throw FFmpegError(result, function) }
    return result
}

import Foundation

/// What an export did: where, how, with which settings and encoders, and what it cost.
public struct ExportResult: Sendable, Codable {
    /// Which path a stream took: software, hardware (decode, scale and encode on the GPU) or hybrid.
    public enum Path: String, Sendable, Codable { case software, hybrid, hardware }

    public struct DroppedTrack: Sendable, Codable, Hashable {
        public var trackID: Int
        public var mediaType: String
        public var reason: String
    }

    public var outputURL: URL
    public var fileType: FileType
    public var preset: String
    public var videoSettings: VideoSettings?
    public var audioSettings: AudioSettings?
    public var videoEncoder: EncoderChoice?
    /// The constant output frame rate, nil when the source timing was kept.
    public var frameRate: Double?
    public var videoFrames = 0
    /// How long the output lasts: to the end of its last picture or sound, within the span exported.
    public var duration: MediaTime = .zero
    public var outputBytes: Int64 = 0
    public var elapsedSeconds = 0.0
    public var path: Path = .software
    public var pathReason = ""
    /// Copies between GPU surfaces and host memory during the export, and their bytes.
    public var hostTransfers = 0
    public var hostTransferBytes = 0
    /// The VA-API device used ("/dev/dri/renderD128 (iHD)"), nil for the software path.
    public var hardwareDevice: String?
    /// Set when the device failed mid-export and the output was redone in software: the failure.
    public var fallbackReason: String?
    public var droppedTracks: [DroppedTrack] = []
    /// Per audio track written, when a loudness target was set: measured, gain, result.
    public var loudness: [LoudnessNormalization] = []
    public var stoppedAtFileLengthLimit = false
    /// Things the output could not keep from the source, e.g. rotation in Matroska.
    public var warnings: [String] = []

    init(outputURL: URL, fileType: FileType, preset: String) {
        self.outputURL = outputURL
        self.fileType = fileType
        self.preset = preset
    }

    /// `duration` in seconds, as reports print it.
    public var durationSeconds: Double { duration.seconds }

    /// Media seconds exported per wall-clock second.
    public var speed: Double { elapsedSeconds > 0 ? durationSeconds / elapsedSeconds : 0 }
}

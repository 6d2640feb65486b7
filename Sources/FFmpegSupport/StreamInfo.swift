import MediaCore

/// A snapshot of one demuxed stream's properties, taken when the demuxer opened the file.
///
/// Plain values only, so it outlives the demuxer and crosses tasks freely.
public struct StreamInfo: Sendable {
    public enum Kind: String, Sendable { case video, audio, subtitle, data, attachment, unknown }

    public var index: Int
    /// The container's own identifier for the stream (mp4 track ID, matroska track number,
    /// MPEG-TS PID); 0 when the container has none.
    public var containerID: Int
    public var kind: Kind
    /// FFmpeg's short codec name ("h264", "aac"); "none" when the demuxer could not tell.
    public var codecName: String
    public var codec: CodecID
    /// FFmpeg's profile name ("High", "Main 10", "LC"), or the number when FFmpeg has no name
    /// for it (as ffprobe prints it), nil if unknown.
    public var profile: String?
    /// Codec level (H.264 level 4.1 is 41), nil if unknown.
    public var level: Int?
    public var timeBase: Rational
    /// First presentation timestamp in `timeBase`, nil if unknown.
    public var startTime: Int64?
    /// Duration in `timeBase`, nil if unknown.
    public var duration: Int64?
    /// Number of frames the container declares (0 when it doesn't say).
    public var declaredFrameCount: Int64
    public var averageFrameRate: Rational
    /// The lowest frame rate at which all timestamps are exact (FFmpeg's `r_frame_rate`).
    public var realFrameRate: Rational
    public var bitRate: Int64
    public var codecTag: UInt32
    public var isDefault: Bool
    public var isAttachedPicture: Bool
    public var metadata: [String: String]

    // Video
    public var width: Int
    public var height: Int
    public var pixelFormat: PixelFormatID
    /// The sample aspect ratio the stream is shown with: the container's (MP4 `pasp`, Matroska
    /// display size) where it declares one, else the codec's, as ffmpeg decides; 0/1 when unknown.
    public var sampleAspectRatio: Rational
    /// The sample aspect ratio the codec's bitstream declares (H.264's VUI), 0/1 when unknown;
    /// `sampleAspectRatio` differs from it where the container overrides it.
    public var codecSampleAspectRatio: Rational
    public var bitsPerRawSample: Int
    /// Frames of reordering delay (B-frames); 0 when decode order is presentation order.
    public var videoDelay: Int
    public var colorPrimaries: String?
    public var colorTransfer: String?
    public var colorMatrix: String?
    public var colorRange: String?
    /// "progressive", "tt", "bb", "tb", "bt", or nil if unknown.
    public var fieldOrder: String?
    /// The 3×3 display matrix (16.16 / 2.30 fixed point, row major) when the stream carries one.
    public var displayMatrix: [Int32]?
    /// HDR side data: the mastering display, the content light level, the Dolby Vision record.
    public var masteringDisplay: MasteringDisplay? = nil
    public var contentLightLevel: ContentLightLevel? = nil
    public var dolbyVision: DolbyVisionConfiguration? = nil

    // Audio
    public var sampleRate: Int
    public var channelCount: Int
    /// FFmpeg's description of the layout ("stereo", "5.1(side)").
    public var channelLayout: String?
    public var sampleFormat: SampleFormatID
    /// Samples per frame for codecs with fixed frames (1024 for AAC-LC), 0 when variable.
    public var frameSize: Int
    /// Priming samples to skip at the start (encoder delay).
    public var initialPadding: Int

    /// Whether the container's sample aspect ratio replaces a visibly different one that the
    /// bitstream declares: both known, over 0.4 % apart (libavformat's tolerance for an aspect
    /// mismatch, which a Matroska display size rounded to whole pixels stays within).
    public var containerOverridesCodecAspect: Bool {
        let (shown, coded) = (sampleAspectRatio, codecSampleAspectRatio)
        return shown.isPositive && coded.isPositive && abs(shown.doubleValue - coded.doubleValue) > 0.004 * coded.doubleValue
    }
}

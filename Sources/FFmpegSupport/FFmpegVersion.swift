internal import CFFmpeg

/// Versions of the FFmpeg libraries this process runs against.
public enum FFmpegVersion {
    /// libavcodec's version as "major.minor.micro".
    public static var libavcodec: String { format(avcodec_version()) }
    /// libavformat's version as "major.minor.micro".
    public static var libavformat: String { format(avformat_version()) }

    private static func format(_ v: UInt32) -> String { "\(v >> 16).\((v >> 8) & 0xff).\(v & 0xff)" }
}

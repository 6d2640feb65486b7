internal import CFFmpeg

/// The FFmpeg libraries this process runs with, as `--version` reports them.
public enum FFmpegLibraries {
    /// "libavformat 59.27.100, libavcodec 59.37.100, libavfilter 8.44.100" (the loaded libraries,
    /// which may differ from the headers built against). The corresponding C functions are
    /// `avformat_version`, `avcodec_version` and `avfilter_version`.
    public static var versions: String {
        func text(_ name: String, _ version: UInt32) -> String { "\(name) \(version >> 16).\((version >> 8) & 0xff).\(version & 0xff)" }
        return [text("libavformat", avformat_version()), text("libavcodec", avcodec_version()), text("libavfilter", avfilter_version())]
            .joined(separator: ", ")
    }
}

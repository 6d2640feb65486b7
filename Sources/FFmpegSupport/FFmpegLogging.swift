internal import CFFmpeg
import MediaCore

/// How much FFmpeg's own logging prints to stderr. Quiet (errors only from our own typed
/// errors) unless a caller asks for more, e.g. `vaf --verbose`.
public enum FFmpegLogging {
    public enum Level: Int32, Sendable {
        case quiet = -8, fatal = 8, error = 16, warning = 24, info = 32, verbose = 40, debug = 48
    }

    private static let chosen = Locked<Level?>(nil)

    /// Sets FFmpeg's log level for the process. The corresponding C function is `av_log_set_level`.
    public static func setLevel(_ level: Level) {
        chosen.withLock { $0 = level }
        av_log_set_level(level.rawValue)
    }

    /// Applies the quiet default unless a level was chosen explicitly.
    static func installDefaultLevel() {
        let level = chosen.withLock { current -> Level in
            if let current { return current }
            current = .quiet
            return .quiet
        }
        av_log_set_level(level.rawValue)
    }
}

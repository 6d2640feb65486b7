import ArgumentParser
import FFmpegSupport
import HardwareAcceleration

/// `--verbose` and `--quiet`: how much goes to stderr. FFmpeg's own messages (av_log) are off by
/// default, because every failure already reaches the user as a typed error naming the call;
/// `--verbose` lets them through to explain one (why an encoder refused its settings).
struct LoggingOptions: ParsableArguments {
    @Flag(help: "Also print FFmpeg's and libva's own messages (info and above) on stderr, e.g. why an encoder refused its settings.")
    var verbose = false

    @Flag(help: "Print only errors on stderr: no progress, no summary table; FFmpeg's own error messages too.")
    var quiet = false

    func validate() throws {
        if verbose && quiet { throw ValidationError("--verbose and --quiet conflict: choose one.") }
    }

    /// Sets FFmpeg's log level for the run: info with `--verbose`, errors with `--quiet`,
    /// nothing otherwise; libva's messages are printed with `--verbose` only (they are kept for
    /// the one-line diagnosis of a device that fails either way).
    func apply() {
        if verbose { FFmpegLogging.setLevel(.info) } else if quiet { FFmpegLogging.setLevel(.error) }
        if verbose { LibvaLogging.level = .info }
    }
}

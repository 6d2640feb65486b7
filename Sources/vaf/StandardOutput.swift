import Foundation
import Glibc
import VAFoundation

/// vaf's stdout, written with `write(2)` so that a reader that went away (`vaf transcode --json
/// … | head -c1`) is an `EPIPE` vaf sees, SIGPIPE being ignored, rather than a death mid-export
/// or `FileHandle`'s trap. The first `EPIPE` calls the handler a command set to cancel its work.
enum StandardOutput {
    private struct State {
        var readerGone = false
        var onReaderGone: (@Sendable () -> Void)?
    }
    private static let state = Locked(State())

    /// Ignores SIGPIPE for the whole process, so that writes to a closed pipe fail with `EPIPE`. Call at start-up.
    static func ignoreBrokenPipes() { signal(SIGPIPE, SIG_IGN) }

    /// Writes `data` whole; false when the reader has gone, now or before.
    @discardableResult
    static func write(_ data: Data) -> Bool {
        guard !state.withLock({ $0.readerGone }) else { return false }
        let failure: Int32? = data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
        guard failure == EPIPE else { return failure == nil }
        let handler = state.withLock { s -> (@Sendable () -> Void)? in
            s.readerGone = true
            return s.onReaderGone
        }
        handler?()
        return false
    }

    /// Sets what to do when the reader goes (nil: nothing); called at once if it has gone already.
    static func whenReaderGoes(_ handler: (@Sendable () -> Void)?) {
        let gone = state.withLock { s -> Bool in
            s.onReaderGone = handler
            return s.readerGone
        }
        if gone { handler?() }
    }
}

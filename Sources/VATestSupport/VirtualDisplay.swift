import ChildProcess
import Foundation

/// An Xvfb X server on a free display number, so that libva's X11 back end has a display on
/// machines without a GPU (libva 2.17 loads the driver named by `LIBVA_DRIVER_NAME` on an X11
/// display; its DRM path needs a DRM node).
///
/// The server is started with `-nolisten tcp`; the display is ready when its socket
/// `/tmp/.X11-unix/X<n>` exists. ``stop()`` (or deinit) terminates it.
// @unchecked: `number` and `pid` are set in init; `stopped`, the only mutable state, is guarded by `lock`.
public final class VirtualDisplay: @unchecked Sendable {
    /// The display number, as in `:<number>`.
    public let number: Int
    /// The display name to put in `DISPLAY` or to pass to `XOpenDisplay`.
    public var name: String { ":\(number)" }

    /// The Xvfb child, reaped by ``stop()``.
    private let pid: pid_t
    private let lock = NSLock()
    private var stopped = false

    private init(number: Int, pid: pid_t) {
        self.number = number
        self.pid = pid
    }

    deinit { stop() }

    /// Starts Xvfb on the first free display number at or above `firstNumber`.
    ///
    /// A number is free when neither its socket nor its lock file exists; if another process
    /// takes the number between the check and Xvfb's start, Xvfb exits and the next is tried.
    public static func start(
        firstNumber: Int = 90,
        attempts: Int = 60,
        xvfbPath: String = "/usr/bin/Xvfb",
        timeout: TimeInterval = 15
    ) throws -> VirtualDisplay {
        guard FileManager.default.isExecutableFile(atPath: xvfbPath) else {
            throw VATestSupportError.missingTool(xvfbPath, remedy: "install Debian's xvfb package (Hardware/setup.sh does)")
        }
        // One start at a time in this process, and never a number this process already uses:
        // two tests racing for the same number would otherwise share (and kill) one server.
        startLock.lock()
        defer { startLock.unlock() }
        var number = firstNumber
        var lastFailure = ""
        for _ in 0..<attempts {
            defer { number += 1 }
            let socket = "/tmp/.X11-unix/X\(number)"
            let lockFile = "/tmp/.X\(number)-lock"
            if numbersInUse.contains(number) || FileManager.default.fileExists(atPath: socket)
                || FileManager.default.fileExists(atPath: lockFile) {
                continue
            }
            let pid = try ChildProcess.spawn(xvfbPath, [":\(number)", "-nolisten", "tcp", "-noreset", "-screen", "0", "640x480x24"])
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                // Ready when the socket exists and the lock file names our server (another
                // process's Xvfb may have taken the number in the meantime).
                if FileManager.default.fileExists(atPath: socket), ChildProcess.isRunning(pid),
                   let owner = try? String(contentsOfFile: lockFile, encoding: .utf8),
                   Int32(owner.trimmingCharacters(in: .whitespacesAndNewlines)) == pid {
                    numbersInUse.insert(number)
                    return VirtualDisplay(number: number, pid: pid)
                }
                if !ChildProcess.isRunning(pid) { break }
                Thread.sleep(forTimeInterval: 0.02)
            }
            if ChildProcess.isRunning(pid) {
                let owner = (try? String(contentsOfFile: lockFile, encoding: .utf8))
                    .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                kill(pid, SIGKILL)
                ChildProcess.reap(pid, timeout: 10)
                if owner == pid {
                    try? FileManager.default.removeItem(atPath: socket)
                    try? FileManager.default.removeItem(atPath: lockFile)
                }
                lastFailure = "Xvfb :\(number) did not create \(socket) within \(timeout) s"
            } else {
                ChildProcess.reap(pid, timeout: 10)
                lastFailure = "Xvfb :\(number) exited before its socket appeared"
            }
        }
        throw VATestSupportError.displayUnavailable(lastFailure)
    }

    /// Stops the X server (SIGTERM, then SIGKILL after 5 s), reaps it, and removes its socket
    /// and lock file if it could not. Safe to call more than once.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        kill(pid, SIGTERM)
        if !ChildProcess.reap(pid, timeout: 5) {
            kill(pid, SIGKILL)
            ChildProcess.reap(pid, timeout: 10)
        }
        try? FileManager.default.removeItem(atPath: "/tmp/.X11-unix/X\(number)")
        try? FileManager.default.removeItem(atPath: "/tmp/.X\(number)-lock")
        Self.startLock.lock()
        Self.numbersInUse.remove(number)
        Self.startLock.unlock()
    }

    private static let startLock = NSLock()
    nonisolated(unsafe) private static var numbersInUse = Set<Int>() // guarded by startLock
}

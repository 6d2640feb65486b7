import Foundation

/// An Xvfb X server on a free display number, so that libva's X11 back end has a display on
/// machines without a GPU (libva 2.17 loads the driver named by `LIBVA_DRIVER_NAME` on an X11
/// display; its DRM path needs a DRM node).
///
/// The server is started with `-nolisten tcp`; the display is ready when its socket
/// `/tmp/.X11-unix/X<n>` exists. ``stop()`` (or deinit) terminates it.
public final class VirtualDisplay: @unchecked Sendable {
    /// The display number, as in `:<number>`.
    public let number: Int
    /// The display name to put in `DISPLAY` or to pass to `XOpenDisplay`.
    public var name: String { ":\(number)" }

    private let process: Process
    private let lock = NSLock()
    private var stopped = false

    private init(number: Int, process: Process) {
        self.number = number
        self.process = process
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
            let process = Process()
            process.executableURL = URL(fileURLWithPath: xvfbPath)
            process.arguments = [":\(number)", "-nolisten", "tcp", "-screen", "0", "640x480x24"]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                // Ready when the socket exists and the lock file names our server (another
                // process's Xvfb may have taken the number in the meantime).
                if FileManager.default.fileExists(atPath: socket), process.isRunning,
                   let owner = try? String(contentsOfFile: lockFile, encoding: .utf8),
                   Int32(owner.trimmingCharacters(in: .whitespacesAndNewlines)) == process.processIdentifier {
                    numbersInUse.insert(number)
                    return VirtualDisplay(number: number, process: process)
                }
                if !process.isRunning { break }
                Thread.sleep(forTimeInterval: 0.02)
            }
            if process.isRunning {
                let owner = (try? String(contentsOfFile: lockFile, encoding: .utf8))
                    .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                if owner == process.processIdentifier {
                    try? FileManager.default.removeItem(atPath: socket)
                    try? FileManager.default.removeItem(atPath: lockFile)
                }
                lastFailure = "Xvfb :\(number) did not create \(socket) within \(timeout) s"
            } else {
                lastFailure = "Xvfb :\(number) exited with status \(process.terminationStatus)"
            }
        }
        throw VATestSupportError.displayUnavailable(lastFailure)
    }

    /// Kills the X server, waits for it, and removes its socket and lock file. Safe to call
    /// more than once.
    ///
    /// SIGKILL, not SIGTERM: a child started by Foundation's Process from a test runner's thread
    /// inherits that thread's blocked signal mask (SIGTERM included), so Xvfb would never see
    /// SIGTERM. Killed, it cannot remove `/tmp/.X<n>-lock` and its socket, so this does.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
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

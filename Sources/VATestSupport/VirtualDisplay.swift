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
            // Watch before starting, so the socket's creation cannot be missed.
            let changes = try DirectoryChanges(watching: ["/tmp", "/tmp/.X11-unix"])
            let pid = try ChildProcess.spawn(xvfbPath, [":\(number)", "-nolisten", "tcp", "-noreset", "-screen", "0", "640x480x24"])
            let deadline = DispatchTime.now() + timeout
            while true {
                // Ready when the socket exists and the lock file names our server (another
                // process's Xvfb may have taken the number in the meantime).
                if FileManager.default.fileExists(atPath: socket), ChildProcess.isRunning(pid),
                   let owner = try? String(contentsOfFile: lockFile, encoding: .utf8),
                   Int32(owner.trimmingCharacters(in: .whitespacesAndNewlines)) == pid {
                    numbersInUse.insert(number)
                    return VirtualDisplay(number: number, pid: pid)
                }
                // A server that gives up removes its lock file, which wakes this wait too.
                if !ChildProcess.isRunning(pid) || !changes.wait(until: deadline) { break }
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

/// Wakes a waiting thread whenever an entry is created, removed or renamed in the watched
/// directories (inotify, read by a dispatch source): waiting for a file is suspension on
/// the kernel's events, not a sleep-and-look loop. A directory missing at the start is
/// watched once it is created in a watched parent.
final class DirectoryChanges {
    private let descriptor: Int32
    private let source: DispatchSourceRead
    private let changed = DispatchSemaphore(value: 0)

    init(watching directories: [String]) throws {
        descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw VATestSupportError.displayUnavailable("inotify_init1 failed (errno \(errno))") }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_ATTRIB)
        for directory in directories { _ = inotify_add_watch(descriptor, directory, mask) }
        let (fd, semaphore) = (descriptor, changed)
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue.global())
        source.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(fd, &buffer, buffer.count) > 0 {}
            // A directory created in a watched one (/tmp/.X11-unix on a fresh machine) is watched too.
            for directory in directories { _ = inotify_add_watch(fd, directory, mask) }
            semaphore.signal()
        }
        source.setCancelHandler { close(fd) }
        source.resume()
    }

    deinit { source.cancel() }

    /// Waits for the next change; false when `deadline` passed first.
    func wait(until deadline: DispatchTime) -> Bool {
        changed.wait(timeout: deadline) == .success
    }
}

import ChildProcess
import Foundation

/// A virtual X display plus the SoftVA driver: everything a test needs to run real VA-API
/// clients (libva in-process, `ffmpeg`, `vainfo`) without a GPU.
///
/// ```swift
/// let env = try SoftVAEnvironment.start()
/// defer { env.stop() }
/// let result = try env.run("/usr/bin/vainfo", ["--display", "x11"])
/// ```
public final class SoftVAEnvironment: Sendable {
    public let display: VirtualDisplay
    public let driver: SoftVADriver

    public init(display: VirtualDisplay, driver: SoftVADriver) {
        self.display = display
        self.driver = driver
    }

    /// Locates the driver and starts Xvfb on a free display.
    public static func start() throws -> SoftVAEnvironment {
        let driver = try SoftVADriver.locate()
        let display = try VirtualDisplay.start()
        return SoftVAEnvironment(display: display, driver: driver)
    }

    /// Stops the X server.
    public func stop() { display.stop() }

    /// The variables that point libva at SoftVA on this display, plus SoftVA's own settings.
    public func variables(_ options: SoftVAOptions = SoftVAOptions()) -> [String: String?] {
        var v: [String: String?] = [
            "DISPLAY": display.name,
            "LIBVA_DRIVER_NAME": SoftVADriver.driverName,
            "LIBVA_DRIVERS_PATH": driver.directory,
        ]
        for (key, value) in options.variables { v[key] = value }
        return v
    }

    /// The current process's environment with ``variables(_:)`` applied: for child processes.
    public func environment(_ options: SoftVAOptions = SoftVAOptions()) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for (key, value) in variables(options) {
            if let value { env[key] = value } else { env.removeValue(forKey: key) }
        }
        return env
    }

    /// Applies ``variables(_:)`` to the current process and runs `body` (which calls
    /// `vaInitialize`: libva and SoftVA read the variables there and never again) while holding
    /// a process-wide lock, so that concurrent tests cannot initialise with each other's settings.
    /// The variables are put back as they were before the lock is let go: a child process or a
    /// device opened later by another test must not count into this test's counters file.
    public func withProcessEnvironment<T>(_ options: SoftVAOptions = SoftVAOptions(),
                                          _ body: () throws -> T) rethrows -> T {
        Self.processEnvironmentLock.lock()
        defer { Self.processEnvironmentLock.unlock() }
        let applied = variables(options)
        let previous = applied.keys.map { key in (key, getenv(key).map { String(cString: $0) }) }
        defer {
            for (key, value) in previous {
                if let value { setenv(key, value, 1) } else { unsetenv(key) }
            }
        }
        for (key, value) in applied {
            if let value { setenv(key, value, 1) } else { unsetenv(key) }
        }
        return try body()
    }

    private static let processEnvironmentLock = NSLock()

    /// Runs a program with SoftVA's environment and waits for it. Output goes through files, so
    /// a chatty child cannot fill a pipe and block.
    public func run(_ executable: String, _ arguments: [String],
                    options: SoftVAOptions = SoftVAOptions()) throws -> ProcessResult {
        try ProcessResult.run(executable, arguments, environment: environment(options))
    }
}

/// How a child process ended and what it printed.
public struct ProcessResult: Sendable {
    public let status: Int32
    /// True when the process ended by a signal (a crash), not by exiting.
    public let signalled: Bool
    /// True when it ran past its time limit and was killed.
    public let timedOut: Bool
    public let stdout: String
    public let stderr: String

    public var succeeded: Bool { !signalled && status == 0 }

    /// Runs a program and waits for it, killing it after `timeLimit` seconds: a hung child
    /// fails its test instead of stalling the whole run.
    public static func run(_ executable: String, _ arguments: [String],
                           environment: [String: String]? = nil, timeLimit: Double = 600) throws -> ProcessResult {
        let child = try ChildProcess.run(executable, arguments, environment: environment, timeLimit: timeLimit)
        return ProcessResult(
            status: child.shellStatus,
            signalled: child.signal != nil,
            timedOut: child.timedOut,
            stdout: child.stdout,
            stderr: child.timedOut ? child.stderr + "\n\(executable) was killed after \(Int(timeLimit)) s" : child.stderr
        )
    }
}

import Dispatch
import Foundation
import Glibc
import MediaCore

/// How a child process ended, what it printed and what it cost (from `wait4`'s rusage).
public struct ChildProcessResult: Sendable {
    /// The exit status, or nil when a signal ended the process.
    public var exitStatus: Int32?
    /// The signal that ended the process, if one did.
    public var signal: Int32?
    /// True when the child was killed for running past its time limit.
    public var timedOut: Bool
    public var wallSeconds: Double
    public var userSeconds: Double
    public var systemSeconds: Double
    /// ru_maxrss in bytes (Linux reports kilobytes).
    public var peakRSSBytes: Int64
    /// What it wrote to standard output and error, byte for byte.
    public var standardOutput: Data
    public var standardError: Data

    public var stdout: String { String(decoding: standardOutput, as: UTF8.self) }
    public var stderr: String { String(decoding: standardError, as: UTF8.self) }

    public var succeeded: Bool { exitStatus == 0 }

    /// The status a shell reports: the exit status, or 128 + the signal that ended the process.
    public var shellStatus: Int32 { exitStatus ?? 128 + (signal ?? 0) }

    /// A failing program's one-line reason: the last "Error: …" line of stderr (ArgumentParser
    /// follows it with a usage hint), else the last non-empty line.
    public var lastErrorLine: String? {
        let lines = stderr.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return lines.last { $0.hasPrefix("Error:") } ?? lines.last
    }

    /// Why the run failed, in one line; nil when it succeeded.
    public var failure: String? {
        if succeeded { return nil }
        if timedOut { return "killed after running past the time limit" }
        let how = signal.map { "killed by signal \($0)" } ?? "exit status \(exitStatus ?? -1)"
        return lastErrorLine.map { "\($0) (\(how))" } ?? how
    }
}

/// Runs programs as children with posix_spawn and reaps them with `wait4`.
///
/// Not Foundation's `Process`: its `waitUntilExit` spins a run loop and, called from many
/// threads at once, can wait forever for a child that has already exited. Output goes to
/// files, not pipes, so a chatty child never blocks on a full pipe. Children start with an
/// empty signal mask: threads of Swift's runtime block signals the child must see.
public enum ChildProcess {
    /// Why a child could not be started.
    public struct SpawnError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `executable arguments…` with `environment` (nil: this process's) and waits for it;
    /// after `timeLimit` seconds it is killed (SIGKILL) and reported as timed out.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           scratchDirectory: URL = FileManager.default.temporaryDirectory,
                           timeLimit: Double) throws -> ChildProcessResult {
        let id = UUID().uuidString.prefix(8)
        let outPath = scratchDirectory.appendingPathComponent("child-\(id).out").path
        let errPath = scratchDirectory.appendingPathComponent("child-\(id).err").path
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        let started = monotonicSeconds()
        let child = try spawn(executable, arguments, environment: environment, stdout: outPath, stderr: errPath)

        // The timer kills the child only while it has not been reaped, so a recycled pid is never hit.
        let state = Locked((exited: false, killed: false))
        DispatchQueue.global().asyncAfter(deadline: .now() + timeLimit) {
            state.withLock {
                guard !$0.exited else { return }
                $0.killed = true
                kill(child, SIGKILL)
            }
        }
        waitForExitWithoutReaping(child)
        let wall = monotonicSeconds() - started
        let killed = state.withLock {
            $0.exited = true
            return $0.killed
        }
        var usage = rusage()
        var waitStatus: Int32 = 0
        while wait4(child, &waitStatus, 0, &usage) < 0 && errno == EINTR {}

        let termSignal = waitStatus & 0x7f
        return ChildProcessResult(
            exitStatus: termSignal == 0 ? (waitStatus >> 8) & 0xff : nil,
            signal: termSignal == 0 ? nil : termSignal,
            timedOut: killed,
            wallSeconds: wall,
            userSeconds: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
            systemSeconds: Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6,
            peakRSSBytes: Int64(usage.ru_maxrss) * 1024,
            standardOutput: FileManager.default.contents(atPath: outPath) ?? Data(),
            standardError: FileManager.default.contents(atPath: errPath) ?? Data())
    }

    /// `run` off Swift's cooperative pool, for async callers.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           scratchDirectory: URL = FileManager.default.temporaryDirectory,
                           timeLimit: Double) async throws -> ChildProcessResult {
        try await withLockedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result {
                    try run(executable, arguments, environment: environment, scratchDirectory: scratchDirectory, timeLimit: timeLimit)
                })
            }
        }
    }

    /// Starts `executable` with its output going to `stdout` and `stderr` (paths; /dev/null
    /// discards) and returns its pid. The caller reaps it.
    public static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                             stdout: String = "/dev/null", stderr: String = "/dev/null") throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        return pid
    }

    /// True while `pid` (a child of this process) has not exited; it is not reaped.
    public static func isRunning(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return false }
        return info._sifields._sigchld.si_pid == 0
    }

    /// Waits for child `pid` to exit and reaps it; true when it ended before `timeout` seconds.
    @discardableResult
    public static func reap(_ pid: pid_t, timeout: Double) -> Bool {
        // A thread blocks in waitid until the child exits; this one waits on a semaphore with
        // the deadline. After a timeout that thread stays blocked until the child does exit.
        let exited = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            waitForExitWithoutReaping(pid)
            exited.signal()
        }
        guard exited.wait(timeout: .now() + timeout) == .success else { return false }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return true
    }

    /// Blocks until child `pid` has exited, leaving it unreaped (its pid cannot be recycled).
    private static func waitForExitWithoutReaping(_ pid: pid_t) {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
    }

    /// CLOCK_MONOTONIC in seconds.
    public static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// The full path of `name` on PATH, nil when it is not installed.
    public static func which(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

import Dispatch
import Foundation
import Glibc
import Synchronization

/// How a measured child process ended and what it cost, from `wait4`'s rusage: the same
/// accounting for our transcodes and for FFmpeg, since each runs as its own process.
struct ChildMeasurement: Sendable {
    /// The exit status, or nil when a signal ended the process.
    var exitStatus: Int32?
    /// The signal that ended the process, if one did.
    var signal: Int32?
    /// True when the bench killed the child for running past its time limit.
    var timedOut: Bool
    var wallSeconds: Double
    var userSeconds: Double
    var systemSeconds: Double
    /// ru_maxrss in bytes (Linux reports kilobytes).
    var peakRSSBytes: Int64
    var stdout: String
    var stderr: String

    var succeeded: Bool { exitStatus == 0 }

    /// A failing program's one-line reason: the last "Error: …" line of stderr (ArgumentParser
    /// follows it with a usage hint), else the last non-empty line.
    var lastErrorLine: String? {
        let lines = stderr.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return lines.last { $0.hasPrefix("Error:") } ?? lines.last
    }

    /// Why the run failed, in one line; nil when it succeeded.
    var failure: String? {
        if succeeded { return nil }
        if timedOut { return "killed after running past the time limit" }
        let how = signal.map { "killed by signal \($0)" } ?? "exit status \(exitStatus ?? -1)"
        return lastErrorLine.map { "\($0) (\(how))" } ?? how
    }
}

/// Runs one program as a child with posix_spawn and reaps it with wait4, so wall time, CPU
/// seconds and peak RSS are the child's own (Foundation's Process gives no rusage).
///
/// Output goes to files, not pipes, so a chatty child can never block on a full pipe, and
/// reading it costs the child nothing. The child starts with an empty signal mask: threads of
/// Swift's runtime may block signals that the child must see.
enum MeasuredProcess {
    /// Why a child could not be started.
    struct SpawnError: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `executable arguments…` with `environment` and waits for it off the cooperative
    /// pool; after `timeLimit` seconds it is killed (SIGKILL) and reported as timed out.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                    scratchDirectory: URL, timeLimit: Double) async throws -> ChildMeasurement {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result {
                    try runBlocking(executable, arguments, environment: environment, scratchDirectory: scratchDirectory, timeLimit: timeLimit)
                })
            }
        }
    }

    /// The blocking body of `run`.
    static func runBlocking(_ executable: String, _ arguments: [String], environment: [String: String],
                            scratchDirectory: URL, timeLimit: Double) throws -> ChildMeasurement {
        let id = UUID().uuidString.prefix(8)
        let outPath = scratchDirectory.appendingPathComponent("child-\(id).out").path
        let errPath = scratchDirectory.appendingPathComponent("child-\(id).err").path
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let started = monotonicSeconds()
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(status)))")
        }

        // The watchdog kills the child only while it has not been reaped, so a recycled pid is never hit.
        let child = pid
        let state = Mutex((exited: false, killed: false))
        DispatchQueue.global().asyncAfter(deadline: .now() + timeLimit) {
            state.withLock {
                guard !$0.exited else { return }
                $0.killed = true
                kill(child, SIGKILL)
            }
        }
        var info = siginfo_t()
        while waitid(P_PID, id_t(child), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        let wall = monotonicSeconds() - started
        let killed = state.withLock {
            $0.exited = true
            return $0.killed
        }
        var usage = rusage()
        var waitStatus: Int32 = 0
        while wait4(child, &waitStatus, 0, &usage) < 0 && errno == EINTR {}

        let termSignal = waitStatus & 0x7f
        return ChildMeasurement(
            exitStatus: termSignal == 0 ? (waitStatus >> 8) & 0xff : nil,
            signal: termSignal == 0 ? nil : termSignal,
            timedOut: killed,
            wallSeconds: wall,
            userSeconds: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
            systemSeconds: Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6,
            peakRSSBytes: Int64(usage.ru_maxrss) * 1024,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    /// CLOCK_MONOTONIC in seconds.
    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// The full path of `name` on PATH, nil when it is not installed.
    static func which(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

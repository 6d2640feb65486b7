import Foundation
import Testing

/// A partial file belongs to whoever holds its lock, not to a PID: a run removes the partial
/// files of the outputs it writes that no writer holds, wherever the writers ran.
@Suite(.serialized) struct PartialFileLockTests {
    static let clip = Vaf.fixture("testsrc_320x240_30fps_3s.mp4")

    /// Whether this machine lets a test start a process in a PID namespace of its own (root,
    /// and no seccomp profile refusing `unshare`).
    static let canUnsharePIDNamespace = (try? Vaf.run(executable: "/usr/bin/unshare", ["--pid", "--fork", "--mount-proc", "/bin/true"]))?.status == 0

    private static func temporaryDirectory(_ label: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A run killed as PID 1 (a container's entrypoint) leaves a partial file whose PID always
    /// exists; the next run writing that output removes it, since nothing holds its lock. A
    /// locked one, another output's and names that are not vaf's stay.
    @Test func unlockedPartialFilesOfThisRunsOutputsAreRemoved() throws {
        let dir = try Self.temporaryDirectory("stale")
        defer { try? FileManager.default.removeItem(at: dir) }
        let deadPID1 = dir.appendingPathComponent(".testsrc_320x240_30fps_3s.vaf-partial-1-1f2e.mp4")
        let locked = dir.appendingPathComponent(".testsrc_320x240_30fps_3s.vaf-partial-1-abc.mp4")
        let kept = [locked,
                    dir.appendingPathComponent(".other.vaf-partial-1-77.mp4"),                  // not an output of this run
                    dir.appendingPathComponent("testsrc_320x240_30fps_3s.vaf-partial-1-9.mp4"),  // not hidden: not vaf's name
                    dir.appendingPathComponent(".testsrc_320x240_30fps_3s.vaf-partial-xyz.mp4")] // no process ID
        for file in [deadPID1] + kept { try Data("x".utf8).write(to: file) }
        // This test holds the lock as a live writer would, in another process as far as the lock goes.
        let descriptor = open(locked.path, O_RDWR)
        try #require(descriptor >= 0 && flock(descriptor, LOCK_EX) == 0)
        defer { close(descriptor) }

        let result = try Vaf.run(["transcode", Self.clip, "--preset", "640x480", "--output-dir", dir.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: deadPID1.path), "the partial file nobody holds is removed")
        #expect(result.stderr.contains("removed \(deadPID1.path), a partial file whose writer is gone"), "\(result.stderr)")
        for file in kept { #expect(FileManager.default.fileExists(atPath: file.path), "\(file.lastPathComponent) kept") }
    }

    /// A shard in its own PID namespace (another pod on a shared folder) writes a partial file
    /// whose PID names no process here; another run's clean-up, planning the same output name,
    /// leaves it alone because its writer holds the lock, and the export completes.
    @Test(.enabled(if: canUnsharePIDNamespace, "unshare --pid --fork --mount-proc was refused (needs root and no seccomp filter on unshare)"))
    func aWriterInAnotherPIDNamespaceKeepsItsPartialFile() throws {
        let dir = try Self.temporaryDirectory("pidns")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (inputs, others, outputs) = (dir.appendingPathComponent("in"), dir.appendingPathComponent("other"), dir.appendingPathComponent("out"))
        for folder in [inputs, others, outputs] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        let long = inputs.appendingPathComponent("long.mp4")
        let made = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "10",
                                                               "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", long.path])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        // Another input whose output has the same name: its run plans long.mp4, then fails on its input.
        try Data("not a movie".utf8).write(to: others.appendingPathComponent("long.mp4"))

        // In the new namespace the next PID is set near pid_max, a number no process here has,
        // and the shell forks vaf (the `exit` after it keeps bash from exec'ing it as PID 1).
        let pidMax = Int(try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))!
        let script = #"echo $4 > /proc/sys/kernel/ns_last_pid && "$0" transcode "$1" --preset 640x480 --speed slower --output-dir "$2" 2> "$3"; exit $?"#
        let firstLog = dir.appendingPathComponent("first.log")
        let first = Process()
        first.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        first.arguments = ["--pid", "--fork", "--mount-proc", "/bin/bash", "-c", script, Vaf.binary, long.path, outputs.path, firstLog.path, "\(pidMax - 1000)"]
        first.standardOutput = FileHandle.nullDevice
        try first.run()
        defer { if first.isRunning { first.terminate() } }

        var partial: String?
        let deadline = Date().addingTimeInterval(60)
        while partial == nil && first.isRunning && Date() < deadline {
            partial = try FileManager.default.contentsOfDirectory(atPath: outputs.path).first { $0.hasPrefix(".long.vaf-partial-") }
            if partial == nil { Thread.sleep(forTimeInterval: 0.02) }
        }
        let name = try #require(partial, "the first export's partial file appeared")
        let pid = try #require(Int32(name.dropFirst(".long.vaf-partial-".count).prefix { $0.isNumber }))
        try #require(kill(pid, 0) != 0 && errno == ESRCH, "the writer's PID \(pid) names no process in this namespace")

        let second = try Vaf.run(["transcode", others.appendingPathComponent("long.mp4").path, "--output-dir", outputs.path])
        #expect(second.status == 65, "the second run's input is no movie: \(second.stderr)")
        #expect(!second.stderr.contains("removed"), "\(second.stderr)")
        try #require(first.isRunning && FileManager.default.fileExists(atPath: outputs.appendingPathComponent(name).path),
                     "the first export was still writing when the second run's clean-up ran")

        first.waitUntilExit()
        let log = (try? String(contentsOf: firstLog, encoding: .utf8)) ?? ""
        #expect(first.terminationStatus == 0, "\(log)")
        let info = try Vaf.run(["info", "--json", outputs.appendingPathComponent("long.mp4").path])
        let duration = try #require(try Vaf.jsonLines(info.stdout).first?["durationSeconds"] as? Double, "\(info.stderr)")
        #expect(abs(duration - 10) < 0.1, "the whole export is there: \(duration) s")
        let hidden = try FileManager.default.contentsOfDirectory(atPath: outputs.path).filter { $0.hasPrefix(".") && $0 != ".vaf-journal.jsonl" }
        #expect(hidden.isEmpty, "\(hidden)")
    }
}

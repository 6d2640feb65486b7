import ChildProcess
import Foundation
import Testing

/// A one-node Slurm cluster on localhost, in a folder of its own: munged with its own key and
/// socket, slurmctld and slurmd on ports no other run uses. Started as root (slurmd runs jobs
/// as their users), stopped by `stop()` whether the test passed or not.
final class SlurmCluster {
    static let daemons = ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch"]
    static var canRun: Bool { getuid() == 0 && daemons.allSatisfy { FileManager.default.isExecutableFile(atPath: $0) } }

    let dir: URL
    var config: String { dir.appendingPathComponent("slurm.conf").path }
    var environment: [String: String] { ProcessInfo.processInfo.environment.merging(["SLURM_CONF": config]) { $1 } }

    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-slurm-\(UUID().uuidString.prefix(8))")
        for sub in ["state", "spool", "log", "munge"] {
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let munge = dir.appendingPathComponent("munge")
        chmod(munge.path, 0o700)
        var key = [UInt8](repeating: 0, count: 1024)
        for i in key.indices { key[i] = UInt8.random(in: 0...255) }
        try Data(key).write(to: munge.appendingPathComponent("munge.key"))
        chmod(munge.appendingPathComponent("munge.key").path, 0o600)
        let port = 20_000 + Int(getpid()) % 20_000
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "localhost"
        let path = dir.path
        try """
            ClusterName=vaf
            SlurmctldHost=\(host)(127.0.0.1)
            SlurmctldPort=\(port)
            SlurmdPort=\(port + 1)
            SlurmUser=root
            SlurmdUser=root
            AuthType=auth/munge
            AuthInfo=socket=\(path)/munge/munge.socket
            CredType=cred/munge
            StateSaveLocation=\(path)/state
            SlurmdSpoolDir=\(path)/spool
            SlurmctldPidFile=\(path)/slurmctld.pid
            SlurmdPidFile=\(path)/slurmd.pid
            SlurmctldLogFile=\(path)/log/slurmctld.log
            SlurmdLogFile=\(path)/log/slurmd.log
            ProctrackType=proctrack/linuxproc
            TaskPlugin=task/none
            SelectType=select/cons_tres
            SelectTypeParameters=CR_Core
            JobAcctGatherType=jobacct_gather/none
            AccountingStorageType=accounting_storage/none
            MpiDefault=none
            ReturnToService=2
            KillWait=5
            JobRequeue=1
            NodeName=vafnode NodeAddr=127.0.0.1 NodeHostname=\(host) CPUs=2 State=UNKNOWN
            PartitionName=vaf Nodes=vafnode Default=YES MaxTime=INFINITE State=UP
            """.write(toFile: config, atomically: true, encoding: .utf8)
        try run("/usr/sbin/munged", ["--force", "--key-file=\(path)/munge/munge.key", "--socket=\(path)/munge/munge.socket",
                                     "--pid-file=\(path)/munge/munged.pid", "--log-file=\(path)/munge/munged.log", "--seed-file=\(path)/munge/seed"])
        try run("/usr/sbin/slurmctld", ["-f", config, "-i"])
        try run("/usr/sbin/slurmd", ["-f", config, "-N", "vafnode"])
        // The node registers within seconds; until then jobs would pend.
        let ready = try shell("for i in $(seq 300); do [ \"$(sinfo -h -o %T)\" = idle ] && exit 0; sleep 0.1; done; sinfo; exit 1")
        guard ready.status == 0 else { throw Failure("the node did not come up: \(ready.output)\n\(logs)") }
    }

    struct Failure: Error, CustomStringConvertible { let description: String; init(_ d: String) { description = d } }

    /// Runs a daemon's start command (each detaches itself) and checks it started.
    private func run(_ executable: String, _ arguments: [String]) throws {
        let started = try ChildProcess.run(executable, arguments, environment: environment, timeLimit: 60)
        guard started.succeeded else { throw Failure("\(executable) did not start: \(started.stderr)\n\(logs)") }
    }

    /// `script` under bash with the cluster's configuration; exit status and both outputs together.
    func shell(_ script: String, _ arguments: [String] = [], timeLimit: Double = 600) throws -> (status: Int32, output: String) {
        let child = try ChildProcess.run("/bin/bash", ["-c", script, "slurm"] + arguments, environment: environment, timeLimit: timeLimit)
        return (child.shellStatus, child.stdout + child.stderr)
    }

    var logs: String {
        ["log/slurmctld.log", "log/slurmd.log"].map { (try? String(contentsOf: dir.appendingPathComponent($0), encoding: .utf8)).map { String($0.suffix(2000)) } ?? "" }
            .joined(separator: "\n")
    }

    /// Cancels every job, stops the three daemons and waits until they are gone.
    func stop() {
        _ = try? shell("scancel --partition=vaf 2>/dev/null; true", timeLimit: 30)
        let pids = ["slurmd.pid", "slurmctld.pid", "munge/munged.pid"].compactMap {
            (try? String(contentsOf: dir.appendingPathComponent($0), encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        for pid in pids { kill(pid, SIGTERM) }
        for pid in pids {
            var waited = 0
            while kill(pid, 0) == 0 && waited < 100 {
                usleep(100_000)
                waited += 1
            }
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
        try? FileManager.default.removeItem(at: dir)
    }
}

/// The README's Slurm job array (`vaf-array.sh`), on a real cluster: shards from Slurm's
/// variables cover the batch once, a stepped array too, and a task cancelled mid-export and
/// requeued leaves the folder complete and correct.
@Suite(.serialized, .disabled(if: !SlurmCluster.canRun, "needs root and Debian's slurm-wlm and munge (Hardware/setup.sh installs them)"))
struct SlurmClusterTests {
    static let clips = 12
    static let framesPerClip = 300

    /// The script the README shows for Slurm: its code block that names `vaf-array.sh`.
    static func readmeScript() throws -> String {
        let readme = try String(contentsOf: Vaf.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let blocks = readme.components(separatedBy: "```sh\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        return try #require(blocks.first { $0.contains("# vaf-array.sh") }, "README.md shows the Slurm script")
    }

    /// Twelve 10 s 320x240 clips (300 frames each) in `dir/in`.
    static func library(in dir: URL) throws -> URL {
        let inputs = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        let first = inputs.appendingPathComponent("clip00.mp4")
        let made = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=10",
                                                               "-c:v", "libx264", "-pix_fmt", "yuv420p", first.path])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        for i in 1..<clips { try FileManager.default.copyItem(at: first, to: inputs.appendingPathComponent(String(format: "clip%02d.mp4", i))) }
        return inputs
    }

    /// Every clip's output is in `folder` once, decodes to its last frame, nothing hidden is
    /// left but the journal, and the journal records each output as completed at its size.
    static func expectComplete(_ folder: URL, _ label: String) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        let expected = (0..<clips).map { String(format: "clip%02d.mp4", $0) }
        #expect(names.filter { !$0.hasPrefix(".") } == expected, "\(label): \(names)")
        #expect(names.filter { $0.hasPrefix(".") } == [".vaf-journal.jsonl"], "\(label): nothing hidden left: \(names)")
        for name in expected {
            let probe = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                                                     "stream=nb_read_frames", "-of", "csv=p=0", folder.appendingPathComponent(name).path])
            #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(framesPerClip)", "\(label): \(name) decodes to its end")
        }
        let journal = try String(contentsOf: folder.appendingPathComponent(".vaf-journal.jsonl"), encoding: .utf8)
        var completed: [String: Int64] = [:]
        for line in journal.split(separator: "\n") {
            let entry = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(label): a whole journal line: \(line)")
            if let bytes = (entry["bytes"] as? NSNumber)?.int64Value, bytes >= 0, let output = entry["output"] as? String { completed[output] = bytes }
        }
        #expect(completed.keys.sorted() == expected, "\(label): the journal records every output")
        for (name, bytes) in completed {
            let size = (try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.size] as? NSNumber)?.int64Value
            #expect(size == bytes, "\(label): \(name) is the size the journal recorded")
        }
    }

    @Test func theReadmeArrayCoversTheBatchOnceEvenWithATaskCancelledAndRequeued() throws {
        let cluster = try SlurmCluster()
        defer { cluster.stop() }
        let inputs = try Self.library(in: cluster.dir)
        let script = cluster.dir.appendingPathComponent("vaf-array.sh")
        try Self.readmeScript().write(to: script, atomically: true, encoding: .utf8)
        // vaf from this build; 1 CPU per task so both of the node's cores run tasks.
        let submit = "sbatch --export=ALL,PATH=\(URL(fileURLWithPath: Vaf.binary).deletingLastPathComponent().path):$PATH --cpus-per-task=1 "
            + "--output=\(cluster.dir.path)/log/%x-%A-%a.out"

        // Waits for an array to leave the queue (sbatch --wait polls with a backoff that grows to
        // tens of seconds), then prints each task's state and exit code.
        let finish = """
            for i in $(seq 3000); do [ -z "$(squeue -h -j "$job")" ] && break; sleep 0.1; done
            [ -z "$(squeue -h -j "$job")" ] || { echo "the array did not finish"; exit 1; }
            scontrol show job "$job" | grep -o 'JobState=[A-Z]*\\|ExitCode=[0-9:]*'
            """

        // The array as given, and a stepped one (tasks 0, 2, 4, 6: shards 0/4 to 3/4).
        for (label, array) in [("array", "0-3"), ("stepped", "0-6:2")] {
            let out = cluster.dir.appendingPathComponent("out-\(label)")
            let run = try cluster.shell("job=$(\(submit) --parsable --array=\(array) \"$1\" \"$2\" \"$3\" 640x480) || exit 1\n\(finish)",
                                        [script.path, inputs.path, out.path])
            #expect(run.status == 0, "\(label): \(run.output)\n\(cluster.logs)")
            let states = run.output.split(separator: "\n").filter { $0.hasPrefix("JobState=") || $0.hasPrefix("ExitCode=") }
            #expect(states.filter { $0 == "JobState=COMPLETED" }.count == 4 && states.filter { $0 == "ExitCode=0:0" }.count == 4,
                    "\(label): four tasks, each completed with exit 0: \(run.output)")
            try Self.expectComplete(out, label)
        }

        // Task 1 (shard 1/4: clips 1, 5 and 9) is cancelled while it writes, then requeued.
        let out = cluster.dir.appendingPathComponent("out-requeued")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let requeue = try cluster.shell("""
            job=$(\(submit) --parsable --array=0-3 "$1" "$2" "$3" 640x480) || exit 1
            for i in $(seq 3000); do ls -a "$3" | grep -Eq '^\\.clip(01|05|09)\\.vaf-partial' && break; sleep 0.02; done
            ls -a "$3" | grep -Eq '^\\.clip(01|05|09)\\.vaf-partial' || { echo "task 1 never wrote"; exit 1; }
            scancel "${job}_1" || exit 1
            for i in $(seq 300); do scontrol show job "${job}_1" | grep -q 'JobState=CANCELLED' && break; sleep 0.1; done
            scontrol show job "${job}_1" | grep -o 'JobState=[A-Z]*'
            scontrol requeue "${job}_1" || exit 1
            # Slurm makes a requeued job eligible 120 s later; the test brings that forward.
            scontrol update JobId="${job}_1" StartTime=now || exit 1
            \(finish)
            """, [script.path, inputs.path, out.path])
        #expect(requeue.status == 0, "\(requeue.output)\n\(cluster.logs)")
        #expect(requeue.output.contains("JobState=CANCELLED"), "the task was cancelled mid-export: \(requeue.output)")
        try Self.expectComplete(out, "requeued")
        let journal = try String(contentsOf: out.appendingPathComponent(".vaf-journal.jsonl"), encoding: .utf8)
        #expect(journal.split(separator: "\n").filter { $0.contains("\"bytes\":-1") }.count > Self.clips, "the requeued task started its shard again")
    }
}

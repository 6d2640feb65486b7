import ChildProcess
import Foundation
import Testing

/// Issue 30, item 1: `vaf transcode` takes its shard from every scheduler's environment, says
/// which and from what, and refuses an environment that names no one shard (exit 64) rather
/// than running the whole batch.
@Suite(.serialized) struct ShardCommandTests {
    /// Every variable a scheduler sets that `vaf` reads, removed from the test's own
    /// environment so that only the variables each test sets count.
    static let schedulerVariables = [
        "JOB_COMPLETION_INDEX", "JOB_COMPLETIONS", "VAF_SHARD_COUNT", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
        "SLURM_ARRAY_TASK_STEP", "SLURM_ARRAY_TASK_COUNT", "AWS_BATCH_JOB_ARRAY_INDEX", "AWS_BATCH_JOB_ARRAY_SIZE", "BATCH_TASK_INDEX",
        "BATCH_TASK_COUNT", "CLOUD_RUN_TASK_INDEX", "CLOUD_RUN_TASK_COUNT",
    ]

    /// Nine copies of the test clip, clip0.mp4 … clip8.mp4, in a fresh folder.
    private static func nineInputs() throws -> (folder: URL, inputs: [String]) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-shards-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let clip = try Data(contentsOf: URL(fileURLWithPath: TranscodeCommandTests.clip))
        let inputs = try (0..<9).map { i in
            let path = folder.appendingPathComponent("clip\(i).mp4")
            try clip.write(to: path)
            return path.path
        }
        return (folder, inputs)
    }

    /// `vaf transcode` planning the nine inputs with `variables` added to a scheduler-free
    /// environment: its exit status, JSON lines and stderr.
    private func plan(_ variables: [String: String], _ options: [String] = []) throws -> (status: Int32, rows: [[String: Any]], stderr: String) {
        let (folder, inputs) = try Self.nineInputs()
        defer { try? FileManager.default.removeItem(at: folder) }
        var environment = ProcessInfo.processInfo.environment
        for name in Self.schedulerVariables { environment[name] = nil }
        environment.merge(variables) { $1 }
        let child = try ChildProcess.run(Vaf.binary, ["transcode"] + inputs + ["--output-dir", folder.appendingPathComponent("out").path, "--dry-run", "--json"] + options,
                                         environment: environment, timeLimit: 300)
        return (child.shellStatus, try Vaf.jsonLines(child.stdout), child.stderr)
    }

    /// The input file names of `rows`, in order.
    private func names(_ rows: [[String: Any]]) -> [String] {
        rows.map { URL(fileURLWithPath: $0["input"] as? String ?? "").lastPathComponent }
    }

    /// Each row planned, valid against the schema, and recording `index` of `count` chosen by `sources`.
    private func expectShard(_ rows: [[String: Any]], index: Int, count: Int, sources: [String]) throws {
        let schema = try JSONLinesTests.schema("vaf-transcode.schema.json")
        for row in rows {
            #expect(row["status"] as? String == "planned", "\(row)")
            #expect(schema.violations(of: row).isEmpty, "\(schema.violations(of: row))")
            let shard = try #require(row["shard"] as? [String: Any], "\(row)")
            #expect(shard["index"] as? Int == index && shard["count"] as? Int == count, "\(shard)")
            #expect(shard["sources"] as? [String] == sources, "\(shard)")
        }
    }

    /// The README's Indexed Job, run as Kubernetes runs it: each of its `completions` pods gets
    /// the manifest's command and environment plus its `JOB_COMPLETION_INDEX`. Together the
    /// pods plan every input once (paths moved from the volume to the test's folder).
    @Test func theReadmeKubernetesJobPlansEveryInputOnce() throws {
        let readme = try String(contentsOf: Vaf.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let manifest = try #require(readme.components(separatedBy: "```yaml\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
            .first { $0.contains("completionMode: Indexed") }, "README.md shows the Indexed Job")
        func field(_ pattern: String) throws -> String {
            let match = try #require(manifest.range(of: pattern, options: .regularExpression), "\(pattern) in the manifest")
            return String(manifest[match])
        }
        let completions = try #require(Int(try field("completions: [0-9]+").split(separator: " ")[1]))
        let commandLine = try field("command: \\[[^]]*\\]").dropFirst("command: ".count)
        let command = try #require(try JSONSerialization.jsonObject(with: Data(commandLine.utf8)) as? [String])
        let countValue = try field("name: VAF_SHARD_COUNT, value: \"[0-9]+\"").split(separator: "\"")[1]
        #expect(command.first == "vaf" && Int(countValue) == completions, "the manifest counts its own pods: \(command), \(countValue)")

        let (folder, _) = try Self.nineInputs()
        defer { try? FileManager.default.removeItem(at: folder) }
        let arguments = command.dropFirst().map {
            $0 == "/media/in" ? folder.path : $0 == "/media/out" ? folder.appendingPathComponent("out").path : $0
        }
        var planned: [String] = []
        for index in 0..<completions {
            var environment = ProcessInfo.processInfo.environment
            for name in Self.schedulerVariables { environment[name] = nil }
            environment["JOB_COMPLETION_INDEX"] = String(index)
            environment["VAF_SHARD_COUNT"] = String(countValue)
            let pod = try ChildProcess.run(Vaf.binary, arguments + ["--dry-run", "--json"], environment: environment, timeLimit: 300)
            #expect(pod.shellStatus == 0, "pod \(index): \(pod.stderr)")
            let rows = try Vaf.jsonLines(pod.stdout)
            try expectShard(rows, index: index, count: completions, sources: ["JOB_COMPLETION_INDEX=\(index)", "VAF_SHARD_COUNT=\(countValue)"])
            planned += names(rows)
        }
        #expect(planned.sorted() == (0..<9).map { "clip\($0).mp4" }, "each input planned by exactly one pod: \(planned)")
    }

    @Test func aKubernetesIndexCountedByVafShardCount() throws {
        let run = try plan(["JOB_COMPLETION_INDEX": "1", "VAF_SHARD_COUNT": "3"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(names(run.rows) == ["clip1.mp4", "clip4.mp4", "clip7.mp4"])
        try expectShard(run.rows, index: 1, count: 3, sources: ["JOB_COMPLETION_INDEX=1", "VAF_SHARD_COUNT=3"])
        #expect(run.stderr.contains("vaf: shard 1/3 from JOB_COMPLETION_INDEX=1, VAF_SHARD_COUNT=3: 3 of 9 inputs"), "\(run.stderr)")
    }

    @Test func aKubernetesIndexCountedByTheOption() throws {
        let run = try plan(["JOB_COMPLETION_INDEX": "2"], ["--shard-count", "3"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(names(run.rows) == ["clip2.mp4", "clip5.mp4", "clip8.mp4"])
        try expectShard(run.rows, index: 2, count: 3, sources: ["JOB_COMPLETION_INDEX=2", "--shard-count 3"])
    }

    /// Before, every pod of an Indexed Job without JOB_COMPLETIONS ran the whole batch.
    @Test func aKubernetesIndexAloneIsAUsageError() throws {
        let run = try plan(["JOB_COMPLETION_INDEX": "1"])
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.rows.isEmpty, "nothing is planned")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(run.stderr)")
        let message = try #require(lines.first)
        #expect(message.hasPrefix("vaf: JOB_COMPLETION_INDEX=1 "), "\(message)")
        for fix in ["VAF_SHARD_COUNT", "--shard-count", "--shard I/N"] { #expect(message.contains(fix), "\(message)") }
    }

    /// `--array=0-8:4`: task 4 plans inputs 1, 4 and 7 of 9, not all nine.
    @Test func aSlurmSteppedArrayTask() throws {
        let variables = ["SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_STEP": "4", "SLURM_ARRAY_TASK_COUNT": "3"]
        let run = try plan(variables)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(names(run.rows) == ["clip1.mp4", "clip4.mp4", "clip7.mp4"])
        try expectShard(run.rows, index: 1, count: 3, sources: ["SLURM_ARRAY_TASK_ID=4", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=8",
                                                                "SLURM_ARRAY_TASK_STEP=4", "SLURM_ARRAY_TASK_COUNT=3"])
    }

    /// `--array=1,3,5`, as Slurm reports it.
    @Test func aSlurmListArrayIsAUsageError() throws {
        let run = try plan(["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "5", "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "3"])
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.rows.isEmpty && run.stderr.contains("--shard I/N"), "\(run.stderr)")
    }

    @Test(arguments: [
        (["AWS_BATCH_JOB_ARRAY_INDEX": "0", "AWS_BATCH_JOB_ARRAY_SIZE": "3"], 0, ["AWS_BATCH_JOB_ARRAY_INDEX=0", "AWS_BATCH_JOB_ARRAY_SIZE=3"]),
        (["BATCH_TASK_INDEX": "2", "BATCH_TASK_COUNT": "3"], 2, ["BATCH_TASK_INDEX=2", "BATCH_TASK_COUNT=3"]),
        (["CLOUD_RUN_TASK_INDEX": "1", "CLOUD_RUN_TASK_COUNT": "3"], 1, ["CLOUD_RUN_TASK_INDEX=1", "CLOUD_RUN_TASK_COUNT=3"]),
    ] as [([String: String], Int, [String])])
    func cloudBatchTasks(variables: [String: String], index: Int, sources: [String]) throws {
        let run = try plan(variables)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(names(run.rows) == [index, index + 3, index + 6].map { "clip\($0).mp4" })
        try expectShard(run.rows, index: index, count: 3, sources: sources)
    }

    /// `--shard` overrides even an environment that would be refused; `--quiet` keeps stderr
    /// free of the shard line, and an unsharded batch records null.
    @Test func anExplicitShardWinsAndQuietIsQuiet() throws {
        let run = try plan(["JOB_COMPLETION_INDEX": "1"], ["--shard", "0/3", "--quiet"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(names(run.rows) == ["clip0.mp4", "clip3.mp4", "clip6.mp4"])
        try expectShard(run.rows, index: 0, count: 3, sources: ["--shard 0/3"])
        #expect(!run.stderr.contains("shard"), "\(run.stderr)")
        let whole = try plan([:])
        #expect(whole.status == 0 && whole.rows.count == 9 && whole.rows.allSatisfy { $0["shard"] is NSNull }, "\(whole.stderr)")
    }
}

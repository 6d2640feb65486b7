import ArgumentParser
import Foundation
import Testing
import VAFoundation
@testable import vaf

@Suite struct BatchPlanTests {
    @Test(arguments: [
        ("90", MediaTime(value: 90, timescale: 1)), ("90.5", MediaTime(value: 905, timescale: 10)),
        ("01:30.5", MediaTime(value: 905, timescale: 10)), ("00:01:30.25", MediaTime(value: 9025, timescale: 100)),
        ("1:00:00", MediaTime(value: 3600, timescale: 1)), ("0.000001", MediaTime(value: 1, timescale: 1_000_000)),
    ] as [(String, MediaTime)])
    func timesAsPeopleTypeThem(text: String, expected: MediaTime) {
        #expect(vaf.Vaf.Transcode.parseTime(text) == expected, "\(text)")
    }

    @Test(arguments: ["", "1:75", "a:10", "1.", "-3", "1:2:3:4", "0.1234567"])
    func timesThatAreNotTimes(text: String) {
        #expect(vaf.Vaf.Transcode.parseTime(text) == nil, "\(text)")
    }

    @Test func timeRangesAndRatesInTheFormsPeopleType() throws {
        let range = try #require(try vaf.Vaf.Transcode.parse(["x.mp4", "--time-range", "00:01:30.5-00:02:00", "--frame-rate", "30000/1001"])
            .parsedTimeRange()?.resolved(frameDuration: nil))
        #expect(range.start == MediaTime(value: 905, timescale: 10) && range.end == MediaTime(value: 120, timescale: 1))
        let plus = try #require(try vaf.Vaf.Transcode.parse(["x.mp4", "--time-range", "5+00:10"]).parsedTimeRange()?.resolved(frameDuration: nil))
        #expect(plus.end == MediaTime(value: 15, timescale: 1))
        #expect(try vaf.Vaf.Transcode.parse(["x.mp4", "--frame-rate", "30000/1001"]).parsedFrameRate() == .constant(30000.0 / 1001))
        #expect(try vaf.Vaf.Transcode.parse(["x.mp4", "--frame-rate", "29.97"]).parsedFrameRate() == .constant(29.97))
        #expect(throws: (any Error).self) { try vaf.Vaf.Transcode.parse(["x.mp4", "--frame-rate", "30/0"]).parsedFrameRate() }
        #expect(throws: (any Error).self) { try vaf.Vaf.Transcode.parse(["x.mp4", "--time-range", "2-1"]).parsedTimeRange() }
    }

    /// Frame counts resolve with the track's frame duration, exactly: 90 frames at 30000/1001
    /// are 90090/30000 s, not 3.003 rounded.
    @Test func timeRangesInFramesResolveExactly() throws {
        let ntsc = MediaTime(value: 1001, timescale: 30000)
        let first90 = try #require(TimeRangeArgument("+90f"))
        #expect(first90.countsFrames && first90.resolved(frameDuration: nil) == nil)
        let range = try #require(first90.resolved(frameDuration: ntsc))
        #expect(range.start == .zero && range.duration == MediaTime(value: 90090, timescale: 30000))
        let later = try #require(TimeRangeArgument("00:01:30.5+90f")?.resolved(frameDuration: MediaTime(value: 1, timescale: 25)))
        #expect(later.start == MediaTime(value: 905, timescale: 10) && later.duration == MediaTime(value: 90, timescale: 25))
        let frames = try #require(TimeRangeArgument("30f-120f")?.resolved(frameDuration: MediaTime(value: 1, timescale: 30)))
        #expect(frames.start == MediaTime(value: 1, timescale: 1) && frames.end == MediaTime(value: 4, timescale: 1))
        #expect(TimeRangeArgument("1-4")?.countsFrames == false)
        for bad in ["120f-30f", "+0f", "+f", "5+-3", "1--2", "5f+", "x-2", "90"] {
            #expect(TimeRangeArgument(bad) == nil, "\(bad)")
        }
    }

    @Test func frameDurationsAreExactForIntegerAndNTSCRates() {
        let invalid = MediaTime.invalid
        #expect(TimeRangeArgument.frameDuration(nominalFrameRate: 25, minFrameDuration: invalid) == MediaTime(value: 1, timescale: 25))
        #expect(TimeRangeArgument.frameDuration(nominalFrameRate: Float(30000.0 / 1001), minFrameDuration: invalid) == MediaTime(value: 1001, timescale: 30000))
        #expect(TimeRangeArgument.frameDuration(nominalFrameRate: Float(24000.0 / 1001), minFrameDuration: invalid) == MediaTime(value: 1001, timescale: 24000))
        #expect(TimeRangeArgument.frameDuration(nominalFrameRate: 12.5, minFrameDuration: MediaTime(value: 2, timescale: 25)) == MediaTime(value: 2, timescale: 25))
        #expect(TimeRangeArgument.frameDuration(nominalFrameRate: 0, minFrameDuration: invalid) == nil)
    }

    @Test func outputPathsNeverEscapeTheOutputDirectory() {
        let namer = OutputNamer(directory: "/out", template: "{dir}/{name}.{ext}")
        let hostile = [
            BatchInput(path: "/in/../../etc/passwd.mp4"),
            BatchInput(path: "/in/a/b/clip.mov", root: "/in"),
            BatchInput(path: "/in/x.mp4", output: "../../escape.mp4"),
            BatchInput(path: "/in/y.mp4", output: "/abs/olute.mp4"),
            BatchInput(path: "/in/..mp4"),
        ]
        for (i, input) in hostile.enumerated() {
            let path = namer.path(for: input, index: i, preset: "1280x720", fileExtension: "mp4")
            #expect(path.hasPrefix("/out/"), "\(path)")
            #expect(!path.split(separator: "/").contains(".."), "\(path)")
        }
        #expect(namer.path(for: hostile[1], index: 1, preset: "p", fileExtension: "mp4") == "/out/a/b/clip.mp4")
        #expect(namer.path(for: hostile[2], index: 2, preset: "p", fileExtension: "mp4") == "/out/escape.mp4")
    }

    @Test func templateTokens() {
        let namer = OutputNamer(directory: "/out", template: "{preset}/{index}-{name}.{ext}")
        let path = namer.path(for: BatchInput(path: "/media/holiday.mov"), index: 7, preset: "HEVC1920x1080", fileExtension: "mkv")
        #expect(path == "/out/HEVC1920x1080/7-holiday.mkv")
    }

    @Test func shardsSplitDeterministicallyAndCoverEverything() {
        let items = Array(0..<20)
        let shards = (0..<3).map { Shard(index: $0, count: 3).select(items) }
        #expect(shards.flatMap { $0 }.sorted() == items)
        #expect(shards[1] == [1, 4, 7, 10, 13, 16, 19])
        #expect(Shard("2/3") == Shard(index: 2, count: 3))
        #expect(Shard("3/3") == nil && Shard("x") == nil && Shard("1/0") == nil)
    }

    /// The shard `environment` and the options choose, through the code `vaf transcode` runs.
    private func assignment(_ environment: [String: String], shard: String? = nil, shardCount: Int? = nil) throws -> ShardAssignment? {
        try ShardAssignment.resolve(option: shard, countOption: shardCount, environment: environment)
    }

    /// The one-line message of the usage error `environment` and the options make.
    private func usageError(_ environment: [String: String], shard: String? = nil, shardCount: Int? = nil) throws -> String {
        let error = try #require(throws: ValidationError.self) { try assignment(environment, shard: shard, shardCount: shardCount) }
        #expect(!error.message.contains("\n"), "one line: \(error.message)")
        return error.message
    }

    /// Kubernetes sets only JOB_COMPLETION_INDEX: the count comes from VAF_SHARD_COUNT in the
    /// Job's env or --shard-count (JOB_COMPLETIONS is still taken when someone sets it).
    @Test func kubernetesIndexesAreCountedByVafShardCountOrTheOption() throws {
        let fromEnvironment = try #require(try assignment(["JOB_COMPLETION_INDEX": "1", "VAF_SHARD_COUNT": "8"]))
        #expect(fromEnvironment == ShardAssignment(shard: Shard(index: 1, count: 8), sources: ["JOB_COMPLETION_INDEX=1", "VAF_SHARD_COUNT=8"]))
        let fromOption = try #require(try assignment(["JOB_COMPLETION_INDEX": "7"], shardCount: 8))
        #expect(fromOption == ShardAssignment(shard: Shard(index: 7, count: 8), sources: ["JOB_COMPLETION_INDEX=7", "--shard-count 8"]))
        let optionOverVariable = try #require(try assignment(["JOB_COMPLETION_INDEX": "2", "VAF_SHARD_COUNT": "8"], shardCount: 4))
        #expect(optionOverVariable.shard == Shard(index: 2, count: 4) && optionOverVariable.sources.last == "--shard-count 4")
        let completions = try #require(try assignment(["JOB_COMPLETION_INDEX": "4", "JOB_COMPLETIONS": "10"]))
        #expect(completions == ShardAssignment(shard: Shard(index: 4, count: 10), sources: ["JOB_COMPLETION_INDEX=4", "JOB_COMPLETIONS=10"]))
        let disagreeing = try usageError(["JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "4", "VAF_SHARD_COUNT": "8"])
        #expect(disagreeing.contains("JOB_COMPLETIONS=4") && disagreeing.contains("VAF_SHARD_COUNT=8"), "\(disagreeing)")
    }

    /// An index with nothing to count it by would have run every input on every pod.
    @Test func aKubernetesIndexAloneIsAUsageErrorNamingTheFix() throws {
        let message = try usageError(["JOB_COMPLETION_INDEX": "1"])
        for fix in ["JOB_COMPLETION_INDEX=1", "VAF_SHARD_COUNT", "--shard-count", "--shard I/N"] {
            #expect(message.contains(fix), "names \(fix): \(message)")
        }
        let countAlone = try usageError(["VAF_SHARD_COUNT": "8"])
        #expect(countAlone.contains("VAF_SHARD_COUNT=8") && countAlone.contains("JOB_COMPLETION_INDEX") && countAlone.contains("--shard I/N"), "\(countAlone)")
        #expect(try usageError([:], shardCount: 8).contains("--shard-count 8"))
        #expect(try assignment([:]) == nil)
    }

    /// `--array=0-8:4` runs tasks 0, 4 and 8 with COUNT 3: task 4 is shard 1 of 3, and the
    /// three tasks together take every input once.
    @Test func slurmSteppedArraysCountTasksByTheStep() throws {
        func task(_ id: Int) -> [String: String] {
            ["SLURM_ARRAY_TASK_ID": "\(id)", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_STEP": "4", "SLURM_ARRAY_TASK_COUNT": "3"]
        }
        let four = try #require(try assignment(task(4)))
        #expect(four.shard == Shard(index: 1, count: 3))
        #expect(four.sources == ["SLURM_ARRAY_TASK_ID=4", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=8", "SLURM_ARRAY_TASK_STEP=4", "SLURM_ARRAY_TASK_COUNT=3"])
        let inputs = Array(0..<9)
        #expect(four.shard.select(inputs) == [1, 4, 7])
        let all = try [0, 4, 8].map { try #require(try assignment(task($0))).shard.select(inputs) }
        #expect(all == [[0, 3, 6], [1, 4, 7], [2, 5, 8]])
        // A plain range from 1: task 3 of --array=1-4 is shard 2 of 4.
        let plain = ["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4", "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "4"]
        #expect(try assignment(plain)?.shard == Shard(index: 2, count: 4))
        #expect(try assignment(plain, shardCount: 4)?.shard == Shard(index: 2, count: 4))
        #expect(try usageError(plain, shardCount: 5).contains("SLURM_ARRAY_TASK_COUNT=4"))
    }

    /// `--array=1,3,5` is reported as MIN 1, MAX 5, STEP 1, COUNT 3: no formula gives a task's
    /// shard, so it is refused rather than guessed; so is a task off the step.
    @Test func slurmArraysNoFormulaDescribesAreUsageErrors() throws {
        let list = ["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "5", "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "3"]
        let message = try usageError(list)
        #expect(message.contains("SLURM_ARRAY_TASK_COUNT=3") && message.contains("--shard I/N"), "\(message)")
        let offStep = ["SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_STEP": "4", "SLURM_ARRAY_TASK_COUNT": "3"]
        #expect(try usageError(offStep).contains("SLURM_ARRAY_TASK_ID=5"))
        var noStep = offStep
        noStep["SLURM_ARRAY_TASK_STEP"] = nil
        #expect(try usageError(noStep).contains("SLURM_ARRAY_TASK_STEP"))
    }

    @Test func awsBatchGoogleCloudBatchAndCloudRunTasks() throws {
        #expect(try assignment(["AWS_BATCH_JOB_ARRAY_INDEX": "3", "AWS_BATCH_JOB_ARRAY_SIZE": "5"])
            == ShardAssignment(shard: Shard(index: 3, count: 5), sources: ["AWS_BATCH_JOB_ARRAY_INDEX=3", "AWS_BATCH_JOB_ARRAY_SIZE=5"]))
        #expect(try assignment(["BATCH_TASK_INDEX": "0", "BATCH_TASK_COUNT": "2"])
            == ShardAssignment(shard: Shard(index: 0, count: 2), sources: ["BATCH_TASK_INDEX=0", "BATCH_TASK_COUNT=2"]))
        #expect(try assignment(["CLOUD_RUN_TASK_INDEX": "6", "CLOUD_RUN_TASK_COUNT": "7"])
            == ShardAssignment(shard: Shard(index: 6, count: 7), sources: ["CLOUD_RUN_TASK_INDEX=6", "CLOUD_RUN_TASK_COUNT=7"]))
        #expect(try usageError(["CLOUD_RUN_TASK_INDEX": "6"]).contains("CLOUD_RUN_TASK_INDEX=6"))
    }

    /// `--shard I/N` wins: the environment is not even read, so it also overrides one that
    /// names no shard.
    @Test func anExplicitShardWinsOverTheEnvironment() throws {
        let explicit = ShardAssignment(shard: Shard(index: 0, count: 2), sources: ["--shard 0/2"])
        #expect(try assignment(["JOB_COMPLETION_INDEX": "1", "VAF_SHARD_COUNT": "4"], shard: "0/2") == explicit)
        #expect(try assignment(["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3"], shard: "0/2") == explicit)
        #expect(try assignment(["JOB_COMPLETION_INDEX": "1"], shard: "0/2", shardCount: 2) == explicit)
        #expect(try usageError([:], shard: "0/2", shardCount: 3).contains("--shard-count 3"))
    }

    /// Values that name no shard are usage errors naming the variable and its value.
    @Test func badSchedulerValuesAreNamed() throws {
        let cases: [([String: String], String)] = [
            (["JOB_COMPLETION_INDEX": "8", "VAF_SHARD_COUNT": "8"], "JOB_COMPLETION_INDEX=8"),
            (["JOB_COMPLETION_INDEX": "0", "VAF_SHARD_COUNT": "0"], "VAF_SHARD_COUNT=0"),
            (["JOB_COMPLETION_INDEX": "one", "VAF_SHARD_COUNT": "2"], "JOB_COMPLETION_INDEX=one"),
            (["AWS_BATCH_JOB_ARRAY_INDEX": "-1", "AWS_BATCH_JOB_ARRAY_SIZE": "2"], "AWS_BATCH_JOB_ARRAY_INDEX=-1"),
            (["BATCH_TASK_INDEX": "0", "BATCH_TASK_COUNT": "x"], "BATCH_TASK_COUNT=x"),
            (["CLOUD_RUN_TASK_INDEX": "", "CLOUD_RUN_TASK_COUNT": "2"], "CLOUD_RUN_TASK_INDEX="),
            (["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_STEP": "0", "SLURM_ARRAY_TASK_COUNT": "3"], "SLURM_ARRAY_TASK_STEP=0"),
        ]
        for (environment, named) in cases {
            #expect(try usageError(environment).contains(named), "\(environment) names \(named)")
        }
    }

    /// Each JSON line carries the shard and what chose it; an unsharded batch says null.
    @Test func reportsRecordTheShardAndItsSources() throws {
        var report = JobReport(input: "/in/a.mp4", output: "/out/a.mp4", status: .planned, preset: "1280x720", inputBytes: nil)
        func line() throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        }
        #expect(try line()["shard"] is NSNull)
        report.shard = ShardAssignment(shard: Shard(index: 1, count: 8), sources: ["JOB_COMPLETION_INDEX=1", "VAF_SHARD_COUNT=8"])
        let shard = try #require(try line()["shard"] as? [String: Any])
        #expect(shard["index"] as? Int == 1 && shard["count"] as? Int == 8)
        #expect(shard["sources"] as? [String] == ["JOB_COMPLETION_INDEX=1", "VAF_SHARD_COUNT=8"])
    }

    @Test func directoriesAndManifests() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-batch-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("sub"), withIntermediateDirectories: true)
        for name in ["b.mp4", "sub/a.mov", "notes.txt", ".hidden.mp4"] {
            try Data().write(to: dir.appendingPathComponent(name))
        }
        let manifest = dir.appendingPathComponent("jobs.jsonl")
        try Data("{\"input\": \"sub/a.mov\", \"preset\": \"960x540\"}\n\n# comment\n{\"input\": \"/abs/c.mkv\", \"output\": \"c.mp4\"}\n".utf8).write(to: manifest)
        let inputs = try InputCollector.collect([dir.path, "/missing.mp4"], manifests: [manifest.path])
        #expect(inputs.map { URL(fileURLWithPath: $0.path).lastPathComponent } == ["b.mp4", "a.mov", "missing.mp4", "a.mov", "c.mkv"])
        #expect(inputs[3].preset == "960x540" && inputs[4].output == "c.mp4")
        try Data("not json\n".utf8).write(to: manifest)
        #expect(throws: (any Error).self) { try InputCollector.readManifest(manifest.path) }
        // A misspelt key is an error naming the line and the key, not a silently dropped setting.
        try Data("{\"input\": \"a.mov\"}\n{\"input\": \"b.mov\", \"prest\": \"960x540\"}\n".utf8).write(to: manifest)
        let error = try #require(throws: MediaError.self) { try InputCollector.readManifest(manifest.path) }
        #expect(error.message.contains("line 2") && error.message.contains("\"prest\""), "\(error)")
    }
}

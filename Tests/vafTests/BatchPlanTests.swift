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

    @Test func shardsFromClusterSchedulers() {
        #expect(Shard.fromEnvironment(["JOB_COMPLETION_INDEX": "4", "JOB_COMPLETIONS": "10"]) == Shard(index: 4, count: 10))
        #expect(Shard.fromEnvironment(["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"]) == Shard(index: 2, count: 4))
        #expect(Shard.fromEnvironment(["SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2"]) == Shard(index: 0, count: 2))
        #expect(Shard.fromEnvironment([:]) == nil)
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

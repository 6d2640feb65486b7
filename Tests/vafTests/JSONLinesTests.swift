import BenchKit
import Foundation
import Testing

/// Issue 13, item 3: `--json` streams one object per line as each input ends, each with
/// `schemaVersion`, valid against the schemas in `Schemas/`.
@Suite(.serialized) struct JSONLinesTests {
    static func schema(_ name: String) throws -> JSONSchemaSubset {
        try JSONSchemaSubset(json: Data(contentsOf: Vaf.packageRoot.appendingPathComponent("Schemas/\(name)")))
    }

    private func scratch(_ name: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func theSchemasCatchWrongLines() throws {
        let transcode = try Self.schema("vaf-transcode.schema.json")
        #expect(transcode.violations(of: [String: Any]()).contains("$: missing required key \"schemaVersion\""))
        let wrong: [String: Any] = ["schemaVersion": 2, "status": "finished", "surprise": true]
        let problems = transcode.violations(of: wrong)
        #expect(problems.contains { $0.hasPrefix("$.schemaVersion: 2 is not one of") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("$.status: finished is not one of") }, "\(problems)")
        #expect(problems.contains { $0.contains("unexpected key \"surprise\"") }, "\(problems)")
        let info = try Self.schema("vaf-info.schema.json")
        #expect(info.violations(of: ["schemaVersion": 1, "path": "a", "tracks": [["trackID": "1"]]]).contains { $0.hasPrefix("$.tracks[0].trackID: expected integer") })
        let render = try Self.schema("vaf-render.schema.json")
        #expect(render.violations(of: [String: Any]()).contains("$: missing required key \"timeline\""))
        let badRender: [String: Any] = ["status": "skipped", "timeline": ["name": "t", "durationSeconds": 1, "skippedTracks": [], "warnings": [],
                                                                          "tracks": [["name": "V", "mediaType": "data", "clips": 1, "disabledClips": 0, "gaps": 0, "durationSeconds": 1]]]]
        let renderProblems = render.violations(of: badRender)
        #expect(renderProblems.contains { $0.hasPrefix("$.status: skipped is not one of") }, "\(renderProblems)")
        #expect(renderProblems.contains { $0.hasPrefix("$.timeline.tracks[0].mediaType: data is not one of") }, "\(renderProblems)")
    }

    @Test func transcodeLinesValidateAndComeAsEachInputEnds() throws {
        let dir = try scratch("lines")
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        let clip = try Data(contentsOf: URL(fileURLWithPath: TranscodeCommandTests.clip))
        for i in 0..<4 { try clip.write(to: inputs.appendingPathComponent("clip\(i).mp4")) }
        try Data("not a movie".utf8).write(to: inputs.appendingPathComponent("notes.mov"))
        // The first line is on stdout while the batch is still running.
        let script = """
            "$0" transcode "$1" --preset 640x480 --quality 50 --output-dir "$2" --jobs 1 --json > "$3/lines" 2>/dev/null & p=$!
            until [ -s "$3/lines" ] || ! kill -0 $p 2>/dev/null; do sleep 0.02; done
            if kill -0 $p 2>/dev/null; then echo "running at first line"; else echo "ended before first line"; fi
            wait $p; echo "status $?"
            """
        let run = try Vaf.run(executable: "/bin/bash", ["-c", script, Vaf.binary, inputs.path, dir.appendingPathComponent("out").path, dir.path])
        #expect(run.stdout.contains("running at first line"), "\(run.stdout)")
        #expect(run.stdout.contains("status 65"), "one input is bad: \(run.stdout)")
        let text = try String(contentsOf: dir.appendingPathComponent("lines"), encoding: .utf8)
        let lines = try Vaf.jsonLines(text)
        #expect(lines.count == 5, "one line per input: \(text)")
        let schema = try Self.schema("vaf-transcode.schema.json")
        for line in lines {
            #expect(schema.violations(of: line).isEmpty, "\(schema.violations(of: line))")
            #expect(line["schemaVersion"] as? Int == 1)
        }
        #expect(lines.filter { $0["status"] as? String == "completed" }.count == 4)
        #expect(lines.allSatisfy { $0["status"] as? String != "completed" || $0["quality"] as? Int == 50 })

        let dry = try Vaf.run(["transcode", TranscodeCommandTests.clip, "--dry-run", "--json", "--output-dir", dir.appendingPathComponent("dry").path])
        let planned = try Vaf.jsonLines(dry.stdout)
        #expect(planned.count == 1 && planned[0]["status"] as? String == "planned")
        #expect(schema.violations(of: planned[0]).isEmpty, "\(schema.violations(of: planned[0]))")
    }

    @Test func infoLinesValidate() throws {
        let missing = "/nonexistent/clip.mp4"
        let result = try Vaf.run(["info", "--json", Vaf.fixture("h264_aac_iphone6_rot90_gps_metadata.mov"), missing,
                                  Vaf.fixture("vp9_profile2_10bit_240p.webm")])
        #expect(result.status == 1)
        let lines = try Vaf.jsonLines(result.stdout)
        #expect(lines.map { $0["path"] as? String } == [Vaf.fixture("h264_aac_iphone6_rot90_gps_metadata.mov"), missing,
                                                        Vaf.fixture("vp9_profile2_10bit_240p.webm")])
        let schema = try Self.schema("vaf-info.schema.json")
        for line in lines {
            #expect(line["schemaVersion"] as? Int == 1)
            #expect(schema.violations(of: line).isEmpty, "\(schema.violations(of: line))")
        }
        #expect((lines[1]["error"] as? [String: Any])?["code"] as? String == "fileNotFound")
    }
}

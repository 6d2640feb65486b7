import Foundation
import Testing

/// Every command stops on SIGINT, SIGTERM, SIGHUP and a closed stdout as `vaf transcode` does:
/// a report per input, no temporary file left, and 128 + the signal as its exit status.
@Suite(.serialized) struct SignalCommandTests {
    static let clip = Vaf.fixture("testsrc_320x240_30fps_3s.mp4")

    /// A folder with `count` copies of the test clip under in/, an empty out/, and its removal.
    private static func batch(_ label: String, count: Int) throws -> (dir: URL, inputs: URL, outputs: URL) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-\(label)-\(UUID().uuidString)")
        let (inputs, outputs) = (dir.appendingPathComponent("in"), dir.appendingPathComponent("out"))
        for folder in [inputs, outputs] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        let clip = try Data(contentsOf: URL(fileURLWithPath: Self.clip))
        for i in 0..<count { try clip.write(to: inputs.appendingPathComponent(String(format: "clip%02d.mp4", i))) }
        return (dir, inputs, outputs)
    }

    /// SIGTERM once the first image exists: thumbnails stops between images with 143, prints a
    /// JSON line for every input and leaves no temporary file (Foundation's `.dat.nosync…`).
    @Test func thumbnailsStopsOnSIGTERMWithAReportPerInput() throws {
        let (dir, inputs, outputs) = try Self.batch("thumbs-sigterm", count: 12)
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = """
            "$0" thumbnails "$1" --every 0.1 --exact --output-dir "$2" --json > "$3/rows.json" 2>/dev/null & p=$!
            until [ -n "$(ls -A "$2")" ] || ! kill -0 $p 2>/dev/null; do sleep 0.02; done
            kill -TERM $p; wait $p; echo $?
            """
        let run = try Vaf.run(executable: "/bin/bash", ["-c", script, Vaf.binary, inputs.path, outputs.path, dir.path])
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "143", "exit status after SIGTERM: \(run.stdout) \(run.stderr)")
        let rows = try Vaf.jsonLines(String(decoding: try Data(contentsOf: dir.appendingPathComponent("rows.json")), as: UTF8.self))
        #expect(rows.count == 12, "a row per input")
        #expect(rows.contains { $0["status"] as? String == "cancelled" }, "the signal came mid-batch")
        let hidden = try FileManager.default.contentsOfDirectory(atPath: outputs.path).filter { $0.hasPrefix(".") }
        #expect(hidden.isEmpty, "no temporary file: \(hidden)")
    }

    /// A thumbnails run killed outright (SIGKILL) leaves the image it was writing as a hidden
    /// partial; the next run for that input removes it and says so. A partial whose writer still
    /// holds its lock, and another input's, stay.
    @Test func thumbnailsRemoveThePartialImagesAKilledRunLeft() throws {
        let (dir, inputs, outputs) = try Self.batch("thumbs-sigkill", count: 1)
        defer { try? FileManager.default.removeItem(at: dir) }
        let abandoned = outputs.appendingPathComponent(".clip00-002.vaf-partial-424242-1a2b3c.jpg")
        let live = outputs.appendingPathComponent(".clip00-003.vaf-partial-\(getpid())-4d5e6f.jpg")
        let other = outputs.appendingPathComponent(".other-001.vaf-partial-424242-7a8b9c.jpg")
        for file in [abandoned, live, other] { try Data("half an image".utf8).write(to: file) }
        let held = open(live.path, O_RDWR)
        defer { close(held) }
        #expect(flock(held, LOCK_EX | LOCK_NB) == 0, "this test holds the live partial's lock, as its writer would")
        let run = try Vaf.run(["thumbnails", inputs.path, "--count", "3", "--output-dir", outputs.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: abandoned.path), "the killed run's partial is gone")
        #expect(run.stderr.contains("removed \(abandoned.path), a partial file whose writer is gone"), "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: live.path), "a partial whose writer holds its lock stays")
        #expect(FileManager.default.fileExists(atPath: other.path), "another input's partial stays")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outputs.path).filter { !$0.hasPrefix(".") }.sorted()
                == ["clip00-001.jpg", "clip00-002.jpg", "clip00-003.jpg"])
    }

    /// SIGTERM while `vaf render` writes: 143, and neither the output nor its partial file is left.
    @Test func renderStopsOnSIGTERMAndLeavesNothing() throws {
        let dir = try RenderCommandTests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        // A minute of gap between the clips, so the render is still writing when the signal comes.
        let minute = #"{"OTIO_SCHEMA": "Gap.1", "source_range": \#(RenderCommandTests.range(0, 24 * 60, 24))}"#
        try Data(RenderCommandTests.timeline(middle: minute).utf8).write(to: dir.appendingPathComponent("long.otio"))
        let script = """
            "$0" render "$1/long.otio" > /dev/null 2> "$1/stderr.txt" & p=$!
            until ls -a "$1" | grep -q 'vaf-partial' || ! kill -0 $p 2>/dev/null; do sleep 0.02; done
            kill -TERM $p; wait $p; echo $?
            """
        let run = try Vaf.run(executable: "/bin/bash", ["-c", script, Vaf.binary, dir.path])
        let stderr = (try? String(contentsOf: dir.appendingPathComponent("stderr.txt"), encoding: .utf8)) ?? ""
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "143", "exit status after SIGTERM: \(run.stdout) \(stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("long") || $0.contains("vaf-partial") }
        #expect(left == ["long.otio"], "no output and no partial file: \(left)")
    }

    /// SIGTERM while `vaf info` reads a long list: it stops between files with 143, every line
    /// it printed whole.
    @Test func infoStopsOnSIGTERMBetweenFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-info-sigterm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = """
            files=(); for i in $(seq 3000); do files+=("$1"); done
            "$0" info --json "${files[@]}" > "$2/rows.json" 2>/dev/null & p=$!
            until [ -s "$2/rows.json" ] || ! kill -0 $p 2>/dev/null; do sleep 0.01; done
            kill -TERM $p; wait $p; echo $?
            """
        let run = try Vaf.run(executable: "/bin/bash", ["-c", script, Vaf.binary, Self.clip, dir.path])
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "143", "exit status after SIGTERM: \(run.stdout) \(run.stderr)")
        let rows = try Vaf.jsonLines(String(decoding: try Data(contentsOf: dir.appendingPathComponent("rows.json")), as: UTF8.self))
        #expect(!rows.isEmpty && rows.count < 3000, "stopped between files: \(rows.count) of 3000")
    }

    /// `vaf transcode --json … | head -c1`: the reader goes after one byte; the next row's EPIPE
    /// cancels the export in flight (its partial file goes) and vaf ends by itself with 141,
    /// its summary written, instead of being killed by SIGPIPE mid-export.
    @Test func transcodeStopsWhenStdoutsReaderGoes() throws {
        let (dir, inputs, outputs) = try Self.batch("epipe", count: 8)
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = #""$0" transcode "$1" --preset 640x480 --output-dir "$2" --jobs 2 --json 2> "$3/stderr.txt" | head -c1 > /dev/null; echo ${PIPESTATUS[0]}"#
        let run = try Vaf.run(executable: "/bin/bash", ["-c", script, Vaf.binary, inputs.path, outputs.path, dir.path])
        let stderr = (try? String(contentsOf: dir.appendingPathComponent("stderr.txt"), encoding: .utf8)) ?? ""
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "141", "exit status: \(run.stdout) \(stderr)")
        #expect(stderr.contains("cancelled"), "vaf ended by itself and said what it cancelled: \(stderr)")
        let hidden = try FileManager.default.contentsOfDirectory(atPath: outputs.path).filter { $0.hasPrefix(".") && $0 != ".vaf-journal.jsonl" }
        #expect(hidden.isEmpty, "no partial file: \(hidden)")
    }
}

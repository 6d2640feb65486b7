import ChildProcess
import BenchKit
import Foundation
import Testing

/// `vaf render TIMELINE.otio`, run as a user would, with ffmpeg and ffprobe as the oracles.
@Suite(.serialized) struct RenderCommandTests {
    static let ffmpeg = "/usr/bin/ffmpeg"
    static let ffprobe = "/usr/bin/ffprobe"

    /// A scratch folder with a.mp4 (24 fps) and b.mp4 (30000/1001 fps), 2 s each with a tone, and
    /// edit.otio: 1 s of a, a 0.5 s gap, 1.001 s (30 frames) of b and a closing 0.5 s gap on V1;
    /// 2 s of a's sound on A1.
    static func scratch() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-render-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (name, rate) in [("a.mp4", "24"), ("b.mp4", "30000/1001")] {
            let made = try Vaf.run(executable: ffmpeg, [
                "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=\(rate):d=2", "-f", "lavfi", "-i", "sine=f=440:r=48000:d=2",
                "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", dir.appendingPathComponent(name).path])
            try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        }
        try Data(timeline(middle: gap).utf8).write(to: dir.appendingPathComponent("edit.otio"))
        return dir
    }

    static func range(_ start: Int, _ duration: Int, _ rate: Double) -> String {
        #"{"OTIO_SCHEMA": "TimeRange.1", "start_time": {"OTIO_SCHEMA": "RationalTime.1", "value": \#(start), "rate": \#(rate)}, "#
            + #""duration": {"OTIO_SCHEMA": "RationalTime.1", "value": \#(duration), "rate": \#(rate)}}"#
    }
    static func clip(_ name: String, _ target: String, _ range: String) -> String {
        #"{"OTIO_SCHEMA": "Clip.1", "name": "\#(name)", "source_range": \#(range), "media_reference": {"OTIO_SCHEMA": "ExternalReference.1", "target_url": "\#(target)"}}"#
    }
    static let gap = #"{"OTIO_SCHEMA": "Gap.1", "source_range": \#(range(0, 12, 24))}"#
    static let transition = #"{"OTIO_SCHEMA": "Transition.1", "name": "dissolve", "transition_type": "SMPTE_Dissolve"}"#

    /// The test timeline with `middle` between the two video clips.
    static func timeline(middle: String) -> String {
        #"{"OTIO_SCHEMA": "Timeline.1", "name": "edit", "tracks": {"OTIO_SCHEMA": "Stack.1", "children": ["#
            + #"{"OTIO_SCHEMA": "Track.1", "name": "V1", "kind": "Video", "children": [\#(clip("a", "a.mp4", range(12, 24, 24))), \#(middle), "#
            + #"\#(clip("b", "b.mp4", range(15, 30, 29.97))), \#(gap)]}, "#
            + #"{"OTIO_SCHEMA": "Track.1", "name": "A1", "kind": "Audio", "children": [\#(clip("tone", "a.mp4", range(0, 96000, 48000)))]}]}}"#
    }

    /// 1 s + 0.5 s + 30 × 1001/30000 s + 0.5 s.
    static let timelineSeconds = 2 + 30.0 * 1001 / 30000

    /// The video stream's duration (s) and average frame rate ("24/1"), by ffprobe.
    static func video(_ path: String) throws -> (duration: Double, rate: String) {
        let probe = try Vaf.run(executable: ffprobe, ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=duration,avg_frame_rate",
                                                      "-of", "default=noprint_wrappers=1", path])
        var fields: [String: String] = [:]
        for line in probe.stdout.split(separator: "\n") {
            let pair = line.split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { fields[pair[0]] = pair[1] }
        }
        return (Double(fields["duration"] ?? "") ?? -1, fields["avg_frame_rate"] ?? "")
    }

    /// The average luma of the picture on screen at `seconds`, by ffmpeg's signalstats over
    /// every decoded frame (the last frame at or before that time).
    static func luma(_ path: String, at seconds: Double) throws -> Double {
        let run = try Vaf.run(executable: ffmpeg, ["-v", "error", "-nostdin", "-i", path, "-vf",
                                                   "signalstats,metadata=mode=print:key=lavfi.signalstats.YAVG:file=-", "-f", "null", "-"])
        var shown: Double?
        var time = 0.0
        for line in run.stdout.split(separator: "\n") {
            if let r = line.range(of: "pts_time:") { time = Double(line[r.upperBound...].split(separator: " ")[0]) ?? .infinity }
            if let r = line.range(of: "YAVG="), time <= seconds + 1e-6 { shown = Double(line[r.upperBound...]) }
        }
        return try #require(shown, "no frame at \(seconds) s")
    }

    @Test func rendersTheTimelineBesideItWithTheGapBlack() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let timeline = dir.appendingPathComponent("edit.otio").path
        let result = try Vaf.run(["render", timeline, "--size", "320x240", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let output = dir.appendingPathComponent("edit.mp4").path
        #expect(FileManager.default.fileExists(atPath: output), "the default output is the timeline's name with .mp4, beside it")
        let video = try Self.video(output)
        #expect(abs(video.duration - Self.timelineSeconds) <= 1.0 / 24 + 0.001, "\(video.duration) s")
        #expect(video.rate == "24/1", "the timeline's rate, that of its first clip")
        #expect(try Self.luma(output, at: 1.25) < 20, "the gap's middle frame is black")
        #expect(try Self.luma(output, at: 0.5) > 40, "the first clip is not black")
        #expect(try Self.luma(output, at: 2.0) > 40, "the second clip is not black")
        #expect(try Self.luma(output, at: Self.timelineSeconds - 0.25) < 20, "the closing gap is black")

        let lines = try Vaf.jsonLines(result.stdout)
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line["schemaVersion"] as? Int == 1 && line["status"] as? String == "completed")
        let schema = try JSONSchemaSubset(json: Data(contentsOf: Vaf.packageRoot.appendingPathComponent("Schemas/vaf-render.schema.json")))
        #expect(schema.violations(of: line).isEmpty, "\(schema.violations(of: line))")
        let report = try #require(line["timeline"] as? [String: Any])
        #expect(report["frameRate"] as? Double == 24)
        let tracks = try #require(report["tracks"] as? [[String: Any]])
        #expect(tracks.map { $0["mediaType"] as? String } == ["video", "audio"])
        #expect(tracks.first?["gaps"] as? Int == 2 && tracks.first?["clips"] as? Int == 2)

        let again = try Vaf.run(["render", timeline])
        #expect(again.status == 65, "an existing output is kept without --overwrite")
        #expect(again.stderr.split(separator: "\n").count == 1 && again.stderr.contains("\(output): the output exists"), "\(again.stderr)")
        let replaced = try Vaf.run(["render", timeline, "--overwrite", "-o", dir.appendingPathComponent("other.mov").path])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("other.mov").path))
    }

    @Test func aTimelineThatCannotRenderFailsInOneLineAndLeavesNoFile() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let timeline = dir.appendingPathComponent("fade.otio")
        try Data(Self.timeline(middle: Self.transition).utf8).write(to: timeline)
        let before = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        let result = try Vaf.run(["render", timeline.path, "--json"])
        #expect(result.status == 65)
        #expect(result.stderr == "vaf render: \(timeline.path): track 1 \"V1\", item 2 \"dissolve\": in_offset is not a RationalTime with a finite value and a positive rate\n")
        let line = try #require(try Vaf.jsonLines(result.stdout).first)
        #expect(line["status"] as? String == "failed" && line["schemaVersion"] as? Int == 1)
        let schema = try JSONSchemaSubset(json: Data(contentsOf: Vaf.packageRoot.appendingPathComponent("Schemas/vaf-render.schema.json")))
        #expect(schema.violations(of: line).isEmpty, "\(schema.violations(of: line))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == before, "no output or temporary file left")
    }

    /// A 0.5 s dissolve between a red and a blue clip (1.75–2.25 s at 24 fps): each frame of it
    /// is red × (1 − p) + blue × p, p = (t − 1.75 s)/0.5 s, checked at p = 1/4, 1/2 and 3/4 (swapped
    /// weights agree only at the cut); before it red, after it blue (ffmpeg decodes the pixels).
    @Test func aDissolveBlendsTheClipsAtTheCut() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (name, colour) in [("red.mp4", "red"), ("blue.mp4", "blue")] {
            let made = try Vaf.run(executable: Self.ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "color=c=\(colour):s=320x240:r=24:d=3",
                                                             "-c:v", "libx264", "-pix_fmt", "yuv420p", dir.appendingPathComponent(name).path])
            try #require(made.status == 0)
        }
        let offset = #"{"OTIO_SCHEMA": "RationalTime.1", "value": 6, "rate": 24}"#
        let dissolve = #"{"OTIO_SCHEMA": "Transition.1", "name": "x", "transition_type": "SMPTE_Dissolve", "in_offset": \#(offset), "out_offset": \#(offset)}"#
        let text = #"{"OTIO_SCHEMA": "Timeline.1", "name": "x", "tracks": {"OTIO_SCHEMA": "Stack.1", "children": [{"OTIO_SCHEMA": "Track.1", "name": "V", "kind": "Video", "children": ["#
            + #"\#(Self.clip("red", "red.mp4", Self.range(0, 48, 24))), \#(dissolve), \#(Self.clip("blue", "blue.mp4", Self.range(12, 48, 24)))]}]}}"#
        let timeline = dir.appendingPathComponent("dissolve.otio")
        try Data(text.utf8).write(to: timeline)
        let result = try Vaf.run(["render", timeline.path])
        #expect(result.status == 0, "\(result.stderr)")
        let output = dir.appendingPathComponent("dissolve.mp4").path
        #expect(abs(try Self.video(output).duration - 4) <= 1.0 / 24 + 0.001)
        // The centre pixel of every frame, in order: frame n is the picture at n/24 s.
        let child = try ChildProcess.run(Self.ffmpeg, ["-v", "error", "-nostdin", "-i", output, "-an", "-fps_mode", "passthrough",
                                                       "-vf", "format=rgb24,crop=2:2:160:120", "-f", "rawvideo", "-"], timeLimit: 60)
        let bytes = [UInt8](child.standardOutput)
        try #require(bytes.count == 96 * 12, "4 s at 24 fps: \(bytes.count / 12) frames")
        let frames = stride(from: 0, to: bytes.count, by: 12).map { bytes[$0..<$0 + 3].map { Int($0) } }
        let (before, after) = (frames[24], frames[72])
        #expect(before[0] > 200 && before[2] < 60 && after[2] > 200 && after[0] < 60, "red then blue: \(before) \(after)")
        for (n, p) in [(45, 0.25), (48, 0.5), (51, 0.75)] {
            // ±10 per channel: two H.264 encodes and 4:2:0 between the blend and the pixel read
            // back; a frame early or late moves a channel by 255/12 ≈ 21.
            for c in 0..<3 {
                let blend = Double(before[c]) * (1 - p) + Double(after[c]) * p
                #expect(abs(Double(frames[n][c]) - blend) <= 10, "channel \(c) of frame \(n) (p = \(p)): \(frames[n]), the blend is \(blend)")
            }
        }
    }

    /// The amplitude of the `hertz` sine in `samples` (mono) over the `window` samples centred
    /// on sample `centre`: Goertzel's single-bin DFT, 2·|X(f)|/N. The window holds a whole number
    /// of periods of each tone the tests use, so one tone does not leak into the other's bin.
    static func amplitude(of hertz: Double, in samples: [Float], around centre: Int, window: Int, rate: Double) -> Double {
        let start = centre - window / 2
        guard start >= 0, start + window <= samples.count else { return .nan }
        var re = 0.0, im = 0.0
        for n in 0..<window {
            let phase = 2 * Double.pi * hertz * Double(start + n) / rate
            re += Double(samples[start + n]) * cos(phase)
            im -= Double(samples[start + n]) * sin(phase)
        }
        return 2 * (re * re + im * im).squareRoot() / Double(window)
    }

    /// The first audio stream of `path`, decoded by ffmpeg to mono 32-bit float at 48 kHz.
    static func pcm(_ path: String) throws -> [Float] {
        let child = try ChildProcess.run(ffmpeg, ["-v", "error", "-nostdin", "-i", path, "-vn", "-ac", "1", "-ar", "48000",
                                                  "-f", "f32le", "-c:a", "pcm_f32le", "-"], timeLimit: 60)
        try #require(child.succeeded, "ffmpeg: \(child.stderr)")
        return child.standardOutput.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// An audio dissolve is a linear crossfade: a 1 s dissolve centred on the cut at 2 s between
    /// a 400 Hz tone and a 1 kHz tone. ffmpeg decodes the render; each tone's amplitude, measured
    /// apart (Goertzel, 20 ms windows: 8 and 20 whole periods), must follow its own ramp at
    /// 1/8, 1/4, 1/2, 3/4 and 7/8 of the dissolve (outgoing × (1 − p), incoming × p, the levels
    /// measured in the sources the same way) and be absent outside it. Swapped ramps, a missing
    /// crossfade or one in the wrong place all miss by a quarter of the level or more.
    @Test func anAudioDissolveCrossfadesTheTonesLinearlyOverItsRange() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-render-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for (name, hertz) in [("low.wav", 400), ("high.wav", 1000)] {
            let made = try Vaf.run(executable: Self.ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine=f=\(hertz):r=48000:d=4",
                                                             "-af", "volume=4", "-c:a", "pcm_s16le", dir.appendingPathComponent(name).path])
            try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        }
        // low's 0–2 s, then high's 1–3 s; the dissolve takes 0.5 s of each clip's handle.
        let half = #"{"OTIO_SCHEMA": "RationalTime.1", "value": 24000, "rate": 48000}"#
        let dissolve = #"{"OTIO_SCHEMA": "Transition.1", "name": "x", "transition_type": "SMPTE_Dissolve", "in_offset": \#(half), "out_offset": \#(half)}"#
        let text = #"{"OTIO_SCHEMA": "Timeline.1", "name": "x", "tracks": {"OTIO_SCHEMA": "Stack.1", "children": [{"OTIO_SCHEMA": "Track.1", "name": "A", "kind": "Audio", "children": ["#
            + #"\#(Self.clip("low", "low.wav", Self.range(0, 96000, 48000))), \#(dissolve), \#(Self.clip("high", "high.wav", Self.range(48000, 96000, 48000)))]}]}}"#
        let timeline = dir.appendingPathComponent("crossfade.otio")
        try Data(text.utf8).write(to: timeline)
        let result = try Vaf.run(["render", timeline.path])
        #expect(result.status == 0, "\(result.stderr)")

        let rate = 48000.0, window = 960
        let output = try Self.pcm(dir.appendingPathComponent("crossfade.mp4").path)
        #expect(abs(Double(output.count) / rate - 4) <= 0.05, "4 s of sound: \(Double(output.count) / rate) s")
        let (low, high) = (try Self.pcm(dir.appendingPathComponent("low.wav").path), try Self.pcm(dir.appendingPathComponent("high.wav").path))
        let lowLevel = Self.amplitude(of: 400, in: low, around: 96000, window: window, rate: rate)
        let highLevel = Self.amplitude(of: 1000, in: high, around: 96000, window: window, rate: rate)
        try #require(lowLevel > 0.4 && highLevel > 0.4, "the sources' tones: \(lowLevel), \(highLevel)")
        // (time in s, the incoming tone's weight p); the dissolve runs from 1.5 s to 2.5 s.
        let points: [(Double, Double)] = [(0.75, 0), (1.25, 0), (1.625, 0.125), (1.75, 0.25), (2, 0.5), (2.25, 0.75), (2.375, 0.875), (2.75, 1), (3.5, 1)]
        for (seconds, p) in points {
            let at = Int(seconds * rate)
            let outgoing = Self.amplitude(of: 400, in: output, around: at, window: window, rate: rate) / lowLevel
            let incoming = Self.amplitude(of: 1000, in: output, around: at, window: window, rate: rate) / highLevel
            // ±0.04 of full level: AAC's coding error on a pure tone (under 1 %), and a ramp
            // late or early by up to one 1024-sample AAC frame (2 % of a 1 s ramp).
            #expect(abs(outgoing - (1 - p)) <= 0.04, "400 Hz at \(seconds) s: \(outgoing) of its level, expected \(1 - p)")
            #expect(abs(incoming - p) <= 0.04, "1 kHz at \(seconds) s: \(incoming) of its level, expected \(p)")
        }
    }

    /// `--dry-run --json` prints the composition (segments and layers) and renders nothing.
    @Test func aDryRunPrintsTheCompositionAndWritesNothing() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let timeline = dir.appendingPathComponent("edit.otio").path
        let result = try Vaf.run(["render", timeline, "--dry-run", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let printed = try Vaf.jsonLines(result.stdout)
        #expect(printed.count == 1, "the plan alone, no render report: \(result.stdout)")
        let plan = try #require(printed.first)
        #expect(plan["schemaVersion"] as? Int == 1)
        let tracks = try #require(plan["tracks"] as? [[String: Any]])
        let video = try #require(tracks.first { $0["mediaType"] as? String == "video" })
        let segments = try #require(video["segments"] as? [[String: Any]])
        #expect(segments.count == 4, "a, the gap, b, the closing gap: \(segments)")
        #expect(segments[1]["file"] is NSNull && abs((segments[1]["targetStart"] as? Double ?? 0) - 1) < 1e-9)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("edit.mp4").path), "nothing rendered")
        let text = try Vaf.run(["render", timeline, "--dry-run"])
        #expect(text.status == 0 && text.stdout.contains("(empty)") && text.stdout.contains("a.mp4"), "\(text.stdout)")
        #expect(!text.stdout.contains(" s from "), "no render summary after the plan: \(text.stdout)")
        let existing = dir.appendingPathComponent("edit.mp4")
        try Data("kept".utf8).write(to: existing)
        let beside = try Vaf.run(["render", timeline, "--dry-run"])
        #expect(beside.status == 0 && beside.stdout.contains("a.mp4"), "an existing output does not stop a dry run: \(beside.stderr)")
        #expect(try Data(contentsOf: existing) == Data("kept".utf8), "and is left as it was")
    }

    @Test func usageErrorsAndAMissingTimeline() throws {
        let missing = "/nonexistent/cut.otio"
        let noFile = try Vaf.run(["render", missing])
        #expect(noFile.status == 65)
        #expect(noFile.stderr == "vaf render: \(missing): the timeline file does not exist\n")
        #expect(try Vaf.run(["render", missing, "--bogus"]).status == 64)
        #expect(try Vaf.run(["render", missing, "--preset", "nonsense"]).status == 64)
        #expect(try Vaf.run(["render", missing, "--preset", "passthrough"]).status == 64)
        #expect(try Vaf.run(["render", missing, "--size", "big"]).status == 64)
        #expect(try Vaf.run(["render", missing, "--quality", "101"]).status == 64)
        #expect(try Vaf.run(["render", missing, "--frame-rate", "fast"]).status == 64)
        #expect(try Vaf.run(["render", missing, "-o", "/tmp/out.avi"]).status == 64)
        #expect(try Vaf.run(["render"]).status == 64)
    }
}

import ChildProcess
import Foundation
import Testing

/// The Python interpreter that has the `opentimelineio` package: `VAF_OTIO_PYTHON` (set by
/// Hardware/test.sh), else the venv Hardware/otio-venv.sh makes in `.build/otio-venv`.
enum OTIOPython {
    static var path: String {
        ProcessInfo.processInfo.environment["VAF_OTIO_PYTHON"]
            ?? Vaf.packageRoot.appendingPathComponent(".build/otio-venv/bin/python3").path
    }

    /// True when `path` runs and imports `opentimelineio`.
    static func hasOpenTimelineIO() async -> Bool {
        guard FileManager.default.isExecutableFile(atPath: path) else { return false }
        let probe = try? await ChildProcess.run(path, ["-c", "import opentimelineio"], timeLimit: 60)
        return probe?.succeeded == true
    }
}

/// Timelines written by the `opentimelineio` Python package itself (PyPI, installed into a venv by
/// Hardware/otio-venv.sh), rendered with `vaf render` and checked with ffmpeg and ffprobe as
/// independent oracles against what OTIO says about each timeline: duration, cut points found
/// by frame differences, dissolve lengths, and the documented refusals.
// Skipped, with this reason, where the package could not be installed (no network to PyPI).
@Suite(.serialized, .enabled("needs Python's opentimelineio package: bash Hardware/otio-venv.sh installs it from PyPI into .build/otio-venv (Hardware/test.sh runs it); set VAF_OTIO_PYTHON to use another interpreter") {
    await OTIOPython.hasOpenTimelineIO()
})
struct OTIOOracleTests {
    static let ffmpeg = "/usr/bin/ffmpeg"
    static let ffprobe = "/usr/bin/ffprobe"
    static let script = Vaf.packageRoot.appendingPathComponent("Tests/vafTests/Fixtures/otio_oracle_timelines.py").path

    /// What OTIO reads back from a timeline it wrote (see otio_oracle_timelines.py).
    struct TimelineFacts: Decodable {
        struct Transition: Decodable {
            var cutSeconds: Double
            var startSeconds: Double
            var frames: Int
        }

        var path: String
        var durationSeconds: Double
        var rate: Double
        var frames: Int
        var cutSeconds: [Double]
        var transitions: [Transition]
    }

    struct Facts: Decodable {
        var otioVersion: String
        var cuts, dissolve, speed, effect, freeze, nested: TimelineFacts
    }

    /// The clips the timelines use, each from an ffmpeg test source whose pictures differ
    /// clearly from the others', so a cut between any two is a jump in frame difference.
    enum Source: String, CaseIterable {
        case pattern = "pattern.mp4", bars = "bars.mp4", fractal = "fractal.mp4"
        case bars25 = "bars25.mp4", plate25 = "plate25.mp4", counter25 = "counter25.mp4"

        /// The lavfi source: moving (testsrc2, mandelbrot), still (smptebars, a colour) or
        /// changing every frame (testsrc, with its frame counter), at the timeline's rate.
        var lavfi: String {
            switch self {
            case .pattern: "testsrc2=s=320x180:r=30000/1001:d=3"
            case .bars: "smptebars=s=320x180:r=30000/1001:d=3"
            case .fractal: "mandelbrot=s=320x180:r=30000/1001"
            case .bars25: "smptebars=s=320x180:r=25:d=4"
            case .plate25: "color=c=0x206090:s=320x180:r=25:d=4"
            case .counter25: "testsrc=s=320x180:r=25:d=5"
            }
        }
    }

    /// A scratch folder with `sources` made by ffmpeg and every timeline written by OTIO, and
    /// what OTIO says about them.
    static func scratch(_ sources: [Source]) async throws -> (URL, Facts) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-otio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for source in sources {
            let duration = source == .fractal ? ["-t", "3"] : []
            let made = try await ChildProcess.run(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", source.lavfi] + duration
                + ["-c:v", "libx264", "-pix_fmt", "yuv420p", dir.appendingPathComponent(source.rawValue).path], timeLimit: 120)
            try #require(made.succeeded, "ffmpeg \(source.lavfi): \(made.stderr)")
        }
        let written = try await ChildProcess.run(OTIOPython.path, [script, dir.path], timeLimit: 120)
        try #require(written.succeeded, "otio_oracle_timelines.py: \(written.stderr)")
        return (dir, try JSONDecoder().decode(Facts.self, from: written.standardOutput))
    }

    /// `vaf render TIMELINE -o OUTPUT`.
    static func render(_ timeline: String, to output: String) async throws -> ChildProcessResult {
        try await ChildProcess.run(Vaf.binary, ["render", timeline, "-o", output, "--overwrite"], timeLimit: 600)
    }

    /// The video stream's duration in seconds, frame count and average rate ("25/1"), by ffprobe.
    static func probe(_ path: String) async throws -> (seconds: Double, frames: Int, rate: String) {
        let run = try await ChildProcess.run(ffprobe, ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                       "-show_entries", "stream=duration,nb_read_frames,avg_frame_rate",
                                                       "-of", "default=noprint_wrappers=1", path], timeLimit: 120)
        var fields: [String: String] = [:]
        for line in run.stdout.split(separator: "\n") {
            let pair = line.split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { fields[pair[0]] = pair[1] }
        }
        return (Double(fields["duration"] ?? "") ?? -1, Int(fields["nb_read_frames"] ?? "") ?? -1, fields["avg_frame_rate"] ?? "")
    }

    static let thumbnail = (width: 160, height: 90)

    /// Every picture of the file in decoding order, as 160x90 grey bytes, decoded by ffmpeg
    /// (no frame dropped or repeated: `-fps_mode passthrough`).
    static func greyFrames(_ path: String) async throws -> [[UInt8]] {
        let run = try await ChildProcess.run(ffmpeg, ["-v", "error", "-nostdin", "-i", path, "-an", "-fps_mode", "passthrough",
                                                      "-vf", "scale=\(thumbnail.width):\(thumbnail.height),format=gray", "-f", "rawvideo", "-"],
                                             timeLimit: 120)
        try #require(run.succeeded, "ffmpeg: \(run.stderr)")
        let size = thumbnail.width * thumbnail.height
        let bytes = [UInt8](run.standardOutput)
        try #require(bytes.count % size == 0 && !bytes.isEmpty, "\(bytes.count) bytes is not a whole number of pictures")
        return stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<$0 + size]) }
    }

    /// Mean absolute difference of two grey pictures, 0…255.
    static func difference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        var sum = 0
        for i in a.indices { sum += abs(Int(a[i]) - Int(b[i])) }
        return Double(sum) / Double(a.count)
    }

    /// A jump this large between two consecutive pictures is a cut: the sources' own
    /// picture-to-picture changes stay far below it, and any two of them differ by far more.
    static let cutThreshold = 20.0

    /// The indices of the pictures that start a new shot: where the difference to the previous
    /// picture jumps above `cutThreshold`.
    static func cuts(_ frames: [[UInt8]]) -> [Int] {
        frames.indices.dropFirst().filter { difference(frames[$0], frames[$0 - 1]) > cutThreshold }
    }

    /// Each expected time as a picture index at `rate`, matched to a detected cut within one
    /// picture; the detected cuts none of them explains are returned too.
    static func match(_ detected: [Int], expectedSeconds: [Double], rate: Double) -> (missing: [Double], extra: [Int]) {
        var extra = detected
        var missing: [Double] = []
        for seconds in expectedSeconds {
            let frame = Int((seconds * rate).rounded())
            if let hit = extra.firstIndex(where: { abs($0 - frame) <= 1 }) { extra.remove(at: hit) } else { missing.append(seconds) }
        }
        return (missing, extra)
    }

    /// (a) Three trimmed clips and a gap at 29.97 fps: the movie lasts OTIO's duration, has
    /// its frame rate, and its shots change at the times OTIO gives for each item's start.
    @Test func cutsAndAGapLandWhereOTIOPutsThem() async throws {
        let (dir, facts) = try await Self.scratch([.pattern, .bars, .fractal])
        defer { try? FileManager.default.removeItem(at: dir) }
        let timeline = facts.cuts
        let output = dir.appendingPathComponent("cuts.mp4").path
        let rendered = try await Self.render(timeline.path, to: output)
        try #require(rendered.succeeded, "vaf render: \(rendered.stderr)")

        let video = try await Self.probe(output)
        #expect(abs(video.seconds - timeline.durationSeconds) <= 1 / timeline.rate + 0.001,
                "\(video.seconds) s against OTIO's \(timeline.durationSeconds) s")
        #expect(abs(video.frames - timeline.frames) <= 1, "\(video.frames) pictures against OTIO's \(timeline.frames)")
        #expect(video.rate == "30000/1001", "the timeline's rate, exactly: \(video.rate)")

        let frames = try await Self.greyFrames(output)
        let detected = Self.cuts(frames)
        let (missing, extra) = Self.match(detected, expectedSeconds: timeline.cutSeconds, rate: timeline.rate)
        #expect(missing.isEmpty && extra.isEmpty,
                "cuts at pictures \(detected); OTIO's at \(timeline.cutSeconds) s; not found: \(missing), unexplained: \(extra)")
        let gapMiddle = Int(((timeline.cutSeconds[1] + timeline.cutSeconds[2]) / 2 * timeline.rate).rounded())
        #expect(frames[gapMiddle].reduce(0) { $0 + Int($1) } / frames[gapMiddle].count < 20, "the gap is black")
    }

    /// (b) A 12-frame SMPTE_Dissolve at 25 fps: the pictures blended from both clips run from
    /// OTIO's `in_offset` before the cut to its `out_offset` after it, fading steadily.
    @Test func aDissolveLastsItsFramesAroundTheCut() async throws {
        let (dir, facts) = try await Self.scratch([.bars25, .plate25])
        defer { try? FileManager.default.removeItem(at: dir) }
        let timeline = facts.dissolve
        let transition = try #require(timeline.transitions.first)
        let output = dir.appendingPathComponent("dissolve.mp4").path
        let rendered = try await Self.render(timeline.path, to: output)
        try #require(rendered.succeeded, "vaf render: \(rendered.stderr)")
        let video = try await Self.probe(output)
        #expect(abs(video.seconds - timeline.durationSeconds) <= 1 / timeline.rate + 0.001,
                "\(video.seconds) s against OTIO's \(timeline.durationSeconds) s")

        // Both sources are still pictures, so each rendered picture is (1 - f) outgoing + f
        // incoming, and f = d(outgoing) / (d(outgoing) + d(incoming)) pixel by pixel.
        let frames = try await Self.greyFrames(output)
        let (outgoing, incoming) = (frames[5], frames[frames.count - 5])
        let apart = Self.difference(outgoing, incoming)
        try #require(apart > 40, "the two clips look alike (\(apart)); the test cannot see a dissolve")
        let mix = frames.map { frame -> Double in
            let (fromOutgoing, fromIncoming) = (Self.difference(frame, outgoing), Self.difference(frame, incoming))
            return fromOutgoing / max(fromOutgoing + fromIncoming, 1e-9)
        }
        // Blended: more than 4% from both clips (a 12-frame ramp steps by 1/12, over 8%).
        let blended = mix.indices.filter { mix[$0] > 0.04 && mix[$0] < 0.96 }
        let first = try #require(blended.first, "no blended picture; mix \(mix.map { String(format: "%.2f", $0) })")
        let last = try #require(blended.last)
        #expect(blended == Array(first...last), "one run of blended pictures: \(blended)")
        // An N-frame dissolve starts on the last unblended outgoing picture and ends on the
        // first unblended incoming one: N - 1 pictures in between are blended.
        let length = last - first + 2
        #expect(abs(length - transition.frames) <= 1, "\(length) frames of dissolve against OTIO's \(transition.frames)")
        let start = first - 1
        #expect(abs(Double(start) - transition.startSeconds * timeline.rate) <= 1,
                "the dissolve starts at picture \(start), OTIO says at \(transition.startSeconds) s")
        #expect(zip(blended, blended.dropFirst()).allSatisfy { mix[$0] < mix[$1] }, "the mix rises steadily: \(blended.map { mix[$0] })")
        let atCut = mix[Int((transition.cutSeconds * timeline.rate).rounded())]
        #expect(abs(atCut - 0.5) <= 0.1, "half and half at the cut: \(atCut)")
        #expect(Self.cuts(frames).isEmpty, "no hard cut anywhere: \(Self.cuts(frames))")
    }

    /// (c) A LinearTimeWarp of 2.0 keeps the clip's length on the track (OTIO's duration
    /// counts it so) and shows source picture 2k at picture k; the next clip starts where OTIO says.
    @Test func aLinearTimeWarpPlaysTwiceTheMediaInTheClipsLength() async throws {
        let (dir, facts) = try await Self.scratch([.counter25, .bars25])
        defer { try? FileManager.default.removeItem(at: dir) }
        let timeline = facts.speed
        let output = dir.appendingPathComponent("speed.mp4").path
        let rendered = try await Self.render(timeline.path, to: output)
        try #require(rendered.succeeded, "vaf render: \(rendered.stderr)")
        let video = try await Self.probe(output)
        #expect(abs(video.seconds - timeline.durationSeconds) <= 1 / timeline.rate + 0.001,
                "\(video.seconds) s against OTIO's \(timeline.durationSeconds) s")

        let frames = try await Self.greyFrames(output)
        let detected = Self.cuts(frames)
        let (missing, extra) = Self.match(detected, expectedSeconds: timeline.cutSeconds, rate: timeline.rate)
        #expect(missing.isEmpty && extra.isEmpty, "cuts at pictures \(detected); OTIO's at \(timeline.cutSeconds) s")

        // testsrc changes every picture (its counter and moving bar): the nearest source picture
        // to each rendered one tells which was shown.
        let source = try await Self.greyFrames(dir.appendingPathComponent(Source.counter25.rawValue).path)
        for shown in [5, 20, 35, 45] {
            let nearest = source.indices.min { Self.difference(frames[shown], source[$0]) < Self.difference(frames[shown], source[$1]) }!
            #expect(abs(nearest - 2 * shown) <= 1, "picture \(shown) shows source picture \(nearest), not \(2 * shown)")
        }
    }

    /// (d) What `vaf render` documents as refused: an effect other than LinearTimeWarp, a
    /// FreezeFrame, a nested Stack. Each fails with status 1 and one line naming the timeline,
    /// the object and the cause, and writes nothing.
    @Test(arguments: [
        ("effect", ["clip \"blurred\"", "effect \"Effect.1\" (GaussianBlur) is not supported"]),
        ("freeze", ["clip \"frozen\"", "a FreezeFrame effect is not supported"]),
        ("nested", ["item 2 \"inner\"", "a nested Stack inside a track is not supported"]),
    ])
    func unsupportedObjectsAreRefusedByName(_ name: String, _ naming: [String]) async throws {
        let (dir, facts) = try await Self.scratch([.bars25])
        defer { try? FileManager.default.removeItem(at: dir) }
        let timeline = switch name {
        case "effect": facts.effect
        case "freeze": facts.freeze
        default: facts.nested
        }
        let before = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        let rendered = try await Self.render(timeline.path, to: dir.appendingPathComponent("\(name).mp4").path)
        #expect(rendered.exitStatus == 65, "status \(String(describing: rendered.exitStatus)): \(rendered.stderr)")
        let lines = rendered.stderr.split(separator: "\n")
        #expect(lines.count == 1 && rendered.stderr.hasPrefix("vaf render: \(timeline.path): "), "\(rendered.stderr)")
        for words in naming { #expect(rendered.stderr.contains(words), "\(words) in \(rendered.stderr)") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == before, "no output or temporary file left")
    }
}

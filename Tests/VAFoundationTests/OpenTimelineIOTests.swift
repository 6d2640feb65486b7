import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// Issue 16 part 3: OpenTimelineIO timelines written by hand become compositions whose
/// segment tables are computed by hand, exactly; what cannot be rendered is refused in words.
@Suite(.disabled(if: which("ffmpeg") == nil, "ffmpeg is not installed (Hardware/setup.sh installs it)"))
struct OpenTimelineIOTests {
    /// A 2 s clip at `rate` (testsrc2 video, 48 kHz sine audio).
    static func clip(_ url: URL, rate: String) async throws {
        let made = try await ChildProcess.run(which("ffmpeg")!, [
            "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=\(rate):d=2", "-f", "lavfi", "-i", "sine=f=440:r=48000:d=2",
            "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", url.path], timeLimit: 120)
        try #require(made.succeeded, "ffmpeg could not make \(url.lastPathComponent): \(made.stderr)")
    }

    /// OTIO JSON snippets, as an editor writes them.
    static func time(_ value: Double, _ rate: Double) -> String {
        #"{"OTIO_SCHEMA": "RationalTime.1", "value": \#(value), "rate": \#(rate)}"#
    }
    static func range(_ start: Double, _ duration: Double, _ rate: Double) -> String {
        #"{"OTIO_SCHEMA": "TimeRange.1", "start_time": \#(time(start, rate)), "duration": \#(time(duration, rate))}"#
    }
    static func external(_ target: String) -> String {
        #"{"OTIO_SCHEMA": "ExternalReference.1", "target_url": "\#(target)", "available_range": null, "metadata": {}}"#
    }
    static func clip2(_ name: String, _ target: String, _ sourceRange: String, enabled: Bool = true) -> String {
        #"{"OTIO_SCHEMA": "Clip.2", "name": "\#(name)", "source_range": \#(sourceRange), "enabled": \#(enabled), "effects": [], "markers": [], "#
            + #""media_references": {"DEFAULT_MEDIA": \#(external(target))}, "active_media_reference_key": "DEFAULT_MEDIA"}"#
    }
    static func clip1(_ name: String, reference: String, _ sourceRange: String, enabled: Bool = true) -> String {
        #"{"OTIO_SCHEMA": "Clip.1", "name": "\#(name)", "source_range": \#(sourceRange), "enabled": \#(enabled), "media_reference": \#(reference)}"#
    }
    static func gap(_ duration: Double, _ rate: Double) -> String {
        #"{"OTIO_SCHEMA": "Gap.1", "name": "", "source_range": \#(range(0, duration, rate))}"#
    }
    static func track(_ name: String, _ kind: String, _ children: [String], enabled: Bool = true) -> String {
        #"{"OTIO_SCHEMA": "Track.1", "name": "\#(name)", "kind": "\#(kind)", "enabled": \#(enabled), "children": [\#(children.joined(separator: ", "))]}"#
    }
    static func timeline(_ tracks: [String]) -> String {
        #"{"OTIO_SCHEMA": "Timeline.1", "name": "test", "global_start_time": null, "tracks": {"OTIO_SCHEMA": "Stack.1", "name": "tracks", "children": [\#(tracks.joined(separator: ", "))]}}"#
    }

    static func write(_ text: String, to url: URL) throws {
        try Data(text.utf8).write(to: url)
    }

    static func rows(_ track: CompositionTrack) -> [SegmentRow] {
        track.segments.map { s in
            SegmentRow(file: s.isEmpty ? nil : s.sourceURL?.lastPathComponent, target: (s.targetRange.start, s.targetRange.end),
                source: s.isEmpty ? nil : (s.timeMapping.source.start, s.timeMapping.source.end))
        }
    }

    /// value/timescale.
    static func t(_ value: Int64, _ timescale: Int32) -> MediaTime { MediaTime(value: value, timescale: timescale) }

    @Test func rationalTimesBecomeExactMediaTimes() {
        #expect(OpenTimelineIO.mediaTime(value: 15, rate: 29.97) == Self.t(15 * 1001, 30000))
        #expect(OpenTimelineIO.mediaTime(value: 15, rate: 29.97) != Self.t(1500, 2997), "29.97 is read as 30000/1001")
        #expect(OpenTimelineIO.mediaTime(value: 48, rate: 23.976) == Self.t(48 * 1001, 24000))
        #expect(OpenTimelineIO.mediaTime(value: 48, rate: 24000.0 / 1001) == Self.t(48 * 1001, 24000))
        #expect(OpenTimelineIO.mediaTime(value: 86400, rate: 24) == Self.t(3600, 1))
        #expect(OpenTimelineIO.mediaTime(value: 10.5, rate: 24) == Self.t(105, 240))
        #expect(OpenTimelineIO.mediaTime(value: 25, rate: 12.5) == Self.t(2, 1), "12.5 is 12500/1000")
        #expect(OpenTimelineIO.exactRate(29.97)! == (30000, 1001))
        #expect(OpenTimelineIO.exactRate(59.94)! == (60000, 1001))
        #expect(OpenTimelineIO.exactRate(25)! == (25, 1))
        #expect(OpenTimelineIO.mediaTime(value: 1, rate: 0) == nil)
        #expect(OpenTimelineIO.mediaTime(value: .infinity, rate: 24) == nil)
    }

    /// Two clips at 24 and 29.97 (30000/1001) fps, a gap and a disabled clip on the video
    /// track, one clip on the audio track: the segment tables computed by hand, exactly.
    @Test func clipsGapsAndDisabledClipsMakeTheHandComputedSegments() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await Self.clip(dir.appendingPathComponent("a.mp4"), rate: "24")
        try await Self.clip(dir.appendingPathComponent("b.mp4"), rate: "30000/1001")
        let missing = #"{"OTIO_SCHEMA": "MissingReference.1", "name": "offline", "available_range": null}"#
        let text = Self.timeline([
            Self.track("V1", "Video", [
                Self.clip2("a", "a.mp4", Self.range(12, 24, 24)),                       // 0.5–1.5 s of a at 0–1 s
                Self.gap(12, 24),                                                        // 1–1.5 s empty
                Self.clip1("off", reference: missing, Self.range(0, 6, 24), enabled: false), // 1.5–1.75 s empty
                Self.clip1("b", reference: Self.external("file://\(dir.path)/b.mp4"), Self.range(15, 30, 29.97)),
            ]),
            Self.track("A1", "Audio", [Self.clip1("tone", reference: Self.external("./a.mp4"), Self.range(24000, 48000, 48000))]),
            Self.track("V2", "Video", [Self.clip2("hidden", "a.mp4", Self.range(0, 24, 24))], enabled: false),
        ])
        let file = dir.appendingPathComponent("edit.otio")
        try Self.write(text, to: file)
        let (composition, report) = try await OpenTimelineIO.composition(contentsOf: file)
        #expect(composition.tracks.map(\.mediaType) == [.video, .audio], "the disabled track is left out")
        let t = Self.t
        // b: 15 and 45 frames of 1001/30000 s, placed at 1.75 s for 30 frames.
        let bStart = t(15 * 1001, 30000), bEnd = t(45 * 1001, 30000)
        let expectedVideo = [
            SegmentRow(file: "a.mp4", target: (.zero, t(1, 1)), source: (t(1, 2), t(3, 2))),
            SegmentRow(file: nil, target: (t(1, 1), t(7, 4)), source: nil),
            SegmentRow(file: "b.mp4", target: (t(7, 4), t(7, 4) + t(30 * 1001, 30000)), source: (bStart, bEnd)),
        ]
        #expect(Self.rows(composition.tracks[0]) == expectedVideo)
        #expect(Self.rows(composition.tracks[1]) == [SegmentRow(file: "a.mp4", target: (.zero, t(1, 1)), source: (t(1, 2), t(3, 2)))])
        #expect(composition.duration == t(7, 4) + t(30 * 1001, 30000))
        try composition.tracks.forEach { try SegmentEditor.validate($0.segments) }

        #expect(report.tracks.map(\.name) == ["V1", "A1"])
        #expect(report.skippedTracks == ["V2"])
        #expect(report.tracks[0].clips == 2 && report.tracks[0].disabledClips == 1 && report.tracks[0].gaps == 1)
        #expect(report.clips.map(\.name) == ["a", "off", "b", "tone"])
        #expect(report.clips[1].isEnabled == false && report.clips[1].targetRange == MediaTimeRange(start: t(3, 2), end: t(7, 4)))
        #expect(report.duration == composition.duration)
        #expect(report.frameRate == 24, "the first video clip's rate")
    }

    /// Each way a clip names its file: relative to the timeline's folder, `./` and `../`
    /// relative, absolute, a `file://` URL (percent-escaped), Clip.2's keyed references.
    @Test(arguments: ["relative", "dot-relative", "parent-relative", "absolute", "file-url", "clip2-second-key"])
    func everyReferenceFormResolves(_ form: String) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let media = dir.appendingPathComponent("media"), edits = dir.appendingPathComponent("edits")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: edits, withIntermediateDirectories: true)
        let source = media.appendingPathComponent("my clip.mp4")
        try await Self.clip(source, rate: "24")
        let range = Self.range(0, 12, 24)
        let clip = switch form {
        case "relative": Self.clip2("c", "../media/my clip.mp4", range)
        case "dot-relative": Self.clip1("c", reference: Self.external("./../media/my clip.mp4"), range)
        case "parent-relative": Self.clip1("c", reference: Self.external("../edits/../media/my clip.mp4"), range)
        case "absolute": Self.clip1("c", reference: Self.external(source.path), range)
        case "file-url": Self.clip1("c", reference: Self.external("file://\(media.path)/my%20clip.mp4"), range)
        default:
            #"{"OTIO_SCHEMA": "Clip.2", "name": "c", "source_range": \#(range), "active_media_reference_key": "proxy", "#
                + #""media_references": {"DEFAULT_MEDIA": \#(Self.external("nowhere.mp4")), "proxy": \#(Self.external("../media/my clip.mp4"))}}"#
        }
        let file = edits.appendingPathComponent("\(form).otio")
        try Self.write(Self.timeline([Self.track("V", "Video", [clip])]), to: file)
        let (composition, _) = try await OpenTimelineIO.composition(contentsOf: file)
        let segment = try #require(composition.tracks.first?.segments.first)
        #expect(segment.sourceURL?.standardizedFileURL.path == source.standardizedFileURL.path)
        #expect(segment.timeMapping.source == MediaTimeRange(start: .zero, duration: Self.t(1, 2)))
    }

    /// An `available_range` starting at a timecode (01:00:00:00) moves source times to the file's.
    @Test func sourceTimesAreRelativeToTheAvailableRange() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await Self.clip(dir.appendingPathComponent("a.mp4"), rate: "24")
        let reference = #"{"OTIO_SCHEMA": "ExternalReference.1", "target_url": "a.mp4", "available_range": \#(Self.range(86400, 48, 24))}"#
        let file = dir.appendingPathComponent("tc.otio")
        try Self.write(Self.timeline([Self.track("V", "Video", [Self.clip1("tc", reference: reference, Self.range(86412, 12, 24))])]), to: file)
        let (composition, _) = try await OpenTimelineIO.composition(contentsOf: file)
        #expect(Self.rows(composition.tracks[0]) == [SegmentRow(file: "a.mp4", target: (.zero, Self.t(1, 2)), source: (Self.t(1, 2), Self.t(1, 1)))])
    }

    /// What is read but not applied is said: media shorter than the clip (the rest empty), an
    /// empty track, a clip lasting no time.
    @Test func whatIsNotAppliedIsWarnedAbout() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await Self.clip(dir.appendingPathComponent("a.mp4"), rate: "24")
        let long = Self.clip1("long", reference: Self.external("a.mp4"), Self.range(36, 24, 24))   // 1.5–2.5 s of a 2 s file
        let warped = #"{"OTIO_SCHEMA": "Clip.1", "name": "warped", "source_range": \#(Self.range(0, 12, 24)), "#
            + #""effects": [{"OTIO_SCHEMA": "LinearTimeWarp.1", "time_scalar": 2}], "media_reference": \#(Self.external("a.mp4"))}"#
        let trimmed = #"{"OTIO_SCHEMA": "Track.1", "name": "T", "kind": "Video", "source_range": \#(Self.range(0, 6, 24)), "children": [\#(warped)]}"#
        let file = dir.appendingPathComponent("warn.otio")
        let instant = Self.clip1("instant", reference: Self.external("a.mp4"), Self.range(0, 0, 24))
        try Self.write(Self.timeline([Self.track("V", "Video", [long, instant]), trimmed, Self.track("E", "Audio", [])]), to: file)
        let (composition, report) = try await OpenTimelineIO.composition(contentsOf: file)
        #expect(Self.rows(composition.tracks[0]).count == 2, "the media, then empty")
        #expect(Self.rows(composition.tracks[0]).last == SegmentRow(file: nil, target: (Self.t(1, 2), Self.t(1, 1)), source: nil))
        #expect(report.skippedTracks == ["E"])
        #expect(Self.rows(composition.tracks[1]) == [SegmentRow(file: "a.mp4", target: (.zero, Self.t(1, 4)), source: (.zero, Self.t(1, 2)))],
                "the warp plays 1 s of media over the clip's 0.5 s; the track's source_range (6 frames) keeps the first 0.25 s, 0.5 s of media")
        let expected = ["clip \"long\" (track 1 \"V\"): the source range 1.500–2.500 s runs past the media",
                        "track 3 \"E\" is empty and left out",
                        "clip \"instant\" (track 1 \"V\") lasts no time and is left out"]
        for line in expected { #expect(report.warnings.contains { $0.hasPrefix(line) }, "\(line) in \(report.warnings)") }
    }

    /// A Track's `source_range` keeps that part of its clips from zero; the Stack's keeps that
    /// part of every track, padding short ones with empty time.
    @Test func sourceRangesOnTracksAndTheStackKeepThatPart() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await Self.clip(dir.appendingPathComponent("a.mp4"), rate: "24")
        try await Self.clip(dir.appendingPathComponent("b.mp4"), rate: "24")
        // V: a 0–1 s, b 0–1 s, trimmed by the track to 0.25–2 s; A: 0.25 s of a.
        let video = #"{"OTIO_SCHEMA": "Track.1", "name": "V", "kind": "Video", "source_range": \#(Self.range(6, 42, 24)), "children": ["#
            + #"\#(Self.clip2("a", "a.mp4", Self.range(0, 24, 24))), \#(Self.clip2("b", "b.mp4", Self.range(0, 24, 24)))]}"#
        let audio = Self.track("A", "Audio", [Self.clip2("s", "a.mp4", Self.range(0, 6, 24))])
        // The Stack keeps 0.5–1.5 s of that.
        let text = #"{"OTIO_SCHEMA": "Timeline.1", "tracks": {"OTIO_SCHEMA": "Stack.1", "source_range": \#(Self.range(12, 24, 24)), "#
            + #""children": [\#(video), \#(audio)]}}"#
        let file = dir.appendingPathComponent("trim.otio")
        try Self.write(text, to: file)
        let (composition, report) = try await OpenTimelineIO.composition(contentsOf: file)
        let t = Self.t
        // Track: a 0.25–1 s at 0–0.75, b 0–1 s at 0.75–1.75; Stack 0.5–1.5 of that: a 0.75–1 at 0–0.25, b 0–0.75 at 0.25–1.
        #expect(Self.rows(composition.tracks[0]) == [SegmentRow(file: "a.mp4", target: (.zero, t(1, 4)), source: (t(3, 4), t(1, 1))),
                                                     SegmentRow(file: "b.mp4", target: (t(1, 4), t(1, 1)), source: (.zero, t(3, 4)))])
        #expect(Self.rows(composition.tracks[1]) == [SegmentRow(file: nil, target: (.zero, t(1, 1)), source: nil)], "the audio padded, then cut away")
        #expect(composition.duration == t(1, 1))
        #expect(report.tracks.map(\.duration) == [t(1, 1), t(1, 1)])
        #expect(report.clips.map(\.name) == ["a", "b"])
        #expect(report.clips.map(\.sourceRange) == [MediaTimeRange(start: t(3, 4), end: t(1, 1)), MediaTimeRange(start: .zero, end: t(3, 4))])
        #expect(report.clips.map(\.targetRange) == [MediaTimeRange(start: .zero, end: t(1, 4)), MediaTimeRange(start: t(1, 4), end: t(1, 1))])
        #expect(report.warnings.contains("1 clip falls outside a source_range and is left out"), "\(report.warnings)")
    }

    /// A dissolve: the outgoing clip plays on past the cut from its handle, the incoming one
    /// starts early on a track beneath, and the video composition ramps the top one out.
    @Test func aDissolveOverlapsTheClipsOnTwoTracks() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await Self.clip(dir.appendingPathComponent("a.mp4"), rate: "24")
        try await Self.clip(dir.appendingPathComponent("b.mp4"), rate: "24")
        // a: 0–1 s of its 2 s; a 0.25 s + 0.25 s dissolve; b: 0.5–1.5 s of its 2 s.
        let fade = #"{"OTIO_SCHEMA": "Transition.1", "name": "fade", "transition_type": "SMPTE_Dissolve", "in_offset": \#(Self.time(6, 24)), "out_offset": \#(Self.time(6, 24))}"#
        let file = dir.appendingPathComponent("fade.otio")
        try Self.write(Self.timeline([Self.track("V", "Video", [Self.clip2("a", "a.mp4", Self.range(0, 24, 24)), fade,
                                                                 Self.clip2("b", "b.mp4", Self.range(12, 24, 24))])]), to: file)
        let (composition, report) = try await OpenTimelineIO.composition(contentsOf: file)
        let t = Self.t
        #expect(report.transitions == 1)
        #expect(composition.duration == t(2, 1), "a dissolve does not change the length")
        // a's segment runs on over its handle as one segment (one decode of a), b's follows.
        #expect(Self.rows(composition.tracks[0]) == [SegmentRow(file: "a.mp4", target: (.zero, t(5, 4)), source: (.zero, t(5, 4))),
                                                     SegmentRow(file: "b.mp4", target: (t(5, 4), t(2, 1)), source: (t(3, 4), t(3, 2)))])
        #expect(Self.rows(composition.tracks[1]) == [SegmentRow(file: nil, target: (.zero, t(3, 4)), source: nil),
                                                     SegmentRow(file: "b.mp4", target: (t(3, 4), t(5, 4)), source: (t(1, 4), t(3, 4)))])
        let video = try #require(report.videoComposition)
        let top = try #require(video.instructions.first?.layerInstructions.first)
        #expect(top.trackID == composition.tracks[0].trackID)
        #expect(top.opacity(at: t(3, 4)) == 1 && top.opacity(at: t(1, 1)) == 0.5 && top.opacity(at: t(3, 2)) == 1)
        #expect(video.renderSize == Size(width: 160, height: 120))
    }

    /// README's "In Swift" lines for `vaf render`, as written there: the dissolve's timeline
    /// exports to a movie of the timeline's length and rate (ffprobe reads it back).
    @Test func theReadmeLibraryExampleRendersATimeline() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await Self.clip(dir.appendingPathComponent("a.mp4"), rate: "24")
        try await Self.clip(dir.appendingPathComponent("b.mp4"), rate: "24")
        let fade = #"{"OTIO_SCHEMA": "Transition.1", "name": "fade", "transition_type": "SMPTE_Dissolve", "in_offset": \#(Self.time(6, 24)), "out_offset": \#(Self.time(6, 24))}"#
        try Self.write(Self.timeline([Self.track("V", "Video", [Self.clip2("a", "a.mp4", Self.range(0, 24, 24)), fade,
                                                                 Self.clip2("b", "b.mp4", Self.range(12, 24, 24))])]),
                       to: dir.appendingPathComponent("edit.otio"))
        let edit = dir.appendingPathComponent("edit.otio").path, movie = dir.appendingPathComponent("edit.mp4").path

        let (composition, report) = try await OpenTimelineIO.composition(contentsOf: URL(fileURLWithPath: edit))
        let session = ExportSession(asset: composition, preset: .preset1280x720)
        session.videoComposition = report.videoComposition   // stacked tracks and dissolves; nil for one plain track
        session.audioMix = report.audioMix                   // audio crossfades
        session.frameRatePolicy = report.frameRate.map(FrameRatePolicy.constant) ?? .automatic   // the timeline's rate, as vaf render
        let result = try await session.export(to: URL(fileURLWithPath: movie), as: .mp4)

        #expect(result.videoFrames == 48, "2 s at 24 fps: \(result.videoFrames)")
        let probe = try await ChildProcess.run(which("ffprobe")!, ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=duration,avg_frame_rate",
                                                                   "-of", "csv=p=0", movie], timeLimit: 60)
        let fields = probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        #expect(fields.first == "24/1" && abs((Double(fields.last ?? "") ?? 0) - 2) <= 1.0 / 24, "\(probe.stdout)")
    }

    /// A LinearTimeWarp keeps the clip's length on the track and plays its media at the speed
    /// (OTIO's rule: 2.0 shows twice the range's media over the range's length); any other
    /// effect is an error naming it.
    @Test func linearSpeedChangesScaleTheClipAndOtherEffectsAreRefused() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await Self.clip(dir.appendingPathComponent("a.mp4"), rate: "24")
        let warp = #"{"OTIO_SCHEMA": "LinearTimeWarp.1", "name": "fast", "effect_name": "LinearTimeWarp", "time_scalar": 2.0}"#
        let fast = Self.clip2("a", "a.mp4", Self.range(0, 24, 24)).replacingOccurrences(of: #""effects": []"#, with: #""effects": [\#(warp)]"#)
        let file = dir.appendingPathComponent("speed.otio")
        try Self.write(Self.timeline([Self.track("V", "Video", [fast, Self.clip2("b", "a.mp4", Self.range(24, 12, 24))])]), to: file)
        let (composition, report) = try await OpenTimelineIO.composition(contentsOf: file)
        let t = Self.t
        #expect(Self.rows(composition.tracks[0]) == [SegmentRow(file: "a.mp4", target: (.zero, t(1, 1)), source: (.zero, t(2, 1))),
                                                     SegmentRow(file: "a.mp4", target: (t(1, 1), t(3, 2)), source: (t(1, 1), t(3, 2)))])
        #expect(report.clips.map(\.targetRange.duration) == [t(1, 1), t(1, 2)])
        #expect(report.clips.first?.sourceRange == MediaTimeRange(start: .zero, duration: t(2, 1)), "the media the warp plays")
        let blur = #"{"OTIO_SCHEMA": "Effect.1", "name": "b", "effect_name": "GaussianBlur"}"#
        let blurred = Self.clip2("a", "a.mp4", Self.range(0, 24, 24)).replacingOccurrences(of: #""effects": []"#, with: #""effects": [\#(blur)]"#)
        try Self.write(Self.timeline([Self.track("V", "Video", [blurred])]), to: file)
        let error = await #expect(throws: MediaError.self) { try await OpenTimelineIO.composition(contentsOf: file) }
        #expect(error?.message.contains("effect \"Effect.1\" (GaussianBlur) is not supported") == true, "\(String(describing: error))")
    }

    enum Broken: String, CaseIterable, Sendable {
        case missingFile, missingReference, transition, unknownSchema, unknownReference, malformedJSON, nestedStack, dataTrack, notATimeline
    }

    /// Each timeline that cannot be rendered fails with one line naming the timeline file, the
    /// clip (where there is one) and the cause.
    @Test(arguments: Broken.allCases)
    func brokenTimelinesFailWithTheCauseInOneLine(_ broken: Broken) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await Self.clip(dir.appendingPathComponent("a.mp4"), rate: "24")
        let good = Self.clip2("good", "a.mp4", Self.range(0, 12, 24))
        let (text, cause): (String, String) = switch broken {
        case .missingFile: (Self.timeline([Self.track("V", "Video", [good, Self.clip2("lost", "lost.mp4", Self.range(0, 12, 24))])]),
                            "clip \"lost\" (track 1 \"V\"): the media file \(dir.path)/lost.mp4 does not exist")
        case .missingReference:
            (Self.timeline([Self.track("V", "Video", [Self.clip1("gone", reference: #"{"OTIO_SCHEMA": "MissingReference.1"}"#, Self.range(0, 12, 24))])]),
             "clip \"gone\" (track 1 \"V\"): the media is a MissingReference")
        case .transition:
            (Self.timeline([Self.track("V", "Video", [#"{"OTIO_SCHEMA": "Transition.1", "name": "fade", "transition_type": "SMPTE_Dissolve", "in_offset": \#(Self.time(6, 24)), "out_offset": \#(Self.time(6, 24))}"#, good])]),
             "track 1 \"V\": transition \"fade\" must stand between two clips")
        case .unknownSchema: (Self.timeline([Self.track("V", "Video", [good, #"{"OTIO_SCHEMA": "Wipe.3", "name": "w"}"#])]), "item 2 \"w\": unknown schema \"Wipe.3\"")
        case .unknownReference:
            (Self.timeline([Self.track("V", "Video", [Self.clip1("gen", reference: #"{"OTIO_SCHEMA": "GeneratorReference.1", "generator_kind": "SMPTEBars"}"#, Self.range(0, 12, 24))])]),
             "clip \"gen\" (track 1 \"V\", item 1 \"gen\"): media reference \"GeneratorReference.1\" is not supported")
        case .malformedJSON: (String(Self.timeline([Self.track("V", "Video", [good])]).dropLast(3)), "not valid OpenTimelineIO JSON")
        case .nestedStack:
            (Self.timeline([Self.track("V", "Video", [good, #"{"OTIO_SCHEMA": "Stack.1", "name": "nest", "children": []}"#])]),
             "item 2 \"nest\": a nested Stack inside a track is not supported")
        case .dataTrack: (Self.timeline([Self.track("D", "Data", [good])]), "track 1 \"D\": track kind \"Data\" is not supported")
        case .notATimeline: (Self.clip2("lonely", "a.mp4", Self.range(0, 12, 24)), "the top-level object is \"Clip.2\", not a Timeline")
        }
        let file = dir.appendingPathComponent("\(broken.rawValue).otio")
        try Self.write(text, to: file)
        let error = await #expect(throws: MediaError.self) { try await OpenTimelineIO.composition(contentsOf: file) }
        let message = try #require(error).description
        #expect(message.hasPrefix("\(file.path): "), "names the timeline: \(message)")
        #expect(message.contains(cause), "\(message)")
        #expect(!message.contains("\n"), "one line: \(message)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["\(broken.rawValue).otio", "a.mp4"].sorted(),
                "nothing written beside the timeline")
    }
}

/// A segment as (file name, target start, target end, source start, source end); empty ones have no file or source.
struct SegmentRow: Equatable, CustomStringConvertible {
    var file: String?
    var target: (MediaTime, MediaTime)
    var source: (MediaTime, MediaTime)?

    static func == (a: SegmentRow, b: SegmentRow) -> Bool {
        a.file == b.file && a.target.0 == b.target.0 && a.target.1 == b.target.1
            && a.source?.0 == b.source?.0 && a.source?.1 == b.source?.1
    }

    var description: String {
        "\(file ?? "empty") \(target.0)–\(target.1)" + (source.map { " from \($0.0)–\($0.1)" } ?? "")
    }
}

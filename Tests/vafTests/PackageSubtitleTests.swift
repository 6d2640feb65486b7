import Foundation
import Testing
import VATestSupport

/// `vaf package` with text subtitles: each text track becomes a WebVTT rendition, checked
/// against ffmpeg's own conversion of the track, the HLS rules for WebVTT segments (RFC 8216
/// 3.5) and independent clients; a bitmap track is left out with a warning.
@Suite struct PackageSubtitleTests {
    /// 10 s of 320x180 video with sound, an English SubRip track (marked default; a cue of no
    /// duration, and a cue crossing the 8 s segment boundary), a French ASS track (marked default too) and a PGS track, in Matroska.
    static func source(in dir: URL) throws -> URL {
        let english = dir.appendingPathComponent("eng.srt"), french = dir.appendingPathComponent("fra.srt")
        let pgs = dir.appendingPathComponent("cues.sup"), source = dir.appendingPathComponent("subtitled.mkv")
        try """
        1
        00:00:01,000 --> 00:00:02,500
        Hello <i>world</i>

        2
        00:00:03,000 --> 00:00:03,000
        Never shown

        3
        00:00:05,500 --> 00:00:06,200
        Two lines,
        the second

        4
        00:00:07,500 --> 00:00:08,500
        Across the boundary
        """.write(to: english, atomically: true, encoding: .utf8)
        try "1\n00:00:00,500 --> 00:00:03,000\nBonjour\n\n2\n00:00:09,000 --> 00:00:09,500\nSalut\n".write(to: french, atomically: true, encoding: .utf8)
        try PGSStream.data([PGSStream.Cue(start: 0, end: 2, x: 10, y: 10, width: 20, height: 10, colour: (235, 128, 128, 255))],
                           width: 320, height: 180).write(to: pgs)
        let made = try Vaf.run(executable: PackageCommandTests.ffmpeg, [
            "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=10", "-f", "lavfi", "-i", "sine=duration=10",
            "-i", english.path, "-i", french.path, "-i", pgs.path, "-map", "0", "-map", "1", "-map", "2", "-map", "3", "-map", "4",
            "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-c:s:0", "srt", "-c:s:1", "ass", "-c:s:2", "copy",
            "-metadata:s:s:0", "language=eng", "-metadata:s:s:1", "language=fra", "-disposition:s:0", "default", "-disposition:s:1", "default", source.path,
        ])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        return source
    }

    /// ffmpeg's WebVTT of `input` (`map` picks a stream): its cues, as ffmpeg writes them.
    static func webVTT(_ input: String, map: String? = nil) throws -> String {
        let run = try Vaf.run(executable: PackageCommandTests.ffmpeg, ["-v", "error", "-i", input] + (map.map { ["-map", $0] } ?? []) + ["-f", "webvtt", "-"])
        #expect(run.status == 0, "ffmpeg on \(input): \(run.stderr)")
        return run.stdout
    }

    /// The cues of a WebVTT document as ffmpeg writes it: (start, end) in seconds and text.
    static func cues(_ document: String) -> [(start: Double, end: Double, text: String)] {
        func seconds(_ stamp: Substring) -> Double {
            stamp.split(separator: ":").reduce(0) { $0 * 60 + (Double($1) ?? .nan) }
        }
        return document.components(separatedBy: "\n\n").compactMap { block in
            let lines = block.split(separator: "\n", omittingEmptySubsequences: true)
            guard let timing = lines.firstIndex(where: { $0.contains(" --> ") }) else { return nil }
            let ends = lines[timing].components(separatedBy: " --> ")
            return (seconds(Substring(ends[0])), seconds(Substring(ends[1].split(separator: " ")[0])), lines[(timing + 1)...].joined(separator: "\n"))
        }
    }

    @Test(.disabled(if: !FileManager.default.fileExists(atPath: PackageCommandTests.ffmpeg), "ffmpeg is not installed (Hardware/setup.sh installs it)"))
    func textSubtitlesBecomeWebVTTRenditions() throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try Vaf.run(["package", source.path, "--output-dir", out.path, "--segment-duration", "4", "--json", "--quiet"])
        try #require(run.status == 0, "vaf package: \(run.stderr)")
        let report = try #require(try Vaf.jsonLines(run.stdout).first)
        let renditions = try #require(report["renditions"] as? [[String: Any]])
        let subtitles = renditions.filter { $0["mediaType"] as? String == "subtitle" }
        #expect(subtitles.map { $0["folder"] as? String } == ["subtitles-eng", "subtitles-fra"], "\(renditions)")
        #expect(subtitles.map { $0["language"] as? String } == ["eng", "fra"] && subtitles.allSatisfy { $0["codecs"] as? String == "wvtt" })
        let warnings = report["warnings"] as? [String] ?? []
        #expect(warnings.contains { $0.hasPrefix("subtitle track 5 (hdmv_pgs_subtitle) is left out of the package: bitmap subtitles cannot be WebVTT") },
                "\(warnings)")
        let package = out.appendingPathComponent("subtitled")

        // HLS: a SUBTITLES group the variants name; of the two tracks marked default, the first alone is.
        let master = try String(contentsOf: package.appendingPathComponent("master.m3u8"), encoding: .utf8)
        let media = master.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-MEDIA:TYPE=SUBTITLES") }
        #expect(media == [
            "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subtitles\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,AUTOSELECT=YES,FORCED=NO,URI=\"subtitles-eng/index.m3u8\"",
            "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subtitles\",NAME=\"French\",LANGUAGE=\"fr\",DEFAULT=NO,AUTOSELECT=YES,FORCED=NO,URI=\"subtitles-fra/index.m3u8\"",
        ], "\(master)")
        let variants = master.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }
        #expect(!variants.isEmpty && variants.allSatisfy { $0.hasSuffix(",SUBTITLES=\"subtitles\"") }, "\(variants)")

        for (folder, stream) in [("subtitles-eng", "0:s:0"), ("subtitles-fra", "0:s:1")] {
            let rendition = package.appendingPathComponent(folder)
            // The whole file: ffmpeg's own conversion of the track, cue for cue.
            // A cue of no duration never shows: ffmpeg writes it ending where it starts, we leave it out.
            let whole = try Self.webVTT(rendition.appendingPathComponent("subtitles.vtt").path)
            let expected = try Self.webVTT(source.path, map: stream)
            let shown = Self.cues(expected).filter { $0.end > $0.start }.map { "\($0.start) \($0.end) \($0.text)" }
            #expect(!shown.isEmpty && Self.cues(whole).map { "\($0.start) \($0.end) \($0.text)" } == shown,
                    "\(folder): ours\n\(whole)\nffmpeg's\n\(expected)")
            if folder == "subtitles-eng" {
                #expect(Self.cues(expected).contains { $0.text == "Never shown" && $0.end == $0.start }, "ffmpeg's\n\(expected)")
            }
            // The segments: on the video's grid, each holding every cue that shows during it.
            let playlist = try String(contentsOf: rendition.appendingPathComponent("index.m3u8"), encoding: .utf8)
            let video = try String(contentsOf: package.appendingPathComponent("180p/index.m3u8"), encoding: .utf8)
            let durations = { (text: String) in text.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.map { Double($0.dropFirst(8).dropLast()) ?? -1 } }
            #expect(durations(playlist) == durations(video) && durations(playlist).count == 3, "\(playlist)")
            #expect(!playlist.contains("#EXT-X-MAP"), "WebVTT segments need no initialization segment")
            var start = 0.0
            var seen: [String] = []
            for (i, duration) in durations(playlist).enumerated() {
                let file = rendition.appendingPathComponent(String(format: "segment-%05d.vtt", i + 1))
                let text = try String(contentsOf: file, encoding: .utf8)
                #expect(text.hasPrefix("WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n"), "\(file.lastPathComponent): \(text)")
                let inSegment = Self.cues(try Self.webVTT(file.path))
                let overlapping = Self.cues(whole).filter { $0.start < start + duration && $0.end > start }
                #expect(inSegment.map(\.text) == overlapping.map(\.text) && inSegment.map(\.start) == overlapping.map(\.start),
                        "\(folder)/\(file.lastPathComponent) [\(start), \(start + duration)): \(inSegment) against \(overlapping)")
                seen += inSegment.map(\.text)
                start += duration
            }
            if folder == "subtitles-eng" {
                #expect(seen.filter { $0 == "Across the boundary" }.count == 2, "the cue crossing 8 s is in both segments: \(seen)")
            }
        }

        // DASH: one text/vtt adaptation set per track, which ffmpeg reads once allowed to open .vtt files.
        let probe = try Vaf.run(executable: PackageCommandTests.ffprobe, [
            "-v", "error", "-allowed_extensions", "ALL", "-show_entries", "stream=codec_name:stream_tags=language", "-of", "csv=p=0",
            package.appendingPathComponent("manifest.mpd").path,
        ])
        let streams = Set(probe.stdout.split(separator: "\n").map(String.init))
        #expect(probe.status == 0 && streams.contains("webvtt,en") && streams.contains("webvtt,fr"), "ffprobe: \(probe.stdout) \(probe.stderr)")
        if FileManager.default.fileExists(atPath: PackageCommandTests.gstLaunch) {
            let uri = package.appendingPathComponent("master.m3u8").absoluteString
            let play = try Vaf.run(executable: PackageCommandTests.gstLaunch, ["-q", "playbin", "uri=\(uri)", "video-sink=fakesink", "audio-sink=fakesink"])
            #expect(play.status == 0 && !play.stdout.contains("ERROR") && !play.stderr.contains("ERROR"), "GStreamer: \(play.stdout) \(play.stderr)")
        }
    }

    /// A dry run lists the renditions the package will have, subtitles and sound included, and
    /// says which subtitle track is left out, writing nothing.
    @Test(.disabled(if: !FileManager.default.fileExists(atPath: PackageCommandTests.ffmpeg), "ffmpeg is not installed (Hardware/setup.sh installs it)"))
    func aDryRunListsTheSubtitleAndAudioRenditions() throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try Vaf.run(["package", source.path, "--output-dir", out.path, "--dry-run", "--json"])
        try #require(run.status == 0, "vaf package --dry-run: \(run.stderr)")
        let report = try #require(try Vaf.jsonLines(run.stdout).first)
        #expect(try JSONLinesTests.schema("vaf-package.schema.json").violations(of: report).isEmpty)
        let renditions = report["renditions"] as? [[String: Any]] ?? []
        let listed = renditions.map { "\($0["mediaType"] ?? "")/\($0["folder"] ?? "")/\($0["language"] as? String ?? "-")" }
        #expect(listed == ["video/180p/-", "audio/audio/-", "subtitle/subtitles-eng/eng", "subtitle/subtitles-fra/fra"], "\(listed)")
        let warnings = report["warnings"] as? [String] ?? []
        #expect(warnings.contains { $0.hasPrefix("subtitle track 5 (hdmv_pgs_subtitle) is left out") }, "\(warnings)")
        let human = try Vaf.run(["package", source.path, "--output-dir", out.path, "--dry-run"])
        #expect(human.stdout.contains("320x180@") && human.stdout.contains("audio aac@") && human.stdout.contains("subtitles-eng webvtt"), "\(human.stdout)")
        #expect(!FileManager.default.fileExists(atPath: out.path), "a dry run writes nothing")
    }

    @Test(.disabled(if: !FileManager.default.fileExists(atPath: PackageCommandTests.ffmpeg), "ffmpeg is not installed (Hardware/setup.sh installs it)"))
    func subtitlesChoosesTheRenditions() throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        for (choice, folders) in [("fra", ["subtitles"]), ("none", [])] {
            let out = dir.appendingPathComponent("out-\(choice)")
            let run = try Vaf.run(["package", source.path, "--output-dir", out.path, "--format", "hls", "--subtitles", choice, "--quiet"])
            try #require(run.status == 0, "vaf package --subtitles \(choice): \(run.stderr)")
            let package = out.appendingPathComponent("subtitled")
            let made = try FileManager.default.contentsOfDirectory(atPath: package.path).filter { $0.hasPrefix("subtitles") }
            #expect(made == folders, "--subtitles \(choice): \(made)")
            let master = try String(contentsOf: package.appendingPathComponent("master.m3u8"), encoding: .utf8)
            #expect(master.contains("LANGUAGE=\"fr\",DEFAULT=YES") == (choice == "fra") && master.contains("SUBTITLES=\"subtitles\"") == (choice == "fra"),
                    "\(master)")
        }
        let bad = try Vaf.run(["package", source.path, "--output-dir", dir.appendingPathComponent("bad").path, "--subtitles", "eng,"])
        #expect(bad.status != 0 && bad.stderr.contains("Bad --subtitles"), "\(bad.stderr)")
    }

    /// Subtitles alone make no package, whatever ladder is given: the error says why.
    @Test(.disabled(if: !FileManager.default.fileExists(atPath: PackageCommandTests.ffmpeg), "ffmpeg is not installed (Hardware/setup.sh installs it)"))
    func subtitlesAloneAreNothingToPackage() throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cues = dir.appendingPathComponent("cues.srt"), source = dir.appendingPathComponent("cues.mkv")
        try "1\n00:00:01,000 --> 00:00:02,000\nAlone\n".write(to: cues, atomically: true, encoding: .utf8)
        try #require(try Vaf.run(executable: PackageCommandTests.ffmpeg, ["-v", "error", "-i", cues.path, source.path]).status == 0)
        let out = dir.appendingPathComponent("out")
        let run = try Vaf.run(["package", source.path, "--output-dir", out.path, "--ladder", "640x360@1M", "--json"])
        #expect(run.status == 65, "\(run.status): \(run.stderr)")
        let report = try #require(try Vaf.jsonLines(run.stdout).first)
        #expect(report["status"] as? String == "failed")
        #expect((report["error"] as? String)?.contains("nothing to package: the source has no video or audio with samples") == true, "\(report)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("cues").path))
    }

    /// Placed cues keep their place: an ASS track's styles, `\an` and `\pos` overrides, and a
    /// SubRip cue's `{\an8}`, become WebVTT cue settings (FFmpeg's WebVTT encoder drops them,
    /// so a sign at the top of the picture would fall to the bottom).
    @Test(.disabled(if: !FileManager.default.fileExists(atPath: PackageCommandTests.ffmpeg), "ffmpeg is not installed (Hardware/setup.sh installs it)"))
    func placedCuesKeepTheirPlace() throws {
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ass = dir.appendingPathComponent("signs.ass"), srt = dir.appendingPathComponent("top.srt")
        try """
        [Script Info]
        ScriptType: v4.00+
        PlayResX: 640
        PlayResY: 360

        [V4+ Styles]
        Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding
        Style: Default,Arial,20,&H00FFFFFF,&H000000FF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,1,0,2,10,10,10,1
        Style: Sign,Arial,20,&H00FFFFFF,&H000000FF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,1,0,8,10,10,10,1

        [Events]
        Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
        Dialogue: 0,0:00:00.50,0:00:01.50,Default,,0,0,0,,At the bottom
        Dialogue: 0,0:00:02.00,0:00:03.00,Sign,,0,0,0,,A sign at the top
        Dialogue: 0,0:00:03.50,0:00:04.50,Default,,0,0,0,,{\\an7}Top left
        Dialogue: 0,0:00:05.00,0:00:06.00,Default,,0,0,0,,{\\pos(320,90)}Placed
        Dialogue: 0,0:00:06.50,0:00:07.50,Default,,0,0,0,,{\\an4\\b1}Middle left
        """.write(to: ass, atomically: true, encoding: .utf8)
        try "1\n00:00:01,000 --> 00:00:02,000\n{\\an8}SubRip at the top\n\n2\n00:00:03,000 --> 00:00:04,000\nSubRip below\n"
            .write(to: srt, atomically: true, encoding: .utf8)
        let source = dir.appendingPathComponent("signs.mkv")
        let made = try Vaf.run(executable: PackageCommandTests.ffmpeg, [
            "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=8", "-f", "lavfi", "-i", "sine=duration=8",
            "-i", ass.path, "-i", srt.path, "-map", "0", "-map", "1", "-map", "2", "-map", "3",
            "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-c:s:0", "copy", "-c:s:1", "srt",
            "-metadata:s:s:0", "language=eng", "-metadata:s:s:1", "language=fra", source.path,
        ])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        let out = dir.appendingPathComponent("out")
        let run = try Vaf.run(["package", source.path, "--output-dir", out.path, "--segment-duration", "4", "--quiet"])
        try #require(run.status == 0, "vaf package: \(run.stderr)")
        /// Each cue's text and the settings on its timing line.
        func placed(_ folder: String) throws -> [String: String] {
            let url = out.appendingPathComponent("signs").appendingPathComponent(folder).appendingPathComponent("subtitles.vtt")
            let document = try String(contentsOf: url, encoding: .utf8)
            #expect(Self.cues(try Self.webVTT(url.path)).count == Self.cues(document).count, "ffmpeg reads every cue of \(folder)")
            var settings: [String: String] = [:]
            for block in document.components(separatedBy: "\n\n") {
                let lines = block.split(separator: "\n")
                guard let timing = lines.firstIndex(where: { $0.contains(" --> ") }), timing + 1 < lines.count else { continue }
                settings[String(lines[timing + 1])] = lines[timing].split(separator: " ", maxSplits: 3).dropFirst(3).first.map(String.init) ?? ""
            }
            return settings
        }
        #expect(try placed("subtitles-eng") == [
            "At the bottom": "",
            "A sign at the top": "line:0",
            "Top left": "line:0 align:left",
            "Placed": "line:25%,end position:50%,center align:center",
            "<b>Middle left</b>": "line:50%,center align:left",
        ])
        #expect(try placed("subtitles-fra") == ["SubRip at the top": "line:0", "SubRip below": ""])
    }
}

import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// Every track a user keeps: subtitles copied or converted between text formats, audio tracks
/// selected by language, each with its language, title and default flag. ffmpeg makes the
/// source and is the oracle: its `-map 0 -c copy` and its mov_text conversion, read by ffprobe.
@Suite(.serialized) struct SubtitleAndAudioTrackTests {
    /// The cues of both subtitle tracks, at these times in the source.
    static let englishCues = [(0.5, 1.5, "Hello world"), (2.0, 3.0, "Second cue")]
    static let frenchCues = [(0.5, 1.5, "Bonjour"), (2.0, 3.0, "Deuxième")]

    /// A 3 s 320x240 H.264 Matroska file with two AAC tracks (English 440 Hz mono "Main", French
    /// 660 Hz stereo "Doublage", not default), an English SubRip and a French ASS track, and chapters.
    static func source(in dir: URL) throws -> URL {
        func srt(_ cues: [(Double, Double, String)]) -> String {
            func stamp(_ t: Double) -> String { String(format: "00:00:%02d,%03d", Int(t), Int((t * 1000).rounded()) % 1000) }
            return cues.enumerated().map { "\($0.offset + 1)\n\(stamp($0.element.0)) --> \(stamp($0.element.1))\n\($0.element.2)\n" }.joined(separator: "\n")
        }
        let english = dir.appendingPathComponent("en.srt"), french = dir.appendingPathComponent("fr.srt")
        try srt(englishCues).write(to: english, atomically: true, encoding: .utf8)
        try srt(frenchCues).write(to: french, atomically: true, encoding: .utf8)
        let chapters = dir.appendingPathComponent("chapters.txt")
        try ";FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1500\ntitle=One\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=1500\nEND=3000\ntitle=Two\n"
            .write(to: chapters, atomically: true, encoding: .utf8)
        let url = dir.appendingPathComponent("source.mkv")
        let ffmpeg = try #require(which("ffmpeg"), "ffmpeg makes the source (Hardware/setup.sh installs it)")
        let made = try run(ffmpeg, [
            "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=3",
            "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:duration=3", "-f", "lavfi", "-i", "sine=f=660:sample_rate=48000:duration=3,aformat=channel_layouts=stereo",
            "-i", english.path, "-i", french.path, "-i", chapters.path,
            "-map", "0", "-map", "1", "-map", "2", "-map", "3", "-map", "4", "-map_chapters", "5",
            "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac", "-c:s:0", "copy", "-c:s:1", "ass",
            "-metadata:s:a:0", "language=eng", "-metadata:s:a:0", "title=Main",
            "-metadata:s:a:1", "language=fre", "-metadata:s:a:1", "title=Doublage",
            "-metadata:s:s:0", "language=eng", "-metadata:s:s:1", "language=fre",
            "-disposition:a:0", "default", "-disposition:a:1", "0", "-disposition:s:0", "default", "-disposition:s:1", "0",
            url.path,
        ])
        try #require(made.status == 0)
        return url
    }

    /// One stream as ffprobe reads it.
    struct Stream: Equatable, CustomStringConvertible {
        var type: String, codec: String, language: String?, title: String?, isDefault: Bool
        var description: String { "\(type)/\(codec)/\(language ?? "-")/\(title ?? "-")\(isDefault ? "/default" : "")" }
    }

    /// The audio and subtitle streams of `url` (the video's and a QuickTime chapter track's
    /// tags differ between containers for reasons of their own).
    static func streams(_ url: URL) throws -> [Stream] {
        let probe = try #require(which("ffprobe"))
        let result = try run(probe, ["-v", "error", "-show_streams", "-of", "json", url.path])
        let json = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        return (json["streams"] as? [[String: Any]] ?? []).compactMap { s in
            let type = s["codec_type"] as? String ?? ""
            guard type == "audio" || type == "subtitle" else { return nil }
            let tags = s["tags"] as? [String: String] ?? [:]
            let disposition = s["disposition"] as? [String: Int] ?? [:]
            // MP4 keeps a track's title as its handler name.
            return Stream(type: type, codec: s["codec_name"] as? String ?? "", language: tags["language"], title: tags["title"] ?? tags["handler_name"],
                          isDefault: disposition["default"] == 1)
        }
    }

    /// The cues of subtitle stream `index` (among the subtitle streams) as ffmpeg writes them in SubRip.
    static func cues(_ url: URL, subtitle index: Int) throws -> String {
        let ffmpeg = try #require(which("ffmpeg"))
        let result = try run(ffmpeg, ["-v", "error", "-i", url.path, "-map", "0:s:\(index)", "-f", "srt", "-"])
        try #require(result.status == 0, "ffmpeg reads subtitle \(index) of \(url.lastPathComponent)")
        return String(decoding: result.stdout, as: UTF8.self)
    }

    /// Which of 440 and 660 Hz audio stream `index` of `url` plays: the one whose power
    /// (Goertzel, over its first second) is more than ten times the other's; nil when neither is.
    static func tone(_ url: URL, audio index: Int) throws -> Int? {
        let ffmpeg = try #require(which("ffmpeg"))
        let result = try run(ffmpeg, ["-v", "error", "-i", url.path, "-map", "0:a:\(index)", "-t", "1", "-ac", "1", "-ar", "48000", "-f", "f32le", "-"])
        let samples = result.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        try #require(samples.count > 40_000, "a second of audio stream \(index)")
        func power(_ frequency: Double) -> Double {
            let coefficient = 2 * cos(2 * Double.pi * frequency / 48000)
            var (previous, beforePrevious) = (0.0, 0.0)
            for sample in samples {
                (previous, beforePrevious) = (Double(sample) + coefficient * previous - beforePrevious, previous)
            }
            return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
        }
        let (low, high) = (power(440), power(660))
        return low > 10 * high ? 440 : high > 10 * low ? 660 : nil
    }

    /// Each cue's start and duration in seconds, its start counted from the first video packet's.
    static func cueTimes(_ url: URL, subtitle index: Int) throws -> [(start: Double, duration: Double)] {
        let probe = try #require(which("ffprobe"))
        func rows(_ stream: String) throws -> [[Double]] {
            let result = try run(probe, ["-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time,duration_time", "-of", "csv=p=0", url.path])
            return String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map { $0.split(separator: ",").compactMap { Double($0) } }
        }
        let origin = try #require(try rows("v:0").first?.first)
        return try rows("s:\(index)").filter { $0.count == 2 }.map { ($0[0] - origin, $0[1]) }
    }

    static func export(_ source: URL, preset: ExportPreset, to fileType: FileType, in dir: URL,
                       configure: (ExportSession) -> Void = { _ in }) async throws -> (URL, ExportResult) {
        let output = dir.appendingPathComponent("\(preset.name)-\(UUID().uuidString.prefix(6)).\(fileType.fileExtension)")
        let session = ExportSession(asset: Asset(url: source), preset: preset)
        configure(session)
        let result = try await session.export(to: output, as: fileType)
        return (output, result)
    }

    @Test func passthroughToMatroskaKeepsEveryTrackAsFFmpegCopies() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let (output, result) = try await Self.export(source, preset: .passthrough, to: .mkv, in: dir)
        #expect(result.droppedTracks.isEmpty, "\(result.droppedTracks)")
        let reference = dir.appendingPathComponent("ffmpeg.mkv")
        try #require(try run(try #require(which("ffmpeg")), ["-v", "error", "-i", source.path, "-map", "0", "-c", "copy", reference.path]).status == 0)
        let written = try Self.streams(output)
        let ffmpegs = try Self.streams(reference)
        #expect(written == ffmpegs, "ours \(written), ffmpeg's \(ffmpegs)")
        #expect(written.map(\.codec) == ["aac", "aac", "subrip", "ass"])
        #expect(written.map(\.language) == ["eng", "fre", "eng", "fre"])
        #expect(written.map(\.title) == ["Main", "Doublage", nil, nil])
        #expect(written.map(\.isDefault) == [true, false, true, false])
        for index in 0..<2 {
            let ours = try Self.cues(output, subtitle: index), theirs = try Self.cues(reference, subtitle: index)
            #expect(ours == theirs, "subtitle \(index)")
        }
        // ffmpeg put the cues 21 ms late in the source (the AAC priming it shifted every stream by); they stay there.
        let sourceCues = try Self.cues(source, subtitle: 0)
        #expect(sourceCues.contains("Hello world"))
        #expect(try Self.cues(output, subtitle: 0) == sourceCues)
        ChapterTests.expectSame(try ChapterTests.probedChapters(output), [("One", 0, 1.5), ("Two", 1.5, 3)], "chapters")
    }

    @Test(arguments: [ExportPreset.passthrough, .preset640x480])
    func toMP4TheTextTracksBecomeMovTextAsFFmpegConvertsThem(preset: ExportPreset) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let (output, result) = try await Self.export(source, preset: preset, to: .mp4, in: dir)
        #expect(!result.droppedTracks.contains { $0.mediaType == "subtitle" }, "\(result.droppedTracks)")
        let reference = dir.appendingPathComponent("ffmpeg.mp4")
        try #require(try run(try #require(which("ffmpeg")), ["-v", "error", "-i", source.path, "-map", "0", "-c", "copy", "-c:s", "mov_text", reference.path]).status == 0)
        let subtitles = try Self.streams(output).filter { $0.type == "subtitle" }
        #expect(subtitles.map(\.codec) == ["mov_text", "mov_text"])
        #expect(subtitles.map(\.language) == ["eng", "fra"], "MP4 stores ISO 639-2/T")
        #expect(subtitles.map(\.isDefault) == [true, false])
        for index in 0..<2 {
            let ours = try Self.cues(output, subtitle: index), ffmpegs = try Self.cues(reference, subtitle: index)
            #expect(ours == ffmpegs, "subtitle \(index): ours\n\(ours)\nffmpeg's\n\(ffmpegs)")
        }
        #expect(try Self.cues(output, subtitle: 1).contains("Deuxième"))
        let sourceCues = try Self.cues(source, subtitle: 0)
        #expect(sourceCues.contains("Second cue"))
        #expect(try Self.cues(output, subtitle: 0) == sourceCues)
    }

    @Test func toWebMTheTextTracksBecomeWebVTT() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let (output, _) = try await Self.export(source, preset: .preset640x480, to: .webm, in: dir)
        #expect(try Self.streams(output).filter { $0.type == "subtitle" }.map(\.codec) == ["webvtt", "webvtt"])
        #expect(try Self.cues(output, subtitle: 0).contains("Hello world"))
        // Opus's priming moves every stream of the file; the cues keep their place against the video.
        let (written, original) = (try Self.cueTimes(output, subtitle: 1), try Self.cueTimes(source, subtitle: 1))
        #expect(written.count == 2 && original.count == 2)
        for (w, o) in zip(written, original) {
            #expect(abs(w.start - o.start) < 0.002 && abs(w.duration - o.duration) < 0.002, "\(written) against the source's \(original)")
        }
    }

    @Test func anAudioSelectionKeepsTheTracksItNamesEachAsItsOwn() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        // By default an encoding preset keeps the default (English) track.
        let (plain, _) = try await Self.export(source, preset: .preset640x480, to: .mp4, in: dir)
        #expect(try Self.streams(plain).filter { $0.type == "audio" }.map(\.language) == ["eng"])
        #expect(try Self.tone(plain, audio: 0) == 440)

        let (french, result) = try await Self.export(source, preset: .preset640x480, to: .mp4, in: dir) { $0.audioSelection = .languages(["fr"]) }
        #expect(try Self.streams(french).filter { $0.type == "audio" }.map(\.language) == ["fra"])
        #expect(try Self.streams(french).filter { $0.type == "audio" }.map(\.title) == ["Doublage"])
        #expect(try Self.tone(french, audio: 0) == 660, "the French track is the 660 Hz one")
        #expect(result.audioSettings?.channelCount == 2, "encoded as the French track is, in stereo: \(String(describing: result.audioSettings))")
        #expect(result.droppedTracks.contains { $0.trackID == 2 && $0.reason.contains("not selected") }, "\(result.droppedTracks)")

        let (both, _) = try await Self.export(source, preset: .preset640x480, to: .mkv, in: dir) { $0.audioSelection = .all }
        let audio = try Self.streams(both).filter { $0.type == "audio" }
        #expect(audio.map(\.language) == ["eng", "fre"])
        #expect(audio.map(\.title) == ["Main", "Doublage"])
        #expect(audio.map(\.isDefault) == [true, false])
        #expect(try Self.tone(both, audio: 0) == 440)
        #expect(try Self.tone(both, audio: 1) == 660)

        // Passthrough keeps every track unless told otherwise.
        let (copied, _) = try await Self.export(source, preset: .passthrough, to: .mkv, in: dir) { $0.audioSelection = .trackIDs([3]) }
        #expect(try Self.streams(copied).filter { $0.type == "audio" }.map(\.title) == ["Doublage"])
    }

    @Test func aSubtitleSelectionKeepsTheTracksItNames() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let (none, result) = try await Self.export(source, preset: .passthrough, to: .mkv, in: dir) { $0.subtitleSelection = .none }
        #expect(try Self.streams(none).filter { $0.type == "subtitle" }.isEmpty)
        #expect(result.droppedTracks.filter { $0.mediaType == "subtitle" }.count == 2)
        let (french, _) = try await Self.export(source, preset: .preset640x480, to: .mkv, in: dir) { $0.subtitleSelection = .languages(["fra"]) }
        let kept = try Self.streams(french).filter { $0.type == "subtitle" }
        #expect(kept.map(\.codec) == ["ass"] && kept.map(\.language) == ["fre"])
    }

    @Test func aTrimShowsTheCueOnScreenAtItsStartFromTheStart() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        // 1.0–2.5 s: the first cue (about 0.5–1.5 s) shows from the start to its end, the second
        // (about 2.0–3.0 s) from its start to the end of the range.
        let probe = try #require(which("ffprobe"))
        let sourcePackets = try run(probe, ["-v", "error", "-select_streams", "s:0", "-show_entries", "packet=pts_time,duration_time", "-of", "csv=p=0", source.path])
        let sourceCues: [(Double, Double)] = String(decoding: sourcePackets.stdout, as: UTF8.self).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",").compactMap { Double($0) }
            return fields.count == 2 ? (fields[0], fields[0] + fields[1]) : nil
        }
        try #require(sourceCues.count == 2 && sourceCues[0].0 < 1 && sourceCues[0].1 > 1 && sourceCues[1].0 > 1 && sourceCues[1].1 > 2.5, "\(sourceCues)")
        let (output, _) = try await Self.export(source, preset: .preset640x480, to: .mp4, in: dir) {
            $0.timeRange = MediaTimeRange(start: MediaTime(value: 1, timescale: 1), end: MediaTime(value: 5, timescale: 2))
        }
        let packets = try run(probe, ["-v", "error", "-select_streams", "s:0", "-show_entries", "packet=pts_time,duration_time,size", "-of", "csv=p=0", output.path])
        // mov_text marks the gaps between cues with empty samples (2 bytes); the cues are the rest.
        let rows: [[String]] = String(decoding: packets.stdout, as: UTF8.self).split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
        var cues: [(Double, Double)] = []
        for row in rows where row.count == 3 && (Int(row[2]) ?? 0) > 2 {
            cues.append((Double(row[0]) ?? .nan, Double(row[1]) ?? .nan))
        }
        let video = try run(probe, ["-v", "error", "-select_streams", "v", "-show_entries", "stream=start_time", "-of", "csv=p=0", output.path])
        let origin = Double(String(decoding: video.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        try #require(cues.count == 2, "\(cues)")
        #expect(abs(cues[0].0 - origin) < 0.002 && abs(cues[0].1 - (sourceCues[0].1 - 1)) < 0.002, "\(cues), video from \(origin) s, source \(sourceCues)")
        #expect(abs(cues[1].0 - origin - (sourceCues[1].0 - 1)) < 0.002 && abs(cues[1].1 - (2.5 - sourceCues[1].0)) < 0.002,
                "\(cues), video from \(origin) s, source \(sourceCues)")
    }

    @Test func bitmapSubtitlesAnMP4CannotHoldAreLeftOutWithAWarning() async throws {
        let clip = try TestFiles.requireSharedMedia().appendingPathComponent("h264_1080i50_ac3_pgs_sony_a7m3_avchd.mts")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (mp4, result) = try await Self.export(clip, preset: .passthrough, to: .mp4, in: dir)
        #expect(result.droppedTracks.contains { $0.mediaType == "subtitle" && $0.reason.contains("hdmv_pgs_subtitle") }, "\(result.droppedTracks)")
        #expect(result.warnings.contains { $0.contains("left out") && $0.contains("mkv file keeps it") }, "\(result.warnings)")
        #expect(try Self.streams(mp4).allSatisfy { $0.type != "subtitle" })
        let (mkv, _) = try await Self.export(clip, preset: .passthrough, to: .mkv, in: dir)
        #expect(try Self.streams(mkv).filter { $0.type == "subtitle" }.map(\.codec) == ["hdmv_pgs_subtitle"])
    }

    @Test func aSourceThatMarksNoDefaultTrackGetsOneDefaultSoundAndNoSubtitlesShown() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let marked = try Self.source(in: dir)
        let unmarked = dir.appendingPathComponent("unmarked.mkv")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-i", marked.path, "-map", "0", "-c", "copy", "-disposition:a", "0", "-disposition:s", "0", unmarked.path]).status == 0)
        // Both audio tracks as players see them: one plays, not both at once; no subtitle shows by itself.
        let (mp4, _) = try await Self.export(unmarked, preset: .passthrough, to: .mp4, in: dir)
        #expect(try Self.streams(mp4).filter { $0.type == "audio" }.map(\.isDefault) == [true, false])
        let (mkv, _) = try await Self.export(unmarked, preset: .preset640x480, to: .mkv, in: dir) { $0.audioSelection = .all }
        let streams = try Self.streams(mkv)
        #expect(streams.filter { $0.type == "audio" }.map(\.isDefault) == [true, false], "\(streams)")
        #expect(streams.filter { $0.type == "subtitle" }.map(\.isDefault) == [false, false], "\(streams)")
    }

    @Test func aCueTheConverterRefusesIsLeftOutWithAWarning() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // A Latin-1 SubRip file: its second cue's "é" is not UTF-8.
        let cues = dir.appendingPathComponent("latin1.srt")
        var latin1 = Data("1\n00:00:00,500 --> 00:00:01,000\nPlain\n\n2\n00:00:01,500 --> 00:00:02,000\nCaf".utf8)
        latin1.append(0xE9)
        latin1.append(contentsOf: Array("\n".utf8))
        try latin1.write(to: cues)
        let source = dir.appendingPathComponent("latin1.mkv")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=3", "-sub_charenc", "UTF-8", "-i", cues.path,
                                      "-map", "0", "-map", "1", "-c:v", "libx264", "-preset", "ultrafast", "-c:s", "copy", source.path]).status == 0)
        let (output, result) = try await Self.export(source, preset: .passthrough, to: .mp4, in: dir)
        #expect(result.warnings.contains { $0.contains("1 cue could not be converted to mov_text and was left out (the first at 1.5") }, "\(result.warnings)")
        #expect(try Self.cues(output, subtitle: 0).contains("Plain"))
    }

    /// PSNR in dB of picture `n` of `a` against picture `n` of `b`, over the bottom 48 rows
    /// (where the cues are drawn), as ffmpeg's psnr filter measures it.
    static func bottomPSNR(_ a: URL, _ b: URL, picture n: Int) throws -> Double {
        let ffmpeg = try #require(which("ffmpeg"))
        let pick = "select=eq(n\\,\(n)),setpts=0,crop=iw:48:0:ih-48"
        let result = try ChildProcess.run(ffmpeg, ["-v", "info", "-i", a.path, "-i", b.path, "-filter_complex", "[0:v]\(pick)[a];[1:v]\(pick)[b];[a][b]psnr",
                                                   "-f", "null", "-"], timeLimit: 300)
        let log = result.stderr
        let value = log.range(of: #"average:([0-9.]+|inf)"#, options: .regularExpression).map { String(log[$0].dropFirst("average:".count)) }
        return try #require(value.flatMap { $0 == "inf" ? Double.infinity : Double($0) }, "psnr of picture \(n): \(log.suffix(300))")
    }

    @Test func burntInSubtitlesMatchFFmpegsSubtitlesFilter() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let (output, result) = try await Self.export(source, preset: .preset640x480, to: .mp4, in: dir) { $0.subtitlesBurnedIn = .languages(["eng"]) }
        #expect(result.droppedTracks.contains { $0.trackID == 4 && $0.reason == "burnt into the picture" }, "\(result.droppedTracks)")
        #expect(try Self.streams(output).filter { $0.type == "subtitle" }.map(\.language) == ["fra"], "the French track stays a track")
        #expect(result.pathReason.contains("libass"), "\(result.pathReason)")
        // ffmpeg's own burn-in and a clean encode, picture for picture (its timing kept as ours is).
        let ffmpeg = try #require(which("ffmpeg"))
        let burnt = dir.appendingPathComponent("ffmpeg-burnt.mp4"), clean = dir.appendingPathComponent("ffmpeg-clean.mp4")
        for (url, filters) in [(burnt, ["-vf", "subtitles=\(OverlayRenderer.filterArgument(source.path)):si=0"]), (clean, [])] {
            let made = try run(ffmpeg, ["-v", "error", "-i", source.path] + filters + ["-fps_mode", "passthrough", "-c:v", "libx264", "-an", "-sn", url.path])
            try #require(made.status == 0)
        }
        // Pictures 25 (1.0 s) and 60 (2.4 s) show a cue; 40 (1.6 s) none. Measured: about 42 dB
        // against ffmpeg's burnt pictures, 24 dB against the clean ones where a cue shows.
        for n in [25, 60] {
            let (same, plain) = (try Self.bottomPSNR(output, burnt, picture: n), try Self.bottomPSNR(output, clean, picture: n))
            #expect(same > 36 && plain < 30, "picture \(n): \(same) dB against ffmpeg's burnt, \(plain) dB against the clean one")
        }
        #expect(try Self.bottomPSNR(output, clean, picture: 40) > 36, "no cue is on screen at 1.6 s")
    }

    /// PSNR in dB of picture `n` of `a` against picture `n` of `b` over the band where the Sony
    /// clip's PGS date stamp is drawn (x 880–1520, y 870–950 of 1920x1080, scaled with the picture).
    static func dateStampPSNR(_ a: URL, _ b: URL, picture n: Int) throws -> Double {
        let ffmpeg = try #require(which("ffmpeg"))
        let pick = "select=eq(n\\,\(n)),setpts=0,crop=iw*640/1920:ih*80/1080:iw*880/1920:ih*870/1080"
        let result = try ChildProcess.run(ffmpeg, ["-v", "info", "-i", a.path, "-i", b.path, "-filter_complex", "[0:v]\(pick)[a];[1:v]\(pick)[b];[a][b]psnr",
                                                   "-f", "null", "-"], timeLimit: 300)
        let log = result.stderr
        let value = log.range(of: #"average:([0-9.]+|inf)"#, options: .regularExpression).map { String(log[$0].dropFirst("average:".count)) }
        return try #require(value.flatMap { $0 == "inf" ? Double.infinity : Double($0) }, "psnr of picture \(n): \(log.suffix(300))")
    }

    /// ffmpeg's picture of `source` with its first subtitle stream overlaid (`burnt`) and without
    /// (`clean`), deinterlaced as the export deinterlaces and scaled to `width`×`height`: its first
    /// 12 pictures from `start` (an overlay of a cue lasting 49 days goes on as long).
    static func ffmpegOverlay(_ source: URL, from start: Double = 0, width: Int, height: Int, in dir: URL) throws -> (burnt: URL, clean: URL) {
        let ffmpeg = try #require(which("ffmpeg"))
        let burnt = dir.appendingPathComponent("ffmpeg-overlay.mp4"), clean = dir.appendingPathComponent("ffmpeg-plain.mp4")
        let deinterlace = "bwdif=mode=send_frame:parity=auto:deint=interlaced"
        for (url, graph) in [(burnt, "[0:v]\(deinterlace)[v];[v][0:s]overlay,scale=\(width):\(height)"), (clean, "[0:v]\(deinterlace),scale=\(width):\(height)")] {
            let made = try run(ffmpeg, ["-v", "error", "-i", source.path, "-filter_complex", graph, "-ss", String(start), "-frames:v", "12",
                                        "-c:v", "libx264", "-crf", "12", "-an", "-sn", url.path])
            try #require(made.status == 0)
        }
        return (burnt, clean)
    }

    @Test func bitmapSubtitlesAreBurntInWhereFFmpegsOverlayDrawsThem() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // A Sony camera's AVCHD clip: its PGS track draws the date and time over the picture.
        let clip = try TestFiles.requireSharedMedia().appendingPathComponent("h264_1080i50_ac3_pgs_sony_a7m3_avchd.mts")
        let (output, result) = try await Self.export(clip, preset: .preset1280x720, to: .mp4, in: dir) { $0.subtitlesBurnedIn = .all }
        #expect(result.droppedTracks.contains { $0.trackID == 4608 && $0.reason == "burnt into the picture" }, "\(result.droppedTracks)")
        #expect(try Self.streams(output).allSatisfy { $0.type != "subtitle" })
        let (burnt, clean) = try Self.ffmpegOverlay(clip, width: 1280, height: 720, in: dir)
        // Measured: 45 dB against ffmpeg's overlay, 18 dB against the clean picture.
        for n in [0, 4, 8] {
            let (same, plain) = (try Self.dateStampPSNR(output, burnt, picture: n), try Self.dateStampPSNR(output, clean, picture: n))
            #expect(same > 36 && plain < 25, "picture \(n): \(same) dB against ffmpeg's overlay, \(plain) dB against the clean one")
        }
    }

    @Test func vobSubIsBurntInAndItsOpenEndedCueDoesNotStretchTheFile() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // The PGS date stamp turned VobSub by ffmpeg, which writes its "until the next cue" as a
        // 2³²−1 ms block: ffprobe then gives the file 49 days.
        let clip = try TestFiles.requireSharedMedia().appendingPathComponent("h264_1080i50_ac3_pgs_sony_a7m3_avchd.mts")
        let source = dir.appendingPathComponent("vobsub.mkv")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-i", clip.path, "-map", "0:v", "-map", "0:s", "-vf", "bwdif=deint=interlaced", "-c:v", "libx264",
                                      "-preset", "ultrafast", "-crf", "12", "-c:s", "dvdsub", source.path]).status == 0)
        let asset = Asset(url: source)
        let duration = try await asset.load(.duration)
        #expect(duration.seconds > 0.4 && duration.seconds < 0.6, "\(duration.seconds) s")
        let (output, result) = try await Self.export(source, preset: .preset1280x720, to: .mp4, in: dir) {
            $0.subtitlesBurnedIn = .trackIDs([2])
            $0.timeRange = MediaTimeRange(start: MediaTime(value: 1, timescale: 5), end: MediaTime(value: 1, timescale: 2))
        }
        #expect(result.droppedTracks.contains { $0.trackID == 2 && $0.reason == "burnt into the picture" }, "\(result.droppedTracks)")
        // The cue began before the range: it is on screen from its first picture.
        let (burnt, clean) = try Self.ffmpegOverlay(source, from: 0.2, width: 1280, height: 720, in: dir)
        for n in [0, 5] {
            let (same, plain) = (try Self.dateStampPSNR(output, burnt, picture: n), try Self.dateStampPSNR(output, clean, picture: n))
            #expect(same > 36 && plain < 25, "picture \(n): \(same) dB against ffmpeg's overlay, \(plain) dB against the clean one")
        }
    }

    @Test func burningIntoAPassthroughOrAMissingTrackIsRefusedClearly() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        do {
            _ = try await Self.export(source, preset: .passthrough, to: .mkv, in: dir) { $0.subtitlesBurnedIn = .languages(["eng"]) }
            Issue.record("passthrough burnt subtitles in")
        } catch let error as MediaError {
            #expect(error.message.contains("passthrough") && error.message.contains("burn"), "\(error)")
        }
        do {
            _ = try await Self.export(source, preset: .preset640x480, to: .mkv, in: dir) { $0.subtitlesBurnedIn = .languages(["deu"]) }
            Issue.record("a missing language burnt something in")
        } catch let error as MediaError {
            #expect(error.message.contains("no subtitle track matches deu") && error.message.contains("4 (eng)"), "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).allSatisfy { !$0.hasPrefix("640x480") && !$0.hasPrefix("Passthrough") })
    }

    /// The example of the DocC article "Exporting media" ("Every track a viewer keeps"), as written there.
    @Test func theArticlesExampleRuns() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let asset = Asset(url: try Self.source(in: dir))
        let output = dir.appendingPathComponent("out.mp4")
        let session = ExportSession(asset: asset, preset: .preset1280x720)
        session.audioSelection = .languages(["fra", "eng"])
        session.subtitleSelection = .languages(["eng"])
        session.subtitlesBurnedIn = .languages(["fra"])
        session.loudnessTarget = .ebuR128
        let result = try await session.export(to: output, as: .mp4)
        for track in result.loudness {
            print(track.trackIDs, track.measured.integrated, track.gain, track.result?.integrated ?? .nan)
        }
        let streams = try Self.streams(output)
        #expect(streams.map { "\($0.type):\($0.language ?? "-")" } == ["audio:eng", "audio:fra", "subtitle:eng"], "\(streams)")
        #expect(result.loudness.count == 2 && result.loudness.allSatisfy { abs(($0.result?.integrated ?? 0) + 23) < 0.6 }, "\(result.loudness)")
        #expect(result.droppedTracks.contains { $0.trackID == 5 && $0.reason == "burnt into the picture" })
    }

    @Test func selectionsParseAsTheCommandLineGivesThem() {
        #expect(TrackSelection(argument: "all") == .all)
        #expect(TrackSelection(argument: "None") == TrackSelection.none)
        #expect(TrackSelection(argument: "eng,fr") == .languages(["eng", "fr"]))
        #expect(TrackSelection(argument: "2,3") == .trackIDs([2, 3]))
        #expect(TrackSelection(argument: "english") == nil)
        #expect(TrackSelection(argument: "0") == nil)
        #expect(TrackSelection(argument: "eng,") == nil)
        #expect(TrackSelection.normalizedLanguage("fre") == TrackSelection.normalizedLanguage("fr"))
        #expect(TrackSelection.normalizedLanguage("ger") == "deu")
    }
}

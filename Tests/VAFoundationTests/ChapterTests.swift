import Foundation
import Testing
@testable import VAFoundation

/// Chapters survive every export, Passthrough included, into MP4 and Matroska, cut and moved
/// with a time range. ffmpeg makes the source and ffprobe reads the chapters written.
@Suite(.serialized) struct ChapterTests {
    typealias Marker = (title: String, start: Double, end: Double)
    static let chapters: [Marker] = [("Opening", 0, 2), ("Middle", 2, 4.5), ("End", 4.5, 6)]

    /// A 6 s 320x240 25 fps H.264 + AAC Matroska file with `chapters`.
    static func source(in dir: URL) throws -> URL {
        let metadata = dir.appendingPathComponent("chapters.txt")
        var text = ";FFMETADATA1\n"
        for chapter in chapters {
            text += "[CHAPTER]\nTIMEBASE=1/1000\nSTART=\(Int(chapter.start * 1000))\nEND=\(Int(chapter.end * 1000))\ntitle=\(chapter.title)\n"
        }
        try text.write(to: metadata, atomically: true, encoding: .utf8)
        let url = dir.appendingPathComponent("source.mkv")
        let ffmpeg = try #require(which("ffmpeg"), "ffmpeg makes the source (Hardware/setup.sh installs it)")
        let made = try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=sample_rate=48000",
                                    "-i", metadata.path, "-map", "0:v", "-map", "1:a", "-map_chapters", "2", "-t", "6",
                                    "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac", url.path])
        try #require(made.status == 0)
        return url
    }

    /// The chapters ffprobe reads in `url`.
    static func probedChapters(_ url: URL) throws -> [Marker] {
        let probe = try #require(which("ffprobe"))
        let result = try run(probe, ["-v", "error", "-show_chapters", "-of", "json", url.path])
        let json = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        return (json["chapters"] as? [[String: Any]] ?? []).map { chapter in
            ((chapter["tags"] as? [String: String])?["title"] ?? "",
             Double(chapter["start_time"] as? String ?? "") ?? .nan, Double(chapter["end_time"] as? String ?? "") ?? .nan)
        }
    }

    static func expectSame(_ written: [Marker], _ expected: [Marker], _ label: String) {
        #expect(written.map(\.title) == expected.map(\.title), "\(label): \(written)")
        for (w, e) in zip(written, expected) {
            #expect(abs(w.start - e.start) < 0.002 && abs(w.end - e.end) < 0.002, "\(label): \(w.title) \(w.start)–\(w.end) s, expected \(e.start)–\(e.end) s")
        }
    }

    @Test(arguments: [("640x480", FileType.mp4), ("Passthrough", .mp4), ("Passthrough", .mkv), ("640x480", .mkv)])
    func chaptersSurviveEveryExport(preset: String, fileType: FileType) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        Self.expectSame(try Self.probedChapters(source), Self.chapters, "the source")
        let output = dir.appendingPathComponent("out.\(fileType.fileExtension)")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: preset))
        _ = try await session.export(to: output, as: fileType)
        // ffmpeg's own conversion keeps them the same way (its -map_chapters default).
        let ffmpeg = try #require(which("ffmpeg"))
        let reference = dir.appendingPathComponent("ffmpeg.\(fileType.fileExtension)")
        try #require(try run(ffmpeg, ["-v", "error", "-i", source.path, "-c", "copy", reference.path]).status == 0)
        let written = try Self.probedChapters(output)
        Self.expectSame(written, try Self.probedChapters(reference), "\(preset) to \(fileType) against ffmpeg's")
        Self.expectSame(written, Self.chapters, "\(preset) to \(fileType)")
    }

    @Test func aTrimCutsAndMovesTheChapters() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let output = dir.appendingPathComponent("trim.mp4")
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        session.timeRange = MediaTimeRange(start: MediaTime(value: 1, timescale: 1), duration: MediaTime(value: 3, timescale: 1))
        _ = try await session.export(to: output, as: .mp4)
        // 1–4 s of the source: the rest of Opening, the first 2.5 s of Middle, no End.
        Self.expectSame(try Self.probedChapters(output), [("Opening", 0, 1), ("Middle", 1, 3)], "1+3 s")
    }

    @Test func aPhoneMP4sChaptersSurviveAReencode() async throws {
        let clip = try TestFiles.requireSharedMedia().appendingPathComponent("h264_aac_qt_and_nero_chapters.mp4")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("out.mp4")
        _ = try await ExportSession(asset: Asset(url: clip), preset: .preset640x480).export(to: output, as: .mp4)
        let expected = try Self.probedChapters(clip)
        #expect(!expected.isEmpty)
        Self.expectSame(try Self.probedChapters(output), expected, "the shared clip")
    }
}

import Foundation
import Testing
@testable import VAFoundation

/// A file whose tracks hold no samples fails an export naming the file, not a time range that
/// was never given. ffmpeg makes the file.
@Suite struct EmptyMediaTests {
    @Test func aFileWithoutSamplesIsNamedAsHoldingNoMedia() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // A WAV header with no samples after it.
        let source = dir.appendingPathComponent("empty.wav")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "anullsrc=r=48000", "-t", "0", "-c:a", "pcm_s16le", source.path]).status == 0)
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: "AppleM4A"))
        do {
            _ = try await session.export(to: dir.appendingPathComponent("out.m4a"), as: .m4a)
            Issue.record("a file without samples was exported")
        } catch let error as MediaError {
            #expect(error.code == .noTracks && error.path == source.path, "\(error)")
            #expect(error.message == "the file holds no media: its tracks have no samples", "\(error.message)")
        }
    }

    @Test func anEmptyRangeOfAFileWithMediaNamesTheRange() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("tone.wav")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "sine=duration=1", source.path]).status == 0)
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: "AppleM4A"))
        session.timeRange = MediaTimeRange(start: MediaTime(value: 2, timescale: 1), duration: MediaTime(value: 1, timescale: 1))
        do {
            _ = try await session.export(to: dir.appendingPathComponent("out.m4a"), as: .m4a)
            Issue.record("a range past the end was exported")
        } catch let error as MediaError {
            #expect(error.code == .invalidArgument && error.message.hasPrefix("the time range 2.0–"), "\(error)")
        }
    }
}

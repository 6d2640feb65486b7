import Foundation
import Testing
@testable import VAFoundation

/// A damaged packet is skipped and counted, as ffmpeg does; a stream that is mostly damage
/// fails with the counts. Both files are real damaged media from the shared corpus.
@Suite struct DecodeDamageTests {
    @Test func anIsolatedDamagedPacketIsSkippedWithAWarning() async throws {
        let media = try #require(TestFiles.sharedMedia, "CI always has ../shared/media")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("out.m4a")
        // An MP3 whose first frame is damaged (ffmpeg: "Invalid data found"), with cover art.
        let session = ExportSession(asset: Asset(url: media.appendingPathComponent("mp3_id3v2_chapters_cover.mp3")), preset: .appleM4A)
        let result = try await session.export(to: output, as: .m4a)
        #expect(result.warnings.contains { $0.hasPrefix("track 1 (audio): 1 damaged packet skipped") }, "\(result.warnings)")
        // ffmpeg converts the same file to 2.808 s of audio, skipping the same packet.
        let probe = try #require(which("ffprobe"))
        let seconds = Double(String(decoding: try run(probe, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", output.path]).stdout,
                                    as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(abs(seconds - 2.808) < 0.03, "\(seconds) s")
    }

    @Test func aStreamOfDamageFailsWithTheCounts() async throws {
        let media = try #require(TestFiles.sharedMedia, "CI always has ../shared/media")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = media.appendingPathComponent("broken_vp9_invalid_bitstream.webm")
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        do {
            _ = try await session.export(to: dir.appendingPathComponent("out.mp4"), as: .mp4)
            Issue.record("a VP9 stream no frame of which decodes was exported")
        } catch let error as MediaError {
            #expect(error.code == .decodeFailed && error.path == source.path, "\(error)")
            #expect(error.message.contains("damaged packets against 0 decoded frames"), "\(error.message)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty, "no file is left")
    }
}

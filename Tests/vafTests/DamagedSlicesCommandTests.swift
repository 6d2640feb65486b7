import ChildProcess
import Foundation
import Testing

/// Damage a decoder conceals without refusing the packet (corrupt slices in H.264) is counted
/// in warnings like a skipped packet, as ffmpeg logs it; the export still completes.
@Suite struct DamagedSlicesCommandTests {
    @Test func concealedPicturesAreCountedInWarnings() async throws {
        // 3 of its 60 pictures have 24 bytes overwritten mid-slice (Corpus/make-corpus.sh);
        // ffmpeg logs "error while decoding MB" for them and converts the file.
        let input = CorpusSweepTests.corpus.appendingPathComponent("h264_damaged_slices.mp4")
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-damage-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let child = try await ChildProcess.run(Vaf.binary, ["transcode", input.path, "--preset", "640x480", "--output-dir", out.path, "--json"],
                                               timeLimit: 120)
        let row = try #require(try Vaf.jsonLines(child.stdout).first)
        #expect(child.shellStatus == 0, "\(row)")
        #expect(row["frames"] as? Int == 60, "every picture, the damaged ones concealed")
        // FFmpeg 5.1's frame-threaded H.264 decoder can hand a picture out before error
        // concealment has flagged it, so a run counts 0 to 3 of the 3 (ffmpeg's own "corrupt
        // decoded frame" count races the same way; DecodeDamageTests counts on one thread).
        // What it reports is never a picture that is not damaged.
        let warnings = row["warnings"] as? [String] ?? []
        for damage in warnings.filter({ $0.contains("decoded from damaged data (concealed) at ") }) {
            #expect(damage.hasPrefix("track 1 (video): "), "\(damage)")
            let times = damage.components(separatedBy: " at ").last?.components(separatedBy: ", ") ?? []
            #expect(!times.isEmpty && Set(times).isSubset(of: ["0.40 s", "0.87 s", "1.37 s"]), "\(damage)")
            #expect(damage.contains("\(times.count) frame"), "\(damage)")
        }
    }
}

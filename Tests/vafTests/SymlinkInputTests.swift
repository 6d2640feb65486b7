import Foundation
import Testing

/// Inputs reached through symbolic links (batch folders of links are common on farms) are
/// read, sized and rate-capped as the files they point to.
@Suite struct SymlinkInputTests {
    @Test func aLinkedInputIsSizedAndCappedAsItsTarget() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-links-\(UUID().uuidString)")
        let inputs = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = Vaf.fixture("testsrc_320x240_30fps_3s.mp4")
        try FileManager.default.createSymbolicLink(atPath: inputs.appendingPathComponent("linked.mp4").path, withDestinationPath: clip)
        let run = try Vaf.run(["transcode", inputs.path, "--preset", "640x480", "--output-dir", dir.appendingPathComponent("out").path, "--json"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let line = try #require(run.stdout.split(separator: "\n").first)
        let row = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let size = try #require((try FileManager.default.attributesOfItem(atPath: clip)[.size] as? NSNumber)?.int64Value)
        #expect((row["inputBytes"] as? NSNumber)?.int64Value == size, "the target's size, not the link's: \(row["inputBytes"] ?? "nil")")
        #expect(row["status"] as? String == "completed", "\(row["error"] ?? "")")
        #expect(((row["videoBitRate"] as? Int) ?? 0) > 100_000, "capped at the target's rate, not the link's few bytes: \(row["videoBitRate"] ?? "nil")")
    }
}

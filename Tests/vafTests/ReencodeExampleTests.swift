import Foundation
import Testing

/// The reader + writer example re-encodes every clip of the shared corpus that it supports,
/// into files ffmpeg decodes without errors, and declines the rest with a one-line error.
@Suite(.disabled(if: ReencodeCorpus.media == nil, "../shared/media is not beside this checkout"),
       .disabled(if: !FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "ffmpeg is not installed (Hardware/setup.sh installs it)"))
struct ReencodeExampleTests {
    @Test(arguments: ReencodeCorpus.files)
    func reencodesOrDeclines(_ name: String) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-reencode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = ReencodeCorpus.media!.appendingPathComponent(name).path
        let output = dir.appendingPathComponent("out.mp4").path
        let example = Vaf.binary.replacingOccurrences(of: "/vaf", with: "/ReencodeExample")
        let result = try Vaf.run(executable: example, [input, output])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        if result.status == 0 {
            let check = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", output, "-f", "null", "-"])
            // ffmpeg's own null output complains about variable-rate timing even for the sources;
            // only messages about reading our file count.
            let complaints = check.stderr.split(separator: "\n").filter { !$0.hasPrefix("[null @") && !$0.contains("Last message repeated") }
            #expect(check.status == 0 && complaints.isEmpty, "\(name): ffmpeg reports \(complaints)")
            #expect(leftovers == ["out.mp4"])
        } else {
            let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("libva") && !$0.hasPrefix("Svt") }
            #expect(lines.count == 1 && lines[0].contains(name), "\(name): \(result.stderr)")
            #expect(leftovers.isEmpty, "\(name): a declined file leaves nothing behind")
        }
    }
}

enum ReencodeCorpus {
    static var media: URL? {
        let url = Vaf.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/media")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }
    static var files: [String] {
        guard let media, let names = try? FileManager.default.contentsOfDirectory(atPath: media.path) else { return [] }
        return names.filter { !$0.hasSuffix(".md") }.sorted()
    }
}

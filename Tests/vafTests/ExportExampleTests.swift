import Foundation
import Testing

/// The README's export program is `Sources/ExportExample/main.swift`, word for word, and it
/// exports a clip, or fails on a missing one with a one-line error naming it.
@Suite struct ExportExampleTests {
    static var example: String { Vaf.binary.replacingOccurrences(of: "/vaf", with: "/ExportExample") }

    @Test func theReadmeShowsTheProgramAsItIs() throws {
        let readme = try String(contentsOf: Vaf.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let program = try String(contentsOf: Vaf.packageRoot.appendingPathComponent("Sources/ExportExample/main.swift"), encoding: .utf8)
        #expect(readme.contains("```swift\n" + program + "```"), "README.md's export program differs from Sources/ExportExample/main.swift")
        #expect(readme.contains(".package(path: \"../VAFoundation\")"))
    }

    @Test func itExportsAClip() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-export-example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("out.mp4").path
        let result = try Vaf.run(executable: Self.example, [Vaf.fixture("testsrc_320x240_30fps_3s.mp4"), output])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("90 video frames, "), "\(result.stdout)")
        let probe = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                                  "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", output])
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "90")
    }

    @Test func aMissingInputIsOneLineNamingIt() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-export-example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try Vaf.run(executable: Self.example, ["/nonexistent/clip.mov", dir.appendingPathComponent("out.mp4").path])
        let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("libva") }
        #expect(result.status == 1 && lines.count == 1 && lines[0].contains("/nonexistent/clip.mov"), "\(result.status): \(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        #expect(try Vaf.run(executable: Self.example, []).status == 64)
    }
}

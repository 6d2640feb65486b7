import ChildProcess
import Foundation
import Testing

/// Paths and helpers shared by the engine tests.
enum TestFiles {
    /// A bundled fixture (see Fixtures/ATTRIBUTION.md).
    static func fixture(_ name: String) -> URL {
        Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil)!
    }

    /// The package root, found from this file's location.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The shared media corpus beside the checkout (`../shared/media`), nil when absent.
    static var sharedMedia: URL? {
        let url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/media")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// The shared media corpus, which CI always has: its absence fails the calling test.
    static func requireSharedMedia() throws -> URL {
        let url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/media")
        try #require(FileManager.default.fileExists(atPath: url.path), "CI always has ../shared/media; missing: \(url.path)")
        return url
    }

    /// Every media file of the shared corpus. When it is absent the list holds one placeholder name,
    /// so the parameterised tests run a case that fails on `requireSharedMedia()` instead of none.
    static var sharedMediaFiles: [String] {
        guard let dir = sharedMedia, let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else {
            return ["(../shared/media is missing)"]
        }
        return names.filter { !$0.hasSuffix(".md") }.sorted()
    }

    /// A fresh temporary directory, removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Runs a program and returns its exit status and standard output (stderr is discarded); a
/// program still running after ten minutes is killed and reads as status 137.
func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stdout: Data) {
    let child = try ChildProcess.run(executable, arguments, timeLimit: 600)
    return (child.shellStatus, child.standardOutput)
}

/// The full path of `name` on PATH, nil if it is not installed.
func which(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

import Foundation
import HardwareAcceleration
import Testing

/// Paths to the package and to the shared vainfo fixtures beside the clone (`../shared/hardware/vainfo`).
enum Fixtures {
    /// The package root, found from this file's path.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The shared vainfo directory, or `nil` when this checkout has no `../shared` beside it.
    static let vainfoDirectory: URL? = {
        let url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/hardware/vainfo")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    /// Why vainfo tests are skipped, for `.enabled(if:)`.
    static let vainfoMissing: Comment = "../shared/hardware/vainfo is not beside this checkout"

    /// The committed device profiles.
    static let profilesDirectory = packageRoot.appendingPathComponent("Hardware/Profiles")

    /// Every vainfo fixture's file name.
    static func vainfoFiles() -> [String] {
        guard let dir = vainfoDirectory,
              let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else { return [] }
        return names.filter { $0.hasSuffix(".txt") }.sorted()
    }

    static func vainfoText(_ name: String) throws -> String {
        guard let dir = vainfoDirectory else { throw FixtureMissing(name: name) }
        return try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
    }

    /// Parses a fixture the way `vaf probe --from-vainfo` does.
    static func capture(_ name: String) throws -> VainfoCapture {
        let path = "../shared/hardware/vainfo/\(name)"
        return try capture(text: try vainfoText(name), path: path)
    }

    static func capture(text: String, path: String) throws -> VainfoCapture {
        let base = String(path.split(separator: "/").last ?? "")
        let name = base.hasSuffix(".txt") ? String(base.dropLast(4)) : base
        return try VainfoCapture(text: text, file: path, name: name, source: VainfoCapture.sourceName(forPath: path))
    }

    struct FixtureMissing: Error { var name: String }
}

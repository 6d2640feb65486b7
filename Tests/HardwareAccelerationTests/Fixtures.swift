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

    /// The shared vainfo directory, which CI always has: its absence fails the calling test.
    static func requireVainfoDirectory() throws -> URL {
        try #require(vainfoDirectory, "CI always has ../shared/hardware/vainfo beside the checkout")
    }

    /// How many vainfo captures `../shared/hardware/vainfo` holds.
    static let vainfoFileCount = 10

    /// The committed device profiles.
    static let profilesDirectory = packageRoot.appendingPathComponent("Hardware/Profiles")

    /// Every vainfo fixture's file name; fails the calling test unless there are `vainfoFileCount`.
    static func vainfoFiles() throws -> [String] {
        let dir = try requireVainfoDirectory()
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".txt") }.sorted()
        try #require(names.count == vainfoFileCount, "\(names.count) vainfo captures in \(dir.path), expected \(vainfoFileCount)")
        return names
    }

    static func vainfoText(_ name: String) throws -> String {
        let dir = try requireVainfoDirectory()
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

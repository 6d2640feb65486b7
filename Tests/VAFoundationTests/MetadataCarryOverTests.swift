import Foundation
import Testing
@testable import VAFoundation

/// Exports carry a camera's metadata (location, make, model, creation date) into MP4 and MOV,
/// checked by reading the output back with ffprobe, and say what a container dropped.
@Suite(.disabled(if: which("ffprobe") == nil, "ffprobe is not installed (Hardware/setup.sh installs it)"))
struct MetadataCarryOverTests {
    let iPhone = TestFiles.fixture("h264_aac_iphone6_rot90_gps_metadata.mov")

    private func formatTags(_ url: URL) throws -> [String: String] {
        let result = try run(which("ffprobe")!, ["-v", "error", "-show_entries", "format_tags", "-of", "json", url.path])
        let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        return ((json?["format"] as? [String: Any])?["tags"] as? [String: String]) ?? [:]
    }

    @Test(arguments: [FileType.mp4, .mov])
    func aPhoneClipKeepsItsLocationMakeModelAndDates(as fileType: FileType) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.\(fileType.rawValue)")
        let result = try await ExportSession(asset: Asset(url: iPhone), preset: .passthrough).export(to: out, as: fileType)
        let tags = try formatTags(out)
        #expect(tags["com.apple.quicktime.location.ISO6709"] == "+32.0929+034.8620+028.516/")
        #expect(tags["com.apple.quicktime.make"] == "Apple" && tags["com.apple.quicktime.model"] == "iPhone 6")
        #expect(tags["com.apple.quicktime.creationdate"] == "2019-07-24T11:25:40+0300")
        #expect(tags["creation_time"] == "2019-07-24T08:25:57.000000Z")
        // Also under the common keys (MP4's ©xyz, MOV's ©mak/©mod), for players that read only those.
        #expect(tags["location"]?.hasPrefix("+32.0929+034.8620") == true)
        #expect(tags["make"] == "Apple" && tags["model"] == "iPhone 6")
        #expect(!result.warnings.contains { $0.contains("metadata") }, "\(result.warnings)")
    }

    @Test func metadataAContainerCannotHoldIsNamedInTheWarnings() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.mp4")
        let session = ExportSession(asset: Asset(url: iPhone), preset: .passthrough)
        // MP4's iTunes-style metadata has no place for a free-form key.
        session.metadata = [MetadataItem(key: "title", value: "Harbour"), MetadataItem(key: "shotnumber", value: "12")]
        let result = try await session.export(to: out, as: .mp4)
        #expect(try formatTags(out)["title"] == "Harbour")
        let warning = try #require(result.warnings.first { $0.contains("metadata") })
        #expect(warning.contains("shotnumber") && !warning.contains("title"), "\(warning)")
    }
}

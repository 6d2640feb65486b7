import Foundation
import Testing
@testable import VAFoundation

/// Each kind of bad input gets its own error code and a message naming the file.
@Suite struct AssetErrorTests {
    private func loadError(_ url: URL) async -> MediaError? {
        do {
            _ = try await Asset(url: url).load(.tracks)
            return nil
        } catch {
            return error as? MediaError
        }
    }

    private func withTemporaryFile(_ name: String, _ bytes: Data, _ body: (URL) async throws -> Void) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent(name)
        try bytes.write(to: url)
        try await body(url)
    }

    @Test func missingFile() async throws {
        let error = try #require(await loadError(URL(fileURLWithPath: "/nonexistent/clip.mp4")))
        #expect(error.code == .fileNotFound)
        #expect(error.description.hasPrefix("/nonexistent/clip.mp4: "))
    }

    @Test func zeroByteFile() async throws {
        try await withTemporaryFile("empty.mp4", Data()) { url in
            let error = try #require(await loadError(url))
            #expect(error.code == .notMediaFile)
            #expect(error.message.contains("empty"))
        }
    }

    @Test func textFileIsNotMedia() async throws {
        try await withTemporaryFile("notes.mp4", Data(String(repeating: "not a movie\n", count: 200).utf8)) { url in
            let error = try #require(await loadError(url))
            #expect(error.code == .notMediaFile)
            #expect(error.underlying != nil, "the FFmpeg error is kept as the cause")
        }
    }

    @Test func truncatedMovieWithoutItsHeader() async throws {
        // The iPhone file keeps its moov header at the end: cutting the file loses it.
        let whole = try Data(contentsOf: TestFiles.fixture("h264_aac_iphone6_rot90_gps_metadata.mov"))
        try await withTemporaryFile("cut.mov", whole.prefix(whole.count / 2)) { url in
            let error = try #require(await loadError(url))
            #expect(error.code == .corruptOrTruncated, "\(error)")
            #expect(error.message.contains("mov"))
        }
    }

    @Test func corruptHeader() async throws {
        // Overwrite the moov box's contents with noise, keeping the file's size and start.
        var bytes = try Data(contentsOf: TestFiles.fixture("hevc_main10_dolbyvision84_hlg_iphone14pro.mov"))
        let moov = try #require(bytes.range(of: Data("moov".utf8)))
        var generator = SystemRandomNumberGenerator()
        for i in moov.upperBound..<min(moov.upperBound + 4000, bytes.count) { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
        try await withTemporaryFile("corrupt.mov", bytes) { url in
            let error = try #require(await loadError(url))
            #expect(error.code == .corruptOrTruncated || error.code == .noTracks, "\(error)")
        }
    }

    @Test func directoryIsNotAFile() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let error = try #require(await loadError(dir))
        #expect(error.code == .notARegularFile)
    }

    @Test(.disabled(if: getuid() == 0, "root reads every file, so permission cannot be denied"))
    func unreadableFile() async throws {
        try await withTemporaryFile("locked.mp4", Data([0, 1, 2])) { url in
            try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: url.path)
            let error = try #require(await loadError(url))
            #expect(error.code == .permissionDenied)
        }
    }
}

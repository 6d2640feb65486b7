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
        // A fixed linear congruential sequence, so every run corrupts the same bytes.
        var seed: UInt32 = 0x5EED_1234
        for i in moov.upperBound..<min(moov.upperBound + 4000, bytes.count) {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            bytes[i] = UInt8(truncatingIfNeeded: seed >> 24)
        }
        try await withTemporaryFile("corrupt.mov", bytes) { url in
            let error = try #require(await loadError(url))
            // With this sequence FFmpeg opens the file but finds no stream in the noise (measured: noTracks;
            // other seeds give corruptOrTruncated, which is why the random version accepted both).
            #expect(error.code == .noTracks, "\(error)")
            #expect(error.path == url.path, "\(error)")
        }
    }

    @Test func directoryIsNotAFile() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let error = try #require(await loadError(dir))
        #expect(error.code == .notARegularFile)
    }

    /// A FIFO or a device reads as 0 bytes long; it is said to be no regular file, not an empty one.
    @Test func fifoAndDeviceAreNotRegularFiles() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("pipe.mp4")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        for (url, kind) in [(fifo, "a FIFO (named pipe)"), (URL(fileURLWithPath: "/dev/zero"), "a character device")] {
            let error = try #require(await loadError(url))
            #expect(error.code == .notARegularFile, "\(error)")
            #expect(error.message.contains("is \(kind), not a regular file"), "\(error)")
        }
    }

    /// As root, `unreadableFile` cannot deny anything: the same load runs in `vaf info` as the
    /// unprivileged user nobody (uid 65534), which cannot read a mode-000 file.
    @Test(.enabled(if: getuid() == 0, "runs as root only; unreadableFile covers other users"))
    func unreadableFileForAnUnprivilegedUser() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dir.path)
        let url = dir.appendingPathComponent("locked.mp4")
        try Data([0, 1, 2]).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: url.path)
        let vaf = TestFiles.packageRoot.appendingPathComponent(".build/debug/vaf").path
        try #require(FileManager.default.isExecutableFile(atPath: vaf), "vaf is not built")
        let result = try run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", vaf, "info", "--json", url.path])
        #expect(result.status == 1)
        // One JSON object per line.
        let rows = try String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        let error = try #require(rows.first?["error"] as? [String: Any], "\(rows)")
        #expect(error["code"] as? String == "permissionDenied", "\(error)")
        #expect((error["message"] as? String)?.hasPrefix("\(url.path): permission denied") == true, "\(error)")
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

import ChildProcess
import Foundation
import Testing

/// Runs the built `vaf` binary as a user would.
enum Vaf {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `vaf` binary built beside this test bundle.
    static var binary: String {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("vaf").path
        if FileManager.default.isExecutableFile(atPath: besideTests) { return besideTests }
        return packageRoot.appendingPathComponent(".build/debug/vaf").path
    }

    static func fixture(_ name: String) -> String {
        packageRoot.appendingPathComponent("Tests/VAFoundationTests/Fixtures/\(name)").path
    }

    /// Exit status, stdout and stderr of `vaf arguments…`.
    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try run(executable: binary, arguments)
    }

    /// The objects of JSON-lines output (`--json`), one per line, in order.
    static func jsonLines(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
    }

    /// Exit status, stdout and stderr of any program.
    static func run(executable: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess.run(executable, arguments, timeLimit: 600)
        return (child.shellStatus, child.stdout, child.stderr)
    }
}

@Suite struct InfoCommandTests {
    @Test func jsonForARotatedClip() throws {
        let result = try Vaf.run(["info", "--json", Vaf.fixture("h264_aac_iphone6_rot90_gps_metadata.mov")])
        #expect(result.status == 0)
        let files = try Vaf.jsonLines(result.stdout)
        #expect(files.count == 1)
        let file = files[0]
        #expect(file["container"] as? String == "mov,mp4,m4a,3gp,3g2,mj2")
        #expect(abs((file["durationSeconds"] as? Double ?? 0) - 4.0017) < 0.001)
        let tracks = try #require(file["tracks"] as? [[String: Any]])
        let video = try #require(tracks.first { $0["mediaType"] as? String == "video" })
        #expect(video["trackID"] as? Int == 2)
        #expect(video["codec"] as? String == "h264")
        #expect(video["profile"] as? String == "Baseline")
        #expect(video["width"] as? Int == 568 && video["height"] as? Int == 320)
        #expect(video["displayWidth"] as? Int == 320 && video["displayHeight"] as? Int == 568)
        #expect(video["rotation"] as? Int == 90)
        #expect(video["mirrored"] as? Bool == false)
        #expect(video["variableFrameRate"] as? Bool == false)
        #expect(video["pixelFormat"] as? String == "yuv420p")
        #expect(video["bitDepth"] as? Int == 8)
        let audio = try #require(tracks.first { $0["mediaType"] as? String == "audio" })
        #expect(audio["sampleRate"] as? Int == 44100)
        #expect(audio["channels"] as? Int == 1)
        #expect(audio["channelLayout"] as? String == "mono")
        #expect(audio["width"] == nil, "video keys only on video tracks")
        let metadata = try #require(file["metadata"] as? [String: String])
        #expect(metadata["com.apple.quicktime.model"] == "iPhone 6")
    }

    @Test func oneBadFileAmongGoodOnesFailsTheRunButReportsTheRest() throws {
        let good = Vaf.fixture("vp9_profile2_10bit_240p.webm")
        let missing = "/nonexistent/clip.mp4"
        let result = try Vaf.run(["info", "--json", good, missing, Vaf.fixture("hevc_main10_dolbyvision84_hlg_iphone14pro.mov")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(missing): no such file"))
        #expect(result.stderr.split(separator: "\n").count == 1, "one line per failed file")
        let files = try Vaf.jsonLines(result.stdout)
        #expect(files.count == 3)
        #expect((files[1]["error"] as? [String: Any])?["code"] as? String == "fileNotFound")
        #expect(files[0]["error"] == nil && files[2]["error"] == nil)
    }

    @Test func readableSummary() throws {
        let result = try Vaf.run(["info", Vaf.fixture("hevc_main10_dolbyvision84_hlg_iphone14pro.mov")])
        #expect(result.status == 0)
        #expect(result.stdout.contains("hevc (Main 10), 1280x720 → 720x1280 (rotate 90°)"))
        #expect(result.stdout.contains("10-bit yuv420p10le"))
    }

    @Test func noFilesIsAUsageError() throws {
        let result = try Vaf.run(["info"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("Missing expected argument"))
    }
}

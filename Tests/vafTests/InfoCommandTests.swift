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

    /// The first video stream's side data as ffprobe reports it: the oracle for HDR metadata.
    static func ffprobeSideData(_ path: String) throws -> [[String: Any]] {
        let probe = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                                 "stream_side_data", "-of", "json", path])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])
        let streams = try #require(json["streams"] as? [[String: Any]])
        return streams.first?["side_data_list"] as? [[String: Any]] ?? []
    }

    /// ffprobe's "num/den" as a number.
    static func ratio(_ value: Any?) -> Double? {
        guard let text = value as? String else { return nil }
        let parts = text.split(separator: "/").compactMap { Double($0) }
        return parts.count == 2 && parts[1] != 0 ? parts[0] / parts[1] : nil
    }

    @Test func dolbyVisionConfigurationOfTheIPhoneClip() throws {
        let path = Vaf.fixture("hevc_main10_dolbyvision84_hlg_iphone14pro.mov")
        let oracle = try #require(try Self.ffprobeSideData(path).first { $0["side_data_type"] as? String == "DOVI configuration record" })
        let result = try Vaf.run(["info", "--json", path])
        #expect(result.status == 0)
        // JSON lines: one object per file.
        let files = result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let tracks = try #require(files.first?["tracks"] as? [[String: Any]])
        let video = try #require(tracks.first { $0["mediaType"] as? String == "video" })
        let dv = try #require(video["dolbyVision"] as? [String: Any])
        #expect(dv["profile"] as? Int == oracle["dv_profile"] as? Int)
        #expect(dv["level"] as? Int == oracle["dv_level"] as? Int)
        #expect(dv["versionMajor"] as? Int == oracle["dv_version_major"] as? Int)
        #expect(dv["hasRPU"] as? Bool == ((oracle["rpu_present_flag"] as? Int) == 1))
        #expect(dv["hasEnhancementLayer"] as? Bool == ((oracle["el_present_flag"] as? Int) == 1))
        #expect(dv["hasBaseLayer"] as? Bool == ((oracle["bl_present_flag"] as? Int) == 1))
        #expect(dv["baseLayerCompatibilityID"] as? Int == oracle["dv_bl_signal_compatibility_id"] as? Int)
        // The iPhone clip has no mastering display or content light level: null, not made up.
        #expect(video["masteringDisplay"] is NSNull && video["contentLightLevel"] is NSNull)
        let text = try Vaf.run(["info", path])
        #expect(text.stdout.contains("Dolby Vision 8.4 (profile 8, level 2, RPU+BL, base layer compatible: HLG)"), "\(text.stdout)")
    }

    @Test func masteringDisplayAndContentLightOfAnHDR10Clip() throws {
        let path = Vaf.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/media/av1_main10_hdr10_1080p60_aac.mp4").path
        try #require(FileManager.default.fileExists(atPath: path), "CI always has ../shared/media; missing: \(path)")
        let sideData = try Self.ffprobeSideData(path)
        let mastering = try #require(sideData.first { $0["side_data_type"] as? String == "Mastering display metadata" })
        let light = try #require(sideData.first { $0["side_data_type"] as? String == "Content light level metadata" })
        let result = try Vaf.run(["info", "--json", path])
        // JSON lines: one object per file.
        let files = result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let tracks = try #require(files.first?["tracks"] as? [[String: Any]])
        let video = try #require(tracks.first { $0["mediaType"] as? String == "video" })
        let m = try #require(video["masteringDisplay"] as? [String: Any])
        for (key, x, y) in [("red", "red_x", "red_y"), ("green", "green_x", "green_y"), ("blue", "blue_x", "blue_y"),
                            ("whitePoint", "white_point_x", "white_point_y")] {
            let xy = try #require(m[key] as? [Double])
            #expect(abs(xy[0] - (Self.ratio(mastering[x]) ?? -1)) < 1e-6 && abs(xy[1] - (Self.ratio(mastering[y]) ?? -1)) < 1e-6, "\(key)")
        }
        #expect(abs((m["maxLuminance"] as? Double ?? -1) - (Self.ratio(mastering["max_luminance"]) ?? -2)) < 1e-6)
        #expect(abs((m["minLuminance"] as? Double ?? -1) - (Self.ratio(mastering["min_luminance"]) ?? -2)) < 1e-6)
        let c = try #require(video["contentLightLevel"] as? [String: Any])
        #expect(c["maxContentLightLevel"] as? Int == light["max_content"] as? Int)
        #expect(c["maxFrameAverageLightLevel"] as? Int == light["max_average"] as? Int)
        #expect(video["dolbyVision"] is NSNull)
        let text = try Vaf.run(["info", path])
        #expect(text.stdout.contains("MaxCLL \(light["max_content"] as? Int ?? -1) nits, MaxFALL \(light["max_average"] as? Int ?? -1) nits"), "\(text.stdout)")
        #expect(text.stdout.contains("mastering display R(0.678,0.322) G(0.245,0.703) B(0.138,0.052) WP(0.3127,0.3290)"), "\(text.stdout)")
    }

    @Test func noFilesIsAUsageError() throws {
        let result = try Vaf.run(["info"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("Missing expected argument"))
    }
}

@Suite struct VersionCommandTests {
    @Test func versionNamesTheReleaseAndTheFFmpegLibraries() throws {
        let result = try Vaf.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("vaf ") && result.stdout.contains("libavcodec 59."), "\(result.stdout)")
    }
}

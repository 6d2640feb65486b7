import Foundation
import Testing
import VATestSupport

/// The profile/entrypoint lines of vainfo's output, with whitespace normalised
/// (published copies often turn vainfo's tab into spaces).
func profileEntrypointLines(_ text: String) -> [String] {
    text.split(separator: "\n").compactMap { line in
        let t = line.trimmingCharacters(in: .whitespaces)
        guard t.hasPrefix("VAProfile"), let colon = t.firstIndex(of: ":") else { return nil }
        let profile = t[..<colon].trimmingCharacters(in: .whitespaces)
        let entrypoint = t[t.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        return profile + " : " + entrypoint
    }
}

@Suite("SoftVA personalities, seen by vainfo")
struct PersonalityTests {
    @Test("Without a profile, vainfo lists SoftVA's native JPEG, H.264 and VPP entrypoints")
    func nativePersonality() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let r = try env.run(Tools.vainfo, ["--display", "x11"])
        #expect(r.succeeded, "vainfo: \(r.stderr)")
        #expect(r.stdout.contains("vainfo: Driver version: SoftVA CPU driver"))
        #expect(profileEntrypointLines(r.stdout) == [
            "VAProfileJPEGBaseline : VAEntrypointVLD",
            "VAProfileJPEGBaseline : VAEntrypointEncPicture",
            "VAProfileH264ConstrainedBaseline : VAEntrypointVLD",
            "VAProfileH264ConstrainedBaseline : VAEntrypointEncSlice",
            "VAProfileH264Main : VAEntrypointVLD",
            "VAProfileH264Main : VAEntrypointEncSlice",
            "VAProfileH264High : VAEntrypointVLD",
            "VAProfileH264High : VAEntrypointEncSlice",
            "VAProfileNone : VAEntrypointVideoProc",
        ])
    }

    @Test("With the Tiger Lake profile, vainfo prints the real device's vendor and profile list")
    func tigerLake() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let r = try env.run(Tools.vainfo, ["--display", "x11"],
                            options: SoftVAOptions(profile: Fixtures.path("intel-ihd-tigerlake.profile")))
        #expect(r.succeeded, "vainfo: \(r.stderr)")
        let real = try String(contentsOfFile: Fixtures.tigerLakeVainfo, encoding: .utf8)
        let expected = profileEntrypointLines(real)
        #expect(expected.count == 55)
        #expect(profileEntrypointLines(r.stdout) == expected)
        #expect(r.stdout.contains("vainfo: Driver version: Intel iHD driver for Intel(R) Gen Graphics - 22.3.1 ()"))
    }

    @Test("An init-failure profile makes vaInitialize fail with its status, without a crash")
    func initFailure() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let r = try env.run(Tools.vainfo, ["--display", "x11"],
                            options: SoftVAOptions(profile: Fixtures.path("i965-alderlake-init-failure.profile")))
        #expect(!r.signalled)
        #expect(r.status != 0)
        #expect(r.stderr.contains("init failed"))
        #expect(r.stderr.contains("vaInitialize failed with error code -1 (unknown libva error)"))
    }

    @Test("A personality's profile SoftVA cannot run (HEVC) fails at vaCreateContext, and ffmpeg falls back")
    func unsupportedProfileFailsCleanly() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        // A short HEVC (Main) clip from the real picture, made by libx265.
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-loop", "1", "-i", Fixtures.picture1080p,
                                      "-frames:v", "3", "-vf", "scale=320:180", "-pix_fmt", "yuv420p",
                                      "-c:v", "libx265", "-x265-params", "log-level=error", "-y", tmp.file("hevc.mp4")])
        let counters = tmp.file("counters.txt")
        let r = try env.run(Tools.ffmpeg, [
            "-hide_banner", "-loglevel", "error", "-init_hw_device", "vaapi=va:\(env.display.name)",
            "-hwaccel", "vaapi", "-hwaccel_device", "va", "-hwaccel_output_format", "vaapi",
            "-i", tmp.file("hevc.mp4"), "-an", "-f", "framemd5", "-",
        ], options: SoftVAOptions(profile: Fixtures.path("intel-ihd-tigerlake.profile"), countersPath: counters))
        #expect(!r.signalled)
        #expect(r.stderr.contains("Failed to create decode context: 12 (the requested VAProfile is not supported)"))
        // The fallback is a real decode: ffmpeg exits 0 with every frame, each identical to its own
        // software decode of the clip, and the device decoded nothing.
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        let software = try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-i", tmp.file("hevc.mp4"),
                                                     "-an", "-f", "framemd5", "-"])
        let frameHashes = { (text: String) in text.split(separator: "\n").filter { !$0.hasPrefix("#") } }
        #expect(frameHashes(software.stdout).count == 3)
        #expect(frameHashes(r.stdout) == frameHashes(software.stdout))
        let c = try SoftVACounters(path: counters)
        #expect(c["decodes"] == 0)
    }

    @Test("The Tiger Lake personality runs the H.264 decode the real device lists")
    func tigerLakeDecodesH264() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-loop", "1", "-i", Fixtures.picture1080p,
                                      "-frames:v", "3", "-vf", "scale=320:180", "-pix_fmt", "yuv420p",
                                      "-c:v", "libx264", "-y", tmp.file("h264.mp4")])
        let counters = tmp.file("counters.txt")
        let r = try env.run(Tools.ffmpeg, [
            "-hide_banner", "-loglevel", "error", "-init_hw_device", "vaapi=va:\(env.display.name)",
            "-hwaccel", "vaapi", "-hwaccel_device", "va", "-hwaccel_output_format", "vaapi",
            "-i", tmp.file("h264.mp4"), "-frames:v", "3", "-an", "-f", "null", "-",
        ], options: SoftVAOptions(profile: Fixtures.path("intel-ihd-tigerlake.profile"), countersPath: counters))
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        let c = try SoftVACounters(path: counters)
        #expect(c.personality == "intel-ihd-tigerlake")
        #expect(c["h264_decodes"] == 3)
        #expect(c["failed_operations"] == 0)
    }
}

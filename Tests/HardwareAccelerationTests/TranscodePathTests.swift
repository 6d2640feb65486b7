import Foundation
import Testing
import VATestSupport

/// `vaf transcode --dry-run --hw …` on SoftVA impersonating real devices picks the paths those
/// devices would run: the decision is taken from the live probe, as on the real machine.
@Suite(.serialized) struct TranscodePathTests {
    struct Plan: Decodable {
        var status: String
        var error: String?
        var path: String?
        var pathReason: String?
        var encoder: String?
    }

    /// A 1080p30 H.264 clip (0.2 s) made by ffmpeg's test source: only its header is read.
    static let h264Source: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-paths-h264-1080p.mp4").path
        if !FileManager.default.fileExists(atPath: path) {
            _ = try? ProcessResult.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30",
                                                            "-t", "0.2", "-c:v", "libx264", "-pix_fmt", "yuv420p", path])
        }
        return path
    }()

    static func plan(profile: String?, _ arguments: [String]) throws -> (status: Int32, plan: Plan?, stderr: String) {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let options = SoftVAOptions(profile: profile.map { Fixtures.profilesDirectory.appendingPathComponent($0).path })
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-paths-\(UUID().uuidString)").path
        let result = try VafBinary.run(["transcode", h264Source, "--dry-run", "--json", "--device", env.display.name, "--output-dir", out] + arguments,
                                       environment: env.environment(options))
        return (result.status, firstPlan(result.stdout), result.stderr)
    }

    /// The first JSON line of `vaf transcode --json`.
    static func firstPlan(_ stdout: String) -> Plan? {
        stdout.split(separator: "\n").first.flatMap { try? JSONDecoder().decode(Plan.self, from: Data($0.utf8)) }
    }

    @Test func tigerLakeTakesH264ToHEVC720pFullyInHardware() throws {
        let (status, plan, stderr) = try Self.plan(profile: "intel-ihd-tigerlake.profile", ["--preset", "HEVC1280x720", "--hw", "auto"])
        #expect(status == 0, "\(stderr)")
        #expect(plan?.path == "hardware")
        #expect(plan?.encoder == "hevc_vaapi (hardware)")
        #expect(plan?.pathReason?.contains("VPP scaling 1920x1080 → 1280x720") == true, "\(plan?.pathReason ?? "")")
    }

    @Test func tigerLakeEncodesAV1InSoftwareBecauseFFmpeg51HasNoVAAPIEncoder() throws {
        let (status, plan, stderr) = try Self.plan(profile: "intel-ihd-tigerlake.profile",
                                                   ["--preset", "1280x720", "--video-codec", "av1", "--hw", "auto"])
        #expect(status == 0, "\(stderr)")
        #expect(plan?.encoder?.hasSuffix("(software)") == true, "\(plan?.encoder ?? "")")
        #expect(plan?.path == "hybrid", "H.264 is still decoded on the device")
        #expect(plan?.pathReason?.contains("no AV1 encode entry point") == true, "\(plan?.pathReason ?? "")")
    }

    @Test func arcUsesTheLowPowerEncoderItOnlyHas() throws {
        let (status, plan, stderr) = try Self.plan(profile: "intel-ihd-arc-dg2.profile", ["--preset", "1280x720", "--hw", "require"])
        #expect(status == 0, "\(stderr)")
        #expect(plan?.path == "hardware")
        #expect(plan?.pathReason?.contains("low_power=1") == true, "\(plan?.pathReason ?? "")")
    }

    @Test func hybridAndOffAreHonoured() throws {
        let hybrid = try Self.plan(profile: "intel-ihd-tigerlake.profile", ["--preset", "1280x720", "--hw", "hybrid"])
        #expect(hybrid.plan?.path == "hybrid")
        #expect(hybrid.plan?.encoder == "h264_vaapi (hardware)", "software decode, upload, hardware encode")
        let off = try Self.plan(profile: "intel-ihd-tigerlake.profile", ["--preset", "1280x720", "--hw", "off"])
        #expect(off.plan?.path == "software")
        #expect(off.plan?.encoder == "libx264 (software)")
    }

    @Test func softVAsOwnPersonalityTakesH264ToH264FullyInHardware() throws {
        let (status, plan, stderr) = try Self.plan(profile: nil, ["--preset", "1280x720", "--hw", "require"])
        #expect(status == 0, "\(stderr)")
        #expect(plan?.path == "hardware", "\(plan?.pathReason ?? "")")
        #expect(plan?.encoder == "h264_vaapi (hardware)")
    }

    @Test func requireFailsWithOneLineWhereTheDeviceCannotHelp() throws {
        // SoftVA with JPEG and VPP only: nothing of an H.264 → H.264 job can run on it.
        let (status, plan, _) = try Self.plan(profile: "softva-jpeg-vpp.profile", ["--preset", "1280x720", "--hw", "require"])
        #expect(status == 75, "a device that cannot help here is a temporary failure: another node's may")
        #expect(plan?.status == "failed")
        #expect(plan?.error?.contains("--hw require") == true, "\(plan?.error ?? "")")
        #expect(plan?.error?.contains("\n") == false)
        let auto = try Self.plan(profile: "softva-jpeg-vpp.profile", ["--preset", "1280x720", "--hw", "auto"])
        #expect(auto.status == 0, "auto never fails where software succeeds")
        #expect(auto.plan?.path == "software")
    }

    @Test func aMissingDeviceIsSoftwareUnderAutoAndAnErrorUnderRequire() throws {
        let missing = "/dev/dri/renderD250"
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-paths-\(UUID().uuidString)").path
        let auto = try VafBinary.run(["transcode", Self.h264Source, "--dry-run", "--json", "--device", missing, "--output-dir", out])
        let autoPlan = Self.firstPlan(auto.stdout)
        #expect(autoPlan?.path == "software")
        #expect(autoPlan?.pathReason?.contains(missing) == true, "\(autoPlan?.pathReason ?? "")")
        let require = try VafBinary.run(["transcode", Self.h264Source, "--dry-run", "--json", "--hw", "require", "--device", missing, "--output-dir", out])
        #expect(require.status == 75)
        #expect(require.stderr.contains(missing))
    }
}

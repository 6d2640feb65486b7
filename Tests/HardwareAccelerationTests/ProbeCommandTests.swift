import Foundation
import HardwareAcceleration
import Testing
import VATestSupport

/// Runs the built `vaf` binary, the way a user would.
enum VafBinary {
    /// `vaf` beside the test runner (the build's products directory), else under `.build/debug`.
    static let url: URL? = {
        var candidates: [URL] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("vaf"))
        }
        candidates.append(Fixtures.packageRoot.appendingPathComponent(".build/debug/vaf"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        let binary = try #require(url, "vaf is not built")
        // An empty value removes the variable (libva treats an empty LIBVA_DRIVER_NAME as a driver called "").
        let merged = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }.filter { !$0.value.isEmpty }
        let child = try ProcessResult.run(binary.path, arguments, environment: merged)
        return Result(status: child.status, stdout: child.stdout, stderr: child.stderr)
    }

    static func report(_ arguments: [String], environment: [String: String] = [:]) throws -> ProbeReport {
        let result = try run(arguments + ["--json"], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(ProbeReport.self, from: Data(result.stdout.utf8))
    }
}

@Suite(.enabled(if: VafBinary.url != nil, "the vaf binary is not built"))
struct ProbeCommandTests {
    @Test
    func fromVainfoJSONCarriesTheConfigsAndVerdicts() throws {
        let path = try Fixtures.requireVainfoDirectory().appendingPathComponent("intel-ihd-arc-dg2.txt").path
        let report = try VafBinary.report(["probe", "--from-vainfo", path])
        #expect(report.schemaVersion == 1)
        #expect(report.source == "vainfo")
        #expect(report.hardwareAvailable)
        let device = try #require(report.devices.first)
        #expect(device.capabilities?.configs.count == 41)
        #expect(device.capabilities?.driver == "iHD")
        #expect(device.verdicts.first { $0.job == "AV1 encode" }?.path == .software)
        #expect(report.software == nil, "another machine's capture carries none of this machine's codecs")
        #expect(device.capabilities == (try Fixtures.capture("intel-ihd-arc-dg2.txt").capabilities))
        #expect(device.verdicts.allSatisfy { !$0.description.contains("not reported") }, "\(device.verdicts)")
    }

    @Test
    func softwareCodecsAreListedOnlyWithCodecs() throws {
        let plain = try VafBinary.run(["probe", "--json"])
        #expect(plain.status == 0, "\(plain.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(plain.stdout.utf8)) as? [String: Any])
        #expect(object["software"] == nil, "the default JSON leaves the ~700 codec names out")
        let listed = try VafBinary.report(["probe", "--codecs"])
        #expect(listed.software?.encoders.contains("libx264") == true)
        #expect(listed.software?.decoders.contains("h264") == true)
        let text = try VafBinary.run(["probe", "--codecs"])
        #expect(text.stdout.contains("  encoders: ") && text.stdout.contains(" libx264 "), "\(text.stdout)")
        let capture = try Fixtures.requireVainfoDirectory().appendingPathComponent("intel-ihd-arc-dg2.txt").path
        let refused = try VafBinary.run(["probe", "--from-vainfo", capture, "--codecs"])
        #expect(refused.status == 64 && refused.stderr.contains("--codecs") && refused.stderr.contains("--from-vainfo"), "\(refused.stderr)")
    }

    @Test
    func fromVainfoTextShowsTheTableAndVerdicts() throws {
        let path = try Fixtures.requireVainfoDirectory().appendingPathComponent("intel-ihd-arc-dg2.txt").path
        let result = try VafBinary.run(["probe", "--from-vainfo", path])
        #expect(result.status == 0)
        #expect(result.stdout.contains("H.264   8-bit 4:2:0"))
        #expect(result.stdout.contains("LP only"))
        #expect(result.stdout.contains("AV1 encode: software (device lists AV1 encode (EncSliceLP) but FFmpeg 5.1 has no VA-API AV1 encoder)"))
        #expect(!result.stdout.contains("software (libavcodec)"), "this machine's codec line is not appended to another machine's report")
        #expect(!result.stdout.contains("not reported"))
    }

    @Test
    func failingVainfoIsDiagnosedAndRequireHardwareFails() throws {
        let path = try Fixtures.requireVainfoDirectory().appendingPathComponent("failing-nvidia-vagetdrivernames.txt").path
        let report = try VafBinary.report(["probe", "--from-vainfo", path])
        #expect(!report.hardwareAvailable)
        #expect(report.devices.first?.diagnosis?.kind == .driverUnknown)
        let strict = try VafBinary.run(["probe", "--from-vainfo", path, "--require-hardware"])
        #expect(strict.status == 69)
        #expect(strict.stdout.contains("fix: set LIBVA_DRIVER_NAME"))
    }

    @Test
    func emitProfileMatchesTheCommittedProfile() throws {
        let path = try Fixtures.requireVainfoDirectory().appendingPathComponent("intel-ihd-tigerlake.txt").path
        let result = try VafBinary.run(["probe", "--from-vainfo", path, "--emit-profile"])
        let committed = try String(contentsOf: Fixtures.profilesDirectory.appendingPathComponent("intel-ihd-tigerlake.profile"),
                                   encoding: .utf8)
        #expect(result.status == 0)
        #expect(result.stdout == committed)
    }

    @Test func unreadableOrWrongFilesGiveAOneLineErrorNamingTheFile() throws {
        let missing = try VafBinary.run(["probe", "--from-vainfo", "/nonexistent/vainfo.txt"])
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("Error: /nonexistent/vainfo.txt: cannot read"))
        #expect(missing.stderr.split(separator: "\n").count == 1)

        let junk = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-junk-\(UUID().uuidString).txt")
        try Data("this is not vainfo output\n".utf8).write(to: junk)
        defer { try? FileManager.default.removeItem(at: junk) }
        let wrong = try VafBinary.run(["probe", "--from-vainfo", junk.path])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.hasPrefix("Error: \(junk.path): no vainfo profile list"))
        #expect(wrong.stderr.split(separator: "\n").count == 1)
    }

    @Test func helpPinsTheUsageLine() throws {
        let help = try VafBinary.run(["probe", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains(
            "USAGE: vaf probe [--device <path>] [--json] [--all] [--codecs] [--from-vainfo <file>] [--emit-profile] [--require-hardware]"))
        for option in ["--device <path>", "--json", "--all", "--codecs", "--from-vainfo <file>", "--emit-profile", "--require-hardware"] {
            #expect(help.stdout.contains("  \(option) "), "\(option) has no help line")
        }
    }

    @Test(arguments: [
        (["--emit-profile"], "--emit-profile needs --from-vainfo FILE"),
        (["--device", ":1", "--from-vainfo", "x.txt"], "--device and --from-vainfo cannot be combined"),
        (["--from-vainfo", "x.txt", "--emit-profile", "--json"], "--emit-profile and --json cannot be combined"),
    ])
    func optionsThatCannotWorkTogetherAreRefused(arguments: [String], message: String) throws {
        let result = try VafBinary.run(["probe"] + arguments)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("Error: \(message)"))
    }

    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/dev/dri"), "this machine has /dev/dri"))
    func noDeviceIsExplainedAndExitsZeroUnlessHardwareIsRequired() throws {
        let result = try VafBinary.run(["probe"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("no /dev/dri"))
        #expect(result.stdout.contains("verdict: software only"))
        #expect(try VafBinary.run(["probe", "--require-hardware"]).status == 69)
        let report = try VafBinary.report(["probe"])
        #expect(report.devices.first?.diagnosis?.kind == .noDeviceDirectory)
    }
}

/// Live libva on an X11 display from Xvfb: no GPU is needed to reach libva's driver loading, so the
/// driver-missing, driver-unknown and driver-init-failed paths run against the real libva.
@Suite(.serialized, .enabled(if: VafBinary.url != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb"),
                             "needs the vaf binary and Xvfb"))
final class X11ProbeTests {
    /// Each test gets its own server on its own display, so one never waits on another's shutdown.
    let server: VirtualDisplay
    var display: String { server.name }

    init() throws {
        server = try VirtualDisplay.start(firstNumber: 150)
    }

    deinit {
        server.stop()
    }

    @Test func withoutADriverNameLibvaCannotPickOne() throws {
        let report = try VafBinary.report(["probe", "--device", display], environment: ["LIBVA_DRIVER_NAME": "", "LIBVA_DRIVERS_PATH": ""])
        #expect(report.devices.first?.device == display)
        #expect(report.devices.first?.diagnosis?.kind == .driverUnknown)
    }

    @Test func aDriverThatIsNotInstalledNamesItsPackage() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-nodrivers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        let report = try VafBinary.report(["probe", "--device", display],
                                          environment: ["LIBVA_DRIVER_NAME": "radeonsi", "LIBVA_DRIVERS_PATH": empty.path])
        let diagnosis = try #require(report.devices.first?.diagnosis)
        #expect(diagnosis.kind == .driverMissing)
        #expect(diagnosis.remedy == "install mesa-va-drivers")
        #expect(diagnosis.log.contains { $0.contains("Trying to open \(empty.path)/radeonsi_drv_video.so") })
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/dri/i965_drv_video.so"),
                   "i965-va-driver is not installed"))
    func aForcedDriverWithoutItsGPUFailsToInitialise() throws {
        let report = try VafBinary.report(["probe", "--device", display],
                                          environment: ["LIBVA_DRIVER_NAME": "i965", "LIBVA_DRIVERS_PATH": "/usr/lib/x86_64-linux-gnu/dri"])
        let diagnosis = try #require(report.devices.first?.diagnosis)
        #expect(diagnosis.kind == .driverInitFailed)
        #expect(diagnosis.remedy?.contains("LIBVA_DRIVER_NAME=i965") == true)
    }
}

import Foundation
@testable import HardwareAcceleration
import VATestSupport
import Testing

struct DeviceDiscoveryTests {
    /// A fresh temporary directory standing in for /dev/dri.
    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-dri-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func missingDirectoryMeansNoGPU() {
        let root = "/nonexistent-\(UUID().uuidString)/dri"
        let reports = HardwareProbe(discovery: DeviceDiscovery(root: root)).run(device: nil)
        #expect(reports.count == 1)
        #expect(reports.first?.device == root)
        #expect(reports.first?.diagnosis?.kind == .noDeviceDirectory)
        #expect(reports.first?.diagnosis?.message.contains("exposes no GPU") == true)
        #expect(reports.first?.verdicts.allSatisfy { $0.path == .software } == true)
    }

    @Test func nvidiaWithoutModesetIsNamed() throws {
        let sys = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: sys) }
        let root = "/nonexistent-\(UUID().uuidString)/dri"
        let modules = sys.appendingPathComponent("module")
        try FileManager.default.createDirectory(at: modules.appendingPathComponent("nvidia"), withIntermediateDirectories: true)
        func remedy() -> String? {
            HardwareProbe(discovery: DeviceDiscovery(root: root, sysRoot: sys.path, open: { _ in -ENOENT })).run(device: nil)
                .first?.diagnosis?.remedy
        }
        #expect(remedy()?.contains("nvidia_drm is not") == true)
        let parameters = modules.appendingPathComponent("nvidia_drm/parameters")
        try FileManager.default.createDirectory(at: parameters, withIntermediateDirectories: true)
        try Data("N\n".utf8).write(to: parameters.appendingPathComponent("modeset"))
        #expect(remedy()?.hasPrefix("nvidia_drm is loaded with modeset=0") == true)
        try Data("Y\n".utf8).write(to: parameters.appendingPathComponent("modeset"))
        #expect(remedy()?.contains("exposes no DRM nodes") == true)
    }

    @Test func directoryWithoutRenderNodes() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = FileManager.default.createFile(atPath: dir.appendingPathComponent("card0").path, contents: nil)
        let reports = HardwareProbe(discovery: DeviceDiscovery(root: dir.path)).run(device: nil)
        #expect(reports.first?.diagnosis?.kind == .noRenderNode)
    }

    @Test func renderNodesAreListedInNumericOrder() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["renderD129", "card0", "renderD128", "renderD1000", "by-path"] {
            _ = FileManager.default.createFile(atPath: dir.appendingPathComponent(name).path, contents: nil)
        }
        let nodes = try DeviceDiscovery(root: dir.path).renderNodes()
        #expect(nodes == ["renderD128", "renderD129", "renderD1000"].map { dir.appendingPathComponent($0).path })
    }

    @Test func permissionDeniedNamesTheOwningGroup() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let node = dir.appendingPathComponent("renderD128").path
        _ = FileManager.default.createFile(atPath: node, contents: nil)
        // Root may open anything, so the open call is replaced; the group is still read from the node.
        let discovery = DeviceDiscovery(root: dir.path, open: { _ in -EACCES })
        let reports = HardwareProbe(discovery: discovery).run(device: nil)
        let diagnosis = try #require(reports.first?.diagnosis)
        #expect(reports.first?.device == node)
        #expect(diagnosis.kind == .permissionDenied)
        let group = try #require(DeviceDiscovery.groupName(of: node))
        #expect(diagnosis.message == "permission denied opening \(node) (owned by group '\(group)')")
        #expect(diagnosis.remedy?.contains("usermod -aG \(group)") == true)
    }

    @Test(.enabled(if: getuid() != 0, "root can open a mode-000 file"))
    func permissionDeniedOnARealUnreadableNode() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let node = dir.appendingPathComponent("renderD128").path
        _ = FileManager.default.createFile(atPath: node, contents: nil, attributes: [.posixPermissions: 0])
        let reports = HardwareProbe(discovery: DeviceDiscovery(root: dir.path)).run(device: nil)
        #expect(reports.first?.diagnosis?.kind == .permissionDenied)
    }

    /// As root the test above cannot deny anything: `vaf probe` runs as the unprivileged user
    /// nobody (uid 65534) on a mode-000 node, with the real open call.
    @Test(.enabled(if: getuid() == 0, "runs as root only; the test above covers other users"))
    func permissionDeniedOnARealUnreadableNodeForAnUnprivilegedUser() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dir.path)
        let node = dir.appendingPathComponent("renderD128").path
        _ = FileManager.default.createFile(atPath: node, contents: nil, attributes: [.posixPermissions: 0])
        let vaf = try #require(VafBinary.url, "vaf is not built").path
        let child = try ProcessResult.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", vaf, "probe", "--device", node, "--json"])
        #expect(child.status == 0, "\(child.stderr)")
        let report = try JSONDecoder().decode(ProbeReport.self, from: Data(child.stdout.utf8))
        let diagnosis = try #require(report.devices.first?.diagnosis, "\(child.stdout.prefix(400))")
        #expect(diagnosis.kind == .permissionDenied)
        #expect(diagnosis.message == "permission denied opening \(node) (owned by group 'root')")
    }

    @Test func aNamedDeviceThatDoesNotExist() {
        let report = HardwareProbe().probe("/nonexistent/renderD128")
        #expect(report.diagnosis?.kind == .openFailed)
        #expect(report.diagnosis?.message == "cannot open /nonexistent/renderD128: No such file or directory")
    }

    @Test func aFileThatIsNotADRMDeviceIsDiagnosedNotCrashed() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let node = dir.appendingPathComponent("renderD128").path
        _ = FileManager.default.createFile(atPath: node, contents: Data("not a device".utf8))
        let report = HardwareProbe(discovery: DeviceDiscovery(root: dir.path)).probe(node)
        #expect(report.capabilities == nil)
        let diagnosis = try #require(report.diagnosis)
        #expect(diagnosis.kind == .openFailed)
        #expect(diagnosis.message.contains("vaGetDisplayDRM"))
    }

    @Test func anX11DisplayThatIsNotThere() {
        let report = HardwareProbe().probe(":87")
        #expect(report.diagnosis?.kind == .displayUnavailable)
        #expect(report.diagnosis?.message == "cannot open X11 display :87")
    }

    @Test func displayNamesAndPathsAreTold() {
        #expect(VADevice.isX11DisplayName(":99"))
        #expect(VADevice.isX11DisplayName("localhost:1.0"))
        #expect(!VADevice.isX11DisplayName("/dev/dri/renderD128"))
        #expect(!VADevice.isX11DisplayName("./renderD128"))
    }

    @Test func missingDriverNamesTheDebianPackage() {
        let log = ["VA-API version 1.17.0", "User environment variable requested driver 'iHD'",
                   "Trying to open /nowhere/iHD_drv_video.so", "va_openDriver() returns -1"]
        let diagnosis = DeviceDiagnosis.initializationFailure(device: "/dev/dri/renderD128", status: .unknown, log: log,
                                                              driver: nil, driverExists: { _ in false })
        #expect(diagnosis.kind == .driverMissing)
        #expect(diagnosis.message == "the libva driver 'iHD' is not installed (/nowhere/iHD_drv_video.so not found)")
        #expect(diagnosis.remedy?.hasPrefix("install intel-media-va-driver") == true)
        let both = DeviceDiagnosis.initializationFailure(
            device: "/dev/dri/renderD128", status: .unknown,
            log: ["Trying to open /d/iHD_drv_video.so", "Trying to open /d/i965_drv_video.so", "va_openDriver() returns -1"],
            driver: nil, driverExists: { _ in false })
        #expect(both.kind == .driverMissing)
        #expect(both.message == "no libva driver for this GPU is installed (tried /d/iHD_drv_video.so, /d/i965_drv_video.so)")
        #expect(both.remedy == "install intel-media-va-driver (or intel-media-va-driver-non-free for full encode) or i965-va-driver")
        for (driver, package) in [("i965", "i965-va-driver"), ("radeonsi", "mesa-va-drivers"), ("nvidia", "nvidia-vaapi-driver")] {
            #expect(DeviceDiagnosis.debianPackage(forDriver: driver) == package)
        }
    }
}

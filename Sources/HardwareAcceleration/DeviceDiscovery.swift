#if canImport(Glibc)
import Glibc
#endif

/// Finds and opens DRM render nodes, turning each way that can fail into a `DeviceDiagnosis`.
///
/// The directory is injectable (`/dev/dri` in production, a temporary directory in tests), and so is
/// the `open` call, so that "permission denied" can be tested even as root.
public struct DeviceDiscovery: Sendable {
    /// The directory holding the render nodes.
    public var root: String
    /// Opens a node read-write; returns the descriptor, or `-errno`.
    package var open: @Sendable (String) -> Int32
    /// Where kernel module state is read (`/sys`), to explain a missing `/dev/dri` on NVIDIA machines.
    package var sysRoot: String = "/sys"

    public init(root: String = "/dev/dri") {
        self.root = root
        self.open = { path in
            let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
            return fd >= 0 ? fd : -errno
        }
    }

    package init(root: String, sysRoot: String = "/sys", open: @escaping @Sendable (String) -> Int32) {
        self.root = root
        self.sysRoot = sysRoot
        self.open = open
    }

    /// The render nodes in `root` (`renderD128`, `renderD129`, …) in numeric order, as full paths.
    /// The corresponding C function is `opendir`.
    public func renderNodes() throws(DeviceDiagnosis) -> [String] {
        guard let dir = opendir(root) else {
            let code = errno
            if code == ENOENT {
                throw DeviceDiagnosis(
                    kind: .noDeviceDirectory, device: root,
                    message: "no \(root): this machine (or container) exposes no GPU to this process",
                    remedy: nvidiaRemedy()
                        ?? "on a machine with a GPU load its kernel driver; in a container pass the device (docker run --device /dev/dri)")
            }
            throw DeviceDiagnosis(kind: .openFailed, device: root, message: "cannot list \(root): \(String(cString: strerror(code)))")
        }
        defer { closedir(dir) }
        var numbers: [Int] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix("renderD"), let number = Int(name.dropFirst("renderD".count)) { numbers.append(number) }
        }
        guard !numbers.isEmpty else {
            throw DeviceDiagnosis(
                kind: .noRenderNode, device: root, message: "\(root) has no render nodes (renderD128…)",
                remedy: "the GPU's kernel driver may lack render-node support, or the container passes only card nodes")
        }
        let base = root.hasSuffix("/") ? root : root + "/"
        return numbers.sorted().map { "\(base)renderD\($0)" }
    }

    /// For an NVIDIA GPU without DRM nodes: `nvidia_drm` not loaded, or loaded with `modeset=0`
    /// (nvidia-vaapi-driver needs both); `nil` when the NVIDIA kernel module is not loaded at all.
    func nvidiaRemedy() -> String? {
        guard access("\(sysRoot)/module/nvidia", F_OK) == 0 else { return nil }
        guard access("\(sysRoot)/module/nvidia_drm", F_OK) == 0 else {
            return "the NVIDIA driver is loaded but nvidia_drm is not: load it with modeset=1 (modprobe nvidia_drm modeset=1)"
        }
        let modeset = Self.readFirstLine("\(sysRoot)/module/nvidia_drm/parameters/modeset")
        if modeset == "N" || modeset == "0" {
            return "nvidia_drm is loaded with modeset=0: reload it with modeset=1 (nvidia-vaapi-driver needs DRM render nodes)"
        }
        return "the NVIDIA driver is loaded but exposes no DRM nodes to this process; in a container pass /dev/dri"
    }

    /// The first line of a small text file, or `nil`.
    /// The corresponding C functions are `fopen` and `fgets`.
    static func readFirstLine(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).trimmingWhitespace()
    }

    /// Opens `path`, explaining a failure: for "permission denied", names the group that owns the node.
    /// The corresponding C function is `open`.
    public func openNode(_ path: String) throws(DeviceDiagnosis) -> Int32 {
        let result = open(path)
        guard result < 0 else { return result }
        let code = -result
        if code == EACCES || code == EPERM {
            let group = Self.groupName(of: path)
            let owner = group.map { " (owned by group '\($0)')" } ?? ""
            let join = group ?? "render"
            throw DeviceDiagnosis(
                kind: .permissionDenied, device: path, message: "permission denied opening \(path)\(owner)",
                remedy: "add this user to group '\(join)' (sudo usermod -aG \(join) $USER, then log in again); in a container add it with --group-add")
        }
        throw DeviceDiagnosis(kind: .openFailed, device: path, message: "cannot open \(path): \(String(cString: strerror(code)))")
    }

    /// The name of the group owning `path`, or its number when the group database has no name for it.
    /// The corresponding C functions are `stat` and `getgrgid_r`.
    static func groupName(of path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        var group = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 4096)
        let status = getgrgid_r(info.st_gid, &group, &buffer, buffer.count, &result)
        guard status == 0, result != nil, let name = group.gr_name else { return String(info.st_gid) }
        return String(cString: name)
    }
}

/// Why a VA-API device could not be used, in words a user can act on: what went wrong, and what to do.
public struct DeviceDiagnosis: Error, Codable, Equatable, Sendable, CustomStringConvertible {
    /// The kind of problem: an open struct, so new kinds can be added without breaking callers.
    public struct Kind: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The DRI directory (`/dev/dri`) does not exist: no GPU is exposed to this process.
        public static let noDeviceDirectory = Kind(rawValue: "no-dri")
        /// The DRI directory exists but holds no render node.
        public static let noRenderNode = Kind(rawValue: "no-render-node")
        /// The render node exists but this user may not open it.
        public static let permissionDenied = Kind(rawValue: "permission-denied")
        /// The device path could not be opened for another reason (missing, not a device…).
        public static let openFailed = Kind(rawValue: "open-failed")
        /// The X11 display could not be opened.
        public static let displayUnavailable = Kind(rawValue: "display-unavailable")
        /// libva could not work out which driver serves the device.
        public static let driverUnknown = Kind(rawValue: "driver-unknown")
        /// libva knows the driver's name but its `<name>_drv_video.so` is not installed.
        public static let driverMissing = Kind(rawValue: "driver-missing")
        /// The driver loaded but its initialisation failed.
        public static let driverInitFailed = Kind(rawValue: "driver-init-failed")
        /// `vaInitialize` failed for a reason the log does not explain.
        public static let initializeFailed = Kind(rawValue: "initialize-failed")
    }

    public var kind: Kind
    /// The device path or display name, when one was involved.
    public var device: String?
    /// One line saying what went wrong.
    public var message: String
    /// What to do about it, when there is something to do.
    public var remedy: String?
    /// The libva status name (`VA_STATUS_ERROR_UNKNOWN`) when a libva call failed.
    public var status: String?
    /// What libva logged while trying (`Trying to open …`, `… init failed`).
    public var log: [String]

    public init(kind: Kind, device: String?, message: String, remedy: String? = nil, status: String? = nil, log: [String] = []) {
        self.kind = kind
        self.device = device
        self.message = message
        self.remedy = remedy
        self.status = status
        self.log = log
    }

    public var description: String {
        let prefix = device.map { "\($0): " } ?? ""
        return remedy.map { "\(prefix)\(message); \($0)" } ?? "\(prefix)\(message)"
    }
}

extension DeviceDiagnosis {
    /// The Debian package that ships libva driver `driver`, if it is one of the common ones.
    public static func debianPackage(forDriver driver: String) -> String? {
        switch driver {
        case "iHD": "intel-media-va-driver (or intel-media-va-driver-non-free for full encode)"
        case "i965": "i965-va-driver"
        case "radeonsi", "r600", "nouveau", "d3d12", "virtio_gpu": "mesa-va-drivers"
        case "nvidia": "nvidia-vaapi-driver"
        default: nil
        }
    }

    /// Explains a failed `vaInitialize` from its status and what libva logged, the same way for a live
    /// device, a captured `vainfo` output and a device profile's `init-failure` line.
    ///
    /// - Parameters:
    ///   - driverExists: whether the driver library a `Trying to open` line names exists; `nil` when
    ///     that cannot be checked (text captured on another machine).
    public static func initializationFailure(device: String?, status: VAError.Status, log: [String],
                                             driver: String?, driverExists: ((String) -> Bool)? = nil) -> DeviceDiagnosis {
        let statusText = "vaInitialize returned \(status.name)"
        let forced = log.lazy.compactMap { line -> String? in
            guard let range = line.firstRange(of: "requested driver '") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != "'" })
        }.first
        let tried = log.compactMap { line -> String? in
            guard let range = line.firstRange(of: "Trying to open ") else { return nil }
            return String(line[range.upperBound...]).trimmingWhitespace()
        }
        let loaded = log.lazy.compactMap(Self.driverLibraryPath(in:)).last
        let driverName = driver ?? forced ?? (tried.last ?? loaded).map(Self.driverName(fromLibraryPath:))
        let package = driverName.flatMap(debianPackage(forDriver:))
        let errorLine = log.last { $0.contains("init failed") } ?? log.last { $0.hasPrefix("libva error:") } ?? log.last { $0.contains("failed") }

        if log.contains(where: { $0.contains("vaGetDriverNames() failed") || $0.contains("vaGetDriverNameByIndex() failed") }) {
            return DeviceDiagnosis(
                kind: .driverUnknown, device: device,
                message: "libva could not work out which VA driver serves this device (\(statusText))",
                remedy: "set LIBVA_DRIVER_NAME to the driver (nvidia for nvidia-vaapi-driver, iHD or i965 for Intel, radeonsi for AMD)",
                status: status.name, log: log)
        }
        if let errorLine, errorLine.contains("init failed") {
            let name = driverName.map { "the '\($0)' driver" } ?? "the VA driver"
            var remedy: String
            if let forced {
                remedy = "LIBVA_DRIVER_NAME=\(forced) forces a driver that may not support this GPU: unset it or pick the right one"
                if forced == "i965" { remedy += " (Intel Gen11 and newer need iHD from intel-media-va-driver)" }
            } else {
                remedy = "check the driver supports this GPU and that the kernel driver and display stack work"
                let noise = ["XDG_RUNTIME_DIR", "can't connect to X server"]
                if let earlier = log.first(where: { line in line.hasPrefix("error:") && !noise.contains { line.contains($0) } }) {
                    remedy += " (earlier \(earlier))"
                }
            }
            return DeviceDiagnosis(kind: .driverInitFailed, device: device,
                                   message: "\(name) failed to initialise (\(errorLine.strippingLibvaPrefix()))",
                                   remedy: remedy, status: status.name, log: log)
        }
        if !tried.isEmpty, !log.contains(where: { $0.contains("Found init function") }),
           !tried.contains(where: { driverExists?($0) ?? log.contains { $0.contains("dlopen of") } }) {
            // libva tries each candidate in turn (i915 → iHD, then i965); none of them is installed.
            var names: [String] = []
            for path in tried where !names.contains(Self.driverName(fromLibraryPath: path)) {
                names.append(Self.driverName(fromLibraryPath: path))
            }
            let packages = names.compactMap(debianPackage(forDriver:))
            let message = names.count == 1
                ? "the libva driver '\(names[0])' is not installed (\(tried[0]) not found)"
                : "no libva driver for this GPU is installed (tried \(tried.joined(separator: ", ")))"
            return DeviceDiagnosis(
                kind: .driverMissing, device: device, message: message,
                remedy: packages.isEmpty ? "install the VA-API driver for this GPU, or point LIBVA_DRIVERS_PATH at it"
                    : "install \(packages.joined(separator: " or "))",
                status: status.name, log: log)
        }
        let detail = errorLine.map { " (\($0.strippingLibvaPrefix()))" } ?? ""
        return DeviceDiagnosis(kind: .initializeFailed, device: device, message: "\(statusText)\(detail)",
                               remedy: package.map { "check that \($0) matches this GPU" }, status: status.name, log: log)
    }

    /// The first word of `line` that names a driver library (`…/i965_drv_video.so`), if any.
    static func driverLibraryPath(in line: String) -> String? {
        line.split(separator: " ").first { $0.hasSuffix("_drv_video.so") }.map(String.init)
    }

    /// `iHD` from `/usr/lib/x86_64-linux-gnu/dri/iHD_drv_video.so`.
    static func driverName(fromLibraryPath path: String) -> String {
        let file = path.split(separator: "/").last.map(String.init) ?? path
        return file.hasSuffix("_drv_video.so") ? String(file.dropLast("_drv_video.so".count)) : file
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }

    func strippingLibvaPrefix() -> String {
        let text = trimmingWhitespace()
        for prefix in ["libva error: ", "libva info: "] where text.hasPrefix(prefix) {
            return String(text.dropFirst(prefix.count))
        }
        return text
    }
}

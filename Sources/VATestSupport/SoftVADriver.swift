import Foundation

/// Where the built SoftVA driver is, and the libva environment that selects it.
///
/// SwiftPM builds the `softva_drv_video` product as `libsoftva_drv_video.so` next to the test
/// bundle (`.build/<triple>/<configuration>/`). libva opens
/// `$LIBVA_DRIVERS_PATH/${LIBVA_DRIVER_NAME}_drv_video.so`, so the driver name is `libsoftva`.
public struct SoftVADriver: Sendable {
    /// The value for `LIBVA_DRIVER_NAME`.
    public static let driverName = "libsoftva"
    /// The file name SwiftPM gives the dynamic library product.
    public static let fileName = "libsoftva_drv_video.so"

    /// The folder that holds ``fileName``: the value for `LIBVA_DRIVERS_PATH`.
    public let directory: String

    public var path: String { directory + "/" + Self.fileName }

    public init(directory: String) {
        self.directory = directory
    }

    /// Finds the driver: `SOFTVA_DRIVER_DIR` if set, else the folder of the running executable
    /// (the test bundle lives beside the library in SwiftPM's build folder), else `.build/debug`
    /// and `.build/release` under the current directory.
    public static func locate() throws -> SoftVADriver {
        var candidates: [String] = []
        if let dir = ProcessInfo.processInfo.environment["SOFTVA_DRIVER_DIR"], !dir.isEmpty {
            candidates.append(dir)
        }
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append((exe as NSString).deletingLastPathComponent)
        }
        let cwd = FileManager.default.currentDirectoryPath
        candidates.append(cwd + "/.build/debug")
        candidates.append(cwd + "/.build/release")
        for dir in candidates where FileManager.default.fileExists(atPath: dir + "/" + fileName) {
            return SoftVADriver(directory: dir)
        }
        throw VATestSupportError.driverNotFound(searched: candidates)
    }
}

/// Settings of the SoftVA driver, passed through its environment variables.
public struct SoftVAOptions: Sendable {
    /// `SOFTVA_PROFILE`: a device profile file whose device SoftVA impersonates.
    public var profile: String?
    /// `SOFTVA_COUNTERS`: where SoftVA writes its key=value counters.
    public var countersPath: String?
    /// `SOFTVA_FAIL_AFTER`: vaEndPicture fails from the (N+1)th frame on.
    public var failAfter: Int?
    /// `SOFTVA_FAIL_STATUS`: the VAStatus name of that failure (default VA_STATUS_ERROR_HW_BUSY).
    public var failStatus: String?
    /// `SOFTVA_FAIL_ON`: which operations count and fail, e.g. "decode", "encode,vpp".
    public var failOn: String?
    /// `SOFTVA_VPP_FILTERS`: the VPP filters offered, "deinterlacing" (the default) or "none".
    public var vppFilters: String?

    public init(profile: String? = nil, countersPath: String? = nil, failAfter: Int? = nil,
                failStatus: String? = nil, failOn: String? = nil, vppFilters: String? = nil) {
        self.profile = profile
        self.countersPath = countersPath
        self.failAfter = failAfter
        self.failStatus = failStatus
        self.failOn = failOn
        self.vppFilters = vppFilters
    }

    /// The variables, with `nil` for those to remove.
    public var variables: [String: String?] {
        [
            "SOFTVA_PROFILE": profile,
            "SOFTVA_COUNTERS": countersPath,
            "SOFTVA_FAIL_AFTER": failAfter.map(String.init),
            "SOFTVA_FAIL_STATUS": failStatus,
            "SOFTVA_FAIL_ON": failOn,
            "SOFTVA_VPP_FILTERS": vppFilters,
        ]
    }
}

/// The counters SoftVA writes to `SOFTVA_COUNTERS` after every counted operation (pictures, contexts
/// and host transfers) and at vaTerminate, so they are current while the device is still open.
public struct SoftVACounters: Sendable {
    public let values: [String: UInt64]
    public let personality: String

    public init(path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var values: [String: UInt64] = [:]
        var personality = ""
        for line in text.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<eq]), value = String(line[line.index(after: eq)...])
            if key == "personality" { personality = value } else if let n = UInt64(value) { values[key] = n }
            // other text values (driver=...) are informational
        }
        self.values = values
        self.personality = personality
    }

    /// The counter's value; 0 for a counter the file does not list.
    public subscript(key: String) -> UInt64 { values[key] ?? 0 }

    /// Bytes of frame data that crossed between host memory and surfaces.
    public var hostTransferBytes: UInt64 { self["host_transfer_bytes"] }
}

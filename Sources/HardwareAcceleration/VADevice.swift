internal import CVA
#if canImport(Glibc)
import Glibc
#endif
import MediaCore
import Synchronization

/// An initialised VA-API display on a DRM render node or an X11 display: owns the display and the
/// file descriptor or X connection under it, and terminates and closes them in `deinit`.
///
/// Not `Sendable`: libva displays are used from one thread at a time, so a device stays in the task
/// that opened it.
public final class VADevice {
    /// The render node path (`/dev/dri/renderD128`) or X11 display name (`:99`) it was opened from.
    public let path: String
    /// The driver's vendor string, verbatim. The corresponding C function is `vaQueryVendorString`.
    public let vendor: String
    /// The libva driver name (`iHD`, `radeonsi`), from the library libva loaded; `nil` if libva did not say.
    public let driverName: String?
    /// The VA-API version `vaInitialize` reported, as "major.minor".
    public let apiVersion: String
    /// What libva logged while opening the driver (`Trying to open …`, `va_openDriver() returns 0`).
    public var libvaLog: [String] { log.lines }

    /// The raw `VADisplay`, for handing to libavutil's VA-API hwcontext inside this package. It stays
    /// valid as long as this object lives; do not terminate it.
    package var rawDisplay: UnsafeMutableRawPointer { display }

    private let display: VADisplay
    private let connection: Connection
    private let log: LibvaLog

    private enum Connection {
        case drm(fd: Int32)
        case x11(OpaquePointer)
    }

    /// Opens `spec`: an X11 display name when it starts with `:` or has a host part (`:99`, `host:0`), a
    /// DRM render node path otherwise.
    public convenience init(_ spec: String) throws(DeviceDiagnosis) {
        if Self.isX11DisplayName(spec) {
            try self.init(x11Display: spec)
        } else {
            try self.init(renderNode: spec)
        }
    }

    /// Whether `spec` names an X11 display rather than a device path.
    public static func isX11DisplayName(_ spec: String) -> Bool {
        !spec.hasPrefix("/") && !spec.hasPrefix(".") && spec.contains(":")
    }

    /// Opens and initialises the render node at `path`.
    /// The corresponding C functions are `open`, `vaGetDisplayDRM` and `vaInitialize`.
    public convenience init(renderNode path: String) throws(DeviceDiagnosis) {
        try self.init(renderNode: path, discovery: DeviceDiscovery(root: "/"))
    }

    /// Opens `path` through `discovery` (so tests can stand in for `open`), then initialises it.
    package convenience init(renderNode path: String, discovery: DeviceDiscovery) throws(DeviceDiagnosis) {
        let fd = try discovery.openNode(path)
        guard let display = vaGetDisplayDRM(fd) else {
            _ = Glibc.close(fd)
            throw DeviceDiagnosis(kind: .openFailed, device: path,
                                  message: "libva could not make a display from this node (vaGetDisplayDRM returned NULL)",
                                  remedy: "check that \(path) is a DRM render node")
        }
        try self.init(path: path, display: display, connection: .drm(fd: fd))
    }

    /// Connects to the X11 display `name` (`:99`) and initialises libva on it.
    /// The corresponding C functions are `XOpenDisplay`, `vaGetDisplay` and `vaInitialize`.
    public convenience init(x11Display name: String) throws(DeviceDiagnosis) {
        guard let x = XOpenDisplay(name) else {
            throw DeviceDiagnosis(kind: .displayUnavailable, device: name, message: "cannot open X11 display \(name)",
                                  remedy: "start an X server there (for tests: Xvfb \(name)) or check DISPLAY and XAUTHORITY")
        }
        guard let display = vaGetDisplay(x) else {
            XCloseDisplay(x)
            throw DeviceDiagnosis(kind: .openFailed, device: name, message: "libva could not make a display from X11 display \(name)")
        }
        try self.init(path: name, display: display, connection: .x11(x))
    }

    private init(path: String, display: VADisplay, connection: Connection) throws(DeviceDiagnosis) {
        let log = LibvaLog()
        let context = Unmanaged.passUnretained(log).toOpaque()
        let recordError: VAMessageCallback = { context, message in
            guard let context, let message else { return }
            Unmanaged<LibvaLog>.fromOpaque(context).takeUnretainedValue().append(String(cString: message), level: .error)
        }
        let recordInfo: VAMessageCallback = { context, message in
            guard let context, let message else { return }
            Unmanaged<LibvaLog>.fromOpaque(context).takeUnretainedValue().append(String(cString: message), level: .info)
        }
        vaSetErrorCallback(display, recordError, context)
        vaSetInfoCallback(display, recordInfo, context)

        var major: Int32 = 0, minor: Int32 = 0
        let status = vaInitialize(display, &major, &minor)
        guard status == cva_VA_STATUS_SUCCESS() else {
            vaTerminate(display)
            Self.close(connection)
            let lines = log.lines
            throw DeviceDiagnosis.initializationFailure(
                device: path, status: VAError.Status(rawValue: status), log: lines, driver: nil,
                driverExists: { access($0, F_OK) == 0 })
        }
        self.path = path
        self.display = display
        self.connection = connection
        self.log = log
        self.apiVersion = "\(major).\(minor)"
        self.vendor = vaQueryVendorString(display).map { String(cString: $0) } ?? ""
        self.driverName = log.lines.compactMap { line -> String? in
            guard let range = line.firstRange(of: "Trying to open ") else { return nil }
            return DeviceDiagnosis.driverName(fromLibraryPath: String(line[range.upperBound...]).trimmingWhitespace())
        }.last
    }

    deinit {
        vaTerminate(display)
        Self.close(connection)
    }

    private static func close(_ connection: Connection) {
        switch connection {
        case .drm(let fd): _ = Glibc.close(fd)
        case .x11(let x): XCloseDisplay(x)
        }
    }
}

/// Collects the messages libva hands its error and info callbacks, so they reach the diagnosis
/// instead of stderr; `LibvaLogging.level` says which are also printed on stderr.
final class LibvaLog: Sendable {
    private let kept = Locked<[String]>([])

    var lines: [String] { kept.withLock { $0 } }

    /// libva calls back from whichever thread made the call.
    func append(_ message: String, level: LibvaLogging.Level) {
        let lines = message.split(separator: "\n").filter { !$0.isEmpty }.map(String.init)
        kept.withLock { $0 += lines }
        guard level.rawValue <= LibvaLogging.level.rawValue else { return }
        for line in lines {
            let text = Array("libva \(level == .error ? "error" : "info"): \(line)\n".utf8)
            _ = text.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
    }
}

/// Which of libva's own messages are printed on stderr besides being kept for diagnoses
/// (`vaf --verbose` prints info and errors, `--quiet` and the default none).
public enum LibvaLogging {
    public enum Level: Int, Sendable { case none = 0, error = 1, info = 2 }

    private static let chosen = Atomic<Int>(Level.none.rawValue)

    public static var level: Level {
        get { Level(rawValue: chosen.load(ordering: .relaxed)) ?? .none }
        set { chosen.store(newValue.rawValue, ordering: .relaxed) }
    }
}

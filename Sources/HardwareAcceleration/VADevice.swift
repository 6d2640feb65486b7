internal import CVA
internal import CFFmpeg
import FFmpegSupport
#if canImport(Glibc)
import Glibc
#endif
import MediaCore
import Synchronization

/// A VA-API device: the one device type. It owns an initialised display on a DRM render node
/// or an X11 display (and the file descriptor or X connection under it), what the driver
/// reported when it was opened, libavutil's context over the display for decoders, surface
/// pools and encoders, and a bound on how many exports use it at once.
///
/// `@unchecked Sendable`: libva serialises calls on one display inside the driver (FFmpeg's
/// threaded decoders rely on the same), and the display is terminated only after the last user.
public final class VADevice: @unchecked Sendable {
    /// The render node path (`/dev/dri/renderD128`) or X11 display name (`:99`) it was opened from.
    public let path: String
    /// The driver's vendor string, verbatim. The corresponding C function is `vaQueryVendorString`.
    public let vendor: String
    /// The libva driver name (`iHD`, `radeonsi`), from the library libva loaded; `nil` if libva did not say.
    public let driverName: String?
    /// The VA-API version `vaInitialize` reported, as "major.minor".
    public let apiVersion: String
    /// What the driver reported when the device was opened: profiles, entry points, attributes,
    /// surfaces, image formats and video processing.
    public let capabilities: DeviceCapabilities
    /// What libva logged while opening the driver (`Trying to open …`, `va_openDriver() returns 0`).
    public var libvaLog: [String] { connection.log.lines }
    /// Bounds how many exports use the device at once; the rest wait.
    public let sessions: ExportSlots
    /// libavutil's context over this display, for decoders, surface pools and encoders.
    package let hardware: HardwareDeviceContext

    /// Hardware exports allowed at once per device, unless its opener says otherwise.
    public static let defaultMaximumConcurrentSessions = 4

    /// The display and its connection: they never leave this module.
    private let connection: VADisplayConnection

    /// Opens `spec`: an X11 display name when it starts with `:` or has a host part (`:99`, `host:0`), a
    /// DRM render node path otherwise.
    public convenience init(_ spec: String, maximumConcurrentSessions: Int = VADevice.defaultMaximumConcurrentSessions) throws(DeviceDiagnosis) {
        if Self.isX11DisplayName(spec) {
            try self.init(x11Display: spec, maximumConcurrentSessions: maximumConcurrentSessions)
        } else {
            try self.init(renderNode: spec, discovery: DeviceDiscovery(root: "/"), maximumConcurrentSessions: maximumConcurrentSessions)
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
    package convenience init(renderNode path: String, discovery: DeviceDiscovery,
                             maximumConcurrentSessions: Int = VADevice.defaultMaximumConcurrentSessions) throws(DeviceDiagnosis) {
        let fd = try discovery.openNode(path)
        guard let display = vaGetDisplayDRM(fd) else {
            _ = Glibc.close(fd)
            throw DeviceDiagnosis(kind: .openFailed, device: path,
                                  message: "libva could not make a display from this node (vaGetDisplayDRM returned NULL)",
                                  remedy: "check that \(path) is a DRM render node")
        }
        try self.init(path: path, display: display, connection: .drm(fd: fd), maximumConcurrentSessions: maximumConcurrentSessions)
    }

    /// Connects to the X11 display `name` (`:99`) and initialises libva on it.
    /// The corresponding C functions are `XOpenDisplay`, `vaGetDisplay` and `vaInitialize`.
    public convenience init(x11Display name: String,
                            maximumConcurrentSessions: Int = VADevice.defaultMaximumConcurrentSessions) throws(DeviceDiagnosis) {
        guard let x = XOpenDisplay(name) else {
            throw DeviceDiagnosis(kind: .displayUnavailable, device: name, message: "cannot open X11 display \(name)",
                                  remedy: "start an X server there (for tests: Xvfb \(name)) or check DISPLAY and XAUTHORITY")
        }
        guard let display = vaGetDisplay(x) else {
            XCloseDisplay(x)
            throw DeviceDiagnosis(kind: .openFailed, device: name, message: "libva could not make a display from X11 display \(name)")
        }
        try self.init(path: name, display: display, connection: .x11(x), maximumConcurrentSessions: maximumConcurrentSessions)
    }

    /// Initialises `display`, then probes it and makes libavutil's context over it. Whatever
    /// fails is a diagnosis naming the device; the display is terminated at once, or, once
    /// initialised, when its connection object goes.
    private init(path: String, display: VADisplay, connection: VADisplayConnection.Link,
                 maximumConcurrentSessions: Int) throws(DeviceDiagnosis) {
        let opened = try VADisplayConnection(path: path, display: display, link: connection)
        let lines = opened.log.lines
        let version = opened.apiVersion
        let vendor = vaQueryVendorString(display).map { String(cString: $0) } ?? ""
        let driverName = lines.compactMap { line -> String? in
            guard let range = line.firstRange(of: "Trying to open ") else { return nil }
            return DeviceDiagnosis.driverName(fromLibraryPath: String(line[range.upperBound...]).trimmingWhitespace())
        }.last
        do {
            capabilities = try opened.capabilities(vendor: vendor, driverName: driverName)
        } catch {
            throw DeviceDiagnosis(kind: .queryFailed, device: path, message: error.description, status: error.status.name,
                                  log: opened.log.lines)
        }
        do {
            hardware = try HardwareDeviceContext(vaapiKeepingAlive: opened) { $0.display = display }
        } catch {
            throw DeviceDiagnosis(kind: .openFailed, device: path, message: "libavutil cannot use this display: \(error)",
                                  log: opened.log.lines)
        }
        self.path = path
        self.vendor = vendor
        self.driverName = driverName
        self.apiVersion = version
        self.connection = opened
        sessions = ExportSlots(limit: max(1, maximumConcurrentSessions))
    }
}

/// An initialised VADisplay and the file descriptor or X connection under it: terminated and
/// closed when the last of its users goes (the device, or libavutil's context once its last
/// surface is destroyed).
// @unchecked: every property is immutable after init; libva serialises calls on the display.
final class VADisplayConnection: @unchecked Sendable {
    enum Link {
        case drm(fd: Int32)
        case x11(OpaquePointer)
    }

    let display: VADisplay
    let log: LibvaLog
    /// The VA-API version `vaInitialize` reported, as "major.minor".
    let apiVersion: String
    private let link: Link

    /// Routes libva's messages to a log, then initialises the display; on failure the display
    /// is terminated and its link closed before the diagnosis is thrown.
    init(path: String, display: VADisplay, link: Link) throws(DeviceDiagnosis) {
        let log = LibvaLog()
        // The log outlives the display: this object owns both and terminates the display first.
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
            Self.close(link)
            throw DeviceDiagnosis.initializationFailure(
                device: path, status: VAError.Status(rawValue: status), log: log.lines, driver: nil,
                driverExists: { access($0, F_OK) == 0 })
        }
        self.display = display
        self.log = log
        self.link = link
        apiVersion = "\(major).\(minor)"
    }

    deinit {
        vaTerminate(display)
        Self.close(link)
    }

    private static func close(_ link: Link) {
        switch link {
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

import FFmpegSupport
import HardwareAcceleration

/// A VA-API device shared by every export in the process: one VADisplay, its probed
/// capabilities, and libavutil's device context over it. Each export opens its own decoder,
/// VPP and encoder contexts on it; `maximumConcurrentSessions` bounds how many run at once.
///
/// `@unchecked Sendable`: libva serialises calls on one display inside the driver (FFmpeg's
/// threaded decoders rely on the same), and the display is only terminated in `deinit`.
public final class VideoDevice: @unchecked Sendable {
    /// The render node (`/dev/dri/renderD128`) or X11 display (`:99`) it was opened from.
    public let path: String
    public let vendor: String
    /// The libva driver (`iHD`, `radeonsi`, `libsoftva`), nil when libva did not say.
    public let driverName: String?
    public let capabilities: DeviceCapabilities
    let hardware: HardwareDevice
    private let display: VADevice
    /// Limits how many exports use the device at once; the rest wait.
    let sessions: ExportSlots

    /// Hardware exports allowed at once per device, for devices opened after it is set.
    public static let defaultMaximumConcurrentSessions = 4

    /// Opens `spec` (a render node path or an X11 display name) and probes it. A new VADisplay
    /// every time: use `shared(_:)` to share one.
    public init(opening spec: String, maximumConcurrentSessions: Int = VideoDevice.defaultMaximumConcurrentSessions) throws(MediaError) {
        let device: VADevice
        do { device = try VADevice(spec) } catch {
            throw MediaError(.hardwareFailed, "cannot open VA-API device \(spec): \(error.message)" + (error.remedy.map { " (\($0))" } ?? ""))
        }
        do { capabilities = try device.capabilities() } catch {
            throw MediaError(.hardwareFailed, "cannot probe VA-API device \(spec): \(error)")
        }
        do { hardware = try HardwareDevice(vaDisplay: device.rawDisplay, owner: device) } catch {
            throw MediaError(.hardwareFailed, "libavutil cannot use VA-API device \(spec)", underlying: error)
        }
        display = device
        path = device.path
        vendor = device.vendor
        driverName = device.driverName
        sessions = ExportSlots(limit: max(1, maximumConcurrentSessions))
    }

    /// The object whose end terminates the VADisplay (after libavutil's last surface on it):
    /// tests wait for it before stopping the X server the display talks to.
    package var displayOwner: AnyObject { display }


    private static let opened = Locked([String: Result<VideoDevice, MediaError>]())

    /// The process's device for `spec` (nil: the first render node), opened once and shared;
    /// a failure to open is remembered too, so a batch does not retry it per file.
    public static func shared(_ spec: String? = nil) throws(MediaError) -> VideoDevice {
        let key = spec ?? ""
        if let known = opened.withLock({ $0[key] }) { return try known.get() }
        let result: Result<VideoDevice, MediaError>
        do throws(MediaError) {
            let path: String
            if let spec {
                path = spec
            } else {
                do { path = try DeviceDiscovery().renderNodes()[0] } catch {
                    throw MediaError(.hardwareFailed, "no VA-API device: \(error.message)")
                }
            }
            result = .success(try VideoDevice(opening: path))
        } catch {
            result = .failure(error)
        }
        return try opened.withLock { table in
            if let raced = table[key] { return raced }
            table[key] = result
            return result
        }.get()
    }
}

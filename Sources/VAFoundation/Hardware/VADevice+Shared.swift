import HardwareAcceleration
import MediaCore

extension VADevice {
    private static let opened = Locked([String: Result<VADevice, MediaError>]())

    /// The process's device for `spec` (nil: the first render node), opened and probed once
    /// and shared by every export; a failure to open is remembered too, so a batch does not
    /// retry it per file.
    public static func shared(_ spec: String? = nil) throws(MediaError) -> VADevice {
        let key = spec ?? ""
        if let known = opened.withLock({ $0[key] }) { return try known.get() }
        let result: Result<VADevice, MediaError>
        do throws(MediaError) {
            let path: String
            if let spec {
                path = spec
            } else {
                do { path = try DeviceDiscovery().renderNodes()[0] } catch {
                    throw MediaError(.hardwareFailed, "no VA-API device: \(error.message)")
                }
            }
            result = .success(try opening(path))
        } catch {
            result = .failure(error)
        }
        return try opened.withLock { table in
            if let raced = table[key] { return raced }
            table[key] = result
            return result
        }.get()
    }

    /// Opens and probes `spec` (a render node path or an X11 display name), its failure worded
    /// as an export's error. A new display every time: `shared(_:)` shares one.
    public static func opening(_ spec: String, maximumConcurrentSessions: Int = defaultMaximumConcurrentSessions) throws(MediaError) -> VADevice {
        do { return try VADevice(spec, maximumConcurrentSessions: maximumConcurrentSessions) } catch {
            throw MediaError(.hardwareFailed, "cannot open VA-API device \(spec): \(error.message)" + (error.remedy.map { " (\($0))" } ?? ""))
        }
    }
}

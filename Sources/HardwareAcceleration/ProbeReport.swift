/// The result of probing one device (or reading one captured `vainfo` output): its capabilities and
/// what they mean for common jobs, or why it could not be used.
public struct DeviceReport: Codable, Equatable, Sendable {
    /// The render node path, X11 display name, or `vainfo` file the report is about.
    public var device: String
    /// What the device reports; `nil` when it could not be used.
    public var capabilities: DeviceCapabilities?
    /// Per-codec decode/encode support derived from `capabilities`; empty when it could not be used.
    public var codecs: [CodecSupport]
    /// How the common jobs would run on it (all software when it could not be used).
    public var verdicts: [Verdict]
    /// Why the device could not be used; `nil` when it could.
    public var diagnosis: DeviceDiagnosis?
    /// Things the probe had to leave out (attribute values a `vainfo` text does not preserve).
    public var warnings: [String]

    public init(device: String, capabilities: DeviceCapabilities, warnings: [String] = []) {
        self.device = device
        self.capabilities = capabilities
        self.codecs = capabilities.codecs
        self.verdicts = capabilities.verdicts()
        self.diagnosis = nil
        self.warnings = warnings
    }

    public init(device: String, diagnosis: DeviceDiagnosis, warnings: [String] = []) {
        self.device = device
        self.capabilities = nil
        self.codecs = []
        self.verdicts = TranscodeJob.common.map(Verdict.softwareOnly)
        self.diagnosis = diagnosis
        self.warnings = warnings
    }

    /// Whether the device initialised and can be used.
    public var isUsable: Bool { capabilities != nil }
}

/// Everything `vaf probe --json` prints. The layout is documented in Hardware/PROBE.md; fields are
/// only ever added, and `schemaVersion` changes if one is removed or changes meaning.
public struct ProbeReport: Codable, Equatable, Sendable {
    /// The JSON layout version; 1 for this layout.
    public var schemaVersion: Int
    /// Where the data came from: `"devices"` (live probe) or `"vainfo"` (a captured text).
    public var source: String
    /// One report per device probed, in order.
    public var devices: [DeviceReport]
    /// Whether at least one device initialised.
    public var hardwareAvailable: Bool
    /// The codecs libavcodec offers without hardware; `nil` when not collected.
    public var software: SoftwareCodecs?

    public init(source: String, devices: [DeviceReport], software: SoftwareCodecs?) {
        self.schemaVersion = 1
        self.source = source
        self.devices = devices
        self.hardwareAvailable = devices.contains { $0.isUsable }
        self.software = software
    }
}

/// The software decoders and encoders libavcodec was built with (FFmpeg's codec names).
public struct SoftwareCodecs: Codable, Equatable, Sendable {
    public var decoders: [String]
    public var encoders: [String]

    public init(decoders: [String], encoders: [String]) {
        self.decoders = decoders
        self.encoders = encoders
    }
}

/// Probes live devices: one named device, or every render node in order.
public struct HardwareProbe: Sendable {
    /// Where render nodes are looked for and how they are opened.
    public var discovery: DeviceDiscovery

    public init(discovery: DeviceDiscovery = DeviceDiscovery()) {
        self.discovery = discovery
    }

    /// Reports on `device` (a render node path or X11 display name), or on every render node when `nil`.
    /// When there is no node at all, the one report names the directory and says why.
    public func run(device: String?) -> [DeviceReport] {
        let paths: [String]
        if let device {
            paths = [device]
        } else {
            do {
                paths = try discovery.renderNodes()
            } catch {
                return [DeviceReport(device: discovery.root, diagnosis: error)]
            }
        }
        return paths.map(probe)
    }

    /// Opens, initialises and queries one device.
    public func probe(_ path: String) -> DeviceReport {
        do {
            let device = VADevice.isX11DisplayName(path)
                ? try VADevice(x11Display: path)
                : try VADevice(renderNode: path, discovery: discovery)
            return DeviceReport(device: path, capabilities: device.capabilities)
        } catch {
            return DeviceReport(device: path, diagnosis: error)
        }
    }
}

extension DeviceDiagnosis.Kind {
    /// The device initialised but a capability query failed.
    public static let queryFailed = DeviceDiagnosis.Kind(rawValue: "query-failed")
}

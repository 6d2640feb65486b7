import BenchKit
import Foundation
import HardwareAcceleration
import VAFoundation

/// The VA-API device the device paths use, found by the same probe as `vaf probe`.
struct BenchDevice: Sendable {
    /// The render node or X display; nil when none is usable.
    var path: String?
    var driver: String?
    var vendor: String?
    /// Why no device is used, in one sentence.
    var problem: String?
    /// What to do about it, when there is something to do.
    var remedy: String?
    var codecs: [CodecSupport] = []

    /// The named device, or the first usable render node.
    static func detect(requested: String?) -> BenchDevice {
        let reports = HardwareProbe().run(device: requested)
        if let usable = reports.first(where: \.isUsable), let capabilities = usable.capabilities {
            return BenchDevice(path: usable.device, driver: capabilities.driver, vendor: capabilities.vendor, problem: nil, remedy: nil, codecs: usable.codecs)
        }
        let diagnosis = reports.first?.diagnosis
        return BenchDevice(path: nil, driver: nil, vendor: nil, problem: diagnosis?.message ?? "no VA-API device found", remedy: diagnosis?.remedy)
    }

    /// Whether the device's probe lists an encode entry point for `codec`.
    func encodes(_ codec: VideoCodec) -> Bool {
        let probed = codec == .mjpeg ? Codec.jpeg : Codec(rawValue: codec.rawValue)
        return codecs.contains { $0.codec == probed && $0.encode != nil }
    }

    /// True when the device is SoftVA: its "hardware" is libjpeg and loops on the CPU.
    var isSoftVA: Bool {
        driver == "libsoftva" || ProcessInfo.processInfo.environment["LIBVA_DRIVER_NAME"] == "libsoftva"
    }

    /// What rows of device paths are labelled with.
    var label: String? {
        guard path != nil else { return nil }
        return isSoftVA ? "CPU-emulated (SoftVA)" : nil
    }

    /// True when the device decodes `codec` (the probe's view).
    func decodes(_ codec: Codec) -> Bool { codecs.contains { $0.codec == codec && $0.decode != nil } }
}

extension MachineInfo {
    /// This machine, the vaf build, FFmpeg's version and the device.
    static func current(ffmpegVersion: String?, device: BenchDevice) -> MachineInfo {
        #if DEBUG
        let build = "debug"
        #else
        let build = "release"
        #endif
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } }
        return MachineInfo(hostName: ProcessInfo.processInfo.hostName, cpuModel: cpu,
                           logicalCores: ProcessInfo.processInfo.activeProcessorCount,
                           memoryBytes: Int64(ProcessInfo.processInfo.physicalMemory),
                           operatingSystem: ProcessInfo.processInfo.operatingSystemVersionString, vafBuild: build,
                           ffmpegVersion: ffmpegVersion, device: device.path, driver: device.isSoftVA && device.path != nil ? "libsoftva" : device.driver,
                           deviceLabel: device.label ?? device.vendor,
                           deviceProblem: device.problem.map { problem in device.remedy.map { "\(problem); \($0)" } ?? problem })
    }
}

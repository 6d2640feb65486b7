import ArgumentParser
import FFmpegSupport
import Foundation
import HardwareAcceleration

extension Vaf {
    /// `vaf probe`: what the VA-API devices here (or a captured `vainfo` output) can decode and encode,
    /// and whether common jobs get a hardware path.
    struct Probe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what the VA-API devices can decode and encode, and which jobs get a hardware path.",
            discussion: """
            With no --device, every render node in /dev/dri is probed in order. A device that cannot be used \
            is explained (no /dev/dri, no permission, driver missing, driver failed to initialise) and the \
            verdicts fall back to software. The JSON layout is documented in Hardware/PROBE.md.

            Exit status: 0 when the probe ran (even with no usable device); 1 when an input file cannot be \
            read or parsed; \(ProbeExit.noHardware.rawValue) with --require-hardware when no device is usable.
            """)

        @Option(help: ArgumentHelp("Probe only this device: a render node path (/dev/dri/renderD129) or an X11 display name (:99).",
                                   valueName: "path"))
        var device: String?

        @Flag(help: "Print the report as JSON (layout in Hardware/PROBE.md).")
        var json = false

        @Flag(help: "Also list every profile/entry point with its attributes, surface and image formats, VPP, and all software codecs.")
        var all = false

        @Flag(help: "List libavcodec's software decoders and encoders (about 700 names; in JSON the `software` key, left out otherwise).")
        var codecs = false

        @Option(name: .customLong("from-vainfo"),
                help: ArgumentHelp("Read a captured `vainfo` or `vainfo --all` output instead of probing devices.", valueName: "file"))
        var fromVainfo: String?

        @Flag(help: "With --from-vainfo: print the device as a .profile file (the SoftVA personality format) instead of a report.")
        var emitProfile = false

        @Flag(help: "Exit with status \(ProbeExit.noHardware.rawValue) when no VA-API device is usable.")
        var requireHardware = false

        func validate() throws {
            if emitProfile && fromVainfo == nil { throw ValidationError("--emit-profile needs --from-vainfo FILE") }
            if device != nil && fromVainfo != nil { throw ValidationError("--device and --from-vainfo cannot be combined") }
            if emitProfile && json { throw ValidationError("--emit-profile and --json cannot be combined") }
            if codecs && fromVainfo != nil {
                throw ValidationError("--codecs and --from-vainfo cannot be combined: the codecs are this machine's, not the captured one's")
            }
        }

        func run() async throws {
            let report: ProbeReport
            if let fromVainfo {
                let capture = try Self.readVainfo(fromVainfo)
                if emitProfile {
                    print(capture.profile.text, terminator: "")
                    return
                }
                let entry = capture.capabilities.map { DeviceReport(device: fromVainfo, capabilities: $0, warnings: capture.warnings) }
                    ?? DeviceReport(device: fromVainfo, diagnosis: capture.diagnosis ?? DeviceDiagnosis(
                        kind: .initializeFailed, device: fromVainfo, message: "vaInitialize failed"), warnings: capture.warnings)
                // Another machine's capture: this machine's codecs would say nothing about it.
                report = ProbeReport(source: "vainfo", devices: [entry], software: nil)
            } else {
                report = ProbeReport(source: "devices", devices: HardwareProbe().run(device: device), software: Self.softwareCodecs())
            }
            if json {
                var printed = report
                // The ~700 codec names drown the device report: only on request.
                if !(codecs || all) { printed.software = nil }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(printed), as: UTF8.self))
            } else {
                print(ProbeText(report: report, all: all, listsCodecs: codecs || all).render(), terminator: "")
            }
            if requireHardware && !report.hardwareAvailable { throw ExitCode(ProbeExit.noHardware.rawValue) }
        }

        /// Reads and parses a `vainfo` capture, with one-line errors naming the file.
        static func readVainfo(_ path: String) throws -> VainfoCapture {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw ProbeInputError(description: "\(path): cannot read: \((error as NSError).localizedDescription)")
            }
            guard let text = String(data: data, encoding: .utf8) else { throw ProbeInputError(description: "\(path): not UTF-8 text") }
            let url = URL(fileURLWithPath: path)
            let name = url.deletingPathExtension().lastPathComponent
            do {
                return try VainfoCapture(text: text, file: path, name: name, source: VainfoCapture.sourceName(forPath: path))
            } catch {
                throw ProbeInputError(description: error.description)
            }
        }

        static func softwareCodecs() -> SoftwareCodecs {
            SoftwareCodecs(decoders: FFmpegCodecs.decoderNames(), encoders: FFmpegCodecs.encoderNames())
        }
    }
}

/// An input file `vaf probe` cannot use; ArgumentParser prints it as one line and exits 1.
struct ProbeInputError: Error, CustomStringConvertible {
    var description: String
}

/// Exit statuses of `vaf probe` beyond 0 (ran) and 1 (bad input).
enum ProbeExit: Int32 {
    /// `--require-hardware` and no usable VA-API device (EX_UNAVAILABLE).
    case noHardware = 69
}

import HardwareAcceleration

/// The human-readable form of a probe report: per device a codec table and verdict lines, then the
/// software codecs.
struct ProbeText {
    var report: ProbeReport
    var all: Bool
    /// Whether every software decoder and encoder is named (`--codecs`), not only counted.
    var listsCodecs: Bool

    /// Software encoders worth naming next to the hardware ones.
    static let notableEncoders = ["libx264", "libx265", "libsvtav1", "libaom-av1", "librav1e", "libvpx", "libvpx-vp9", "mjpeg",
                                  "mpeg2video"]

    func render() -> String {
        var out: [String] = []
        for device in report.devices {
            out += render(device)
            out.append("")
        }
        if let software = report.software {
            let notable = Self.notableEncoders.filter(software.encoders.contains)
            out.append("software (libavcodec): \(software.decoders.count) decoders, \(software.encoders.count) encoders; "
                + "encoders for delivery: \(notable.isEmpty ? "none" : notable.joined(separator: ", "))")
            if listsCodecs {
                out.append("  decoders: " + software.decoders.joined(separator: " "))
                out.append("  encoders: " + software.encoders.joined(separator: " "))
            }
        }
        if !report.hardwareAvailable {
            out.append("verdict: software only (no usable VA-API device)")
        }
        return out.joined(separator: "\n") + "\n"
    }

    private func render(_ device: DeviceReport) -> [String] {
        guard let caps = device.capabilities else {
            var lines = ["\(device.device): not usable"]
            if let diagnosis = device.diagnosis {
                lines.append("  problem: \(diagnosis.message)")
                if let remedy = diagnosis.remedy { lines.append("  fix: \(remedy)") }
                if all { lines += diagnosis.log.map { "  libva: \($0)" } }
            }
            lines.append("  verdicts:")
            lines += device.verdicts.map { "    \($0)" }
            return lines
        }
        var details: [String] = []
        if let driver = caps.driver { details.append("driver \(driver)") }
        if let api = caps.apiVersion { details.append("VA-API \(api)") }
        var lines = ["\(device.device): \(caps.vendor ?? "(no vendor string)")" + (details.isEmpty ? "" : " [\(details.joined(separator: ", "))]")]
        let header = ["codec", "decode", "max", "encode", "rate control", "max", "ffmpeg"]
        var rows: [[String]] = []
        for codec in device.codecs {
            let decode = codec.decode.map { "\(depths($0.bitDepths)) \($0.chroma.joined(separator: ","))" } ?? "-"
            let decodeMax = codec.decode.map { $0.maxSize?.description ?? "?" } ?? ""
            var encode = "-", rateControl = "", encodeMax = "", ffmpeg = ""
            if let e = codec.encode {
                let entry = e.full && e.lowPower ? "full+LP" : e.lowPower ? "LP only" : "full"
                encode = "\(entry) \(depths(e.bitDepths))"
                rateControl = e.rateControls.isEmpty ? "?" : e.rateControls.joined(separator: " ")
                encodeMax = e.maxSize?.description ?? "?"
                ffmpeg = e.ffmpegEncoder ?? "none in 5.1 (software)"
            }
            rows.append([codec.codec.displayName, decode, decodeMax, encode, rateControl, encodeMax, ffmpeg])
        }
        lines += table([header] + rows).map { "  " + $0 }
        if let vpp = caps.videoProcessing {
            lines.append("  video processing: filters \(vpp.filters.isEmpty ? "none" : vpp.filters.joined(separator: ", "))")
            if let methods = vpp.deinterlacing { lines.append("    deinterlacing: \(methods.isEmpty ? "none" : methods.joined(separator: ", "))") }
            if let modes = vpp.toneMapping { lines.append("    tone mapping: \(modes.isEmpty ? "none" : modes.joined(separator: ", "))") }
        } else if caps.config(.none, .videoProc) != nil {
            lines.append("  video processing: yes (VAProfileNone/VAEntrypointVideoProc)")
        } else {
            lines.append("  video processing: none")
        }
        lines.append("  verdicts:")
        lines += device.verdicts.map { "    \($0)" }
        if all { lines += renderAll(caps) }
        lines += device.warnings.map { "  warning: \($0)" }
        return lines
    }

    private func renderAll(_ caps: DeviceCapabilities) -> [String] {
        var lines = ["  configs:"]
        for config in caps.configs {
            lines.append("    \(config.profile)/\(config.entrypoint)")
            for attribute in config.attributes {
                lines.append("      \(attribute.type): \(describe(attribute))")
            }
            if let surface = caps.surface(config.profile, config.entrypoint) {
                let size = [surface.minWidth, surface.minHeight, surface.maxWidth, surface.maxHeight].map { $0.map(String.init) ?? "?" }
                lines.append("      surfaces: \(surface.pixelFormats.joined(separator: " ")); \(size[0])x\(size[1])…\(size[2])x\(size[3]); memory \(surface.memoryTypes.joined(separator: " "))")
            }
        }
        if let formats = caps.imageFormats { lines.append("  image formats: \(formats.joined(separator: " "))") }
        if let pipeline = caps.videoProcessing?.pipeline {
            lines.append("  vpp input: \(pipeline.inputPixelFormats.joined(separator: " ")) up to \(pipeline.maxInputSize?.description ?? "?")")
            lines.append("  vpp output: \(pipeline.outputPixelFormats.joined(separator: " ")) up to \(pipeline.maxOutputSize?.description ?? "?")")
        }
        return lines
    }

    private func describe(_ attribute: ConfigAttribute) -> String {
        let hex = "0x" + String(attribute.value, radix: 16)
        switch attribute.type {
        case .rtFormat: return RTFormats(rawValue: attribute.value).names.joined(separator: " ")
        case .rateControl: return RateControlModes(rawValue: attribute.value).names.joined(separator: " ")
        case .encPackedHeaders:
            let names = PackedHeaders(rawValue: attribute.value).names
            return names.isEmpty ? "none" : names.joined(separator: " ")
        case .encMaxRefFrames: return "l0=\(attribute.value & 0xffff) l1=\(attribute.value >> 16)"
        case .maxPictureWidth, .maxPictureHeight, .encMaxSlices, .encQualityRange: return String(attribute.value)
        default: return hex
        }
    }

    private func depths(_ depths: [Int]) -> String {
        depths.isEmpty ? "?" : depths.map(String.init).joined(separator: "/") + "-bit"
    }

    /// Left-aligned columns, two spaces apart.
    private func table(_ rows: [[String]]) -> [String] {
        guard let columns = rows.map(\.count).max() else { return [] }
        let widths = (0..<columns).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }
}

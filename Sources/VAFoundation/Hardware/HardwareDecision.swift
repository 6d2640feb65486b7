import FFmpegSupport
import HardwareAcceleration

/// Whether an export may use a VA-API device (`vaf transcode --hw`).
public enum HardwarePolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Everything in software.
    case off
    /// The device for every stage it can take, software for the rest; never fails where
    /// software would succeed (a device failing mid-export restarts the output in software).
    case auto
    /// Like `auto`, but an export that cannot put any stage on the device fails, and so does
    /// one whose device fails mid-export (it is not redone in software).
    case require
    /// Exactly one stage on the device: software decode + one upload + hardware encode, or
    /// hardware decode + one download + software encode (for comparing paths).
    case hybrid
}

/// Which stages of the video stream run on the device, and why (`ExportResult.path`).
public struct HardwareDecision: Sendable, Hashable, Codable {
    public var path: ExportResult.Path
    public var decodesOnDevice: Bool
    public var encodesOnDevice: Bool
    /// Scaling and format conversion run on the device's video processor: only when the
    /// pictures are on the device from decode to encode.
    public var scalesOnDevice: Bool { decodesOnDevice && encodesOnDevice }
    /// The VA-API encoder (`h264_vaapi`) when encoding on the device.
    public var encoder: String?
    public var reason: String

    static func software(_ reason: String) -> HardwareDecision {
        HardwareDecision(path: .software, decodesOnDevice: false, encodesOnDevice: false, encoder: nil, reason: reason)
    }
}

/// The facts the decision needs about one video stream's source and target.
struct HardwareJob {
    /// FFmpeg's codec name of the source ("h264", "mjpeg").
    var sourceCodec: String
    var sourceBitDepth: Int
    /// "4:2:0", "4:2:2" or "4:4:4".
    var sourceChroma: String
    var sourceSize: PictureSize
    var targetCodec: VideoCodec
    var targetBitDepth: Int
    var targetSize: PictureSize

    /// The probe's codec family for an FFmpeg codec name.
    static func family(ofFFmpegCodec name: String) -> Codec? {
        switch name {
        case "h264": .h264
        case "hevc": .hevc
        case "av1": .av1
        case "vp9": .vp9
        case "vp8": .vp8
        case "mjpeg": .jpeg
        case "mpeg2video": .mpeg2
        case "vc1": .vc1
        default: nil
        }
    }

    static func family(of codec: VideoCodec) -> Codec? {
        codec == .mjpeg ? .jpeg : family(ofFFmpegCodec: codec.rawValue)
    }

    static func chroma(ofPixelFormat name: String?) -> String {
        guard let name else { return "4:2:0" }
        if name.contains("444") { return "4:4:4" }
        if name.contains("422") || name.hasPrefix("nv16") || name.hasPrefix("yuyv") { return "4:2:2" }
        return "4:2:0"
    }

    /// Decides per `policy` from the device's capabilities (nil: no usable device, `problem` says why).
    func decide(policy: HardwarePolicy, capabilities: DeviceCapabilities?, problem: String?) throws(MediaError) -> HardwareDecision {
        if policy == .off { return .software("hardware is off (--hw off)") }
        guard let capabilities else {
            let why = problem ?? "no VA-API device"
            if policy == .auto { return .software("\(why); software path") }
            throw MediaError(.hardwareFailed, "--hw \(policy.rawValue) needs a VA-API device: \(why)")
        }
        let decode = decodeVerdict(capabilities)
        let encode = encodeVerdict(capabilities)
        let needsVPP = sourceSize != targetSize || sourceBitDepth != targetBitDepth
        let vpp = capabilities.videoProcessing != nil || capabilities.configs.contains { $0.entrypoint == .videoProc }
        let device = capabilities.driver.map { "the \($0) device" } ?? "the device"
        switch policy {
        case .hybrid:
            if let encoder = encode.encoder {
                return HardwareDecision(path: .hybrid, decodesOnDevice: false, encodesOnDevice: true, encoder: encoder,
                                        reason: "hybrid (forced): software decode, one upload per frame, \(encoder)\(encode.note) on \(device)")
            }
            if decode.ok {
                return HardwareDecision(path: .hybrid, decodesOnDevice: true, encodesOnDevice: false, encoder: nil,
                                        reason: "hybrid (forced): \(decode.name) decode on \(device), one download per frame, software encode (\(encode.why))")
            }
            throw MediaError(.hardwareFailed, "--hw hybrid: \(device) can neither decode nor encode this stream (\(decode.why); \(encode.why))")
        case .auto, .require:
            if decode.ok, let encoder = encode.encoder, !needsVPP || vpp {
                let scaling = needsVPP ? ", VPP scaling \(sourceSize) → \(targetSize)" : ""
                return HardwareDecision(path: .hardware, decodesOnDevice: true, encodesOnDevice: true, encoder: encoder,
                                        reason: "full hardware on \(device): \(decode.name) decode\(scaling), \(encoder)\(encode.note); no frame copied to host memory")
            }
            if let encoder = encode.encoder {
                let why = decode.ok ? "the device has no video processor to scale on" : decode.why
                return HardwareDecision(path: .hybrid, decodesOnDevice: false, encodesOnDevice: true, encoder: encoder,
                                        reason: "hybrid: software decode (\(why)), one upload per frame, \(encoder)\(encode.note) on \(device)")
            }
            if decode.ok {
                return HardwareDecision(path: .hybrid, decodesOnDevice: true, encodesOnDevice: false, encoder: nil,
                                        reason: "hybrid: \(decode.name) decode on \(device), one download per frame, software encode (\(encode.why))")
            }
            if policy == .require {
                throw MediaError(.hardwareFailed, "--hw require: \(device) can neither decode nor encode this stream (\(decode.why); \(encode.why))")
            }
            return .software("software: \(decode.why); \(encode.why)")
        case .off:
            return .software("hardware is off (--hw off)")
        }
    }

    private func decodeVerdict(_ capabilities: DeviceCapabilities) -> (ok: Bool, name: String, why: String) {
        guard let codec = Self.family(ofFFmpegCodec: sourceCodec) else {
            return (false, sourceCodec, "VA-API has no \(sourceCodec) decoder")
        }
        let name = codec.displayName
        let job = TranscodeJob(name: "decode", input: .init(codec: codec, bitDepth: sourceBitDepth, size: sourceSize), output: nil)
        let verdict = capabilities.verdicts(for: [job])[0]
        guard verdict.path == .fullHardware else {
            return (false, name, verdict.notes.first ?? "no \(name) decode on the device")
        }
        if let support = capabilities.support(for: codec)?.decode, !support.chroma.contains(sourceChroma) {
            return (false, name, "no \(sourceChroma) \(name) decode on the device")
        }
        if !sourceChroma.hasSuffix("4:2:0") {
            return (false, name, "\(sourceChroma) surfaces cannot feed the 4:2:0 video processor and encoders")
        }
        return (true, name, "")
    }

    /// The VA-API encoder (with a note on its entry point) or why there is none.
    private func encodeVerdict(_ capabilities: DeviceCapabilities) -> (encoder: String?, note: String, why: String) {
        guard let codec = Self.family(of: targetCodec) else { return (nil, "", "VA-API has no \(targetCodec) encoder") }
        let name = codec.displayName
        let job = TranscodeJob(name: "encode", input: nil, output: .init(codec: codec, bitDepth: targetBitDepth, size: targetSize))
        let verdict = capabilities.verdicts(for: [job])[0]
        guard verdict.path == .fullHardware, let encoder = codec.ffmpegVAAPIEncoder else {
            return (nil, "", verdict.notes.first ?? "no \(name) encode on the device")
        }
        guard Encoder.isAvailable(encoder) else { return (nil, "", "this libavcodec has no \(encoder)") }
        let lowPowerOnly = capabilities.support(for: codec)?.encode?.lowPowerOnly == true
        return (encoder, lowPowerOnly ? " (low_power=1: the device has only the low-power entry point)" : "", "")
    }
}

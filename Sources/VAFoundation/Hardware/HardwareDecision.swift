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
    /// Where a picture filter runs.
    public enum Place: String, Sendable, Hashable, Codable {
        /// The device's video processor (`deinterlace_vaapi`).
        case device
        /// libavfilter on the CPU (bwdif; zscale and tonemap), on downloaded or software-decoded pictures.
        case host
    }

    public var path: ExportResult.Path
    public var decodesOnDevice: Bool
    public var encodesOnDevice: Bool
    /// Scaling and format conversion run on the device's video processor: only when the
    /// pictures stay on the device from decode to encode (no filter needs them in host memory).
    public var scalesOnDevice: Bool {
        decodesOnDevice && encodesOnDevice && deinterlacing != .host && toneMapping != .host && burningInSubtitles != .host
    }
    /// The VA-API encoder (`h264_vaapi`) when encoding on the device.
    public var encoder: String?
    public var reason: String
    /// Where interlaced pictures are deinterlaced (an export writes progressive video only); nil
    /// for a progressive source.
    public var deinterlacing: Place? = nil
    /// Where HDR pictures are tone-mapped to SDR; nil when none are.
    public var toneMapping: Place? = nil
    /// Where subtitles are burnt into the pictures (text by libass, in host memory; bitmaps as a
    /// layer of the device's video processor where it blends RGBA by alpha); nil when none are.
    public var burningInSubtitles: Place? = nil

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
    var sourceSize: Size
    var targetCodec: VideoCodec
    var targetBitDepth: Int
    var targetSize: Size
    /// The source is interlaced (its field order says two fields per frame) and the output is
    /// progressive: the pictures are deinterlaced.
    var deinterlaces = false
    /// The source is HDR (PQ or HLG) and the output SDR: the pictures are tone-mapped
    /// (`ExportSession.toneMapping(from:to:)`).
    var toneMapsHDR = false
    /// A subtitle track is drawn into the pictures.
    var burnsSubtitles = false
    /// The subtitles drawn are bitmaps (PGS, VobSub, DVB), which the video processor can draw;
    /// text is drawn by libass, in host memory.
    var subtitlesAreBitmaps = false

    /// True where the device's video processor can deinterlace for the export: it offers bob
    /// (the algorithm FFmpeg 5.1's `deinterlace_vaapi` runs one picture out per picture in; the
    /// others need reference pictures the filter does not flush at the end) and this
    /// libavfilter has `deinterlace_vaapi`.
    static func deinterlacesOnVPP(_ capabilities: DeviceCapabilities) -> Bool {
        capabilities.videoProcessing?.deinterlacesByBob == true && FilterGraph.hasFilter("deinterlace_vaapi")
    }

    /// True where the device's video processor can draw bitmap subtitles as a layer over the
    /// picture: it takes RGBA pictures (in its pipeline's input list, or, as Intel's and Mesa's
    /// drivers publish them, among its VideoProc config's surface formats) and blends them by
    /// their premultiplied alpha.
    static func drawsSubtitlesOnVPP(_ capabilities: DeviceCapabilities) -> Bool {
        guard let pipeline = capabilities.videoProcessing?.pipeline, pipeline.blendsWithPremultipliedAlpha else { return false }
        return pipeline.inputPixelFormats.contains("RGBA") || capabilities.surface(.none, .videoProc)?.pixelFormats.contains("RGBA") == true
    }

    /// Where the filters run when the pictures could stay on the device, and why a filter
    /// cannot run there (nil when every filter can, or none is needed).
    private func filterPlaces(_ capabilities: DeviceCapabilities) -> (deinterlacing: HardwareDecision.Place?, toneMapping: HardwareDecision.Place?,
                                                                       subtitles: HardwareDecision.Place?, hostReason: String?) {
        var reasons: [String] = []
        var toneMapping: HardwareDecision.Place?
        if toneMapsHDR {
            toneMapping = .host
            if capabilities.videoProcessing?.toneMapsHDR10ToSDR == true {
                reasons.append("HDR is tone-mapped to SDR by zscale and tonemap on the CPU: the device offers HDR10-to-SDR tone mapping, which VAFoundation does not drive yet (it needs the stream's HDR10 metadata and has not been checked on such a device)")
            } else {
                reasons.append("HDR is tone-mapped to SDR by zscale and tonemap on the CPU: the device's video processor has no HDR-to-SDR tone mapping")
            }
        }
        var subtitles: HardwareDecision.Place?
        if burnsSubtitles {
            if subtitlesAreBitmaps && Self.drawsSubtitlesOnVPP(capabilities) {
                subtitles = .device
            } else {
                subtitles = .host
                reasons.append(subtitlesAreBitmaps
                    ? "bitmap subtitles are blended on the CPU: the device's video processor \(capabilities.videoProcessing?.pipeline == nil ? "has no known pipeline capabilities" : "cannot blend RGBA pictures by their premultiplied alpha")"
                    : "text subtitles are burnt in by libass on the CPU")
            }
        }
        var deinterlacing: HardwareDecision.Place?
        if deinterlaces {
            let vpp = capabilities.videoProcessing
            if toneMapping == .host || subtitles == .host {
                deinterlacing = .host
                reasons.append("interlaced pictures are deinterlaced by bwdif there too, as they are in host memory for the \(toneMapsHDR ? "tone mapping" : "subtitles")")
            } else if Self.deinterlacesOnVPP(capabilities) {
                deinterlacing = .device
            } else {
                deinterlacing = .host
                let why = if vpp == nil {
                    "the device's video processing filters are unknown (not probed)"
                } else if vpp?.deinterlacing?.isEmpty ?? true {
                    "the device's video processor has no deinterlacing filter"
                } else if vpp?.deinterlacesByBob != true {
                    "the device deinterlaces only with \(vpp?.deinterlacing?.joined(separator: ", ") ?? "") (reference pictures that FFmpeg 5.1's deinterlace_vaapi does not flush at the end), not bob"
                } else {
                    "this libavfilter has no deinterlace_vaapi"
                }
                reasons.append("interlaced pictures are deinterlaced by bwdif on the CPU: \(why)")
            }
        }
        return (deinterlacing, toneMapping, subtitles, reasons.isEmpty ? nil : reasons.joined(separator: "; "))
    }

    /// The filters in words for a path whose pictures are in host memory anyway.
    private var hostFilterNote: String {
        var notes: [String] = []
        if deinterlaces { notes.append("deinterlaced by bwdif") }
        if toneMapsHDR { notes.append("tone-mapped by zscale and tonemap") }
        if burnsSubtitles { notes.append("given burnt-in subtitles (text by libass, bitmaps blended)") }
        return notes.isEmpty ? "" : "; pictures \(notes.joined(separator: " and ")) on the CPU"
    }

    /// `decision` with the filters placed in host memory (a path whose pictures are there).
    private func onHost(_ decision: HardwareDecision) -> HardwareDecision {
        var decision = decision
        decision.deinterlacing = deinterlaces ? .host : nil
        decision.toneMapping = toneMapsHDR ? .host : nil
        decision.burningInSubtitles = burnsSubtitles ? .host : nil
        decision.reason += hostFilterNote
        return decision
    }

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
        let decision = try place(policy: policy, capabilities: capabilities, problem: problem)
        // Every path but the two that place the filters themselves has its pictures in host memory.
        return decision.deinterlacing != nil || decision.toneMapping != nil || decision.burningInSubtitles != nil ? decision : onHost(decision)
    }

    private func place(policy: HardwarePolicy, capabilities: DeviceCapabilities?, problem: String?) throws(MediaError) -> HardwareDecision {
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
            let filters = filterPlaces(capabilities)
            if decode.ok, let encoder = encode.encoder, !needsVPP || vpp, let hostReason = filters.hostReason {
                // The pictures go to host memory for a filter the device cannot run, and come back for the encoder.
                return HardwareDecision(path: .hybrid, decodesOnDevice: true, encodesOnDevice: true, encoder: encoder,
                                        reason: "hybrid: \(decode.name) decode on \(device), one download per frame, filtered and scaled on the CPU (\(hostReason)), one upload per frame, \(encoder)\(encode.note) on \(device)",
                                        deinterlacing: filters.deinterlacing, toneMapping: filters.toneMapping,
                                        burningInSubtitles: filters.subtitles == nil ? nil : .host)
            }
            if decode.ok, let encoder = encode.encoder, !needsVPP || vpp {
                let deinterlacing = filters.deinterlacing == .device ? ", VPP deinterlacing (bob, deinterlace_vaapi)" : ""
                let subtitles = filters.subtitles == .device ? ", bitmap subtitles drawn as a VPP layer" : ""
                let scaling = needsVPP ? ", VPP scaling \(sourceSize) → \(targetSize)" : ""
                return HardwareDecision(path: .hardware, decodesOnDevice: true, encodesOnDevice: true, encoder: encoder,
                                        reason: "full hardware on \(device): \(decode.name) decode\(deinterlacing)\(subtitles)\(scaling), \(encoder)\(encode.note); no frame copied to host memory",
                                        deinterlacing: filters.deinterlacing, burningInSubtitles: filters.subtitles)
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

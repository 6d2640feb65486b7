import FFmpegSupport
import HardwareAcceleration

extension VideoSettings {
    /// The rate-control buffer, in bits, the encoder gets for `maxBitRate` (its rate over
    /// `maxBitRateWindow`, a second at most); nil without a peak. FFmpeg's `-bufsize`.
    public var maxBitRateBufferBits: Int64? {
        maxBitRate.map { WriterCodecs.bufferBits(peak: $0, window: maxBitRateWindow) }
    }
}

/// How output settings become an FFmpeg encoder and its options, and which containers hold
/// which codecs. Pure decisions; nothing here opens an encoder.
enum WriterCodecs {
    /// Software encoders for each video codec, best first; the first one this build has wins.
    static let videoEncoders: [VideoCodec: [String]] = [
        .h264: ["libx264"], .hevc: ["libx265"], .av1: ["libsvtav1", "libaom-av1", "librav1e"],
        .vp9: ["libvpx-vp9"], .prores: ["prores_ks"], .mjpeg: ["mjpeg"],
    ]

    /// Codec/container pairs FFmpeg 5.1 lists as possible but refuses without `-strict experimental`.
    private static let experimental: Set<String> = ["flac/mp4", "flac/ipod", "flac/mov", "opus/mov", "opus/ipod"]

    static func videoEncoderName(_ codec: VideoCodec) throws(MediaError) -> String {
        guard let candidates = videoEncoders[codec] else {
            throw MediaError(.unsupported, "video codec \(codec) has no software encoder in this build")
        }
        guard let name = candidates.first(where: Encoder.isAvailable) else {
            throw MediaError(.unsupported, "no encoder for \(codec) in this FFmpeg build (looked for \(candidates.joined(separator: ", ")))")
        }
        return name
    }

    static func audioEncoderName(_ settings: AudioSettings) throws(MediaError) -> String {
        let name: String
        switch settings.codec {
        case .aac: name = "aac"
        case .opus: name = "libopus"
        case .flac: name = "flac"
        case .alac: name = "alac"
        case .linearPCM:
            let pcm = settings.linearPCM ?? LinearPCMSettings()
            switch (pcm.bitDepth, pcm.isFloat) {
            case (32, true): name = "pcm_f32le"
            case (64, true): name = "pcm_f64le"
            case (8, false): name = "pcm_u8"
            case (16, false): name = "pcm_s16le"
            case (24, false): name = "pcm_s24le"
            case (32, false): name = "pcm_s32le"
            default: throw MediaError(.invalidArgument, "linear PCM with \(pcm.bitDepth)-bit \(pcm.isFloat ? "float" : "integer") samples is not supported")
            }
        default: throw MediaError(.unsupported, "audio codec \(settings.codec) is not supported by the writer")
        }
        guard Encoder.isAvailable(name) else { throw MediaError(.unsupported, "encoder \(name) is missing from this FFmpeg build") }
        return name
    }

    /// Nil when `codec` can go in `fileType`, else the reason it cannot.
    static func incompatibility(of codec: CodecID, in fileType: FileType, mediaType: MediaType) -> String? {
        if fileType == .m4a && mediaType != .audio { return "an m4a file holds audio only" }
        if experimental.contains("\(codec.name)/\(fileType.muxerName)") {
            return "\(codec.name) in \(fileType) is experimental in FFmpeg 5.1"
        }
        if Muxer.canHold(codec, formatName: fileType.muxerName) == false {
            return "\(fileType) cannot hold \(codec.name)"
        }
        return nil
    }

    /// Why `aperture` cannot be written for pictures of `settings` in a `fileType` file, nil
    /// when it can: it must lie inside the picture, and only QuickTime and MP4 files carry one.
    static func cleanApertureProblem(_ aperture: CleanAperture, settings: VideoSettings, fileType: FileType) -> String? {
        guard ["mp4", "mov", "ipod"].contains(fileType.muxerName) else {
            return "a \(fileType) file cannot carry a clean aperture; QuickTime and MP4 files can"
        }
        let (w, h) = (aperture.width, aperture.height)
        // Its centre is offset from the picture's; each half must stay inside the picture.
        let fitsAcross = w > 0 && 2 * abs(aperture.horizontalOffset) + w <= settings.width
        let fitsDown = h > 0 && 2 * abs(aperture.verticalOffset) + h <= settings.height
        guard fitsAcross && fitsDown else {
            return "the clean aperture \(w)x\(h) offset (\(aperture.horizontalOffset), \(aperture.verticalOffset)) does not lie inside the \(settings.width)x\(settings.height) picture"
        }
        return nil
    }

    /// True for pixel formats whose chroma is halved horizontally (and, for 4:2:0, vertically).
    static func subsampling(_ format: PixelFormatID) -> (horizontal: Bool, vertical: Bool) {
        let name = format.name ?? ""
        let vertical = name.contains("420") || name.hasPrefix("nv12") || name.hasPrefix("nv21") || name.hasPrefix("p010")
        return (vertical || name.contains("422") || name.hasPrefix("nv16"), vertical)
    }

    /// The encoder and configuration for `settings`, checked against what the encoder accepts.
    static func videoConfiguration(_ s: VideoSettings, timeBase: Rational, globalHeader: Bool,
                                   realTime: Bool) throws(MediaError) -> (name: String, configuration: Encoder.Configuration) {
        let name = try videoEncoderName(s.codec)
        guard s.width > 0, s.height > 0 else {
            throw MediaError(.invalidArgument, "video size \(s.width)x\(s.height) is not positive")
        }
        let format = try pixelFormat(for: s, encoder: name)
        var c = try commonVideoConfiguration(s, timeBase: timeBase, globalHeader: globalHeader)
        c.pixelFormat = format
        c.privateOptions = encoderOptions(s, encoder: name, realTime: realTime, configuration: &c)
        if let p = s.profile, ["libsvtav1", "libaom-av1", "librav1e", "libvpx-vp9"].contains(name) {
            let av1Names = ["main": Int32(0), "high": 1, "professional": 2]
            guard let number = Int32(p) ?? (s.codec == .av1 ? av1Names[p.lowercased()] : nil) else {
                throw MediaError(.invalidArgument, "profile \(p) is not known for \(name); give its number")
            }
            c.profile = number
        }
        if s.level != nil && !["libx264", "libx265"].contains(name) {
            throw MediaError(.unsupported, "setting a level is not supported for \(name)")
        }
        return (name, c)
    }

    /// The pixel format `encoder` is fed for `s`: the settings' own, 10-bit for a 10-bit
    /// profile, else 4:2:0 (MJPEG: the encoder's first). Throws where the encoder
    /// refuses it or the size cannot be subsampled.
    private static func pixelFormat(for s: VideoSettings, encoder name: String) throws(MediaError) -> PixelFormatID {
        let accepted = Encoder.pixelFormats(ofEncoder: name)
        let format: PixelFormatID
        if let wanted = s.pixelFormat {
            guard let id = PixelFormatID(wanted) else {
                throw MediaError(.invalidArgument, "pixel format \(wanted) is unknown to FFmpeg")
            }
            format = id
        } else if let profile = s.profile, profile.contains("10"), accepted.contains(.yuv420p10) {
            format = .yuv420p10
        } else if s.codec != .mjpeg, accepted.contains(.yuv420p) {
            format = .yuv420p
        } else {
            format = accepted.first ?? .yuv420p
        }
        if !accepted.isEmpty && !accepted.contains(format) {
            throw MediaError(.invalidArgument, "\(name) does not accept \(format); it takes \(accepted.map(\.description).joined(separator: ", "))")
        }
        let sub = subsampling(format)
        if (sub.horizontal && s.width % 2 != 0) || (sub.vertical && s.height % 2 != 0) {
            throw MediaError(.invalidArgument, "\(s.width)x\(s.height) cannot be encoded as \(format): chroma subsampling needs even dimensions")
        }
        return format
    }

    /// The encoder's private options for `s`: its speed preset, constant quality, profile and
    /// level in its own terms. Where an encoder takes rates its own way, `c` is changed to it.
    private static func encoderOptions(_ s: VideoSettings, encoder name: String, realTime: Bool,
                                       configuration c: inout Encoder.Configuration) -> [(name: String, value: String)] {
        let gop = c.keyframeInterval
        let quality = s.averageBitRate == nil ? s.quality.map { min(1, max(0, $0)) } : nil
        // The constant-quality value and the speed setting in this encoder's own terms.
        let crf = quality.flatMap { QualityScale.constantQuality($0, encoder: name) }.map(String.init)
        let speed = s.speed.flatMap { QualityScale.speedSetting($0, encoder: name) }
        var options: [(name: String, value: String)] = []
        switch name {
        case "libx264":
            options.append(("preset", speed?.value ?? (realTime ? "veryfast" : "medium")))
            // A keyframe the writer forces (a segment's start) is an IDR picture.
            options.append(("forced-idr", "1"))
            if realTime { options.append(("tune", "zerolatency")) }
            if let crf { options.append(("crf", crf)) }
            if let p = s.profile { options.append(("profile", p.lowercased())) }
            if let l = s.level { options.append(("level", l)) }
        case "libx265":
            options.append(("preset", speed?.value ?? (realTime ? "veryfast" : "medium")))
            options.append(("forced-idr", "1"))
            if let crf { options.append(("crf", crf)) }
            if let p = s.profile { options.append(("profile", p.lowercased())) }
            var params = ["log-level=error"]
            if let l = s.level { params.append("level-idc=\(l)") }
            if !s.allowFrameReordering { params.append("bframes=0") }
            if let gop { params.append("keyint=\(gop)") }
            params += hdr10Parameters(s)
            options.append(("x265-params", params.joined(separator: ":")))
        case "libsvtav1":
            options.append(("preset", speed?.value ?? (realTime ? "12" : "10")))
            if let crf { options.append(("crf", crf)) }
            // SVT-AV1 refuses a peak equal to the bit rate ("Max Bitrate must be greater than
            // Target Bitrate"): a bit-rate encode keeps its average only; capped CRF takes one.
            if crf == nil {
                c.maxBitRate = nil
                c.bufferSize = nil
            }
        case "libaom-av1":
            options.append(("cpu-used", speed?.value ?? (realTime ? "8" : "6")))
            if let crf { options.append(("crf", crf)) }
        case "librav1e":
            options.append(("speed", realTime ? "10" : "8"))
            if let q = quality { options.append(("qp", String(Int((255 * (1 - q)).rounded())))) }
        case "libvpx-vp9":
            let fastest = s.speed == .fastest || (s.speed == nil && realTime)
            options.append(("deadline", fastest ? "realtime" : "good"))
            options.append(("cpu-used", speed?.value ?? (realTime ? "8" : "4")))
            if let crf {
                options.append(("crf", crf))
                // libvpx's constrained quality takes its ceiling as the bit rate; 0 is pure CRF.
                c.bitRate = Int64(s.maxBitRate ?? 0)
                c.maxBitRate = nil
                c.bufferSize = nil
            }
        case "prores_ks":
            if let p = s.profile { options.append(("profile", p.lowercased())) }
        case "mjpeg":
            if let q = quality { c.fixedQuality = Int((2 + 29 * (1 - q)).rounded()) }
        default: break
        }
        return options
    }

    /// Surfaces a VA encoder's input pool holds: pictures uploaded or scaled for it while it
    /// looks ahead (B-frames, async depth).
    static let hardwareInputSurfaces = PipelineBounds.vaEncoderInputSurfaces

    /// The VA-API encoder (`h264_vaapi`) and configuration for `settings` on `device`: the
    /// low-power entry point when it is the only one, rate control from the settings among
    /// the modes the driver offers, profile, level, keyframe interval, B-frames.
    static func hardwareVideoConfiguration(_ s: VideoSettings, timeBase: Rational, globalHeader: Bool,
                                           device: VADevice) throws(MediaError) -> (name: String, configuration: Encoder.Configuration) {
        guard let family = HardwareJob.family(of: s.codec), let name = family.ffmpegVAAPIEncoder, Encoder.isAvailable(name) else {
            throw MediaError(.unsupported, "this libavcodec has no VA-API encoder for \(s.codec)")
        }
        guard let support = device.capabilities.support(for: family)?.encode else {
            throw MediaError(.hardwareFailed, "\(device.path) cannot encode \(family.displayName)")
        }
        guard s.width > 0, s.height > 0, s.width % 2 == 0, s.height % 2 == 0 else {
            throw MediaError(.invalidArgument, "\(s.width)x\(s.height) cannot be encoded as 4:2:0: both sides must be even and positive")
        }
        let deep = s.pixelFormat == .yuv420p10 || (s.profile?.contains("10") ?? false)
        let pool: SurfacePool
        do {
            pool = try SurfacePool(device: device.hardware, width: s.width, height: s.height, softwareFormat: deep ? .p010 : .nv12,
                                   capacity: hardwareInputSurfaces)
        } catch {
            throw MediaError(.hardwareFailed, "cannot allocate \(s.width)x\(s.height) surfaces on \(device.path)", underlying: error)
        }
        var c = try commonVideoConfiguration(s, timeBase: timeBase, globalHeader: globalHeader)
        c.hardwareFrames = pool
        // JPEG is constant-quality only: its encoder takes no bit rate.
        if s.codec == .mjpeg { c.bitRate = nil }
        var options: [(name: String, value: String)] = []
        // FFmpeg 5.1 does not fall back to EncSliceLP by itself (Arc, recent Intel, Debian's free iHD).
        if support.lowPowerOnly { options.append(("low_power", "1")) }
        let quality = s.averageBitRate == nil ? s.quality.map { min(1, max(0, $0)) } : nil
        if s.codec == .mjpeg {
            // JPEG is constant-quality only: quality 0…1 maps to the JPEG quality 1…100.
            c.globalQuality = max(1, Int(((quality ?? 0.9) * 100).rounded()))
        } else {
            let modes = Set(support.rateControls)
            if s.averageBitRate != nil {
                if let mode = ["VBR", "CBR", "QVBR", "AVBR"].first(where: modes.contains) { options.append(("rc_mode", mode)) }
            } else if let q = quality {
                let level = QualityScale.constantQuality(q, encoder: name) ?? 23
                // With a ceiling, QVBR keeps the quality under it; ICQ has no ceiling; CQP is
                // what every driver has.
                if let peak = s.maxBitRate, peak > 0, modes.contains("QVBR") {
                    options.append(("rc_mode", "QVBR"))
                    c.globalQuality = level
                    c.bitRate = Int64(peak)
                    c.maxBitRate = Int64(peak)
                } else if modes.contains("ICQ") {
                    options.append(("rc_mode", "ICQ"))
                    c.globalQuality = level
                } else {
                    options.append(("rc_mode", "CQP"))
                    options.append(("qp", String(level)))
                }
            }
            if let speed = s.speed, let setting = QualityScale.speedSetting(speed, encoder: name) {
                c.compressionLevel = Int(setting.value)
            }
            if let p = s.profile { options.append(("profile", p.lowercased())) }
            if let l = s.level { options.append(("level", l)) }
        }
        c.privateOptions = options
        return (name, c)
    }

    /// x265's HDR10 SEI parameters for the settings' mastering display and content light level:
    /// chromaticities in units of 0.00002, luminance in units of 0.0001 cd/m² (x265's own).
    static func hdr10Parameters(_ s: VideoSettings) -> [String] {
        var params: [String] = []
        if let m = s.masteringDisplay, let r = m.red, let g = m.green, let b = m.blue, let w = m.whitePoint,
           let low = m.minLuminance, let high = m.maxLuminance, [r, g, b, w].allSatisfy({ $0.count == 2 }) {
            func xy(_ p: [Double]) -> String { "(\(Int((p[0] * 50000).rounded())),\(Int((p[1] * 50000).rounded())))" }
            params.append("master-display=G\(xy(g))B\(xy(b))R\(xy(r))WP\(xy(w))L(\(Int((high * 10000).rounded())),\(Int((low * 10000).rounded())))")
        }
        if let c = s.contentLightLevel { params.append("max-cll=\(c.maxContentLightLevel),\(c.maxFrameAverageLightLevel)") }
        if !params.isEmpty { params.insert("hdr10=1", at: 0) }
        return params
    }

    /// What software and VA-API encoders take alike from `s`: size, time base, frame rate,
    /// keyframe interval, frame reordering, colour tags and bit rate.
    private static func commonVideoConfiguration(_ s: VideoSettings, timeBase: Rational,
                                                 globalHeader: Bool) throws(MediaError) -> Encoder.Configuration {
        var c = Encoder.Configuration()
        c.width = s.width
        c.height = s.height
        c.timeBase = timeBase
        c.globalHeader = globalHeader
        let fps = s.expectedSourceFrameRate ?? 30
        if fps > 0 { c.frameRate = rational(fps) }
        var gop = s.maxKeyFrameInterval
        if let seconds = s.maxKeyFrameIntervalDuration, seconds > 0 {
            let frames = max(1, Int((seconds * fps).rounded(.down)))
            gop = min(gop ?? frames, frames)
        }
        c.keyframeInterval = gop
        if !s.allowFrameReordering { c.maxBFrames = 0 }
        c.colorPrimaries = s.colorProperties?.primaries
        c.colorTransfer = s.colorProperties?.transfer
        c.colorMatrix = s.colorProperties?.matrix
        c.fullRange = s.colorProperties?.fullRange
        if let par = s.pixelAspectRatio {
            guard par.horizontalSpacing > 0, par.verticalSpacing > 0, par.horizontalSpacing <= Int(Int32.max), par.verticalSpacing <= Int(Int32.max) else {
                throw MediaError(.invalidArgument, "pixel aspect ratio \(par.horizontalSpacing):\(par.verticalSpacing) is not positive")
            }
            c.sampleAspectRatio = Rational(Int32(par.horizontalSpacing), Int32(par.verticalSpacing))
        }
        if let rate = s.averageBitRate {
            guard rate > 0 else { throw MediaError(.invalidArgument, "average bit rate \(rate) is not positive") }
            c.bitRate = Int64(rate)
        }
        if let peak = s.maxBitRate {
            guard peak > 0 else { throw MediaError(.invalidArgument, "peak bit rate \(peak) is not positive") }
            c.maxBitRate = Int64(peak)
            c.bufferSize = s.maxBitRateBufferBits
        }
        return c
    }

    /// The rate-control buffer, in bits, for a `peak` rate held over `window` (one second when
    /// nil or not positive): what a short clip's first keyframe may take beyond its share.
    static func bufferBits(peak: Int, window: MediaTime?) -> Int64 {
        let second = MediaTime(value: 1, timescale: 1)
        let span = window.flatMap { $0.isNumeric && $0 > .zero ? min($0, second) : nil } ?? second
        // peak × value / timescale, rounded up; a span of at most a second keeps it in range.
        let (bits, overflow) = Int64(peak).multipliedReportingOverflow(by: span.value)
        guard !overflow, span.timescale > 0 else { return Int64(peak) }
        return max(1, (bits + Int64(span.timescale) - 1) / Int64(span.timescale))
    }

    /// The rate `encoder` takes nearest to `rate`, as ffmpeg negotiates it (libopus turns 44.1 kHz
    /// into 48 kHz, 22.05 kHz into 24 kHz); `rate` itself when the encoder takes it or any rate.
    static func nearestSampleRate(to rate: Int, forEncoder encoder: String) -> Int {
        let rates = Encoder.sampleRates(ofEncoder: encoder)
        guard !rates.contains(rate) else { return rate }
        return rates.min { abs($0 - rate) < abs($1 - rate) } ?? rate
    }

    /// The encoder and configuration for `settings`.
    static func audioConfiguration(_ s: AudioSettings, globalHeader: Bool) throws(MediaError) -> (name: String, configuration: Encoder.Configuration) {
        let name = try audioEncoderName(s)
        guard s.sampleRate > 0, s.channelCount > 0 else {
            throw MediaError(.invalidArgument, "audio needs a positive sample rate and channel count (got \(s.sampleRate) Hz, \(s.channelCount) channels)")
        }
        let rates = Encoder.sampleRates(ofEncoder: name)
        if !rates.isEmpty && !rates.contains(s.sampleRate) {
            throw MediaError(.invalidArgument, "\(name) cannot encode \(s.sampleRate) Hz; it takes \(rates.map(String.init).joined(separator: ", "))")
        }
        var c = Encoder.Configuration()
        c.sampleRate = s.sampleRate
        // Encoders take only some layouts (AAC refuses an unordered "1 channels" or an unusual
        // 6-channel order): open it with the nearest one it takes; the audio stage remixes.
        let layout = ChannelLayouts.closest(to: s.channelLayout, channelCount: s.channelCount, forEncoder: name)
        c.channelCount = layout.channelCount
        c.channelLayout = layout.name
        c.sampleFormat = Encoder.sampleFormats(ofEncoder: name).first ?? .s16
        c.timeBase = Rational(1, Int32(s.sampleRate))
        c.globalHeader = globalHeader
        if let rate = s.bitRate {
            guard rate > 0 else { throw MediaError(.invalidArgument, "audio bit rate \(rate) is not positive") }
            c.bitRate = Int64(rate)
        }
        return (name, c)
    }

    /// `value` as a rational with a denominator of 1001 for NTSC-style rates, else 1000 reduced.
    static func rational(_ value: Double) -> Rational {
        let ntsc = value * 1001 / 1000
        if abs(ntsc - ntsc.rounded()) < 0.0005, abs(value - value.rounded()) > 0.0005 {
            return Rational(Int32(ntsc.rounded()) * 1000, 1001)
        }
        if abs(value - value.rounded()) < 0.0005 { return Rational(Int32(value.rounded()), 1) }
        return Rational(Int32((value * 1000).rounded()), 1000)
    }
}

import BenchKit
import Foundation
import VAFoundation

/// What a bench job produces from its source: the issue's targets.
enum BenchTarget: String, CaseIterable, Sendable {
    /// H.264 at the assistant's preset for the source's size class (1280x720, 1920x1080, 3840x2160) and its bit rate.
    case h264
    /// HEVC at the matching HEVC preset.
    case hevc
    /// H.264 scaled down to the 1280x720 preset (sources larger than 720p only): the scaling work.
    case h264At720p = "h264-720p"
    /// Passthrough remux: packets copied into a new file.
    case remux
    /// Frame-rate conversion to 30 fps at the source's size class (sources faster than 30 fps only).
    case fps30
    /// MJPEG at the 1280x720 preset: a second codec SoftVA (CI's VA-API driver) encodes and decodes.
    case jpeg

    static let standard: [BenchTarget] = [.h264, .hevc, .h264At720p, .remux, .fps30]
    static let quick: [BenchTarget] = [.h264, .remux, .jpeg]

    /// Why the target does not apply to `source`, nil when it does.
    func inapplicability(to source: SourceInfo) -> String? {
        switch self {
        case .h264At720p where max(source.width, source.height) <= 1280 && min(source.width, source.height) <= 720:
            return "the source is not larger than 720p"
        case .fps30 where source.frameRate <= 30.5:
            return "the source is not faster than 30 fps"
        default:
            return nil
        }
    }

    /// The export preset our runs use for `source`.
    func preset(for source: SourceInfo) -> ExportPreset {
        let shortSide = min(source.width, source.height)
        let sizeClass = shortSide <= 720 ? 720 : shortSide <= 1080 ? 1080 : 2160
        switch self {
        case .remux: return .passthrough
        case .h264At720p, .jpeg: return .preset1280x720
        case .hevc: return sizeClass == 720 ? .hevc1280x720 : sizeClass == 1080 ? .hevc1920x1080 : .hevc3840x2160
        case .h264, .fps30: return sizeClass == 720 ? .preset1280x720 : sizeClass == 1080 ? .preset1920x1080 : .preset3840x2160
        }
    }

    /// The codec replacing the preset's, if any.
    var videoCodecOverride: VideoCodec? { self == .jpeg ? .mjpeg : nil }

    /// The constant output rate the target asks for, nil to keep the source's timing.
    var frameRate: Double? { self == .fps30 ? 30 : nil }

    /// The container: the source's own for remux (when we write it), mov for MJPEG, else mp4.
    func fileType(for source: SourceInfo) -> FileType {
        switch self {
        case .remux:
            let ext = URL(fileURLWithPath: source.path).pathExtension.lowercased()
            return FileType(fileExtension: ext).flatMap { [.mp4, .mov, .mkv].contains($0) ? $0 : nil } ?? .mp4
        case .jpeg: return .mov
        default: return .mp4
        }
    }
}

/// Who runs a job and how: our three paths, and FFmpeg's two baselines.
enum BenchPath: String, CaseIterable, Sendable {
    /// `vaf transcode --hw off`.
    case software
    /// `vaf transcode --hw hybrid`: one side on the device, one transfer per frame.
    case hybrid
    /// `vaf transcode --hw require`: decode, scaling and encode all on the device.
    case hardware
    /// `ffmpeg` with libx264/libx265/mjpeg and the same settings.
    case ffmpeg
    /// `ffmpeg -hwaccel vaapi -hwaccel_output_format vaapi` with scale_vaapi and a *_vaapi encoder.
    case ffmpegVAAPI = "ffmpeg-vaapi"

    var tool: String { self == .ffmpeg || self == .ffmpegVAAPI ? "ffmpeg" : "vaf" }
    var usesDevice: Bool { self == .hybrid || self == .hardware || self == .ffmpegVAAPI }

    /// `vaf transcode --hw` value for our paths.
    var hardwareFlag: String? {
        switch self {
        case .software: "off"
        case .hybrid: "hybrid"
        case .hardware: "require"
        default: nil
        }
    }
}

/// The settings a job's plan chose (by the same ExportSession our runs use), which FFmpeg's
/// baseline copies so both do the same work.
struct JobSettings: Sendable {
    var width: Int?
    var height: Int?
    var videoCodec: VideoCodec?
    var videoBitRate: Int?
    /// The peak rate and its buffer in bits (the cap at what the source needs), nil when unbounded.
    var videoMaxBitRate: Int?
    var videoBufferBits: Int64?
    var profile: String?
    var frameRate: Double?
    /// Keyframe interval in frames.
    var keyframeInterval: Int?
    var audioSampleRate: Int?
    var audioChannels: Int?
    var audioBitRate: Int?

    /// The plan ExportSession makes for this target, without exporting.
    static func plan(source: SourceInfo, target: BenchTarget) async throws -> JobSettings {
        let session = ExportSession(asset: Asset(url: URL(fileURLWithPath: source.path)), preset: target.preset(for: source))
        session.videoCodec = target.videoCodecOverride
        if let fps = target.frameRate { session.frameRatePolicy = .constant(fps) }
        let plan = try await session.plan(fileType: target.fileType(for: source))
        var s = JobSettings()
        if let v = plan.videoSettings {
            s.width = v.width
            s.height = v.height
            s.videoCodec = v.codec
            s.videoBitRate = v.averageBitRate
            s.videoMaxBitRate = v.maxBitRate
            s.videoBufferBits = v.maxBitRateBufferBits
            s.profile = v.profile
            let fps = plan.frameRate ?? v.expectedSourceFrameRate ?? source.frameRate
            s.keyframeInterval = v.maxKeyFrameInterval ?? v.maxKeyFrameIntervalDuration.map { max(1, Int(($0 * fps).rounded(.down))) }
        }
        s.frameRate = plan.frameRate
        if let a = plan.audioSettings {
            s.audioSampleRate = a.sampleRate
            s.audioChannels = a.channelCount
            s.audioBitRate = a.bitRate
        }
        return s
    }

    /// "H.264 1280x720, 4.99 Mbit/s, 30 fps" for people.
    func summary(target: BenchTarget) -> String {
        guard target != .remux else { return "passthrough remux (packets copied)" }
        var parts = [videoCodec.map(Self.codecName) ?? "?"]
        if let width, let height { parts[0] += " \(width)x\(height)" }
        if let videoBitRate { parts.append(String(format: "%.2f Mbit/s", Double(videoBitRate) / 1e6)) }
        if let frameRate { parts.append(String(format: "→ %g fps", frameRate)) }
        return parts.joined(separator: ", ")
    }

    static func codecName(_ codec: VideoCodec) -> String {
        switch codec {
        case .h264: "H.264"
        case .hevc: "HEVC"
        case .mjpeg: "MJPEG"
        default: codec.rawValue
        }
    }
}

/// Builds the command lines of one job's paths.
struct BenchCommands: Sendable {
    let vaf: String
    let ffmpeg: String?
    /// The VA-API device for device paths (render node or X display).
    let device: String?
    /// Whether this vaf's transcode has `--hw` (the hardware export paths); without it only software runs.
    let transcodeHasHardwareOption: Bool

    /// Our `vaf transcode` arguments for `path`, writing into `directory`; nil with the reason when this vaf cannot ask for the path.
    func ours(_ path: BenchPath, source: SourceInfo, target: BenchTarget, directory: URL, name: String) -> Result<[String], BenchSkip> {
        var arguments = ["transcode", source.path, "--output-dir", directory.path, "--name", "\(name).{ext}",
                         "--preset", target.preset(for: source).name, "--container", target.fileType(for: source).fileExtension]
        if let codec = target.videoCodecOverride { arguments += ["--video-codec", codec.rawValue] }
        if let fps = target.frameRate { arguments += ["--frame-rate", String(format: "%g", fps)] }
        if transcodeHasHardwareOption, let flag = path.hardwareFlag {
            arguments += ["--hw", flag]
            if path.usesDevice, let device { arguments += ["--device", device] }
        } else if path != .software {
            return .failure(BenchSkip("this vaf transcode has no --hw option, so only its software path can run"))
        }
        return .success([vaf] + arguments + ["--overwrite", "--json"])
    }

    /// FFmpeg's command for `path` with the same settings; nil with the reason when it has none.
    func ffmpeg(_ path: BenchPath, source: SourceInfo, target: BenchTarget, settings s: JobSettings, output: URL, progress: URL) -> Result<[String], BenchSkip> {
        guard let ffmpeg else { return .failure(BenchSkip("ffmpeg is not installed")) }
        var arguments = [ffmpeg, "-nostdin", "-hide_banner", "-y", "-loglevel", "error", "-threads", "0"]
        let hardware = path == .ffmpegVAAPI
        if hardware {
            guard let device else { return .failure(BenchSkip("no usable VA-API device")) }
            guard target != .remux else { return .failure(BenchSkip("a remux decodes and encodes nothing: no device work")) }
            arguments += ["-init_hw_device", "vaapi=va:\(device)", "-filter_hw_device", "va",
                          "-hwaccel", "vaapi", "-hwaccel_device", "va", "-hwaccel_output_format", "vaapi"]
        }
        arguments += ["-i", source.path, "-map", "0:v:0", "-map", "0:a:0?"]
        if target == .remux {
            arguments += ["-c", "copy"]
        } else {
            guard let width = s.width, let height = s.height, let codec = s.videoCodec else {
                return .failure(BenchSkip("the plan has no video settings to copy"))
            }
            var filters: [String] = []
            if let fps = s.frameRate { filters.append(String(format: "fps=%g", fps)) }
            filters.append(hardware ? "scale_vaapi=w=\(width):h=\(height):format=nv12" : "scale=\(width):\(height)")
            arguments += ["-vf", filters.joined(separator: ",")]
            switch (codec, hardware) {
            case (.h264, false): arguments += ["-c:v", "libx264", "-preset", "medium", "-pix_fmt", "yuv420p"]
            case (.hevc, false): arguments += ["-c:v", "libx265", "-preset", "medium", "-pix_fmt", "yuv420p", "-tag:v", "hvc1"]
            case (.mjpeg, false): arguments += ["-c:v", "mjpeg", "-pix_fmt", "yuvj420p"]
            case (.h264, true): arguments += ["-c:v", "h264_vaapi"]
            case (.hevc, true): arguments += ["-c:v", "hevc_vaapi", "-tag:v", "hvc1"]
            case (.mjpeg, true): arguments += ["-c:v", "mjpeg_vaapi"]
            default: return .failure(BenchSkip("no FFmpeg \(hardware ? "VA-API" : "software") encoder mapped for \(codec)"))
            }
            if let profile = s.profile, codec == .h264 || codec == .hevc { arguments += ["-profile:v", profile] }
            // mjpeg_vaapi has constant quality only: FFmpeg refuses a bit rate for it.
            if let rate = s.videoBitRate, !(hardware && codec == .mjpeg) { arguments += ["-b:v", String(rate)] }
            if let peak = s.videoMaxBitRate, let buffer = s.videoBufferBits, codec != .mjpeg {
                arguments += ["-maxrate", String(peak), "-bufsize", String(buffer)]
            }
            if codec == .mjpeg && s.videoBitRate == nil {
                // Our JPEG exports target a quality, not a rate: the same mapping the writer uses
                // (mjpeg's qscale 2…31, mjpeg_vaapi's JPEG quality 1…100).
                let quality = OutputSettingsAssistant.jpegQuality
                arguments += hardware ? ["-global_quality", String(Int((quality * 100).rounded()))]
                    : ["-q:v", String(Int((2 + 29 * (1 - quality)).rounded()))]
            }
            if let gop = s.keyframeInterval, codec != .mjpeg {
                arguments += codec == .hevc && !hardware ? ["-x265-params", "log-level=error:keyint=\(gop)"] : ["-g", String(gop)]
            } else if codec == .hevc && !hardware {
                arguments += ["-x265-params", "log-level=error"]
            }
            if let rate = s.audioSampleRate, let channels = s.audioChannels {
                arguments += ["-c:a", "aac", "-ar", String(rate), "-ac", String(channels)]
                if let bits = s.audioBitRate { arguments += ["-b:a", String(bits)] }
            }
        }
        // Our exports put the movie index first (ExportSession.shouldOptimizeForNetworkUse),
        // which rewrites the file once more at the end: ask ffmpeg for the same.
        if ["mp4", "mov", "m4a", "m4v"].contains(output.pathExtension.lowercased()) { arguments += ["-movflags", "+faststart"] }
        arguments += ["-progress", progress.path, output.path]
        return .success(arguments)
    }
}

/// Why a path does not run on a job; reported in its row.
struct BenchSkip: Error, Sendable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

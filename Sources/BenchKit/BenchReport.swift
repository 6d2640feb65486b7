import Foundation

/// Everything `vaf bench` measured: the `--json` document. The layout is documented (with its
/// JSON Schema) in Benchmarks/BENCH.md; fields are only ever added, and `schemaVersion` changes
/// when one is removed or changes meaning. Optional values are left out when unknown.
public struct BenchReport: Codable, Sendable {
    /// The layout version of this document.
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    /// When the bench started, ISO 8601 in UTC.
    public var createdAt: String
    public var settings: BenchSettings
    public var machine: MachineInfo
    public var sources: [SourceInfo]
    public var jobs: [JobResult]
    /// Pairwise ratios between paths of the same job (ours against FFmpeg's).
    public var ratios: [RatioResult]
    /// The performance targets, each with the measured value and whether it was met.
    public var targets: [TargetCheck]

    public init(createdAt: String, settings: BenchSettings, machine: MachineInfo, sources: [SourceInfo],
                jobs: [JobResult], ratios: [RatioResult], targets: [TargetCheck]) {
        self.schemaVersion = Self.currentSchemaVersion
        self.createdAt = createdAt
        self.settings = settings
        self.machine = machine
        self.sources = sources
        self.jobs = jobs
        self.ratios = ratios
        self.targets = targets
    }
}

/// How the bench was run.
public struct BenchSettings: Codable, Sendable {
    public var quick: Bool
    /// Unmeasured runs per path before the measured ones.
    public var warmups: Int
    /// Measured runs per path.
    public var runs: Int
    /// Always true: round i runs every path once before round i + 1 starts (A B A B).
    public var interleaved: Bool
    /// Seconds of each synthetic source.
    public var seconds: Double
    /// Video codec of the synthetic sources: h264 or mjpeg.
    public var sourceCodec: String
    public var targets: [String]
    public var paths: [String]
    /// Whether PSNR/SSIM were computed.
    public var quality: Bool

    public init(quick: Bool, warmups: Int, runs: Int, seconds: Double, sourceCodec: String, targets: [String], paths: [String], quality: Bool) {
        self.quick = quick
        self.warmups = warmups
        self.runs = runs
        self.interleaved = true
        self.seconds = seconds
        self.sourceCodec = sourceCodec
        self.targets = targets
        self.paths = paths
        self.quality = quality
    }
}

/// The machine and tools the numbers came from.
public struct MachineInfo: Codable, Sendable {
    public var hostName: String
    public var cpuModel: String?
    public var logicalCores: Int
    public var memoryBytes: Int64
    public var operatingSystem: String
    /// "debug" or "release": debug builds of vaf are far slower; compare release builds.
    public var vafBuild: String
    /// The first line of `ffmpeg -version`; nil when FFmpeg is not used.
    public var ffmpegVersion: String?
    /// The VA-API device the hardware paths used; nil when none is usable.
    public var device: String?
    /// The libva driver of that device ("iHD", "libsoftva").
    public var driver: String?
    /// What the device is, for people: its vendor string, or "CPU-emulated (SoftVA)".
    public var deviceLabel: String?
    /// Why no device is used, when none is.
    public var deviceProblem: String?

    public init(hostName: String, cpuModel: String?, logicalCores: Int, memoryBytes: Int64, operatingSystem: String, vafBuild: String,
                ffmpegVersion: String?, device: String?, driver: String?, deviceLabel: String?, deviceProblem: String?) {
        self.hostName = hostName
        self.cpuModel = cpuModel
        self.logicalCores = logicalCores
        self.memoryBytes = memoryBytes
        self.operatingSystem = operatingSystem
        self.vafBuild = vafBuild
        self.ffmpegVersion = ffmpegVersion
        self.device = device
        self.driver = driver
        self.deviceLabel = deviceLabel
        self.deviceProblem = deviceProblem
    }

    /// True when the device is SoftVA, whose "hardware" runs on the CPU.
    public var isEmulated: Bool { driver == "libsoftva" }
}

/// One clip the jobs read.
public struct SourceInfo: Codable, Sendable {
    /// Short name used in job ids ("720p30", or the file name of an `--input`).
    public var id: String
    public var path: String
    /// True for clips the bench generated itself.
    public var synthetic: Bool
    public var videoCodec: String
    public var width: Int
    public var height: Int
    public var frameRate: Double
    public var seconds: Double
    public var frames: Int
    public var bytes: Int64

    public init(id: String, path: String, synthetic: Bool, videoCodec: String, width: Int, height: Int,
                frameRate: Double, seconds: Double, frames: Int, bytes: Int64) {
        self.id = id
        self.path = path
        self.synthetic = synthetic
        self.videoCodec = videoCodec
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.seconds = seconds
        self.frames = frames
        self.bytes = bytes
    }
}

/// One source × target: the same work done by every path.
public struct JobResult: Codable, Sendable {
    /// "source/target", e.g. "1080p60/fps30".
    public var id: String
    public var source: String
    public var target: String
    /// What the target does, for people ("H.264 1280x720 at 5.0 Mbit/s").
    public var summary: String
    /// The export preset our runs use.
    public var preset: String
    /// The output picture; nil for remux (the source's, unchanged).
    public var outputWidth: Int?
    public var outputHeight: Int?
    /// The constant output frame rate; nil when the source's timing is kept.
    public var outputFrameRate: Double?
    /// Target video bit rate in bits per second; nil for remux and constant-quality encoders.
    public var videoBitRate: Int?
    public var paths: [PathResult]

    public init(id: String, source: String, target: String, summary: String, preset: String, outputWidth: Int?, outputHeight: Int?,
                outputFrameRate: Double?, videoBitRate: Int?, paths: [PathResult]) {
        self.id = id
        self.source = source
        self.target = target
        self.summary = summary
        self.preset = preset
        self.outputWidth = outputWidth
        self.outputHeight = outputHeight
        self.outputFrameRate = outputFrameRate
        self.videoBitRate = videoBitRate
        self.paths = paths
    }
}

/// How one path did on one job.
public struct PathResult: Codable, Sendable {
    /// What a path result's numbers mean.
    public enum Status: String, Codable, Sendable {
        /// Every run completed on the requested path.
        case measured
        /// The path cannot run here (no device, no encoder, no ffmpeg); `reason` says why.
        case skipped
        /// A run failed; `reason` holds the cause.
        case failed
        /// The runs completed but on another path than requested (`actualPath`); kept out of ratios.
        case mismatch
    }

    /// "software", "hybrid", "hardware" (ours), "ffmpeg" or "ffmpeg-vaapi".
    public var path: String
    /// "vaf" or "ffmpeg".
    public var tool: String
    public var status: Status
    public var reason: String?
    /// The path the runs really took, as the transcode reported it; nil for FFmpeg and skipped paths.
    public var actualPath: String?
    /// "CPU-emulated (SoftVA)" for device paths on SoftVA; nil otherwise.
    public var label: String?
    /// The encoder that ran ("libx264 (software)", "h264_vaapi").
    public var encoder: String?
    /// The measured command, program first.
    public var command: [String]
    public var runs: [RunMeasurement]
    /// Medians and spreads over `runs`; nil unless measured (or mismatched).
    public var fps: Statistic?
    public var speed: Statistic?
    public var wallSeconds: Statistic?
    public var cpuSeconds: Statistic?
    public var peakRSSBytes: Statistic?
    /// Output video frames of one run.
    public var frames: Int?
    /// Bytes that crossed between host memory and the device per run (median), and per frame.
    public var hostTransferBytes: Int64?
    public var hostTransferBytesPerFrame: Double?
    /// Where `hostTransferBytes` comes from: "vaf" (the transcode's own count) or "softva" (the driver's counters).
    public var hostTransferSource: String?
    public var outputBytes: Int64?
    /// Output bits per second over the media duration (all tracks).
    public var bitRate: Double?
    /// PSNR/SSIM of the first measured run's output against the source; nil when not computed.
    public var quality: QualitySummary?
    /// Why quality is missing although the runs were measured.
    public var qualityProblem: String?

    public init(path: String, tool: String, status: Status, reason: String? = nil, command: [String] = []) {
        self.path = path
        self.tool = tool
        self.status = status
        self.reason = reason
        self.command = command
        self.runs = []
    }

    /// Whether the numbers describe the requested path and can enter ratios.
    public var isComparable: Bool { status == .measured }
}

/// One measured run of one path.
public struct RunMeasurement: Codable, Sendable {
    /// 0-based index of the measured round (warm-ups are not listed).
    public var round: Int
    public var wallSeconds: Double
    /// User + system CPU seconds of the child process (wait4's rusage).
    public var cpuSeconds: Double
    public var userSeconds: Double
    public var systemSeconds: Double
    /// ru_maxrss of the child, in bytes.
    public var peakRSSBytes: Int64
    public var frames: Int
    /// Output frames per wall-clock second.
    public var fps: Double
    /// Media seconds per wall-clock second.
    public var speed: Double
    public var outputBytes: Int64
    public var hostTransferBytes: Int64?

    public init(round: Int, wallSeconds: Double, userSeconds: Double, systemSeconds: Double, peakRSSBytes: Int64,
                frames: Int, mediaSeconds: Double, outputBytes: Int64, hostTransferBytes: Int64?) {
        self.round = round
        self.wallSeconds = wallSeconds
        self.userSeconds = userSeconds
        self.systemSeconds = systemSeconds
        self.cpuSeconds = userSeconds + systemSeconds
        self.peakRSSBytes = peakRSSBytes
        self.frames = frames
        self.fps = wallSeconds > 0 ? Double(frames) / wallSeconds : 0
        self.speed = wallSeconds > 0 ? mediaSeconds / wallSeconds : 0
        self.outputBytes = outputBytes
        self.hostTransferBytes = hostTransferBytes
    }
}

/// A metric of one path over another on the same job, from the pairs of their interleaved runs.
public struct RatioResult: Codable, Sendable {
    public var job: String
    /// "fps", "peakRSS" or "cpuSeconds".
    public var metric: String
    public var numerator: String
    public var denominator: String
    /// Median, spread and count of numerator[i] / denominator[i].
    public var ratio: Statistic

    public init(job: String, metric: String, numerator: String, denominator: String, ratio: Statistic) {
        self.job = job
        self.metric = metric
        self.numerator = numerator
        self.denominator = denominator
        self.ratio = ratio
    }
}

/// One of the targets, checked against the measurements (reported, never asserted).
public struct TargetCheck: Codable, Sendable {
    public var name: String
    public var description: String
    /// The worst measured value over the jobs it applies to; nil when nothing could be measured.
    public var value: Double?
    public var threshold: Double
    /// nil when it could not be measured.
    public var met: Bool?
    /// The job the worst value came from.
    public var job: String?

    public init(name: String, description: String, value: Double?, threshold: Double, met: Bool?, job: String?) {
        self.name = name
        self.description = description
        self.value = value
        self.threshold = threshold
        self.met = met
        self.job = job
    }
}

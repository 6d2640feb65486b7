/// An export preset (`AVAssetExportPreset…`): codecs, a size box and a bit-rate table.
public struct ExportPreset: Hashable, Sendable, CustomStringConvertible {
    /// The preset's name as AVFoundation spells it after `AVAssetExportPreset` ("1280x720", "HEVCHighestQuality").
    public let name: String
    /// nil for audio-only and passthrough presets.
    public let videoCodec: VideoCodec?
    /// The box the output fits in (landscape; turned for portrait sources); nil keeps the source size.
    public let box: Size?
    /// nil for passthrough.
    public let audioCodec: AudioCodec?
    public let fileTypes: [FileType]
    public let isPassthrough: Bool

    public var description: String { name }

    public static func == (a: ExportPreset, b: ExportPreset) -> Bool { a.name == b.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }

    private init(_ name: String, video: VideoCodec?, box: Size?, audio: AudioCodec?, fileTypes: [FileType], passthrough: Bool = false) {
        self.name = name
        self.videoCodec = video
        self.box = box
        self.audioCodec = audio
        self.fileTypes = fileTypes
        self.isPassthrough = passthrough
    }

    private static let movie: [FileType] = [.mov, .mp4, .m4v, .mkv]

    public static let passthrough = ExportPreset("Passthrough", video: nil, box: nil, audio: nil, fileTypes: FileType.all, passthrough: true)
    public static let lowQuality = ExportPreset("LowQuality", video: .h264, box: Size(width: 224, height: 128), audio: .aac, fileTypes: movie)
    public static let mediumQuality = ExportPreset("MediumQuality", video: .h264, box: Size(width: 568, height: 320), audio: .aac, fileTypes: movie)
    public static let highestQuality = ExportPreset("HighestQuality", video: .h264, box: nil, audio: .aac, fileTypes: movie)
    public static let preset640x480 = ExportPreset("640x480", video: .h264, box: Size(width: 640, height: 480), audio: .aac, fileTypes: movie)
    public static let preset960x540 = ExportPreset("960x540", video: .h264, box: Size(width: 960, height: 540), audio: .aac, fileTypes: movie)
    public static let preset1280x720 = ExportPreset("1280x720", video: .h264, box: Size(width: 1280, height: 720), audio: .aac, fileTypes: movie)
    public static let preset1920x1080 = ExportPreset("1920x1080", video: .h264, box: Size(width: 1920, height: 1080), audio: .aac, fileTypes: movie)
    public static let preset3840x2160 = ExportPreset("3840x2160", video: .h264, box: Size(width: 3840, height: 2160), audio: .aac, fileTypes: movie)
    public static let hevcHighestQuality = ExportPreset("HEVCHighestQuality", video: .hevc, box: nil, audio: .aac, fileTypes: movie)
    /// HEVC at 720p: a preset Apple lacks.
    public static let hevc1280x720 = ExportPreset("HEVC1280x720", video: .hevc, box: Size(width: 1280, height: 720), audio: .aac, fileTypes: movie)
    public static let hevc1920x1080 = ExportPreset("HEVC1920x1080", video: .hevc, box: Size(width: 1920, height: 1080), audio: .aac, fileTypes: movie)
    public static let hevc3840x2160 = ExportPreset("HEVC3840x2160", video: .hevc, box: Size(width: 3840, height: 2160), audio: .aac, fileTypes: movie)
    /// Audio only, AAC in an .m4a.
    public static let appleM4A = ExportPreset("AppleM4A", video: nil, box: nil, audio: .aac, fileTypes: [.m4a])

    /// Every preset, passthrough included.
    public static let all: [ExportPreset] = [
        .passthrough, .lowQuality, .mediumQuality, .highestQuality, .preset640x480, .preset960x540, .preset1280x720,
        .preset1920x1080, .preset3840x2160, .hevcHighestQuality, .hevc1280x720, .hevc1920x1080, .hevc3840x2160, .appleM4A,
    ]

    /// The preset named `name`, case-insensitively, with or without the `AVAssetExportPreset` prefix.
    public init?(named name: String) {
        let key = name.lowercased().replacingOccurrences(of: "avassetexportpreset", with: "")
        guard let preset = ExportPreset.all.first(where: { $0.name.lowercased() == key }) else { return nil }
        self = preset
    }

    /// This preset with another video codec (same name, box, audio and containers): what
    /// `ExportSession.videoCodec` exports with.
    func replacingVideoCodec(_ codec: VideoCodec) -> ExportPreset {
        ExportPreset(name, video: codec, box: box, audio: audioCodec, fileTypes: fileTypes,
                     passthrough: isPassthrough)
    }

    /// The bit-rate table this preset's video follows.
    var bitRateTable: [ExportBitRate.Tier] { videoCodec == .hevc ? ExportBitRate.hevc : ExportBitRate.basic }
}

import Foundation
import VAFoundation

/// The JSON line `vaf info --json` prints per file: a stable schema (`Schemas/vaf-info.schema.json`).
/// Every key is always present; unknown values are null. Video keys appear on video tracks,
/// audio keys on audio tracks.
struct InfoReport: Encodable {
    var path: String
    var container: String?
    var containerLongName: String?
    var durationSeconds: Double?
    var fileSize: Int64?
    var bitRate: Int?
    var tracks: [TrackReport]
    var metadata: [String: String]
    var chapters: [ChapterReport]
    var warnings: [String]
    /// Set instead of the other fields when the file could not be inspected.
    var error: ErrorReport?

    struct ErrorReport: Encodable {
        var code: String
        var message: String
    }

    struct ChapterReport: Encodable {
        var title: String?
        var startSeconds: Double
        var endSeconds: Double
    }

    struct TrackReport: Encodable {
        var trackID: Int
        var mediaType: String
        var codec: String?
        var codecTag: String?
        var profile: String?
        var level: Int?
        var language: String?
        var enabled: Bool
        var startSeconds: Double?
        var durationSeconds: Double?
        var sampleCount: Int
        var bitRate: Int?
        var video: VideoReport?
        var audio: AudioReport?

        enum CodingKeys: String, CodingKey {
            case trackID, mediaType, codec, codecTag, profile, level, language, enabled, startSeconds, durationSeconds, sampleCount, bitRate
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(trackID, forKey: .trackID)
            try c.encode(mediaType, forKey: .mediaType)
            try c.encode(codec, forKey: .codec)
            try c.encode(codecTag, forKey: .codecTag)
            try c.encode(profile, forKey: .profile)
            try c.encode(level, forKey: .level)
            try c.encode(language, forKey: .language)
            try c.encode(enabled, forKey: .enabled)
            try c.encode(startSeconds, forKey: .startSeconds)
            try c.encode(durationSeconds, forKey: .durationSeconds)
            try c.encode(sampleCount, forKey: .sampleCount)
            try c.encode(bitRate, forKey: .bitRate)
            try video?.encode(to: encoder)
            try audio?.encode(to: encoder)
        }
    }

    struct VideoReport: Encodable {
        var width: Int
        var height: Int
        var displayWidth: Int
        var displayHeight: Int
        var rotation: Int
        var mirrored: Bool
        var nominalFrameRate: Double?
        var minFrameDurationSeconds: Double?
        var variableFrameRate: Bool
        var pixelFormat: String?
        var bitDepth: Int?
        var colorPrimaries: String?
        var colorTransfer: String?
        var colorMatrix: String?
        var colorRange: String?
        var fieldOrder: String?
        var attachedPicture: Bool
        /// HDR side data of the stream, null when absent.
        var masteringDisplay: MasteringDisplay? = nil
        var contentLightLevel: ContentLightLevel? = nil
        var dolbyVision: DolbyVisionConfiguration? = nil

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(width, forKey: .width)
            try c.encode(height, forKey: .height)
            try c.encode(displayWidth, forKey: .displayWidth)
            try c.encode(displayHeight, forKey: .displayHeight)
            try c.encode(rotation, forKey: .rotation)
            try c.encode(mirrored, forKey: .mirrored)
            try c.encode(nominalFrameRate, forKey: .nominalFrameRate)
            try c.encode(minFrameDurationSeconds, forKey: .minFrameDurationSeconds)
            try c.encode(variableFrameRate, forKey: .variableFrameRate)
            try c.encode(pixelFormat, forKey: .pixelFormat)
            try c.encode(bitDepth, forKey: .bitDepth)
            try c.encode(colorPrimaries, forKey: .colorPrimaries)
            try c.encode(colorTransfer, forKey: .colorTransfer)
            try c.encode(colorMatrix, forKey: .colorMatrix)
            try c.encode(colorRange, forKey: .colorRange)
            try c.encode(fieldOrder, forKey: .fieldOrder)
            try c.encode(attachedPicture, forKey: .attachedPicture)
            try c.encode(masteringDisplay, forKey: .masteringDisplay)
            try c.encode(contentLightLevel, forKey: .contentLightLevel)
            try c.encode(dolbyVision, forKey: .dolbyVision)
        }

        enum CodingKeys: String, CodingKey {
            case width, height, displayWidth, displayHeight, rotation, mirrored, nominalFrameRate, minFrameDurationSeconds
            case variableFrameRate, pixelFormat, bitDepth, colorPrimaries, colorTransfer, colorMatrix, colorRange, fieldOrder, attachedPicture
            case masteringDisplay, contentLightLevel, dolbyVision
        }
    }

    struct AudioReport: Encodable {
        var sampleRate: Int
        var channels: Int
        var channelLayout: String?
        var sampleFormat: String?

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(sampleRate, forKey: .sampleRate)
            try c.encode(channels, forKey: .channels)
            try c.encode(channelLayout, forKey: .channelLayout)
            try c.encode(sampleFormat, forKey: .sampleFormat)
        }

        enum CodingKeys: String, CodingKey { case sampleRate, channels, channelLayout, sampleFormat }
    }

    /// The version of the line's layout (`Schemas/vaf-info.schema.json`): raised when a key
    /// changes meaning or goes away.
    static let schemaVersion = 1

    enum CodingKeys: String, CodingKey {
        case schemaVersion, path, container, containerLongName, durationSeconds, fileSize, bitRate, tracks, metadata, chapters, warnings, error
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Self.schemaVersion, forKey: .schemaVersion)
        try c.encode(path, forKey: .path)
        if let error {
            try c.encode(error, forKey: .error)
            return
        }
        try c.encode(container, forKey: .container)
        try c.encode(containerLongName, forKey: .containerLongName)
        try c.encode(durationSeconds, forKey: .durationSeconds)
        try c.encode(fileSize, forKey: .fileSize)
        try c.encode(bitRate, forKey: .bitRate)
        try c.encode(tracks, forKey: .tracks)
        try c.encode(metadata, forKey: .metadata)
        try c.encode(chapters, forKey: .chapters)
        try c.encode(warnings, forKey: .warnings)
    }
}

extension InfoReport {
    /// Inspects `path` and builds its report; a failure becomes a report with `error` set.
    static func make(path: String, precise: Bool) async -> (InfoReport, MediaError?) {
        let asset = Asset(url: URL(fileURLWithPath: path), options: .init(prefersPreciseDurationAndTiming: precise))
        do {
            let (format, duration, tracks, metadata, chapters, size, bitRate, warnings) = try await asset.load(
                .containerFormat, .duration, .tracks, .metadata, .chapters, .fileSize, .overallBitRate, .warnings)
            let report = InfoReport(
                path: path, container: format.name, containerLongName: format.longName,
                durationSeconds: finite(duration.seconds), fileSize: size, bitRate: bitRate > 0 ? bitRate : nil,
                tracks: tracks.map(TrackReport.init),
                metadata: Dictionary(metadata.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first }),
                chapters: chapters.map { ChapterReport(title: $0.title, startSeconds: $0.timeRange.start.seconds,
                                                       endSeconds: $0.timeRange.start.seconds + $0.timeRange.duration.seconds) },
                warnings: warnings, error: nil)
            return (report, nil)
        } catch {
            let mediaError = error as? MediaError ?? MediaError(.ioError, "\(error)", path: path)
            let report = InfoReport(path: path, tracks: [], metadata: [:], chapters: [], warnings: [],
                                    error: ErrorReport(code: mediaError.code.rawValue, message: mediaError.description))
            return (report, mediaError)
        }
    }
}

extension InfoReport.TrackReport {
    init(_ track: AssetTrack) {
        let format = track.formatDescription
        let range = track.timeRange
        trackID = track.trackID
        mediaType = track.mediaType.rawValue
        codec = format.codec == "none" ? nil : format.codec
        codecTag = format.codecTag
        profile = format.profile
        level = format.level
        language = track.languageCode
        enabled = track.isEnabled
        startSeconds = finite(range.start.seconds)
        durationSeconds = finite(range.duration.seconds)
        sampleCount = track.sampleCount
        bitRate = track.estimatedDataRate > 0 ? Int(track.estimatedDataRate.rounded()) : nil
        if let v = format.video {
            let display = track.displaySize
            video = InfoReport.VideoReport(
                width: v.width, height: v.height,
                displayWidth: Int(display.width.rounded()), displayHeight: Int(display.height.rounded()),
                rotation: track.preferredTransform.rotationDegrees, mirrored: track.preferredTransform.isMirrored,
                nominalFrameRate: track.nominalFrameRate > 0 ? (Double(track.nominalFrameRate) * 1000).rounded() / 1000 : nil,
                minFrameDurationSeconds: finite(track.minFrameDuration.seconds),
                variableFrameRate: track.isVariableFrameRate, pixelFormat: v.pixelFormat, bitDepth: v.bitDepth,
                colorPrimaries: v.colorPrimaries, colorTransfer: v.colorTransfer, colorMatrix: v.colorMatrix,
                colorRange: v.colorRange, fieldOrder: v.fieldOrder, attachedPicture: track.isAttachedPicture,
                masteringDisplay: v.masteringDisplay, contentLightLevel: v.contentLightLevel, dolbyVision: v.dolbyVision)
        }
        if let a = format.audio {
            audio = InfoReport.AudioReport(sampleRate: a.sampleRate, channels: a.channelCount,
                                           channelLayout: a.channelLayout, sampleFormat: a.sampleFormat)
        }
    }
}

private func finite(_ value: Double) -> Double? { value.isFinite ? value : nil }

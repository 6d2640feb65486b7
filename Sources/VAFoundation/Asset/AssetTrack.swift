/// One track of an asset (`AVAssetTrack`'s role): an immutable snapshot taken when the asset
/// was inspected, so it can be shared freely between tasks.
public final class AssetTrack: Sendable, CustomStringConvertible {
    /// The container's track identifier (mp4 track ID, matroska track number, TS PID), or the
    /// stream's position + 1 when the container has none.
    public let trackID: Int
    public let mediaType: MediaType
    /// One entry: the format of every sample in the track.
    public let formatDescriptions: [FormatDescription]
    /// Where the track's media sits on the asset's timeline.
    public let timeRange: MediaTimeRange
    /// The track's own timescale (units per second of its timestamps).
    public let naturalTimeScale: Int32
    /// Stored picture size (before `preferredTransform`); zero for non-visual tracks.
    public let naturalSize: Size
    /// The transform a player applies when showing the track (rotation, mirroring).
    public let preferredTransform: VideoTransform
    /// Frames per second the track declares or its timestamps show; 0 for non-video tracks.
    public let nominalFrameRate: Float
    /// Shortest interval between consecutive frames; `.invalid` for non-video tracks.
    public let minFrameDuration: MediaTime
    /// True when frame intervals vary beyond timestamp rounding (phone and browser recordings).
    public let isVariableFrameRate: Bool
    /// Average bits per second of sample data.
    public let estimatedDataRate: Float
    /// Bytes of sample data in the file.
    public let totalSampleDataLength: Int64
    /// Number of samples (video frames, audio packets) the track holds.
    public let sampleCount: Int
    /// ISO 639-2/T language code, nil when undetermined ("und").
    public let languageCode: String?
    public let isEnabled: Bool
    /// True when decode order differs from presentation order (B-frames).
    public let requiresFrameReordering: Bool
    /// A still image (cover art) stored as a one-frame video track.
    public let isAttachedPicture: Bool
    /// How the track's media maps onto the asset timeline.
    public let segments: [AssetTrackSegment]
    public let metadata: [MetadataItem]
    /// Position of the track among the demuxer's streams.
    let streamIndex: Int
    /// The container marks the track as played by default (its default disposition), which
    /// `isEnabled` also assumes of every track of a kind none of which is marked.
    let isMarkedDefault: Bool
    /// The file the track was read from (nil for a composition's tracks): what a composition
    /// segment made of this track opens.
    let sourcePath: String?
    /// For a composition's track, the composition track it stands for.
    let compositionTrack: CompositionTrack?

    init(trackID: Int, streamIndex: Int, mediaType: MediaType, formatDescription: FormatDescription,
         timeRange: MediaTimeRange, naturalTimeScale: Int32, naturalSize: Size, preferredTransform: VideoTransform,
         nominalFrameRate: Float, minFrameDuration: MediaTime, isVariableFrameRate: Bool,
         estimatedDataRate: Float, totalSampleDataLength: Int64, sampleCount: Int, languageCode: String?,
         isEnabled: Bool, requiresFrameReordering: Bool, isAttachedPicture: Bool,
         segments: [AssetTrackSegment], metadata: [MetadataItem], sourcePath: String? = nil,
         compositionTrack: CompositionTrack? = nil, isMarkedDefault: Bool = false) {
        self.trackID = trackID
        self.isMarkedDefault = isMarkedDefault
        self.sourcePath = sourcePath
        self.compositionTrack = compositionTrack
        self.streamIndex = streamIndex
        self.mediaType = mediaType
        self.formatDescriptions = [formatDescription]
        self.timeRange = timeRange
        self.naturalTimeScale = naturalTimeScale
        self.naturalSize = naturalSize
        self.preferredTransform = preferredTransform
        self.nominalFrameRate = nominalFrameRate
        self.minFrameDuration = minFrameDuration
        self.isVariableFrameRate = isVariableFrameRate
        self.estimatedDataRate = estimatedDataRate
        self.totalSampleDataLength = totalSampleDataLength
        self.sampleCount = sampleCount
        self.languageCode = languageCode
        self.isEnabled = isEnabled
        self.requiresFrameReordering = requiresFrameReordering
        self.isAttachedPicture = isAttachedPicture
        self.segments = segments
        self.metadata = metadata
    }

    /// The track's format (every track here has exactly one).
    public var formatDescription: FormatDescription { formatDescriptions[0] }

    /// The size a player shows: `naturalSize` after `preferredTransform`.
    public var displaySize: Size { naturalSize.applying(preferredTransform) }

    public var description: String {
        "AssetTrack(\(trackID), \(mediaType), \(formatDescription.codec))"
    }
}

/// One segment of a track's timeline (`AVAssetTrackSegment`'s role): a stretch of media, or an
/// empty stretch (nothing shown) when `isEmpty`.
public struct AssetTrackSegment: Sendable, Hashable {
    public var timeMapping: MediaTimeMapping
    public var isEmpty: Bool { !timeMapping.source.start.isValid }
}

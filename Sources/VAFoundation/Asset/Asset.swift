import Foundation

/// A media file and what it holds (`AVURLAsset`'s role). Properties load asynchronously and
/// are cached: the file is inspected once, on a thread outside Swift's cooperative pool.
///
/// ```swift
/// let asset = Asset(url: URL(fileURLWithPath: "clip.mp4"))
/// let (duration, tracks) = try await asset.load(.duration, .tracks)
/// ```
// @unchecked: open to `Composition`; its own stored properties are immutable, and subclasses keep their state behind a `Locked`.
public class Asset: @unchecked Sendable {
    /// How the asset inspects its file (`AVURLAsset`'s initialisation options).
    public struct Options: Sendable {
        /// Read every packet's timestamp instead of trusting the container's index and header,
        /// for exact durations and frame timing (`AVURLAssetPreferPreciseDurationAndTimingKey`).
        /// Costs one pass over the file.
        public var prefersPreciseDurationAndTiming: Bool
        public init(prefersPreciseDurationAndTiming: Bool = false) {
            self.prefersPreciseDurationAndTiming = prefersPreciseDurationAndTiming
        }
    }

    /// The file (for a composition, `composition:`, which names no file).
    public let url: URL
    public let options: Options
    private let loader: Loader?
    /// The demuxer the inspection opened, for the first reader of the file.
    let inspectedDemuxer = DemuxerHandoff()

    public init(url: URL, options: Options = Options()) {
        self.url = url
        self.options = options
        self.loader = Loader(path: url.path, options: options, handoff: inspectedDemuxer)
    }

    /// An asset whose properties come from `inspection()` as overridden, not from a file.
    init(describedBy url: URL) {
        self.url = url
        self.options = Options()
        self.loader = nil
    }

    /// Loads one or more properties, inspecting the file on first use.
    /// Throws `MediaError` when the file is missing, unreadable, not media, or damaged.
    public func load<each Value: Sendable>(_ property: repeat AssetProperty<each Value>) async throws -> (repeat each Value) {
        let inspection = try await inspection()
        return (repeat (each property).read(inspection))
    }

    /// What the asset holds: the file's inspection, run once (a composition describes itself).
    func inspection() async throws -> AssetInspection {
        guard let loader else { throw MediaError(.invalidState, "the asset has nothing to inspect", path: displayPath) }
        return try await loader.inspection()
    }

    /// How errors name the asset: the file's path, or "composition".
    var displayPath: String { url.isFileURL ? url.path : url.absoluteString.trimmingCharacters(in: [":"]) }

    /// The tracks of one media type, in file order (`loadTracks(withMediaType:)`).
    /// The size of the file at `path`, following symbolic links (a link's own size is that of
    /// the name it holds); nil when it cannot be read.
    public static func fileSize(atPath path: String) -> Int64? {
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        return (try? FileManager.default.attributesOfItem(atPath: target)[.size] as? NSNumber)?.int64Value
    }

    public func loadTracks(withMediaType mediaType: MediaType) async throws -> [AssetTrack] {
        try await load(.tracks).filter { $0.mediaType == mediaType }
    }

    /// The track with `trackID`, nil if there is none (`loadTrack(withTrackID:)`).
    public func loadTrack(withTrackID trackID: Int) async throws -> AssetTrack? {
        try await load(.tracks).first { $0.trackID == trackID }
    }

    /// Runs the inspection once and shares its result (or error) with every caller.
    private actor Loader {
        let path: String
        let options: Options
        let handoff: DemuxerHandoff
        var task: Task<AssetInspection, any Error>?

        init(path: String, options: Options, handoff: DemuxerHandoff) {
            self.path = path
            self.options = options
            self.handoff = handoff
        }

        func inspection() async throws -> AssetInspection {
            if let task { return try await task.value }
            let (path, options, handoff) = (self.path, self.options, self.handoff)
            let task = Task {
                try await withLockedThrowingContinuation { (continuation: LockedContinuation<AssetInspection, any Error>) in
                    DispatchQueue.global(qos: .userInitiated).async {
                        continuation.resume(with: Result { try AssetInspector.inspect(path: path, options: options, handoff: handoff) })
                    }
                }
            }
            self.task = task
            return try await task.value
        }
    }
}

/// A property `Asset.load` can fetch (`AVAsyncProperty`'s role).
public struct AssetProperty<Value: Sendable>: Sendable {
    let read: @Sendable (AssetInspection) -> Value

    /// Overall duration: the container's, or the end of the longest track when it has none.
    public static var duration: AssetProperty<MediaTime> { .init { $0.duration } }
    /// Every track in file order.
    public static var tracks: AssetProperty<[AssetTrack]> { .init { $0.tracks } }
    /// Container-level metadata, sorted by key.
    public static var metadata: AssetProperty<[MetadataItem]> { .init { $0.metadata } }
    /// The metadata items that map to a common identifier (title, creation date, location…).
    public static var commonMetadata: AssetProperty<[MetadataItem]> { .init { $0.metadata.filter { $0.identifier != nil } } }
    /// The container format as FFmpeg names it.
    public static var containerFormat: AssetProperty<ContainerFormat> { .init { $0.containerFormat } }
    public static var chapters: AssetProperty<[Chapter]> { .init { $0.chapters } }
    /// File size in bytes.
    public static var fileSize: AssetProperty<Int64> { .init { $0.fileSize } }
    /// Overall bit rate the container declares (0 when it doesn't).
    public static var overallBitRate: AssetProperty<Int> { .init { $0.bitRate } }
    /// Problems found while inspecting that did not stop it (truncation, unreadable packets).
    public static var warnings: AssetProperty<[String]> { .init { $0.warnings } }
}

/// The container format of an asset, as FFmpeg names it ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm").
public struct ContainerFormat: Sendable, Hashable, Codable {
    public var name: String
    public var longName: String?
}

/// A chapter marker: a titled stretch of the asset's timeline.
public struct Chapter: Sendable, Hashable {
    public var title: String?
    public var timeRange: MediaTimeRange

    public init(title: String?, timeRange: MediaTimeRange) {
        self.title = title
        self.timeRange = timeRange
    }

    /// `chapters` on an export's timeline of `start ..< end` of the source: each cut to the
    /// export's part and moved to start at 0; chapters outside it are left out.
    static func carriedOver(_ chapters: [Chapter], from start: MediaTime, to end: MediaTime) -> [Chapter] {
        chapters.compactMap { chapter in
            let first = max(chapter.timeRange.start, start)
            let last = min(chapter.timeRange.end, end)
            guard first.isNumeric, last.isNumeric, last > first else { return nil }
            return Chapter(title: chapter.title, timeRange: MediaTimeRange(start: first - start, end: last - start))
        }
    }
}

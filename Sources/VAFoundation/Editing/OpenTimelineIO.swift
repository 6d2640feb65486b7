import Foundation

/// Reads OpenTimelineIO timelines (`.otio`, OTIO's JSON) into compositions, so an edit made
/// in any OTIO-speaking editor can be rendered with `ExportSession`.
///
/// What is read: the timeline's `tracks` Stack; each enabled `Video` or `Audio` Track becomes
/// one composition track of that kind; on it, Clips (`Clip.1`'s `media_reference`, `Clip.2`'s
/// `media_references` + `active_media_reference_key`) insert their `source_range` (else the
/// media's `available_range`, else the whole file) of the file's first track of that kind, one
/// after another; Gaps and disabled clips insert empty time. Source times are in the media's
/// own coordinates: the file's time is the source time minus `available_range.start_time`
/// (so timecode-based ranges such as 01:00:00:00 work), or the source time itself when the
/// media reference gives no range.
///
/// A Track's or the Stack's `source_range` keeps that part of it, from zero. Transitions are
/// dissolves (`TimelineReport.videoComposition`, `.audioMix`); a `LinearTimeWarp` keeps the
/// clip's length and plays `time_scalar` times its media.
///
/// Refused, each with a one-line `MediaError` naming the timeline file, the clip and the
/// cause: a transition not between two clips, other effects (`FreezeFrame`, generic
/// `Effect`s), nested stacks, references other than `ExternalReference` (`MissingReference`,
/// image sequences, generators), unknown schemas, track kinds other than Video/Audio, missing
/// or unreadable media, malformed JSON.
///
/// Times: a `RationalTime` (value, rate) is `value / rate` seconds, kept exact as a
/// `MediaTime` (see `mediaTime(value:rate:)`).
public enum OpenTimelineIO {
    /// The composition a timeline file describes, and what went into it.
    public static func composition(contentsOf url: URL) async throws -> (MutableComposition, TimelineReport) {
        let file = url.path
        guard FileManager.default.fileExists(atPath: file) else {
            throw MediaError(.fileNotFound, "the timeline file does not exist", path: file)
        }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw MediaError(.ioError, "cannot read the timeline: \(oneLine(error.localizedDescription))", path: file)
        }
        let timeline = try TimelineParser(file: url).parse(data)
        return try await TimelineBuilder(file: url, timeline: timeline).build()
    }

    /// `value / rate` seconds as an exact `MediaTime`, or nil for a non-finite value or a rate
    /// that is not positive and finite.
    ///
    /// The rule: an integral rate is the timescale; a rate within 1e-3 of an NTSC rate
    /// `n × 1000/1001` (23.976, 29.97, 59.94…) is taken as that exact fraction; any other rate
    /// is `round(1000 × rate) / 1000`. A fractional value is scaled by 10, 100 or 1000 until it
    /// is whole (within 1e-6), else rounded at 1/1000 of a frame.
    public static func mediaTime(value: Double, rate: Double) -> MediaTime? {
        guard value.isFinite, let (numerator, denominator) = exactRate(rate) else { return nil }
        var scale: Int64 = 1
        while scale < 1000, abs(value * Double(scale) - (value * Double(scale)).rounded()) > 1e-6 { scale *= 10 }
        let frames = (value * Double(scale)).rounded()
        let timescale = numerator * scale
        guard abs(frames) < 9e15 / Double(denominator), timescale <= Int64(Int32.max) else { return nil }
        return MediaTime(value: Int64(frames) * denominator, timescale: Int32(timescale))
    }

    /// An OTIO rate as frames per second, numerator / denominator, by the rule of
    /// `mediaTime(value:rate:)`; nil unless positive and finite.
    static func exactRate(_ rate: Double) -> (numerator: Int64, denominator: Int64)? {
        guard rate.isFinite, rate > 0, rate < 1e6 else { return nil }
        let n = (rate * 1.001).rounded()
        if abs(rate - rate.rounded()) < 1e-9 { return (Int64(rate.rounded()), 1) }
        if n > 0, abs(rate - n * 1000 / 1001) < 1e-3 { return (Int64(n) * 1000, 1001) }
        let thousandths = Int64((rate * 1000).rounded())
        return thousandths > 0 ? (thousandths, 1000) : nil
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}

/// What a timeline put into its composition: the tracks and clips used, the tracks left out,
/// and warnings about what was read but ignored.
public struct TimelineReport: Sendable {
    /// One timeline track that became a composition track.
    public struct Track: Sendable, Hashable {
        /// The track's name in the timeline ("" when it has none).
        public var name: String
        /// Video or audio, as the track's `kind`.
        public var mediaType: MediaType
        /// The composition track it became.
        public var compositionTrackID: Int
        /// Clips that play.
        public var clips: Int
        /// Clips with `enabled: false`, placed as empty time.
        public var disabledClips: Int
        /// Gaps, placed as empty time.
        public var gaps: Int
        /// The track's length on the timeline.
        public var duration: MediaTime
    }

    /// One clip placed on the composition.
    public struct Clip: Sendable, Hashable {
        /// The clip's name in the timeline ("" when it has none).
        public var name: String
        /// The name of the timeline track it is on.
        public var trackName: String
        /// The media file; nil for a disabled clip whose media was not needed.
        public var url: URL?
        /// The range of the file's track that plays (file time); nil for a disabled clip.
        public var sourceRange: MediaTimeRange?
        /// Where it sits on the composition.
        public var targetRange: MediaTimeRange
        /// False for a clip placed as empty time.
        public var isEnabled: Bool
    }

    /// The timeline's name ("" when it has none).
    public var name: String
    /// The timeline's frame rate in frames per second (NTSC rates exact, e.g. 30000/1001):
    /// the rate of `global_start_time`, else of the first video clip's or gap's `source_range`;
    /// nil when it names none. Renders use it as their constant output rate.
    public var frameRate: Double?
    /// The tracks that became composition tracks, in the timeline's order.
    public var tracks: [Track] = []
    /// Every clip placed, track by track, in timeline order.
    public var clips: [Clip] = []
    /// Names of tracks left out because they are disabled or empty.
    public var skippedTracks: [String] = []
    /// What was read but not applied (effects, clips trimmed away, media shorter than a clip…), one line each.
    public var warnings: [String] = []
    /// Dissolves placed (video and audio).
    public var transitions = 0
    /// How the video tracks are drawn: stacked as the timeline orders them (later tracks on
    /// top, each showing only where it has media), with the dissolves as opacity ramps. Nil
    /// for one video track without transitions, which plays as it is.
    public var videoComposition: VideoComposition?
    /// The audio tracks' volumes: dissolves as crossfades. Nil when no audio track has one.
    public var audioMix: AudioMix?

    /// The number of gaps over all tracks.
    public var gaps: Int { tracks.reduce(0) { $0 + $1.gaps } }
    /// The length of the longest track.
    public var duration: MediaTime { tracks.map(\.duration).max() ?? .zero }
}

// MARK: - JSON

/// A JSON value as OTIO files hold it: schemas are named inside the objects, so the tree is
/// read generically and then interpreted.
enum OTIOValue: Decodable, Sendable {
    case null, bool(Bool), number(Double), string(String), array([OTIOValue]), object([String: OTIOValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let b = try? container.decode(Bool.self) { self = .bool(b) }
        else if let n = try? container.decode(Double.self) { self = .number(n) }
        else if let s = try? container.decode(String.self) { self = .string(s) }
        else if let a = try? container.decode([OTIOValue].self) { self = .array(a) }
        else { self = .object(try container.decode([String: OTIOValue].self)) }
    }

    subscript(key: String) -> OTIOValue? {
        if case .object(let fields) = self, let value = fields[key] { if case .null = value { return nil }; return value }
        return nil
    }

    var string: String? { if case .string(let s) = self { s } else { nil } }
    var number: Double? { if case .number(let n) = self { n } else { nil } }
    var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    var array: [OTIOValue]? { if case .array(let a) = self { a } else { nil } }
    /// `OTIO_SCHEMA`, e.g. "Clip.2".
    var schema: String? { self["OTIO_SCHEMA"]?.string }
    /// The schema's name without its version ("Clip").
    var schemaName: String? { schema.map { String($0.split(separator: ".").first ?? "") } }
}

// MARK: - Parsing

/// A timeline as far as the JSON alone tells: no file is opened yet.
struct ParsedTimeline {
    struct Track {
        var name: String
        var mediaType: MediaType
        var isEnabled: Bool
        var items: [Item]
        /// The track's `source_range`: the part of its content it shows, from zero.
        var trim: MediaTimeRange?
    }

    enum Item {
        case clip(Clip)
        case gap(name: String, duration: MediaTime)
        /// A dissolve across the cut between the neighbouring clips: it starts `inOffset`
        /// before the cut and ends `outOffset` after it.
        case transition(name: String, inOffset: MediaTime, outOffset: MediaTime)
    }

    struct Clip {
        enum Media { case file(URL), missing(String) }
        var name: String
        var media: Media
        /// In the media's coordinates (OTIO's), not yet the file's.
        var sourceRange: MediaTimeRange?
        var availableRange: MediaTimeRange?
        var isEnabled: Bool
        /// A `LinearTimeWarp`'s `time_scalar` as a fraction: 2/1 plays the source range twice
        /// as fast, in half its length on the track.
        var speed: (numerator: Int32, denominator: Int32) = (1, 1)
    }

    var name: String
    var tracks: [Track]
    var warnings: [String]
    /// The OTIO rate the timeline is edited at (see `TimelineReport.frameRate`).
    var rate: Double?
    /// The tracks Stack's `source_range`: the part of the whole timeline it shows.
    var trim: MediaTimeRange?
}

/// Turns the JSON tree into a `ParsedTimeline`, refusing what cannot be rendered.
struct TimelineParser {
    let file: URL

    func fail(_ code: MediaError.Code, _ message: String) -> MediaError {
        MediaError(code, OpenTimelineIO.oneLine(message), path: file.path)
    }

    /// Something the timeline holds that cannot be rendered (yet).
    func fail(_ message: String) -> MediaError { fail(.unsupported, message) }

    func parse(_ data: Data) throws -> ParsedTimeline {
        let root: OTIOValue
        do { root = try JSONDecoder().decode(OTIOValue.self, from: data) } catch {
            throw fail(.corruptOrTruncated, "not valid OpenTimelineIO JSON: \(Self.reason(error))")
        }
        guard root.schemaName == "Timeline" else {
            throw fail("the top-level object is \(root.schema.map { "\"\($0)\"" } ?? "not an OTIO object"), not a Timeline")
        }
        guard let stack = root["tracks"], stack.schemaName == "Stack" else {
            throw fail(.corruptOrTruncated, "the timeline has no \"tracks\" Stack")
        }
        var warnings: [String] = []
        var tracks: [ParsedTimeline.Track] = []
        for (index, child) in (stack["children"]?.array ?? []).enumerated() {
            let place = "track \(index + 1)\(child["name"]?.string.map { " \"\($0)\"" } ?? "")"
            guard child.schemaName == "Track" else {
                if child.schemaName == "Stack" { throw fail("\(place): a nested Stack is not supported; flatten it into tracks") }
                throw fail("\(place): unknown schema \(child.schema.map { "\"\($0)\"" } ?? "(none)") where a Track was expected")
            }
            tracks.append(try track(child, where: place, warnings: &warnings))
        }
        return ParsedTimeline(name: root["name"]?.string ?? "", tracks: tracks, warnings: warnings, rate: rate(root, stack),
                              trim: try timeRange(stack["source_range"], field: "source_range", where: "the tracks Stack"))
    }

    /// `global_start_time`'s rate, else the rate of the first video item's `source_range`.
    func rate(_ root: OTIOValue, _ stack: OTIOValue) -> Double? {
        if let rate = root["global_start_time"]?["rate"]?.number { return rate }
        for track in stack["children"]?.array ?? [] where track["kind"]?.string == "Video" {
            for item in track["children"]?.array ?? [] {
                if let rate = item["source_range"]?["duration"]?["rate"]?.number { return rate }
            }
        }
        return nil
    }

    func track(_ json: OTIOValue, where place: String, warnings: inout [String]) throws -> ParsedTimeline.Track {
        let kind = json["kind"]?.string ?? ""
        let mediaType: MediaType
        switch kind {
        case "Video": mediaType = .video
        case "Audio": mediaType = .audio
        default: throw fail("\(place): track kind \"\(kind)\" is not supported; use Video or Audio")
        }
        var items: [ParsedTimeline.Item] = []
        for (index, child) in (json["children"]?.array ?? []).enumerated() {
            let name = child["name"]?.string ?? ""
            let itemPlace = "\(place), item \(index + 1)\(name.isEmpty ? "" : " \"\(name)\"")"
            switch child.schemaName {
            case "Clip": items.append(.clip(try clip(child, name: name, where: itemPlace, warnings: &warnings)))
            case "Gap":
                guard let range = try timeRange(child["source_range"], field: "source_range", where: itemPlace) else {
                    throw fail(.corruptOrTruncated, "\(itemPlace): the gap has no source_range")
                }
                items.append(.gap(name: name, duration: range.duration))
            case "Transition":
                let kind = child["transition_type"]?.string ?? "SMPTE_Dissolve"
                if kind != "SMPTE_Dissolve" {
                    warnings.append("\(itemPlace): transition type \(kind) is rendered as a dissolve (SMPTE_Dissolve)")
                }
                let inOffset = try time(child["in_offset"], field: "in_offset", where: itemPlace)
                let outOffset = try time(child["out_offset"], field: "out_offset", where: itemPlace)
                guard inOffset >= .zero, outOffset >= .zero else {
                    throw fail(.corruptOrTruncated, "\(itemPlace): the transition's in_offset and out_offset must not be negative")
                }
                items.append(.transition(name: name, inOffset: inOffset, outOffset: outOffset))
            case "Stack", "Track":
                throw fail("\(itemPlace): a nested \(child.schemaName!) inside a track is not supported; flatten it into clips and gaps")
            default:
                throw fail("\(itemPlace): unknown schema \(child.schema.map { "\"\($0)\"" } ?? "(none)")")
            }
        }
        return ParsedTimeline.Track(name: json["name"]?.string ?? "", mediaType: mediaType,
                                    isEnabled: json["enabled"]?.bool ?? true, items: items,
                                    trim: try timeRange(json["source_range"], field: "source_range", where: place))
    }

    func clip(_ json: OTIOValue, name: String, where place: String, warnings: inout [String]) throws -> ParsedTimeline.Clip {
        let clipPlace = "clip \"\(name)\" (\(place))"
        // Clip.2: a dictionary of references and the key of the active one; Clip.1: one reference.
        let reference: OTIOValue?
        if let references = json["media_references"] {
            let key = json["active_media_reference_key"]?.string ?? "DEFAULT_MEDIA"
            reference = references[key]
            if reference == nil { throw fail(.corruptOrTruncated, "\(clipPlace): no media reference named \"\(key)\" (active_media_reference_key)") }
        } else {
            reference = json["media_reference"]
        }
        guard let reference else { throw fail(.corruptOrTruncated, "\(clipPlace): the clip has no media reference") }
        let media: ParsedTimeline.Clip.Media
        switch reference.schemaName {
        case "ExternalReference":
            guard let target = reference["target_url"]?.string, !target.isEmpty else {
                throw fail(.corruptOrTruncated, "\(clipPlace): the ExternalReference has no target_url")
            }
            media = .file(try resolve(target, where: clipPlace))
        case "MissingReference":
            media = .missing(reference["name"]?.string ?? "")
        default:
            throw fail("\(clipPlace): media reference \(reference.schema.map { "\"\($0)\"" } ?? "(none)") is not supported; use an ExternalReference to a file")
        }
        // Linear speed changes are applied; any other effect is refused, never dropped.
        var speed: (numerator: Int32, denominator: Int32) = (1, 1)
        for effect in json["effects"]?.array ?? [] {
            let effectName = effect["effect_name"]?.string ?? effect["name"]?.string ?? ""
            switch effect.schemaName {
            case "LinearTimeWarp":
                guard let scalar = effect["time_scalar"]?.number, scalar.isFinite, scalar > 0 else {
                    throw fail("\(clipPlace): a LinearTimeWarp with time_scalar \(effect["time_scalar"]?.number.map { "\($0)" } ?? "missing") is not supported (a freeze or reverse); use a positive speed")
                }
                // Kept exact to a thousandth: 1.5 is 3/2.
                let thousandths = Int32(clamping: Int64((scalar * 1000).rounded()))
                guard thousandths > 0 else { throw fail("\(clipPlace): time_scalar \(scalar) is too small (under 1/1000)") }
                speed = Self.reduced(Int64(speed.numerator) * Int64(thousandths), Int64(speed.denominator) * 1000)
            case "FreezeFrame":
                throw fail("\(clipPlace): a FreezeFrame effect is not supported; render the held frame as a still clip instead")
            default:
                throw fail("\(clipPlace): effect \(effect.schema.map { "\"\($0)\"" } ?? "(no schema)")\(effectName.isEmpty ? "" : " (\(effectName))") is not supported; remove it from the clip (only LinearTimeWarp speed changes are)")
            }
        }
        return ParsedTimeline.Clip(
            name: name, media: media,
            sourceRange: try timeRange(json["source_range"], field: "source_range", where: clipPlace),
            availableRange: try timeRange(reference["available_range"], field: "available_range", where: clipPlace),
            isEnabled: json["enabled"]?.bool ?? true, speed: speed)
    }

    /// `numerator / denominator` in lowest terms, each clamped to `Int32`.
    static func reduced(_ numerator: Int64, _ denominator: Int64) -> (numerator: Int32, denominator: Int32) {
        var (a, b) = (numerator, denominator)
        while b != 0 { (a, b) = (b, a % b) }
        let g = max(a, 1)
        return (Int32(clamping: numerator / g), Int32(clamping: denominator / g))
    }

    /// A `target_url` as a file: `file://` URLs, absolute paths, and paths relative to the
    /// timeline's folder.
    func resolve(_ target: String, where place: String) throws -> URL {
        if let url = URL(string: target), let scheme = url.scheme?.lowercased(), scheme.count > 1 {
            guard scheme == "file" else { throw fail("\(place): target_url \(target) is not a local file (only file:// URLs and paths)") }
            return URL(fileURLWithPath: url.path).standardizedFileURL
        }
        if target.hasPrefix("/") { return URL(fileURLWithPath: target).standardizedFileURL }
        return file.deletingLastPathComponent().appendingPathComponent(target).standardizedFileURL
    }

    func timeRange(_ json: OTIOValue?, field: String, where place: String) throws -> MediaTimeRange? {
        guard let json else { return nil }
        guard json.schemaName == "TimeRange" else {
            throw fail(.corruptOrTruncated, "\(place): \(field) is \(json.schema.map { "\"\($0)\"" } ?? "not an OTIO object"), not a TimeRange")
        }
        let start = try time(json["start_time"], field: "\(field).start_time", where: place)
        let duration = try time(json["duration"], field: "\(field).duration", where: place)
        guard duration >= .zero else { throw fail(.corruptOrTruncated, "\(place): \(field) has a negative duration") }
        return MediaTimeRange(start: start, duration: duration)
    }

    func time(_ json: OTIOValue?, field: String, where place: String) throws -> MediaTime {
        guard let json, json.schemaName == "RationalTime", let value = json["value"]?.number, let rate = json["rate"]?.number,
              let time = OpenTimelineIO.mediaTime(value: value, rate: rate) else {
            throw fail(.corruptOrTruncated, "\(place): \(field) is not a RationalTime with a finite value and a positive rate")
        }
        return time
    }

    /// The decoder's reason, in one line.
    static func reason(_ error: any Error) -> String {
        let text: String = switch error {
        case DecodingError.dataCorrupted(let context): context.underlyingError.map { "\(context.debugDescription) \($0.localizedDescription)" } ?? context.debugDescription
        default: "\(error)"
        }
        return OpenTimelineIO.oneLine(text)
    }
}

// MARK: - Building

/// Opens the media a parsed timeline names and lays its tracks into a composition.
struct TimelineBuilder {
    let file: URL
    let timeline: ParsedTimeline

    func fail(_ code: MediaError.Code, _ message: String, underlying: (any Error & Sendable)? = nil) -> MediaError {
        MediaError(code, OpenTimelineIO.oneLine(message), path: file.path, underlying: underlying)
    }

    /// What laying the tracks gathers across them: each file's tracks (opened once), which of
    /// the report's clips each composition track holds (for trimming), the clips a
    /// `source_range` trims away entirely, the dissolves placed and the track beneath each
    /// timeline track that has some.
    struct Layout {
        var tracksByFile: [URL: [AssetTrack]] = [:]
        var clipsOfTrack: [Int: Range<Int>] = [:]
        var trimmedAway = Set<Int>()
        var dissolves: [Dissolve] = []
        var secondaryOf: [Int: MutableCompositionTrack] = [:]
    }

    /// Where laying one track has got to.
    struct TrackCursor {
        var used: TimelineReport.Track
        var position = MediaTime.zero
        /// The last enabled clip placed (its file track and range) while nothing followed it,
        /// and a transition waiting for the clip after it.
        var outgoing: (source: AssetTrack, range: MediaTimeRange)?
        var pending: (name: String, inOffset: MediaTime, outOffset: MediaTime)?
        /// The track beneath, holding the incoming clips of dissolves.
        var secondary: MutableCompositionTrack?
    }

    func build() async throws -> (MutableComposition, TimelineReport) {
        let composition = MutableComposition()
        var report = TimelineReport(name: timeline.name, warnings: timeline.warnings)
        report.frameRate = timeline.rate.flatMap(OpenTimelineIO.exactRate).map { Double($0.numerator) / Double($0.denominator) }
        var layout = Layout()
        for (index, track) in timeline.tracks.enumerated() {
            try await lay(track, index: index, into: composition, layout: &layout, report: &report)
        }
        if let trim = timeline.trim {
            for i in report.tracks.indices {
                let id = report.tracks[i].compositionTrackID
                guard let target = composition.mutableTrack(withTrackID: id) else { continue }
                layout.trimmedAway.formUnion(try keep(trim, of: target, length: report.tracks[i].duration, where: "the tracks Stack",
                                                      report: &report, clips: layout.clipsOfTrack[id] ?? 0..<0))
                if let second = layout.secondaryOf[id] {
                    _ = try keep(trim, of: second, length: second.timeRange.end, where: "the tracks Stack", report: &report, clips: 0..<0)
                }
                shift(&layout.dissolves, onTrack: id, by: trim)
                report.tracks[i].duration = trim.duration
            }
        }
        if !layout.trimmedAway.isEmpty {
            report.clips = report.clips.enumerated().filter { !layout.trimmedAway.contains($0.offset) }.map(\.element)
            let one = layout.trimmedAway.count == 1
            report.warnings.append("\(layout.trimmedAway.count) clip\(one ? " falls" : "s fall") outside a source_range and \(one ? "is" : "are") left out")
        }
        guard !report.tracks.isEmpty else {
            throw fail(.noTracks, "the timeline has no enabled Video or Audio track with anything on it")
        }
        report.videoComposition = videoComposition(of: composition, report: report, secondaryOf: layout.secondaryOf, dissolves: layout.dissolves)
        report.audioMix = audioMix(of: composition, dissolves: layout.dissolves)
        return (composition, report)
    }

    /// Lays one timeline track into a composition track of its own: its clips, gaps and
    /// transitions in order, then its `source_range`. A disabled or empty track is left out.
    private func lay(_ track: ParsedTimeline.Track, index: Int, into composition: MutableComposition, layout: inout Layout,
                     report: inout TimelineReport) async throws {
        let trackName = track.name.isEmpty ? "track \(index + 1)" : "track \(index + 1) \"\(track.name)\""
        guard track.isEnabled, !track.items.isEmpty else {
            report.skippedTracks.append(track.name.isEmpty ? "track \(index + 1)" : track.name)
            if track.isEnabled { report.warnings.append("\(trackName) is empty and left out") }
            return
        }
        guard let target = composition.addMutableTrack(withMediaType: track.mediaType) else {
            preconditionFailure("a fresh composition track ID is always free")
        }
        var cursor = TrackCursor(used: TimelineReport.Track(name: track.name, mediaType: track.mediaType, compositionTrackID: target.trackID,
                                                            clips: 0, disabledClips: 0, gaps: 0, duration: .zero))
        let firstClip = report.clips.count
        for item in track.items {
            if case .transition = item {} else if case .clip = item {} else if cursor.pending != nil {
                throw fail(.invalidArgument, "\(trackName): a transition must stand between two clips")
            }
            switch item {
            case .transition(let name, let inOffset, let outOffset):
                guard cursor.outgoing != nil, cursor.pending == nil else {
                    throw fail(.invalidArgument, "\(trackName): transition \"\(name)\" must stand between two clips")
                }
                cursor.pending = (name, inOffset, outOffset)
            case .gap(_, let duration):
                cursor.outgoing = nil
                try insertEmpty(duration, at: cursor.position, into: target, where: trackName)
                cursor.used.gaps += 1
                cursor.position = cursor.position + duration
            case .clip(let clip):
                try await place(clip, of: track, named: trackName, on: target, in: composition, cursor: &cursor, layout: &layout, report: &report)
            }
        }
        if cursor.pending != nil { throw fail(.invalidArgument, "\(trackName): the track ends with a transition; it must stand between two clips") }
        cursor.used.duration = cursor.position
        layout.clipsOfTrack[target.trackID] = firstClip..<report.clips.count
        if let second = cursor.secondary { layout.secondaryOf[target.trackID] = second }
        if let trim = track.trim {
            layout.trimmedAway.formUnion(try keep(trim, of: target, length: cursor.position, where: trackName, report: &report,
                                                  clips: firstClip..<report.clips.count))
            if let second = cursor.secondary { _ = try keep(trim, of: second, length: second.timeRange.end, where: trackName, report: &report, clips: 0..<0) }
            shift(&layout.dissolves, onTrack: target.trackID, by: trim)
            cursor.used.duration = trim.duration
        }
        report.tracks.append(cursor.used)
    }

    /// Places one clip at the cursor: its media's range (at its speed), or its time left empty
    /// when it is disabled; and the dissolve waiting for it, over the track beneath.
    private func place(_ clip: ParsedTimeline.Clip, of track: ParsedTimeline.Track, named trackName: String,
                       on target: MutableCompositionTrack, in composition: MutableComposition, cursor: inout TrackCursor,
                       layout: inout Layout, report: inout TimelineReport) async throws {
        let place = "clip \"\(clip.name)\" (\(trackName))"
        if clip.sourceRange?.duration == .zero {
            report.warnings.append("\(place) lasts no time and is left out")
            return
        }
        if !clip.isEnabled, let duration = (clip.sourceRange ?? clip.availableRange)?.duration {
            if cursor.pending != nil { throw fail(.invalidArgument, "\(place): a transition leads into this disabled clip") }
            cursor.outgoing = nil
            // Disabled: its time stays, empty; its media is not needed.
            try insertEmpty(duration, at: cursor.position, into: target, where: place)
            report.clips.append(.init(name: clip.name, trackName: track.name, url: nil, sourceRange: nil,
                                      targetRange: MediaTimeRange(start: cursor.position, duration: duration), isEnabled: false))
            cursor.used.disabledClips += 1
            cursor.position = cursor.position + duration
            return
        }
        let (url, source) = try await sourceTrack(of: clip, kind: track.mediaType, where: place, cache: &layout.tracksByFile)
        let trimmed = try fileRange(of: clip, in: source, where: place, warnings: &report.warnings)
        let changesSpeed = clip.speed != (1, 1)
        // A LinearTimeWarp keeps the clip's length on the track (OTIO leaves time effects
        // out of its ranges) and plays `speed` times as much media from the same start.
        let length = trimmed.duration
        let range = changesSpeed
            ? playedRange(of: trimmed, at: clip.speed, in: source, where: place, warnings: &report.warnings) : trimmed
        if changesSpeed && (cursor.pending != nil) {
            throw fail(.invalidArgument, "\(place): a transition next to a clip with a speed change is not supported")
        }
        if clip.isEnabled {
            do {
                try target.insertTimeRange(range, of: source, at: cursor.position)
                if changesSpeed { try target.scaleTimeRange(MediaTimeRange(start: cursor.position, duration: range.duration), toDuration: length) }
            } catch {
                throw fail(.invalidArgument, "\(place): cannot place \(Self.seconds(range)) of \(url.lastPathComponent): \(error)", underlying: error)
            }
            cursor.used.clips += 1
        } else {
            try insertEmpty(length, at: cursor.position, into: target, where: place)
            cursor.used.disabledClips += 1
        }
        report.clips.append(.init(name: clip.name, trackName: track.name, url: url, sourceRange: clip.isEnabled ? range : nil,
                                  targetRange: MediaTimeRange(start: cursor.position, duration: length), isEnabled: clip.isEnabled))
        if let transition = cursor.pending, let from = cursor.outgoing {
            let second = cursor.secondary ?? {
                guard let made = composition.addMutableTrack(withMediaType: track.mediaType) else {
                    preconditionFailure("a fresh composition track ID is always free")
                }
                return made
            }()
            cursor.secondary = second
            if let dissolve = try dissolve(transition, from: from, to: (source, range), cut: cursor.position, on: target, and: second,
                                           where: "transition \"\(transition.name)\" (\(trackName))", warnings: &report.warnings) {
                layout.dissolves.append(Dissolve(mediaType: track.mediaType, over: target.trackID, under: second.trackID, range: dissolve))
                report.transitions += 1
            }
            cursor.pending = nil
        }
        // A speed-changed clip has no handle a dissolve could use at speed 1.
        cursor.outgoing = changesSpeed ? nil : (source, range)
        cursor.position = cursor.position + length
    }

    /// A dissolve placed on the composition: the track fading out over the range, and the one
    /// beneath it holding the incoming clip.
    struct Dissolve {
        var mediaType: MediaType
        var over: Int
        var under: Int
        var range: MediaTimeRange
    }

    /// Places a dissolve across the cut at `cut`: the outgoing clip plays on past the cut on
    /// `track` for `outOffset` (from its media beyond the clip, its handle), and the incoming
    /// clip starts `inOffset` early on `beneath`. Offsets longer than the clips or the handles
    /// are shortened, with a warning; the range of the dissolve, nil when nothing is left of it.
    func dissolve(_ transition: (name: String, inOffset: MediaTime, outOffset: MediaTime),
                  from outgoing: (source: AssetTrack, range: MediaTimeRange), to incoming: (source: AssetTrack, range: MediaTimeRange),
                  cut: MediaTime, on track: MutableCompositionTrack, and beneath: MutableCompositionTrack,
                  where place: String, warnings: inout [String]) throws -> MediaTimeRange? {
        let inOffset = min(transition.inOffset, outgoing.range.duration, max(.zero, incoming.range.start - incoming.source.timeRange.start))
        let outOffset = min(transition.outOffset, incoming.range.duration, max(.zero, outgoing.source.timeRange.end - outgoing.range.end))
        if inOffset != transition.inOffset || outOffset != transition.outOffset {
            warnings.append("\(place): shortened to \(String(format: "%.3f", inOffset.seconds)) s before and \(String(format: "%.3f", outOffset.seconds)) s after the cut: the clips' media has no more beyond their ranges")
        }
        guard inOffset + outOffset > .zero else { return nil }
        do {
            if outOffset > .zero {
                // The outgoing clip's segment is lengthened over its handle rather than followed by
                // a second segment of the same media, which would open the file again and decode
                // from the keyframe before the cut a second time.
                let played = track.segments.last { !$0.isEmpty && $0.targetRange.end == cut }
                if let played, played.timeMapping.source.end == outgoing.range.end, played.timeMapping.source.duration == played.targetRange.duration {
                    let start = played.targetRange.start
                    try track.removeTimeRange(MediaTimeRange(start: start, end: cut + outOffset))
                    try track.insertTimeRange(MediaTimeRange(start: played.timeMapping.source.start, end: outgoing.range.end + outOffset),
                                              of: outgoing.source, at: start)
                } else {
                    try track.removeTimeRange(MediaTimeRange(start: cut, duration: outOffset))
                    try track.insertTimeRange(MediaTimeRange(start: outgoing.range.end, duration: outOffset), of: outgoing.source, at: cut)
                }
            }
            try beneath.insertTimeRange(MediaTimeRange(start: incoming.range.start - inOffset, duration: inOffset + outOffset),
                                        of: incoming.source, at: cut - inOffset)
        } catch {
            throw fail(.invalidArgument, "\(place): cannot place the dissolve: \(error)", underlying: error)
        }
        return MediaTimeRange(start: cut - inOffset, duration: inOffset + outOffset)
    }

    /// Moves the dissolves of track `id` as a `source_range` `trim` moves its content (and cuts them to it).
    func shift(_ dissolves: inout [Dissolve], onTrack id: Int, by trim: MediaTimeRange) {
        dissolves = dissolves.compactMap { d in
            guard d.over == id else { return d }
            let kept = d.range.intersection(trim)
            guard kept.isValid, kept.duration > .zero else { return nil }
            var moved = d
            moved.range = MediaTimeRange(start: kept.start - trim.start, duration: kept.duration)
            return moved
        }
    }

    /// The video tracks stacked as OTIO stacks them (later tracks on top), each clip fitted
    /// into the render size, dissolves as opacity ramps; nil for one track without dissolves.
    func videoComposition(of composition: MutableComposition, report: TimelineReport, secondaryOf: [Int: MutableCompositionTrack],
                          dissolves: [Dissolve]) -> VideoComposition? {
        let main = report.tracks.filter { $0.mediaType == .video }.map(\.compositionTrackID)
        guard main.count > 1 || dissolves.contains(where: { $0.mediaType == .video }) else { return nil }
        let size = composition.naturalSize
        guard size.width > 0, size.height > 0 else { return nil }
        let duration = composition.tracks(withMediaType: .video).map(\.timeRange.end).max() ?? .zero
        var layers: [VideoCompositionLayerInstruction] = []
        for id in main.reversed() {
            for trackID in [id] + (secondaryOf[id].map { [$0.trackID] } ?? []) {
                guard let track = composition.track(withTrackID: trackID) else { continue }
                var layer = VideoCompositionLayerInstruction(trackID: trackID)
                for segment in track.segments where !segment.isEmpty {
                    if let source = segment.sourceTrack { layer.setTransform(Self.fit(source, into: size), at: segment.targetRange.start) }
                }
                for d in dissolves where d.over == trackID {
                    layer.setOpacityRamp(fromStartOpacity: 1, toEndOpacity: 0, timeRange: d.range)
                    layer.setOpacity(1, at: d.range.end)
                }
                layers.append(layer)
            }
        }
        let rate = report.frameRate.flatMap(OpenTimelineIO.exactRate)
        let frameDuration = rate.map { MediaTime(value: $0.denominator, timescale: Int32(clamping: $0.numerator)) } ?? MediaTime(value: 1, timescale: 30)
        return VideoComposition(renderSize: size, frameDuration: frameDuration, instructions: [
            VideoCompositionInstruction(timeRange: MediaTimeRange(start: .zero, duration: duration), layerInstructions: layers),
        ])
    }

    /// `source`'s pictures turned upright and fitted, centred, into `size`.
    static func fit(_ source: AssetTrack, into size: Size) -> VideoTransform {
        let t = source.preferredTransform
        let shown = source.displaySize
        guard shown.width > 0, shown.height > 0 else { return t }
        let scale = min(size.width / shown.width, size.height / shown.height)
        let dx = (size.width - shown.width * scale) / 2, dy = (size.height - shown.height * scale) / 2
        return VideoTransform(a: t.a * scale, b: t.b * scale, c: t.c * scale, d: t.d * scale, tx: t.tx * scale + dx, ty: t.ty * scale + dy)
    }

    /// Audio dissolves as crossfades: the outgoing track ramps down, the incoming one up; every
    /// other audio track keeps its volume. Nil when no audio track has a dissolve.
    func audioMix(of composition: MutableComposition, dissolves: [Dissolve]) -> AudioMix? {
        let audio = dissolves.filter { $0.mediaType == .audio }
        guard !audio.isEmpty else { return nil }
        let parameters = composition.tracks(withMediaType: .audio).map { track in
            var p = AudioMixInputParameters(trackID: track.trackID)
            for d in audio where d.over == track.trackID {
                p.setVolumeRamp(fromStartVolume: 1, toEndVolume: 0, timeRange: d.range)
                p.setVolume(1, at: d.range.end)
            }
            for d in audio where d.under == track.trackID {
                p.setVolumeRamp(fromStartVolume: 0, toEndVolume: 1, timeRange: d.range)
            }
            return p
        }
        return AudioMix(inputParameters: parameters)
    }

    /// Keeps `range` of a track `length` long (OTIO's `source_range` on a Track or the Stack):
    /// the rest is removed, empty time pads the track to the range's end, and the kept part
    /// starts at zero; the report's clips on the track move (and are cut) with it. Returns the
    /// indices of the clips it leaves nothing of.
    func keep(_ range: MediaTimeRange, of track: MutableCompositionTrack, length: MediaTime, where place: String,
              report: inout TimelineReport, clips: Range<Int>) throws -> [Int] {
        guard range.start >= .zero else { throw fail(.invalidArgument, "\(place): its source_range starts before zero") }
        do {
            if range.end < length { try track.removeTimeRange(MediaTimeRange(start: range.end, end: length)) }
            if range.end > length { try track.insertEmptyTimeRange(MediaTimeRange(start: length, end: range.end)) }
            if range.start > .zero { try track.removeTimeRange(MediaTimeRange(start: .zero, duration: range.start)) }
        } catch {
            throw fail(.invalidArgument, "\(place): cannot apply its source_range \(Self.seconds(range)): \(error)", underlying: error)
        }
        var removed: [Int] = []
        for i in clips {
            let target = report.clips[i].targetRange
            let kept = target.intersection(range)
            guard kept.isValid, kept.duration > .zero else {
                removed.append(i)
                continue
            }
            let cut = kept.start - target.start
            report.clips[i].sourceRange = report.clips[i].sourceRange.map { MediaTimeRange(start: $0.start + cut, duration: kept.duration) }
            report.clips[i].targetRange = MediaTimeRange(start: kept.start - range.start, duration: kept.duration)
        }
        return removed
    }

    func insertEmpty(_ duration: MediaTime, at position: MediaTime, into track: MutableCompositionTrack, where place: String) throws {
        do { try track.insertEmptyTimeRange(MediaTimeRange(start: position, duration: duration)) } catch {
            throw fail(.invalidArgument, "\(place): cannot insert empty time: \(error)", underlying: error)
        }
    }

    /// The clip's file and its first track of `kind`, each file opened once.
    func sourceTrack(of clip: ParsedTimeline.Clip, kind: MediaType, where place: String,
                     cache: inout [URL: [AssetTrack]]) async throws -> (URL, AssetTrack) {
        let url: URL
        switch clip.media {
        case .missing(let name):
            throw fail(.fileNotFound, "\(place): the media is a MissingReference\(name.isEmpty ? "" : " (\"\(name)\")") (offline); relink it to a file")
        case .file(let file): url = file
        }
        if cache[url] == nil {
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw fail(.fileNotFound, "\(place): the media file \(url.path) does not exist")
            }
            do { cache[url] = try await Asset(url: url).load(.tracks) } catch {
                throw fail((error as? MediaError)?.code ?? .notMediaFile, "\(place): cannot open \(url.path): \(error)", underlying: error)
            }
        }
        let all = cache[url] ?? []
        guard let track = all.first(where: { $0.mediaType == kind && !$0.isAttachedPicture }) else {
            throw fail(.noTracks, "\(place): \(url.path) has no \(kind) track for this \(kind == .video ? "Video" : "Audio") track")
        }
        return (url, track)
    }

    /// The range of the file's track the clip plays: its source range moved from the media's
    /// coordinates to the file's (minus `available_range.start_time`), else the available range
    /// from the file's start, else the whole track.
    func fileRange(of clip: ParsedTimeline.Clip, in track: AssetTrack, where place: String, warnings: inout [String]) throws -> MediaTimeRange {
        let origin = clip.availableRange?.start ?? .zero
        let range: MediaTimeRange
        if let source = clip.sourceRange {
            range = MediaTimeRange(start: source.start - origin, duration: source.duration)
        } else if let available = clip.availableRange {
            range = MediaTimeRange(start: .zero, duration: available.duration)
        } else {
            range = track.timeRange
        }
        guard range.start >= .zero, range.duration > .zero else {
            throw fail(.invalidArgument, "\(place): the source range \(Self.seconds(range)) starts before the media or is empty")
        }
        let media = track.timeRange
        guard range.start < media.end, range.end > media.start else {
            throw fail(.invalidArgument, "\(place): the source range \(Self.seconds(range)) lies outside the media (\(Self.seconds(media)))")
        }
        if range.end > media.end || range.start < media.start {
            warnings.append("\(place): the source range \(Self.seconds(range)) runs past the media (\(Self.seconds(media))); the rest is empty")
        }
        return range
    }

    /// The media a clip with a `LinearTimeWarp` plays: `speed` times its trimmed length, from
    /// the same start, as OTIO's reference renderer (toucan) maps track time t to media time
    /// start + t × time_scalar. Media that runs out is said, as for an unwarped clip.
    func playedRange(of trimmed: MediaTimeRange, at speed: (numerator: Int32, denominator: Int32), in track: AssetTrack,
                     where place: String, warnings: inout [String]) -> MediaTimeRange {
        let played = MediaTimeRange(start: trimmed.start, duration: trimmed.duration.multiplied(by: speed.numerator, dividedBy: speed.denominator))
        if played.end > track.timeRange.end, trimmed.end <= track.timeRange.end {
            warnings.append("\(place): at speed \(String(format: "%g", Double(speed.numerator) / Double(speed.denominator))) it plays \(Self.seconds(played)), past the media (\(Self.seconds(track.timeRange))); the rest is empty")
        }
        return played
    }

    static func seconds(_ range: MediaTimeRange) -> String {
        String(format: "%.3f–%.3f s", range.start.seconds, range.end.seconds)
    }
}

import FFmpegSupport
import Foundation

/// Everything `Asset` knows about a file, gathered in one pass.
struct AssetInspection: Sendable {
    var containerFormat: ContainerFormat
    var duration: MediaTime
    var fileSize: Int64
    var bitRate: Int
    var tracks: [AssetTrack]
    var metadata: [MetadataItem]
    var chapters: [Chapter]
    var warnings: [String]
}

/// Opens a file, reads its header and sample timing, and builds the asset's tracks.
///
/// Timing comes from the container's sample index when it lists every sample (mp4, mov,
/// avi); otherwise, or when precise timing is asked for, from one demux-only pass over the
/// packets (no decoding).
enum AssetInspector {
    /// The container-level metadata of `path`, from its header alone (no stream probing): for
    /// reading back what an export wrote.
    static func containerMetadata(path: String) throws(MediaError) -> [MetadataItem] {
        do {
            return MetadataItem.items(try Demuxer(path: path, probingStreams: false).metadata)
        } catch {
            throw openFailure(error, path: path)
        }
    }

    /// Inspects `path`; the demuxer it opened goes to `handoff` when its read position is still
    /// at the start of the data.
    static func inspect(path: String, options: Asset.Options, handoff: DemuxerHandoff? = nil) throws(MediaError) -> AssetInspection {
        let fileSize = try checkReadableFile(path)
        handoff?.countInspection()
        let demuxer: Demuxer
        do {
            demuxer = try Demuxer(path: path)
        } catch {
            throw openFailure(error, path: path)
        }
        let streams = demuxer.streams
        guard !streams.isEmpty else {
            throw MediaError(.noTracks, "contains no audio, video, subtitle or data tracks", path: path)
        }

        var warnings: [String] = []
        for s in streams where s.kind == .video && s.containerOverridesCodecAspect {
            let (shown, coded) = (s.sampleAspectRatio, s.codecSampleAspectRatio)
            warnings.append("track \(trackID(s, in: streams)): the container's pixel aspect \(shown.numerator):\(shown.denominator) differs from the \(s.codecName) bitstream's \(coded.numerator):\(coded.denominator); the container's is used, as ffmpeg does")
        }
        var timings = streams.map { _ in StreamTiming() }
        let media = streams.filter { ($0.kind == .video || $0.kind == .audio) && !$0.isAttachedPicture }
        let indexIsComplete = media.allSatisfy { s in
            s.declaredFrameCount > 0 && demuxer.indexEntries(ofStream: s.index).count == Int(s.declaredFrameCount)
        }
        if indexIsComplete && !options.prefersPreciseDurationAndTiming {
            for s in streams {
                let entries = demuxer.indexEntries(ofStream: s.index)
                timings[s.index].add(index: entries)
                let beyond = entries.filter { $0.position + Int64($0.size) > fileSize }.count
                if beyond > 0 {
                    warnings.append("file is truncated: \(beyond) of \(entries.count) samples of track \(trackID(s, in: streams)) lie beyond its end")
                }
            }
        } else {
            scanPackets(demuxer, into: &timings, warnings: &warnings)
        }

        // A header can claim far more than the file holds (a truncated download keeps its
        // 47-hour header). Where every packet was read, the data's own extent wins.
        let scanned = !(indexIsComplete && !options.prefersPreciseDurationAndTiming)
        let lying = scanned ? headersClaimingMore(media, of: demuxer, timings: timings, streams: streams, warnings: &warnings) : []
        // FFmpeg 5.1 does not read a QuickTime or MP4 sample description's clean aperture.
        let apertures = demuxer.formatName.hasPrefix("mov,") && streams.contains { $0.kind == .video }
            ? MovieBoxes.cleanApertures(path: path) : [:]
        let tracks = streams.map {
            makeTrack($0, timing: timings[$0.index], streams: streams, containerDuration: demuxer.durationMicroseconds,
                      sourcePath: path, timestampsJumped: demuxer.discontinuitiesMended > 0 || lying.contains($0.index),
                      cleanAperture: apertures[$0.containerID])
        }
        let duration: MediaTime
        // A container's duration is its last timestamp less its first: wrong once the
        // timestamps jumped, so the tracks' scanned lengths count then.
        let jumps = demuxer.discontinuitiesMended
        if jumps > 0 {
            warnings.append("timestamps jump \(jumps == 1 ? "once" : "\(jumps) times"); each jump is mended so the media plays on without a gap")
        }
        // A cue lasting "until the next one" made the container's duration 49 days long.
        let openEnded = timings.contains { $0.openEndedCues > 0 }
        if let micros = demuxer.durationMicroseconds, jumps == 0, lying.isEmpty, !openEnded {
            duration = MediaTime(value: micros, timescale: 1_000_000)
        } else {
            // The media tracks' extents (a lying header may be repeated by data and cover tracks).
            let mediaIDs = Set(media.map { trackID($0, in: streams) })
            let end = tracks.filter { (lying.isEmpty && !openEnded) || mediaIDs.contains($0.trackID) }
                .map { $0.timeRange.start.seconds + $0.timeRange.duration.seconds }.filter(\.isFinite).max() ?? 0
            duration = MediaTime(value: Int64((max(end, 0) * 1_000_000).rounded()), timescale: 1_000_000)
        }
        let chapters = demuxer.chapters.map { c in
            Chapter(title: c.title,
                    timeRange: MediaTimeRange(start: c.timeBase.time(ofTicks: c.start), duration: c.timeBase.time(ofTicks: c.end - c.start)))
        }
        let inspection = AssetInspection(
            containerFormat: ContainerFormat(name: demuxer.formatName, longName: demuxer.formatLongName),
            duration: duration, fileSize: fileSize, bitRate: openEnded && duration.seconds > 0 ? Int(Double(fileSize * 8) / duration.seconds) : Int(demuxer.bitRate),
            tracks: tracks,
            metadata: MetadataItem.items(demuxer.metadata), chapters: chapters, warnings: warnings)
        // Handed on last: from here the inspection no longer touches it.
        if !scanned { handoff?.keep(demuxer) }
        return inspection
    }

    /// The media tracks whose header claims over a second (and 5 %) more than their packets
    /// last, each named in `warnings`, as are video tracks whose index lost samples.
    private static func headersClaimingMore(_ media: [StreamInfo], of demuxer: Demuxer, timings: [StreamTiming], streams: [StreamInfo],
                                            warnings: inout [String]) -> Set<Int> {
        var lying = Set<Int>()
        // An empty track beside tracks with data is a track without samples, not a lie.
        let anyData = media.contains { timings[$0.index].sawData }
        for s in media where timings[s.index].sawData || !anyData {
            let timing = timings[s.index]
            guard let declared = s.duration else { continue }
            // From the first timestamp read, lead-in before 0 included (Opus pre-skip).
            let first = timing.timestamps.min() ?? s.startTime ?? 0
            let claimed = s.timeBase.time(ofTicks: declared).seconds
            let found = timing.end.map { s.timeBase.time(ofTicks: max($0 - first, 0)).seconds } ?? 0
            if claimed - found > max(1, 0.05 * found) {
                lying.insert(s.index)
                warnings.append(String(format: "track %d: the header says %.3f s but the data ends after %.3f s (the file is truncated or its header is wrong); the data's length is reported",
                                       trackID(s, in: streams), claimed, found))
            }
            // FFmpeg drops a track's index from an entry it refuses (an impossible sample
            // size) on: its samples stop there, though its duration may still look whole.
            let listed = TrackVerification.declaredSamples(s, formatName: demuxer.formatName)
            if s.kind == .video, let unread = TrackVerification.unreadSamples(declared: listed, read: timing.count) {
                warnings.append("track \(trackID(s, in: streams)): only \(timing.count) of the \(listed) samples its index lists can be read (\(unread) lost to a damaged index or data); the track ends after them")
            }
        }
        return lying
    }

    // MARK: Errors

    /// Checks the path names a readable regular file and returns its size.
    static func checkReadableFile(_ path: String) throws(MediaError) -> Int64 {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        guard files.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw MediaError(.fileNotFound, "no such file", path: path)
        }
        if isDirectory.boolValue {
            throw MediaError(.notARegularFile, "is a directory, not a media file", path: path)
        }
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            throw MediaError(.notARegularFile, "is \(Self.kind(ofFileMode: status.st_mode)), not a regular file: media are read from files, which must be seekable", path: path)
        }
        guard files.isReadableFile(atPath: path) else {
            throw MediaError(.permissionDenied, "permission denied: this user may not read the file", path: path)
        }
        let size = Asset.fileSize(atPath: path) ?? 0
        if size == 0 {
            throw MediaError(.notMediaFile, "file is empty (0 bytes)", path: path)
        }
        return size
    }

    /// What a file that is not a regular one is, as its mode says: "a FIFO", "a character device"….
    static func kind(ofFileMode mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "a special file"
        }
    }

    /// Turns a failure to open into the most specific `MediaError`: a file no demuxer
    /// recognises is "not media"; one whose start is recognised but fails later is damaged.
    static func openFailure(_ error: FFmpegError, path: String) -> MediaError {
        switch error.code {
        case .noSuchFile:
            return MediaError(.fileNotFound, "no such file", path: path, underlying: error)
        case .permissionDenied:
            return MediaError(.permissionDenied, "permission denied: this user may not read the file", path: path, underlying: error)
        default:
            break
        }
        if let format = Demuxer.recognizeFormat(ofLeadingBytes: leadingBytes(of: path, count: 64 * 1024)), format.score > 25 {
            let cause = error.function == "avformat_find_stream_info" ? "its streams cannot be read" : "its structure is damaged or cut short"
            return MediaError(.corruptOrTruncated, "recognised as \(format.name) but \(cause)", path: path, underlying: error)
        }
        return MediaError(.notMediaFile, "not a media file FFmpeg recognises", path: path, underlying: error)
    }

    static func leadingBytes(of path: String, count: Int) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: count)) ?? Data()
        return [UInt8](data)
    }

    // MARK: Timing

    /// Sample timing gathered from the index or a packet scan.
    struct StreamTiming {
        var count = 0
        var bytes: Int64 = 0
        /// Presentation timestamps (decode timestamps when only those are known), unsorted.
        var timestamps: [Int64] = []
        /// Latest timestamp + duration seen.
        var end: Int64?
        var sawData = false
        /// Cues that last "until the next one" (Matroska's 2³²−1 ms block duration, as ffmpeg
        /// writes a PGS cue turned VobSub): their duration is left out of the track's extent.
        var openEndedCues = 0
        /// The longest a subtitle cue can last: 2³²−1 ms says "until the next cue".
        static let openEndedCue = MediaTime(value: Int64(UInt32.max), timescale: 1000)

        mutating func add(index entries: [Demuxer.IndexEntry]) {
            for e in entries {
                count += 1
                bytes += Int64(e.size)
                timestamps.append(e.timestamp)
            }
            sawData = !entries.isEmpty
            if let last = timestamps.max() {
                end = last + (typicalInterval ?? 0)
            }
        }

        mutating func add(packet: Packet, of stream: StreamInfo) {
            count += 1
            bytes += Int64(packet.size)
            sawData = true
            guard let t = packet.pts ?? packet.dts else { return }
            timestamps.append(t)
            var duration = max(packet.duration, 0)
            if stream.kind == .subtitle, stream.timeBase.time(ofTicks: duration) >= Self.openEndedCue {
                openEndedCues += 1
                duration = 0
            }
            end = max(end ?? t, t + duration)
        }

        /// Positive intervals between consecutive timestamps in presentation order.
        var intervals: [Int64] {
            let sorted = timestamps.sorted()
            return zip(sorted.dropFirst(), sorted).map { $0 - $1 }.filter { $0 > 0 }
        }

        var typicalInterval: Int64? {
            let i = intervals.sorted()
            return i.isEmpty ? nil : i[i.count / 2]
        }
    }

    /// Reads every packet once (no decoding) to learn sample counts, sizes and timestamps.
    static func scanPackets(_ demuxer: Demuxer, into timings: inout [StreamTiming], warnings: inout [String]) {
        let packet = Packet()
        var corrupt = 0
        while true {
            do {
                guard try demuxer.readPacket(into: packet) == .packet else { break }
            } catch {
                warnings.append("reading stopped early: \(error.message) (\(error.function)); later samples are unreadable")
                break
            }
            if packet.isCorrupt { corrupt += 1 }
            timings[packet.streamIndex].add(packet: packet, of: demuxer.streams[packet.streamIndex])
        }
        if corrupt > 0 { warnings.append("\(corrupt) packets are marked corrupt by the demuxer") }
        // A raw stream's packets were given decode times only: its pictures show that much later.
        for (index, delay) in demuxer.stampedStreams where timings.indices.contains(index) {
            timings[index].timestamps = timings[index].timestamps.map { $0 + delay }
            timings[index].end = timings[index].end.map { $0 + delay }
        }
        let late = demuxer.streamsFoundMidFile.sorted()
        if !late.isEmpty {
            warnings.append("\(late.count == 1 ? "a stream" : "\(late.count) streams") (index \(late.map(String.init).joined(separator: ", "))) first appeared mid-file and \(late.count == 1 ? "is" : "are") ignored")
        }
    }

    // MARK: Tracks

    static func trackID(_ s: StreamInfo, in streams: [StreamInfo]) -> Int {
        let ids = streams.map(\.containerID)
        let usable = ids.allSatisfy { $0 > 0 } && Set(ids).count == ids.count
        return usable ? s.containerID : s.index + 1
    }

    /// The track of stream `s`. Its duration is the one the stream declares, unless the
    /// declaration cannot be trusted (the timestamps jumped, or the header claims more than
    /// the data holds): then it is the scanned data's extent, 0 when none could be read.
    static func makeTrack(_ s: StreamInfo, timing: StreamTiming, streams: [StreamInfo], containerDuration: Int64?,
                          sourcePath: String? = nil, timestampsJumped: Bool = false, cleanAperture: CleanAperture? = nil) -> AssetTrack {
        let tb = s.timeBase
        let mediaType: MediaType = switch s.kind {
        case .video: .video
        case .audio: .audio
        case .subtitle: .subtitle
        default: .data
        }
        let start = s.startTime ?? timing.timestamps.min() ?? 0
        let durationTicks: Int64
        if timestampsJumped || timing.openEndedCues > 0 {
            // A cue "until the next one" makes libavformat's duration 49 days long.
            durationTicks = timing.end.map { max($0 - start, 0) } ?? 0
        } else if let d = s.duration {
            durationTicks = d
        } else if let end = timing.end {
            durationTicks = max(end - start, 0)
        } else if let micros = containerDuration {
            durationTicks = tb.ticks(of: MediaTime(value: micros, timescale: 1_000_000)) ?? 0
        } else {
            durationTicks = 0
        }
        let timeRange = MediaTimeRange(start: tb.time(ofTicks: start), duration: tb.time(ofTicks: durationTicks))
        let seconds = timeRange.duration.seconds

        let isVideo = s.kind == .video
        let natural = isVideo ? Size(width: s.width, height: s.height) : .zero
        var transform = VideoTransform.identity
        if isVideo, let m = s.displayMatrix {
            let raw = VideoTransform(a: Double(m[0]) / 65536, b: Double(m[1]) / 65536,
                                      c: Double(m[3]) / 65536, d: Double(m[4]) / 65536, tx: 0, ty: 0)
            transform = VideoTransform(rotationDegrees: raw.rotationDegrees, mirrored: raw.isMirrored, size: natural)
        }

        var frameRate: Float = 0
        var minFrameDuration = MediaTime.invalid
        var variable = false
        if isVideo && !s.isAttachedPicture {
            (frameRate, minFrameDuration, variable) = videoTiming(s, timing: timing)
        }

        let count = timing.sawData ? timing.count : Int(s.declaredFrameCount)
        let bytes = timing.sawData ? timing.bytes : 0
        let dataRate: Float = bytes > 0 && seconds > 0 ? Float(Double(bytes) * 8 / seconds) : Float(s.bitRate)
        let language = s.metadata["language"].flatMap { $0 == "und" ? nil : $0 }
        let enabled = s.isDefault || !streams.contains { $0.kind == s.kind && $0.isDefault }

        var segments: [AssetTrackSegment] = []
        if timeRange.start.value > 0 {
            let empty = MediaTimeRange(start: .zero, duration: timeRange.start)
            segments.append(AssetTrackSegment(timeMapping: MediaTimeMapping(source: .init(start: .invalid, duration: timeRange.start), target: empty)))
        }
        segments.append(AssetTrackSegment(timeMapping: MediaTimeMapping(source: timeRange, target: timeRange)))

        return AssetTrack(
            trackID: trackID(s, in: streams), streamIndex: s.index, mediaType: mediaType,
            formatDescription: formatDescription(s, mediaType: mediaType, cleanAperture: cleanAperture), timeRange: timeRange,
            // Every tick of the stream is a whole number of 1/denominator s (1001/30000: 30000).
            naturalTimeScale: tb.denominator,
            naturalSize: natural, preferredTransform: transform, nominalFrameRate: frameRate,
            minFrameDuration: minFrameDuration, isVariableFrameRate: variable, estimatedDataRate: dataRate,
            totalSampleDataLength: bytes, sampleCount: count, languageCode: language, isEnabled: enabled,
            requiresFrameReordering: s.videoDelay > 0, isAttachedPicture: s.isAttachedPicture,
            segments: segments, metadata: MetadataItem.items(s.metadata), sourcePath: sourcePath, isMarkedDefault: s.isDefault)
    }

    /// Frame rate, shortest frame interval and the variable-frame-rate verdict of a video track.
    ///
    /// Intervals shorter than a quarter of the median are hidden or field packets, not frames.
    /// The rate is the container's average unless the timestamps contradict it by more than
    /// a factor of two (some muxers write nonsense averages); the track is variable when more
    /// than 5% of intervals stray from the median by over 10% (beyond timestamp rounding).
    static func videoTiming(_ s: StreamInfo, timing: StreamTiming) -> (Float, MediaTime, Bool) {
        let tb = s.timeBase
        let intervals = timing.intervals
        let sortedIntervals = intervals.sorted()
        let declared = s.averageFrameRate.isPositive ? s.averageFrameRate : s.realFrameRate
        guard !sortedIntervals.isEmpty else {
            // A track with no sample has no frame rate (AVFoundation reports 0), and a declared
            // rate equal to the time base is FFmpeg's guess, not the stream's.
            let samples = timing.sawData ? timing.count : Int(s.declaredFrameCount)
            let guessed = declared.isPositive && declared.doubleValue * tb.doubleValue == 1
            guard samples > 0, !guessed else { return (0, .invalid, false) }
            let rate = declared.isPositive ? Float(declared.doubleValue) : 0
            let minDuration = declared.isPositive ? MediaTime(value: Int64(declared.denominator), timescale: declared.numerator) : .invalid
            return (rate, minDuration, false)
        }
        let median = sortedIntervals[sortedIntervals.count / 2]
        let frames = sortedIntervals.filter { $0 * 4 >= median }
        let tolerance = max(Double(median) * 0.1, 1.5)
        let strays = frames.filter { abs(Double($0 - median)) > tolerance }.count
        let variable = Double(strays) > 0.05 * Double(frames.count)
        let span = frames.reduce(0, +)
        let measured = span > 0 ? Double(frames.count) / (Double(span) * tb.doubleValue) : 0
        var rate = measured
        if declared.isPositive {
            let ratio = declared.doubleValue / max(measured, .leastNonzeroMagnitude)
            if measured == 0 || (ratio > 0.45 && ratio < 2.2) { rate = declared.doubleValue }
        }
        return (Float(rate), tb.time(ofTicks: frames.min() ?? median), variable)
    }

    static func formatDescription(_ s: StreamInfo, mediaType: MediaType, cleanAperture: CleanAperture? = nil) -> FormatDescription {
        var video: VideoFormat? = nil
        var audio: AudioFormat? = nil
        if s.kind == .video {
            let pixelFormat = s.pixelFormat == .none ? nil : s.pixelFormat.name
            let depth = s.pixelFormat == .none ? (s.bitsPerRawSample > 0 ? s.bitsPerRawSample : nil) : s.pixelFormat.bitDepth
            let sar = s.sampleAspectRatio
            video = VideoFormat(
                width: s.width, height: s.height, pixelFormat: pixelFormat, bitDepth: depth,
                colorPrimaries: s.colorPrimaries, colorTransfer: s.colorTransfer, colorMatrix: s.colorMatrix,
                colorRange: s.colorRange, fieldOrder: s.fieldOrder,
                pixelAspectRatio: sar.isPositive && sar.numerator != sar.denominator ? [Int(sar.numerator), Int(sar.denominator)] : nil)
            video?.masteringDisplay = s.masteringDisplay
            video?.contentLightLevel = s.contentLightLevel
            video?.dolbyVision = s.dolbyVision
            video?.cleanAperture = cleanAperture
        } else if s.kind == .audio {
            audio = AudioFormat(
                sampleRate: s.sampleRate, channelCount: s.channelCount, channelLayout: s.channelLayout,
                sampleFormat: s.sampleFormat == .none ? nil : s.sampleFormat.name,
                framesPerPacket: s.frameSize > 0 ? s.frameSize : nil,
                primingSamples: s.initialPadding > 0 ? s.initialPadding : nil)
        }
        return FormatDescription(mediaType: mediaType, codec: s.codecName, codecTag: fourCC(s.codecTag),
                                 profile: s.profile, level: s.level, video: video, audio: audio)
    }

    static func fourCC(_ tag: UInt32) -> String? {
        guard tag != 0 else { return nil }
        let bytes = (0..<4).map { UInt8((tag >> (8 * $0)) & 0xff) }
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}


internal import CFFmpeg
import MediaCore

/// Reads packets out of a media file. Owns the `AVFormatContext`; not thread-safe, so one
/// task uses it at a time.
///
/// Time starts at 0: when the file's clock starts later (a broadcast capture whose timestamps
/// begin at 6 h 22 min, a transport stream starting at 1.4 s), every timestamp the demuxer
/// hands out, and every one it is given to seek to, is moved by that start, the way ffmpeg's
/// command line moves them. Streams keep their offsets to each other.
public final class Demuxer {
    /// Holds the context for each call: one thread at a time, checked.
    package let use = ExclusiveUse("Demuxer")
    let context: UnsafeMutablePointer<AVFormatContext>
    /// The path the demuxer was opened on.
    public let path: String
    /// Snapshots of every stream, indexed by stream index.
    public let streams: [StreamInfo]
    /// The file's own clock reading (microseconds) that the demuxer's time 0 stands for: its
    /// start time when that is positive, else 0.
    public let clockOrigin: Int64
    /// `clockOrigin` in each stream's time base: what is subtracted from its timestamps.
    private let originTicks: [Int64]
    /// Whether the container's timestamps may jump (MPEG-TS: captures cut and joined,
    /// encoders restarted, clocks wrapped), so jumps are mended as they are read.
    private let mendsDiscontinuities: Bool
    /// Microseconds added to every timestamp read since the last mended jump.
    private var jumpOffset: Int64 = 0
    /// Per stream: the decode time the next packet should have, and the latest decode time
    /// seen (both after moving), in the stream's time base.
    private var expectedDTS: [Int64?]
    private var latestDTS: [Int64?]
    /// Where each stream's next packet would start in decode order (its latest decode time
    /// plus duration): what a packet stamped with no time at all is given.
    private var followingDTS: [Int64?]
    /// Packets that came with no timestamp and were given one (a raw elementary stream's).
    public private(set) var packetsStamped = 0
    /// The streams whose packets were given decode times, each with how far (ticks) its
    /// pictures are shown after them: the reordering delay (B-frames) at the stream's rate.
    public private(set) var stampedStreams: [Int: Int64] = [:]
    /// How many timestamp jumps were mended so far.
    public private(set) var discontinuitiesMended = 0
    /// A jump larger than this, forward or back, is a discontinuity (ffmpeg's `-dts_delta_threshold`).
    private static let discontinuityThreshold: Int64 = 10_000_000

    /// What `readPacket` produced.
    public enum ReadResult: Sendable, Equatable { case packet, endOfFile }

    /// Opens `path` and probes its streams. The corresponding C functions are
    /// `avformat_open_input` and `avformat_find_stream_info`.
    ///
    /// `probingStreams` false reads the header only: enough for container metadata, and much
    /// cheaper (probing decodes the first pictures of a video stream), but codec parameters
    /// may then be incomplete. `mendingDiscontinuities` false hands out a jumping container's
    /// timestamps as they are (moved by the clock origin only), for a check that reports jumps.
    public init(path: String, probingStreams: Bool = true, mendingDiscontinuities: Bool = true) throws(FFmpegError) {
        FFmpegLogging.installDefaultLevel()
        var opened: UnsafeMutablePointer<AVFormatContext>? = nil
        try check(avformat_open_input(&opened, path, nil, nil), "avformat_open_input")
        guard let context = opened else { throw FFmpegError(code: .outOfMemory, function: "avformat_open_input") }
        let probed = probingStreams ? avformat_find_stream_info(context, nil) : 0
        if probed < 0 {
            var doomed: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&doomed)
            throw FFmpegError(probed, "avformat_find_stream_info")
        }
        self.context = context
        self.path = path
        let start = context.pointee.start_time
        clockOrigin = start == cffmpeg_AV_NOPTS_VALUE() || start < 0 ? 0 : start
        let origins = (0..<Int(context.pointee.nb_streams)).map { [clockOrigin] i in
            av_rescale_q(clockOrigin, cffmpeg_AV_TIME_BASE_Q(), context.pointee.streams[i]!.pointee.time_base)
        }
        originTicks = origins
        mendsDiscontinuities = mendingDiscontinuities && context.pointee.iformat.pointee.flags & AVFMT_TS_DISCONT != 0
        expectedDTS = Array(repeating: nil, count: origins.count)
        latestDTS = Array(repeating: nil, count: origins.count)
        followingDTS = Array(repeating: nil, count: origins.count)
        self.streams = (0..<Int(context.pointee.nb_streams)).map { Demuxer.snapshot(context.pointee.streams[$0]!, origin: origins[$0]) }
    }

    deinit { var p: UnsafeMutablePointer<AVFormatContext>? = context; avformat_close_input(&p) }

    // MARK: Container

    /// FFmpeg's short name(s) for the container, e.g. "mov,mp4,m4a,3gp,3g2,mj2".
    public var formatName: String { String(cString: context.pointee.iformat.pointee.name) }
    public var formatLongName: String? { context.pointee.iformat.pointee.long_name.map { String(cString: $0) } }
    /// Container duration in microseconds, nil when the container does not say.
    public var durationMicroseconds: Int64? {
        let d = context.pointee.duration
        return d == cffmpeg_AV_NOPTS_VALUE() || d < 0 ? nil : d
    }
    /// Whether FFmpeg guessed the durations from the bit rate (an MP3 without a Xing header, a
    /// raw stream): then they are estimates, not what the file declares.
    public var durationIsEstimated: Bool { context.pointee.duration_estimation_method == AVFMT_DURATION_FROM_BITRATE }
    /// Overall bit rate in bits per second, 0 when unknown.
    public var bitRate: Int64 { context.pointee.bit_rate }
    public var metadata: [String: String] { dictionary(context.pointee.metadata) }

    /// A chapter as the container lists it.
    public struct Chapter: Sendable {
        public var start: Int64
        public var end: Int64
        public var timeBase: Rational
        public var title: String?
    }

    public var chapters: [Chapter] {
        (0..<Int(context.pointee.nb_chapters)).map { i in
            let c = context.pointee.chapters[i]!.pointee
            return Chapter(start: c.start, end: c.end, timeBase: Rational(c.time_base), title: dictionary(c.metadata)["title"])
        }
    }

    /// An owned copy of stream `index`'s codec parameters, for a decoder or a muxer, with the
    /// container's sample aspect ratio where it declares one: it wins over the bitstream's, as in ffmpeg.
    public func codecParameters(ofStream index: Int) throws(FFmpegError) -> CodecParameters {
        let stream = context.pointee.streams[index]!
        return try CodecParameters(copying: stream.pointee.codecpar, containerSampleAspectRatio: Rational(stream.pointee.sample_aspect_ratio))
    }

    // MARK: Reading

    /// Streams the demuxer discovered after opening (MPEG-TS finds them as their packets
    /// arrive). They are not in `streams`, and their packets are skipped.
    public private(set) var streamsFoundMidFile = Set<Int>()

    /// Reads the next packet into `packet` (replacing its contents), or reports end of file.
    /// Packets of streams found after opening are skipped (see `streamsFoundMidFile`), so every
    /// packet returned belongs to one of `streams`. The corresponding C function is `av_read_frame`.
    public func readPacket(into packet: Packet) throws(FFmpegError) -> ReadResult {
        use.begin(); defer { use.end() }
        while true {
            packet.reset()
            let result = av_read_frame(context, packet.pointer)
            if result == cffmpeg_AVERROR_EOF() { return .endOfFile }
            try check(result, "av_read_frame")
            let index = Int(packet.pointer.pointee.stream_index)
            if index < streams.count {
                moveTimestamps(of: packet.pointer, stream: index)
                return .packet
            }
            if streamsFoundMidFile.insert(index).inserted {
                context.pointee.streams[index]!.pointee.discard = AVDISCARD_ALL
            }
        }
    }

    /// Moves a packet's timestamps onto the demuxer's timeline: back by the clock origin, and
    /// across any jump mended so far. A new jump (more than 10 s either way, or more than 0.1 s
    /// back before the stream's latest decode time) moves every stream's later packets so that this one
    /// follows on from its predecessor, as ffmpeg does for such containers.
    private func moveTimestamps(of packet: UnsafeMutablePointer<AVPacket>, stream index: Int) {
        let none = cffmpeg_AV_NOPTS_VALUE()
        let timeBase = context.pointee.streams[index]!.pointee.time_base
        let shift = originTicks[index] - av_rescale_q(jumpOffset, cffmpeg_AV_TIME_BASE_Q(), timeBase)
        if packet.pointee.pts != none { packet.pointee.pts -= shift }
        if packet.pointee.dts != none { packet.pointee.dts -= shift }
        if packet.pointee.pts == none && packet.pointee.dts == none && context.pointee.iformat.pointee.raw_codec_id != AV_CODEC_ID_NONE.rawValue {
            // A raw elementary stream (.h264, .hevc, .m4v) times no packet, only its rate:
            // each follows its predecessor in decode order, as ffmpeg times them. The first
            // starts as far before 0 as the pictures are reordered (B-frames), so the first
            // picture out of the decoder is shown at 0.
            let delay = Int64(context.pointee.streams[index]!.pointee.codecpar.pointee.video_delay)
            packet.pointee.dts = followingDTS[index] ?? -delay * max(packet.pointee.duration, 0)
            packetsStamped += 1
            stampedStreams[index] = delay * max(packet.pointee.duration, 0)
        }
        let stamped = packet.pointee.dts != none ? packet.pointee.dts : packet.pointee.pts
        followingDTS[index] = stamped + max(packet.pointee.duration, 0)
        let dts = packet.pointee.dts
        // Only pictures and sound run on without gaps: a subtitle stream can be silent for
        // minutes, so its packets take the jumps found so far and find none of their own.
        let kind = context.pointee.streams[index]!.pointee.codecpar.pointee.codec_type
        guard mendsDiscontinuities, dts != none, kind == AVMEDIA_TYPE_VIDEO || kind == AVMEDIA_TYPE_AUDIO else { return }
        if let expected = expectedDTS[index] {
            let delta = av_rescale_q(dts - expected, timeBase, cffmpeg_AV_TIME_BASE_Q())
            let latest = latestDTS[index].map { av_rescale_q($0, timeBase, cffmpeg_AV_TIME_BASE_Q()) } ?? Int64.min
            let now = av_rescale_q(dts, timeBase, cffmpeg_AV_TIME_BASE_Q())
            if abs(delta) > Self.discontinuityThreshold || now + 100_000 < latest {
                jumpOffset -= delta
                let correction = dts - expected
                if packet.pointee.pts != none { packet.pointee.pts -= correction }
                packet.pointee.dts -= correction
                discontinuitiesMended += 1
            }
        }
        let moved = packet.pointee.dts
        expectedDTS[index] = moved + max(packet.pointee.duration, 0)
        latestDTS[index] = max(latestDTS[index] ?? moved, moved)
    }

    /// Seeks so the next packet of `stream` is the keyframe at or before `timestamp` (in the
    /// stream's time base). The corresponding C function is `av_seek_frame`.
    /// A raw elementary stream, which has no timestamps to seek by, is read again from its
    /// first byte instead (the caller decodes forward to the time it wants, as for any seek).
    public func seek(stream: Int, toKeyframeAtOrBefore timestamp: Int64) throws(FFmpegError) {
        use.begin(); defer { use.end() }
        // Untimed: a raw stream that declares no start (its generic seek would read the whole
        // file looking for a time before failing).
        let untimed = context.pointee.iformat.pointee.raw_codec_id != AV_CODEC_ID_NONE.rawValue
            && (0..<Int(context.pointee.nb_streams)).allSatisfy { context.pointee.streams[$0]!.pointee.start_time == cffmpeg_AV_NOPTS_VALUE() }
        if untimed {
            try check(av_seek_frame(context, -1, 0, AVSEEK_FLAG_BYTE), "av_seek_frame")
        } else {
            try check(av_seek_frame(context, Int32(stream), timestamp + originTicks[stream], AVSEEK_FLAG_BACKWARD), "av_seek_frame")
        }
        followingDTS = followingDTS.map { _ in nil }
        // Times after a seek are read afresh: no jump is assumed across it.
        jumpOffset = 0
        expectedDTS = expectedDTS.map { _ in nil }
        latestDTS = latestDTS.map { _ in nil }
    }

    /// Goes back to the first byte of the file, to read it all again.
    /// The corresponding C function is `av_seek_frame` with `AVSEEK_FLAG_BYTE`.
    public func rewind() throws(FFmpegError) {
        use.begin(); defer { use.end() }
        try check(av_seek_frame(context, -1, 0, AVSEEK_FLAG_BYTE), "av_seek_frame")
        jumpOffset = 0
        expectedDTS = expectedDTS.map { _ in nil }
        latestDTS = latestDTS.map { _ in nil }
        followingDTS = followingDTS.map { _ in nil }
    }

    /// Only packets of `wanted` streams are read; the demuxer skips the others cheaply.
    public func selectStreams(_ wanted: Set<Int>) {
        use.begin(); defer { use.end() }
        for i in 0..<Int(context.pointee.nb_streams) {
            context.pointee.streams[i]!.pointee.discard = wanted.contains(i) ? AVDISCARD_DEFAULT : AVDISCARD_ALL
        }
    }

    /// One sample of the container's index (mp4 sample tables, matroska cues).
    public struct IndexEntry: Sendable {
        /// Decode timestamp in the stream's time base.
        public var timestamp: Int64
        /// Byte offset of the sample in the file.
        public var position: Int64
        public var size: Int
        public var isKeyframe: Bool
    }

    /// The container's index for `stream`: every sample for mp4/mov, only cue points for
    /// matroska, nothing for MPEG-TS. The corresponding C function is `avformat_index_get_entry`.
    public func indexEntries(ofStream index: Int) -> [IndexEntry] {
        let stream = context.pointee.streams[index]!
        let count = avformat_index_get_entries_count(stream)
        return (0..<count).compactMap { i in
            guard let e = avformat_index_get_entry(stream, i) else { return nil }
            return IndexEntry(timestamp: e.pointee.timestamp - originTicks[index], position: e.pointee.pos, size: Int(e.pointee.size),
                              isKeyframe: e.pointee.flags & AVINDEX_KEYFRAME != 0)
        }
    }

    /// The demuxer whose content probe best recognises `bytes` (the start of a file), with its
    /// score (0–100), or nil if none does. Only content counts, not the file name.
    /// The corresponding C function is `av_probe_input_format3`.
    public static func recognizeFormat(ofLeadingBytes bytes: [UInt8]) -> (name: String, score: Int)? {
        var padded = bytes + [UInt8](repeating: 0, count: Int(AVPROBE_PADDING_SIZE))
        var score: Int32 = 0
        let format: UnsafePointer<AVInputFormat>? = padded.withUnsafeMutableBufferPointer { buffer in
            "".withCString { emptyName in
                var probe = AVProbeData(filename: emptyName, buf: buffer.baseAddress, buf_size: Int32(bytes.count), mime_type: nil)
                return av_probe_input_format3(&probe, 1, &score)
            }
        }
        guard let format else { return nil }
        return (String(cString: format.pointee.name), Int(score))
    }

    // MARK: Snapshots

    /// The stream's properties, its start moved back by `origin` ticks (see `clockOrigin`).
    private static func snapshot(_ stream: UnsafeMutablePointer<AVStream>, origin: Int64) -> StreamInfo {
        let s = stream.pointee
        let par = s.codecpar.pointee
        let codec = CodecID(rawValue: par.codec_id.rawValue)
        let kind: StreamInfo.Kind
        switch par.codec_type {
        case AVMEDIA_TYPE_VIDEO: kind = .video
        case AVMEDIA_TYPE_AUDIO: kind = .audio
        case AVMEDIA_TYPE_SUBTITLE: kind = .subtitle
        case AVMEDIA_TYPE_DATA: kind = .data
        case AVMEDIA_TYPE_ATTACHMENT: kind = .attachment
        default: kind = .unknown
        }
        var matrix: [Int32]? = nil
        var sideDataSize: Int = 0
        if let raw = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &sideDataSize), sideDataSize >= 36 {
            matrix = raw.withMemoryRebound(to: Int32.self, capacity: 9) { Array(UnsafeBufferPointer(start: $0, count: 9)) }
        }
        var layout = par.ch_layout
        let layoutName: String? = layout.nb_channels > 0 ? describe(&layout) : nil
        var info = StreamInfo(
            index: Int(s.index), containerID: Int(s.id), kind: kind, codecName: codec.name, codec: codec,
            profile: par.profile == FF_PROFILE_UNKNOWN ? nil : codec.profileName(par.profile) ?? String(par.profile),
            level: par.level == FF_LEVEL_UNKNOWN || par.level < 0 ? nil : Int(par.level),
            timeBase: Rational(s.time_base), startTime: timestamp(s.start_time).map { $0 - origin },
            duration: s.duration > 0 ? timestamp(s.duration) : nil, declaredFrameCount: s.nb_frames,
            averageFrameRate: Rational(s.avg_frame_rate), realFrameRate: Rational(s.r_frame_rate),
            bitRate: par.bit_rate, codecTag: par.codec_tag,
            isDefault: s.disposition & AV_DISPOSITION_DEFAULT != 0,
            isAttachedPicture: s.disposition & AV_DISPOSITION_ATTACHED_PIC != 0,
            metadata: dictionary(s.metadata),
            width: Int(par.width), height: Int(par.height),
            pixelFormat: kind == .video ? PixelFormatID(rawValue: par.format) : .none,
            sampleAspectRatio: Rational(av_guess_sample_aspect_ratio(nil, stream, nil)),
            codecSampleAspectRatio: Rational(par.sample_aspect_ratio),
            bitsPerRawSample: Int(par.bits_per_raw_sample),
            videoDelay: Int(par.video_delay),
            colorPrimaries: par.color_primaries == AVCOL_PRI_UNSPECIFIED ? nil : av_color_primaries_name(par.color_primaries).map { String(cString: $0) },
            colorTransfer: par.color_trc == AVCOL_TRC_UNSPECIFIED ? nil : av_color_transfer_name(par.color_trc).map { String(cString: $0) },
            colorMatrix: par.color_space == AVCOL_SPC_UNSPECIFIED ? nil : av_color_space_name(par.color_space).map { String(cString: $0) },
            colorRange: par.color_range == AVCOL_RANGE_UNSPECIFIED ? nil : av_color_range_name(par.color_range).map { String(cString: $0) },
            fieldOrder: fieldOrderName(par.field_order),
            displayMatrix: matrix,
            sampleRate: Int(par.sample_rate), channelCount: Int(par.ch_layout.nb_channels),
            channelLayout: layoutName,
            sampleFormat: kind == .audio ? SampleFormatID(rawValue: par.format) : .none,
            frameSize: Int(par.frame_size), initialPadding: Int(par.initial_padding)
        )
        if kind == .video { readHDRSideData(stream, into: &info) }
        return info
    }

    /// The stream's mastering display, content light level and Dolby Vision configuration side
    /// data. The corresponding C function is `av_stream_get_side_data`.
    private static func readHDRSideData(_ stream: UnsafeMutablePointer<AVStream>, into info: inout StreamInfo) {
        var size = 0
        if let raw = av_stream_get_side_data(stream, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, &size),
           size >= MemoryLayout<AVMasteringDisplayMetadata>.size {
            let m = UnsafeRawPointer(raw).loadUnaligned(as: AVMasteringDisplayMetadata.self)
            func value(_ r: AVRational) -> Double { r.den == 0 ? 0 : Double(r.num) / Double(r.den) }
            var display = MasteringDisplay()
            if m.has_primaries != 0 {
                let p = m.display_primaries
                display.red = [value(p.0.0), value(p.0.1)]
                display.green = [value(p.1.0), value(p.1.1)]
                display.blue = [value(p.2.0), value(p.2.1)]
                display.whitePoint = [value(m.white_point.0), value(m.white_point.1)]
            }
            if m.has_luminance != 0 {
                display.minLuminance = value(m.min_luminance)
                display.maxLuminance = value(m.max_luminance)
            }
            info.masteringDisplay = display
        }
        if let raw = av_stream_get_side_data(stream, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, &size),
           size >= MemoryLayout<AVContentLightMetadata>.size {
            let c = UnsafeRawPointer(raw).loadUnaligned(as: AVContentLightMetadata.self)
            info.contentLightLevel = ContentLightLevel(maxContentLightLevel: Int(c.MaxCLL), maxFrameAverageLightLevel: Int(c.MaxFALL))
        }
        if let raw = av_stream_get_side_data(stream, AV_PKT_DATA_DOVI_CONF, &size),
           size >= MemoryLayout<AVDOVIDecoderConfigurationRecord>.size {
            let d = UnsafeRawPointer(raw).loadUnaligned(as: AVDOVIDecoderConfigurationRecord.self)
            info.dolbyVision = DolbyVisionConfiguration(
                versionMajor: Int(d.dv_version_major), versionMinor: Int(d.dv_version_minor), profile: Int(d.dv_profile),
                level: Int(d.dv_level), hasRPU: d.rpu_present_flag != 0, hasEnhancementLayer: d.el_present_flag != 0,
                hasBaseLayer: d.bl_present_flag != 0, baseLayerCompatibilityID: Int(d.dv_bl_signal_compatibility_id))
        }
    }

    private static func fieldOrderName(_ order: AVFieldOrder) -> String? {
        switch order {
        case AV_FIELD_PROGRESSIVE: return "progressive"
        case AV_FIELD_TT: return "tt"
        case AV_FIELD_BB: return "bb"
        case AV_FIELD_TB: return "tb"
        case AV_FIELD_BT: return "bt"
        default: return nil
        }
    }
}

/// FFmpeg's text for a channel layout. The corresponding C function is `av_channel_layout_describe`.
func describe(_ layout: UnsafePointer<AVChannelLayout>) -> String? {
    var buffer = [CChar](repeating: 0, count: 128)
    guard av_channel_layout_describe(layout, &buffer, buffer.count) > 0 else { return nil }
    let end = buffer.firstIndex(of: 0) ?? buffer.endIndex
    return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Every key/value of an `AVDictionary`. The corresponding C function is `av_dict_get`.
func dictionary(_ dict: OpaquePointer?) -> [String: String] {
    var result: [String: String] = [:]
    var entry: UnsafeMutablePointer<AVDictionaryEntry>? = nil
    while let e = av_dict_get(dict, "", entry, AV_DICT_IGNORE_SUFFIX) {
        result[String(cString: e.pointee.key)] = String(cString: e.pointee.value)
        entry = e
    }
    return result
}

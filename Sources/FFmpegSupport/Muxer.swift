internal import CFFmpeg
import MediaCore

/// Writes packets into a media file, or into memory that the caller takes piece by piece
/// (segments). Owns the output `AVFormatContext` and its `AVIOContext`; one task or queue at
/// a time. The output is closed in `deinit` if `finish` was not reached, so a failed header
/// or write never leaks the context, the descriptor or the buffer.
public final class Muxer {
    /// Holds the context for each call: one thread at a time, checked.
    package let use = ExclusiveUse("Muxer")
    let context: UnsafeMutablePointer<AVFormatContext>
    /// The path being written; empty for a muxer writing into memory.
    public let path: String
    /// The output is a growing memory buffer (`takeWrittenBytes`), not a file.
    public let writesToMemory: Bool
    private var headerWritten = false
    private var trailerWritten = false
    /// Packets waiting for their turn in decode-time order, when the format leaves the order to
    /// libavformat's generic interleaving (every format but a few broadcast ones, such as MXF,
    /// with an interleaver of their own); otherwise nil, and libavformat's queue is used.
    private var interleaver: PacketInterleaver?
    /// Packets are written as they are handed over, not interleaved: a fragmented MP4 muxer
    /// keeps each track's part of a fragment apart until the fragment ends, so their order
    /// across tracks does not matter. Set before the first packet.
    public var writesInCallOrder = false

    /// Creates the file at `path` for FFmpeg's muxer `formatName` ("mp4", "matroska"), replacing
    /// it, or, with `truncating: false`, writing over the file already there from its start: for
    /// a file the caller has just created empty. Truncating an existing file on ext4 makes its
    /// close start writing the whole file back to disk (the "replace via truncate" heuristic of
    /// `auto_da_alloc`), 60 ms for a 200 MB file on this VM, waited for by the writer's thread.
    /// The corresponding C functions are `avformat_alloc_output_context2` and `avio_open2`.
    public init(formatName: String, path: String, truncating: Bool = true) throws(FFmpegError) {
        FFmpegLogging.installDefaultLevel()
        var allocated: UnsafeMutablePointer<AVFormatContext>? = nil
        try check(avformat_alloc_output_context2(&allocated, nil, formatName, path), "avformat_alloc_output_context2")
        guard let context = allocated else { throw FFmpegError(code: .outOfMemory, function: "avformat_alloc_output_context2") }
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        if !truncating { av_dict_set(&options, "truncate", "0", 0) }
        let opened = avio_open2(&context.pointee.pb, path, AVIO_FLAG_WRITE, nil, &options)
        if opened < 0 {
            avformat_free_context(context)
            throw FFmpegError(opened, "avio_open")
        }
        self.context = context
        self.path = path
        writesToMemory = false
        if context.pointee.oformat.pointee.interleave_packet == nil { interleaver = PacketInterleaver() }
    }

    /// A muxer for `formatName` writing into memory; `takeWrittenBytes()` hands out what it
    /// wrote so far. The corresponding C functions are `avformat_alloc_output_context2` and
    /// `avio_open_dyn_buf`.
    public init(formatName: String) throws(FFmpegError) {
        FFmpegLogging.installDefaultLevel()
        var allocated: UnsafeMutablePointer<AVFormatContext>? = nil
        try check(avformat_alloc_output_context2(&allocated, nil, formatName, nil), "avformat_alloc_output_context2")
        guard let context = allocated else { throw FFmpegError(code: .outOfMemory, function: "avformat_alloc_output_context2") }
        let opened = avio_open_dyn_buf(&context.pointee.pb)
        if opened < 0 {
            avformat_free_context(context)
            throw FFmpegError(opened, "avio_open_dyn_buf")
        }
        self.context = context
        path = ""
        writesToMemory = true
        if context.pointee.oformat.pointee.interleave_packet == nil { interleaver = PacketInterleaver() }
    }

    deinit {
        if writesToMemory {
            _ = Self.closeMemory(&context.pointee.pb)
        } else {
            avio_closep(&context.pointee.pb)
        }
        avformat_free_context(context)
    }

    /// Closes a memory output and returns its bytes, in the buffer they were written into.
    /// The corresponding C function is `avio_close_dyn_buf`.
    private static func closeMemory(_ pb: inout UnsafeMutablePointer<AVIOContext>?) -> WrittenBytes {
        guard let open = pb else { return WrittenBytes(nil, count: 0) }
        pb = nil
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        let count = avio_close_dyn_buf(open, &buffer)
        return WrittenBytes(buffer, count: Int(max(count, 0)))
    }

    /// The bytes a memory muxer wrote since the last call (none for a file muxer), handed over
    /// without a copy; writing goes on into a new buffer. The corresponding C functions are
    /// `avio_close_dyn_buf` and `avio_open_dyn_buf`.
    public func takeWrittenBytes() throws(FFmpegError) -> WrittenBytes {
        use.begin(); defer { use.end() }
        guard writesToMemory else { return WrittenBytes(nil, count: 0) }
        let bytes = Self.closeMemory(&context.pointee.pb)
        guard !trailerWritten else { return bytes }
        try check(avio_open_dyn_buf(&context.pointee.pb), "avio_open_dyn_buf")
        return bytes
    }

    /// How many bytes the output holds since the last `takeWrittenBytes()` (a memory muxer),
    /// or since it opened: where the next byte written will be. The corresponding C function
    /// is `avio_seek` with `SEEK_CUR`.
    public var writtenByteCount: Int {
        use.begin(); defer { use.end() }
        guard let pb = context.pointee.pb else { return 0 }
        return Int(avio_seek(pb, 0, SEEK_CUR))
    }

    /// Writes `bytes` into the output as they are, between what the muxer writes: a box the
    /// format does not write itself. The corresponding C function is `avio_write`.
    public func writeRawBytes(_ bytes: [UInt8]) {
        use.begin(); defer { use.end() }
        guard let pb = context.pointee.pb else { return }
        bytes.withUnsafeBufferPointer { avio_write(pb, $0.baseAddress, Int32($0.count)) }
    }

    /// FFmpeg's short name for the container ("mp4").
    public var formatName: String { String(cString: context.pointee.oformat.pointee.name) }

    /// True when encoders must put their configuration in the header (`AVFMT_GLOBALHEADER`),
    /// i.e. open them with `Encoder.Configuration.globalHeader`.
    public var needsGlobalHeader: Bool { context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0 }

    /// `needsGlobalHeader` for the container FFmpeg names `formatName`, before one is opened.
    public static func needsGlobalHeader(formatName: String) -> Bool {
        guard let format = av_guess_format(formatName, nil, nil) else { return false }
        return format.pointee.flags & AVFMT_GLOBALHEADER != 0
    }

    /// Whether the container can hold `codec`: true, false, or nil when FFmpeg cannot tell.
    /// The corresponding C function is `avformat_query_codec`.
    public static func canHold(_ codec: CodecID, formatName: String) -> Bool? {
        guard let format = av_guess_format(formatName, nil, nil) else { return false }
        let answer = avformat_query_codec(format, codec.avValue, FF_COMPLIANCE_NORMAL)
        return answer < 0 ? nil : answer == 1
    }

    // MARK: Streams

    /// Adds a stream with a copy of `parameters` and returns its index. `timeBase` is a wish:
    /// the muxer may pick another in `writeHeader` (read it back with `timeBase(ofStream:)`).
    /// A source `codecTag` is kept only when this container knows it for the codec; `codecTag`
    /// overrides it (e.g. "hvc1"). The corresponding C functions are `avformat_new_stream` and
    /// `avcodec_parameters_copy`.
    public func addStream(parameters: CodecParameters, timeBase: Rational, codecTag: String? = nil) throws(FFmpegError) -> Int {
        guard !headerWritten else { throw FFmpegError(code: .invalidArgument, function: "avformat_new_stream") }
        guard let stream = avformat_new_stream(context, nil) else {
            throw FFmpegError(code: .outOfMemory, function: "avformat_new_stream")
        }
        try check(avcodec_parameters_copy(stream.pointee.codecpar, parameters.pointer), "avcodec_parameters_copy")
        stream.pointee.time_base = timeBase.avRational
        // Matroska writes a picture's display size from the stream's pixel aspect, not the codec's.
        stream.pointee.sample_aspect_ratio = stream.pointee.codecpar.pointee.sample_aspect_ratio
        let par = stream.pointee.codecpar!
        if let codecTag, codecTag.utf8.count == 4 {
            let b = Array(codecTag.utf8).map(UInt32.init)
            par.pointee.codec_tag = b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24
        } else if let tags = context.pointee.oformat.pointee.codec_tag {
            // The rule ffmpeg's stream copy uses: keep the source tag if the container maps it
            // to this codec, or has no tag of its own for the codec.
            var own: UInt32 = 0
            let source = par.pointee.codec_tag
            if source != 0, av_codec_get_id(tags, source) != par.pointee.codec_id,
               av_codec_get_tag2(tags, par.pointee.codec_id, &own) != 0 {
                par.pointee.codec_tag = 0
            }
        } else {
            par.pointee.codec_tag = 0
        }
        registerStreamsForInterleaving()
        return Int(stream.pointee.index)
    }

    /// The time base of stream `index`'s packets; final once the header is written.
    public func timeBase(ofStream index: Int) -> Rational { Rational(context.pointee.streams[index]!.pointee.time_base) }

    /// Sets a stream's language (ISO 639-2, "eng").
    /// The corresponding C function is `av_dict_set` on the stream's metadata.
    public func setLanguage(_ code: String, ofStream index: Int) throws(FFmpegError) {
        try check(av_dict_set(&context.pointee.streams[index]!.pointee.metadata, "language", code, 0), "av_dict_set")
    }

    /// Sets one of a stream's metadata entries ("title", "handler_name").
    /// The corresponding C function is `av_dict_set` on the stream's metadata.
    public func setMetadata(_ value: String, forKey key: String, ofStream index: Int) throws(FFmpegError) {
        try check(av_dict_set(&context.pointee.streams[index]!.pointee.metadata, key, value, 0), "av_dict_set")
    }

    /// Marks a stream as played by default, or not (the disposition's default flag; Matroska's
    /// FlagDefault, MP4's track enabled flag).
    public func setDefault(_ isDefault: Bool, ofStream index: Int) {
        let stream = context.pointee.streams[index]!
        if isDefault {
            stream.pointee.disposition |= AV_DISPOSITION_DEFAULT
        } else {
            stream.pointee.disposition &= ~AV_DISPOSITION_DEFAULT
        }
    }

    /// Attaches a display matrix (3×3, row major, 16.16 fixed point except the last column,
    /// which is 2.30) that players apply to the stream's pictures.
    /// The corresponding C function is `av_stream_new_side_data` with `AV_PKT_DATA_DISPLAYMATRIX`.
    public func setDisplayMatrix(_ matrix: [Int32], ofStream index: Int) throws(FFmpegError) {
        guard matrix.count == 9 else { throw FFmpegError(code: .invalidArgument, function: "av_stream_new_side_data") }
        guard let data = av_stream_new_side_data(context.pointee.streams[index]!, AV_PKT_DATA_DISPLAYMATRIX, 36) else {
            throw FFmpegError(code: .outOfMemory, function: "av_stream_new_side_data")
        }
        data.withMemoryRebound(to: Int32.self, capacity: 9) { $0.update(from: matrix, count: 9) }
    }

    /// Attaches the mastering display (SMPTE ST 2086) as stream side data; the MP4/MOV muxer
    /// writes it as `mdcv`, Matroska as MasteringMetadata. The corresponding C function is
    /// `av_stream_new_side_data` with `AV_PKT_DATA_MASTERING_DISPLAY_METADATA`.
    public func setMasteringDisplay(_ m: MasteringDisplay, ofStream index: Int) throws(FFmpegError) {
        var metadata = AVMasteringDisplayMetadata()
        func rational(_ v: Double, _ den: Int32) -> AVRational { AVRational(num: Int32((v * Double(den)).rounded()), den: den) }
        if let r = m.red, let g = m.green, let b = m.blue, let w = m.whitePoint, [r, g, b, w].allSatisfy({ $0.count == 2 }) {
            metadata.display_primaries = ((rational(r[0], 50000), rational(r[1], 50000)), (rational(g[0], 50000), rational(g[1], 50000)),
                                          (rational(b[0], 50000), rational(b[1], 50000)))
            metadata.white_point = (rational(w[0], 50000), rational(w[1], 50000))
            metadata.has_primaries = 1
        }
        if let low = m.minLuminance, let high = m.maxLuminance {
            metadata.min_luminance = rational(low, 10000)
            metadata.max_luminance = rational(high, 10000)
            metadata.has_luminance = 1
        }
        let size = MemoryLayout<AVMasteringDisplayMetadata>.size
        guard let data = av_stream_new_side_data(context.pointee.streams[index]!, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, size) else {
            throw FFmpegError(code: .outOfMemory, function: "av_stream_new_side_data")
        }
        UnsafeMutableRawPointer(data).storeBytes(of: metadata, as: AVMasteringDisplayMetadata.self)
    }

    /// Attaches the content light level (MaxCLL, MaxFALL) as stream side data (`clli` in MP4/MOV).
    /// The corresponding C function is `av_stream_new_side_data` with `AV_PKT_DATA_CONTENT_LIGHT_LEVEL`.
    public func setContentLightLevel(_ c: ContentLightLevel, ofStream index: Int) throws(FFmpegError) {
        let metadata = AVContentLightMetadata(MaxCLL: UInt32(clamping: c.maxContentLightLevel), MaxFALL: UInt32(clamping: c.maxFrameAverageLightLevel))
        let size = MemoryLayout<AVContentLightMetadata>.size
        guard let data = av_stream_new_side_data(context.pointee.streams[index]!, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, size) else {
            throw FFmpegError(code: .outOfMemory, function: "av_stream_new_side_data")
        }
        UnsafeMutableRawPointer(data).storeBytes(of: metadata, as: AVContentLightMetadata.self)
    }

    /// Sets a container-level metadata entry ("title", "artist").
    /// The corresponding C function is `av_dict_set`.
    public func setMetadata(_ value: String, forKey key: String) throws(FFmpegError) {
        try check(av_dict_set(&context.pointee.metadata, key, value, 0), "av_dict_set")
    }

    /// Adds a chapter from `start` to `end` (in `timeBase`) with `title`, before the header is
    /// written; the context owns it from then on (`avformat_free_context` frees it). The
    /// corresponding C functions are `av_mallocz` and `av_dynarray_add_nofree`.
    public func addChapter(id: Int64, start: Int64, end: Int64, timeBase: Rational, title: String?) throws(FFmpegError) {
        guard let chapter = av_mallocz(MemoryLayout<AVChapter>.size)?.assumingMemoryBound(to: AVChapter.self) else {
            throw FFmpegError(code: .outOfMemory, function: "av_mallocz")
        }
        chapter.pointee.id = id
        chapter.pointee.start = start
        chapter.pointee.end = end
        chapter.pointee.time_base = timeBase.avRational
        if let title, av_dict_set(&chapter.pointee.metadata, "title", title, 0) < 0 {
            av_free(chapter)
            throw FFmpegError(code: .outOfMemory, function: "av_dict_set")
        }
        let added = withUnsafeMutablePointer(to: &context.pointee.chapters) { table in
            withUnsafeMutablePointer(to: &context.pointee.nb_chapters) { number in
                number.withMemoryRebound(to: Int32.self, capacity: 1) { av_dynarray_add_nofree(table, $0, chapter) }
            }
        }
        if added < 0 {
            av_dict_free(&chapter.pointee.metadata)
            av_free(chapter)
            throw FFmpegError(added, "av_dynarray_add_nofree")
        }
    }

    // MARK: Writing

    /// Writes the file header. `options` are muxer options such as `movflags`; an option the
    /// muxer does not know is an error. The corresponding C function is `avformat_write_header`.
    public func writeHeader(options: [(name: String, value: String)] = []) throws(FFmpegError) {
        use.begin(); defer { use.end() }
        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        for option in options {
            try check(av_dict_set(&dict, option.name, option.value, 0), "av_dict_set")
        }
        try check(avformat_write_header(context, &dict), "avformat_write_header")
        headerWritten = true
        registerStreamsForInterleaving()
        if av_dict_count(dict) > 0 {
            throw FFmpegError(code: .invalidArgument, function: "avformat_write_header (unknown muxer option)")
        }
    }

    /// Writes a packet (timestamps in its stream's time base), interleaving streams by decode
    /// time: it waits in the interleaving queue until no audio or video stream that has not
    /// ended can still send an earlier packet. Takes the packet: the muxer may keep it until its
    /// turn, so the caller must not change or reuse it. The corresponding C functions are
    /// `av_write_frame`, or `av_interleaved_write_frame` for a format that interleaves itself.
    public func write(_ packet: Packet) throws(FFmpegError) {
        use.begin(); defer { use.end() }
        if writesInCallOrder {
            try check(av_write_frame(context, packet.pointer), "av_write_frame")
            return
        }
        guard interleaver != nil else {
            try check(av_interleaved_write_frame(context, packet.pointer), "av_interleaved_write_frame")
            return
        }
        interleaver!.queue(packet)
        try writeInterleaved(all: false)
    }

    /// Stream `index` sends no more packets: packets no longer wait for it.
    public func endStream(_ index: Int) throws(FFmpegError) {
        use.begin(); defer { use.end() }
        interleaver?.end(stream: index)
        try writeInterleaved(all: false)
    }

    /// Stream `index` sends no packet decoded before `ticks` of `timeBase`: packets decoded
    /// earlier no longer wait for it.
    public func promiseNoPacket(inStream index: Int, before ticks: Int64, timeBase: Rational) throws(FFmpegError) {
        use.begin(); defer { use.end() }
        interleaver?.promise(stream: index, noPacketBefore: ticks, timeBase: timeBase.avRational)
        try writeInterleaved(all: false)
    }

    /// The longest the interleaving queue waits for a stream: libavformat's default
    /// `max_interleave_delta`.
    public static let maximumInterleavingSpan = MediaTime(value: PacketInterleaver.maximumSpanMicroseconds, timescale: 1_000_000)

    /// What waits in the interleaving queue now: packets, their payload bytes, and the time
    /// from the earliest decode time to the latest; and how many packets it has written out of
    /// decode-time order, having waited `maximumInterleavingSpan` (all zero where libavformat
    /// interleaves).
    public var interleavingQueue: (packets: Int, bytes: Int, span: MediaTime, outOfOrder: Int) {
        guard let interleaver else { return (0, 0, .zero, 0) }
        return (interleaver.packetCount, interleaver.byteCount, interleaver.span, interleaver.writtenOutOfOrder)
    }

    /// Gives the interleaving queue every stream's final time base and whether it is awaited.
    private func registerStreamsForInterleaving() {
        guard interleaver != nil else { return }
        for index in 0..<Int(context.pointee.nb_streams) {
            let stream = context.pointee.streams[index]!.pointee
            let type = stream.codecpar.pointee.codec_type
            let isCoverPicture = stream.disposition & AV_DISPOSITION_ATTACHED_PIC != 0
            interleaver!.set(stream: index, timeBase: stream.time_base,
                             awaited: (type == AVMEDIA_TYPE_VIDEO || type == AVMEDIA_TYPE_AUDIO) && !isCoverPicture)
        }
    }

    /// Writes the queued packets that may go now, or all of them.
    private func writeInterleaved(all: Bool) throws(FFmpegError) {
        guard headerWritten else { return }
        while let packet = interleaver?.next(all: all) {
            try check(av_write_frame(context, packet.pointer), "av_write_frame")
        }
    }

    /// Writes every packet waiting for interleaving, then ends the fragment under way (a
    /// `moof` and its `mdat`, for an mp4 muxer opened with `movflags=frag_custom`). The
    /// corresponding C functions are `av_interleaved_write_frame` and `av_write_frame` with
    /// a null packet.
    public func flushFragment() throws(FFmpegError) {
        use.begin(); defer { use.end() }
        try writeInterleaved(all: true)
        try check(av_interleaved_write_frame(context, nil), "av_interleaved_write_frame")
        try check(av_write_frame(context, nil), "av_write_frame")
    }

    /// Flushes interleaved packets, writes the trailer (the moov box for mp4) and closes the
    /// file; a memory muxer keeps its last bytes for `takeWrittenBytes()`.
    /// The corresponding C functions are `av_write_trailer` and `avio_closep`.
    public func finish() throws(FFmpegError) {
        use.begin(); defer { use.end() }
        guard !trailerWritten else { return }
        trailerWritten = true
        try writeInterleaved(all: true)
        try check(av_write_trailer(context), "av_write_trailer")
        if !writesToMemory { try check(avio_closep(&context.pointee.pb), "avio_closep") }
    }
}

/// Bytes a memory muxer wrote, in the buffer FFmpeg wrote them into, which is freed with them.
/// The corresponding C function is `av_free`.
// @unchecked: the buffer is never written after the muxer hands it over, and freed once, in deinit.
public final class WrittenBytes: @unchecked Sendable {
    private let buffer: UnsafeMutablePointer<UInt8>?
    public let count: Int

    init(_ buffer: UnsafeMutablePointer<UInt8>?, count: Int) {
        self.buffer = buffer
        self.count = buffer == nil ? 0 : count
    }

    deinit { av_free(buffer) }

    /// Where the bytes start, valid while this value lives; nil when there are none.
    public var baseAddress: UnsafeMutableRawPointer? { count > 0 ? UnsafeMutableRawPointer(buffer) : nil }
}

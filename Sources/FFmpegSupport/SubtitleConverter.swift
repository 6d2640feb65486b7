internal import CFFmpeg

/// Converts text subtitle packets from one format to another (SubRip, ASS, WebVTT, MP4's
/// mov_text), as ffmpeg does when a container cannot hold the source's format: each packet is
/// decoded to ASS events and encoded again. Timing stays with the caller: a text packet's
/// time is its container's, not its bytes'. Owns both codec contexts; one task at a time.
public final class SubtitleConverter {
    /// Holds the context for each call: one thread at a time, checked.
    package let use = ExclusiveUse("SubtitleConverter")
    private let decoder: UnsafeMutablePointer<AVCodecContext>
    private let encoder: UnsafeMutablePointer<AVCodecContext>
    /// The converted stream's parameters (mov_text's sample description, ASS's header).
    public let parameters: CodecParameters
    /// The largest packet the encoder may write; a cue's text is far smaller.
    private static let bufferSize = 1 << 20

    /// Opens the decoder of `source` and the encoder of `target` (a codec name: "mov_text",
    /// "subrip", "ass", "webvtt"). The ASS header the decoder makes (styles, play size) is
    /// handed to the encoder, which keeps what its format can. Throws for bitmap subtitles,
    /// which no text encoder takes. The corresponding C functions are `avcodec_open2` and
    /// `avcodec_parameters_from_context`.
    public init(source: CodecParameters, target: String) throws(FFmpegError) {
        guard source.codec.isTextSubtitle else { throw FFmpegError(code: .invalidArgument, function: "avcodec_find_decoder") }
        guard let decoderCodec = avcodec_find_decoder(source.pointer.pointee.codec_id) else {
            throw FFmpegError(code: .decoderNotFound, function: "avcodec_find_decoder")
        }
        guard let encoderCodec = avcodec_find_encoder_by_name(target) else {
            throw FFmpegError(code: .encoderNotFound, function: "avcodec_find_encoder_by_name")
        }
        guard let decoder = avcodec_alloc_context3(decoderCodec) else { throw FFmpegError(code: .outOfMemory, function: "avcodec_alloc_context3") }
        guard let encoder = avcodec_alloc_context3(encoderCodec) else {
            var d: UnsafeMutablePointer<AVCodecContext>? = decoder
            avcodec_free_context(&d)
            throw FFmpegError(code: .outOfMemory, function: "avcodec_alloc_context3")
        }
        self.decoder = decoder
        self.encoder = encoder
        parameters = CodecParameters()
        try check(avcodec_parameters_to_context(decoder, source.pointer), "avcodec_parameters_to_context")
        decoder.pointee.pkt_timebase = AVRational(num: 1, den: 1000)
        try check(avcodec_open2(decoder, decoderCodec, nil), "avcodec_open2")
        encoder.pointee.time_base = AVRational(num: 1, den: 1000)
        encoder.pointee.width = source.pointer.pointee.width
        encoder.pointee.height = source.pointer.pointee.height
        if let header = decoder.pointee.subtitle_header, decoder.pointee.subtitle_header_size > 0 {
            let size = Int(decoder.pointee.subtitle_header_size)
            guard let copy = av_mallocz(size + 1)?.assumingMemoryBound(to: UInt8.self) else {
                throw FFmpegError(code: .outOfMemory, function: "av_mallocz")
            }
            copy.update(from: header, count: size)
            encoder.pointee.subtitle_header = copy
            encoder.pointee.subtitle_header_size = Int32(size)
        }
        try check(avcodec_open2(encoder, encoderCodec, nil), "avcodec_open2")
        try check(avcodec_parameters_from_context(parameters.pointer, encoder), "avcodec_parameters_from_context")
    }

    /// True when this libavcodec decodes `source` and has the `target` encoder.
    public static func canConvert(_ source: CodecID, to target: String) -> Bool {
        source.isTextSubtitle && avcodec_find_decoder(source.avValue) != nil && avcodec_find_encoder_by_name(target) != nil
    }

    deinit {
        var d: UnsafeMutablePointer<AVCodecContext>? = decoder
        avcodec_free_context(&d)
        var e: UnsafeMutablePointer<AVCodecContext>? = encoder
        avcodec_free_context(&e)
    }

    /// The converted packet for `packet`, without times; nil when it holds no event (an empty
    /// cue, or a decoder that swallowed it). The corresponding C functions are
    /// `avcodec_decode_subtitle2` and `avcodec_encode_subtitle`.
    public func convert(_ packet: Packet) throws(FFmpegError) -> Packet? {
        use.begin(); defer { use.end() }
        var subtitle = AVSubtitle()
        var got: Int32 = 0
        try check(avcodec_decode_subtitle2(decoder, &subtitle, &got, packet.pointer), "avcodec_decode_subtitle2")
        guard got != 0 else { return nil }
        defer { avsubtitle_free(&subtitle) }
        guard subtitle.num_rects > 0 else { return nil }
        // The encoders read the event's length from these, as ffmpeg hands them over.
        subtitle.end_display_time = subtitle.end_display_time &- subtitle.start_display_time
        subtitle.start_display_time = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 1)
        defer { buffer.deallocate() }
        let written = try check(avcodec_encode_subtitle(encoder, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(buffer.count), &subtitle),
                                "avcodec_encode_subtitle")
        guard written > 0 else { return nil }
        return try Packet(copying: UnsafeRawBufferPointer(rebasing: buffer[..<Int(written)]))
    }
}

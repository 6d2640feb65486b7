internal import CFFmpeg

/// Decodes one stream's packets into frames. Owns the `AVCodecContext`; one task at a time.
///
/// Feeding and draining follow FFmpeg's send/receive model: one packet may yield several
/// frames, so callers drain `receiveFrame()` until it reports `.needsInput`.
public final class Decoder {
    /// Holds the context for each call: one thread at a time, checked.
    package let use = ExclusiveUse("Decoder")
    let context: UnsafeMutablePointer<AVCodecContext>
    /// The device frames are decoded on, kept alive while the decoder uses it.
    private let hardware: HardwareDeviceContext?
    /// The container's sample aspect ratio, stamped on every frame: it wins over the bitstream's,
    /// as in ffmpeg's `decode_video`.
    private let containerSampleAspectRatio: Rational?

    /// What `send` did with a packet.
    public enum SendResult: Sendable, Equatable {
        case accepted
        /// The decoder holds output that must be received before it takes more input (EAGAIN).
        case outputPending
    }

    /// What `receiveFrame` produced.
    public enum ReceiveResult {
        case frame(Frame)
        /// The decoder needs another packet (EAGAIN).
        case needsInput
        /// Every frame has been returned after `sendEndOfStream` (EOF).
        case endOfStream
    }

    /// Opens a decoder for `parameters`; timestamps are in `timeBase`. `threadCount` 0 lets
    /// FFmpeg choose. `skippingLoopFilter` leaves out the in-loop deblocking (H.264, HEVC):
    /// pictures come out less exact, but every packet is still parsed and decoded, so a check
    /// for damage finds all it would find (the filter never fails), faster. The corresponding C
    /// functions are `avcodec_find_decoder`, `avcodec_parameters_to_context` and `avcodec_open2`.
    public init(parameters: CodecParameters, timeBase: Rational, threadCount: Int = 0,
                hardware: HardwareDeviceContext? = nil, extraHardwareFrames: Int = 0, skippingLoopFilter: Bool = false) throws(FFmpegError) {
        guard let codec = avcodec_find_decoder(parameters.pointer.pointee.codec_id) else {
            throw FFmpegError(code: .decoderNotFound, function: "avcodec_find_decoder")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw FFmpegError(code: .outOfMemory, function: "avcodec_alloc_context3")
        }
        // Until the decoder is whole, a failure frees the context here: `deinit` does not run
        // for an object whose initializer threw before every property was set.
        do throws(FFmpegError) {
            try check(avcodec_parameters_to_context(context, parameters.pointer), "avcodec_parameters_to_context")
            context.pointee.pkt_timebase = timeBase.avRational
            context.pointee.thread_count = Int32(threadCount)
            if skippingLoopFilter { context.pointee.skip_loop_filter = AVDISCARD_ALL }
            if let hardware {
                // Decode into VA surfaces when the driver takes this stream; libavcodec falls back to
                // the software formats by itself when the hardware decoder cannot be set up.
                context.pointee.hw_device_ctx = hardware.newReference()
                context.pointee.extra_hw_frames = Int32(extraHardwareFrames)
                context.pointee.get_format = preferVAAPISurfaces
            }
            try check(avcodec_open2(context, codec, nil), "avcodec_open2")
        } catch {
            var owned: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&owned)
            throw error
        }
        self.context = context
        self.hardware = hardware
        self.containerSampleAspectRatio = parameters.containerSampleAspectRatio
    }

    deinit { var p: UnsafeMutablePointer<AVCodecContext>? = context; avcodec_free_context(&p) }

    /// Whether the decoder was given a VA device (it may still decode in software when the
    /// driver refused the stream).
    public var usesDevice: Bool { hardware != nil }

    /// The threads the decoder runs on: the count asked for, or FFmpeg's default once resolved
    /// by `avcodec_open2`.
    public var threadCount: Int { Int(context.pointee.thread_count) }

    /// The decoder's name in FFmpeg ("h264", "libdav1d").
    public var name: String { String(cString: context.pointee.codec.pointee.name) }
    public var pixelFormat: PixelFormatID { PixelFormatID(rawValue: context.pointee.pix_fmt.rawValue) }
    public var width: Int { Int(context.pointee.width) }
    public var height: Int { Int(context.pointee.height) }

    /// Hands a packet to the decoder. The corresponding C function is `avcodec_send_packet`.
    public func send(_ packet: Packet) throws(FFmpegError) -> SendResult {
        use.begin(); defer { use.end() }
        let result = avcodec_send_packet(context, packet.pointer)
        if result == cffmpeg_averror(EAGAIN) { return .outputPending }
        try check(result, "avcodec_send_packet")
        return .accepted
    }

    /// Tells the decoder no more packets follow, so it releases the frames it holds back.
    /// The corresponding C function is `avcodec_send_packet` with a null packet.
    public func sendEndOfStream() throws(FFmpegError) {
        use.begin(); defer { use.end() }
        let result = avcodec_send_packet(context, nil)
        if result == cffmpeg_AVERROR_EOF() { return }
        try check(result, "avcodec_send_packet")
    }

    /// Takes the next decoded frame, if one is ready, with the container's sample aspect ratio
    /// where it declares one. The corresponding C function is `avcodec_receive_frame`.
    public func receiveFrame() throws(FFmpegError) -> ReceiveResult {
        use.begin(); defer { use.end() }
        let frame = Frame()
        let result = avcodec_receive_frame(context, frame.pointer)
        if result == cffmpeg_averror(EAGAIN) { return .needsInput }
        if result == cffmpeg_AVERROR_EOF() { return .endOfStream }
        try check(result, "avcodec_receive_frame")
        if let containerSampleAspectRatio { frame.pointer.pointee.sample_aspect_ratio = containerSampleAspectRatio.avRational }
        return .frame(frame)
    }

    /// True once the decoder has chosen to output VA surfaces rather than host frames.
    public var isDecodingToSurfaces: Bool { context.pointee.hw_frames_ctx != nil && context.pointee.pix_fmt == AV_PIX_FMT_VAAPI }

    /// Drops buffered frames, e.g. after a seek. The corresponding C function is `avcodec_flush_buffers`.
    public func flush() {
        use.begin(); defer { use.end() }
        avcodec_flush_buffers(context)
    }
}

/// libavcodec's format negotiation: VA surfaces when offered, else the decoder's first
/// software format. libavcodec calls this again without the VA-API entry if its set-up fails.
private func preferVAAPISurfaces(_ context: UnsafeMutablePointer<AVCodecContext>?,
                                 _ formats: UnsafePointer<AVPixelFormat>?) -> AVPixelFormat {
    guard let formats else { return AV_PIX_FMT_NONE }
    var i = 0
    var firstSoftware = AV_PIX_FMT_NONE
    while formats[i] != AV_PIX_FMT_NONE {
        if formats[i] == AV_PIX_FMT_VAAPI { return AV_PIX_FMT_VAAPI }
        if firstSoftware == AV_PIX_FMT_NONE, !PixelFormatID(rawValue: formats[i].rawValue).isHardware { firstSoftware = formats[i] }
        i += 1
    }
    return firstSoftware
}

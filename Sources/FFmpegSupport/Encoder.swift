internal import CFFmpeg

/// Encodes frames into packets. Owns the `AVCodecContext`; one task or queue at a time.
///
/// Feeding and draining follow FFmpeg's send/receive model: one frame may yield no packet
/// or several, so callers drain `receivePacket()` until it reports `.needsInput`.
public final class Encoder {
    /// Holds the context for each call: one thread at a time, checked.
    package let use = ExclusiveUse("Encoder")
    let context: UnsafeMutablePointer<AVCodecContext>
    /// The surfaces a VA-API encoder reads, kept alive while it runs.
    public let hardwareFrames: SurfacePool?

    /// What the encoder is opened with. Fields left nil keep the encoder's defaults.
    public struct Configuration: Sendable {
        // Video
        public var width: Int = 0
        public var height: Int = 0
        public var pixelFormat: PixelFormatID = .none
        /// Nominal frame rate, a hint for rate control (x264 and SVT-AV1 read it).
        public var frameRate: Rational?
        /// Keyframe interval in frames (`gop_size`).
        public var keyframeInterval: Int?
        /// Largest number of consecutive B-frames; 0 turns frame reordering off.
        public var maxBFrames: Int?
        /// The stored pixel's shape (`sample_aspect_ratio`), written in the stream and by the muxer; nil: square.
        public var sampleAspectRatio: Rational?
        public var colorPrimaries: String?
        public var colorTransfer: String?
        public var colorMatrix: String?
        public var fullRange: Bool?
        // Audio
        public var sampleRate: Int = 0
        public var sampleFormat: SampleFormatID = .none
        public var channelCount: Int = 0
        /// FFmpeg's layout text ("stereo"); nil takes the default for `channelCount`.
        public var channelLayout: String?
        // Both
        /// Time base of the frames' timestamps and of the packets' timestamps.
        public var timeBase: Rational = Rational(1, 90000)
        /// Average bits per second.
        public var bitRate: Int64?
        /// Peak bits per second (`rc_max_rate`): the ceiling of a constant-quality encode
        /// (x264 and x265 VBV, VA-API QVBR); nil leaves it unlimited.
        public var maxBitRate: Int64?
        /// Rate-control buffer in bits (`rc_buffer_size`), which `maxBitRate` is measured over.
        public var bufferSize: Int64?
        /// `AVCodecContext.compression_level`: VA-API encoders pass it to the driver as the
        /// quality level (`VAEncMiscParameterBufferQualityLevel`; lower is slower and better).
        public var compressionLevel: Int?
        /// Fixed-quantiser quality (`global_quality` with `AV_CODEC_FLAG_QSCALE`), e.g. for mjpeg.
        public var fixedQuality: Int?
        /// `AVCodecContext.global_quality` as the encoder reads it raw (mjpeg_vaapi: JPEG quality 1–100).
        public var globalQuality: Int?
        /// Numeric codec profile (`AVCodecContext.profile`) for encoders that read it.
        public var profile: Int32?
        /// Codec extradata goes in the container header (the muxer's `AVFMT_GLOBALHEADER`).
        public var globalHeader: Bool = false
        /// Worker threads; 0 lets FFmpeg choose.
        public var threadCount: Int = 0
        /// Encoder-private options (`priv_data`), e.g. x264's "preset" or "crf", set before opening.
        public var privateOptions: [(name: String, value: String)] = []
        /// For VA-API encoders (`h264_vaapi`): the surfaces they read. The encoder then takes
        /// frames in VA surfaces of this pool's size and format (`pixelFormat` is ignored).
        public var hardwareFrames: SurfacePool?

        public init() {}
    }

    /// What `send` did with a frame.
    public enum SendResult: Sendable, Equatable {
        case accepted
        /// The encoder holds packets that must be received before it takes more input (EAGAIN).
        case outputPending
    }

    /// What `receivePacket` produced.
    public enum ReceiveResult {
        case packet(Packet)
        /// The encoder needs another frame (EAGAIN).
        case needsInput
        /// Every packet has been returned after `sendEndOfStream` (EOF).
        case endOfStream
    }

    /// Opens the encoder FFmpeg names `name` ("libx264", "aac") with `configuration`.
    /// The corresponding C functions are `avcodec_find_encoder_by_name`, `av_opt_set` and `avcodec_open2`.
    public init(name: String, configuration c: Configuration) throws(FFmpegError) {
        FFmpegLogging.installDefaultLevel()
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw FFmpegError(code: .encoderNotFound, function: "avcodec_find_encoder_by_name")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw FFmpegError(code: .outOfMemory, function: "avcodec_alloc_context3")
        }
        self.context = context
        self.hardwareFrames = c.hardwareFrames
        let ctx = context
        ctx.pointee.time_base = c.timeBase.avRational
        ctx.pointee.thread_count = Int32(c.threadCount)
        if let bitRate = c.bitRate { ctx.pointee.bit_rate = bitRate }
        if let maxBitRate = c.maxBitRate { ctx.pointee.rc_max_rate = maxBitRate }
        if let bufferSize = c.bufferSize { ctx.pointee.rc_buffer_size = Int32(clamping: bufferSize) }
        if let level = c.compressionLevel { ctx.pointee.compression_level = Int32(level) }
        if let profile = c.profile { ctx.pointee.profile = profile }
        if let q = c.fixedQuality {
            ctx.pointee.flags |= AV_CODEC_FLAG_QSCALE
            ctx.pointee.global_quality = Int32(q) * FF_QP2LAMBDA
        }
        if let q = c.globalQuality { ctx.pointee.global_quality = Int32(q) }
        if c.globalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        if codec.pointee.type == AVMEDIA_TYPE_VIDEO {
            ctx.pointee.width = Int32(c.width)
            ctx.pointee.height = Int32(c.height)
            ctx.pointee.pix_fmt = c.pixelFormat.avValue
            if let pool = c.hardwareFrames {
                ctx.pointee.pix_fmt = AV_PIX_FMT_VAAPI
                ctx.pointee.hw_frames_ctx = pool.newReference()
            }
            if let rate = c.frameRate, rate.isPositive { ctx.pointee.framerate = rate.avRational }
            if let gop = c.keyframeInterval { ctx.pointee.gop_size = Int32(gop) }
            if let b = c.maxBFrames { ctx.pointee.max_b_frames = Int32(b) }
            if let sar = c.sampleAspectRatio, sar.isPositive { ctx.pointee.sample_aspect_ratio = sar.avRational }
            if let v = c.colorPrimaries, case let n = av_color_primaries_from_name(v), n >= 0 {
                ctx.pointee.color_primaries = AVColorPrimaries(rawValue: UInt32(n))
            }
            if let v = c.colorTransfer, case let n = av_color_transfer_from_name(v), n >= 0 {
                ctx.pointee.color_trc = AVColorTransferCharacteristic(rawValue: UInt32(n))
            }
            if let v = c.colorMatrix, case let n = av_color_space_from_name(v), n >= 0 {
                ctx.pointee.colorspace = AVColorSpace(rawValue: UInt32(n))
            }
            if let full = c.fullRange { ctx.pointee.color_range = full ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG }
        } else if codec.pointee.type == AVMEDIA_TYPE_AUDIO {
            ctx.pointee.sample_rate = Int32(c.sampleRate)
            ctx.pointee.sample_fmt = c.sampleFormat.avValue
            av_channel_layout_uninit(&ctx.pointee.ch_layout)
            if let text = c.channelLayout {
                try check(av_channel_layout_from_string(&ctx.pointee.ch_layout, text), "av_channel_layout_from_string")
            } else {
                av_channel_layout_default(&ctx.pointee.ch_layout, Int32(c.channelCount))
            }
        }
        for option in c.privateOptions {
            guard let priv = ctx.pointee.priv_data else { throw FFmpegError(code: .invalidArgument, function: "av_opt_set") }
            try check(av_opt_set(priv, option.name, option.value, 0), "av_opt_set(\(option.name)=\(option.value))")
        }
        try check(avcodec_open2(ctx, codec, nil), "avcodec_open2")
    }

    deinit { var p: UnsafeMutablePointer<AVCodecContext>? = context; avcodec_free_context(&p) }

    /// The encoder's name in FFmpeg ("libx264").
    public var name: String { String(cString: context.pointee.codec.pointee.name) }
    public var codec: CodecID { CodecID(rawValue: context.pointee.codec_id.rawValue) }
    public var timeBase: Rational { Rational(context.pointee.time_base) }
    public var width: Int { Int(context.pointee.width) }
    public var height: Int { Int(context.pointee.height) }
    public var pixelFormat: PixelFormatID { PixelFormatID(rawValue: context.pointee.pix_fmt.rawValue) }
    public var sampleRate: Int { Int(context.pointee.sample_rate) }
    public var sampleFormat: SampleFormatID { SampleFormatID(rawValue: context.pointee.sample_fmt.rawValue) }
    public var channelCount: Int { Int(context.pointee.ch_layout.nb_channels) }
    /// FFmpeg's text for the channel layout the encoder was opened with.
    public var channelLayout: String? { describe(&context.pointee.ch_layout) }
    /// Samples per channel every audio frame must hold (the last may be shorter when
    /// `acceptsShortLastFrame`); 0 when any size is accepted.
    public var frameSize: Int {
        context.pointee.codec.pointee.capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE != 0 ? 0 : Int(context.pointee.frame_size)
    }
    /// True when the final audio frame may hold fewer than `frameSize` samples.
    public var acceptsShortLastFrame: Bool { context.pointee.codec.pointee.capabilities & AV_CODEC_CAP_SMALL_LAST_FRAME != 0 }
    /// Priming samples the encoder adds before the first input sample (AAC's 1024).
    public var initialPadding: Int { Int(context.pointee.initial_padding) }

    /// The parameters a muxer needs for this encoder's stream, extradata included.
    /// The corresponding C function is `avcodec_parameters_from_context`.
    public func codecParameters() throws(FFmpegError) -> CodecParameters {
        let parameters = CodecParameters()
        try check(avcodec_parameters_from_context(parameters.pointer, context), "avcodec_parameters_from_context")
        return parameters
    }

    /// Hands a frame to the encoder; its timestamps must be in `timeBase`. With a fixed
    /// quantiser the frame carries it too: libavcodec's mpegvideo encoders (mjpeg) read the
    /// per-frame `quality`, as ffmpeg's `-q:v` sets it. `forcingKeyframe` makes a video frame a
    /// keyframe (an IDR picture where the encoder is told `forced-idr`, as for libx264 and
    /// libx265; always for VA-API encoders). The corresponding C function is `avcodec_send_frame`.
    public func send(_ frame: Frame, forcingKeyframe: Bool = false) throws(FFmpegError) -> SendResult {
        use.begin(); defer { use.end() }
        if context.pointee.flags & AV_CODEC_FLAG_QSCALE != 0, frame.pointer.pointee.quality == 0 {
            frame.pointer.pointee.quality = context.pointee.global_quality
        }
        // A decoded picture keeps its source's picture type, which libx264, libx265 and the
        // VA-API encoders take as a forced keyframe when it is I: every frame of an MJPEG source
        // would become one. The encoder decides its own GOP, as ffmpeg's CLI lets it.
        if context.pointee.codec_type == AVMEDIA_TYPE_VIDEO {
            frame.pointer.pointee.pict_type = forcingKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        }
        let result = avcodec_send_frame(context, frame.pointer)
        if result == cffmpeg_averror(EAGAIN) { return .outputPending }
        try check(result, "avcodec_send_frame")
        return .accepted
    }

    /// Tells the encoder no more frames follow, so it releases the packets it holds back.
    /// The corresponding C function is `avcodec_send_frame` with a null frame.
    public func sendEndOfStream() throws(FFmpegError) {
        use.begin(); defer { use.end() }
        let result = avcodec_send_frame(context, nil)
        if result == cffmpeg_AVERROR_EOF() { return }
        try check(result, "avcodec_send_frame")
    }

    /// Takes the next encoded packet, if one is ready; its timestamps are in `timeBase`.
    /// The corresponding C function is `avcodec_receive_packet`.
    public func receivePacket() throws(FFmpegError) -> ReceiveResult {
        use.begin(); defer { use.end() }
        let packet = Packet()
        let result = avcodec_receive_packet(context, packet.pointer)
        if result == cffmpeg_averror(EAGAIN) { return .needsInput }
        if result == cffmpeg_AVERROR_EOF() { return .endOfStream }
        try check(result, "avcodec_receive_packet")
        return .packet(packet)
    }

    // MARK: Capabilities

    /// True when this FFmpeg build has an encoder named `name`. The corresponding C function is `avcodec_find_encoder_by_name`.
    public static func isAvailable(_ name: String) -> Bool { avcodec_find_encoder_by_name(name) != nil }

    /// The codec the encoder named `name` produces, nil if there is no such encoder.
    public static func codec(ofEncoder name: String) -> CodecID? {
        avcodec_find_encoder_by_name(name).map { CodecID(rawValue: $0.pointee.id.rawValue) }
    }

    /// Pixel formats the encoder accepts, in its order of preference (empty when it does not say).
    public static func pixelFormats(ofEncoder name: String) -> [PixelFormatID] {
        guard let list = avcodec_find_encoder_by_name(name)?.pointee.pix_fmts else { return [] }
        var result: [PixelFormatID] = []
        var i = 0
        while list[i] != AV_PIX_FMT_NONE { result.append(PixelFormatID(rawValue: list[i].rawValue)); i += 1 }
        return result
    }

    /// Sample formats the encoder accepts, in its order of preference (empty when it does not say).
    public static func sampleFormats(ofEncoder name: String) -> [SampleFormatID] {
        guard let list = avcodec_find_encoder_by_name(name)?.pointee.sample_fmts else { return [] }
        var result: [SampleFormatID] = []
        var i = 0
        while list[i] != AV_SAMPLE_FMT_NONE { result.append(SampleFormatID(rawValue: list[i].rawValue)); i += 1 }
        return result
    }

    /// Sample rates the encoder accepts (empty when any rate is accepted).
    public static func sampleRates(ofEncoder name: String) -> [Int] {
        guard let list = avcodec_find_encoder_by_name(name)?.pointee.supported_samplerates else { return [] }
        var result: [Int] = []
        var i = 0
        while list[i] != 0 { result.append(Int(list[i])); i += 1 }
        return result
    }
}

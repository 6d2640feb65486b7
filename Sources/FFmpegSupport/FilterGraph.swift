internal import CFFmpeg

/// A libavfilter graph for video: pictures of one size and format go in through a buffer
/// source, run through the filters of a description ("bwdif=mode=send_frame", "zscale=…"),
/// and come out of a buffer sink. Owns the graph (and with it both ends); one task at a time.
public final class FilterGraph {
    /// Holds the graph for each call: one thread at a time, checked.
    package let use = ExclusiveUse("FilterGraph")
    private let graph: UnsafeMutablePointer<AVFilterGraph>
    private let source: UnsafeMutablePointer<AVFilterContext>
    private let sink: UnsafeMutablePointer<AVFilterContext>
    public let description: String
    public let width: Int, height: Int, pixelFormat: PixelFormatID
    /// The time base of the pictures pushed, and of those pulled.
    public let timeBase: Rational
    private var ended = false

    /// What a pull gave.
    public enum PullResult {
        case frame(Frame)
        /// The graph needs another picture first (EAGAIN).
        case needsInput
        /// Every picture has come out after `pushEndOfStream` (EOF).
        case endOfStream
    }

    /// A graph running `description` on pictures of `width`×`height` in `pixelFormat`, timed
    /// in `timeBase`, with `pixelAspect` as their sample aspect ratio (0/1 when unknown).
    /// Colour properties travel on each frame; FFmpeg 5.1's buffer source takes none.
    /// The corresponding C functions are `avfilter_graph_create_filter`, `avfilter_graph_parse_ptr`
    /// and `avfilter_graph_config`.
    public init(_ description: String, width: Int, height: Int, pixelFormat: PixelFormatID,
                timeBase: Rational, pixelAspect: Rational = Rational(0, 1), threads: Int = 0) throws(FFmpegError) {
        let sar = pixelAspect.isPositive ? pixelAspect : Rational(0, 1)
        let args = "video_size=\(width)x\(height):pix_fmt=\(pixelFormat.rawValue):time_base=\(timeBase.numerator)/\(timeBase.denominator)"
            + ":pixel_aspect=\(sar.numerator)/\(sar.denominator)"
        let (graph, source, sink) = try FilterGraphParts.build(description, source: "buffer", arguments: args, sink: "buffersink", threads: threads)
        self.graph = graph
        self.source = source
        self.sink = sink
        self.description = description
        self.timeBase = timeBase
        (self.width, self.height, self.pixelFormat) = (width, height, pixelFormat)
    }

    /// A graph running `description` (VA-API filters: "deinterlace_vaapi=mode=bob") on VA
    /// surfaces from the frames context of `surface`, a picture decoded into one, timed in
    /// `timeBase`. The buffer source is given that frames context, so the filters work on the
    /// same device. The corresponding C functions are `av_buffersrc_parameters_set`,
    /// `avfilter_graph_parse_ptr` and `avfilter_graph_config`.
    public init(_ description: String, surfacesLike surface: Frame, timeBase: Rational) throws(FFmpegError) {
        guard let frames = surface.pointer.pointee.hw_frames_ctx else {
            throw FFmpegError(code: .invalidArgument, function: "FilterGraph(surfacesLike:) (a host picture)")
        }
        let sar = surface.sampleAspectRatio.isPositive ? surface.sampleAspectRatio : Rational(0, 1)
        let args = "video_size=\(surface.width)x\(surface.height):pix_fmt=\(surface.pixelFormat.rawValue)"
            + ":time_base=\(timeBase.numerator)/\(timeBase.denominator):pixel_aspect=\(sar.numerator)/\(sar.denominator)"
        let (graph, source, sink) = try FilterGraphParts.build(description, source: "buffer", arguments: args, sink: "buffersink",
                                                               threads: 1, hardwareFrames: frames)
        self.graph = graph
        self.source = source
        self.sink = sink
        self.description = description
        self.timeBase = timeBase
        (self.width, self.height, self.pixelFormat) = (surface.width, surface.height, surface.pixelFormat)
    }

    deinit { var g: UnsafeMutablePointer<AVFilterGraph>? = graph; avfilter_graph_free(&g) }

    /// Hands `frame` to the graph; the frame itself is left as it was (the graph takes its own
    /// reference). The corresponding C function is `av_buffersrc_add_frame_flags`.
    public func push(_ frame: Frame) throws(FFmpegError) {
        use.begin(); defer { use.end() }
        guard frame.width == width, frame.height == height, frame.pixelFormat == pixelFormat, !ended else {
            throw FFmpegError(code: .invalidArgument, function: "av_buffersrc_add_frame_flags")
        }
        try FilterGraphParts.send(frame, to: source)
    }

    /// Tells the graph no more pictures come, so it lets go of those it holds back.
    public func pushEndOfStream() throws(FFmpegError) {
        use.begin(); defer { use.end() }
        guard !ended else { return }
        ended = true
        try FilterGraphParts.send(nil, to: source)
    }

    /// The next filtered picture, or the state the graph is in. The corresponding C function is
    /// `av_buffersink_get_frame`.
    public func pull() throws(FFmpegError) -> PullResult {
        use.begin(); defer { use.end() }
        let result = try FilterGraphParts.receive(from: sink)
        guard case .frame(let frame) = result else { return result }
        // bwdif and yadif count in half frames (their time base is half the input's): the
        // picture comes back timed in the input's time base, as it went in.
        let output = Rational(av_buffersink_get_time_base(sink))
        if output != timeBase {
            if let pts = frame.pts { frame.pts = output.rescale(pts, to: timeBase) }
            if frame.duration > 0 { frame.duration = output.rescale(frame.duration, to: timeBase) }
        }
        frame.pointer.pointee.best_effort_timestamp = frame.pointer.pointee.pts
        return .frame(frame)
    }

    /// True when libavfilter here has a filter of that name ("bwdif", "zscale").
    /// The corresponding C function is `avfilter_get_by_name`.
    public static func hasFilter(_ name: String) -> Bool { avfilter_get_by_name(name) != nil }
}

extension Frame {
    /// True when the picture is two interleaved fields (`interlaced_frame`).
    public var isInterlaced: Bool { pointer.pointee.interlaced_frame != 0 }
    /// True when the top field is the first (`top_field_first`); meaningful only when interlaced.
    /// Set it where the stream knows the order and the picture does not say (a picture not
    /// flagged interlaced in a stream whose field order is top first).
    public var isTopFieldFirst: Bool {
        get { pointer.pointee.top_field_first != 0 }
        set { pointer.pointee.top_field_first = newValue ? 1 : 0 }
    }
    /// The sample aspect ratio as the frame states it (0/1 when unknown).
    public var sampleAspectRatio: Rational { Rational(pointer.pointee.sample_aspect_ratio) }
}

/// The plumbing every graph shares: a graph with a source and a sink, `description` parsed
/// between them and configured.
enum FilterGraphParts {
    static func build(_ description: String, source sourceName: String, arguments: String, sink sinkName: String,
                      threads: Int, hardwareFrames: UnsafeMutablePointer<AVBufferRef>? = nil) throws(FFmpegError)
        -> (UnsafeMutablePointer<AVFilterGraph>, UnsafeMutablePointer<AVFilterContext>, UnsafeMutablePointer<AVFilterContext>) {
        guard let graph = avfilter_graph_alloc() else { throw FFmpegError(code: .outOfMemory, function: "avfilter_graph_alloc") }
        var owned: UnsafeMutablePointer<AVFilterGraph>? = graph
        graph.pointee.nb_threads = Int32(threads)
        var source: UnsafeMutablePointer<AVFilterContext>?
        var sink: UnsafeMutablePointer<AVFilterContext>?
        var status = avfilter_graph_create_filter(&source, avfilter_get_by_name(sourceName), "in", arguments, nil, graph)
        if status >= 0 {
            status = avfilter_graph_create_filter(&sink, avfilter_get_by_name(sinkName), "out", nil, nil, graph)
        }
        guard status >= 0, let source, let sink else {
            avfilter_graph_free(&owned)
            throw FFmpegError(status < 0 ? status : cffmpeg_averror(EINVAL), "avfilter_graph_create_filter")
        }
        if let hardwareFrames {
            // The source's pictures are surfaces of this frames context (the source takes its own reference).
            guard let parameters = av_buffersrc_parameters_alloc() else {
                avfilter_graph_free(&owned)
                throw FFmpegError(code: .outOfMemory, function: "av_buffersrc_parameters_alloc")
            }
            parameters.pointee.format = AV_PIX_FMT_VAAPI.rawValue
            parameters.pointee.hw_frames_ctx = hardwareFrames
            status = av_buffersrc_parameters_set(source, parameters)
            av_free(parameters)
            guard status >= 0 else {
                avfilter_graph_free(&owned)
                throw FFmpegError(status, "av_buffersrc_parameters_set")
            }
        }
        // The description's open input is fed by the source, its open output feeds the sink.
        var outputs = avfilter_inout_alloc()
        var inputs = avfilter_inout_alloc()
        defer { avfilter_inout_free(&outputs); avfilter_inout_free(&inputs) }
        guard let o = outputs, let i = inputs else {
            avfilter_graph_free(&owned)
            throw FFmpegError(code: .outOfMemory, function: "avfilter_inout_alloc")
        }
        o.pointee.name = av_strdup("in"); o.pointee.filter_ctx = source; o.pointee.pad_idx = 0; o.pointee.next = nil
        i.pointee.name = av_strdup("out"); i.pointee.filter_ctx = sink; i.pointee.pad_idx = 0; i.pointee.next = nil
        status = avfilter_graph_parse_ptr(graph, description, &inputs, &outputs, nil)
        if status >= 0 { status = avfilter_graph_config(graph, nil) }
        guard status >= 0 else {
            avfilter_graph_free(&owned)
            throw FFmpegError(status, "avfilter_graph_parse_ptr(\(description))")
        }
        return (graph, source, sink)
    }

    /// Hands `frame` to a buffer source (nil: the end of the stream); the source takes its own
    /// reference. The corresponding C function is `av_buffersrc_add_frame_flags`.
    static func send(_ frame: Frame?, to source: UnsafeMutablePointer<AVFilterContext>) throws(FFmpegError) {
        if let frame {
            try check(av_buffersrc_add_frame_flags(source, frame.pointer, Int32(AV_BUFFERSRC_FLAG_KEEP_REF)), "av_buffersrc_add_frame_flags")
        } else {
            try check(av_buffersrc_add_frame_flags(source, nil, 0), "av_buffersrc_add_frame_flags(EOF)")
        }
    }

    /// The next frame out of a buffer sink, or its state (EAGAIN, EOF). The corresponding C
    /// function is `av_buffersink_get_frame`.
    static func receive(from sink: UnsafeMutablePointer<AVFilterContext>) throws(FFmpegError) -> FilterGraph.PullResult {
        let frame = Frame()
        let status = av_buffersink_get_frame(sink, frame.pointer)
        if status == cffmpeg_averror(EAGAIN) { return .needsInput }
        if status == cffmpeg_AVERROR_EOF() { return .endOfStream }
        try check(status, "av_buffersink_get_frame")
        return .frame(frame)
    }
}

/// A libavfilter graph for audio ("atempo=1.5"): blocks of one rate, format and layout go in
/// through an audio buffer source and come out of an audio buffer sink in the same format
/// (the description decides the rest). Owns the graph; one task at a time.
public final class AudioFilterGraph {
    /// Holds the graph for each call: one thread at a time, checked.
    package let use = ExclusiveUse("AudioFilterGraph")
    private let graph: UnsafeMutablePointer<AVFilterGraph>
    private let source: UnsafeMutablePointer<AVFilterContext>
    private let sink: UnsafeMutablePointer<AVFilterContext>
    public let description: String
    private var ended = false

    /// A graph running `description` on audio at `sampleRate` in `sampleFormat` and
    /// `channelLayout` (FFmpeg's name: "stereo", "5.1"), timed in 1/`sampleRate`; the output is
    /// converted back to the input's format and layout.
    public init(_ description: String, sampleRate: Int, sampleFormat: SampleFormatID, channelLayout: String) throws(FFmpegError) {
        let args = "time_base=1/\(sampleRate):sample_rate=\(sampleRate):sample_fmt=\(sampleFormat.name ?? "fltp"):channel_layout=\(channelLayout)"
        let chain = "\(description),aformat=sample_fmts=\(sampleFormat.name ?? "fltp"):sample_rates=\(sampleRate):channel_layouts=\(channelLayout)"
        (graph, source, sink) = try FilterGraphParts.build(chain, source: "abuffer", arguments: args, sink: "abuffersink", threads: 1)
        self.description = description
    }

    deinit { var g: UnsafeMutablePointer<AVFilterGraph>? = graph; avfilter_graph_free(&g) }

    /// Hands `frame` to the graph (which takes its own reference).
    public func push(_ frame: Frame) throws(FFmpegError) {
        use.begin(); defer { use.end() }
        guard !ended else { throw FFmpegError(code: .invalidArgument, function: "av_buffersrc_add_frame_flags") }
        try FilterGraphParts.send(frame, to: source)
    }

    /// Tells the graph no more audio comes, so it lets go of what it holds back.
    public func pushEndOfStream() throws(FFmpegError) {
        use.begin(); defer { use.end() }
        guard !ended else { return }
        ended = true
        try FilterGraphParts.send(nil, to: source)
    }

    /// The next filtered block, or the state the graph is in.
    public func pull() throws(FFmpegError) -> FilterGraph.PullResult {
        use.begin(); defer { use.end() }
        return try FilterGraphParts.receive(from: sink)
    }
}

internal import CFFmpeg

/// Converts audio between sample rates, formats and channel layouts. Owns the `SwrContext`;
/// one task at a time.
public final class Resampler {
    /// Holds the context for each call: one thread at a time, checked.
    package let use = ExclusiveUse("Resampler")
    let context: OpaquePointer
    public let outputSampleRate: Int
    public let outputFormat: SampleFormatID
    public let outputChannelCount: Int
    private var outputLayout: AVChannelLayout
    /// The rate, format and channel count of the frames it takes: swr_convert reads a frame's
    /// planes by these, so a frame that differs is refused (`accepts`), never read.
    public let sourceSampleRate: Int
    public let sourceFormat: SampleFormatID
    public let sourceChannelCount: Int

    /// A resampler from the layout, format and rate of `source` frames to the given output.
    /// `outputLayout` is FFmpeg's text ("stereo"); nil takes the default for `outputChannelCount`.
    /// The corresponding C functions are `swr_alloc_set_opts2` and `swr_init`.
    public init(sourceSampleRate: Int, sourceFormat: SampleFormatID, sourceChannelCount: Int, sourceLayout: String?,
                outputSampleRate: Int, outputFormat: SampleFormatID, outputChannelCount: Int, outputLayout: String?) throws(FFmpegError) {
        var inLayout = AVChannelLayout()
        var outLayout = AVChannelLayout()
        try Resampler.makeLayout(&inLayout, sourceLayout, sourceChannelCount)
        defer { av_channel_layout_uninit(&inLayout) }
        try Resampler.makeLayout(&outLayout, outputLayout, outputChannelCount)
        var allocated: OpaquePointer? = nil
        let status = swr_alloc_set_opts2(&allocated, &outLayout, outputFormat.avValue, Int32(outputSampleRate),
                                         &inLayout, sourceFormat.avValue, Int32(sourceSampleRate), 0, nil)
        guard status >= 0, let context = allocated else {
            av_channel_layout_uninit(&outLayout)
            throw FFmpegError(status < 0 ? status : cffmpeg_averror(ENOMEM), "swr_alloc_set_opts2")
        }
        self.context = context
        self.outputLayout = outLayout
        self.outputSampleRate = outputSampleRate
        self.outputFormat = outputFormat
        self.outputChannelCount = outputChannelCount
        self.sourceSampleRate = sourceSampleRate
        self.sourceFormat = sourceFormat
        self.sourceChannelCount = sourceChannelCount
        try check(swr_init(context), "swr_init")
    }

    /// Whether `frame` has the rate, format and channel count this resampler was made for.
    public func accepts(_ frame: Frame) -> Bool {
        frame.sampleRate == sourceSampleRate && frame.sampleFormat == sourceFormat && frame.channelCount == sourceChannelCount
    }

    deinit {
        var p: OpaquePointer? = context
        swr_free(&p)
        av_channel_layout_uninit(&outputLayout)
    }

    private static func makeLayout(_ layout: inout AVChannelLayout, _ text: String?, _ count: Int) throws(FFmpegError) {
        // An unordered layout ("2 channels") says only the count: take that count's default, as ffmpeg does.
        if let text, av_channel_layout_from_string(&layout, text) >= 0, layout.nb_channels == Int32(count),
           layout.order != AV_CHANNEL_ORDER_UNSPEC { return }
        av_channel_layout_uninit(&layout)
        av_channel_layout_default(&layout, Int32(count))
    }

    /// Converts `source` (nil to drain what the resampler buffers), returning a frame of
    /// converted samples, or nil when none are ready. Timestamps are not touched.
    /// The corresponding C function is `swr_convert_frame`.
    public func convert(_ source: Frame?) throws(FFmpegError) -> Frame? {
        use.begin(); defer { use.end() }
        if let source, !accepts(source) {
            // A stream whose parameters change mid-way (a damaged header): the caller makes a new resampler.
            throw FFmpegError(code: .invalidArgument, function: "swr_convert (a \(source.sampleRate) Hz \(source.channelCount)-channel frame into a resampler made for \(sourceSampleRate) Hz, \(sourceChannelCount) channels)")
        }
        let output = Frame()
        output.pointer.pointee.format = outputFormat.rawValue
        output.pointer.pointee.sample_rate = Int32(outputSampleRate)
        try check(av_channel_layout_copy(&output.pointer.pointee.ch_layout, &outputLayout), "av_channel_layout_copy")
        let pending = Int64(source?.sampleCount ?? 0)
        let capacity = swr_get_out_samples(context, Int32(pending)) + 32
        guard capacity > 0 else { return nil }
        output.pointer.pointee.nb_samples = capacity
        try check(av_frame_get_buffer(output.pointer, 0), "av_frame_get_buffer")
        let outPlanes = output.pointer.pointee.extended_data
        let converted: Int32
        if let source {
            // swr_convert takes const input planes; extended_data is the same array.
            let inPlanes = UnsafeMutableRawPointer(source.pointer.pointee.extended_data)?
                .assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
            converted = swr_convert(context, outPlanes, capacity, inPlanes, Int32(source.sampleCount))
        } else {
            converted = swr_convert(context, outPlanes, capacity, nil, 0)
        }
        try check(converted, "swr_convert")
        guard converted > 0 else { return nil }
        output.pointer.pointee.nb_samples = converted
        return output
    }
}

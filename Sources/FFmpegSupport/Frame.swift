internal import CFFmpeg

/// A decoded video picture or block of audio samples: reference-counted buffers plus timing.
///
/// A frame is owned by one task at a time; handing it to another task transfers it.
public final class Frame: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<AVFrame>

    /// Allocates an empty frame. The corresponding C function is `av_frame_alloc`.
    public init() {
        guard let frame = av_frame_alloc() else { fatalError("av_frame_alloc: out of memory") }
        pointer = frame
    }

    /// Allocates a video frame with its own buffers. The corresponding C function is `av_frame_get_buffer`.
    public convenience init(width: Int, height: Int, pixelFormat: PixelFormatID, alignment: Int = 64) throws(FFmpegError) {
        self.init()
        pointer.pointee.width = Int32(width)
        pointer.pointee.height = Int32(height)
        pointer.pointee.format = pixelFormat.rawValue
        try check(av_frame_get_buffer(pointer, Int32(alignment)), "av_frame_get_buffer")
    }

    deinit { var p: UnsafeMutablePointer<AVFrame>? = pointer; av_frame_free(&p) }

    /// A new reference to the same buffers (no pixel copy). The corresponding C function is `av_frame_ref`.
    public func reference() throws(FFmpegError) -> Frame {
        let copy = Frame()
        try check(av_frame_ref(copy.pointer, pointer), "av_frame_ref")
        return copy
    }

    /// A deep copy into newly allocated buffers. The corresponding C functions are `av_frame_get_buffer` and `av_frame_copy`.
    public func copy() throws(FFmpegError) -> Frame {
        let copy = Frame()
        copy.pointer.pointee.format = pointer.pointee.format
        copy.pointer.pointee.width = pointer.pointee.width
        copy.pointer.pointee.height = pointer.pointee.height
        copy.pointer.pointee.nb_samples = pointer.pointee.nb_samples
        try check(av_channel_layout_copy(&copy.pointer.pointee.ch_layout, &pointer.pointee.ch_layout), "av_channel_layout_copy")
        try check(av_frame_get_buffer(copy.pointer, 0), "av_frame_get_buffer")
        try check(av_frame_copy(copy.pointer, pointer), "av_frame_copy")
        try check(av_frame_copy_props(copy.pointer, pointer), "av_frame_copy_props")
        return copy
    }

    /// Makes the buffers writable, copying only if they are shared. The corresponding C function is `av_frame_make_writable`.
    public func makeWritable() throws(FFmpegError) {
        try check(av_frame_make_writable(pointer), "av_frame_make_writable")
    }

    /// Drops the buffers, keeping the allocation. The corresponding C function is `av_frame_unref`.
    public func reset() { av_frame_unref(pointer) }

    // MARK: Timing

    /// Presentation timestamp in the producer's time base, nil when unknown.
    public var pts: Int64? {
        get { timestamp(pointer.pointee.pts) }
        set { pointer.pointee.pts = newValue ?? cffmpeg_AV_NOPTS_VALUE() }
    }
    /// The decoder's best guess at the presentation timestamp, nil when unknown.
    public var bestEffortTimestamp: Int64? { timestamp(pointer.pointee.best_effort_timestamp) }
    public var duration: Int64 {
        get { pointer.pointee.pkt_duration }
        set { pointer.pointee.pkt_duration = newValue }
    }
    public var isKeyframe: Bool { pointer.pointee.key_frame != 0 }

    // MARK: Video

    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    public var pixelFormat: PixelFormatID { PixelFormatID(rawValue: pointer.pointee.format) }
    /// Number of data planes in use.
    public var planeCount: Int {
        var count = 0
        withUnsafeBytes(of: pointer.pointee.data) { raw in
            for p in raw.bindMemory(to: UnsafeMutablePointer<UInt8>?.self) where p != nil { count += 1 }
        }
        return count
    }
    /// Bytes per row of plane `index`.
    public func bytesPerRow(plane index: Int) -> Int {
        withUnsafeBytes(of: pointer.pointee.linesize) { Int($0.bindMemory(to: Int32.self)[index]) }
    }
    /// Base address of plane `index`, valid while the frame holds its buffers.
    public func baseAddress(plane index: Int) -> UnsafeMutableRawPointer? {
        withUnsafeBytes(of: pointer.pointee.data) { UnsafeMutableRawPointer($0.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)[index]) }
    }
    public var colorPrimaries: Int32 { Int32(pointer.pointee.color_primaries.rawValue) }
    public var colorTransfer: Int32 { Int32(pointer.pointee.color_trc.rawValue) }
    public var colorMatrix: Int32 { Int32(pointer.pointee.colorspace.rawValue) }
    public var isFullRange: Bool { pointer.pointee.color_range == AVCOL_RANGE_JPEG }

    // MARK: Audio

    public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }
    public var sampleFormat: SampleFormatID { SampleFormatID(rawValue: pointer.pointee.format) }
}

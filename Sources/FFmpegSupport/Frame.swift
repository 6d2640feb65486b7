internal import CFFmpeg

/// A decoded video picture or block of audio samples: reference-counted buffers plus timing.
///
/// A frame is owned by one task at a time; handing it to another task transfers it.
// @unchecked: owned by one task at a time (see above); a frame is handed over, not shared.
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

    /// Allocates an audio frame with its own buffers for `sampleCount` samples per channel.
    /// `channelLayout` is FFmpeg's layout text ("stereo", "5.1(side)"); nil picks the default
    /// layout for `channelCount`. The corresponding C function is `av_frame_get_buffer`.
    public convenience init(sampleCount: Int, sampleFormat: SampleFormatID, sampleRate: Int, channelCount: Int,
                            channelLayout: String? = nil) throws(FFmpegError) {
        self.init()
        pointer.pointee.nb_samples = Int32(sampleCount)
        pointer.pointee.format = sampleFormat.rawValue
        pointer.pointee.sample_rate = Int32(sampleRate)
        try setChannelLayout(channelLayout, channelCount: channelCount)
        try check(av_frame_get_buffer(pointer, 0), "av_frame_get_buffer")
    }

    deinit { var p: UnsafeMutablePointer<AVFrame>? = pointer; av_frame_free(&p) }

    /// Sets the channel layout from FFmpeg's text, or the default layout for `channelCount`.
    /// The corresponding C functions are `av_channel_layout_from_string` and `av_channel_layout_default`.
    func setChannelLayout(_ text: String?, channelCount: Int) throws(FFmpegError) {
        av_channel_layout_uninit(&pointer.pointee.ch_layout)
        if let text {
            try check(av_channel_layout_from_string(&pointer.pointee.ch_layout, text), "av_channel_layout_from_string")
        } else {
            av_channel_layout_default(&pointer.pointee.ch_layout, Int32(channelCount))
        }
    }

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
    /// Whether the decoder made this frame from damaged data, concealing what it could (a
    /// corrupt slice, a missing reference): `decode_error_flags` is not zero.
    public var isConcealed: Bool { pointer.pointee.decode_error_flags != 0 }

    // MARK: Video

    /// How much wider than tall each pixel is (the sample aspect ratio; 1 for square pixels,
    /// 4/3 for 1440x1080 shown as 1920x1080), 1 when the frame does not say.
    public var pixelAspect: Double {
        let sar = pointer.pointee.sample_aspect_ratio
        return sar.num > 0 && sar.den > 0 ? Double(sar.num) / Double(sar.den) : 1
    }

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
    /// Data pointer `index` of `extended_data`: one per channel for planar audio (any number of
    /// channels), else plane pointers.
    public func extendedData(plane index: Int) -> UnsafeMutableRawPointer? {
        pointer.pointee.extended_data.map { UnsafeMutableRawPointer($0[index]) } ?? nil
    }

    /// Colour primaries by FFmpeg's name ("bt709"), nil when unspecified. The corresponding C
    /// functions are `av_color_primaries_name` and `av_color_primaries_from_name`.
    public var colorPrimaries: String? {
        get { name(av_color_primaries_name(pointer.pointee.color_primaries), unspecified: pointer.pointee.color_primaries == AVCOL_PRI_UNSPECIFIED) }
        set {
            let v = newValue.map { av_color_primaries_from_name($0) } ?? -1
            pointer.pointee.color_primaries = v >= 0 ? AVColorPrimaries(rawValue: UInt32(v)) : AVCOL_PRI_UNSPECIFIED
        }
    }
    /// Transfer characteristic by FFmpeg's name ("bt709", "smpte2084"), nil when unspecified.
    public var colorTransfer: String? {
        get { name(av_color_transfer_name(pointer.pointee.color_trc), unspecified: pointer.pointee.color_trc == AVCOL_TRC_UNSPECIFIED) }
        set {
            let v = newValue.map { av_color_transfer_from_name($0) } ?? -1
            pointer.pointee.color_trc = v >= 0 ? AVColorTransferCharacteristic(rawValue: UInt32(v)) : AVCOL_TRC_UNSPECIFIED
        }
    }
    /// YCbCr matrix by FFmpeg's name ("bt709", "bt2020nc"), nil when unspecified.
    public var colorMatrix: String? {
        get { name(av_color_space_name(pointer.pointee.colorspace), unspecified: pointer.pointee.colorspace == AVCOL_SPC_UNSPECIFIED) }
        set {
            let v = newValue.map { av_color_space_from_name($0) } ?? -1
            pointer.pointee.colorspace = v >= 0 ? AVColorSpace(rawValue: UInt32(v)) : AVCOL_SPC_UNSPECIFIED
        }
    }
    /// True for full-range samples, false for limited, nil when unspecified.
    public var isFullRange: Bool? {
        get {
            switch pointer.pointee.color_range {
            case AVCOL_RANGE_JPEG: return true
            case AVCOL_RANGE_MPEG: return false
            default: return nil
            }
        }
        set { pointer.pointee.color_range = newValue.map { $0 ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG } ?? AVCOL_RANGE_UNSPECIFIED }
    }

    private func name(_ text: UnsafePointer<CChar>?, unspecified: Bool) -> String? {
        unspecified ? nil : text.map { String(cString: $0) }
    }

    // MARK: Audio

    public var sampleCount: Int {
        get { Int(pointer.pointee.nb_samples) }
        set { pointer.pointee.nb_samples = Int32(newValue) }
    }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    /// FFmpeg's text for the channel layout ("stereo"), nil when unknown.
    public var channelLayout: String? { describe(&pointer.pointee.ch_layout) }
    public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }
    public var sampleFormat: SampleFormatID { SampleFormatID(rawValue: pointer.pointee.format) }
}

extension Frame {
    /// True when nothing else references the frame's buffers, so they may be written (or
    /// recycled) without a copy. The corresponding C function is `av_frame_is_writable`.
    public var isWritable: Bool { av_frame_is_writable(pointer) != 0 }

    /// Every entry the decoder or a filter attached to the frame (a JPEG's EXIF tags: "Make",
    /// "Model"…). The corresponding C function is `av_dict_iterate`'s predecessor, `av_dict_get`
    /// with `AV_DICT_IGNORE_SUFFIX`.
    public var metadata: [String: String] {
        var entries: [String: String] = [:]
        var entry: UnsafeMutablePointer<AVDictionaryEntry>?
        while let next = av_dict_get(pointer.pointee.metadata, "", entry, AV_DICT_IGNORE_SUFFIX) {
            if let key = next.pointee.key, let value = next.pointee.value { entries[String(cString: key)] = String(cString: value) }
            entry = next
        }
        return entries
    }

    /// The value a filter attached to the frame under `key` ("lavfi.r128.I"), nil if none.
    /// The corresponding C function is `av_dict_get`.
    public func metadataValue(forKey key: String) -> String? {
        av_dict_get(pointer.pointee.metadata, key, nil, 0).flatMap { $0.pointee.value.map { String(cString: $0) } }
    }
}

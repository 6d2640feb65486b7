internal import CFFmpeg

/// Converts pictures between sizes and pixel formats on the CPU. Owns the `SwsContext`;
/// one task at a time.
public final class Scaler {
    /// Holds the context for each call: one thread at a time, checked.
    package let use = ExclusiveUse("Scaler")
    let context: OpaquePointer
    public let sourceWidth: Int, sourceHeight: Int, sourceFormat: PixelFormatID
    public let outputWidth: Int, outputHeight: Int, outputFormat: PixelFormatID
    /// Full-range (JPEG) or limited-range samples on each side; the scaler converts between them.
    public let sourceFullRange: Bool, outputFullRange: Bool

    /// The interpolation used when resizing.
    public enum Filter: Sendable {
        case fastBilinear, bilinear, bicubic, lanczos
        var flags: Int32 {
            switch self {
            case .fastBilinear: SWS_FAST_BILINEAR
            case .bilinear: SWS_BILINEAR
            case .bicubic: SWS_BICUBIC
            case .lanczos: SWS_LANCZOS
            }
        }
    }

    /// A scaler from one size, format and range to another. Ranges default to what the formats
    /// imply (the `yuvj` formats full, the rest limited); they are fixed when the context is made
    /// because libswscale picks its unscaled fast paths then. The corresponding C functions are
    /// `sws_alloc_context` and `sws_init_context`.
    public init(from sourceWidth: Int, _ sourceHeight: Int, _ sourceFormat: PixelFormatID,
                to outputWidth: Int, _ outputHeight: Int, _ outputFormat: PixelFormatID,
                sourceFullRange: Bool? = nil, outputFullRange: Bool? = nil, filter: Filter = .bicubic) throws(FFmpegError) {
        guard let context = sws_alloc_context() else { throw FFmpegError(code: .outOfMemory, function: "sws_alloc_context") }
        let sourceFull = sourceFullRange ?? sourceFormat.impliesFullRange
        let outputFull = outputFullRange ?? outputFormat.impliesFullRange
        let options: [(String, Int64)] = [
            ("srcw", Int64(sourceWidth)), ("srch", Int64(sourceHeight)), ("src_format", Int64(sourceFormat.rawValue)),
            ("dstw", Int64(outputWidth)), ("dsth", Int64(outputHeight)), ("dst_format", Int64(outputFormat.rawValue)),
            // Converting between RGB and YUV is where exact rounding and full-resolution chroma
            // show (thumbnails, RGB pictures appended). Resizing YUV to YUV uses the filter alone,
            // as FFmpeg's `scale` filter does: the accurate paths cost about 12 % more scaling
            // time there (1080p→720p) for no visible gain.
            ("sws_flags", Int64(filter.flags | (sourceFormat.isRGB || outputFormat.isRGB ? SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT : 0))),
            ("src_range", sourceFull ? 1 : 0), ("dst_range", outputFull ? 1 : 0),
        ]
        for (name, value) in options where av_opt_set_int(UnsafeMutableRawPointer(context), name, value, 0) < 0 {
            sws_freeContext(context)
            throw FFmpegError(code: .invalidArgument, function: "av_opt_set_int(\(name))")
        }
        let status = sws_init_context(context, nil, nil)
        guard status >= 0 else {
            sws_freeContext(context)
            throw FFmpegError(status, "sws_init_context")
        }
        self.context = context
        (self.sourceFullRange, self.outputFullRange) = (sourceFull, outputFull)
        (self.sourceWidth, self.sourceHeight, self.sourceFormat) = (sourceWidth, sourceHeight, sourceFormat)
        (self.outputWidth, self.outputHeight, self.outputFormat) = (outputWidth, outputHeight, outputFormat)
    }

    deinit { sws_freeContext(context) }

    /// Scales `source` (which must match the source size and format) into the rectangle
    /// `x, y, outputWidth × outputHeight` of `destination`, leaving the rest of it untouched.
    /// The corresponding C function is `sws_scale`.
    public func scale(_ source: Frame, into destination: Frame, x: Int = 0, y: Int = 0) throws(FFmpegError) {
        use.begin(); defer { use.end() }
        guard source.width == sourceWidth, source.height == sourceHeight, source.pixelFormat == sourceFormat,
              destination.pixelFormat == outputFormat, x >= 0, y >= 0,
              x + outputWidth <= destination.width, y + outputHeight <= destination.height else {
            throw FFmpegError(code: .invalidArgument, function: "sws_scale")
        }
        var planes = [UnsafeMutablePointer<UInt8>?](repeating: nil, count: 4)
        var strides = [Int32](repeating: 0, count: 4)
        for p in 0..<4 {
            guard let base = destination.baseAddress(plane: p) else { continue }
            let stride = destination.bytesPerRow(plane: p)
            let offset = outputFormat.byteOffset(plane: p, x: x, y: y, stride: stride)
            planes[p] = base.advanced(by: offset).assumingMemoryBound(to: UInt8.self)
            strides[p] = Int32(stride)
        }
        let rows = withUnsafePointer(to: source.pointer.pointee.data) { data in
            withUnsafePointer(to: source.pointer.pointee.linesize) { linesize in
                data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { src in
                    linesize.withMemoryRebound(to: Int32.self, capacity: 8) { srcStride in
                        sws_scale(context, src, srcStride, 0, Int32(sourceHeight), planes, strides)
                    }
                }
            }
        }
        try check(rows, "sws_scale")
        try check(av_frame_copy_props(destination.pointer, source.pointer), "av_frame_copy_props")
        destination.isFullRange = outputFullRange
    }
}

extension PixelFormatID {
    /// True for the JPEG-style formats (`yuvj420p`…) whose samples are full range by definition.
    public var impliesFullRange: Bool { name?.hasPrefix("yuvj") ?? false }

    /// Byte offset of pixel (x, y) in `plane` for this format, given the plane's stride.
    func byteOffset(plane: Int, x: Int, y: Int, stride: Int) -> Int {
        guard let d = av_pix_fmt_desc_get(avValue) else { return 0 }
        let components = withUnsafeBytes(of: d.pointee.comp) { Array($0.bindMemory(to: AVComponentDescriptor.self).prefix(Int(d.pointee.nb_components))) }
        guard let index = components.firstIndex(where: { Int($0.plane) == plane }) else { return 0 }
        let isChroma = index == 1 || index == 2
        let xs = isChroma ? Int(d.pointee.log2_chroma_w) : 0
        let ys = isChroma ? Int(d.pointee.log2_chroma_h) : 0
        return (y >> ys) * stride + (x >> xs) * Int(components[index].step)
    }
}

extension Frame {
    /// Fills the picture with black in its format and range. The corresponding C function is `av_image_fill_black`.
    public func fillBlack() throws(FFmpegError) {
        var planes = [UnsafeMutablePointer<UInt8>?](repeating: nil, count: 4)
        var strides = [Int](repeating: 0, count: 4)
        for p in 0..<4 {
            planes[p] = baseAddress(plane: p)?.assumingMemoryBound(to: UInt8.self)
            strides[p] = baseAddress(plane: p) == nil ? 0 : bytesPerRow(plane: p)
        }
        try check(av_image_fill_black(&planes, &strides, pixelFormat.avValue, pointer.pointee.color_range,
                                      pointer.pointee.width, pointer.pointee.height), "av_image_fill_black")
    }

    /// Crops the picture in place by moving its data pointers (no copy). The corresponding C
    /// function is `av_frame_apply_cropping`.
    public func crop(left: Int, top: Int, right: Int, bottom: Int) throws(FFmpegError) {
        pointer.pointee.crop_left = left
        pointer.pointee.crop_top = top
        pointer.pointee.crop_right = right
        pointer.pointee.crop_bottom = bottom
        try check(av_frame_apply_cropping(pointer, 0), "av_frame_apply_cropping")
    }
}

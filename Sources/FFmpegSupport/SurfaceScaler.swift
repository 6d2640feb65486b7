internal import CFFmpeg

/// Scales and converts VA surfaces into a `SurfacePool` on the GPU (VA-API video processing,
/// `VAEntrypointVideoProc`): the picture never leaves the device. Owns its VPP config and
/// context; one task or queue at a time.
public final class SurfaceScaler {
    /// Where the source picture goes in the output surface.
    public enum Placement: Sendable, Equatable {
        /// Stretch to fill the whole surface.
        case fill
        /// Keep the aspect ratio inside the surface, black bars around it.
        case fit
        /// Keep the aspect ratio and fill the surface, cropping the source's overflow.
        case crop
    }

    public let output: SurfacePool
    private let display: VADisplay
    private var config = VAConfigID(VA_INVALID_ID)
    private var context = VAContextID(VA_INVALID_ID)

    /// Opens a VPP context rendering into `output`'s surfaces. The corresponding C functions
    /// are `vaCreateConfig` and `vaCreateContext`.
    public init(output: SurfacePool) throws(FFmpegError) {
        self.output = output
        display = output.device.vaDisplay
        var status = vaCreateConfig(display, VAProfileNone, VAEntrypointVideoProc, nil, 0, &config)
        guard status == VA_STATUS_SUCCESS else { throw Self.failure(status, "vaCreateConfig(VideoProc)") }
        var targets = output.surfaceIDs
        status = targets.withUnsafeMutableBufferPointer { ids in
            vaCreateContext(display, config, Int32(output.width), Int32(output.height), Int32(VA_PROGRESSIVE),
                            ids.baseAddress, Int32(ids.count), &context)
        }
        guard status == VA_STATUS_SUCCESS else {
            vaDestroyConfig(display, config)
            throw Self.failure(status, "vaCreateContext(VideoProc)")
        }
    }

    deinit {
        vaDestroyContext(display, context)
        vaDestroyConfig(display, config)
    }

    /// `source` (a surface of any size) scaled into a free surface of the output pool with
    /// `placement`, converted to full or limited range when `outputFullRange` says (nil keeps
    /// the source's); timestamps and colour tags carry over. The corresponding C functions are
    /// `vaCreateBuffer`, `vaBeginPicture`, `vaRenderPicture` and `vaEndPicture`.
    public func scale(_ source: Frame, placement: Placement, outputFullRange: Bool? = nil) throws(FFmpegError) -> Frame {
        guard let input = source.vaSurface else { throw FFmpegError(code: .invalidArgument, function: "SurfaceScaler.scale (host frame)") }
        let destination = try output.waitForSurface()
        guard let target = destination.vaSurface else { throw FFmpegError(code: .invalidArgument, function: "SurfaceScaler.scale (pool frame)") }
        let regions = Self.regions(source: (source.width, source.height), output: (output.width, output.height), placement: placement,
                                   pixelAspect: source.pixelAspect)
        var sourceRegion = regions.source
        var outputRegion = regions.output
        var parameters = VAProcPipelineParameterBuffer()
        parameters.surface = input
        parameters.surface_color_standard = Self.colourStandard(source.colorMatrix)
        parameters.output_color_standard = Self.colourStandard(source.colorMatrix)
        parameters.output_background_color = 0xff00_0000
        parameters.filter_flags = UInt32(VA_FILTER_SCALING_HQ)
        parameters.input_color_properties.color_range = UInt8(source.isFullRange == true ? VA_SOURCE_RANGE_FULL : VA_SOURCE_RANGE_REDUCED)
        let fullRange = outputFullRange ?? (source.isFullRange == true)
        parameters.output_color_properties.color_range = UInt8(fullRange ? VA_SOURCE_RANGE_FULL : VA_SOURCE_RANGE_REDUCED)
        var buffer = VABufferID(VA_INVALID_ID)
        var status = withUnsafeMutablePointer(to: &sourceRegion) { sr in
            withUnsafeMutablePointer(to: &outputRegion) { or in
                parameters.surface_region = UnsafePointer(sr)
                parameters.output_region = UnsafePointer(or)
                return vaCreateBuffer(display, context, VAProcPipelineParameterBufferType,
                                      UInt32(MemoryLayout<VAProcPipelineParameterBuffer>.size), 1, &parameters, &buffer)
            }
        }
        guard status == VA_STATUS_SUCCESS else { throw Self.failure(status, "vaCreateBuffer(VAProcPipelineParameterBuffer)") }
        defer { vaDestroyBuffer(display, buffer) }
        status = vaBeginPicture(display, context, target)
        guard status == VA_STATUS_SUCCESS else { throw Self.failure(status, "vaBeginPicture(VideoProc)") }
        status = vaRenderPicture(display, context, &buffer, 1)
        guard status == VA_STATUS_SUCCESS else {
            vaEndPicture(display, context)
            throw Self.failure(status, "vaRenderPicture(VideoProc)")
        }
        status = vaEndPicture(display, context)
        guard status == VA_STATUS_SUCCESS else { throw Self.failure(status, "vaEndPicture(VideoProc)") }
        try check(av_frame_copy_props(destination.pointer, source.pointer), "av_frame_copy_props")
        if let outputFullRange { destination.isFullRange = outputFullRange }
        return destination
    }

    /// The source rectangle read and the output rectangle written for `placement`, with even
    /// offsets and sizes so 4:2:0 chroma stays aligned. Aspect is the source's displayed one
    /// (`pixelAspect` wide pixels); the output's pixels are square.
    static func regions(source: (width: Int, height: Int), output: (width: Int, height: Int),
                        placement: Placement, pixelAspect: Double = 1) -> (source: VARectangle, output: VARectangle) {
        let (sw, sh, ow, oh) = (Double(source.width) * pixelAspect, Double(source.height), output.width, output.height)
        var src = (x: 0, y: 0, w: source.width, h: source.height)
        var dst = (x: 0, y: 0, w: ow, h: oh)
        switch placement {
        case .fill:
            break
        case .fit:
            let s = min(Double(ow) / sw, Double(oh) / sh)
            dst.w = min(ow, max(2, Int((sw * s / 2).rounded()) * 2))
            dst.h = min(oh, max(2, Int((sh * s / 2).rounded()) * 2))
            dst.x = ((ow - dst.w) / 2) & ~1
            dst.y = ((oh - dst.h) / 2) & ~1
        case .crop:
            let s = max(Double(ow) / sw, Double(oh) / sh)
            src.w = min(source.width, max(2, Int((Double(ow) / s / pixelAspect / 2).rounded()) * 2))
            src.h = min(source.height, max(2, Int((Double(oh) / s / 2).rounded()) * 2))
            src.x = ((source.width - src.w) / 2) & ~1
            src.y = ((source.height - src.h) / 2) & ~1
        }
        func rect(_ r: (x: Int, y: Int, w: Int, h: Int)) -> VARectangle {
            VARectangle(x: Int16(r.x), y: Int16(r.y), width: UInt16(r.w), height: UInt16(r.h))
        }
        return (rect(src), rect(dst))
    }

    /// The VA colour standard for FFmpeg's matrix name: BT.709 for HD tags, BT.601 otherwise.
    private static func colourStandard(_ matrix: String?) -> VAProcColorStandardType {
        switch matrix {
        case "bt709": VAProcColorStandardBT709
        case "bt2020nc", "bt2020c": VAProcColorStandardBT2020
        case "smpte170m", "bt470bg": VAProcColorStandardBT601
        default: VAProcColorStandardNone
        }
    }

    private static func failure(_ status: VAStatus, _ call: String) -> FFmpegError {
        let text = vaErrorStr(status).map { String(cString: $0) } ?? "VA status \(status)"
        return FFmpegError(code: .externalFailure, function: "\(call): \(text)")
    }
}

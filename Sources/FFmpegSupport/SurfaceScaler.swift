internal import CFFmpeg
import MediaCore

/// Scales and converts VA surfaces into a `SurfacePool` on the GPU (VA-API video processing,
/// `VAEntrypointVideoProc`): the picture never leaves the device. Owns its VPP config and
/// context; one task or queue at a time.
public final class SurfaceScaler {
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
    /// `mode`, converted to full or limited range when `outputFullRange` says (nil keeps
    /// the source's); timestamps and colour tags carry over. The corresponding C functions are
    /// `vaCreateBuffer`, `vaBeginPicture`, `vaRenderPicture` and `vaEndPicture`.
    public func scale(_ source: Frame, fit mode: PictureFit.Mode, outputFullRange: Bool? = nil) throws(FFmpegError) -> Frame {
        guard let input = source.vaSurface else { throw FFmpegError(code: .invalidArgument, function: "SurfaceScaler.scale (host frame)") }
        let destination = try output.waitForSurface()
        guard let target = destination.vaSurface else { throw FFmpegError(code: .invalidArgument, function: "SurfaceScaler.scale (pool frame)") }
        let fit = PictureFit(source: (source.width, source.height), pixelAspect: source.pixelAspect,
                             output: (output.width, output.height), mode: mode)
        var sourceRegion = Self.rectangle(fit.source)
        var outputRegion = Self.rectangle(fit.output)
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

    private static func rectangle(_ r: PictureFit.Rectangle) -> VARectangle {
        VARectangle(x: Int16(r.x), y: Int16(r.y), width: UInt16(r.width), height: UInt16(r.height))
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

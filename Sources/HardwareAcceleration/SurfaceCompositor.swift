internal import CVA
import FFmpegSupport
import MediaCore

/// One picture the video processor draws: a region of a VA surface, turned by quarter turns and
/// mirrored (VA-API applies the rotation first), scaled into a region of the output, blended
/// with an opacity and, for an RGBA surface of premultiplied colours, its own alpha.
public struct SurfaceLayer {
    /// Clockwise quarter turns, as `VA_ROTATION_*` counts them.
    public enum Rotation: UInt32, Sendable { case none = 0, clockwise90 = 1, clockwise180 = 2, clockwise270 = 3 }

    /// Mirroring after the rotation, as `VA_MIRROR_*` flags.
    public struct Mirror: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let horizontal = Mirror(rawValue: 1)
        public static let vertical = Mirror(rawValue: 2)
    }

    public var source: Frame
    public var sourceRegion: Rect
    public var outputRegion: Rect
    public var rotation: Rotation
    public var mirror: Mirror
    /// 1 replaces what lies below; less blends with VA-API's global alpha.
    public var opacity: Double
    /// Blends by the source's own alpha, its colours premultiplied by it (`VA_BLEND_PREMULTIPLIED_ALPHA`).
    public var blendsByPremultipliedAlpha: Bool
    /// The matrix the source's samples are in, where its tag is missing or not to be trusted; nil takes its tag.
    public var sourceMatrix: String?

    public init(source: Frame, sourceRegion: Rect, outputRegion: Rect,
                rotation: Rotation = .none, mirror: Mirror = [], opacity: Double = 1,
                blendsByPremultipliedAlpha: Bool = false, sourceMatrix: String? = nil) {
        self.source = source
        self.sourceRegion = sourceRegion
        self.outputRegion = outputRegion
        self.rotation = rotation
        self.mirror = mirror
        self.opacity = opacity
        self.blendsByPremultipliedAlpha = blendsByPremultipliedAlpha
        self.sourceMatrix = sourceMatrix
    }
}

/// Draws layers of VA surfaces into the surfaces of a `SurfacePool` with the device's video
/// processor (`VAEntrypointVideoProc`): one picture, one pipeline buffer per layer, bottom layer
/// first, as FFmpeg's `overlay_vaapi` does. The picture never leaves the device. Owns its VPP
/// config and context; one task or queue at a time.
public final class SurfaceCompositor {
    public let output: SurfacePool
    /// The display the pool's surfaces and the VPP context live on, kept alive by this object.
    private let connection: VADisplayConnection
    private var config = VAConfigID(cva_VA_INVALID_ID())
    private var context = VAContextID(cva_VA_INVALID_ID())
    /// Holds the VPP context for each drawing: one thread at a time, checked.
    package let use = ExclusiveUse("SurfaceCompositor")

    /// Opens a VPP context rendering into `output`'s surfaces, on the `VADevice` they were made
    /// on. The corresponding C functions are `vaCreateConfig` and `vaCreateContext`.
    public init(output: SurfacePool) throws(VAError) {
        guard let connection = output.device.displayOwner as? VADisplayConnection else {
            throw VAError(status: .invalidDisplay, message: "the surface pool is not on a VADevice's display", call: "SurfaceCompositor")
        }
        self.output = output
        self.connection = connection
        let display = connection.display
        try vaCheck("vaCreateConfig(VideoProc)") { vaCreateConfig(display, VAProfileNone, VAEntrypointVideoProc, nil, 0, &config) }
        var targets = output.surfaceIDs
        // On failure `deinit` runs (every property is set) and destroys the config: once.
        try vaCheck("vaCreateContext(VideoProc)") {
            targets.withUnsafeMutableBufferPointer { ids in
                vaCreateContext(display, config, Int32(output.width), Int32(output.height), Int32(VA_PROGRESSIVE),
                                ids.baseAddress, Int32(ids.count), &context)
            }
        }
    }

    /// Destroys what `init` created, and only that: a failed `init` leaves invalid IDs behind.
    deinit {
        if context != VAContextID(cva_VA_INVALID_ID()) { vaDestroyContext(connection.display, context) }
        if config != VAConfigID(cva_VA_INVALID_ID()) { vaDestroyConfig(connection.display, config) }
    }

    /// `layers` (bottom first) drawn into a free surface of the output pool over `background`
    /// (0xAARRGGBB), in `outputMatrix`'s colour standard (nil: the bottom layer's) and range.
    /// The first layer's timestamps and colour tags carry over. The corresponding C functions
    /// are `vaCreateBuffer`, `vaBeginPicture`, `vaRenderPicture` and `vaEndPicture`.
    public func draw(_ layers: [SurfaceLayer], background: UInt32, outputMatrix: String? = nil,
                     outputFullRange: Bool) throws(VAError) -> Frame {
        use.begin(); defer { use.end() }
        guard let first = layers.first else { throw Self.misuse("no layer to draw") }
        let destination: Frame
        do { destination = try output.waitForSurface() } catch {
            throw VAError(status: .allocationFailed, message: error.description, call: "SurfaceCompositor.draw")
        }
        guard let target = destination.vaSurface else { throw Self.misuse("the output pool gave a host frame") }
        let display = connection.display
        let outputStandard = Self.colourStandard(outputMatrix ?? first.source.colorMatrix)
        // The regions and blend states the buffers point at must live until vaEndPicture.
        let regions = UnsafeMutablePointer<VARectangle>.allocate(capacity: 2 * layers.count)
        let blends = UnsafeMutablePointer<VABlendState>.allocate(capacity: layers.count)
        var buffers: [VABufferID] = []
        defer {
            for buffer in buffers { vaDestroyBuffer(display, buffer) }
            regions.deallocate()
            blends.deallocate()
        }
        for (index, layer) in layers.enumerated() {
            guard let input = layer.source.vaSurface else { throw Self.misuse("layer \(index) is a host frame, not a VA surface") }
            regions[2 * index] = Self.rectangle(layer.sourceRegion)
            regions[2 * index + 1] = Self.rectangle(layer.outputRegion)
            var parameters = VAProcPipelineParameterBuffer()
            parameters.surface = input
            parameters.surface_region = UnsafePointer(regions + 2 * index)
            parameters.output_region = UnsafePointer(regions + 2 * index + 1)
            parameters.surface_color_standard = Self.colourStandard(layer.sourceMatrix ?? layer.source.colorMatrix)
            parameters.output_color_standard = outputStandard
            parameters.output_background_color = background
            parameters.filter_flags = UInt32(VA_FILTER_SCALING_HQ)
            parameters.rotation_state = layer.rotation.rawValue
            parameters.mirror_state = layer.mirror.rawValue
            parameters.input_color_properties.color_range = UInt8(layer.source.isFullRange == true ? VA_SOURCE_RANGE_FULL : VA_SOURCE_RANGE_REDUCED)
            parameters.output_color_properties.color_range = UInt8(outputFullRange ? VA_SOURCE_RANGE_FULL : VA_SOURCE_RANGE_REDUCED)
            if layer.opacity < 1 || layer.blendsByPremultipliedAlpha {
                var blend = VABlendState()
                if layer.opacity < 1 {
                    blend.flags |= UInt32(VA_BLEND_GLOBAL_ALPHA)
                    blend.global_alpha = Float(max(0, layer.opacity))
                }
                if layer.blendsByPremultipliedAlpha { blend.flags |= UInt32(VA_BLEND_PREMULTIPLIED_ALPHA) }
                blends[index] = blend
                parameters.blend_state = UnsafePointer(blends + index)
            }
            var buffer = VABufferID(cva_VA_INVALID_ID())
            try vaCheck("vaCreateBuffer(VAProcPipelineParameterBuffer)") {
                vaCreateBuffer(display, context, VAProcPipelineParameterBufferType,
                               UInt32(MemoryLayout<VAProcPipelineParameterBuffer>.size), 1, &parameters, &buffer)
            }
            buffers.append(buffer)
        }
        try vaCheck("vaBeginPicture(VideoProc)") { vaBeginPicture(display, context, target) }
        do {
            try vaCheck("vaRenderPicture(VideoProc)") {
                buffers.withUnsafeMutableBufferPointer { ids in vaRenderPicture(display, context, ids.baseAddress, Int32(ids.count)) }
            }
        } catch {
            vaEndPicture(display, context)
            throw error
        }
        try vaCheck("vaEndPicture(VideoProc)") { vaEndPicture(display, context) }
        do { try destination.copyProperties(from: first.source) } catch {
            throw VAError(status: .operationFailed, message: error.description, call: "SurfaceCompositor.draw")
        }
        destination.isFullRange = outputFullRange
        return destination
    }

    private static func rectangle(_ r: Rect) -> VARectangle {
        VARectangle(x: Int16(clamping: r.pixelX), y: Int16(clamping: r.pixelY),
                    width: UInt16(clamping: r.pixelWidth), height: UInt16(clamping: r.pixelHeight))
    }

    /// The VA colour standard for FFmpeg's matrix name: BT.709 for HD tags, BT.601 otherwise.
    static func colourStandard(_ matrix: String?) -> VAProcColorStandardType {
        switch matrix {
        case "bt709": VAProcColorStandardBT709
        case "bt2020nc", "bt2020c": VAProcColorStandardBT2020
        case "smpte170m", "bt470bg": VAProcColorStandardBT601
        default: VAProcColorStandardNone
        }
    }

    /// A drawing this compositor cannot do with what it was given.
    private static func misuse(_ problem: String) -> VAError {
        VAError(status: .invalidParameter, message: problem, call: "SurfaceCompositor.draw")
    }
}

import FFmpegSupport

/// Appends bare pictures to a video input and vends recycled pictures to draw into
/// (`AVAssetWriterInputPixelBufferAdaptor`'s role). Thread-safe.
public final class AssetWriterInputPixelBufferAdaptor: Sendable {
    public let assetWriterInput: AssetWriterInput
    /// The pictures the caller will append; width and height default to the input's output size.
    public let sourcePixelBufferAttributes: PixelBufferAttributes
    /// How many pictures the pool may allocate: enough for the queued samples, the encoder
    /// and the caller's own.
    public static let poolCapacity = PipelineBounds.adaptorPictures
    private let pool = Locked<PixelBufferPool?>(nil)

    /// An adaptor for `input`, which must be a video input not yet writing. Throws
    /// `invalidArgument` when no width/height is given and the input has no settings to take them from.
    public init(assetWriterInput input: AssetWriterInput, sourcePixelBufferAttributes attributes: PixelBufferAttributes) throws(MediaError) {
        guard input.mediaType == .video else {
            throw MediaError(.invalidArgument, "a pixel buffer adaptor needs a video input, not \(input.mediaType)")
        }
        if let status = input.writerStatus, status != .unknown {
            throw MediaError(.invalidState, "a pixel buffer adaptor must be made before the writer starts")
        }
        var attributes = attributes
        if case .video(let settings) = input.outputSettings {
            attributes.width = attributes.width ?? settings.width
            attributes.height = attributes.height ?? settings.height
        }
        guard attributes.width != nil, attributes.height != nil else {
            throw MediaError(.invalidArgument, "the source pixel buffer attributes need a width and height")
        }
        assetWriterInput = input
        sourcePixelBufferAttributes = attributes
    }

    /// Recycled pictures of the source attributes' size and format; nil until the writer starts
    /// writing (like AVFoundation's), and nil again once it stops. With `.vaapiSurface`
    /// attributes and an input encoding on a device, the pictures are GPU surfaces on it.
    public var pixelBufferPool: PixelBufferPool? {
        guard assetWriterInput.writerStatus == .writing else { return nil }
        return pool.withLock { p in
            if let p { return p }
            let a = sourcePixelBufferAttributes
            let (width, height) = (a.width ?? 0, a.height ?? 0)
            if a.pixelFormat == .vaapiSurface {
                // GPU surfaces on the input's device, recycled by libavutil's frames pool.
                guard let device = assetWriterInput.hardwareDevice,
                      let surfaces = try? SurfacePool(device: device.hardware, width: width, height: height, softwareFormat: .nv12,
                                                      capacity: Self.poolCapacity) else { return nil }
                p = try? PixelBufferPool(width: width, height: height, pixelFormat: .vaapiSurface, maximumBufferCount: Self.poolCapacity,
                                         backing: .custom { _, _, _ in
                                             do { return PixelBuffer(frame: try surfaces.waitForSurface()) } catch {
                                                 throw MediaError(.hardwareFailed, "no free GPU surface", underlying: error)
                                             }
                                         })
                return p
            }
            p = try? PixelBufferPool(width: width, height: height, pixelFormat: a.pixelFormat,
                                     maximumBufferCount: Self.poolCapacity)
            return p
        }
    }

    /// Appends `pixelBuffer` shown at `time` if the input is ready; false when it is not.
    /// Throws as `AssetWriterInput.appendImmediately` does.
    public func appendImmediately(_ pixelBuffer: PixelBuffer, withPresentationTime time: MediaTime) throws(MediaError) -> Bool {
        try assetWriterInput.appendImmediately(SampleBuffer(pixelBuffer: pixelBuffer, presentationTimeStamp: time))
    }

    /// Waits until the input is ready, then appends `pixelBuffer` shown at `time`.
    public func append(_ pixelBuffer: PixelBuffer, withPresentationTime time: MediaTime) async throws(MediaError) {
        try await assetWriterInput.append(SampleBuffer(pixelBuffer: pixelBuffer, presentationTimeStamp: time))
    }
}

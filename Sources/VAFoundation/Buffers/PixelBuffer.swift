import FFmpegSupport

/// A video picture (`CVPixelBuffer`'s role): pixels in host memory, or a GPU surface.
///
/// Reference-counted: handing a pixel buffer on shares its pixels, it never copies them
/// (`copy()` does, on request). Pixel bytes are reached only inside scoped accessors.
// @unchecked: the frame is written only by its creator (or the pool's one taker) before it is handed on, then read.
public final class PixelBuffer: @unchecked Sendable {
    let frame: Frame

    /// Wraps a frame; the pixel buffer takes over that reference.
    init(frame: Frame) {
        self.frame = frame
    }

    /// A new host-memory picture with uninitialised pixels.
    public convenience init(width: Int, height: Int, pixelFormat: PixelFormat) throws {
        guard let id = PixelFormatID(pixelFormat), !id.isHardware else {
            throw MediaError(.unsupported, "pixel format \(pixelFormat) cannot be allocated in host memory")
        }
        guard width > 0, height > 0 else {
            throw MediaError(.invalidArgument, "pixel buffer size \(width)x\(height) is not positive")
        }
        do {
            self.init(frame: try Frame(width: width, height: height, pixelFormat: id))
        } catch {
            throw MediaError(.unsupported, "cannot allocate a \(width)x\(height) \(pixelFormat) picture", underlying: error)
        }
    }

    public var width: Int { frame.width }
    public var height: Int { frame.height }
    public var pixelFormat: PixelFormat { PixelFormat(frame.pixelFormat) }
    /// True when the pixels live in a GPU surface and must be transferred to be read.
    public var isSurfaceBacked: Bool { frame.pixelFormat.isHardware }
    /// Number of planes (2 for nv12 and p010, 3 for yuv420p, 1 for packed RGB).
    public var planeCount: Int { frame.planeCount }

    public var colorProperties: ColorProperties {
        get {
            ColorProperties(primaries: frame.colorPrimaries, transfer: frame.colorTransfer,
                            matrix: frame.colorMatrix, fullRange: frame.isFullRange)
        }
        set {
            frame.colorPrimaries = newValue.primaries
            frame.colorTransfer = newValue.transfer
            frame.colorMatrix = newValue.matrix
            frame.isFullRange = newValue.fullRange
        }
    }

    /// One plane's memory as seen inside `withUnsafePlanes`.
    public struct Plane {
        public let baseAddress: UnsafeRawPointer
        public let bytesPerRow: Int
        /// Rows in this plane (chroma planes of 4:2:0 formats have half the picture's rows).
        public let height: Int
    }

    /// One writable plane as seen inside `withUnsafeMutablePlanes`.
    public struct MutablePlane {
        public let baseAddress: UnsafeMutableRawPointer
        public let bytesPerRow: Int
        public let height: Int
    }

    /// Calls `body` with read access to every plane. Fails for surface-backed buffers.
    public func withUnsafePlanes<R>(_ body: ([Plane]) throws -> R) throws -> R {
        try body(try planes().map { Plane(baseAddress: UnsafeRawPointer($0.base), bytesPerRow: $0.stride, height: $0.rows) })
    }

    /// Calls `body` with write access to every plane, first un-sharing the pixels if another
    /// buffer references them. Fails for surface-backed buffers.
    public func withUnsafeMutablePlanes<R>(_ body: ([MutablePlane]) throws -> R) throws -> R {
        do { try frame.makeWritable() } catch {
            throw MediaError(.invalidState, "cannot make the picture writable", underlying: error)
        }
        return try body(try planes().map { MutablePlane(baseAddress: $0.base, bytesPerRow: $0.stride, height: $0.rows) })
    }

    /// A host-memory copy of a surface-backed picture (NV12 or P010): one download, counted in
    /// the export's `hostTransfers`. Host pictures return themselves.
    public func transferredToHost() throws -> PixelBuffer {
        guard isSurfaceBacked else { return self }
        do { return PixelBuffer(frame: try frame.transferToHost()) } catch {
            throw MediaError(.hardwareFailed, "cannot download a \(width)x\(height) surface", underlying: error)
        }
    }

    /// Fills a surface-backed picture from a host picture of the same size in the surface's
    /// layout (NV12 or P010): one upload, counted.
    public func upload(from host: PixelBuffer) throws {
        guard isSurfaceBacked, !host.isSurfaceBacked else {
            throw MediaError(.invalidArgument, "upload goes from a host picture into a surface-backed one")
        }
        guard host.width == width, host.height == height, host.frame.pixelFormat == frame.surfaceSoftwareFormat else {
            throw MediaError(.invalidArgument, "cannot upload a \(host.width)x\(host.height) \(host.pixelFormat) picture into a \(width)x\(height) \(frame.surfaceSoftwareFormat?.name ?? "?") surface")
        }
        do { try frame.upload(from: host.frame) } catch {
            throw MediaError(.hardwareFailed, "cannot upload a \(width)x\(height) picture", underlying: error)
        }
    }

    /// The layout of a surface-backed picture's pixels (`nv12`, `p010le`), nil for host pictures.
    public var surfacePixelFormat: PixelFormat? { frame.surfaceSoftwareFormat.flatMap(\.name).map(PixelFormat.init(rawValue:)) }

    /// A deep copy in newly allocated host memory (`alwaysCopiesSampleData`).
    public func copy() throws -> PixelBuffer {
        do { return PixelBuffer(frame: try frame.copy()) } catch {
            throw MediaError(.invalidState, "cannot copy the picture", underlying: error)
        }
    }

    private func planes() throws -> [(base: UnsafeMutableRawPointer, stride: Int, rows: Int)] {
        guard !isSurfaceBacked else {
            throw MediaError(.invalidState, "the picture lives in a GPU surface; transfer it to host memory first")
        }
        let chromaShift = frame.pixelFormat.chromaHeightShift
        return (0..<planeCount).compactMap { i in
            guard let base = frame.baseAddress(plane: i) else { return nil }
            let rows = i == 0 || i == 3 ? height : (height + (1 << chromaShift) - 1) >> chromaShift
            return (base, frame.bytesPerRow(plane: i), rows)
        }
    }
}

import FFmpegSupport

/// A bounded set of same-sized pictures that are handed out again once every user is done
/// with them (`CVPixelBufferPool`'s role), so a frame loop does not allocate per frame.
///
/// Host-memory pictures live on a `FramePool`: when the caller has dropped its `PixelBuffer`
/// and the encoder has released the frame (FFmpeg's buffers are reference-counted), the memory
/// goes back on the free list. A vended picture is the only reference to its memory, so
/// writing into it never copies. Thread-safe.
public final class PixelBufferPool: Sendable {
    /// Where the pool's pictures come from.
    public enum Backing: Sendable {
        /// Host memory allocated and recycled by the pool.
        case hostMemory
        /// Pictures made by `allocate`, e.g. GPU surfaces from a hardware frames context, which
        /// recycles its own surfaces; the pool counts them and checks their size and format.
        case custom(allocate: @Sendable (_ width: Int, _ height: Int, _ format: PixelFormat) throws -> PixelBuffer)
    }

    public let width: Int
    public let height: Int
    public let pixelFormat: PixelFormat
    /// The most host-memory pictures the pool will ever allocate.
    public let maximumBufferCount: Int
    public let backing: Backing
    private let frames: FramePool?
    private let customCount = Locked(0)

    /// A pool of `width`×`height` pictures in `pixelFormat`, at most `maximumBufferCount` of them.
    public init(width: Int, height: Int, pixelFormat: PixelFormat, maximumBufferCount: Int = 8,
                backing: Backing = .hostMemory) throws(MediaError) {
        guard width > 0, height > 0 else {
            throw MediaError(.invalidArgument, "pixel buffer pool size \(width)x\(height) is not positive")
        }
        guard maximumBufferCount > 0 else {
            throw MediaError(.invalidArgument, "pixel buffer pool needs room for at least one buffer")
        }
        if case .hostMemory = backing {
            guard let id = PixelFormatID(pixelFormat), !id.isHardware else {
                throw MediaError(.unsupported, "pixel format \(pixelFormat) cannot be allocated in host memory")
            }
            do { frames = try FramePool(width: width, height: height, pixelFormat: id, capacity: maximumBufferCount) } catch {
                throw MediaError(.invalidArgument, "cannot size a \(width)x\(height) \(pixelFormat) pool", underlying: error)
            }
        } else {
            frames = nil
        }
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.maximumBufferCount = maximumBufferCount
        self.backing = backing
    }

    /// Pictures allocated so far (for host memory, never more than `maximumBufferCount`).
    public var allocationCount: Int { frames?.allocationCount ?? customCount.withLock { $0 } }

    /// Host-memory pictures currently held by a caller or an encoder.
    public var buffersInUse: Int { frames?.inUseCount ?? 0 }

    /// A free picture, recycled when one is free, else newly allocated. Its pixels hold
    /// whatever was last drawn. Throws `invalidState` when all `maximumBufferCount` pictures
    /// are in use (use `waitForPixelBuffer()` to wait for one instead).
    public func makePixelBuffer() throws(MediaError) -> PixelBuffer {
        if let buffer = try takeFree() { return buffer }
        throw MediaError(.invalidState, "all \(maximumBufferCount) buffers of the \(width)x\(height) \(pixelFormat) pool are in use; append or release them first")
    }

    /// Like `makePixelBuffer()`, but when every picture is in use, waits (up to `timeout`
    /// seconds) for the encoder or the caller to release one.
    public func waitForPixelBuffer(timeout: Double = 10) async throws(MediaError) -> PixelBuffer {
        if let buffer = try takeFree() { return buffer }
        guard let frames else {
            throw MediaError(.invalidState, "the \(width)x\(height) \(pixelFormat) pool has no picture to wait for")
        }
        let frame: Frame?
        do { frame = try await frames.waitForFrame(timeout: timeout) } catch {
            throw MediaError(.invalidState, "cannot allocate a \(width)x\(height) \(pixelFormat) picture", underlying: error)
        }
        if let frame { return PixelBuffer(frame: frame) }
        if Task.isCancelled { throw MediaError(.cancelled, "the task waiting for a pooled picture was cancelled") }
        throw MediaError(.invalidState, "no buffer of the \(width)x\(height) \(pixelFormat) pool was released within \(timeout) s; all \(maximumBufferCount) are held")
    }

    private func takeFree() throws(MediaError) -> PixelBuffer? {
        guard let frames else {
            guard case .custom(let allocate) = backing else { return nil }
            let buffer: PixelBuffer
            do { buffer = try allocate(width, height, pixelFormat) } catch {
                throw error as? MediaError ?? MediaError(.invalidState, "the pool's allocator failed: \(error)")
            }
            guard buffer.width == width, buffer.height == height, buffer.pixelFormat == pixelFormat else {
                throw MediaError(.invalidArgument, "the pool's allocator returned a \(buffer.width)x\(buffer.height) \(buffer.pixelFormat) picture, not \(width)x\(height) \(pixelFormat)")
            }
            customCount.withLock { $0 += 1 }
            return buffer
        }
        do {
            return try frames.makeFrame().map { PixelBuffer(frame: $0) }
        } catch {
            throw MediaError(.invalidState, "cannot allocate a \(width)x\(height) \(pixelFormat) picture", underlying: error)
        }
    }
}

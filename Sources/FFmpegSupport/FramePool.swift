internal import CFFmpeg
import Dispatch
import MediaCore

/// Hands out video frames whose pixel memory comes back to the pool, instead of being freed,
/// when the last reference to it is dropped (by the caller, an encoder, a scaler). At most
/// `capacity` blocks of memory are ever allocated. Thread-safe.
///
/// Each frame's single buffer is made with `av_buffer_create` and a release callback that
/// puts the memory on the free list; the free list outlives the pool until every buffer is back.
public final class FramePool: Sendable {
    public let width: Int
    public let height: Int
    public let pixelFormat: PixelFormatID
    public let capacity: Int
    private let storage: Storage
    private static let alignment: Int32 = 64

    /// The free list and counters, kept alive by the pool and by every buffer handed out.
    final class Storage: Sendable {
        struct State {
            /// Addresses of free memory blocks (as integers, which are Sendable).
            var free: [UInt] = []
            var allocations = 0
            var closed = false
        }
        let state = Locked(State())
        let size: Int
        /// Signalled each time a block comes back, for callers waiting for one.
        let released = ReleaseSignal()

        init(size: Int) { self.size = size }

        /// Called when a buffer's last reference goes: keep its memory for reuse, or free it
        /// when the pool is gone.
        func recycle(_ data: UnsafeMutableRawPointer) {
            let keep = state.withLock { s -> Bool in
                if s.closed { return false }
                s.free.append(UInt(bitPattern: data))
                return true
            }
            if !keep { av_free(data) }
            released.signal()
        }

        func close() {
            let doomed = state.withLock { s -> [UInt] in
                s.closed = true
                defer { s.free = [] }
                return s.free
            }
            for address in doomed { av_free(UnsafeMutableRawPointer(bitPattern: address)) }
        }
    }

    /// A pool of `width`×`height` frames in `pixelFormat`, allocating at most `capacity` of them.
    /// The corresponding C function is `av_image_get_buffer_size`.
    public init(width: Int, height: Int, pixelFormat: PixelFormatID, capacity: Int) throws(FFmpegError) {
        let size = av_image_get_buffer_size(pixelFormat.avValue, Int32(width), Int32(height), FramePool.alignment)
        try check(size, "av_image_get_buffer_size")
        guard capacity > 0 else { throw FFmpegError(code: .invalidArgument, function: "FramePool") }
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.capacity = capacity
        self.storage = Storage(size: Int(size))
    }

    deinit { storage.close() }

    /// Memory blocks allocated so far.
    public var allocationCount: Int { storage.state.withLock { $0.allocations } }

    /// Frames whose memory is still referenced somewhere.
    public var inUseCount: Int { storage.state.withLock { $0.allocations - $0.free.count } }

    /// A frame, waiting up to `timeout` seconds for one to come back when all `capacity` are in
    /// use: woken by the release, never polling. nil when none came back in time or the task
    /// was cancelled.
    public func waitForFrame(timeout: Double) async throws(FFmpegError) -> Frame? {
        let deadline = DispatchTime.now() + timeout
        while true {
            let seen = storage.released.generation
            if let frame = try makeFrame() { return frame }
            guard await storage.released.next(after: seen, deadline: deadline) else { return try makeFrame() }
        }
    }

    /// A frame on recycled (or, while under capacity, new) memory; nil when all `capacity`
    /// blocks are in use. The corresponding C functions are `av_malloc`, `av_buffer_create`
    /// and `av_image_fill_arrays`.
    public func makeFrame() throws(FFmpegError) -> Frame? {
        enum Take { case reuse(UInt), allocate, exhausted }
        let take = storage.state.withLock { s -> Take in
            if let data = s.free.popLast() { return .reuse(data) }
            guard s.allocations < capacity else { return .exhausted }
            s.allocations += 1
            return .allocate
        }
        let data: UnsafeMutableRawPointer
        switch take {
        case .exhausted: return nil
        case .reuse(let address): data = UnsafeMutableRawPointer(bitPattern: address)!
        case .allocate:
            guard let d = av_malloc(storage.size + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
                storage.state.withLock { $0.allocations -= 1 }
                throw FFmpegError(code: .outOfMemory, function: "av_malloc")
            }
            data = d
        }
        let opaque = Unmanaged.passRetained(storage).toOpaque()
        let release: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?) -> Void = { opaque, data in
            let storage = Unmanaged<Storage>.fromOpaque(opaque!).takeRetainedValue()
            storage.recycle(UnsafeMutableRawPointer(data!))
        }
        let bytes = data.assumingMemoryBound(to: UInt8.self)
        guard let buffer = av_buffer_create(bytes, storage.size, release, opaque, 0) else {
            Unmanaged<Storage>.fromOpaque(opaque).release()
            storage.recycle(data)
            throw FFmpegError(code: .outOfMemory, function: "av_buffer_create")
        }
        let frame = Frame()
        let f = frame.pointer
        f.pointee.buf.0 = buffer
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        f.pointee.format = pixelFormat.rawValue
        var planes = [UnsafeMutablePointer<UInt8>?](repeating: nil, count: 4)
        var strides = [Int32](repeating: 0, count: 4)
        try check(av_image_fill_arrays(&planes, &strides, bytes, pixelFormat.avValue, Int32(width), Int32(height), FramePool.alignment),
                  "av_image_fill_arrays")
        f.pointee.data = (planes[0], planes[1], planes[2], planes[3], nil, nil, nil, nil)
        f.pointee.linesize = (strides[0], strides[1], strides[2], strides[3], 0, 0, 0, 0)
        let dataField = UnsafeMutableRawPointer(f).advanced(by: MemoryLayout<AVFrame>.offset(of: \AVFrame.data)!)
        f.pointee.extended_data = dataField.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
        return frame
    }
}

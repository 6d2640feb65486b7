internal import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// A bounded pool of VA surfaces of one size and format (NV12 or P010) on a device's context:
/// libavutil's `AVHWFramesContext` with a fixed surface count. Decoders, the VPP and encoders
/// share its surfaces without copying; a surface returns to the pool when its last frame
/// reference is dropped. Thread-safe (libavutil's buffer pool locks).
// @unchecked: the frames context is immutable after init and libavutil's buffer pool locks; `released` is thread-safe.
public final class SurfacePool: @unchecked Sendable {
    let reference: UnsafeMutablePointer<AVBufferRef>
    public let device: HardwareDeviceContext
    public let width: Int
    public let height: Int
    /// The layout of the pixels inside each surface (`nv12`, `p010`).
    public let softwareFormat: PixelFormatID
    /// Surfaces the pool owns; all are created up front, none later.
    public let capacity: Int

    /// Creates `capacity` surfaces of `width`×`height` in `softwareFormat`. The corresponding C
    /// functions are `av_hwframe_ctx_alloc` and `av_hwframe_ctx_init`.
    public init(device: HardwareDeviceContext, width: Int, height: Int, softwareFormat: PixelFormatID, capacity: Int) throws(FFmpegError) {
        guard let ref = av_hwframe_ctx_alloc(device.reference) else {
            throw FFmpegError(code: .outOfMemory, function: "av_hwframe_ctx_alloc")
        }
        let frames = UnsafeMutableRawPointer(ref.pointee.data).assumingMemoryBound(to: AVHWFramesContext.self)
        frames.pointee.format = AV_PIX_FMT_VAAPI
        frames.pointee.sw_format = softwareFormat.avValue
        frames.pointee.width = Int32(width)
        frames.pointee.height = Int32(height)
        frames.pointee.initial_pool_size = Int32(capacity)
        let status = av_hwframe_ctx_init(ref)
        if status < 0 {
            var doomed: UnsafeMutablePointer<AVBufferRef>? = ref
            av_buffer_unref(&doomed)
            throw FFmpegError(status, "av_hwframe_ctx_init")
        }
        reference = ref
        self.device = device
        self.width = width
        self.height = height
        self.softwareFormat = softwareFormat
        self.capacity = capacity
    }

    deinit {
        var p: UnsafeMutablePointer<AVBufferRef>? = reference
        av_buffer_unref(&p)
    }

    /// A new reference for a codec context's `hw_frames_ctx`.
    func newReference() -> UnsafeMutablePointer<AVBufferRef>? { av_buffer_ref(reference) }

    /// The VA surface IDs the pool owns (a VPP context renders into them).
    package var surfaceIDs: [UInt32] {
        let frames = UnsafeMutableRawPointer(reference.pointee.data).assumingMemoryBound(to: AVHWFramesContext.self)
        let va = frames.pointee.hwctx.assumingMemoryBound(to: AVVAAPIFramesContext.self)
        guard let ids = va.pointee.surface_ids else { return [] }
        return Array(UnsafeBufferPointer(start: ids, count: Int(va.pointee.nb_surfaces)))
    }

    /// A free surface as a frame, or nil when every surface is held (by a queue, the VPP or an
    /// encoder): the caller waits for one to come back. The corresponding C function is `av_hwframe_get_buffer`.
    public func makeSurface() throws(FFmpegError) -> Frame? {
        let frame = Frame()
        let status = av_hwframe_get_buffer(reference, frame.pointer, 0)
        if status == cffmpeg_averror(ENOMEM) { return nil }
        try check(status, "av_hwframe_get_buffer")
        try signalOnRelease(frame)
        return frame
    }

    /// A free surface, waiting up to `timeout` seconds for one to be released: the thread
    /// sleeps on a condition that the release signals, never polling.
    public func waitForSurface(timeout: Double = 10) throws(FFmpegError) -> Frame {
        let deadline = ReleaseSignal.deadline(in: timeout)
        while true {
            let seen = released.generation
            if let frame = try makeSurface() { return frame }
            guard released.wait(after: seen, until: deadline) else {
                if let frame = try makeSurface() { return frame }
                throw FFmpegError(code: .outOfMemory, function: "av_hwframe_get_buffer (all \(capacity) surfaces held)")
            }
        }
    }

    /// Signalled each time one of the pool's surfaces comes back.
    private let released = ReleaseSignal()

    /// The pool's buffer, and the signal to give once it is let go.
    private final class SurfaceReference: @unchecked Sendable {
        // @unchecked: `buffer` is touched once, by the release callback, after every other reference is gone.
        var buffer: UnsafeMutablePointer<AVBufferRef>?
        let released: ReleaseSignal
        init(_ buffer: UnsafeMutablePointer<AVBufferRef>, _ released: ReleaseSignal) {
            self.buffer = buffer
            self.released = released
        }
    }

    /// Puts the frame's pool buffer behind one of ours whose release hands it back to the
    /// pool and then signals `released`: libavutil's pool tells nobody when a surface comes back.
    /// The surface ID (`data[3]`) and `hw_frames_ctx` stay as they were. The corresponding C
    /// function is `av_buffer_create`.
    private func signalOnRelease(_ frame: Frame) throws(FFmpegError) {
        guard let original = frame.pointer.pointee.buf.0 else { return }
        let box = Unmanaged.passRetained(SurfaceReference(original, released)).toOpaque()
        let release: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?) -> Void = { opaque, _ in
            let reference = Unmanaged<SurfaceReference>.fromOpaque(opaque!).takeRetainedValue()
            av_buffer_unref(&reference.buffer)
            reference.released.signal()
        }
        guard let wrapper = av_buffer_create(original.pointee.data, original.pointee.size, release, box, 0) else {
            Unmanaged<SurfaceReference>.fromOpaque(box).release()
            throw FFmpegError(code: .outOfMemory, function: "av_buffer_create")
        }
        frame.pointer.pointee.buf.0 = wrapper
    }

    /// Copies a host frame of the pool's size and software format into a free surface: one
    /// counted upload. The corresponding C function is `av_hwframe_transfer_data`.
    public func upload(_ host: Frame) throws(FFmpegError) -> Frame {
        let surface = try waitForSurface()
        try surface.upload(from: host)
        try check(av_frame_copy_props(surface.pointer, host.pointer), "av_frame_copy_props")
        return surface
    }
}

extension Frame {
    /// Copies a host frame's pixels into this VA-surface frame: one counted upload. The
    /// corresponding C function is `av_hwframe_transfer_data`.
    public func upload(from host: Frame) throws(FFmpegError) {
        try check(av_hwframe_transfer_data(pointer, host.pointer, 0), "av_hwframe_transfer_data")
        HostTransferCounter.record(bytes: host.imageByteCount)
    }

    /// The pixel layout inside a VA-surface frame (`nv12`, `p010`), nil for host frames.
    public var surfaceSoftwareFormat: PixelFormatID? {
        guard pixelFormat == .vaapi, let ref = pointer.pointee.hw_frames_ctx else { return nil }
        let frames = UnsafeMutableRawPointer(ref.pointee.data).assumingMemoryBound(to: AVHWFramesContext.self)
        return PixelFormatID(rawValue: frames.pointee.sw_format.rawValue)
    }

    /// The VA surface a hardware frame lives in (`data[3]`), nil for host frames.
    package var vaSurface: UInt32? {
        guard pixelFormat == .vaapi, let pointer = baseAddress(plane: 3) else { return nil }
        return VASurfaceID(UInt(bitPattern: pointer))
    }

    /// Takes `source`'s timestamps, colour tags and side data (not its pixels), as a picture
    /// drawn from it carries them. The corresponding C function is `av_frame_copy_props`.
    package func copyProperties(from source: Frame) throws(FFmpegError) {
        try check(av_frame_copy_props(pointer, source.pointer), "av_frame_copy_props")
    }

    /// Bytes of pixel data in a host video frame (visible rows of every plane): what a copy
    /// of it between host memory and a surface moves.
    public var hostImageByteCount: Int { imageByteCount }

    /// Bytes of pixel data in a host video frame (visible rows of every plane).
    var imageByteCount: Int {
        var bytes = 0
        for plane in 0..<planeCount {
            let rows = plane == 0 ? height : (height + (1 << pixelFormat.chromaHeightShift) - 1) >> pixelFormat.chromaHeightShift
            bytes += bytesPerRow(plane: plane) * rows
        }
        return bytes
    }
}

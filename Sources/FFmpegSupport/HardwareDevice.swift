internal import CFFmpeg
import MediaCore

/// libavutil's handle on a VA-API device (`AVHWDeviceContext`), shared by decoders, filters and
/// encoders so they exchange GPU surfaces without copying.
// @unchecked: the device context is immutable after init; libva serialises calls on its display.
public final class HardwareDevice: @unchecked Sendable {
    let reference: UnsafeMutablePointer<AVBufferRef>

    /// Wraps a VADisplay that `owner` opened and initialised, and will terminate after this
    /// context is gone. The corresponding C functions are `av_hwdevice_ctx_alloc` and `av_hwdevice_ctx_init`.
    public init(vaDisplay: UnsafeMutableRawPointer, owner: AnyObject) throws(FFmpegError) {
        guard let ref = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_VAAPI) else {
            throw FFmpegError(code: .outOfMemory, function: "av_hwdevice_ctx_alloc")
        }
        let device = UnsafeMutableRawPointer(ref.pointee.data).assumingMemoryBound(to: AVHWDeviceContext.self)
        device.pointee.hwctx.assumingMemoryBound(to: AVVAAPIDeviceContext.self).pointee.display = vaDisplay
        // libavutil frees the context when its last reference goes, which may be a surface pool
        // outliving this object: it then releases the owner, so the display is terminated only
        // after every surface on it is destroyed.
        device.pointee.user_opaque = Unmanaged.passRetained(owner).toOpaque()
        device.pointee.free = { context in
            guard let opaque = context?.pointee.user_opaque else { return }
            Unmanaged<AnyObject>.fromOpaque(opaque).release()
        }
        let status = av_hwdevice_ctx_init(ref)
        if status < 0 {
            var doomed: UnsafeMutablePointer<AVBufferRef>? = ref
            av_buffer_unref(&doomed)
            throw FFmpegError(status, "av_hwdevice_ctx_init")
        }
        reference = ref
    }

    /// Lets libavutil open the device itself: a DRM render node path or an X11 display name.
    /// The corresponding C function is `av_hwdevice_ctx_create`.
    public init(openingVAAPIDevice device: String) throws(FFmpegError) {
        var ref: UnsafeMutablePointer<AVBufferRef>? = nil
        try check(av_hwdevice_ctx_create(&ref, AV_HWDEVICE_TYPE_VAAPI, device, nil, 0), "av_hwdevice_ctx_create")
        guard let ref else { throw FFmpegError(code: .outOfMemory, function: "av_hwdevice_ctx_create") }
        reference = ref
    }

    deinit {
        var p: UnsafeMutablePointer<AVBufferRef>? = reference
        av_buffer_unref(&p)
    }

    /// A new reference for a codec or filter context to own.
    func newReference() -> UnsafeMutablePointer<AVBufferRef>? { av_buffer_ref(reference) }

    /// The VADisplay libavutil uses for this device.
    var vaDisplay: VADisplay {
        let device = UnsafeMutableRawPointer(reference.pointee.data).assumingMemoryBound(to: AVHWDeviceContext.self)
        return device.pointee.hwctx.assumingMemoryBound(to: AVVAAPIDeviceContext.self).pointee.display
    }
}

/// Bytes moved between GPU surfaces and host memory by this process's transfers, so a
/// pipeline can prove it made none.
public enum HostTransferCounter {
    private static let counts = CounterStorage()

    /// (transfers, bytes) so far.
    public static var totals: (count: Int, bytes: Int) { counts.read() }

    static func record(bytes: Int) { counts.add(bytes) }
}

/// A thread-safe count of transfers and bytes.
final class CounterStorage: Sendable {
    private let state = Locked((count: 0, bytes: 0))
    func add(_ bytes: Int) { state.withLock { $0.count += 1; $0.bytes += bytes } }
    func read() -> (count: Int, bytes: Int) { state.withLock { $0 } }
}

extension Frame {
    /// A host-memory copy of a GPU-surface frame, counted in `HostTransferCounter`. The
    /// corresponding C function is `av_hwframe_transfer_data`.
    public func transferToHost() throws(FFmpegError) -> Frame {
        let host = Frame()
        try check(av_hwframe_transfer_data(host.pointer, pointer, 0), "av_hwframe_transfer_data")
        try check(av_frame_copy_props(host.pointer, pointer), "av_frame_copy_props")
        HostTransferCounter.record(bytes: host.imageByteCount)
        return host
    }
}

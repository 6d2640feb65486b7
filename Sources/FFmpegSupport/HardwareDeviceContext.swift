package import CFFmpeg
import MediaCore

/// libavutil's reference to a VA-API device (`AVHWDeviceContext`), which decoders, surface pools
/// and encoders share so they exchange GPU surfaces without copying. It is not a device of its
/// own: `VADevice` (HardwareAcceleration) owns the display and makes this context over it.
// @unchecked: the device context is immutable after init; libva serialises calls on its display.
public final class HardwareDeviceContext: @unchecked Sendable {
    let reference: UnsafeMutablePointer<AVBufferRef>
    /// The object that owns the display and terminates it after this context's last reference.
    package let displayOwner: AnyObject

    /// A VA-API context whose display `attachDisplay` sets, keeping `owner` alive until
    /// libavutil's last reference to it is gone: the display is terminated only after every
    /// surface on it is destroyed, whichever of them outlives this object. The display is set
    /// by its owner's module, so it never crosses into this one as a value. The corresponding
    /// C functions are `av_hwdevice_ctx_alloc` and `av_hwdevice_ctx_init`.
    package init(vaapiKeepingAlive owner: AnyObject,
                 attachDisplay: (inout AVVAAPIDeviceContext) -> Void) throws(FFmpegError) {
        guard let ref = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_VAAPI) else {
            throw FFmpegError(code: .outOfMemory, function: "av_hwdevice_ctx_alloc")
        }
        let device = UnsafeMutableRawPointer(ref.pointee.data).assumingMemoryBound(to: AVHWDeviceContext.self)
        attachDisplay(&device.pointee.hwctx.assumingMemoryBound(to: AVVAAPIDeviceContext.self).pointee)
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
        displayOwner = owner
    }

    deinit {
        var p: UnsafeMutablePointer<AVBufferRef>? = reference
        av_buffer_unref(&p)
    }

    /// A new reference for a codec or filter context to own.
    func newReference() -> UnsafeMutablePointer<AVBufferRef>? { av_buffer_ref(reference) }
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

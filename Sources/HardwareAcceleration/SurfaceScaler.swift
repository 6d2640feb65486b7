import FFmpegSupport
import MediaCore

/// Scales and converts VA surfaces into a `SurfacePool` on the GPU (VA-API video processing,
/// `VAEntrypointVideoProc`): the picture never leaves the device. A one-layer drawing of the
/// `SurfaceCompositor` it owns; one task or queue at a time.
public final class SurfaceScaler {
    private let compositor: SurfaceCompositor
    public var output: SurfacePool { compositor.output }

    /// Opens a VPP context rendering into `output`'s surfaces.
    public init(output: SurfacePool) throws(VAError) {
        compositor = try SurfaceCompositor(output: output)
    }

    /// `source` (a surface of any size) scaled into a free surface of the output pool with
    /// `mode`, converted to full or limited range when `outputFullRange` says (nil keeps
    /// the source's); timestamps and colour tags carry over. Outside the picture (bars) is black.
    public func scale(_ source: Frame, fit mode: PictureFit.Mode, outputFullRange: Bool? = nil) throws(VAError) -> Frame {
        let fit = PictureFit(source: Size(width: source.width, height: source.height), pixelAspect: source.pixelAspect,
                             output: Size(width: output.width, height: output.height), mode: mode)
        let layer = SurfaceLayer(source: source, sourceRegion: fit.source, outputRegion: fit.output)
        let destination = try compositor.draw([layer], background: 0xff00_0000, outputFullRange: outputFullRange ?? (source.isFullRange == true))
        if outputFullRange == nil { destination.isFullRange = source.isFullRange }
        return destination
    }
}

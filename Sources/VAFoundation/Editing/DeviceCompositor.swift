import FFmpegSupport
import HardwareAcceleration

/// Draws video-composition instructions on a VA device's video processor: every visible layer
/// becomes one pass of a single VPP picture (crop → source region, an axis-aligned transform →
/// quarter turns, mirroring and an output region, opacity → global alpha) onto a surface of the
/// render size, over the background colour. The pictures stay on the device from decode to encode.
///
/// A frame the video processor cannot draw (a layer turned by other than quarter turns or
/// skewed, a blend or rotation the device lacks, a source that is not on the device) is drawn by
/// the `SoftwareCompositor` from downloaded sources instead, and said so in the observations.
final class DeviceCompositor {
    private let compositor: SurfaceCompositor
    private let capabilities: PipelineCapabilities?
    private let software: SoftwareCompositor
    private let hostPictures: VideoCompositionRenderContext
    private let observations: StageObservations?
    let width: Int, height: Int

    /// A compositor drawing `width`×`height` pictures (P010 when `deep`, else NV12) on `device`,
    /// with at most `capacity` of them held downstream at once.
    init(device: VADevice, width: Int, height: Int, deep: Bool, capacity: Int, observations: StageObservations?) throws(MediaError) {
        do {
            let pool = try SurfacePool(device: device.hardware, width: width, height: height,
                                       softwareFormat: deep ? .p010 : .nv12, capacity: capacity)
            compositor = try SurfaceCompositor(output: pool)
        } catch {
            throw MediaError(.hardwareFailed, "cannot open the video processor of \(device.path) to composite \(width)x\(height) pictures",
                             underlying: error)
        }
        capabilities = device.capabilities.videoProcessing?.pipeline
        software = SoftwareCompositor(depth: deep ? .tenBit : .eightBit)
        hostPictures = try VideoCompositionRenderContext(size: Size(width: width, height: height), pixelFormat: software.outputPixelFormat,
                                                         maximumBufferCount: capacity)
        self.observations = observations
        self.width = width
        self.height = height
    }

    /// `instruction` at `time` drawn from `frames` (keyed by track ID): on the device when it can,
    /// else in host memory.
    func render(_ instruction: VideoCompositionInstruction, at time: MediaTime, frames: [Int: PixelBuffer]) throws -> PixelBuffer {
        switch plan(instruction, at: time, frames: frames) {
        case .device(let layers):
            let drawn: Frame
            do {
                drawn = try compositor.draw(layers.isEmpty ? try invisibleLayer() : layers,
                                            background: Self.argb(instruction.backgroundColor), outputMatrix: "bt709", outputFullRange: false)
            } catch {
                throw MediaError(.hardwareFailed, "the video processor failed to composite the picture at \(time.seconds) s", underlying: error)
            }
            observations?.composited(on: .device)
            return PixelBuffer(frame: drawn)
        case .host(let why):
            var hostFrames: [Int: PixelBuffer] = [:]
            for (trackID, picture) in frames {
                guard picture.isSurfaceBacked else {
                    hostFrames[trackID] = picture
                    continue
                }
                let host = try picture.frame.transferToHost()
                observations?.transferred(host)
                hostFrames[trackID] = PixelBuffer(frame: host)
            }
            let output = try hostPictures.newPixelBuffer()
            try software.render(instruction, at: time, sourceFrames: hostFrames, into: output)
            observations?.composited(on: .host, because: why)
            return output
        }
    }

    private enum Plan {
        /// The passes, bottom layer first.
        case device([SurfaceLayer])
        /// Software, and why.
        case host(String)
    }

    /// The video processor's passes for the frame, or why it cannot draw it.
    private func plan(_ instruction: VideoCompositionInstruction, at time: MediaTime, frames: [Int: PixelBuffer]) -> Plan {
        var layers: [SurfaceLayer] = []
        for layer in instruction.layerInstructions.reversed() {
            guard let picture = frames[layer.trackID] else { continue }
            let opacity = layer.opacity(at: time)
            guard opacity > 0 else { continue }
            guard picture.isSurfaceBacked else { return .host("track \(layer.trackID)'s picture is not on the device") }
            let placement: LayerPlacement
            switch LayerPlacement.place(transform: layer.transform(at: time), crop: layer.cropRectangle(at: time),
                                        sourceWidth: picture.width, sourceHeight: picture.height, renderWidth: width, renderHeight: height) {
            case .hidden: continue
            case .unsupported(let why): return .host("track \(layer.trackID): \(why)")
            case .placed(let p): placement = p
            }
            if let capabilities {
                if !capabilities.rotates(quarterTurns: Int(placement.rotation.rawValue)) {
                    return .host("the video processor cannot turn a picture \(placement.rotation.rawValue * 90)°")
                }
                if !capabilities.mirrors(placement.mirror.rawValue) { return .host("the video processor cannot mirror a picture") }
                if opacity < 1 && !capabilities.blendsWithGlobalAlpha { return .host("the video processor cannot blend with an opacity") }
            }
            layers.append(SurfaceLayer(source: picture.frame, sourceRegion: placement.sourceRegion, outputRegion: placement.outputRegion,
                                       rotation: placement.rotation, mirror: placement.mirror, opacity: opacity))
        }
        return .device(layers)
    }

    /// A fully transparent pass over the whole picture, for a frame that shows only the
    /// background: a VPP picture needs one input, and the background fills under it.
    private func invisibleLayer() throws -> [SurfaceLayer] {
        let any = try compositor.output.waitForSurface()
        let whole = Rect(x: 0, y: 0, width: width, height: height)
        return [SurfaceLayer(source: any, sourceRegion: whole, outputRegion: whole, opacity: 0)]
    }

    /// An RGBA colour as VA-API's 0xAARRGGBB background, taken over black as the software compositor does.
    static func argb(_ color: RGBAColor) -> UInt32 {
        let alpha = min(max(color.alpha, 0), 1)
        func byte(_ value: Double) -> UInt32 { UInt32((min(max(value, 0), 1) * alpha * 255).rounded()) }
        return 0xff00_0000 | byte(color.red) << 16 | byte(color.green) << 8 | byte(color.blue)
    }
}

/// Where the video processor draws one layer: the source region, its quarter turns and
/// mirroring, and the output region, in whole pixels and clipped to the render picture.
struct LayerPlacement: Equatable {
    var sourceRegion: Rect
    var outputRegion: Rect
    var rotation: SurfaceLayer.Rotation
    var mirror: SurfaceLayer.Mirror

    enum Outcome: Equatable {
        case placed(LayerPlacement)
        /// Nothing of the layer falls on the picture.
        case hidden
        /// The transform is not a scale, quarter turn or mirror plus a translation.
        case unsupported(String)
    }

    /// The placement of a `sourceWidth`×`sourceHeight` picture cropped to `crop` and mapped by
    /// `transform` (source pixels to render pixels, `CGAffineTransform` layout) onto a
    /// `renderWidth`×`renderHeight` picture.
    static func place(transform t: VideoTransform, crop: Rect?, sourceWidth: Int, sourceHeight: Int,
                      renderWidth: Int, renderHeight: Int) -> Outcome {
        let whole = Rect(x: 0, y: 0, width: sourceWidth, height: sourceHeight)
        let shown = crop.map { $0.intersection(whole) } ?? whole
        guard !shown.isEmpty else { return .hidden }
        // x' = a·x + c·y + tx, y' = b·x + d·y + ty. VA turns first, then mirrors.
        let rotation: SurfaceLayer.Rotation, mirror: SurfaceLayer.Mirror
        if t.b == 0 && t.c == 0 {
            guard t.a != 0, t.d != 0 else { return .hidden }
            switch (t.a > 0, t.d > 0) {
            case (true, true): (rotation, mirror) = (.none, [])
            case (false, true): (rotation, mirror) = (.none, .horizontal)
            case (true, false): (rotation, mirror) = (.none, .vertical)
            case (false, false): (rotation, mirror) = (.clockwise180, [])
            }
        } else if t.a == 0 && t.d == 0 {
            guard t.b != 0, t.c != 0 else { return .hidden }
            switch (t.b > 0, t.c < 0) {
            case (true, true): (rotation, mirror) = (.clockwise90, [])
            case (false, false): (rotation, mirror) = (.clockwise270, [])
            case (true, false): (rotation, mirror) = (.clockwise90, .horizontal)
            case (false, true): (rotation, mirror) = (.clockwise90, .vertical)
            }
        } else {
            return .unsupported("its transform turns the picture by other than quarter turns (or skews it), which the video processor cannot draw")
        }
        guard [t.a, t.b, t.c, t.d, t.tx, t.ty].allSatisfy(\.isFinite) else { return .unsupported("its transform is not finite") }
        let drawn = bounds(of: shown, through: t)
        let visible = drawn.intersection(Rect(x: 0, y: 0, width: renderWidth, height: renderHeight))
        guard !visible.isEmpty else { return .hidden }
        // The part of the source that lands on the picture: the inverse of an axis-aligned map is one too.
        let determinant = t.a * t.d - t.b * t.c
        let inverse = VideoTransform(a: t.d / determinant, b: -t.b / determinant, c: -t.c / determinant, d: t.a / determinant,
                                     tx: (t.c * t.ty - t.d * t.tx) / determinant, ty: (t.b * t.tx - t.a * t.ty) / determinant)
        let source = bounds(of: visible, through: inverse).intersection(shown)
        guard let sourceRegion = pixels(source), let outputRegion = pixels(visible) else { return .hidden }
        return .placed(LayerPlacement(sourceRegion: sourceRegion, outputRegion: outputRegion, rotation: rotation, mirror: mirror))
    }

    /// The axis-aligned box holding `rect`'s corners mapped by `t`.
    private static func bounds(of rect: Rect, through t: VideoTransform) -> Rect {
        let corners = [(rect.x, rect.y), (rect.maxX, rect.y), (rect.x, rect.maxY), (rect.maxX, rect.maxY)]
            .map { (t.a * $0.0 + t.c * $0.1 + t.tx, t.b * $0.0 + t.d * $0.1 + t.ty) }
        let xs = corners.map(\.0), ys = corners.map(\.1)
        return Rect(x: xs.min()!, y: ys.min()!, width: xs.max()! - xs.min()!, height: ys.max()! - ys.min()!)
    }

    /// `rect` with its edges rounded to whole pixels; nil when nothing is left.
    private static func pixels(_ rect: Rect) -> Rect? {
        let x0 = rect.x.rounded(), y0 = rect.y.rounded()
        let x1 = rect.maxX.rounded(), y1 = rect.maxY.rounded()
        guard x1 > x0, y1 > y0 else { return nil }
        return Rect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
}

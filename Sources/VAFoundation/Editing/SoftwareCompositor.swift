import FFmpegSupport

/// The default compositor: draws an instruction's layers on the CPU with AVFoundation's
/// semantics, into 8-bit `yuv420p` or 10-bit `yuv420p10le` pictures.
///
/// The background colour fills the picture; then each layer, from the last (bottom) to the first
/// (top), has its crop rectangle (source pixels) applied, is mapped through its transform (source
/// pixels to render pixels, `CGAffineTransform` layout) with bilinear sampling, and is blended
/// with its opacity: `out = source·opacity + out·(1 − opacity)` where the layer covers, the
/// picture unchanged elsewhere (edges are hard, not anti-aliased). Layers below the topmost
/// opaque one that covers the whole picture, and the background, are skipped.
///
/// It works directly in 4:2:0 planes at the output's depth: the luma plane with the transform as
/// given, each chroma plane as a half-size picture with the translation and crop halved (chroma
/// sited at the centre of its 2×2 block). A source in another format (`nv12`, the other depth,
/// a GPU surface) is converted first with libswscale.
public struct SoftwareCompositor: VideoCompositing {
    /// The sample depth the compositor renders at.
    public enum Depth: Sendable, Hashable {
        /// 8-bit `yuv420p`.
        case eightBit
        /// 10-bit `yuv420p10le`.
        case tenBit
    }

    /// The depth the compositor renders at; it picks `outputPixelFormat`.
    public let depth: Depth

    /// A compositor rendering at `depth`.
    public init(depth: Depth = .eightBit) {
        self.depth = depth
    }

    /// Sources are converted to the output's format before drawing, so that format needs no conversion.
    public var sourcePixelFormat: PixelFormat { outputPixelFormat }

    public var outputPixelFormat: PixelFormat { depth == .eightBit ? .yuv420p : .yuv420p10 }

    /// Renders `request` into a picture from its render context's pool.
    public func renderFrame(_ request: VideoCompositionRequest) throws -> PixelBuffer {
        let output = try request.renderContext.newPixelBuffer()
        let frames = Dictionary(request.instruction.requiredSourceTrackIDs.compactMap { id in
            request.sourceFrame(byTrackID: id).map { (id, $0) }
        }, uniquingKeysWith: { first, _ in first })
        try render(request.instruction, at: request.compositionTime, sourceFrames: frames, into: output)
        return output
    }

    /// Renders `instruction` at `time` from `sourceFrames` (keyed by track ID) into a newly
    /// allocated `width`×`height` picture in `outputPixelFormat`.
    public func render(_ instruction: VideoCompositionInstruction, at time: MediaTime, sourceFrames: [Int: PixelBuffer],
                       width: Int, height: Int) throws -> PixelBuffer {
        let output = try PixelBuffer(width: width, height: height, pixelFormat: outputPixelFormat)
        try render(instruction, at: time, sourceFrames: sourceFrames, into: output)
        return output
    }

    /// Renders `instruction` at `time` from `sourceFrames` (keyed by track ID) into `output`, a
    /// host picture in `outputPixelFormat`. Layers whose track has no frame are left out.
    public func render(_ instruction: VideoCompositionInstruction, at time: MediaTime, sourceFrames: [Int: PixelBuffer],
                       into output: PixelBuffer) throws {
        guard output.pixelFormat == outputPixelFormat, !output.isSurfaceBacked else {
            throw MediaError(.invalidArgument, "the software compositor renders into \(outputPixelFormat) host pictures, not \(output.pixelFormat)")
        }
        let layers = instruction.layerInstructions.compactMap { layer -> Layer? in
            guard let frame = sourceFrames[layer.trackID] else { return nil }
            let opacity = layer.opacity(at: time)
            guard opacity > 0 else { return nil }
            return Layer(frame: frame, transform: layer.transform(at: time), opacity: opacity, crop: layer.cropRectangle(at: time))
        }
        let cover = layers.firstIndex { $0.coversOpaquely(width: output.width, height: output.height) }
        let drawn = try layers[..<(cover.map { $0 + 1 } ?? layers.count)].reversed().map { layer in
            var layer = layer
            layer.frame = try workingCopy(of: layer.frame)
            return layer
        }
        try output.withUnsafeMutablePlanes { outputPlanes in
            if cover == nil {
                for (index, (plane, value)) in zip(outputPlanes, backgroundSamples(instruction.backgroundColor)).enumerated() {
                    switch depth {
                    case .eightBit: CompositorKernels.fill(target(plane, UInt8.self, output, index), with: UInt8(value))
                    case .tenBit: CompositorKernels.fill(target(plane, UInt16.self, output, index), with: UInt16(value))
                    }
                }
            }
            for layer in drawn {
                try layer.frame.withUnsafePlanes { sourcePlanes in
                    for (index, (sourcePlane, outputPlane)) in zip(sourcePlanes, outputPlanes).enumerated() {
                        let scale = index == 0 ? 1.0 : 0.5
                        var transform = layer.transform
                        transform.tx *= scale
                        transform.ty *= scale
                        let width = planeWidth(index, of: layer.frame)
                        let crop = layer.crop.map { PlaneBox(x0: $0.x * scale, y0: $0.y * scale, x1: $0.maxX * scale, y1: $0.maxY * scale) }
                            ?? PlaneBox(x0: 0, y0: 0, x1: Double(width), y1: Double(sourcePlane.height))
                        switch depth {
                        case .eightBit:
                            CompositorKernels.draw(source(sourcePlane, UInt8.self, width), crop: crop, transform: transform,
                                                   opacity: layer.opacity, into: target(outputPlane, UInt8.self, output, index))
                        case .tenBit:
                            CompositorKernels.draw(source(sourcePlane, UInt16.self, width), crop: crop, transform: transform,
                                                   opacity: layer.opacity, into: target(outputPlane, UInt16.self, output, index))
                        }
                    }
                }
            }
        }
    }

    /// The background colour as Y', Cb, Cr samples: BT.709, limited range, at the output's depth.
    /// The colour is taken over black, so its alpha darkens it (the output has no alpha).
    func backgroundSamples(_ color: RGBAColor) -> [Int] {
        let alpha = min(max(color.alpha, 0), 1)
        let (r, g, b) = (min(max(color.red, 0), 1) * alpha, min(max(color.green, 0), 1) * alpha, min(max(color.blue, 0), 1) * alpha)
        let luma = 0.2126 * r + 0.7152 * g + 0.0722 * b
        let (blueDifference, redDifference) = ((b - luma) / 1.8556, (r - luma) / 1.5748)
        let unit = depth == .eightBit ? 1.0 : 4.0
        return [16 + 219 * luma, 128 + 224 * blueDifference, 128 + 224 * redDifference].map { Int(($0 * unit).rounded()) }
    }

    /// `frame` in host memory and the working format, converted only when it is not already.
    private func workingCopy(of frame: PixelBuffer) throws -> PixelBuffer {
        let host = try frame.transferredToHost()
        guard host.pixelFormat != outputPixelFormat else { return host }
        guard let from = PixelFormatID(host.pixelFormat), let to = PixelFormatID(outputPixelFormat) else {
            throw MediaError(.unsupported, "the software compositor cannot read \(host.pixelFormat) pictures")
        }
        let converted = try PixelBuffer(width: host.width, height: host.height, pixelFormat: outputPixelFormat)
        do {
            let scaler = try Scaler(from: host.width, host.height, from, to: host.width, host.height, to,
                                    sourceFullRange: host.colorProperties.fullRange, outputFullRange: false)
            try scaler.scale(host.frame, into: converted.frame)
        } catch {
            throw MediaError(.unsupported, "cannot convert a \(host.width)x\(host.height) \(host.pixelFormat) picture to \(outputPixelFormat)", underlying: error)
        }
        return converted
    }

    /// Samples across plane `index` of a 4:2:0 picture.
    private func planeWidth(_ index: Int, of picture: PixelBuffer) -> Int {
        index == 0 ? picture.width : (picture.width + 1) / 2
    }

    private func source<Sample: FixedWidthInteger & UnsignedInteger>(_ plane: PixelBuffer.Plane, _: Sample.Type, _ width: Int) -> SourcePlane<Sample> {
        SourcePlane(base: plane.baseAddress.assumingMemoryBound(to: Sample.self), stride: plane.bytesPerRow / MemoryLayout<Sample>.size,
                    width: width, height: plane.height)
    }

    private func target<Sample: FixedWidthInteger & UnsignedInteger>(_ plane: PixelBuffer.MutablePlane, _: Sample.Type, _ picture: PixelBuffer, _ index: Int) -> TargetPlane<Sample> {
        TargetPlane(base: plane.baseAddress.assumingMemoryBound(to: Sample.self), stride: plane.bytesPerRow / MemoryLayout<Sample>.size,
                    width: planeWidth(index, of: picture), height: plane.height)
    }

    /// One layer's source frame and its property values at the composition time.
    private struct Layer {
        var frame: PixelBuffer
        var transform: VideoTransform
        var opacity: Double
        var crop: Rect?

        /// True when the layer is an opaque integer translation whose (cropped) source covers
        /// the whole `width`×`height` picture: nothing under it shows.
        func coversOpaquely(width: Int, height: Int) -> Bool {
            let t = transform
            guard opacity >= 1, t.a == 1, t.b == 0, t.c == 0, t.d == 1, t.tx.rounded() == t.tx, t.ty.rounded() == t.ty else { return false }
            let whole = Rect(x: 0, y: 0, width: frame.width, height: frame.height)
            let area = crop.map { $0.intersection(whole) } ?? whole
            let box = PlaneBox(x0: area.x + t.tx, y0: area.y + t.ty, x1: area.maxX + t.tx, y1: area.maxY + t.ty)
            // Even edges keep the chroma planes an exact copy too, so no chroma sample is left undrawn.
            let halves = PlaneBox(x0: box.x0 / 2, y0: box.y0 / 2, x1: box.x1 / 2, y1: box.y1 / 2)
            return halves.isIntegral && width % 2 == 0 && height % 2 == 0
                && box.x0 <= 0 && box.y0 <= 0 && box.x1 >= Double(width) && box.y1 >= Double(height)
        }
    }
}

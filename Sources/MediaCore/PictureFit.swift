/// Where a picture goes when it is scaled into a frame of another size: the part of the
/// source that is read and the rectangle of the output that is written. Every scaler (the
/// reader's, the writer's, the device's video processor) places pictures by this one rule.
///
/// Aspect is the source's displayed one: `pixelAspect`-wide pixels, so anamorphic sources
/// come out with square pixels. Sizes and offsets are multiples of the alignment steps, so
/// subsampled chroma stays aligned (2 for 4:2:0 and 4:2:2, 1 for 4:4:4 and RGB).
public struct PictureFit: Equatable, Sendable {
    public enum Mode: Sendable, Equatable {
        /// Stretch the whole source over the whole output.
        case stretch
        /// Keep the aspect ratio inside the output, bars around it.
        case fit
        /// Keep the aspect ratio and fill the output, cropping the source's overflow.
        case fill
    }

    /// The part of the source read, in whole pixels.
    public var source: Rect
    /// Where it is written in the output, in whole pixels.
    public var output: Rect
    /// The output's whole size: where `output` is smaller, the rest is bars.
    public let outputWidth: Int
    public let outputHeight: Int

    /// True when the output has bars around the picture (paint them first).
    public var hasBars: Bool { output.pixelWidth != outputWidth || output.pixelHeight != outputHeight }

    /// The placement of a `sourceSize` picture of `pixelAspect`-wide pixels in an `outputSize`
    /// frame. `sourceStep` aligns the source crop, `outputStep` the output rectangle.
    public init(source sourceSize: Size, pixelAspect: Double = 1, output outputSize: Size, mode: Mode,
                sourceStep: (horizontal: Int, vertical: Int) = (2, 2), outputStep: (horizontal: Int, vertical: Int) = (2, 2)) {
        let (sourceWidth, sourceHeight) = (sourceSize.pixelWidth, sourceSize.pixelHeight)
        let (ow, oh) = (outputSize.pixelWidth, outputSize.pixelHeight)
        (outputWidth, outputHeight) = (ow, oh)
        let aspect = pixelAspect.isFinite && pixelAspect > 0 ? pixelAspect : 1
        let (sw, sh) = (Double(sourceWidth) * aspect, Double(sourceHeight))
        source = Rect(x: 0, y: 0, width: sourceWidth, height: sourceHeight)
        output = Rect(x: 0, y: 0, width: ow, height: oh)
        switch mode {
        case .stretch:
            break
        case .fit:
            let scale = min(Double(ow) / sw, Double(oh) / sh)
            let width = min(ow, Self.rounded(sw * scale, step: outputStep.horizontal))
            let height = min(oh, Self.rounded(sh * scale, step: outputStep.vertical))
            output = Rect(x: Self.floored((ow - width) / 2, step: outputStep.horizontal),
                          y: Self.floored((oh - height) / 2, step: outputStep.vertical), width: width, height: height)
        case .fill:
            let scale = max(Double(ow) / sw, Double(oh) / sh)
            let width = min(sourceWidth, Self.rounded(Double(ow) / scale / aspect, step: sourceStep.horizontal))
            let height = min(sourceHeight, Self.rounded(Double(oh) / scale, step: sourceStep.vertical))
            source = Rect(x: Self.floored((sourceWidth - width) / 2, step: sourceStep.horizontal),
                          y: Self.floored((sourceHeight - height) / 2, step: sourceStep.vertical), width: width, height: height)
        }
    }

    /// `value` rounded to the nearest multiple of `step`, at least one step.
    private static func rounded(_ value: Double, step: Int) -> Int {
        let s = max(step, 1)
        return max(s, Int((value / Double(s)).rounded()) * s)
    }

    private static func floored(_ value: Int, step: Int) -> Int {
        let s = max(step, 1)
        return value / s * s
    }
}

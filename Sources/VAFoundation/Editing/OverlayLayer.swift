import Foundation

/// One layer drawn over the composited video (the role of a `CALayer` added to the animation
/// tool's parent layer): an image, a line of text or a solid colour, placed by its `frame` in
/// render coordinates and blended with its opacity, both animatable.
///
/// Coordinates are the render picture's pixels with the origin at the top left and y down (Core
/// Animation's layers in the animation tool have y up: a `CALayer` at y from the bottom is here
/// at `renderSize.height − y`). `position` is the centre of the frame, as a `CALayer`'s
/// `position` is with its default anchor point; the layer is drawn at whole pixels (the top-left
/// corner rounded). Position and opacity are timelines with `VideoCompositionLayerInstruction`'s
/// semantics: a value set at t holds until the next change; a ramp interpolates linearly over its
/// time range and its end value holds after it; before the first change the static `frame` and
/// `opacity` apply.
public struct OverlayLayer: Sendable, Hashable {
    /// What a layer shows (a `CALayer`'s `contents`, a `CATextLayer`, a `backgroundColor`).
    public enum Content: Sendable, Hashable {
        /// A PNG or JPEG file, scaled to the frame; a PNG's alpha is kept.
        case image(URL)
        /// A single line of text drawn from the frame's top-left corner at `size` pixels with the
        /// font file given (TrueType/OpenType; nil uses DejaVu Sans), clipped to the frame.
        case text(String, fontFile: URL?, size: Double, colour: RGBAColor)
        /// The whole frame in one colour; its alpha multiplies the layer's opacity.
        case solid(RGBAColor)
    }

    /// What the layer shows.
    public var content: Content
    /// Where the layer is drawn before any position change, in render pixels (top-left origin);
    /// its size is the size the content is rasterised at.
    public var frame: Rect
    /// The layer's opacity (0 transparent … 1 opaque) before any opacity change.
    public var opacity: Double
    var positionTimeline = RampTimeline<Point>()
    var opacityTimeline = RampTimeline<Double>()

    /// A layer showing `content` in `frame` at `opacity`.
    public init(content: Content, frame: Rect, opacity: Double = 1) {
        self.content = content
        self.frame = frame
        self.opacity = opacity
    }

    /// A layer showing the image at `url` at its own pixel size with its top-left corner at
    /// `origin`; throws when the file cannot be opened as a picture.
    public init(image url: URL, origin: Point, opacity: Double = 1) throws(MediaError) {
        let size = try OverlayRenderer.imageSize(url)
        self.init(content: .image(url), frame: Rect(x: origin.x, y: origin.y, width: size.width, height: size.height), opacity: opacity)
    }

    /// The default font, DejaVu Sans from Debian's fonts-dejavu-core (Hardware/setup.sh installs it).
    public static let defaultFontFile = URL(fileURLWithPath: "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")

    // MARK: Animating

    /// Moves the layer's centre to `position` from `time` on (a `position` keyframe).
    public mutating func setPosition(_ position: Point, at time: MediaTime) {
        positionTimeline.set(position, at: time)
    }

    /// Moves the layer's centre linearly from `start` to `end` over `timeRange` (a
    /// `CABasicAnimation` of `position` with linear timing).
    public mutating func setPositionRamp(from start: Point, to end: Point, timeRange: MediaTimeRange) {
        positionTimeline.ramp(from: start, to: end, over: timeRange)
    }

    /// Sets the opacity from `time` on (an `opacity` keyframe).
    public mutating func setOpacity(_ opacity: Double, at time: MediaTime) {
        opacityTimeline.set(opacity, at: time)
    }

    /// Ramps the opacity linearly from `start` to `end` over `timeRange` (a `CABasicAnimation`
    /// of `opacity` with linear timing).
    public mutating func setOpacityRamp(from start: Double, to end: Double, timeRange: MediaTimeRange) {
        opacityTimeline.ramp(from: start, to: end, over: timeRange)
    }

    // MARK: Reading

    /// The layer's centre at `time`; the centre of `frame` before the first change.
    public func position(at time: MediaTime) -> Point {
        positionTimeline.value(at: time) ?? Point(x: frame.x + frame.width / 2, y: frame.y + frame.height / 2)
    }

    /// The layer's opacity at `time`, clamped to 0…1; `opacity` before the first change.
    public func opacity(at time: MediaTime) -> Double {
        min(max(opacityTimeline.value(at: time) ?? opacity, 0), 1)
    }

    /// Where the layer is drawn at `time`: `frame`'s size around `position(at:)`.
    public func frame(at time: MediaTime) -> Rect {
        let centre = position(at: time)
        return Rect(x: centre.x - frame.width / 2, y: centre.y - frame.height / 2, width: frame.width, height: frame.height)
    }
}

/// Layers drawn over the composited picture during export or reading, bottom to top: this
/// library's `AVVideoCompositionCoreAnimationTool`.
///
/// Apple's `videoCompositionCoreAnimationTool(withPostProcessingAsVideoLayer: videoLayer, in:
/// parentLayer)` renders the video into `videoLayer` and then the whole `parentLayer` tree. Here
/// the video layer is always the full render picture at the bottom, and `layers` are the parent
/// layer's other sublayers in the order they were added: set it as `VideoComposition.animationTool`.
/// The layers are drawn after the compositor, the software one or a custom one alike.
public struct VideoCompositionOverlayTool: Sendable, Hashable {
    /// The layers over the video, the first at the bottom.
    public var layers: [OverlayLayer]

    /// A tool drawing `layers` (the first at the bottom) over the video.
    public init(layers: [OverlayLayer]) {
        self.layers = layers
    }
}

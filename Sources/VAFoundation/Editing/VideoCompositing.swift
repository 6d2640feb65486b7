/// A renderer of composed video frames (`AVVideoCompositing`'s role): given one request, it draws
/// the instruction's layers from the source frames into a new picture. Called from one frame
/// loop at a time per request, but may be shared across tasks, hence `Sendable`.
public protocol VideoCompositing: Sendable {
    /// The pixel format the compositor works in: sources in it need no conversion (others are converted).
    var sourcePixelFormat: PixelFormat { get }
    /// The pixel format of the pictures the compositor returns; the render context's pool makes them.
    var outputPixelFormat: PixelFormat { get }
    /// Draws the frame `request` asks for and returns it (`finish(withComposedVideoFrame:)`);
    /// throwing is `finish(with:)`.
    func renderFrame(_ request: VideoCompositionRequest) throws -> PixelBuffer
}

/// Where composed frames go (`AVVideoCompositionRenderContext`): their size and a pool that
/// makes the pictures to draw into, so a frame loop does not allocate per frame.
public struct VideoCompositionRenderContext: Sendable {
    /// The size of the rendered pictures, in pixels.
    public let size: Size
    /// The pool the output pictures come from.
    public let pool: PixelBufferPool

    /// A context rendering `size` pictures in `pixelFormat`, from a pool of at most
    /// `maximumBufferCount` pictures. The size is rounded to whole pixels.
    public init(size: Size, pixelFormat: PixelFormat, maximumBufferCount: Int = 4) throws(MediaError) {
        guard size.width.isFinite, size.height.isFinite, (0.5..<65536).contains(size.width), (0.5..<65536).contains(size.height) else {
            throw MediaError(.invalidArgument, "render size \(size.width)x\(size.height) is not a picture size")
        }
        let width = Int(size.width.rounded()), height = Int(size.height.rounded())
        self.pool = try PixelBufferPool(width: width, height: height, pixelFormat: pixelFormat, maximumBufferCount: maximumBufferCount)
        self.size = Size(width: width, height: height)
    }

    /// A context drawing into `pool`'s pictures.
    public init(pool: PixelBufferPool) {
        self.pool = pool
        self.size = Size(width: pool.width, height: pool.height)
    }

    /// The pixel format of the pictures the pool makes.
    public var pixelFormat: PixelFormat { pool.pixelFormat }

    /// A picture to draw the composed frame into (`newPixelBuffer()`); its pixels are undefined.
    public func newPixelBuffer() throws(MediaError) -> PixelBuffer { try pool.makePixelBuffer() }
}

/// One frame to compose (`AVAsynchronousVideoCompositionRequest`): the time, the instruction in
/// effect then, the source frames of its tracks at that time, and where to render.
public struct VideoCompositionRequest: Sendable {
    /// The output time of the frame.
    public let compositionTime: MediaTime
    /// The instruction in effect at `compositionTime` (`videoCompositionInstruction`).
    public let instruction: VideoCompositionInstruction
    /// The size and pool of the output.
    public let renderContext: VideoCompositionRenderContext
    private let sourceFrames: [Int: PixelBuffer]

    /// A request for the frame at `compositionTime` from `sourceFrames`, keyed by track ID.
    public init(compositionTime: MediaTime, instruction: VideoCompositionInstruction, sourceFrames: [Int: PixelBuffer],
                renderContext: VideoCompositionRenderContext) {
        self.compositionTime = compositionTime
        self.instruction = instruction
        self.sourceFrames = sourceFrames
        self.renderContext = renderContext
    }

    /// The tracks with a source frame in this request (`sourceTrackIDs`), in ascending order.
    public var sourceTrackIDs: [Int] { sourceFrames.keys.sorted() }

    /// The source frame of `trackID` at the composition time, nil when the track has none there.
    public func sourceFrame(byTrackID trackID: Int) -> PixelBuffer? { sourceFrames[trackID] }
}

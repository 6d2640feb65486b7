import FFmpegSupport
import HardwareAcceleration

/// Composited pictures of several video tracks (`AVAssetReaderVideoCompositionOutput`): at
/// each picture of the `sourceTrackIDForFrameTiming` track, else at every `frameDuration` step
/// of the video composition, the picture each track shows then goes to the compositor with the
/// instruction in effect, and its result comes out.
// @unchecked: `videoComposition`, `customVideoCompositor` are set before reading starts and `pipeline`, `scaler` are used by the output's one consumer, serialised by its thread.
public final class AssetReaderVideoCompositionOutput: AssetReaderOutput, VideoDecodingOutput, @unchecked Sendable {
    public let videoTracks: [AssetTrack]
    /// The pixel format and size of the pictures that come out (`videoSettings`); nil keeps
    /// the compositor's working format at the render size.
    public let videoSettings: PixelBufferAttributes?
    /// Required before reading starts: the render size, frame duration and instructions.
    public nonisolated(unsafe) var videoComposition: VideoComposition?
    /// Draws each picture; nil uses `SoftwareCompositor` (8-bit, or 10-bit when a source is deeper).
    public nonisolated(unsafe) var customVideoCompositor: (any VideoCompositing)?

    /// Decode every track and draw the composition on this VA-API device (set before reading
    /// starts): the pictures come out as GPU surfaces (NV12, or P010 when a source is deeper).
    /// Frames its video processor cannot draw are drawn in host memory and come out there. A
    /// custom compositor or overlays (`animationTool`) draw in host memory, so they leave it unused.
    public nonisolated(unsafe) var hardwareDevice: VADevice?
    /// Told where pictures were decoded and composited, and of each copy (set by the export).
    nonisolated(unsafe) var observations: StageObservations?

    private nonisolated(unsafe) var pipeline: VideoCompositionPipeline?
    /// Converts the compositor's pictures to `videoSettings`, made for the first picture.
    private nonisolated(unsafe) var scaler: Scaler?

    /// An output compositing `videoTracks` (all of one asset or composition), its pictures in
    /// the compositor's working format at the render size.
    public convenience init(videoTracks: [AssetTrack]) throws {
        try self.init(videoTracks: videoTracks, videoSettings: nil)
    }

    /// An output compositing `videoTracks` into pictures of `videoSettings`' pixel format,
    /// stretched to its width and height when given
    /// (`assetReaderVideoCompositionOutputWithVideoTracks:videoSettings:`); nil keeps the
    /// compositor's working format at the render size. Throws `invalidArgument` for a pixel
    /// format FFmpeg does not know, a scaling mode other than `.resize`, or GPU surfaces.
    public init(videoTracks: [AssetTrack], videoSettings: PixelBufferAttributes?) throws {
        guard !videoTracks.isEmpty, videoTracks.allSatisfy({ $0.mediaType == .video }) else {
            throw MediaError(.invalidArgument, "a video composition output needs one or more video tracks")
        }
        if let settings = videoSettings {
            guard settings.pixelFormat != .vaapiSurface, PixelFormatID(settings.pixelFormat) != nil else {
                throw MediaError(.invalidArgument, "a video composition output cannot vend \(settings.pixelFormat) pictures")
            }
            guard settings.scalingMode == .resize else {
                throw MediaError(.invalidArgument, "a video composition output stretches its pictures (scaling mode resize), not \(settings.scalingMode)")
            }
        }
        self.videoTracks = videoTracks
        self.videoSettings = videoSettings
        super.init(mediaType: .video)
    }

    override var streamIndices: [Int] { videoTracks.map(\.streamIndex) }

    override func prepare(session: DemuxSession, timeRange: MediaTimeRange) throws(MediaError) {
        let composition = try checkedComposition(path: session.path)
        let device = self.device(for: composition)
        let inputs = try videoTracks.map { track throws(MediaError) -> VideoCompositionPipeline.Input in
            let attributes = PixelBufferAttributes(pixelFormat: device == nil ? Self.workingFormat(of: track) : .vaapiSurface)
            let pipeline = try VideoDecodePipeline(session: session, track: track, attributes: attributes, timeRange: timeRange,
                                                   device: device, observations: observations, decoderThreads: decoderThreadCount)
            return .init(trackID: track.trackID, pipeline: pipeline, isShowing: { $0 < track.timeRange.end })
        }
        pipeline = try VideoCompositionPipeline(inputs: inputs, composition: composition, compositor: compositor(),
                                                deviceCompositor: try deviceCompositor(on: device, for: composition),
                                                timeRange: timeRange, end: videoTracks.map(\.timeRange.end).max() ?? .zero, path: session.path)
    }

    override func prepare(composition tracks: [CompositionTrack], timeRange: MediaTimeRange) throws(MediaError) {
        let composition = try checkedComposition(path: "composition")
        let device = self.device(for: composition)
        let inputs = try videoTracks.map { track throws(MediaError) -> VideoCompositionPipeline.Input in
            guard let own = track.compositionTrack, let compositionTrack = tracks.first(where: { $0.trackID == own.trackID }) else {
                throw MediaError(.invalidArgument, "track \(track.trackID) is not a track of the composition being read", path: "composition")
            }
            let attributes = PixelBufferAttributes(pixelFormat: device == nil ? Self.workingFormat(of: track) : .vaapiSurface)
            let pipeline = try CompositionTrackPipeline(track: compositionTrack, media: .video(attributes), timeRange: timeRange,
                                                        picturesEmptySegments: false, device: device, observations: observations,
                                                        decoderThreads: decoderThreadCount)
            // A track shows nothing during its empty segments: the layers below (or the background) show.
            return .init(trackID: track.trackID, pipeline: pipeline, isShowing: { compositionTrack.segment(forTrackTime: $0)?.isEmpty == false })
        }
        pipeline = try VideoCompositionPipeline(inputs: inputs, composition: composition, compositor: compositor(),
                                                deviceCompositor: try deviceCompositor(on: device, for: composition), timeRange: timeRange,
                                                end: tracks.filter { $0.mediaType == .video }.map(\.timeRange.end).max() ?? .zero, path: "composition")
    }

    /// The device to decode and composite on: none for a custom compositor or overlays, which draw in host memory.
    private func device(for composition: VideoComposition) -> VADevice? {
        guard customVideoCompositor == nil, composition.animationTool?.layers.isEmpty ?? true else { return nil }
        return hardwareDevice
    }

    private func deviceCompositor(on device: VADevice?, for composition: VideoComposition) throws(MediaError) -> DeviceCompositor? {
        guard let device else { return nil }
        let deep = videoTracks.contains { ($0.formatDescription.video?.bitDepth ?? 8) > 8 }
        return try DeviceCompositor(device: device, width: Int(composition.renderSize.width.rounded()),
                                    height: Int(composition.renderSize.height.rounded()), deep: deep,
                                    capacity: VideoCompositionPipeline.renderPoolCapacity, observations: observations)
    }

    override func produceNext() throws(MediaError) -> SampleBuffer? {
        guard let sample = try pipeline?.next() else { return nil }
        guard let settings = videoSettings, let picture = sample.imageBuffer else { return sample }
        let converted = try self.converted(picture, to: settings)
        guard converted !== picture else { return sample }
        return SampleBuffer(pixelBuffer: converted, presentationTimeStamp: sample.presentationTimeStamp, duration: sample.duration)
    }

    /// `picture` in the settings' format and size, converted on the CPU only when it differs.
    private func converted(_ picture: PixelBuffer, to settings: PixelBufferAttributes) throws(MediaError) -> PixelBuffer {
        let (width, height) = (settings.width ?? picture.width, settings.height ?? picture.height)
        guard picture.pixelFormat != settings.pixelFormat || width != picture.width || height != picture.height else { return picture }
        do {
            let host = try picture.transferredToHost()
            guard let from = PixelFormatID(host.pixelFormat), let to = PixelFormatID(settings.pixelFormat) else {
                throw MediaError(.unsupported, "no conversion from \(host.pixelFormat) to \(settings.pixelFormat)")
            }
            let reusable = scaler.map { s in
                s.sourceWidth == host.width && s.sourceHeight == host.height && s.sourceFormat == from && s.outputWidth == width && s.outputHeight == height
            } ?? false
            if !reusable {
                scaler = try Scaler(from: host.width, host.height, from, to: width, height, to, sourceFullRange: host.colorProperties.fullRange)
            }
            let output = try PixelBuffer(width: width, height: height, pixelFormat: settings.pixelFormat)
            try scaler?.scale(host.frame, into: output.frame)
            return output
        } catch {
            throw MediaError(.unsupported, "cannot convert a \(picture.width)x\(picture.height) \(picture.pixelFormat) picture to \(width)x\(height) \(settings.pixelFormat)",
                             underlying: error)
        }
    }

    override func dropPipeline() {
        pipeline?.stop()
        pipeline = nil
    }

    private func checkedComposition(path: String) throws(MediaError) -> VideoComposition {
        guard let composition = videoComposition else {
            throw MediaError(.invalidArgument, "set the output's videoComposition before reading", path: path)
        }
        do { try composition.validate(forTrackIDs: Set(videoTracks.map(\.trackID)), timeRange: composition.coveredRange) } catch {
            throw MediaError(.invalidArgument, "the video composition is invalid: \(error)", path: path)
        }
        return composition
    }

    private func compositor() -> any VideoCompositing {
        customVideoCompositor ?? SoftwareCompositor(depth: videoTracks.contains { ($0.formatDescription.video?.bitDepth ?? 8) > 8 } ? .tenBit : .eightBit)
    }

    /// Pictures are decoded in the compositor's format at their own size: layer transforms
    /// are in the track's pixels.
    private static func workingFormat(of track: AssetTrack) -> PixelFormat {
        (track.formatDescription.video?.bitDepth ?? 8) > 8 ? .yuv420p10 : .yuv420p
    }
}

extension VideoComposition {
    /// The span the instructions cover, from the first start to the last end.
    var coveredRange: MediaTimeRange {
        let ranges = instructions.map(\.timeRange).filter(\.isValid)
        guard let start = ranges.map(\.start).min(), let end = ranges.map(\.end).max() else { return .invalid }
        return MediaTimeRange(start: start, end: end)
    }

    /// True when the composition can draw `timeRange` of `asset` (`isValidForAsset:timeRange:validationDelegate:`):
    /// its video tracks are the ones the layers name, and the instructions cover the range.
    /// `validate(forTrackIDs:timeRange:)` says why not.
    public func isValid(for asset: Asset, timeRange: MediaTimeRange) async -> Bool {
        guard let tracks = try? await asset.load(.tracks) else { return false }
        let video = tracks.filter { $0.mediaType == .video && !$0.isAttachedPicture }
        return isValid(forTrackIDs: Set(video.map(\.trackID)), timeRange: timeRange)
    }

    /// A video composition showing `asset`'s video tracks as a player would
    /// (`videoCompositionWithPropertiesOfAsset:`): Apple's rules for the render size, the frame
    /// duration and each track's transform.
    public static func videoComposition(withPropertiesOf asset: Asset) async throws -> VideoComposition {
        let (tracks, duration) = try await asset.load(.tracks, .duration)
        let video = tracks.filter { $0.mediaType == .video && !$0.isAttachedPicture }
        return videoComposition(withPropertiesOf: video.map(VideoCompositionSourceTrack.init(track:)), duration: duration)
    }
}

extension VideoCompositionSourceTrack {
    /// The facts of `track` a video composition takes.
    public init(track: AssetTrack) {
        self.init(trackID: track.trackID, naturalSize: track.naturalSize, preferredTransform: track.preferredTransform,
                  minFrameDuration: track.minFrameDuration, nominalFrameRate: track.nominalFrameRate)
    }
}

extension VideoCompositionLayerInstruction {
    /// A layer instruction for `track` (`videoCompositionLayerInstructionWithAssetTrack:`),
    /// starting from the identity transform as Apple's does.
    public init(assetTrack track: AssetTrack) { self.init(trackID: track.trackID) }

    /// A layer instruction for a composition's `track`.
    public init(assetTrack track: MutableCompositionTrack) { self.init(trackID: track.trackID) }
}

/// Steps through the composition's frame times; at each, takes the picture every track shows
/// and renders the instruction in effect.
final class VideoCompositionPipeline: TrackPipeline {
    struct Input {
        let trackID: Int
        let pipeline: TrackPipeline
        /// Whether the track shows anything at a time (false in its gaps and after its end).
        let isShowing: (MediaTime) -> Bool
        /// The latest picture at or before the current time, and the one after it.
        var current: SampleBuffer?
        var upcoming: SampleBuffer?
        var ended = false

        init(trackID: Int, pipeline: TrackPipeline, isShowing: @escaping (MediaTime) -> Bool) {
            self.trackID = trackID
            self.pipeline = pipeline
            self.isShowing = isShowing
        }
    }

    private var inputs: [Input]
    private let composition: VideoComposition
    private let compositor: any VideoCompositing
    /// The composition's `animationTool` layers, drawn over every picture after the compositor.
    private let overlays: OverlayRenderer?
    private let context: VideoCompositionRenderContext
    private let path: String
    private let end: MediaTime
    private var index: Int64 = 0
    private let start: MediaTime
    /// The input whose pictures time the output (`sourceTrackIDForFrameTiming`); nil steps
    /// through the composition by `frameDuration`.
    private let timingInput: Int?
    /// The last frame's time, and when the picture that timed it stops showing.
    private var previous: (time: MediaTime, until: MediaTime)?
    private let width: Int, height: Int

    /// Pictures the compositor renders into: the writer's queue and the encoder's look-ahead
    /// hold some while the next is drawn.
    static let renderPoolCapacity = PipelineBounds.compositionRenderPictures

    /// Draws on the device instead of `compositor`, when the output decodes there.
    private let deviceCompositor: DeviceCompositor?

    init(inputs: [Input], composition: VideoComposition, compositor: any VideoCompositing, deviceCompositor: DeviceCompositor? = nil,
         timeRange: MediaTimeRange, end: MediaTime, path: String) throws(MediaError) {
        self.inputs = inputs
        self.composition = composition
        self.compositor = compositor
        self.deviceCompositor = deviceCompositor
        self.path = path
        width = Int(composition.renderSize.width.rounded())
        height = Int(composition.renderSize.height.rounded())
        context = try VideoCompositionRenderContext(size: Size(width: width, height: height), pixelFormat: compositor.outputPixelFormat,
                                                    maximumBufferCount: Self.renderPoolCapacity)
        if let tool = composition.animationTool, !tool.layers.isEmpty {
            overlays = try OverlayRenderer(tool: tool, pixelFormat: compositor.outputPixelFormat)
        } else {
            overlays = nil
        }
        start = timeRange.start.isNumeric ? max(timeRange.start, .zero) : .zero
        timingInput = composition.sourceTrackIDForFrameTiming == 0 ? nil
            : inputs.firstIndex { $0.trackID == composition.sourceTrackIDForFrameTiming }
        let covered = composition.coveredRange.end
        let wanted = timeRange.end.isNumeric ? min(timeRange.end, end) : end
        self.end = covered.isNumeric ? min(wanted, covered) : wanted
    }

    func stop() {
        for input in inputs { input.pipeline.stop() }
    }

    func next() throws(MediaError) -> SampleBuffer? {
        let (time, duration) = try nextFrameTime()
        guard time < end else { return nil }
        previous = (time, time + duration)
        index += 1
        var frames: [Int: PixelBuffer] = [:]
        for i in inputs.indices {
            try advance(i, to: time)
            if let picture = inputs[i].current?.imageBuffer, inputs[i].isShowing(time) { frames[inputs[i].trackID] = picture }
        }
        guard let instruction = composition.instruction(at: time) else {
            throw MediaError(.invalidState, "no video composition instruction covers \(time.seconds) s", path: path)
        }
        let picture: PixelBuffer
        do {
            if let deviceCompositor {
                picture = try deviceCompositor.render(instruction, at: time, frames: frames)
            } else if let shown = passedThrough(instruction, at: time, frames: frames) {
                // Drawing would copy it unchanged: the decoded picture goes on as it is.
                picture = shown
            } else if let software = compositor as? SoftwareCompositor {
                // Past the pool's pictures (all queued for the encoder), a new one.
                let pooled = try? context.newPixelBuffer()
                let output = try pooled ?? PixelBuffer(width: width, height: height, pixelFormat: software.outputPixelFormat)
                try software.render(instruction, at: time, sourceFrames: frames, into: output)
                picture = output
            } else {
                picture = try compositor.renderFrame(VideoCompositionRequest(compositionTime: time, instruction: instruction,
                                                                             sourceFrames: frames, renderContext: context))
            }
        } catch {
            throw error as? MediaError ?? MediaError(.invalidState, "the compositor failed at \(time.seconds) s: \(error)", path: path)
        }
        try overlays?.draw(at: time, into: picture)
        var format = FormatDescription(mediaType: .video, codec: "rawvideo")
        let deep = picture.pixelFormat == .yuv420p10 || picture.frame.surfaceSoftwareFormat == .p010
        format.video = VideoFormat(width: picture.width, height: picture.height, pixelFormat: picture.pixelFormat.rawValue,
                                   bitDepth: deep ? 10 : 8)
        return SampleBuffer(content: .pixelBuffer(picture), packet: nil, codecParameters: nil, presentationTimeStamp: time,
                            decodeTimeStamp: .invalid, duration: duration, formatDescription: format,
                            attachments: SampleAttachments())
    }

    /// The one picture that makes the output by itself, when the software compositor would
    /// only copy it: a single visible layer, fully opaque, untransformed and uncropped, whose
    /// picture has the render size and format, with no overlays to draw on it (the decoder may
    /// still read it). Nil otherwise.
    private func passedThrough(_ instruction: VideoCompositionInstruction, at time: MediaTime, frames: [Int: PixelBuffer]) -> PixelBuffer? {
        guard overlays == nil, compositor is SoftwareCompositor else { return nil }
        let visible = instruction.layerInstructions.filter { frames[$0.trackID] != nil && $0.opacity(at: time) > 0 }
        guard visible.count == 1, let layer = visible.first, let picture = frames[layer.trackID],
              layer.opacity(at: time) >= 1, layer.transform(at: time) == .identity, layer.cropRectangle(at: time) == nil,
              picture.width == width, picture.height == height, picture.pixelFormat == compositor.outputPixelFormat,
              !picture.isSurfaceBacked else { return nil }
        return picture
    }

    /// When the next frame comes out, and how long it lasts. With a timing track, each of its
    /// pictures makes a frame at its own time, for its own duration; where it shows nothing for
    /// a whole `frameDuration` (a gap, or after its last picture) frames follow every
    /// `frameDuration`, as Apple's compositor fills an empty edit. Without one, the frames
    /// step through the composition every `frameDuration`. A time at or past `end` ends it.
    private func nextFrameTime() throws(MediaError) -> (time: MediaTime, duration: MediaTime) {
        let step = composition.frameDuration
        guard let timing = timingInput else { return (start + step * Int32(clamping: index), step) }
        let filled = previous?.until ?? start
        if let picture = try upcoming(timing), picture.presentationTimeStamp < filled + step {
            let time = previous == nil ? max(picture.presentationTimeStamp, start) : picture.presentationTimeStamp
            let shown = picture.duration.isNumeric && picture.duration > .zero ? picture.duration : step
            let until = picture.presentationTimeStamp + shown
            return (time, until > time ? until - time : step)
        }
        // A sliver shorter than half a frame (a container's duration rounded up past the
        // last picture's end) makes no frame of its own.
        guard (end - filled) * Int32(2) >= step else { return (end, step) }
        return (filled, step)
    }

    /// Track `i`'s next picture, after the one it shows now; nil once it has ended.
    private func upcoming(_ i: Int) throws(MediaError) -> SampleBuffer? {
        if inputs[i].upcoming == nil && !inputs[i].ended {
            if let sample = try inputs[i].pipeline.next() { inputs[i].upcoming = sample } else { inputs[i].ended = true }
        }
        return inputs[i].upcoming
    }

    /// Reads track `i` until its current picture is the last one starting at or before `time`.
    private func advance(_ i: Int, to time: MediaTime) throws(MediaError) {
        while let upcoming = try upcoming(i), upcoming.presentationTimeStamp <= time {
            inputs[i].current = upcoming
            inputs[i].upcoming = nil
        }
    }
}

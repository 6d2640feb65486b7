import Dispatch
import FFmpegSupport
import Foundation
import Synchronization
import HardwareAcceleration

/// Still images from an asset's video at given times (`AVAssetImageGenerator`'s role).
///
/// One decoder serves every request of a generator and is reused across times in order: a
/// time after the last decoded picture, in the same group of pictures, is reached by decoding
/// on; otherwise the demuxer seeks once, to the keyframe at or before it. A file is never
/// decoded from its start for each time. Decoding and scaling run on the CPU, or on a VA-API
/// device (`hardwareDevice`) with one download per image.
public final class AssetImageGenerator: Sendable {
    /// How much of the encoded picture makes the image.
    public enum ApertureMode: String, Sendable {
        /// The picture as displayed: non-square pixels are made square (the default).
        case cleanAperture
        /// As `cleanAperture` (files rarely carry a separate production aperture).
        case productionAperture
        /// The encoded pixels as they are, non-square pixels included.
        case encodedPixels
    }

    /// The outcome for one requested time of `images(for:)`.
    public enum Result: Sendable {
        case success(requestedTime: MediaTime, image: Image, actualTime: MediaTime)
        case failure(requestedTime: MediaTime, error: MediaError)

        public var requestedTime: MediaTime {
            switch self {
            case .success(let t, _, _), .failure(let t, _): t
            }
        }
    }

    /// Whether HDR pictures keep their range (`AVAssetImageGenerator.DynamicRangePolicy`).
    public enum DynamicRangePolicy: String, Sendable {
        /// PQ and HLG pictures are tone-mapped to SDR BT.709 (the default): an 8-bit image of
        /// an HDR picture looks right only after that.
        case forceSDR
        /// Pictures are converted as they are (HDR ones look washed out in 8-bit RGB).
        case matchSource
    }

    public let asset: Asset

    private struct Settings {
        var appliesPreferredTrackTransform = false
        var maximumSize: Size?
        var apertureMode = ApertureMode.cleanAperture
        var toleranceBefore = MediaTime.positiveInfinity
        var toleranceAfter = MediaTime.positiveInfinity
        var dynamicRangePolicy = DynamicRangePolicy.forceSDR
        var videoComposition: VideoComposition?
        var device: VADevice?
    }
    private let settings = Locked(Settings())
    /// Requests from before the latest `cancelAllImageGeneration()` are cancelled.
    private let generation = Atomic<Int>(0)
    /// The generator's own thread: the decoder and its position are confined to it.
    private let stage = StageThread(name: "vaf.images")
    /// One frame source per file and track read (a composition reads several), by "path#stream".
    private let sources = Locked<[String: FrameSourceBox]>([:])
    /// A file asset's tracks, once a blocking call inspected them.
    private let inspectedTracks = Locked<[AssetTrack]?>(nil)

    public init(asset: Asset) {
        self.asset = asset
    }

    /// Turns portrait phone clips upright (90° steps only, as AVFoundation). Default false.
    public var appliesPreferredTrackTransform: Bool {
        get { settings.withLock { $0.appliesPreferredTrackTransform } }
        set { settings.withLock { $0.appliesPreferredTrackTransform = newValue } }
    }

    /// The box images are fitted into, keeping their aspect; never upscaled. nil: full size.
    public var maximumSize: Size? {
        get { settings.withLock { $0.maximumSize } }
        set { settings.withLock { $0.maximumSize = newValue } }
    }

    public var apertureMode: ApertureMode {
        get { settings.withLock { $0.apertureMode } }
        set { settings.withLock { $0.apertureMode = newValue } }
    }

    /// How far before the requested time the image may be (default: infinite, so the nearest
    /// keyframe, which is fast). `.zero` with `requestedTimeToleranceAfter = .zero` gives the
    /// exact picture on screen at the time.
    public var requestedTimeToleranceBefore: MediaTime {
        get { settings.withLock { $0.toleranceBefore } }
        set { settings.withLock { $0.toleranceBefore = newValue } }
    }

    /// HDR to SDR or not (default `.forceSDR`).
    public var dynamicRangePolicy: DynamicRangePolicy {
        get { settings.withLock { $0.dynamicRangePolicy } }
        set { settings.withLock { $0.dynamicRangePolicy = newValue } }
    }

    /// Images show this composition of the asset's video tracks at each time (exactly: the
    /// tolerances do not apply), drawn as an export would draw it. Nil: the first video track.
    public var videoComposition: VideoComposition? {
        get { settings.withLock { $0.videoComposition } }
        set { settings.withLock { $0.videoComposition = newValue } }
    }

    /// Decodes and scales on this VA-API device (set before the first image): the picture is
    /// fitted to the image's size by the device's video processor and downloaded once, at that
    /// size. A stream the device cannot decode is decoded in software; HDR pictures to tone-map
    /// are downloaded at full size and tone-mapped on the CPU. Nil (the default): the CPU only.
    public var hardwareDevice: VADevice? {
        get { settings.withLock { $0.device } }
        set { settings.withLock { $0.device = newValue } }
    }

    /// How far after the requested time the image may be (default: infinite).
    public var requestedTimeToleranceAfter: MediaTime {
        get { settings.withLock { $0.toleranceAfter } }
        set { settings.withLock { $0.toleranceAfter = newValue } }
    }

    /// The image for `time` and the time of the picture it shows.
    public func image(at time: MediaTime) async throws -> (image: Image, actualTime: MediaTime) {
        let started = generation.load(ordering: .acquiring)
        let track = try await videoTrack()
        return try await withLockedThrowingContinuation { continuation in
            stage.async {
                continuation.resume(with: Swift.Result { try self.generate(at: time, track: track, generation: started) })
            }
        }
    }

    /// `image(at:)` for callers that may block (the guide's `copyCGImageAtTime:actualTime:error:`).
    public func copyImage(at time: MediaTime) throws -> (image: Image, actualTime: MediaTime) {
        let started = generation.load(ordering: .acquiring)
        let track = try Self.videoTrack(in: try blockingTracks(), path: asset.displayPath)
        return try stage.sync { try generate(at: time, track: track, generation: started) }
    }

    /// One result per time, in the order given. Cancelling the consuming task, or
    /// `cancelAllImageGeneration()`, makes the rest `cancelled` failures.
    public func images(for times: [MediaTime]) -> AsyncStream<Result> {
        let started = generation.load(ordering: .acquiring)
        return AsyncStream { continuation in
            let work = Task {
                let track: AssetTrack
                do { track = try await videoTrack() } catch {
                    let failure = error as? MediaError ?? MediaError(.decodeFailed, "\(error)", path: asset.displayPath)
                    for time in times { continuation.yield(.failure(requestedTime: time, error: failure)) }
                    continuation.finish()
                    return
                }
                for time in times {
                    let result: Result
                    if Task.isCancelled {
                        result = .failure(requestedTime: time, error: MediaError(.cancelled, "image generation was cancelled", path: asset.displayPath))
                    } else {
                        do {
                            let (image, actual) = try await withLockedThrowingContinuation { c in
                                stage.async { c.resume(with: Swift.Result { try self.generate(at: time, track: track, generation: started) }) }
                            }
                            result = .success(requestedTime: time, image: image, actualTime: actual)
                        } catch {
                            result = .failure(requestedTime: time, error: error as? MediaError ?? MediaError(.decodeFailed, "\(error)", path: asset.displayPath))
                        }
                    }
                    continuation.yield(result)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in work.cancel() }
        }
    }

    /// Cancels every request not yet done: each ends with a `cancelled` error.
    public func cancelAllImageGeneration() {
        generation.add(1, ordering: .releasing)
    }

    // MARK: Generating (on `stage`)

    /// The track images are made from: the first enabled video track that is not cover art.
    private func videoTrack() async throws -> AssetTrack {
        try Self.videoTrack(in: try await asset.load(.tracks), path: asset.displayPath)
    }

    private static func videoTrack(in tracks: [AssetTrack], path: String) throws(MediaError) -> AssetTrack {
        guard let track = tracks.first(where: { $0.mediaType == .video && $0.isEnabled && !$0.isAttachedPicture })
            ?? tracks.first(where: { $0.mediaType == .video && !$0.isAttachedPicture }) else {
            throw MediaError(.noTracks, "the asset has no video track to make images from", path: path)
        }
        return track
    }

    private func generate(at time: MediaTime, track: AssetTrack, generation started: Int) throws -> (image: Image, actualTime: MediaTime) {
        stage.preconditionIsCurrent()
        guard generation.load(ordering: .acquiring) == started else {
            throw MediaError(.cancelled, "image generation was cancelled", path: asset.displayPath)
        }
        guard time.isNumeric else { throw MediaError(.invalidArgument, "the requested time is not numeric", path: asset.displayPath) }
        let s = settings.withLock { $0 }
        if let composition = s.videoComposition {
            return try composited(composition, at: time, box: s.maximumSize)
        }
        var rotation = 0
        if s.appliesPreferredTrackTransform {
            let degrees = track.preferredTransform.rotationDegrees
            if degrees % 90 == 0 { rotation = degrees }
        }
        guard let compositionTrack = track.compositionTrack else {
            let frames = try frameSource(path: asset.displayPath, track: track)
            let (frame, actual) = try frames.picture(at: time, before: s.toleranceBefore, after: s.toleranceAfter)
            let image = try frames.converter.image(from: frame, box: s.maximumSize, rotation: rotation, squarePixels: s.apertureMode != .encodedPixels,
                                                   toSDR: s.dynamicRangePolicy == .forceSDR)
            return (image.rotated(clockwise: rotation), actual)
        }
        // A composition: the segment on screen at `time` (the last one past the end), read
        // from its source within the segment's own range, the time carried both ways.
        let end = compositionTrack.timeRange.end
        guard let segment = compositionTrack.segment(forTrackTime: min(time, end - MediaTime(value: 1, timescale: 90000)))
            ?? compositionTrack.segments.first else {
            throw MediaError(.noTracks, "the composition's video track is empty", path: asset.displayPath)
        }
        let target = segment.targetRange
        guard !segment.isEmpty, let sourceTrack = segment.sourceTrack, let path = sourceTrack.sourcePath else {
            let size = (asset as? Composition)?.naturalSize ?? .zero
            return (try Image.black(fitting: size, in: s.maximumSize), max(target.start, min(time, target.end)))
        }
        let sourceRange = segment.timeMapping.source
        let sourceTime = MediaTimeRange.mapTime(min(max(time, target.start), target.end), from: target, to: sourceRange)
        // The tolerances stop at the segment's edges: a picture outside it is not on screen then.
        let before = min(s.toleranceBefore, sourceTime - sourceRange.start)
        let after = min(s.toleranceAfter, sourceRange.end - MediaTime(value: 1, timescale: 90000) - sourceTime)
        let frames = try frameSource(path: path, track: sourceTrack)
        let (frame, actual) = try frames.picture(at: sourceTime, before: max(before, .zero), after: max(after, .zero))
        let image = try frames.converter.image(from: frame, box: s.maximumSize, rotation: rotation, squarePixels: s.apertureMode != .encodedPixels,
                                               toSDR: s.dynamicRangePolicy == .forceSDR)
        let shown = MediaTimeRange.mapTime(max(actual, sourceRange.start), from: sourceRange, to: target)
        return (image.rotated(clockwise: rotation), shown.isNumeric ? min(shown, target.end) : target.start)
    }

    /// The video composition's picture at `time`: a reader draws the one frame there.
    private func composited(_ composition: VideoComposition, at time: MediaTime, box: Size?) throws -> (image: Image, actualTime: MediaTime) {
        let video = try blockingTracks().filter { $0.mediaType == .video && !$0.isAttachedPicture }
        let reader = AssetReader(asset: asset)
        reader.timeRange = MediaTimeRange(start: time, duration: composition.frameDuration)
        let output = try AssetReaderVideoCompositionOutput(videoTracks: video)
        output.videoComposition = composition
        try reader.add(output)
        try reader.startReading()
        defer { reader.cancelReading() }
        guard let sample = try output.copyNextSampleBuffer(), let picture = sample.imageBuffer else {
            throw MediaError(.decodeFailed, "the video composition drew no picture at \(time.seconds) s", path: asset.displayPath)
        }
        let image = try RGBConverter(path: asset.displayPath).image(from: picture.frame, box: box, rotation: 0, squarePixels: false, toSDR: false)
        return (image, sample.presentationTimeStamp)
    }

    /// The asset's tracks for callers that block: a composition's as they are now, a file's
    /// inspected once and kept (not once per image).
    private func blockingTracks() throws -> [AssetTrack] {
        if let composition = asset as? Composition {
            return composition.tracks.compactMap { Composition.assetTrack(for: $0, size: composition.naturalSize) }
        }
        if let known = inspectedTracks.withLock({ $0 }) { return known }
        let tracks = try AssetInspector.inspect(path: asset.displayPath, options: asset.options).tracks
        inspectedTracks.withLock { $0 = tracks }
        return tracks
    }

    private func frameSource(path: String, track: AssetTrack) throws -> FrameSource {
        let key = "\(path)#\(track.streamIndex)"
        if let box = sources.withLock({ $0[key] }) { return box.source }
        let opened = path == asset.displayPath ? asset.inspectedDemuxer.take() : nil
        let made = try FrameSource(path: path, track: track, device: settings.withLock { $0.device }, opened: opened)
        sources.withLock { $0[key] = FrameSourceBox(source: made) }
        return made
    }
}

/// Holds the generator's frame source; it is used only on the generator's thread.
private final class FrameSourceBox: @unchecked Sendable {
    // @unchecked: the source is reached only from the generator's thread (checked there).
    let source: FrameSource
    init(source: FrameSource) { self.source = source }
}

/// The demuxer and decoder of an asset's first enabled video track, with where decoding stands.
private final class FrameSource {
    let track: AssetTrack
    let path: String
    private let demuxer: Demuxer
    private let decoder: Decoder
    private let stream: Int
    private let timeBase: Rational
    /// Keyframe decode times from the container's index (empty for MPEG-TS).
    private let keyframes: [Int64]
    /// The last picture decoded (a candidate for the next request), and one decoded past it.
    private var current: Frame?
    private var lookahead: Frame?
    private var endOfStream = false
    /// Turns the pictures into RGB images.
    let converter: RGBConverter

    /// Surfaces a device decoder keeps beyond its references: the current and look-ahead
    /// pictures, and the one being scaled.
    static let extraHardwareFrames = 4

    /// Reads `track` of `path`, from `opened` when given (a demuxer of that file), else from a new one.
    init(path: String, track: AssetTrack, device: VADevice?, opened: Demuxer? = nil) throws {
        self.path = path
        self.track = track
        converter = RGBConverter(path: path, device: device)
        stream = track.streamIndex
        if let opened {
            demuxer = opened
        } else {
            do { demuxer = try Demuxer(path: path) } catch { throw AssetInspector.openFailure(error, path: path) }
        }
        demuxer.selectStreams([stream])
        timeBase = demuxer.streams[stream].timeBase
        keyframes = demuxer.indexEntries(ofStream: stream).filter(\.isKeyframe).map(\.timestamp).sorted()
        do {
            decoder = try Decoder(parameters: try demuxer.codecParameters(ofStream: stream), timeBase: timeBase, hardware: device?.hardware,
                                  extraHardwareFrames: device == nil ? 0 : Self.extraHardwareFrames)
        } catch {
            throw MediaError(.unsupported, "cannot decode the video track \(track.trackID)", path: path, underlying: error)
        }
    }

    private func ticks(_ t: MediaTime) -> Int64 {
        timeBase.ticks(of: t) ?? 0
    }

    private func mediaTime(_ ticks: Int64) -> MediaTime {
        timeBase.time(ofTicks: ticks)
    }

    /// The picture for `time` within the tolerances, and its presentation time.
    func picture(at time: MediaTime, before: MediaTime, after: MediaTime) throws -> (Frame, MediaTime) {
        let target = ticks(time)
        let earliest = before.isPositiveInfinity ? Int64.min / 2 : target - ticks(before)
        let latest = after.isPositiveInfinity ? Int64.max / 2 : target + ticks(after)
        // A keyframe inside the tolerance is the fast answer: the nearest one. Index times are
        // decode times, and seeking goes by presentation time: any time short of the next
        // keyframe's decode time lands on this one.
        if let i = keyframes.indices.filter({ keyframes[$0] >= earliest && keyframes[$0] <= latest })
            .min(by: { abs(keyframes[$0] - target) < abs(keyframes[$1] - target) }) {
            try seek(to: i + 1 < keyframes.count ? max(keyframes[i], keyframes[i + 1] - 1) : Int64.max / 2)
            if let frame = try nextFrame() {
                current = frame
                return (frame, mediaTime(pts(frame)))
            }
        }
        // Otherwise the picture on screen at the earliest acceptable time: decode on from where
        // the decoder stands when no keyframe lies between, else seek once (to the keyframe
        // at or before the goal, by presentation time). With no bound before the time (the
        // default) and no keyframe known near it (a transport stream has no index), that is
        // the picture on screen at the time itself, not the file's first.
        let goal = before.isPositiveInfinity ? target : earliest
        let keyframeBefore = keyframes.last { $0 <= goal }
        let position = current.map(pts)
        let decodesOn = position.map { p in
            p <= goal && (keyframeBefore.map { p >= $0 } ?? (goal - p < ticks(MediaTime(value: 5, timescale: 1))))
        } ?? false
        var shown: Frame? = decodesOn ? current : nil
        // Seeking by time lands on the packet at the goal, not on a keyframe, where a file has no
        // index (MPEG-TS): the decoder then shows nothing before the next keyframe. Seek again
        // further back, 1 s, 4 s, 16 s, 64 s, then from the track's start, until a picture at
        // or before the goal decodes.
        let first = ticks(track.timeRange.start)
        var backoff = ticks(MediaTime(value: 1, timescale: 1))
        var from: Int64? = decodesOn ? nil : goal
        repeat {
            if let from { try seek(to: from) }
            while let frame = try nextFrame() {
                if pts(frame) > goal {
                    lookahead = frame
                    break
                }
                shown = frame
            }
            guard shown == nil, let last = from, last > first, keyframes.isEmpty else { break }
            from = backoff > ticks(MediaTime(value: 64, timescale: 1)) ? first : max(goal - backoff, first)
            backoff *= 4
        } while true
        // Before the first picture: the first one. Past the last: the last one.
        let picture: Frame
        if let shown {
            picture = shown
        } else if let first = lookahead {
            picture = first
            lookahead = nil
        } else {
            throw MediaError(.decodeFailed, "no picture could be decoded at \(time.seconds) s", path: path)
        }
        current = picture
        return (picture, mediaTime(pts(picture)))
    }

    private func pts(_ frame: Frame) -> Int64 { frame.bestEffortTimestamp ?? frame.pts ?? 0 }

    /// Seeks to the keyframe shown at or before `time` (stream ticks, presentation time); in a
    /// file without an index (MPEG-TS), to its first byte for a time at or before the track's
    /// start, which a search by time there can overshoot.
    private func seek(to time: Int64) throws {
        do {
            let rewound = keyframes.isEmpty && time <= ticks(track.timeRange.start) && (try? demuxer.rewind()) != nil
            if !rewound { try demuxer.seek(stream: stream, toKeyframeAtOrBefore: time) }
        } catch {
            throw MediaError(.corruptOrTruncated, "cannot seek to \(mediaTime(time).seconds) s", path: path, underlying: error)
        }
        decoder.flush()
        current = nil
        lookahead = nil
        endOfStream = false
    }

    /// The next decoded picture, nil at the end of the stream. Damaged packets are skipped.
    private func nextFrame() throws -> Frame? {
        if let frame = lookahead {
            lookahead = nil
            return frame
        }
        let packet = Packet()
        while true {
            switch try? decoder.receiveFrame() {
            case .frame(let frame): return frame
            case .endOfStream: return nil
            case .needsInput, nil: break
            }
            if endOfStream { return nil }
            packet.reset()
            let read: Demuxer.ReadResult
            do { read = try demuxer.readPacket(into: packet) } catch { read = .endOfFile }
            if read == .endOfFile {
                endOfStream = true
                try? decoder.sendEndOfStream()
                continue
            }
            guard packet.streamIndex == stream else { continue }
            _ = try? decoder.send(packet)
        }
    }

}

/// Turns decoded pictures into RGB images: HDR ones tone-mapped to SDR when asked, fitted in a
/// box on their displayed aspect, with one scaler reused while the pictures stay alike. A GPU
/// surface is fitted by the device's video processor and downloaded once, at the image's size.
private final class RGBConverter {
    let path: String
    private let device: VADevice?
    private var scaler: Scaler?
    private var surfaceCompositor: SurfaceCompositor?

    init(path: String, device: VADevice? = nil) {
        self.path = path
        self.device = device
    }

    /// `frame` scaled into RGB, fitted in `box` (never upscaled) on its displayed aspect.
    func image(from picture: Frame, box: Size?, rotation: Int, squarePixels: Bool, toSDR: Bool) throws -> Image {
        let size = Self.size(of: picture, box: box, rotation: rotation, squarePixels: squarePixels)
        let (width, height) = (size.pixelWidth, size.pixelHeight)
        var frame = picture
        if let layout = picture.surfaceSoftwareFormat {
            let hdr = picture.colorTransfer.map { ColorProperties.isHDR(transfer: $0) } ?? false
            do {
                // Tone mapping runs on the CPU: the whole picture comes down. Else the device fits it first.
                frame = toSDR && hdr ? try picture.transferToHost() : try fittedOnDevice(picture, layout: layout, width: width, height: height)
            } catch {
                throw MediaError(.hardwareFailed, "cannot \(toSDR && hdr ? "download" : "scale") a \(picture.width)x\(picture.height) surface on the device",
                                 path: path, underlying: error)
            }
        }
        if toSDR { frame = try toneMapped(frame) }
        return try image(from: frame, width: width, height: height)
    }

    /// The image's size: the picture on its displayed aspect (when `squarePixels`), fitted in
    /// `box` as shown after `rotation` (a quarter-turn count in degrees), never upscaled.
    private static func size(of frame: Frame, box: Size?, rotation: Int, squarePixels: Bool) -> Size {
        let aspect = squarePixels ? frame.pixelAspect : 1
        var (w, h) = (Double(frame.width) * aspect, Double(frame.height))
        if let box {
            // The box applies to the image as shown, after a quarter turn.
            let (bw, bh) = rotation % 180 == 0 ? (box.width, box.height) : (box.height, box.width)
            let scale = min(1, bw / w, bh / h)
            (w, h) = (w * scale, h * scale)
        }
        return Size(width: max(1, Int(w.rounded())), height: max(1, Int(h.rounded())))
    }

    /// `surface` scaled by the device's video processor to `width`×`height` at the top left of a
    /// surface with even sides (as 4:2:0 surfaces need), downloaded (the one copy to host memory
    /// per image) and cropped to the picture.
    private func fittedOnDevice(_ surface: Frame, layout: PixelFormatID, width: Int, height: Int) throws -> Frame {
        let (w, h) = (width + width % 2, height + height % 2)
        if surfaceCompositor.map({ $0.output.width != w || $0.output.height != h || $0.output.softwareFormat != layout }) ?? true {
            guard let device else { return try surface.transferToHost() }
            // Two surfaces: the one downloading and the next being drawn.
            surfaceCompositor = try SurfaceCompositor(output: try SurfacePool(device: device.hardware, width: w, height: h, softwareFormat: layout, capacity: 2))
        }
        let layer = SurfaceLayer(source: surface, sourceRegion: Rect(x: 0, y: 0, width: surface.width, height: surface.height),
                                 outputRegion: Rect(x: 0, y: 0, width: width, height: height))
        let scaled = try surfaceCompositor!.draw([layer], background: 0xff00_0000, outputFullRange: surface.isFullRange == true)
        scaled.isFullRange = surface.isFullRange
        return try scaled.transferToHost().cropped(to: Rect(x: 0, y: 0, width: width, height: height))
    }

    /// A host `frame` converted to RGB at `width`×`height`.
    private func image(from frame: Frame, width: Int, height: Int) throws -> Image {
        do {
            let output = try Frame(width: width, height: height, pixelFormat: Image.rgb24)
            let full = frame.isFullRange ?? frame.pixelFormat.impliesFullRange
            if scaler == nil || scaler!.sourceWidth != frame.width || scaler!.sourceHeight != frame.height
                || scaler!.sourceFormat != frame.pixelFormat || scaler!.outputWidth != width || scaler!.outputHeight != height
                || scaler!.sourceFullRange != full {
                scaler = try Scaler(from: frame.width, frame.height, frame.pixelFormat, to: width, height, Image.rgb24, sourceFullRange: full)
            }
            try scaler!.scale(frame, into: output)
            var pixels = [UInt8](repeating: 0, count: width * height * 3)
            pixels.withUnsafeMutableBytes { target in
                guard let base = output.baseAddress(plane: 0), let to = target.baseAddress else { return }
                let stride = output.bytesPerRow(plane: 0)
                for row in 0..<height { (to + row * width * 3).copyMemory(from: base + row * stride, byteCount: width * 3) }
            }
            return try Image(width: width, height: height, pixels: pixels)
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.unsupported, "cannot convert a \(frame.width)x\(frame.height) \(frame.pixelFormat) picture to RGB", path: path,
                             underlying: error as? FFmpegError)
        }
    }

    /// `frame` tone-mapped to SDR BT.709 when it is PQ or HLG (the reader's recipe,
    /// `PictureFilters.toneMappingChain`); other pictures as they are.
    private func toneMapped(_ frame: Frame) throws -> Frame {
        guard let transfer = frame.colorTransfer, ColorProperties.isHDR(transfer: transfer) else { return frame }
        let description = PictureFilters.toneMappingChain(input: "tin=\(transfer):pin=\(frame.colorPrimaries ?? "bt2020"):min=\(frame.colorMatrix ?? "bt2020nc")",
                                                           target: ColorProperties(primaries: "bt709", transfer: "bt709", matrix: "bt709"),
                                                           outputTransfer: "bt709", format: "yuv420p")
        do {
            let graph = try FilterGraph(description, width: frame.width, height: frame.height, pixelFormat: frame.pixelFormat,
                                        timeBase: Rational(1, 90000), pixelAspect: frame.sampleAspectRatio)
            try graph.push(frame)
            try graph.pushEndOfStream()
            while true {
                switch try graph.pull() {
                case .frame(let mapped): return mapped
                case .needsInput, .endOfStream:
                    throw MediaError(.decodeFailed, "tone mapping gave no picture", path: path)
                }
            }
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.unsupported, "cannot tone-map a \(transfer) picture to SDR", path: path, underlying: error as? FFmpegError)
        }
    }
}

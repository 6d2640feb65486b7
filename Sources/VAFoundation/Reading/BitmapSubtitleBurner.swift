import FFmpegSupport
import HardwareAcceleration

/// The device whose video processor draws subtitle layers, and the smallest picture its
/// pipeline takes in (Intel's takes 16x16 and up): a smaller cue is uploaded padded.
struct SubtitleLayerDevice {
    let hardware: HardwareDeviceContext
    let minimumInput: Size?
}

/// Draws a bitmap subtitle track (PGS, VobSub, DVB) into a video track's 4:2:0 pictures, each
/// picture at its own time in the file, where ffmpeg's `[0:v][0:s]overlay` puts it: every
/// subtitle's pictures at their place on the subtitle canvas, unscaled, from its start until its
/// end or the next subtitle. Colours are converted with the picture's own matrix (BT.709 for HD,
/// as PGS is authored; ffmpeg's overlay uses BT.601 for every picture). The subtitle stream is
/// read by a demuxer of its own, one subtitle ahead of the pictures, so nothing is queued however
/// far apart the subtitles are.
///
/// Host pictures are blended in place. VA surfaces are drawn over by the device's video
/// processor, the subtitle a layer above the picture (as compositions draw theirs): its pictures
/// are uploaded once, as one premultiplied RGBA surface, and the pictures never leave the device.
/// Confined to the reader's decode stage: it is made there, on the first picture it draws into.
final class BitmapSubtitleBurner {
    private var demuxer: Demuxer
    private let decoder: BitmapSubtitleDecoder
    private let streamIndex: Int
    private let packet = Packet()
    /// The subtitle on screen (the latest started), and the next one, read ahead.
    private var current: BitmapSubtitle?
    private var upcoming: BitmapSubtitle?
    private var ended = false
    /// Packets the decoder refused (their times, microseconds), and why reading stopped early.
    private var refused: [Int64] = []
    private var readFailure: FFmpegError?
    /// `current`'s pictures rasterised for the pictures' depth, made on first use.
    private var rasters: (tenBit: Bool, matrix: OverlayRaster.LumaCoefficients, layers: [(x: Int, y: Int, raster: OverlayRaster)])?
    /// `current`'s pictures on the device, made on first use: the surface and where it goes on the canvas.
    private var uploaded: (surface: Frame, region: Rect, pictureWidth: Int, pictureHeight: Int)?
    /// The RGBA surfaces subtitles are uploaded into, kept while they are of one size.
    private var uploadPool: SurfacePool?
    /// Draws the subtitle layer over surfaces, into surfaces of the pictures' size and layout.
    private var compositor: SurfaceCompositor?
    /// How far before the first picture the subtitle stream is first read from: a subtitle
    /// shown then may have started before. When the first subtitle found starts after the
    /// picture, the reading starts twice as far back, until the file's start.
    static let lookBehind: Int64 = 30_000_000

    /// Opens `path` again for its stream `streamIndex`, reading from where the subtitle on screen
    /// at `firstPicture` (microseconds on the demuxer's timeline) started; the seeks go by
    /// `seekStream`'s index (the video's), which every container indexes and MPEG-TS times.
    init(path: String, streamIndex: Int, seekStream: Int, firstPicture: Int64) throws(MediaError) {
        do {
            demuxer = try Demuxer(path: path)
            guard streamIndex < demuxer.streams.count, seekStream < demuxer.streams.count else {
                throw MediaError(.invalidArgument, "the file has no stream \(streamIndex) to burn subtitles from", path: path)
            }
            let stream = demuxer.streams[streamIndex]
            decoder = try BitmapSubtitleDecoder(source: try demuxer.codecParameters(ofStream: streamIndex), timeBase: stream.timeBase)
        } catch let error as MediaError {
            throw error
        } catch let error as FFmpegError {
            throw MediaError(.unsupported, "cannot read subtitle stream \(streamIndex) to burn it in", path: path, underlying: error)
        } catch {
            throw MediaError(.invalidState, "cannot read subtitle stream \(streamIndex) to burn it in", path: path, underlying: error)
        }
        self.streamIndex = streamIndex
        demuxer.selectStreams([streamIndex])
        var behind = Self.lookBehind
        // A demuxer just opened reads from the file's first byte.
        guard firstPicture - behind > 0 else { return }
        while true {
            let from = firstPicture - behind
            // From the start, where no seek is needed or none works.
            guard from > 0, seek(to: from, by: seekStream) else {
                try rewind()
                return
            }
            upcoming = try readSubtitle()
            guard let first = upcoming else {
                // None from here to the end: one on screen began earlier still.
                try rewind()
                return
            }
            // The subtitle on screen at the first picture started at or before it: found.
            if first.start <= firstPicture { return }
            (upcoming, ended) = (nil, false)
            behind *= 2
        }
    }

    /// Seeks to the keyframe of `seekStream` at or before `time` (microseconds), reading the
    /// subtitle stream alone from there; false when the container cannot seek there.
    private func seek(to time: Int64, by seekStream: Int) -> Bool {
        // Every stream is read while seeking: MPEG-TS seeks by reading the seek stream's times.
        demuxer.selectStreams(Set(demuxer.streams.map(\.index)))
        defer { demuxer.selectStreams([streamIndex]) }
        let microseconds = Rational(1, 1_000_000)
        return (try? demuxer.seek(stream: seekStream, toKeyframeAtOrBefore: microseconds.rescale(time, to: demuxer.streams[seekStream].timeBase))) != nil
    }

    /// Reads the subtitle stream from the file's first byte, with a demuxer opened afresh: no
    /// seek reaches it in every container (MPEG-TS lands on the first keyframe, after cues
    /// stored before it; Matroska cannot seek by byte).
    private func rewind() throws(MediaError) {
        (upcoming, ended) = (nil, false)
        do { demuxer = try Demuxer(path: demuxer.path) } catch {
            throw MediaError(.unsupported, "cannot read subtitle stream \(streamIndex) to burn it in", path: demuxer.path, underlying: error)
        }
        demuxer.selectStreams([streamIndex])
    }

    /// Blends the subtitle on screen at `time` (microseconds on the demuxer's timeline) into
    /// `frame`, a yuv420p (or yuvj420p) or yuv420p10 picture, made writable first: a decoded
    /// picture may still be a reference of its decoder.
    func draw(into frame: Frame, at time: Int64) throws(MediaError) {
        guard let shown = try subtitle(at: time) else { return }
        let tenBit: Bool
        switch frame.pixelFormat.name ?? "" {
        case "yuv420p", "yuvj420p": tenBit = false
        case "yuv420p10le": tenBit = true
        default:
            throw MediaError(.invalidState, "bitmap subtitles are drawn into yuv420p or yuv420p10le pictures, not \(frame.pixelFormat)",
                             path: demuxer.path)
        }
        let matrix = Self.matrix(of: frame)
        if rasters?.tenBit != tenBit || rasters?.matrix != matrix {
            rasters = (tenBit, matrix, shown.rects.map { rect in
                (rect.x, rect.y, rect.rgba.withUnsafeBytes { bytes in
                    OverlayRaster(rgba: bytes.baseAddress!, bytesPerRow: rect.width * 4, width: rect.width, height: rect.height,
                                  premultiplied: false, tenBit: tenBit, matrix: matrix)
                })
            })
        }
        do { try frame.makeWritable() } catch {
            throw MediaError(.invalidState, "cannot copy a picture to draw subtitles into it", path: demuxer.path, underlying: error)
        }
        let planes = (0..<3).compactMap { plane -> PixelBuffer.MutablePlane? in
            guard let base = frame.baseAddress(plane: plane) else { return nil }
            let rows = plane == 0 ? frame.height : (frame.height + 1) / 2
            return PixelBuffer.MutablePlane(baseAddress: base, bytesPerRow: frame.bytesPerRow(plane: plane), height: rows)
        }
        guard planes.count == 3 else { return }
        for layer in rasters?.layers ?? [] {
            if tenBit {
                OverlayRenderer.blend(layer.raster, x: layer.x, y: layer.y, opacity: 1, planes: planes, width: frame.width,
                                      height: frame.height, maximum: 1023, UInt16.self)
            } else {
                OverlayRenderer.blend(layer.raster, x: layer.x, y: layer.y, opacity: 1, planes: planes, width: frame.width,
                                      height: frame.height, maximum: 255, UInt8.self)
            }
        }
    }

    /// `surface` with the subtitle on screen at `time` (microseconds on the demuxer's timeline)
    /// drawn over it by `device`'s video processor: a new surface of its size and layout, or
    /// `surface` itself when none is on screen.
    func draw(over surface: Frame, at time: Int64, on device: SubtitleLayerDevice) throws(MediaError) -> Frame {
        guard let shown = try subtitle(at: time) else { return surface }
        guard let layout = surface.surfaceSoftwareFormat else {
            throw MediaError(.invalidState, "the video processor draws subtitles over VA surfaces, not \(surface.pixelFormat) pictures",
                             path: demuxer.path)
        }
        let (width, height) = (surface.width, surface.height)
        let matrix = Self.matrix(of: surface) == .bt601 ? "smpte170m" : "bt709"
        do {
            if uploaded?.pictureWidth != width || uploaded?.pictureHeight != height {
                uploaded = try upload(shown, on: device, pictureWidth: width, pictureHeight: height)
            }
            guard let uploaded, let placement = Self.placement(of: uploaded.region, width: width, height: height) else { return surface }
            if let current = compositor?.output, current.width == width, current.height == height, current.softwareFormat == layout {} else {
                let pool = try SurfacePool(device: device.hardware, width: width, height: height, softwareFormat: layout,
                                           capacity: PipelineBounds.readerSurfaces)
                compositor = try SurfaceCompositor(output: pool)
            }
            let whole = Rect(x: 0, y: 0, width: width, height: height)
            // The picture is taken in the matrix its subtitles are converted with, so that it is copied unchanged.
            let drawn = try compositor!.draw([
                SurfaceLayer(source: surface, sourceRegion: whole, outputRegion: whole, sourceMatrix: matrix),
                SurfaceLayer(source: uploaded.surface, sourceRegion: placement.source, outputRegion: placement.output,
                             blendsByPremultipliedAlpha: true),
            ], background: 0xff00_0000, outputMatrix: matrix, outputFullRange: surface.isFullRange == true)
            drawn.isFullRange = surface.isFullRange
            return drawn
        } catch {
            throw MediaError(.hardwareFailed, String(format: "the video processor failed to draw the subtitles at %.3f s", Double(time) / 1_000_000),
                             path: demuxer.path, underlying: error)
        }
    }

    /// `subtitle`'s pictures as one RGBA surface of their bounding box on the canvas (padded
    /// with transparent pixels to what the pipeline takes on a `pictureWidth`×`pictureHeight`
    /// picture), colours premultiplied by their alpha, as the video processor blends them.
    private func upload(_ subtitle: BitmapSubtitle, on device: SubtitleLayerDevice, pictureWidth: Int,
                        pictureHeight: Int) throws(FFmpegError) -> (surface: Frame, region: Rect, pictureWidth: Int, pictureHeight: Int) {
        let left = subtitle.rects.map(\.x).min()!, top = subtitle.rects.map(\.y).min()!
        let right = subtitle.rects.map { $0.x + $0.width }.max()!, bottom = subtitle.rects.map { $0.y + $0.height }.max()!
        let region = Self.layerRegion(of: Rect(x: left, y: top, width: right - left, height: bottom - top),
                                      pictureWidth: pictureWidth, pictureHeight: pictureHeight, minimum: device.minimumInput)
        let (regionX, regionY, regionWidth, regionHeight) = (region.pixelX, region.pixelY, region.pixelWidth, region.pixelHeight)
        let host = try Frame(width: regionWidth, height: regionHeight, pixelFormat: .rgba)
        host.isFullRange = true
        guard let base = host.baseAddress(plane: 0)?.assumingMemoryBound(to: UInt8.self) else {
            throw FFmpegError(code: .outOfMemory, function: "BitmapSubtitleBurner.upload (no picture memory)")
        }
        let stride = host.bytesPerRow(plane: 0)
        for row in 0..<regionHeight { (base + row * stride).initialize(repeating: 0, count: regionWidth * 4) }
        for rect in subtitle.rects {
            for y in 0..<rect.height {
                let line = base + (rect.y - regionY + y) * stride + (rect.x - regionX) * 4
                for x in 0..<rect.width {
                    let i = (y * rect.width + x) * 4
                    let alpha = UInt32(rect.rgba[i + 3])
                    // Over what an earlier rectangle put there: PGS windows do not overlap, so this is rare.
                    guard alpha > 0 else { continue }
                    for c in 0..<3 { line[x * 4 + c] = UInt8((UInt32(rect.rgba[i + c]) * alpha + 127) / 255) }
                    line[x * 4 + 3] = UInt8(alpha)
                }
            }
        }
        if let pool = uploadPool, pool.width == regionWidth, pool.height == regionHeight {} else {
            uploadPool = try SurfacePool(device: device.hardware, width: regionWidth, height: regionHeight, softwareFormat: .rgba, capacity: 2)
        }
        return (try uploadPool!.upload(host), region, pictureWidth, pictureHeight)
    }

    /// The canvas region a subtitle's surface covers: its pictures' `box`, grown to hold a
    /// window of the pipeline's `minimum` input size that lies on the picture, so that what the
    /// video processor reads is never smaller than it takes.
    static func layerRegion(of box: Rect, pictureWidth: Int, pictureHeight: Int, minimum: Size?) -> Rect {
        let (boxX, boxY, boxWidth, boxHeight) = (box.pixelX, box.pixelY, box.pixelWidth, box.pixelHeight)
        let width = min(minimum?.pixelWidth ?? 1, pictureWidth), height = min(minimum?.pixelHeight ?? 1, pictureHeight)
        let x = min(max(boxX, 0), max(pictureWidth - width, 0)), y = min(max(boxY, 0), max(pictureHeight - height, 0))
        let left = min(boxX, x), top = min(boxY, y)
        let right = max(boxX + boxWidth, x + width), bottom = max(boxY + boxHeight, y + height)
        return Rect(x: left, y: top, width: right - left, height: bottom - top)
    }

    /// Where `region` of the canvas falls on a `width`×`height` picture: the part of the
    /// uploaded surface shown, and where it goes, unscaled; nil when none of it falls there.
    static func placement(of region: Rect, width: Int, height: Int) -> (source: Rect, output: Rect)? {
        let (x, y) = (region.pixelX, region.pixelY)
        let x0 = max(x, 0), y0 = max(y, 0)
        let x1 = min(x + region.pixelWidth, width), y1 = min(y + region.pixelHeight, height)
        guard x1 > x0, y1 > y0 else { return nil }
        return (Rect(x: x0 - x, y: y0 - y, width: x1 - x0, height: y1 - y0), Rect(x: x0, y: y0, width: x1 - x0, height: y1 - y0))
    }

    /// The matrix a picture's subtitles are converted with: its own, as its decoder states it
    /// or, unstated, by its height.
    static func matrix(of frame: Frame) -> OverlayRaster.LumaCoefficients {
        switch frame.colorMatrix {
        case "smpte170m", "bt470bg": .bt601
        case nil: frame.height < 720 ? .bt601 : .bt709
        default: .bt709
        }
    }

    /// The subtitle with pictures on screen at `time`, nil for none.
    private func subtitle(at time: Int64) throws(MediaError) -> BitmapSubtitle? {
        try advance(to: time)
        guard let shown = current, !shown.rects.isEmpty, shown.end.map({ time < $0 }) ?? true else { return nil }
        return shown
    }

    /// Reads subtitles until the one after `time` is known: the latest started by then is on screen.
    private func advance(to time: Int64) throws(MediaError) {
        while true {
            if upcoming == nil, !ended { upcoming = try readSubtitle() }
            guard let next = upcoming, next.start <= time else { return }
            current = next
            (rasters, uploaded) = (nil, nil)
            upcoming = nil
        }
    }

    /// The next subtitle the stream completes, nil at its end. A packet the decoder refuses is
    /// passed over and counted, as ffmpeg goes on past a damaged subtitle.
    private func readSubtitle() throws(MediaError) -> BitmapSubtitle? {
        while true {
            let result: Demuxer.ReadResult
            do { result = try demuxer.readPacket(into: packet) } catch {
                // A damaged tail ends the subtitles, not the pictures.
                readFailure = error
                ended = true
                return nil
            }
            guard result == .packet else {
                ended = true
                return nil
            }
            guard packet.streamIndex == streamIndex else { continue }
            do {
                guard let subtitle = try decoder.decode(packet) else { continue }
                return subtitle
            } catch {
                let timeBase = demuxer.streams[streamIndex].timeBase
                refused.append(packet.pts.map { timeBase.rescale($0, to: Rational(1, 1_000_000)) } ?? -1)
            }
        }
    }

    /// What went wrong reading the burnt subtitles, in words; nil when nothing did. Read once
    /// the pictures are done.
    var damageReport: String? {
        var parts: [String] = []
        if let first = refused.first {
            let at = first >= 0 ? String(format: " (the first at %.3f s)", Double(first) / 1_000_000) : ""
            parts.append("\(refused.count) damaged subtitle packet\(refused.count == 1 ? "" : "s") of stream \(streamIndex) not drawn\(at)")
        }
        if let readFailure {
            parts.append("the subtitles of stream \(streamIndex) stopped early: \(readFailure.message) (\(readFailure.function))")
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }
}

import FFmpegSupport
import Foundation

/// One overlay layer rasterised once in the working Y'CbCr (BT.709, limited range, at the output's
/// depth): premultiplied Y', Cb, Cr and the alpha (0…1) of every pixel, at the layer's frame size.
struct OverlayRaster {
    let width: Int, height: Int
    var luma: [Float], blue: [Float], red: [Float], alpha: [Float]

    /// The raster of an RGBA picture, straight or premultiplied (drawtext's output is the latter).
    init(rgba frame: Frame, premultiplied: Bool, tenBit: Bool) {
        guard let base = frame.baseAddress(plane: 0) else {
            self.init(colour: RGBAColor(red: 0, green: 0, blue: 0, alpha: 0), width: frame.width, height: frame.height, tenBit: tenBit)
            return
        }
        self.init(rgba: UnsafeRawPointer(base), bytesPerRow: frame.bytesPerRow(plane: 0), width: frame.width, height: frame.height,
                  premultiplied: premultiplied, tenBit: tenBit)
    }

    /// The raster of `width`×`height` RGBA pixels at `base`, rows `bytesPerRow` apart, in the
    /// Y'CbCr of `matrix` (BT.709 unless the pictures drawn into are BT.601's).
    init(rgba base: UnsafeRawPointer, bytesPerRow stride: Int, width: Int, height: Int, premultiplied: Bool, tenBit: Bool,
         matrix: LumaCoefficients = .bt709) {
        (self.width, self.height) = (width, height)
        let count = width * height
        (luma, blue, red, alpha) = (.init(repeating: 0, count: count), .init(repeating: 0, count: count),
                                    .init(repeating: 0, count: count), .init(repeating: 0, count: count))
        for y in 0..<height {
            let row = (base + y * stride).assumingMemoryBound(to: UInt8.self)
            for x in 0..<width {
                let a = Double(row[4 * x + 3]) / 255
                let scale = premultiplied ? 1.0 / 255 : a / 255
                set(y * width + x, red: Double(row[4 * x]) * scale, green: Double(row[4 * x + 1]) * scale,
                    blue: Double(row[4 * x + 2]) * scale, alpha: a, tenBit: tenBit, matrix: matrix)
            }
        }
    }

    /// A `width`×`height` raster of one straight-alpha colour.
    init(colour: RGBAColor, width: Int, height: Int, tenBit: Bool) {
        (self.width, self.height) = (width, height)
        let a = min(max(colour.alpha, 0), 1)
        let channel = { (value: Double) in min(max(value, 0), 1) * a }
        (luma, blue, red, alpha) = ([0], [0], [0], [0])
        set(0, red: channel(colour.red), green: channel(colour.green), blue: channel(colour.blue), alpha: a, tenBit: tenBit)
        (luma, blue, red, alpha) = (.init(repeating: luma[0], count: width * height), .init(repeating: blue[0], count: width * height),
                                    .init(repeating: red[0], count: width * height), .init(repeating: alpha[0], count: width * height))
    }

    /// Stores pixel `i` from premultiplied R'G'B' (0…1) and its alpha, with `matrix` (BT.709 by
    /// default) and the limited-range scaling `SoftwareCompositor.backgroundSamples` uses.
    private mutating func set(_ i: Int, red r: Double, green g: Double, blue b: Double, alpha a: Double, tenBit: Bool,
                              matrix: LumaCoefficients = .bt709) {
        let unit = tenBit ? 4.0 : 1.0
        let l = matrix.red * r + (1 - matrix.red - matrix.blue) * g + matrix.blue * b
        luma[i] = Float(unit * (16 * a + 219 * l))
        blue[i] = Float(unit * (128 * a + 224 * (b - l) / (2 - 2 * matrix.blue)))
        red[i] = Float(unit * (128 * a + 224 * (r - l) / (2 - 2 * matrix.red)))
        alpha[i] = Float(a)
    }

    /// The red and blue weights of luma in a Y'CbCr matrix.
    struct LumaCoefficients: Equatable {
        var red: Double, blue: Double
        static let bt709 = LumaCoefficients(red: 0.2126, blue: 0.0722)
        static let bt601 = LumaCoefficients(red: 0.299, blue: 0.114)
    }
}

/// Draws a `VideoCompositionOverlayTool`'s layers over 4:2:0 pictures, bottom to top. Every layer
/// is rasterised when the renderer is made (images decoded and text drawn once per distinct
/// content and size); each picture then only blends: `out = layer·opacity + out·(1 − alpha·opacity)`
/// in premultiplied Y'CbCr, each chroma sample taking the average of its 2×2 luma pixels.
final class OverlayRenderer {
    private let layers: [(layer: OverlayLayer, raster: OverlayRaster)]
    private let tenBit: Bool
    let pixelFormat: PixelFormat

    /// A renderer drawing `tool`'s layers into `pixelFormat` pictures (`yuv420p` or `yuv420p10`).
    init(tool: VideoCompositionOverlayTool, pixelFormat: PixelFormat) throws(MediaError) {
        guard pixelFormat == .yuv420p || pixelFormat == .yuv420p10 else {
            throw MediaError(.unsupported, "overlay layers are drawn into yuv420p or yuv420p10 pictures, not \(pixelFormat)")
        }
        self.pixelFormat = pixelFormat
        let tenBit = pixelFormat == .yuv420p10
        self.tenBit = tenBit
        var cache: [CacheKey: OverlayRaster] = [:]
        var layers: [(layer: OverlayLayer, raster: OverlayRaster)] = []
        for layer in tool.layers {
            guard !layer.frame.isEmpty, layer.frame.width.isFinite, layer.frame.height.isFinite else { continue }
            let key = CacheKey(content: layer.content, width: max(1, Int(layer.frame.width.rounded())),
                               height: max(1, Int(layer.frame.height.rounded())))
            if let raster = cache[key] {
                layers.append((layer, raster))
                continue
            }
            let raster: OverlayRaster
            switch layer.content {
            case .solid(let colour):
                raster = OverlayRaster(colour: colour, width: key.width, height: key.height, tenBit: tenBit)
            case .image(let url):
                raster = OverlayRaster(rgba: try Self.decodeImage(url, width: key.width, height: key.height), premultiplied: false, tenBit: tenBit)
            case .text(let text, let font, let size, let colour):
                raster = OverlayRaster(rgba: try Self.drawText(text, font: font ?? OverlayLayer.defaultFontFile, size: size, colour: colour,
                                                               width: key.width, height: key.height),
                                       premultiplied: true, tenBit: tenBit)
            }
            cache[key] = raster
            layers.append((layer, raster))
        }
        self.layers = layers
    }

    private struct CacheKey: Hashable {
        let content: OverlayLayer.Content
        let width: Int, height: Int
    }

    /// Blends every layer visible at `time` into `picture`, in place.
    func draw(at time: MediaTime, into picture: PixelBuffer) throws(MediaError) {
        guard picture.pixelFormat == pixelFormat, !picture.isSurfaceBacked else {
            throw MediaError(.invalidArgument, "overlay layers are drawn into \(pixelFormat) host pictures, not \(picture.pixelFormat)")
        }
        let visible = layers.compactMap { entry -> (raster: OverlayRaster, frame: Rect, opacity: Float)? in
            let opacity = entry.layer.opacity(at: time)
            return opacity > 0 ? (entry.raster, entry.layer.frame(at: time), Float(opacity)) : nil
        }
        guard !visible.isEmpty else { return }
        do {
            try picture.withUnsafeMutablePlanes { planes in
                for layer in visible {
                    let x = Int(layer.frame.x.rounded()), y = Int(layer.frame.y.rounded())
                    if tenBit {
                        Self.blend(layer.raster, x: x, y: y, opacity: layer.opacity, planes: planes, width: picture.width,
                                   height: picture.height, maximum: 1023, UInt16.self)
                    } else {
                        Self.blend(layer.raster, x: x, y: y, opacity: layer.opacity, planes: planes, width: picture.width,
                                   height: picture.height, maximum: 255, UInt8.self)
                    }
                }
            }
        } catch {
            throw error as? MediaError ?? MediaError(.invalidState, "cannot draw the overlay layers", underlying: error)
        }
    }

    /// Blends `raster` with its top-left corner at (`ox`, `oy`) into the three planes of a
    /// `width`×`height` 4:2:0 picture; what falls outside the picture is clipped.
    static func blend<Sample: FixedWidthInteger & UnsignedInteger>(
        _ raster: OverlayRaster, x ox: Int, y oy: Int, opacity: Float, planes: [PixelBuffer.MutablePlane],
        width: Int, height: Int, maximum: Float, _: Sample.Type) {
        let store = { (value: Float) in Sample(min(max(value.rounded(), 0), maximum)) }
        let luma = planes[0]
        for y in max(oy, 0)..<max(min(oy + raster.height, height), max(oy, 0)) {
            let row = (luma.baseAddress + y * luma.bytesPerRow).assumingMemoryBound(to: Sample.self)
            let offset = (y - oy) * raster.width - ox
            for x in max(ox, 0)..<max(min(ox + raster.width, width), max(ox, 0)) {
                let a = raster.alpha[offset + x] * opacity
                guard a > 0 else { continue }
                row[x] = store(raster.luma[offset + x] * opacity + Float(row[x]) * (1 - a))
            }
        }
        let (chromaWidth, chromaHeight) = ((width + 1) / 2, (height + 1) / 2)
        let floorHalf = { (v: Int) in v >= 0 ? v / 2 : (v - 1) / 2 }
        let (cx0, cy0) = (max(floorHalf(ox), 0), max(floorHalf(oy), 0))
        let (cx1, cy1) = (min(floorHalf(ox + raster.width + 1), chromaWidth), min(floorHalf(oy + raster.height + 1), chromaHeight))
        guard cx0 < cx1, cy0 < cy1 else { return }
        let (cbPlane, crPlane) = (planes[1], planes[2])
        for cy in cy0..<cy1 {
            let cbRow = (cbPlane.baseAddress + cy * cbPlane.bytesPerRow).assumingMemoryBound(to: Sample.self)
            let crRow = (crPlane.baseAddress + cy * crPlane.bytesPerRow).assumingMemoryBound(to: Sample.self)
            for cx in cx0..<cx1 {
                var (alpha, blue, red): (Float, Float, Float) = (0, 0, 0)
                for ry in (2 * cy - oy)...(2 * cy + 1 - oy) where ry >= 0 && ry < raster.height {
                    for rx in (2 * cx - ox)...(2 * cx + 1 - ox) where rx >= 0 && rx < raster.width {
                        let i = ry * raster.width + rx
                        alpha += raster.alpha[i]
                        blue += raster.blue[i]
                        red += raster.red[i]
                    }
                }
                guard alpha > 0 else { continue }
                let a = alpha / 4 * opacity
                cbRow[cx] = store(blue / 4 * opacity + Float(cbRow[cx]) * (1 - a))
                crRow[cx] = store(red / 4 * opacity + Float(crRow[cx]) * (1 - a))
            }
        }
    }

    // MARK: Rasterising

    /// The pixel size of the image file at `url`, as its demuxer states it.
    static func imageSize(_ url: URL) throws(MediaError) -> Size {
        do {
            let demuxer = try Demuxer(path: url.path)
            guard let stream = demuxer.streams.first(where: { $0.kind == .video }) else {
                throw MediaError(.notMediaFile, "the overlay image has no picture", path: url.path)
            }
            let parameters = try demuxer.codecParameters(ofStream: stream.index)
            guard parameters.width > 0, parameters.height > 0 else {
                throw MediaError(.notMediaFile, "the overlay image has no picture size", path: url.path)
            }
            return Size(width: parameters.width, height: parameters.height)
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.decodeFailed, "cannot read the overlay image", path: url.path, underlying: error)
        }
    }

    /// The first picture of the image file at `url` (PNG, JPEG: libavformat's image2 demuxer and
    /// libavcodec's decoders), scaled by libswscale to `width`×`height` straight-alpha RGBA.
    static func decodeImage(_ url: URL, width: Int, height: Int) throws(MediaError) -> Frame {
        do {
            let demuxer = try Demuxer(path: url.path)
            guard let stream = demuxer.streams.first(where: { $0.kind == .video }) else {
                throw MediaError(.notMediaFile, "the overlay image has no picture", path: url.path)
            }
            let decoder = try Decoder(parameters: try demuxer.codecParameters(ofStream: stream.index), timeBase: stream.timeBase, threadCount: 1)
            let packet = Packet()
            var ended = false
            var decoded: Frame?
            decoding: while true {
                switch try decoder.receiveFrame() {
                case .frame(let frame):
                    decoded = frame
                    break decoding
                case .endOfStream:
                    break decoding
                case .needsInput:
                    guard !ended else { break decoding }
                    switch try demuxer.readPacket(into: packet) {
                    case .endOfFile:
                        try decoder.sendEndOfStream()
                        ended = true
                    case .packet:
                        if packet.streamIndex == stream.index { _ = try decoder.send(packet) }
                    }
                }
            }
            guard let picture = decoded else { throw MediaError(.decodeFailed, "the overlay image decoded to no picture", path: url.path) }
            let rgba = try Frame(width: width, height: height, pixelFormat: .rgba)
            let scaler = try Scaler(from: picture.width, picture.height, picture.pixelFormat, to: width, height, .rgba)
            try scaler.scale(picture, into: rgba)
            return rgba
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.decodeFailed, "cannot read the overlay image", path: url.path, underlying: error)
        }
    }

    /// `text` drawn by libavfilter's `drawtext` from the top-left corner of a transparent
    /// `width`×`height` RGBA canvas; the result is premultiplied (drawtext blends every channel).
    static func drawText(_ text: String, font: URL, size: Double, colour: RGBAColor, width: Int, height: Int) throws(MediaError) -> Frame {
        let byte = { (value: Double) in String(format: "%02X", Int((min(max(value, 0), 1) * 255).rounded())) }
        let hex = "0x" + byte(colour.red) + byte(colour.green) + byte(colour.blue) + byte(colour.alpha)
        let description = "drawtext=fontfile=\(filterArgument(font.path)):text=\(filterArgument(text)):fontsize=\(size)"
            + ":fontcolor=\(hex):x=0:y=0:expansion=none"
        do {
            let graph = try FilterGraph(description, width: width, height: height, pixelFormat: .rgba, timeBase: Rational(1, 1))
            let canvas = try Frame(width: width, height: height, pixelFormat: .rgba)
            if let base = canvas.baseAddress(plane: 0) {
                base.initializeMemory(as: UInt8.self, repeating: 0, count: canvas.bytesPerRow(plane: 0) * height)
            }
            canvas.pts = 0
            try graph.push(canvas)
            try graph.pushEndOfStream()
            while true {
                switch try graph.pull() {
                case .frame(let frame): return frame
                case .needsInput, .endOfStream:
                    throw MediaError(.invalidState, "drawtext gave no picture for the overlay text \"\(text)\"")
                }
            }
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.unsupported, "cannot draw the overlay text \"\(text)\" with \(font.path)", path: font.path, underlying: error)
        }
    }

    /// `value` escaped for a filter option inside a filter graph description: once for the
    /// option parser (`\ ' :`), then again for the graph parser (`\ ' [ ] , ;`).
    static func filterArgument(_ value: String) -> String {
        func escape(_ string: String, _ special: Set<Character>) -> String {
            string.reduce(into: "") { result, character in
                if special.contains(character) { result.append("\\") }
                result.append(character)
            }
        }
        return escape(escape(value, ["\\", "'", ":"]), ["\\", "'", "[", "]", ",", ";"])
    }
}

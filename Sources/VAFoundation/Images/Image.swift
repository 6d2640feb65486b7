import FFmpegSupport
import Foundation

/// A still picture in 8-bit RGB, as the image generator makes it (`CGImage`'s role): pixel
/// access, and PNG or JPEG data through libavcodec's own image encoders.
public struct Image: Sendable, Equatable {
    public let width: Int
    public let height: Int
    /// Row after row of `width` pixels, three bytes each (red, green, blue), no padding.
    public let pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) throws(MediaError) {
        guard width > 0, height > 0, pixels.count == width * height * 3 else {
            throw MediaError(.invalidArgument, "an image of \(width)x\(height) needs \(max(width, 0) * max(height, 0) * 3) bytes of RGB, not \(pixels.count)")
        }
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The red, green and blue values at (`x`, `y`), from the top left.
    public func pixel(x: Int, y: Int) -> (red: UInt8, green: UInt8, blue: UInt8) {
        let i = (y * width + x) * 3
        return (pixels[i], pixels[i + 1], pixels[i + 2])
    }

    /// The mean of BT.709 luma over the picture, 0…255.
    public var meanLuma: Double {
        var sum = 0.0
        for i in stride(from: 0, to: pixels.count, by: 3) {
            sum += 0.2126 * Double(pixels[i]) + 0.7152 * Double(pixels[i + 1]) + 0.0722 * Double(pixels[i + 2])
        }
        return sum / Double(width * height)
    }

    /// The picture turned clockwise by `degrees` (0, 90, 180 or 270).
    public func rotated(clockwise degrees: Int) -> Image {
        let turns = ((degrees % 360) + 360) % 360 / 90
        guard turns != 0 else { return self }
        let (w, h) = turns == 2 ? (width, height) : (height, width)
        var out = [UInt8](repeating: 0, count: pixels.count)
        for y in 0..<height {
            for x in 0..<width {
                let (nx, ny) = switch turns {
                case 1: (height - 1 - y, x)
                case 2: (width - 1 - x, height - 1 - y)
                default: (y, width - 1 - x)
                }
                let from = (y * width + x) * 3, to = (ny * w + nx) * 3
                out[to] = pixels[from]
                out[to + 1] = pixels[from + 1]
                out[to + 2] = pixels[from + 2]
            }
        }
        // The sizes and counts match by construction.
        return try! Image(width: w, height: h, pixels: out)
    }

    /// Still-image file formats.
    public enum Format: String, Sendable, CaseIterable, Codable {
        case png, jpeg

        public var fileExtension: String { self == .png ? "png" : "jpg" }
    }

    /// The picture as PNG (lossless) or JPEG (`quality` 0…1, default 0.85) file data.
    public func data(as format: Format, quality: Double = 0.85) throws(MediaError) -> Data {
        do {
            let rgb = try Frame(width: width, height: height, pixelFormat: Self.rgb24)
            try rgb.makeWritable()
            pixels.withUnsafeBytes { source in
                guard let base = rgb.baseAddress(plane: 0), let from = source.baseAddress else { return }
                let stride = rgb.bytesPerRow(plane: 0)
                for row in 0..<height {
                    (base + row * stride).copyMemory(from: from + row * width * 3, byteCount: width * 3)
                }
            }
            var configuration = Encoder.Configuration()
            configuration.width = width
            configuration.height = height
            configuration.timeBase = Rational(1, 25)
            configuration.threadCount = 1
            let name: String
            let frame: Frame
            switch format {
            case .png:
                name = "png"
                configuration.pixelFormat = Self.rgb24
                frame = rgb
            case .jpeg:
                // mjpeg takes full-range 4:2:0; qscale 2 (best) … 31 from the quality.
                name = "mjpeg"
                configuration.pixelFormat = Self.yuvj420p
                configuration.fixedQuality = Int((2 + 29 * (1 - min(max(quality, 0), 1))).rounded())
                frame = try Frame(width: width, height: height, pixelFormat: Self.yuvj420p)
                try Scaler(from: width, height, Self.rgb24, to: width, height, Self.yuvj420p).scale(rgb, into: frame)
            }
            frame.pts = 0
            let encoder = try Encoder(name: name, configuration: configuration)
            var output = Data()
            _ = try encoder.send(frame)
            try encoder.sendEndOfStream()
            while case .packet(let packet) = try encoder.receivePacket() {
                packet.withUnsafeBytes { output.append(contentsOf: $0) }
            }
            return output
        } catch {
            throw MediaError(.encodeFailed, "cannot encode a \(width)x\(height) image as \(format.rawValue)", underlying: error)
        }
    }

    /// Writes the picture to `url` as `format`, through a partial file renamed into place (`OutputFile`).
    public func write(to url: URL, as format: Format, quality: Double = 0.85) throws(MediaError) {
        let bytes = try data(as: format, quality: quality)
        do throws(MediaError) { try OutputFile.write(bytes, to: url) } catch {
            throw MediaError(error.code, "cannot write the image: \(error.message)", path: url.path)
        }
    }

    /// The image with one line of `text` drawn from (`x`, `y`) (its top left) in `colour`, over a
    /// `backing` rectangle just large enough for it (nil: none), clipped to the image: captions
    /// and timestamps on contact sheets. Text is set by libavfilter's drawtext in `font`.
    public func drawingText(_ text: String, x: Int, y: Int, size: Double, colour: RGBAColor = .white,
                            backing: RGBAColor? = RGBAColor(red: 0, green: 0, blue: 0, alpha: 0.6),
                            font: URL = OverlayLayer.defaultFontFile) throws(MediaError) -> Image {
        let canvasWidth = max(1, min(width - max(x, 0), Int(size * 0.75 * Double(text.count + 1)) + 4))
        let canvasHeight = max(1, min(height - max(y, 0), Int((size * 1.4).rounded(.up))))
        guard x < width, y < height, canvasWidth > 0, canvasHeight > 0 else { return self }
        let raster = try OverlayRenderer.drawText(text, font: font, size: size, colour: colour, width: canvasWidth, height: canvasHeight)
        guard let base = raster.baseAddress(plane: 0) else { return self }
        let stride = raster.bytesPerRow(plane: 0)
        // How far the glyphs reach, for the backing.
        var reach = 0, depth = 0
        for row in 0..<canvasHeight {
            for column in 0..<canvasWidth where base.load(fromByteOffset: row * stride + column * 4 + 3, as: UInt8.self) > 0 {
                reach = max(reach, column + 1)
                depth = max(depth, row + 1)
            }
        }
        var result = pixels
        func blend(_ px: Int, _ py: Int, red: Double, green: Double, blue: Double, alpha: Double, premultiplied: Bool) {
            guard px >= 0, py >= 0, px < width, py < height, alpha > 0 else { return }
            let i = (py * width + px) * 3
            for (c, value) in [red, green, blue].enumerated() {
                let source = premultiplied ? value : value * alpha
                result[i + c] = UInt8(min(255, max(0, (source * 255 + Double(result[i + c]) * (1 - alpha)).rounded())))
            }
        }
        if let backing, reach > 0 {
            for py in y..<(y + min(canvasHeight, depth + 2)) {
                for px in x..<(x + min(canvasWidth, reach + 2)) {
                    blend(px, py, red: backing.red, green: backing.green, blue: backing.blue, alpha: backing.alpha, premultiplied: false)
                }
            }
        }
        for row in 0..<canvasHeight {
            for column in 0..<canvasWidth {
                let o = row * stride + column * 4
                let a = Double(base.load(fromByteOffset: o + 3, as: UInt8.self)) / 255
                guard a > 0 else { continue }
                blend(x + 1 + column, y + 1 + row, red: Double(base.load(fromByteOffset: o, as: UInt8.self)) / 255,
                      green: Double(base.load(fromByteOffset: o + 1, as: UInt8.self)) / 255,
                      blue: Double(base.load(fromByteOffset: o + 2, as: UInt8.self)) / 255, alpha: a, premultiplied: true)
            }
        }
        return try Image(width: width, height: height, pixels: result)
    }

    /// A black image of `size` fitted in `box` (never upscaled): what an empty stretch of a
    /// composition shows.
    static func black(fitting size: Size, in box: Size?) throws(MediaError) -> Image {
        var (w, h) = (max(size.width, 2), max(size.height, 2))
        if let box {
            let scale = min(1, box.width / w, box.height / h)
            (w, h) = (w * scale, h * scale)
        }
        let (width, height) = (max(1, Int(w.rounded())), max(1, Int(h.rounded())))
        return try Image(width: width, height: height, pixels: [UInt8](repeating: 0, count: width * height * 3))
    }

    static let rgb24 = PixelFormatID(name: "rgb24")!
    static let yuvj420p = PixelFormatID(name: "yuvj420p")!
}

import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// Overlay layers (`VideoComposition.animationTool`), checked by exporting 320x240 colour clips
/// and reading pixels of the result back with ffmpeg. Tolerances cover the two H.264 encodes
/// (the clip's and the export's) and the 4:2:0 round trip between the blend and the pixel read.
@Suite(.disabled(if: which("ffmpeg") == nil, "ffmpeg is not installed (Hardware/setup.sh installs it)"))
struct OverlayTests {
    static let second = MediaTime(value: 1, timescale: 1)

    /// Runs ffmpeg with `arguments`, requiring success.
    static func ffmpeg(_ arguments: [String]) async throws -> ChildProcessResult {
        let child = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-y"] + arguments, timeLimit: 120)
        try #require(child.shellStatus == 0, "ffmpeg \(arguments.joined(separator: " ")): \(child.stderr)")
        return child
    }

    /// A 64x64 PNG, opaque white, or (with `transparentRightHalf`) RGBA whose right half is transparent.
    static func watermark(_ url: URL, transparentRightHalf: Bool = false) async throws {
        let filter = transparentRightHalf ? "color=c=white:s=64x64,format=rgba,geq=r=255:g=255:b=255:a='if(lt(X,32),255,0)'" : "color=c=white:s=64x64"
        _ = try await ffmpeg(["-f", "lavfi", "-i", filter, "-frames:v", "1", url.path])
    }

    /// The gray (full-range luma) samples of the `width`×`height` region at (x, y) of the frame shown at `time`.
    static func region(_ url: URL, at time: Double, x: Int, y: Int, width: Int, height: Int) async throws -> [UInt8] {
        let child = try await ffmpeg(["-ss", "\(time)", "-i", url.path, "-frames:v", "1", "-vf", "format=gray,crop=\(width):\(height):\(x):\(y)",
                                      "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        try #require(child.standardOutput.count == width * height, "ffmpeg gave no region at \(time) s: \(child.stderr)")
        return Array(child.standardOutput)
    }

    /// Exports `clip` as it plays with `layers` drawn over it.
    static func export(_ clip: URL, layers: [OverlayLayer], to output: URL) async throws {
        let asset = Asset(url: clip)
        var video = try await VideoComposition.videoComposition(withPropertiesOf: asset)
        video.animationTool = VideoCompositionOverlayTool(layers: layers)
        let session = ExportSession(asset: asset, preset: .highestQuality)
        session.videoComposition = video
        _ = try await session.export(to: output, as: .mp4)
    }

    @Test func aHalfOpaqueWhiteWatermarkIsMidGreyInItsRectAndBlackElsewhere() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = dir.appendingPathComponent("black.mp4"), png = dir.appendingPathComponent("wm.png"), output = dir.appendingPathComponent("out.mp4")
        try await VideoCompositionExportTests.colourClip(clip, colour: "black")
        try await Self.watermark(png)
        try await Self.export(clip, layers: [OverlayLayer(content: .image(png), frame: Rect(x: 96, y: 64, width: 64, height: 64), opacity: 0.5)],
                              to: output)
        // Y' 16 (black) and 235 (white) blend evenly to 125.5, which is RGB 127.5.
        let inside = try await VideoCompositionExportTests.pixel(output, at: 1, x: 126, y: 94)
        let outside = try await VideoCompositionExportTests.pixel(output, at: 1, x: 20, y: 200)
        #expect(inside.allSatisfy { abs($0 - 128) <= 6 }, "inside the watermark: \(inside), mid-grey is 128 ± 6")
        #expect(outside.allSatisfy { $0 <= 6 }, "outside the watermark: \(outside), black is 0 … 6")
        // The rect's edges: just inside its corners grey, just outside them black.
        let corner = try await Self.region(output, at: 1, x: 94, y: 62, width: 68, height: 68)
        #expect(abs(Int(corner[3 * 68 + 3]) - 128) <= 8 && abs(Int(corner[64 * 68 + 64]) - 128) <= 8, "the rect's corners are grey")
        #expect(corner[0] <= 8 && corner[67 * 68 + 67] <= 8, "outside the rect's corners is black")
    }

    @Test func theTransparentHalfOfAnRGBAWatermarkLeavesTheVideoUntouched() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = dir.appendingPathComponent("teal.mp4"), png = dir.appendingPathComponent("half.png"), output = dir.appendingPathComponent("out.mp4")
        try await VideoCompositionExportTests.colourClip(clip, colour: "0x2080A0")
        try await Self.watermark(png, transparentRightHalf: true)
        try await Self.export(clip, layers: [OverlayLayer(content: .image(png), frame: Rect(x: 96, y: 64, width: 64, height: 64))], to: output)
        let source = try await VideoCompositionExportTests.pixel(clip, at: 1, x: 144, y: 94)
        let transparent = try await VideoCompositionExportTests.pixel(output, at: 1, x: 144, y: 94)
        let opaque = try await VideoCompositionExportTests.pixel(output, at: 1, x: 104, y: 94)
        #expect(zip(source, transparent).allSatisfy { abs($0 - $1) <= 4 }, "transparent half: \(transparent), the clip: \(source)")
        #expect(opaque.allSatisfy { $0 >= 248 }, "opaque half: \(opaque), white is 248 … 255")
    }

    @Test func aWhiteTitleLightsItsRectAndNothingFarFromIt() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = dir.appendingPathComponent("black.mp4"), output = dir.appendingPathComponent("out.mp4")
        try await VideoCompositionExportTests.colourClip(clip, colour: "black")
        let title = OverlayLayer(content: .text("VAF", fontFile: nil, size: 48, colour: .white), frame: Rect(x: 40, y: 40, width: 160, height: 64))
        try await Self.export(clip, layers: [title], to: output)
        let inRect = try await Self.region(output, at: 1, x: 40, y: 40, width: 160, height: 64)
        let below = try await Self.region(output, at: 1, x: 0, y: 140, width: 320, height: 100)
        let right = try await Self.region(output, at: 1, x: 240, y: 0, width: 80, height: 140)
        #expect((inRect.max() ?? 0) >= 200, "the brightest luma in the title's rect: \(inRect.max() ?? 0)")
        #expect(inRect.filter { $0 >= 128 }.count >= 200, "lit pixels in the title's rect: \(inRect.filter { $0 >= 128 }.count)")
        #expect((below.max() ?? 255) <= 8 && (right.max() ?? 255) <= 8, "away from the title: below \(below.max() ?? 0), right \(right.max() ?? 0)")
    }

    @Test func anOpacityRampIsLinearOverItsFrames() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = dir.appendingPathComponent("black.mp4"), output = dir.appendingPathComponent("out.mp4")
        try await VideoCompositionExportTests.colourClip(clip, colour: "black")
        var solid = OverlayLayer(content: .solid(.white), frame: Rect(x: 0, y: 0, width: 320, height: 240))
        solid.setOpacityRamp(from: 0, to: 1, timeRange: MediaTimeRange(start: .zero, duration: Self.second))
        try await Self.export(clip, layers: [solid], to: output)
        // Frame n (30 fps) of the 1 s ramp is white at opacity n/30 over black: 255 × n/30.
        let frames = try await VideoCompositionExportTests.pixels(output, x: 160, y: 120)
        try #require(frames.count == 60, "2 s at 30 fps: \(frames.count) frames")
        #expect(frames[0].allSatisfy { $0 <= 6 }, "at 0 s: \(frames[0])")
        for n in [6, 10, 15, 20, 24] {
            let grey = 255 * Double(n) / 30
            // ±8: one H.264 encode and 4:2:0 between the blend and the pixel read back; a frame
            // early or late is 8.5 away, a reversed or eased ramp much further off the middle.
            #expect(frames[n].allSatisfy { abs(Double($0) - grey) <= 8 }, "frame \(n): \(frames[n]), expected \(grey) ± 8")
        }
        #expect(frames[45].allSatisfy { $0 >= 248 }, "at 1.5 s, after the ramp: \(frames[45])")
    }

    @Test func aPositionRampMovesTheLayerFromItsStartToItsEnd() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = dir.appendingPathComponent("black.mp4"), output = dir.appendingPathComponent("out.mp4")
        try await VideoCompositionExportTests.colourClip(clip, colour: "black")
        var square = OverlayLayer(content: .solid(.white), frame: Rect(x: 0, y: 0, width: 32, height: 32))
        square.setPositionRamp(from: Point(x: 40, y: 40), to: Point(x: 240, y: 180), timeRange: MediaTimeRange(start: .zero, duration: Self.second))
        #expect(square.frame(at: MediaTime(value: 1, timescale: 2)) == Rect(x: 124, y: 94, width: 32, height: 32))
        try await Self.export(clip, layers: [square], to: output)
        let startAtStart = try await VideoCompositionExportTests.pixel(output, at: 0, x: 40, y: 40)
        let endAtStart = try await VideoCompositionExportTests.pixel(output, at: 0, x: 240, y: 180)
        let startAtEnd = try await VideoCompositionExportTests.pixel(output, at: 1.5, x: 40, y: 40)
        let endAtEnd = try await VideoCompositionExportTests.pixel(output, at: 1.5, x: 240, y: 180)
        #expect(startAtStart.allSatisfy { $0 >= 248 } && endAtStart.allSatisfy { $0 <= 6 }, "at 0 s: start \(startAtStart), end \(endAtStart)")
        #expect(startAtEnd.allSatisfy { $0 <= 6 } && endAtEnd.allSatisfy { $0 >= 248 }, "at 1.5 s: start \(startAtEnd), end \(endAtEnd)")
    }

    /// The Editing chapter's Core Animation listing ("Using the animationTool property"):
    ///
    /// ```objc
    /// CALayer *watermarkLayer = <#CALayer representing your desired watermark image#>;
    /// CALayer *parentLayer = [CALayer layer];
    /// CALayer *videoLayer = [CALayer layer];
    /// parentLayer.frame = CGRectMake(0, 0, mutableVideoComposition.renderSize.width, mutableVideoComposition.renderSize.height);
    /// videoLayer.frame = CGRectMake(0, 0, mutableVideoComposition.renderSize.width, mutableVideoComposition.renderSize.height);
    /// [parentLayer addSublayer:videoLayer];
    /// watermarkLayer.position = CGPointMake(mutableVideoComposition.renderSize.width/2, mutableVideoComposition.renderSize.height/4);
    /// [parentLayer addSublayer:watermarkLayer];
    /// mutableVideoComposition.animationTool = [AVVideoCompositionCoreAnimationTool videoCompositionCoreAnimationToolWithPostProcessingAsVideoLayer:videoLayer inLayer:parentLayer];
    /// ```
    ///
    /// The parent and video layers are implicit (the video is always the full picture at the
    /// bottom); the animation tool's y runs up from the bottom, ours down from the top, so the
    /// same place is `height − height/4`.
    @Test func theGuidesWatermarkListing() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = dir.appendingPathComponent("black.mp4"), png = dir.appendingPathComponent("wm.png"), output = dir.appendingPathComponent("out.mp4")
        try await VideoCompositionExportTests.colourClip(clip, colour: "black")
        try await Self.watermark(png)
        let asset = Asset(url: clip)
        var mutableVideoComposition = try await VideoComposition.videoComposition(withPropertiesOf: asset)

        let renderSize = mutableVideoComposition.renderSize
        var watermarkLayer = OverlayLayer(content: .image(png), frame: Rect(x: 0, y: 0, width: 64, height: 64))
        watermarkLayer.setPosition(Point(x: renderSize.width / 2, y: renderSize.height - renderSize.height / 4), at: .zero)
        mutableVideoComposition.animationTool = VideoCompositionOverlayTool(layers: [watermarkLayer])

        let session = ExportSession(asset: asset, preset: .highestQuality)
        session.videoComposition = mutableVideoComposition
        _ = try await session.export(to: output, as: .mp4)
        // Centred at (160, 180): the 64x64 square spans 128 ..< 192 and 148 ..< 212.
        let centre = try await VideoCompositionExportTests.pixel(output, at: 1, x: 158, y: 178)
        let above = try await VideoCompositionExportTests.pixel(output, at: 1, x: 158, y: 60)
        #expect(centre.allSatisfy { $0 >= 248 }, "the watermark's centre: \(centre)")
        #expect(above.allSatisfy { $0 <= 6 }, "a quarter from the top: \(above)")
    }

    /// README.md's watermark example, as written there (with the test's files).
    @Test func theReadmeWatermarkExample() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VideoCompositionExportTests.colourClip(dir.appendingPathComponent("clip.mov"), colour: "black")
        try await Self.watermark(dir.appendingPathComponent("logo.png"))
        let asset = Asset(url: dir.appendingPathComponent("clip.mov"))
        let logo = dir.appendingPathComponent("logo.png"), output = dir.appendingPathComponent("watermarked.mp4")

        var video = try await VideoComposition.videoComposition(withPropertiesOf: asset)
        let logoLayer = OverlayLayer(content: .image(logo), frame: Rect(x: video.renderSize.width - 80, y: 16, width: 64, height: 64), opacity: 0.5)
        video.animationTool = VideoCompositionOverlayTool(layers: [logoLayer])
        let session = ExportSession(asset: asset, preset: .preset1920x1080)
        session.videoComposition = video
        _ = try await session.export(to: output, as: .mp4)

        let corner = try await VideoCompositionExportTests.pixel(output, at: 1, x: 270, y: 46)
        #expect(corner.allSatisfy { abs($0 - 128) <= 6 }, "the logo at half opacity: \(corner)")
    }

    @Test func textWithFilterGraphSpecialCharactersIsDrawn() throws {
        let text = OverlayLayer(content: .text("it's 50%: [a,b]; c\\d", fontFile: nil, size: 20, colour: .white),
                                frame: Rect(x: 0, y: 0, width: 200, height: 30))
        let renderer = try OverlayRenderer(tool: VideoCompositionOverlayTool(layers: [text]), pixelFormat: .yuv420p)
        let picture = try PixelBuffer(width: 320, height: 240, pixelFormat: .yuv420p)
        try picture.withUnsafeMutablePlanes { planes in
            for (index, plane) in planes.enumerated() {
                plane.baseAddress.initializeMemory(as: UInt8.self, repeating: index == 0 ? 16 : 128, count: plane.bytesPerRow * plane.height)
            }
        }
        try renderer.draw(at: .zero, into: picture)
        let lit = try picture.withUnsafePlanes { planes in
            (0..<30).reduce(0) { count, y in
                count + (0..<200).filter { planes[0].baseAddress.load(fromByteOffset: y * planes[0].bytesPerRow + $0, as: UInt8.self) > 128 }.count
            }
        }
        #expect(lit >= 100, "lit luma samples: \(lit)")
    }

    /// A red square at an odd origin in a 10-bit picture: luma at 10-bit scale inside, the
    /// background outside, and a chroma sample a quarter covered takes a quarter of the red.
    @Test func tenBitPicturesAndOddOriginsBlendChromaByCoverage() throws {
        let red = OverlayLayer(content: .solid(RGBAColor(red: 1, green: 0, blue: 0)), frame: Rect(x: 3, y: 5, width: 10, height: 10))
        let renderer = try OverlayRenderer(tool: VideoCompositionOverlayTool(layers: [red]), pixelFormat: .yuv420p10)
        let picture = try PixelBuffer(width: 64, height: 48, pixelFormat: .yuv420p10)
        try picture.withUnsafeMutablePlanes { planes in
            for (index, plane) in planes.enumerated() {
                plane.baseAddress.initializeMemory(as: UInt16.self, repeating: index == 0 ? 64 : 512, count: plane.bytesPerRow / 2 * plane.height)
            }
        }
        try renderer.draw(at: .zero, into: picture)
        func sample(_ plane: Int, _ x: Int, _ y: Int) throws -> Int {
            try picture.withUnsafePlanes { Int($0[plane].baseAddress.load(fromByteOffset: y * $0[plane].bytesPerRow + 2 * x, as: UInt16.self)) }
        }
        // Red in BT.709 limited range: Y' 16 + 219·0.2126, Cr 128 + 112, both times 4 at 10 bits.
        #expect(try sample(0, 3, 5) == 250 && sample(0, 12, 14) == 250)
        #expect(try sample(0, 2, 5) == 64 && sample(0, 3, 4) == 64 && sample(0, 13, 14) == 64)
        #expect(try sample(2, 3, 4) == 960, "a chroma sample the square covers")
        #expect(try sample(2, 1, 2) == 624, "luma (3, 5) is the only one of its 2×2 inside: 960/4 + 512·3/4")
        #expect(try sample(1, 3, 4) == 409, "Cb of red: 4·(128 − 224·0.2126/1.8556)")
    }

    @Test func aMissingImageIsATypedErrorNamingTheFile() throws {
        let missing = URL(fileURLWithPath: "/nonexistent/logo.png")
        let layer = OverlayLayer(content: .image(missing), frame: Rect(x: 0, y: 0, width: 10, height: 10))
        do {
            _ = try OverlayRenderer(tool: VideoCompositionOverlayTool(layers: [layer]), pixelFormat: .yuv420p)
            Issue.record("a missing image was accepted")
        } catch {
            #expect(error.path == missing.path)
        }
    }
}

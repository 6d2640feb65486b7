import Foundation
import Testing
@testable import VAFoundation

/// `seconds` as a media time at timescale 600.
private func at(_ seconds: Double) -> MediaTime { MediaTime(seconds: seconds, preferredTimescale: 600) }

/// The range from `start` to `end` seconds.
private func range(_ start: Double, _ end: Double) -> MediaTimeRange { MediaTimeRange(start: at(start), end: at(end)) }

@Suite struct VideoCompositionLayerInstructionTests {
    @Test func defaultsHoldBeforeAnyChange() {
        let layer = VideoCompositionLayerInstruction(trackID: 1)
        #expect(layer.transform(at: at(3)) == .identity)
        #expect(layer.opacity(at: at(3)) == 1)
        #expect(layer.cropRectangle(at: at(3)) == nil)
        #expect(layer.opacityRamp(for: at(3)) == nil)
        #expect(layer.transformRamp(for: at(3)) == nil)
    }

    @Test func setValuesHoldUntilTheNextChange() {
        var layer = VideoCompositionLayerInstruction(trackID: 1)
        layer.setOpacity(0.5, at: at(2))
        layer.setOpacity(0.25, at: at(4))
        #expect(layer.opacity(at: at(1)) == 1, "before the first change: the default")
        #expect(layer.opacity(at: at(2)) == 0.5)
        #expect(layer.opacity(at: at(3.99)) == 0.5)
        #expect(layer.opacity(at: at(4)) == 0.25)
        #expect(layer.opacity(at: at(100)) == 0.25)
        #expect(layer.opacityRamp(for: at(3)) == RampSegment(start: 0.5, end: 0.5, timeRange: range(2, 4)))
        #expect(layer.opacityRamp(for: at(5)) == RampSegment(start: 0.25, end: 0.25,
                                                            timeRange: MediaTimeRange(start: at(4), duration: .positiveInfinity)))
        #expect(layer.opacityRamp(for: at(1)) == nil)
    }

    @Test func aRampInterpolatesThenHoldsItsEnd() {
        var layer = VideoCompositionLayerInstruction(trackID: 1)
        layer.setOpacityRamp(fromStartOpacity: 0, toEndOpacity: 1, timeRange: range(2, 6))
        #expect(layer.opacity(at: at(1)) == 1, "before the ramp: the default, not the ramp's start")
        #expect(layer.opacity(at: at(2)) == 0)
        #expect(layer.opacity(at: at(3)) == 0.25)
        #expect(layer.opacity(at: at(4)) == 0.5)
        #expect(layer.opacity(at: at(6)) == 1)
        #expect(layer.opacity(at: at(60)) == 1)
        #expect(layer.opacityRamp(for: at(3)) == RampSegment(start: 0, end: 1, timeRange: range(2, 6)))
        #expect(layer.opacityRamp(for: at(7)) == nil, "after the last ramp, as Apple's getter returns false")
    }

    @Test func transformRampsInterpolateComponentWise() {
        var layer = VideoCompositionLayerInstruction(trackID: 1)
        let end = VideoTransform(a: 2, b: 0, c: 0, d: 3, tx: 100, ty: 40)
        layer.setTransformRamp(fromStart: .identity, toEnd: end, timeRange: range(0, 4))
        #expect(layer.transform(at: at(1)) == VideoTransform(a: 1.25, b: 0, c: 0, d: 1.5, tx: 25, ty: 10))
        #expect(layer.transform(at: at(4)) == end)
        let rotation = VideoTransform(rotationDegrees: 90, size: Size(width: 1920, height: 1080))
        layer.setTransform(rotation, at: at(5))
        #expect(layer.transform(at: at(4.5)) == end)
        #expect(layer.transform(at: at(5)) == rotation)
        #expect(layer.transformRamp(for: at(4.5)) == RampSegment(start: end, end: end, timeRange: range(4, 5)))
    }

    @Test func cropRampsThenSteps() {
        var layer = VideoCompositionLayerInstruction(trackID: 1)
        let start = Rect(x: 0, y: 0, width: 100, height: 100), end = Rect(x: 50, y: 50, width: 50, height: 50)
        layer.setCropRectangleRamp(fromStartCropRectangle: start, toEndCropRectangle: end, timeRange: range(0, 2))
        layer.setCropRectangle(Rect(x: 10, y: 10, width: 10, height: 10), at: at(3))
        #expect(layer.cropRectangle(at: at(1)) == Rect(x: 25, y: 25, width: 75, height: 75))
        #expect(layer.cropRectangle(at: at(2.5)) == end)
        #expect(layer.cropRectangleRamp(for: at(2.5)) == RampSegment(start: end, end: end, timeRange: range(2, 3)))
        #expect(layer.cropRectangle(at: at(3)) == Rect(x: 10, y: 10, width: 10, height: 10))
    }

    @Test func aLaterChangeCutsARampShortAndTheSameStartReplaces() {
        var layer = VideoCompositionLayerInstruction(trackID: 1)
        layer.setOpacityRamp(fromStartOpacity: 0, toEndOpacity: 1, timeRange: range(0, 10))
        layer.setOpacity(0.9, at: at(5))
        #expect(layer.opacity(at: at(4)) == 0.4)
        #expect(layer.opacity(at: at(6)) == 0.9)
        layer.setOpacity(0.1, at: at(5))
        #expect(layer.opacity(at: at(6)) == 0.1)
    }
}

@Suite struct VideoCompositionValidationTests {
    private func layers(_ ids: Int...) -> [VideoCompositionLayerInstruction] { ids.map(VideoCompositionLayerInstruction.init(trackID:)) }

    /// Two instructions covering 0 ..< 10 s, the second layering track 1 over track 2.
    private var valid: VideoComposition {
        VideoComposition(renderSize: Size(width: 1920, height: 1080), frameDuration: MediaTime(value: 1, timescale: 30),
                         instructions: [VideoCompositionInstruction(timeRange: range(0, 5), layerInstructions: layers(1)),
                                        VideoCompositionInstruction(timeRange: range(5, 10), layerInstructions: layers(1, 2))])
    }

    private func error(_ composition: VideoComposition) -> VideoCompositionError? {
        do {
            try composition.validate(forTrackIDs: [1, 2], timeRange: range(0, 10))
            return nil
        } catch {
            return error
        }
    }

    @Test func aValidCompositionPasses() {
        #expect(error(valid) == nil)
        #expect(valid.isValid(forTrackIDs: [1, 2], timeRange: range(0, 10)))
        #expect(valid.instruction(at: at(5))?.requiredSourceTrackIDs == [1, 2])
        #expect(valid.instruction(at: at(4.9))?.requiredSourceTrackIDs == [1])
        #expect(valid.instruction(at: at(10)) == nil)
    }

    @Test func emptyRenderSize() {
        var composition = valid
        composition.renderSize = Size(width: 1920, height: 0)
        #expect(error(composition) == .emptyRenderSize(Size(width: 1920, height: 0)))
        #expect(!composition.isValid(forTrackIDs: [1, 2], timeRange: range(0, 10)))
    }

    @Test func invalidFrameDuration() {
        var composition = valid
        composition.frameDuration = .zero
        #expect(error(composition) == .invalidFrameDuration(.zero))
        composition.frameDuration = .invalid
        #expect(error(composition) == .invalidFrameDuration(.invalid))
    }

    @Test func noInstructions() {
        var composition = valid
        composition.instructions = []
        #expect(error(composition) == .noInstructions)
    }

    @Test func invalidInstructionTimeRange() {
        var composition = valid
        composition.instructions[1].timeRange = MediaTimeRange(start: at(5), duration: .zero)
        #expect(error(composition) == .invalidInstructionTimeRange(index: 1, MediaTimeRange(start: at(5), duration: .zero)))
    }

    @Test func gapBetweenInstructions() {
        var composition = valid
        composition.instructions[0].timeRange = range(0, 4)
        #expect(error(composition) == .gapBetweenInstructions(at: at(4)))
        #expect(error(composition)?.description.contains("4.0 s") == true)
    }

    @Test func overlappingInstructions() {
        var composition = valid
        composition.instructions[1].timeRange = range(4, 10)
        #expect(error(composition) == .overlappingInstructions(at: at(4)))
    }

    @Test func startNotCovered() {
        var composition = valid
        composition.instructions[0].timeRange = range(1, 5)
        #expect(error(composition) == .startNotCovered(at: .zero))
    }

    @Test func endNotCovered() {
        var composition = valid
        composition.instructions[1].timeRange = range(5, 9)
        #expect(error(composition) == .endNotCovered(at: at(9)))
    }

    @Test func unknownTrackID() {
        var composition = valid
        composition.instructions[1].layerInstructions = layers(1, 3)
        #expect(error(composition) == .unknownTrackID(3, instructionIndex: 1))
    }

    @Test func duplicateLayerInstruction() {
        var composition = valid
        composition.instructions[0].layerInstructions = layers(2, 2)
        #expect(error(composition) == .duplicateLayerInstruction(trackID: 2, instructionIndex: 0))
    }
}

@Suite struct VideoCompositionPropertiesTests {
    @Test func aRotatedTrackSwapsTheRenderSize() {
        let size = Size(width: 1920, height: 1080)
        let rotation = VideoTransform(rotationDegrees: 90, size: size)
        let track = VideoCompositionSourceTrack(trackID: 7, naturalSize: size, preferredTransform: rotation,
                                                minFrameDuration: MediaTime(value: 1001, timescale: 30000))
        let composition = VideoComposition.videoComposition(withPropertiesOf: [track], duration: at(10))
        #expect(composition.renderSize == Size(width: 1080, height: 1920))
        #expect(composition.frameDuration == MediaTime(value: 1001, timescale: 30000))
        #expect(composition.sourceTrackIDForFrameTiming == 7, "a single track gives its own timing, as Apple's")
        #expect(composition.instructions.count == 1)
        #expect(composition.instructions[0].timeRange == range(0, 10))
        #expect(composition.instructions[0].layerInstructions.map(\.trackID) == [7])
        #expect(composition.instructions[0].layerInstructions[0].transform(at: at(3)) == rotation)
        #expect(composition.isValid(forTrackIDs: [7], timeRange: range(0, 10)))
    }

    @Test func severalTracksTakeTheLargestSizeAndShortestFrame() {
        let tracks = [
            VideoCompositionSourceTrack(trackID: 1, naturalSize: Size(width: 1920, height: 1080),
                                        preferredTransform: VideoTransform(rotationDegrees: 90, size: Size(width: 1920, height: 1080)),
                                        minFrameDuration: MediaTime(value: 1, timescale: 30)),
            VideoCompositionSourceTrack(trackID: 2, naturalSize: Size(width: 1280, height: 720),
                                        minFrameDuration: MediaTime(value: 1, timescale: 60)),
            VideoCompositionSourceTrack(trackID: 3, naturalSize: Size(width: 640, height: 480)),
        ]
        let composition = VideoComposition.videoComposition(withPropertiesOf: tracks, duration: at(4))
        #expect(composition.renderSize == Size(width: 1280, height: 1920))
        #expect(composition.frameDuration == MediaTime(value: 1, timescale: 60))
        #expect(composition.sourceTrackIDForFrameTiming == 0)
        #expect(composition.instructions[0].layerInstructions.map(\.trackID) == [1, 2, 3])
        let none = VideoComposition.videoComposition(withPropertiesOf: [tracks[2]], duration: at(4))
        #expect(none.frameDuration == MediaTime(value: 1, timescale: 30), "no known frame duration: 1/30 s")
    }
}

/// Synthetic pictures and sample access for the compositor tests.
private enum Pictures {
    /// Samples across plane `plane` of a 4:2:0 picture `width` wide.
    static func planeWidth(_ plane: Int, _ width: Int) -> Int { plane == 0 ? width : (width + 1) / 2 }

    /// A `width`×`height` picture whose sample (plane, x, y) is `value(plane, x, y)`, in plane
    /// coordinates (chroma at half size); nv12 interleaves planes 1 and 2.
    static func make(_ width: Int, _ height: Int, _ format: PixelFormat = .yuv420p,
                     _ value: (_ plane: Int, _ x: Int, _ y: Int) -> Int) throws -> PixelBuffer {
        let picture = try PixelBuffer(width: width, height: height, pixelFormat: format)
        try picture.withUnsafeMutablePlanes { planes in
            for (index, plane) in planes.enumerated() {
                for y in 0..<plane.height {
                    let row = plane.baseAddress + y * plane.bytesPerRow
                    if format == .yuv420p10 {
                        let samples = row.assumingMemoryBound(to: UInt16.self)
                        for x in 0..<planeWidth(index, width) { samples[x] = UInt16(value(index, x, y)) }
                    } else if format == .nv12, index == 1 {
                        let samples = row.assumingMemoryBound(to: UInt8.self)
                        for x in 0..<planeWidth(1, width) {
                            samples[2 * x] = UInt8(value(1, x, y))
                            samples[2 * x + 1] = UInt8(value(2, x, y))
                        }
                    } else {
                        let samples = row.assumingMemoryBound(to: UInt8.self)
                        for x in 0..<planeWidth(index, width) { samples[x] = UInt8(value(index, x, y)) }
                    }
                }
            }
        }
        return picture
    }

    /// A picture of one colour.
    static func flat(_ width: Int, _ height: Int, _ yCbCr: [Int], _ format: PixelFormat = .yuv420p) throws -> PixelBuffer {
        try make(width, height, format) { plane, _, _ in yCbCr[plane] }
    }

    /// Every sample of a yuv420p or yuv420p10le picture, as planes of rows.
    static func samples(_ picture: PixelBuffer) throws -> [[[Int]]] {
        try picture.withUnsafePlanes { planes in
            planes.enumerated().map { index, plane in
                (0..<plane.height).map { y in
                    let row = plane.baseAddress + y * plane.bytesPerRow
                    return (0..<planeWidth(index, picture.width)).map { x in
                        picture.pixelFormat == .yuv420p10 ? Int(row.assumingMemoryBound(to: UInt16.self)[x])
                            : Int(row.assumingMemoryBound(to: UInt8.self)[x])
                    }
                }
            }
        }
    }

    /// Where two yuv420p pictures first differ by more than `tolerance` and how many samples do; nil when none does.
    static func firstDifference(_ picture: PixelBuffer, _ expected: PixelBuffer, tolerance: Int) throws -> String? {
        let (got, want) = (try samples(picture), try samples(expected))
        var first: String?, count = 0
        for plane in want.indices {
            for y in want[plane].indices {
                for x in want[plane][y].indices where abs(got[plane][y][x] - want[plane][y][x]) > tolerance {
                    count += 1
                    if first == nil { first = "plane \(plane) at (\(x), \(y)) is \(got[plane][y][x]), not \(want[plane][y][x])" }
                }
            }
        }
        return first.map { "\($0); \(count) samples differ" }
    }

    /// A recognisable pattern: each sample differs from its neighbours.
    static func pattern(_ plane: Int, _ x: Int, _ y: Int) -> Int { 16 + (x * 7 + y * 13 + plane * 50) % 220 }
}

@Suite struct VideoCompositionRenderingTests {
    let compositor = SoftwareCompositor()

    private func instruction(_ layers: [VideoCompositionLayerInstruction], background: RGBAColor = .black,
                             over timeRange: MediaTimeRange = range(0, 10)) -> VideoCompositionInstruction {
        VideoCompositionInstruction(timeRange: timeRange, backgroundColor: background, layerInstructions: layers)
    }

    @Test func identityIsAnExactCopy() throws {
        let source = try Pictures.make(64, 48, .yuv420p, Pictures.pattern)
        let output = try compositor.render(instruction([VideoCompositionLayerInstruction(trackID: 1)]), at: at(1),
                                           sourceFrames: [1: source], width: 64, height: 48)
        #expect(try Pictures.samples(output) == Pictures.samples(source))
    }

    @Test func nv12SourcesAreConvertedExactly() throws {
        let source = try Pictures.make(64, 48, .nv12, Pictures.pattern)
        let expected = try Pictures.make(64, 48, .yuv420p, Pictures.pattern)
        let output = try compositor.render(instruction([VideoCompositionLayerInstruction(trackID: 1)]), at: at(1),
                                           sourceFrames: [1: source], width: 64, height: 48)
        #expect(try Pictures.samples(output) == Pictures.samples(expected))
    }

    @Test func halfOpaqueWhiteOverBlackIsMidGrey() throws {
        var white = VideoCompositionLayerInstruction(trackID: 1)
        white.setOpacity(0.5, at: .zero)
        let sources = [1: try Pictures.flat(64, 48, [235, 128, 128]), 2: try Pictures.flat(64, 48, [16, 128, 128])]
        let output = try compositor.render(instruction([white, VideoCompositionLayerInstruction(trackID: 2)]), at: at(1),
                                           sourceFrames: sources, width: 64, height: 48)
        let planes = try Pictures.samples(output)
        // (235 + 16) / 2 = 125.5: either neighbour is right, so ±1 code value around 125.5 allows 125 and 126 only.
        #expect(planes[0].joined().allSatisfy { abs(Double($0) - 125.5) <= 1 })
        #expect(planes[1].joined().allSatisfy { $0 == 128 } && planes[2].joined().allSatisfy { $0 == 128 })
        // A quarter of white over black: 0.25·235 + 0.75·16 = 70.75, ±1 code value (so 70 or 71, never 180).
        white.setOpacity(0.25, at: .zero)
        let quarter = try Pictures.samples(compositor.render(instruction([white, VideoCompositionLayerInstruction(trackID: 2)]),
                                                             at: at(1), sourceFrames: sources, width: 64, height: 48))
        #expect(quarter[0].joined().allSatisfy { abs(Double($0) - 70.75) <= 1 })
    }

    @Test func theBackgroundFillsWhatNoLayerCovers() throws {
        var small = VideoCompositionLayerInstruction(trackID: 1)
        small.setTransform(VideoTransform(a: 1, b: 0, c: 0, d: 1, tx: 16, ty: 12), at: .zero)
        let source = try Pictures.flat(32, 24, [180, 60, 200])
        let output = try compositor.render(instruction([small], background: RGBAColor(red: 1, green: 0, blue: 0)), at: at(1),
                                           sourceFrames: [1: source], width: 64, height: 48)
        // BT.709 limited range red: Y' = 16 + 219·0.2126 = 62.6, Cb = 128 − 224·0.2126/1.8556 = 102.3, Cr = 128 + 112 = 240.
        let red = [63, 102, 240], layer = [180, 60, 200]
        for (plane, rows) in try Pictures.samples(output).enumerated() {
            let shift = plane == 0 ? 0 : 1
            for (y, row) in rows.enumerated() {
                for (x, sample) in row.enumerated() {
                    let inside = (16 >> shift ..< 48 >> shift).contains(x) && (12 >> shift ..< 36 >> shift).contains(y)
                    #expect(sample == (inside ? layer[plane] : red[plane]), "plane \(plane) at (\(x), \(y))")
                }
            }
        }
    }

    @Test func aQuarterTurnLandsAsTransposeClock() throws {
        // 64x32 source, a marker block in its top-left 8x8 corner (4x4 in chroma).
        let (w, h) = (64, 32)
        let source = try Pictures.make(w, h) { plane, x, y in
            let block = plane == 0 ? 8 : 4
            return x < block && y < block ? [220, 60, 200][plane] : Pictures.pattern(plane, x, y)
        }
        var turned = VideoCompositionLayerInstruction(trackID: 1)
        turned.setTransform(VideoTransform(a: 0, b: 1, c: -1, d: 0, tx: Double(h), ty: 0), at: .zero)
        let output = try compositor.render(instruction([turned]), at: at(1), sourceFrames: [1: source], width: h, height: w)
        let input = try Pictures.samples(source), planes = try Pictures.samples(output)
        // transpose=clock: out(x', y') = in(x: y', y: H − 1 − x'), per plane with that plane's height H.
        for (plane, rows) in planes.enumerated() {
            let height = input[plane].count
            for (y, row) in rows.enumerated() {
                for (x, sample) in row.enumerated() {
                    #expect(sample == input[plane][height - 1 - x][y], "plane \(plane) at (\(x), \(y))")
                }
            }
        }
        // So the marker lands in the top-right corner: x' in 24 ..< 32, y' in 0 ..< 8.
        #expect(planes[0][0][31] == 220 && planes[0][7][24] == 220)
        #expect(planes[0][0][23] != 220 && planes[0][8][31] != 220)
    }

    @Test func aMirrorFlipsEveryPlaneExactly() throws {
        let source = try Pictures.make(64, 48, .yuv420p, Pictures.pattern)
        var mirrored = VideoCompositionLayerInstruction(trackID: 1)
        mirrored.setTransform(VideoTransform(a: -1, b: 0, c: 0, d: 1, tx: 64, ty: 0), at: .zero)
        let output = try Pictures.samples(compositor.render(instruction([mirrored]), at: at(1), sourceFrames: [1: source], width: 64, height: 48))
        let input = try Pictures.samples(source)
        #expect(output == input.map { plane in plane.map { Array($0.reversed()) } }, "out(x, y) = in(W − 1 − x, y) in each plane")
    }

    @Test func theCropRectangleRestrictsTheSource() throws {
        // Left half dark, right half bright; crop the right half and move it to the left.
        let source = try Pictures.make(64, 48) { plane, x, _ in
            plane == 0 ? (x < 32 ? 50 : 200) : (x < 16 ? 90 : 170)
        }
        var layer = VideoCompositionLayerInstruction(trackID: 1)
        layer.setCropRectangle(Rect(x: 32, y: 0, width: 32, height: 48), at: .zero)
        layer.setTransform(VideoTransform(a: 1, b: 0, c: 0, d: 1, tx: -32, ty: 0), at: .zero)
        let output = try compositor.render(instruction([layer]), at: at(1), sourceFrames: [1: source], width: 64, height: 48)
        let planes = try Pictures.samples(output)
        for row in planes[0] { #expect(row == Array(repeating: 200, count: 32) + Array(repeating: 16, count: 32)) }
        for row in planes[1] { #expect(row == Array(repeating: 170, count: 16) + Array(repeating: 128, count: 16)) }
        // Without the transform the cropped area stays where it was and the rest shows the background.
        layer.setTransform(.identity, at: .zero)
        let inPlace = try Pictures.samples(compositor.render(instruction([layer]), at: at(1), sourceFrames: [1: source], width: 64, height: 48))
        for row in inPlace[0] { #expect(row == Array(repeating: 16, count: 32) + Array(repeating: 200, count: 32)) }
    }

    @Test func aScaleSamplesBilinearly() throws {
        // A 32x24 horizontal luma ramp (16 + 4x) drawn twice as large, 8 rows down, into 64x48.
        let source = try Pictures.make(32, 24) { plane, x, _ in plane == 0 ? 16 + 4 * x : 128 }
        var doubled = VideoCompositionLayerInstruction(trackID: 1)
        doubled.setTransform(VideoTransform(a: 2, b: 0, c: 0, d: 2, tx: 0, ty: 8), at: .zero)
        let output = try compositor.render(instruction([doubled], background: .white), at: at(1), sourceFrames: [1: source], width: 64, height: 48)
        let luma = try Pictures.samples(output)[0]
        // Target x samples source position p = (x + ½)/2 − ½ = x/2 − ¼, clamped to the first and last columns.
        let expected = (0..<64).map { x in Int((16 + 4 * min(max(Double(x) / 2 - 0.25, 0), 31)).rounded()) }
        #expect(luma[0] == Array(repeating: 235, count: 64), "above the layer: the white background")
        #expect(luma[7] == Array(repeating: 235, count: 64))
        for y in 8..<48 { #expect(luma[y] == expected, "row \(y)") }
    }

    @Test func aShearSamplesBilinearly() throws {
        // A horizontal luma ramp (16 + x): bilinear sampling along x gives 16 + the exact source position.
        let source = try Pictures.make(64, 48) { plane, x, _ in plane == 0 ? 16 + x : 128 }
        var sheared = VideoCompositionLayerInstruction(trackID: 1)
        // x' = x + 0.5·y: the inverse takes target centre (x + ½, y + ½) to source x = x + ½ − ½(y + ½),
        // whose sample position (centres at whole numbers + ½) is p = x − y/2 − ¼.
        sheared.setTransform(VideoTransform(a: 1, b: 0, c: 0.5, d: 1, tx: 0, ty: 0), at: .zero)
        let output = try compositor.render(instruction([sheared], background: .white), at: at(1), sourceFrames: [1: source], width: 96, height: 48)
        let luma = try Pictures.samples(output)[0]
        for (y, row) in luma.enumerated() {
            for (x, sample) in row.enumerated() {
                let p = Double(x) - Double(y) / 2 - 0.25
                if p + 0.5 < 0 || p + 0.5 >= 64 {
                    #expect(sample == 235, "outside the source: the white background at (\(x), \(y))")
                } else if p >= 0, p <= 63 {
                    // The fractions are ¼ or ¾, so rounding is unambiguous.
                    #expect(sample == Int((16 + p).rounded()), "at (\(x), \(y))")
                }
            }
        }
    }

    @Test func degenerateLayersDrawNothingAndNeverTrap() throws {
        let source = try Pictures.make(64, 48, .yuv420p, Pictures.pattern)
        let transforms = [VideoTransform(a: 0, b: 0, c: 0, d: 0, tx: 0, ty: 0),
                          VideoTransform(a: 1, b: 0, c: 0, d: 1, tx: .nan, ty: 0),
                          VideoTransform(a: 1, b: 0, c: 0, d: 1, tx: 1e300, ty: -1e300),
                          VideoTransform(a: 2e-15, b: 0, c: 0.001, d: 1e3, tx: 10, ty: 0)]
        for transform in transforms {
            var layer = VideoCompositionLayerInstruction(trackID: 1)
            layer.setTransform(transform, at: .zero)
            let planes = try Pictures.samples(compositor.render(instruction([layer]), at: at(1), sourceFrames: [1: source], width: 64, height: 48))
            #expect(planes[0].joined().allSatisfy { $0 == 16 }, "\(transform) shows only the background")
        }
        var cropped = VideoCompositionLayerInstruction(trackID: 1)
        cropped.setCropRectangle(Rect(x: 10, y: 10, width: -5, height: .nan), at: .zero)
        var invisible = VideoCompositionLayerInstruction(trackID: 2)
        invisible.setOpacity(.nan, at: .zero)
        let planes = try Pictures.samples(compositor.render(instruction([cropped, invisible]), at: at(1),
                                                            sourceFrames: [1: source, 2: source], width: 64, height: 48))
        #expect(planes[0].joined().allSatisfy { $0 == 16 })
        #expect(throws: MediaError.self) { try VideoCompositionRenderContext(size: Size(width: .nan, height: 10), pixelFormat: .yuv420p) }
    }

    /// Apple's cross-dissolve: the top layer's opacity ramps 1 → 0 over the bottom one at 1.
    @Test func aCrossfadeMiddleFrameIsTheEvenBlend() throws {
        let (a, b) = ([200, 100, 150], [50, 160, 90])
        var top = VideoCompositionLayerInstruction(trackID: 1)
        top.setOpacityRamp(fromStartOpacity: 1, toEndOpacity: 0, timeRange: range(0, 2))
        let sources = [1: try Pictures.flat(64, 48, a), 2: try Pictures.flat(64, 48, b)]
        let fade = instruction([top, VideoCompositionLayerInstruction(trackID: 2)], over: range(0, 2))
        let middle = try Pictures.samples(compositor.render(fade, at: at(1), sourceFrames: sources, width: 64, height: 48))
        for plane in 0..<3 {
            // (a + b) / 2 lands on whole numbers here; ±1 code value allows for the blend's rounding.
            let expected = Double(a[plane] + b[plane]) / 2
            #expect(middle[plane].joined().allSatisfy { abs(Double($0) - expected) <= 1 }, "plane \(plane)")
        }
        let start = try Pictures.samples(compositor.render(fade, at: at(0), sourceFrames: sources, width: 64, height: 48))
        #expect(start[0][0][0] == a[0])
    }

    /// Ramping both layers (top 1 → 0, bottom 0 → 1) shows the background through in the middle,
    /// as in AVFoundation: each layer is drawn over what is below it.
    @Test func rampingBothLayersDipsTowardsTheBackground() throws {
        let (a, b) = ([200, 100, 150], [50, 160, 90])
        var top = VideoCompositionLayerInstruction(trackID: 1)
        top.setOpacityRamp(fromStartOpacity: 1, toEndOpacity: 0, timeRange: range(0, 2))
        var bottom = VideoCompositionLayerInstruction(trackID: 2)
        bottom.setOpacityRamp(fromStartOpacity: 0, toEndOpacity: 1, timeRange: range(0, 2))
        let sources = [1: try Pictures.flat(64, 48, a), 2: try Pictures.flat(64, 48, b)]
        let middle = try Pictures.samples(compositor.render(instruction([top, bottom], over: range(0, 2)), at: at(1),
                                                            sourceFrames: sources, width: 64, height: 48))
        let black = [16, 128, 128]
        for plane in 0..<3 {
            // 0.5·a + 0.5·(0.5·b + 0.5·black), ±1 code value for two roundings.
            let expected = 0.5 * Double(a[plane]) + 0.25 * Double(b[plane]) + 0.25 * Double(black[plane])
            #expect(middle[plane].joined().allSatisfy { abs(Double($0) - expected) <= 1 }, "plane \(plane)")
        }
    }

    @Test func tenBitIdentityAndOpacity() throws {
        let tenBit = SoftwareCompositor(depth: .tenBit)
        let source = try Pictures.make(64, 48, .yuv420p10) { plane, x, y in 64 + (x * 29 + y * 31 + plane * 200) % 876 }
        let copy = try tenBit.render(instruction([VideoCompositionLayerInstruction(trackID: 1)]), at: at(1),
                                     sourceFrames: [1: source], width: 64, height: 48)
        #expect(copy.pixelFormat == .yuv420p10)
        #expect(try Pictures.samples(copy) == Pictures.samples(source))

        var white = VideoCompositionLayerInstruction(trackID: 1)
        white.setOpacity(0.5, at: .zero)
        let blended = try Pictures.samples(tenBit.render(instruction([white]), at: at(1),
                                                         sourceFrames: [1: try Pictures.flat(64, 48, [940, 512, 512], .yuv420p10)],
                                                         width: 64, height: 48))
        // 10-bit white 940 over the 10-bit black background 64: 502, ±1 code value for rounding.
        #expect(blended[0].joined().allSatisfy { abs($0 - 502) <= 1 })
        #expect(blended[1].joined().allSatisfy { $0 == 512 })
    }

    @Test func aRequestRendersIntoThePool() throws {
        let context = try VideoCompositionRenderContext(size: Size(width: 64, height: 48), pixelFormat: .yuv420p)
        let source = try Pictures.make(64, 48, .yuv420p, Pictures.pattern)
        let request = VideoCompositionRequest(compositionTime: at(1), instruction: instruction([VideoCompositionLayerInstruction(trackID: 1)]),
                                              sourceFrames: [1: source], renderContext: context)
        let output = try compositor.renderFrame(request)
        #expect(context.pool.allocationCount == 1)
        #expect(try Pictures.samples(output) == Pictures.samples(source))
    }

    /// At full HD every layer kind renders right into one reused picture: an exact copy, a
    /// half-opaque blend over the black background, a quarter turn (transpose=clock) and an exact
    /// nv12 conversion, each checked sample by sample against the pattern's closed form. Each case
    /// overwrites the previous one's output, so a row or column left undrawn shows too.
    @Test func everyLayerKindIsRightAt1080p() throws {
        let (width, height) = (1920, 1080)
        let source = try Pictures.make(width, height, .yuv420p, Pictures.pattern)
        let portrait = try Pictures.make(height, width, .yuv420p, Pictures.pattern)
        let nv12Source = try Pictures.make(width, height, .nv12, Pictures.pattern)
        var half = VideoCompositionLayerInstruction(trackID: 1)
        half.setOpacity(0.5, at: .zero)
        var turned = VideoCompositionLayerInstruction(trackID: 2)
        turned.setTransform(VideoTransform(rotationDegrees: 90, size: Size(width: height, height: width)), at: .zero)
        let black = [16, 128, 128]
        // transpose=clock: out(x, y) = in(x: y, y: H − 1 − x), H the portrait plane's height.
        let quarterTurn = try Pictures.make(width, height) { plane, x, y in
            Pictures.pattern(plane, y, (plane == 0 ? width : width / 2) - 1 - x)
        }
        let cases: [(name: String, instruction: VideoCompositionInstruction, expected: PixelBuffer, tolerance: Int)] = [
            ("90° rotation", instruction([turned]), quarterTurn, 0),
            ("identity", instruction([VideoCompositionLayerInstruction(trackID: 1)]), source, 0),
            // Half of the pattern over black: (p + background) / 2, either neighbour of a .5.
            ("opacity 0.5", instruction([half]), try Pictures.make(width, height) { plane, x, y in
                (Pictures.pattern(plane, x, y) + black[plane]) / 2
            }, 1),
            ("identity from nv12", instruction([VideoCompositionLayerInstruction(trackID: 3)]), source, 0),
        ]
        let output = try PixelBuffer(width: width, height: height, pixelFormat: .yuv420p)
        for (name, instruction, expected, tolerance) in cases {
            try compositor.render(instruction, at: at(1), sourceFrames: [1: source, 2: portrait, 3: nv12Source], into: output)
            let difference = try Pictures.firstDifference(output, expected, tolerance: tolerance)
            #expect(difference == nil, "\(name): \(difference ?? "")")
        }
    }
}

import Foundation
import FFmpegSupport
import Testing
@testable import VAFoundation

/// How a layer instruction's crop and transform become the video processor's regions, turns
/// and mirroring (hand-computed cases).
@Suite struct LayerPlacementTests {
    private func place(_ t: VideoTransform, crop: Rect? = nil, source: (Int, Int) = (320, 240),
                       render: (Int, Int) = (320, 240)) -> LayerPlacement.Outcome {
        LayerPlacement.place(transform: t, crop: crop, sourceWidth: source.0, sourceHeight: source.1,
                             renderWidth: render.0, renderHeight: render.1)
    }

    private func rect(_ x: Int, _ y: Int, _ w: Int, _ h: Int) -> Rect { .init(x: x, y: y, width: w, height: h) }

    @Test func theIdentityDrawsTheWholePictureInPlace() {
        #expect(place(.identity) == .placed(.init(sourceRegion: rect(0, 0, 320, 240), outputRegion: rect(0, 0, 320, 240),
                                                   rotation: .none, mirror: [])))
    }

    @Test func aHalfScaleInTheCornerIsPictureInPicture() {
        let t = VideoTransform(a: 0.5, b: 0, c: 0, d: 0.5, tx: 150, ty: 110)
        #expect(place(t) == .placed(.init(sourceRegion: rect(0, 0, 320, 240), outputRegion: rect(150, 110, 160, 120),
                                           rotation: .none, mirror: [])))
    }

    @Test func whatFallsOffThePictureIsCutFromTheSourceToo() {
        // Twice the size, moved 100 px left: render x 0..<320 shows source x 50..<210.
        let t = VideoTransform(a: 2, b: 0, c: 0, d: 2, tx: -100, ty: 0)
        #expect(place(t) == .placed(.init(sourceRegion: rect(50, 0, 160, 120), outputRegion: rect(0, 0, 320, 240),
                                           rotation: .none, mirror: [])))
    }

    @Test func theCropRectangleIsTheSourceRegion() {
        let t = VideoTransform(a: 1, b: 0, c: 0, d: 1, tx: -40, ty: -20)
        #expect(place(t, crop: Rect(x: 40, y: 20, width: 100, height: 50)) ==
                .placed(.init(sourceRegion: rect(40, 20, 100, 50), outputRegion: rect(0, 0, 100, 50), rotation: .none, mirror: [])))
    }

    @Test func aQuarterTurnClockwiseIsVARotation90() {
        // A 320x240 picture turned 90° clockwise into a 240x320 render: x' = 240 − y, y' = x.
        let t = VideoTransform(rotationDegrees: 90, size: Size(width: 320, height: 240))
        #expect(place(t, render: (240, 320)) == .placed(.init(sourceRegion: rect(0, 0, 320, 240), outputRegion: rect(0, 0, 240, 320),
                                                              rotation: .clockwise90, mirror: [])))
        let back = VideoTransform(rotationDegrees: 270, size: Size(width: 320, height: 240))
        #expect(place(back, render: (240, 320)) == .placed(.init(sourceRegion: rect(0, 0, 320, 240), outputRegion: rect(0, 0, 240, 320),
                                                                 rotation: .clockwise270, mirror: [])))
    }

    @Test func mirrorsAndHalfTurnsKeepTheirRegion() {
        let h = VideoTransform(a: -1, b: 0, c: 0, d: 1, tx: 320, ty: 0)
        let v = VideoTransform(a: 1, b: 0, c: 0, d: -1, tx: 0, ty: 240)
        let half = VideoTransform(a: -1, b: 0, c: 0, d: -1, tx: 320, ty: 240)
        let transpose = VideoTransform(a: 0, b: 1, c: 1, d: 0, tx: 0, ty: 0)
        let whole = rect(0, 0, 320, 240)
        #expect(place(h) == .placed(.init(sourceRegion: whole, outputRegion: whole, rotation: .none, mirror: .horizontal)))
        #expect(place(v) == .placed(.init(sourceRegion: whole, outputRegion: whole, rotation: .none, mirror: .vertical)))
        #expect(place(half) == .placed(.init(sourceRegion: whole, outputRegion: whole, rotation: .clockwise180, mirror: [])))
        // x' = y, y' = x: a quarter turn clockwise (x' = −y) then a horizontal mirror.
        #expect(place(transpose, render: (240, 320)) == .placed(.init(sourceRegion: whole, outputRegion: rect(0, 0, 240, 320),
                                                                      rotation: .clockwise90, mirror: .horizontal)))
    }

    @Test func anArbitraryTurnIsLeftToSoftwareAndOffscreenLayersToNobody() {
        let angle = 30.0 * .pi / 180
        let turned = VideoTransform(a: cos(angle), b: sin(angle), c: -sin(angle), d: cos(angle), tx: 100, ty: 0)
        guard case .unsupported = place(turned) else {
            Issue.record("a 30° turn was placed on the video processor")
            return
        }
        #expect(place(VideoTransform(a: 1, b: 0, c: 0, d: 1, tx: 400, ty: 0)) == .hidden)
        #expect(place(VideoTransform(a: 0, b: 0, c: 0, d: 0, tx: 0, ty: 0)) == .hidden)
        #expect(place(.identity, crop: Rect(x: 400, y: 0, width: 10, height: 10)) == .hidden)
    }
}

import MediaCore
import Testing

struct PictureFitTests {
    typealias R = Rect

    @Test func fitLetterboxesAndPillarboxesOnTheDisplayedAspect() {
        let same = PictureFit(source: Size(width: 1920, height: 1080), output: Size(width: 1280, height: 720), mode: .fit)
        #expect(same.output == R(x: 0, y: 0, width: 1280, height: 720) && !same.hasBars)
        // 4:3 into 16:9: bars left and right, centred on an even column.
        let pillar = PictureFit(source: Size(width: 640, height: 480), output: Size(width: 1280, height: 720), mode: .fit)
        #expect(pillar.output == R(x: 160, y: 0, width: 960, height: 720) && pillar.hasBars)
        // 1440x1080 with 4:3 pixels displays as 16:9: no bars, square pixels out.
        let anamorphic = PictureFit(source: Size(width: 1440, height: 1080), pixelAspect: 4.0 / 3, output: Size(width: 1920, height: 1080), mode: .fit)
        #expect(anamorphic.output == R(x: 0, y: 0, width: 1920, height: 1080))
        // PAL 16:9 DVB (720x576, 64:45 pixels) into a 1280x720 box: 1280 x 720, no bars.
        let pal = PictureFit(source: Size(width: 720, height: 576), pixelAspect: 64.0 / 45, output: Size(width: 1280, height: 720), mode: .fit)
        #expect(pal.output == R(x: 0, y: 0, width: 1280, height: 720))
        // Portrait into landscape: 405 wide rounds to an even 406, on an even column.
        let portrait = PictureFit(source: Size(width: 1080, height: 1920), output: Size(width: 1280, height: 720), mode: .fit)
        #expect(portrait.output == R(x: 436, y: 0, width: 406, height: 720))
    }

    @Test func fillCropsTheSourceCentred() {
        let crop = PictureFit(source: Size(width: 1920, height: 1080), output: Size(width: 720, height: 720), mode: .fill)
        #expect(crop.source == R(x: 420, y: 0, width: 1080, height: 1080))
        #expect(crop.output == R(x: 0, y: 0, width: 720, height: 720) && !crop.hasBars)
    }

    @Test func stepsFollowTheChromaSubsampling() {
        // 4:4:4 output (step 1) keeps an odd width; 4:2:0 (step 2) rounds to even.
        let odd = PictureFit(source: Size(width: 1080, height: 1920), output: Size(width: 1280, height: 720), mode: .fit, outputStep: (1, 1))
        #expect(odd.output.width == 405 && odd.output.x == 437)
        let even = PictureFit(source: Size(width: 1080, height: 1920), output: Size(width: 1280, height: 720), mode: .fit)
        #expect(even.output.pixelWidth % 2 == 0 && even.output.pixelX % 2 == 0)
        let stretch = PictureFit(source: Size(width: 333, height: 111), output: Size(width: 64, height: 64), mode: .stretch)
        #expect(stretch.source == R(x: 0, y: 0, width: 333, height: 111) && stretch.output == R(x: 0, y: 0, width: 64, height: 64))
    }

    /// A size is a caller's Double: counted in pixels, an odd one cannot trap the conversion.
    @Test func oddSizesCountAsWholePixelsWithoutTrapping() {
        #expect(Size(width: 1279.9, height: 720).pixelWidth == 1279)
        #expect(Size(width: -3, height: .nan).pixelWidth == 0 && Size(width: -3, height: .nan).pixelHeight == 0)
        #expect(Size(width: .infinity, height: 1e300).pixelWidth == Int(Int32.max))
        let fit = PictureFit(source: Size(width: 1920, height: 1080), output: Size(width: .nan, height: 1e300), mode: .fit)
        #expect(fit.outputWidth == 0 && fit.outputHeight == Int(Int32.max))
        // A rectangle's origin may lie left of or above the picture; its sides count as a size's.
        let odd = Rect(x: -3.7, y: .nan, width: 10.9, height: -1)
        #expect(odd.pixelX == -3 && odd.pixelY == 0 && odd.pixelWidth == 10 && odd.pixelHeight == 0)
        #expect(Rect(x: -1e300, y: .infinity, width: 0, height: 0).pixelX == Int(Int32.min))
        #expect(Rect(x: -1e300, y: .infinity, width: 0, height: 0).pixelY == Int(Int32.max))
    }
}

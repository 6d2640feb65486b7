import Testing
@testable import VAFoundation

@Suite struct FrameRateConverterTests {
    private func frames(count: Int, every interval: MediaTime) throws -> [SampleBuffer] {
        let picture = try PixelBuffer(width: 16, height: 16, pixelFormat: .yuv420p)
        return (0..<count).map { i in
            SampleBuffer(pixelBuffer: picture, presentationTimeStamp: MediaTime(value: interval.value * Int64(i), timescale: interval.timescale),
                         duration: interval)
        }
    }

    private func convert(_ input: [SampleBuffer], to fps: Double, end: MediaTime) -> [SampleBuffer] {
        var converter = FrameRateConverter(framesPerSecond: fps, start: .zero)
        return input.flatMap { converter.push($0) } + converter.finish(end: end)
    }

    @Test func sixtyToThirtyKeepsEveryOtherFrame() throws {
        let input = try frames(count: 120, every: MediaTime(value: 1, timescale: 60))
        let output = convert(input, to: 30, end: MediaTime(value: 2, timescale: 1))
        #expect(output.count == 60)
        #expect(output.map(\.presentationTimeStamp) == (0..<60).map { MediaTime(value: Int64($0), timescale: 30) })
        #expect(output.allSatisfy { $0.duration == MediaTime(value: 1, timescale: 30) })
    }

    @Test func fifteenToThirtyRepeatsFrames() throws {
        let input = try frames(count: 15, every: MediaTime(value: 1, timescale: 15))
        #expect(convert(input, to: 30, end: MediaTime(value: 1, timescale: 1)).count == 30)
    }

    @Test func variableTimingBecomesConstant() throws {
        // Frames at 0, 33, 66 ms then a 325 ms gap, like the Android slow-motion sample.
        let picture = try PixelBuffer(width: 16, height: 16, pixelFormat: .yuv420p)
        let times: [Int64] = [0, 33, 66, 391, 424]
        let input = times.map { SampleBuffer(pixelBuffer: picture, presentationTimeStamp: MediaTime(value: $0, timescale: 1000)) }
        let output = convert(input, to: 30, end: MediaTime(value: 457, timescale: 1000))
        #expect(output.count == 14)
        let gaps = zip(output.dropFirst(), output).map { ($0.presentationTimeStamp - $1.presentationTimeStamp) }
        #expect(gaps.allSatisfy { $0 == MediaTime(value: 1, timescale: 30) })
    }

    @Test func ntscRatesStayExact() {
        let converter = FrameRateConverter(framesPerSecond: 29.97, start: .zero)
        #expect(converter.frameDuration == MediaTime(value: 1001, timescale: 30000))
    }
}

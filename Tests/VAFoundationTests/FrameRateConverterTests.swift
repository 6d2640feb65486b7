import Testing
@testable import VAFoundation

@Suite struct FrameRateConverterTests {
    /// `count` frames, each its own picture (so the output can be traced back to its input).
    private func frames(count: Int, every interval: MediaTime) throws -> [SampleBuffer] {
        try (0..<count).map { i in
            SampleBuffer(pixelBuffer: try PixelBuffer(width: 16, height: 16, pixelFormat: .yuv420p),
                         presentationTimeStamp: MediaTime(value: interval.value * Int64(i), timescale: interval.timescale),
                         duration: interval)
        }
    }

    /// For each output, the index of the input picture it carries.
    private func sources(_ output: [SampleBuffer], in input: [SampleBuffer]) -> [Int?] {
        output.map { out in input.firstIndex { $0.imageBuffer === out.imageBuffer } }
    }

    /// The input shown at `time`: the last one that starts at or before it.
    private func shown(at time: MediaTime, _ input: [SampleBuffer]) -> Int? {
        input.lastIndex { $0.presentationTimeStamp <= time }
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
        #expect(sources(output, in: input) == (0..<60).map { 2 * $0 }, "every other picture, not one picture repeated")
    }

    @Test func fifteenToThirtyRepeatsFrames() throws {
        let input = try frames(count: 15, every: MediaTime(value: 1, timescale: 15))
        let output = convert(input, to: 30, end: MediaTime(value: 1, timescale: 1))
        #expect(output.count == 30)
        #expect(sources(output, in: input) == (0..<30).map { $0 / 2 }, "each picture twice, in order")
    }

    @Test func variableTimingBecomesConstant() throws {
        // Frames at 0, 33, 66 ms then a 325 ms gap, like the Android slow-motion sample.
        let times: [Int64] = [0, 33, 66, 391, 424]
        let input = try times.map { SampleBuffer(pixelBuffer: try PixelBuffer(width: 16, height: 16, pixelFormat: .yuv420p),
                                                 presentationTimeStamp: MediaTime(value: $0, timescale: 1000)) }
        let output = convert(input, to: 30, end: MediaTime(value: 457, timescale: 1000))
        #expect(output.count == 14)
        let gaps = zip(output.dropFirst(), output).map { ($0.presentationTimeStamp - $1.presentationTimeStamp) }
        #expect(gaps.allSatisfy { $0 == MediaTime(value: 1, timescale: 30) })
        // Through the gap the last picture before it is held; each output shows the input on screen at its time.
        #expect(sources(output, in: input) == output.map { shown(at: $0.presentationTimeStamp, input) })
        #expect(Set(sources(output, in: input).compactMap { $0 }) == Set(0..<5), "every input picture appears")
    }

    @Test func ntscRatesStayExact() {
        let converter = FrameRateConverter(framesPerSecond: 29.97, start: .zero)
        #expect(converter.frameDuration == MediaTime(value: 1001, timescale: 30000))
    }
}

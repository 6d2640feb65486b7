/// Retimes decoded video to a constant frame rate: each output tick shows the source frame on
/// screen at that instant (the latest one starting at or before it), so faster sources drop
/// frames and slower or irregular ones repeat them. Pictures are shared, never copied.
struct FrameRateConverter {
    /// Output frame interval, e.g. 1/30 s or 1001/30000 s.
    let frameDuration: MediaTime
    /// Time of the first output tick.
    let start: MediaTime
    private var nextTick: Int64 = 0
    private var held: SampleBuffer?

    /// A converter to `framesPerSecond` (29.97 and friends are kept exact as 30000/1001).
    init(framesPerSecond: Double, start: MediaTime) {
        let ntsc = (framesPerSecond * 1.001).rounded()
        if abs(framesPerSecond - ntsc / 1.001) < 0.001 && framesPerSecond.rounded() != framesPerSecond {
            frameDuration = MediaTime(value: 1001, timescale: Int32(ntsc * 1000))
        } else {
            let scaled = (framesPerSecond * 1000).rounded()
            frameDuration = MediaTime(value: 1000, timescale: Int32(max(scaled, 1)))
        }
        self.start = start
    }

    /// The same rate on a grid starting at `start`, holding nothing: for resuming at one of
    /// this converter's ticks.
    init(resuming converter: FrameRateConverter, at start: MediaTime) {
        frameDuration = converter.frameDuration
        self.start = start
    }

    private func tickTime(_ index: Int64) -> MediaTime {
        start + MediaTime(value: frameDuration.value * index, timescale: frameDuration.timescale)
    }

    /// Takes the next source frame (in presentation order) and returns the output frames whose
    /// ticks fall before it.
    mutating func push(_ frame: SampleBuffer) -> [SampleBuffer] {
        if held == nil { held = frame }
        var output: [SampleBuffer] = []
        while tickTime(nextTick) < frame.presentationTimeStamp, let shown = held {
            output.append(retimed(shown, at: tickTime(nextTick)))
            nextTick += 1
        }
        held = frame
        return output
    }

    /// Returns the remaining output frames up to (not including) `end`.
    mutating func finish(end: MediaTime) -> [SampleBuffer] {
        var output: [SampleBuffer] = []
        while let shown = held, tickTime(nextTick) < end {
            output.append(retimed(shown, at: tickTime(nextTick)))
            nextTick += 1
        }
        held = nil
        return output
    }

    private func retimed(_ frame: SampleBuffer, at time: MediaTime) -> SampleBuffer {
        SampleBuffer(content: frame.content, packet: nil, codecParameters: nil, presentationTimeStamp: time,
                     decodeTimeStamp: .invalid, duration: frameDuration, formatDescription: frame.formatDescription,
                     attachments: SampleAttachments())
    }
}

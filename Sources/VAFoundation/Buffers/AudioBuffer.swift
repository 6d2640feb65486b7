import FFmpegSupport

/// A block of decoded audio samples for every channel (`AudioBufferList`'s role).
/// Reference-counted like `PixelBuffer`; sample bytes are reached inside scoped accessors.
// @unchecked: the frame is written only by its creator before it is handed on, then read by any number of holders.
public final class AudioBuffer: @unchecked Sendable {
    let frame: Frame

    init(frame: Frame) {
        self.frame = frame
    }

    /// A new buffer for `sampleCount` samples per channel, zero-filled. `channelLayout` is
    /// FFmpeg's text ("stereo", "5.1(side)"); nil takes the default for `channelCount`.
    public convenience init(sampleCount: Int, format: AudioSampleFormat, sampleRate: Int, channelCount: Int,
                            channelLayout: String? = nil) throws {
        guard let id = SampleFormatID(format) else {
            throw MediaError(.unsupported, "audio sample format \(format) is unknown to FFmpeg")
        }
        guard sampleCount > 0, sampleRate > 0, channelCount > 0 else {
            throw MediaError(.invalidArgument, "audio buffer needs positive sample count, rate and channels")
        }
        do {
            self.init(frame: try Frame(sampleCount: sampleCount, sampleFormat: id, sampleRate: sampleRate,
                                       channelCount: channelCount, channelLayout: channelLayout))
        } catch {
            throw MediaError(.invalidArgument, "cannot allocate \(sampleCount) samples of \(channelCount)-channel \(format)", underlying: error)
        }
        try withUnsafeMutableChannels { channels in
            for c in channels { c.initializeMemory(as: UInt8.self, repeating: format == .uint8 ? 0x80 : 0) }
        }
    }

    /// Samples per channel.
    public var sampleCount: Int { frame.sampleCount }
    public var sampleRate: Int { frame.sampleRate }
    public var channelCount: Int { frame.channelCount }
    /// FFmpeg's text for the layout ("stereo"), nil when unknown.
    public var channelLayout: String? { frame.channelLayout }
    public var format: AudioSampleFormat { AudioSampleFormat(frame.sampleFormat) }

    /// Calls `body` with one buffer per channel for planar formats, or one interleaved buffer.
    public func withUnsafeChannels<R>(_ body: ([UnsafeRawBufferPointer]) throws -> R) rethrows -> R {
        try body(buffers().map { UnsafeRawBufferPointer($0) })
    }

    /// Like `withUnsafeChannels`, writable; un-shares the samples first if another buffer references them.
    public func withUnsafeMutableChannels<R>(_ body: ([UnsafeMutableRawBufferPointer]) throws -> R) throws -> R {
        do { try frame.makeWritable() } catch {
            throw MediaError(.invalidState, "cannot make the audio writable", underlying: error)
        }
        return try body(buffers())
    }

    /// A deep copy in newly allocated memory.
    public func copy() throws -> AudioBuffer {
        do { return AudioBuffer(frame: try frame.copy()) } catch {
            throw MediaError(.invalidState, "cannot copy the audio", underlying: error)
        }
    }

    private func buffers() -> [UnsafeMutableRawBufferPointer] {
        let planar = frame.sampleFormat.isPlanar
        let bytes = frame.sampleCount * frame.sampleFormat.bytesPerSample * (planar ? 1 : frame.channelCount)
        let count = planar ? frame.channelCount : 1
        return (0..<count).map { UnsafeMutableRawBufferPointer(start: frame.extendedData(plane: $0), count: bytes) }
    }
}

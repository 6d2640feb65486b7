import FFmpegSupport

/// One timed unit of media (`CMSampleBuffer`'s role): a compressed packet as stored in the file,
/// or a decoded picture or block of audio, with its timing and format.
// @unchecked: immutable once handed on (the producer sets `attachments` first); its packet and parameters are never mutated through it.
public final class SampleBuffer: @unchecked Sendable {
    /// What the sample holds.
    public enum Content {
        /// Compressed bytes exactly as the container stores them.
        case compressed
        case pixelBuffer(PixelBuffer)
        case audio(AudioBuffer)
    }

    public let content: Content
    public let presentationTimeStamp: MediaTime
    /// Decode time; `.invalid` for decoded samples and where it equals the presentation time unknown.
    public let decodeTimeStamp: MediaTime
    public let duration: MediaTime
    public let formatDescription: FormatDescription
    public var attachments: SampleAttachments

    /// The compressed packet, for `.compressed` samples.
    let packet: Packet?
    /// The codec parameters of a compressed sample's stream, so a writer can pass it through.
    let codecParameters: CodecParameters?

    init(content: Content, packet: Packet?, codecParameters: CodecParameters?, presentationTimeStamp: MediaTime,
         decodeTimeStamp: MediaTime, duration: MediaTime, formatDescription: FormatDescription, attachments: SampleAttachments) {
        self.content = content
        self.packet = packet
        self.codecParameters = codecParameters
        self.presentationTimeStamp = presentationTimeStamp
        self.decodeTimeStamp = decodeTimeStamp
        self.duration = duration
        self.formatDescription = formatDescription
        self.attachments = attachments
    }

    /// A sample for a picture a program made, e.g. to append through a writer input.
    public convenience init(pixelBuffer: PixelBuffer, presentationTimeStamp: MediaTime, duration: MediaTime = .invalid) {
        let format = FormatDescription(
            mediaType: .video, codec: "rawvideo",
            video: VideoFormat(width: pixelBuffer.width, height: pixelBuffer.height, pixelFormat: pixelBuffer.pixelFormat.rawValue))
        self.init(content: .pixelBuffer(pixelBuffer), packet: nil, codecParameters: nil, presentationTimeStamp: presentationTimeStamp,
                  decodeTimeStamp: .invalid, duration: duration, formatDescription: format, attachments: SampleAttachments())
    }

    /// A sample for audio a program made; the duration follows from the sample count and rate.
    public convenience init(audioBuffer: AudioBuffer, presentationTimeStamp: MediaTime) {
        let format = FormatDescription(
            mediaType: .audio, codec: "pcm",
            audio: AudioFormat(sampleRate: audioBuffer.sampleRate, channelCount: audioBuffer.channelCount,
                               channelLayout: audioBuffer.channelLayout, sampleFormat: audioBuffer.format.rawValue))
        self.init(content: .audio(audioBuffer), packet: nil, codecParameters: nil, presentationTimeStamp: presentationTimeStamp,
                  decodeTimeStamp: .invalid,
                  duration: MediaTime(value: Int64(audioBuffer.sampleCount), timescale: Int32(audioBuffer.sampleRate)),
                  formatDescription: format, attachments: SampleAttachments())
    }

    /// The picture, for decoded video samples (`CMSampleBufferGetImageBuffer`).
    public var imageBuffer: PixelBuffer? {
        if case .pixelBuffer(let buffer) = content { return buffer }
        return nil
    }

    /// The samples, for decoded audio.
    public var audioBuffer: AudioBuffer? {
        if case .audio(let buffer) = content { return buffer }
        return nil
    }

    /// True for a sample a decoder can start from (a keyframe); decoded samples are always sync.
    public var isSync: Bool { attachments.isSync }

    /// Bytes of compressed data (`CMSampleBufferGetTotalSampleSize`); 0 for decoded samples.
    public var totalSampleSize: Int { packet?.size ?? 0 }

    /// The host memory the sample holds: a packet's payload, a host picture's pixels, audio's
    /// samples. A picture on a GPU surface holds none (its surface pool bounds it). What the
    /// writer's inputs count against `PipelineBounds.writerQueuedBytes`.
    var hostByteCount: Int {
        switch content {
        case .compressed: totalSampleSize
        case .pixelBuffer(let picture): picture.isSurfaceBacked ? 0 : picture.frame.hostImageByteCount
        case .audio(let audio): audio.frame.sampleCount * audio.frame.channelCount * audio.frame.sampleFormat.bytesPerSample
        }
    }

    /// Calls `body` with a compressed sample's bytes (empty for decoded samples).
    public func withUnsafeDataBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let packet else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try packet.withUnsafeBytes(body)
    }

    /// Presentation time after trimming (`CMSampleBufferGetOutputPresentationTimeStamp`).
    public var outputPresentationTimeStamp: MediaTime {
        attachments.trimDurationAtStart.isNumeric ? presentationTimeStamp + attachments.trimDurationAtStart : presentationTimeStamp
    }

    /// Duration after trimming at both ends (`CMSampleBufferGetOutputDuration`).
    public var outputDuration: MediaTime {
        var d = duration
        if attachments.trimDurationAtStart.isNumeric { d = d - attachments.trimDurationAtStart }
        if attachments.trimDurationAtEnd.isNumeric { d = d - attachments.trimDurationAtEnd }
        return d
    }
}

/// Per-sample flags and trims (Core Media's sample and buffer attachments).
public struct SampleAttachments: Sendable, Hashable {
    /// A decoder can start here (not `kCMSampleAttachmentKey_NotSync`).
    public var isSync: Bool = true
    /// The sample needs earlier samples to decode (`DependsOnOthers`).
    public var dependsOnOthers: Bool = false
    /// Decode but don't show (`DoNotDisplay`): edit-list priming or hidden frames.
    public var doNotDisplay: Bool = false
    /// Audio to drop at the start, e.g. encoder priming (`TrimDurationAtStart`).
    public var trimDurationAtStart: MediaTime = .invalid
    /// Audio to drop at the end (`TrimDurationAtEnd`).
    public var trimDurationAtEnd: MediaTime = .invalid
    /// Samples before this one are missing or were skipped (`ResetDecoderBeforeDecoding`'s cause).
    public var discontinuity: Bool = false

    public init() {}
}

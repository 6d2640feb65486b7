import FFmpegSupport

/// One timed unit of media (`CMSampleBuffer`'s role): a compressed packet as stored in the file,
/// or a decoded picture or block of audio, with its timing and format.
// @unchecked: its attachments are behind a lock; the rest is immutable, and its packet and parameters are never mutated through it.
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
    /// The sample's flags, trims and keyed values; any holder may read and set them.
    public var attachments: SampleAttachments {
        get { storedAttachments.withLock { $0 } }
        set { storedAttachments.withLock { $0 = newValue } }
    }
    private let storedAttachments: Locked<SampleAttachments>

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
        self.storedAttachments = Locked(attachments)
    }

    /// The attachment under `key` (`CMGetAttachment`), nil when there is none. The sample keys
    /// read the typed flags and trims (`NotSync`, `DependsOnOthers`, `DoNotDisplay`,
    /// `TrimDurationAtStart`, `TrimDurationAtEnd`, `ResetDecoderBeforeDecoding`); any other key
    /// what was set under it. A decoded picture carries its decoder's per-picture metadata,
    /// such as a JPEG's EXIF tags, as a dictionary under `MetadataDictionary`.
    public func attachment(forKey key: String) -> AttachmentValue? {
        storedAttachments.withLock { $0[key] }
    }

    /// Sets the attachment under `key` (`CMSetAttachment`); nil removes it (`CMRemoveAttachment`).
    public func setAttachment(_ value: AttachmentValue?, forKey key: String) {
        storedAttachments.withLock { $0[key] = value }
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
    /// Values under keys of the caller's own, or that no typed field above holds.
    public var values: [String: AttachmentValue] = [:]

    public init() {}

    /// The attachment under `key`: the typed fields under Core Media's names, else `values`.
    public subscript(key: String) -> AttachmentValue? {
        get {
            switch key {
            // A flag that is not set is absent, as Core Media leaves it out.
            case Self.notSync: isSync ? nil : .bool(true)
            case Self.dependsOnOthers: dependsOnOthers ? .bool(true) : nil
            case Self.doNotDisplay: doNotDisplay ? .bool(true) : nil
            case Self.resetDecoderBeforeDecoding: discontinuity ? .bool(true) : nil
            case Self.trimDurationAtStart: trimDurationAtStart.isNumeric ? .time(trimDurationAtStart) : nil
            case Self.trimDurationAtEnd: trimDurationAtEnd.isNumeric ? .time(trimDurationAtEnd) : nil
            default: values[key]
            }
        }
        set {
            switch key {
            case Self.notSync: isSync = !(newValue?.boolValue ?? false)
            case Self.dependsOnOthers: dependsOnOthers = newValue?.boolValue ?? false
            case Self.doNotDisplay: doNotDisplay = newValue?.boolValue ?? false
            case Self.resetDecoderBeforeDecoding: discontinuity = newValue?.boolValue ?? false
            case Self.trimDurationAtStart: trimDurationAtStart = newValue?.timeValue ?? .invalid
            case Self.trimDurationAtEnd: trimDurationAtEnd = newValue?.timeValue ?? .invalid
            default: values[key] = newValue
            }
        }
    }

    /// Core Media's keys for the typed fields (`kCMSampleAttachmentKey_NotSync`…).
    public static let notSync = "NotSync"
    public static let dependsOnOthers = "DependsOnOthers"
    public static let doNotDisplay = "DoNotDisplay"
    public static let resetDecoderBeforeDecoding = "ResetDecoderBeforeDecoding"
    public static let trimDurationAtStart = "TrimDurationAtStart"
    public static let trimDurationAtEnd = "TrimDurationAtEnd"
    /// A decoded picture's per-picture metadata from its decoder (a JPEG's EXIF tags), a dictionary of text.
    public static let metadataDictionary = "MetadataDictionary"
}

/// A value attached to a sample under a key (what `CMGetAttachment` returns): numbers, text,
/// bytes, times, and arrays and dictionaries of them.
public enum AttachmentValue: Sendable, Hashable {
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case data([UInt8])
    case time(MediaTime)
    indirect case array([AttachmentValue])
    indirect case dictionary([String: AttachmentValue])

    public var boolValue: Bool? { if case .bool(let v) = self { v } else { nil } }
    public var stringValue: String? { if case .string(let v) = self { v } else { nil } }
    public var timeValue: MediaTime? { if case .time(let v) = self { v } else { nil } }
    public var dictionaryValue: [String: AttachmentValue]? { if case .dictionary(let v) = self { v } else { nil } }
}

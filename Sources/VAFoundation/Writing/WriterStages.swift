import FFmpegSupport
import HardwareAcceleration

/// Turns pictures of any size and host pixel format into encoded packets: scales them to the
/// encoder's size with the input's scaling mode, then encodes. Confined to the writer's queue.
///
/// A VA-API encoder takes GPU surfaces: surfaces of its size go in as they are, others are
/// scaled by the device's video processor, host pictures are fitted in host memory and
/// uploaded once. A software encoder given a surface downloads it once.
final class WriterVideoStage {
    let encoder: Encoder
    let scalingMode: ScalingMode
    /// The host format pictures are fitted into: the encoder's, or its surfaces' layout.
    private let hostFormat: PixelFormatID
    private let outputFrames: FramePool
    private var scaler: Scaler?
    private var surfaceScaler: SurfaceScaler?
    /// The range the encoder tags its output with (nil: unspecified); surfaces in the other
    /// range are converted by the video processor.
    let fullRange: Bool?

    /// Told where this stage encoded and scaled, and of each copy it made.
    private let observations: StageObservations?

    init(encoder: Encoder, scalingMode: ScalingMode, fullRange: Bool? = nil, observations: StageObservations? = nil) throws(FFmpegError) {
        self.encoder = encoder
        self.scalingMode = scalingMode
        self.fullRange = fullRange
        self.observations = observations
        hostFormat = encoder.hardwareFrames?.softwareFormat ?? encoder.pixelFormat
        outputFrames = try FramePool(width: encoder.width, height: encoder.height, pixelFormat: hostFormat, capacity: PipelineBounds.writerHostFrames)
    }

    /// Encodes `picture` at `pts` (encoder time base), as a keyframe when `forcingKeyframe`,
    /// and returns the packets that became ready. Throws FFmpeg's errors, and `VAError` when
    /// the video processor fails fitting a surface for the device's encoder.
    func encode(_ picture: PixelBuffer, pts: Int64, duration: Int64, forcingKeyframe: Bool = false) throws -> [Packet] {
        let frame = try prepare(picture.frame)
        frame.pts = pts
        frame.duration = duration
        var packets: [Packet] = []
        while try encoder.send(frame, forcingKeyframe: forcingKeyframe) == .outputPending {
            try drain(into: &packets)
        }
        try drain(into: &packets)
        return packets
    }

    /// Flushes the encoder and returns its remaining packets.
    func finish() throws(FFmpegError) -> [Packet] {
        try encoder.sendEndOfStream()
        var packets: [Packet] = []
        try drain(into: &packets)
        return packets
    }

    private func drain(into packets: inout [Packet]) throws(FFmpegError) {
        while case .packet(let packet) = try encoder.receivePacket() { packets.append(packet) }
    }

    /// `source` as the frame the encoder takes: on its surfaces for a VA-API encoder, in
    /// host memory for a software one.
    private func prepare(_ source: Frame) throws -> Frame {
        guard let surfaces = encoder.hardwareFrames else {
            observations?.encoded(on: .host)
            guard source.surfaceSoftwareFormat != nil else { return try fit(source) }
            let host = try source.transferToHost()
            observations?.transferred(host)
            return try fit(host)
        }
        observations?.encoded(on: .device)
        guard let layout = source.surfaceSoftwareFormat else {
            let host = try fit(source)
            observations?.transferred(host)
            return try surfaces.upload(host)
        }
        let rangeMatches = fullRange.map { $0 == (source.isFullRange == true) } ?? true
        if layout == surfaces.softwareFormat && source.width == encoder.width && source.height == encoder.height && rangeMatches {
            return try source.reference()
        }
        if surfaceScaler == nil { surfaceScaler = try SurfaceScaler(output: surfaces) }
        observations?.scaled(on: .device)
        return try surfaceScaler!.scale(source, fit: scalingMode.pictureFit, outputFullRange: fullRange)
    }

    /// `source` as a host frame of the encoder's size and format, sharing its pixels when it already is one.
    private func fit(_ source: Frame) throws(FFmpegError) -> Frame {
        let (W, H) = (encoder.width, encoder.height)
        if source.width == W && source.height == H && source.pixelFormat == hostFormat {
            return try source.reference()
        }
        observations?.scaled(on: .host)
        let destination: Frame
        if let recycled = try outputFrames.makeFrame() {
            destination = recycled
        } else {
            destination = try Frame(width: W, height: H, pixelFormat: hostFormat)
        }
        // One rule for every scaler (PictureFit), aligned to the formats' chroma subsampling.
        let outputSub = WriterCodecs.subsampling(hostFormat), sourceSub = WriterCodecs.subsampling(source.pixelFormat)
        let fit = PictureFit(source: Size(width: source.width, height: source.height), pixelAspect: source.pixelAspect, output: Size(width: W, height: H),
                             mode: scalingMode.pictureFit,
                             sourceStep: (sourceSub.horizontal ? 2 : 1, sourceSub.vertical ? 2 : 1),
                             outputStep: (outputSub.horizontal ? 2 : 1, outputSub.vertical ? 2 : 1))
        if fit.hasBars { try destination.fillBlack() }
        try scale(source.cropped(to: fit.source), into: destination, width: fit.output.pixelWidth, height: fit.output.pixelHeight,
                  x: fit.output.pixelX, y: fit.output.pixelY)
        return destination
    }

    /// Scales with the source frame's range tag and the encoder's range (the format's default when unset).
    private func scale(_ source: Frame, into destination: Frame, width: Int, height: Int, x: Int, y: Int) throws(FFmpegError) {
        let sourceFull = source.isFullRange ?? source.pixelFormat.impliesFullRange
        let outputFull = hostFormat.impliesFullRange || (fullRange ?? false)
        if let s = scaler, s.sourceWidth == source.width, s.sourceHeight == source.height, s.sourceFormat == source.pixelFormat,
           s.outputWidth == width, s.outputHeight == height, s.sourceFullRange == sourceFull, s.outputFullRange == outputFull {
            try s.scale(source, into: destination, x: x, y: y)
            return
        }
        let s = try Scaler(from: source.width, source.height, source.pixelFormat, to: width, height, hostFormat,
                           sourceFullRange: sourceFull, outputFullRange: outputFull)
        scaler = s
        try s.scale(source, into: destination, x: x, y: y)
    }
}

/// Turns audio of any rate, format and layout into encoded packets: resamples to the
/// encoder's format, cuts fixed-size frames, stamps them by sample count, encodes.
/// Confined to the writer's queue.
final class WriterAudioStage {
    let encoder: Encoder
    private let chunker: WriterAudioChunker
    private var resampler: Resampler?
    private var resamplerSource: (rate: Int, format: SampleFormatID, channels: Int)?
    /// Timestamp (in samples) of the first sample the chunker holds; nil before the first buffer.
    private var chunkStart: Int64?
    /// Samples still to drop because they lie before the session start.
    private var skip = 0
    /// No sample at or after this index (the session end) is encoded.
    var limit: Int64?

    /// No packet of this encoder starts before this (in samples after the session start): its
    /// first sample less the encoder's priming. Nil before the first buffer.
    var earliestPacketTime: Int64? { chunkStart.map { $0 - Int64(encoder.initialPadding) - 1 } }

    init(encoder: Encoder) {
        self.encoder = encoder
        chunker = WriterAudioChunker(format: encoder.sampleFormat, sampleRate: encoder.sampleRate,
                                     channelCount: encoder.channelCount, channelLayout: encoder.channelLayout)
    }

    /// Encodes `audio`, whose first sample lies `start` samples (at the encoder's rate) after
    /// the session start; later buffers are taken as continuing the earlier ones.
    func encode(_ audio: AudioBuffer, start: Int64) throws(FFmpegError) -> [Packet] {
        if chunkStart == nil {
            chunkStart = max(0, start)
            skip = start < 0 ? Int(-start) : 0
        }
        let source = audio.frame
        let converted: Frame?
        if source.sampleRate == encoder.sampleRate && source.sampleFormat == encoder.sampleFormat
            && source.channelCount == encoder.channelCount {
            converted = source
        } else {
            converted = try resample(source)
        }
        if let converted { add(converted) }
        return try encodeFullFrames()
    }

    /// Encodes what is left (padding the last frame with silence if the encoder needs whole
    /// frames), flushes the encoder and returns its remaining packets.
    func finish() throws(FFmpegError) -> [Packet] {
        if let resampler, let rest = try resampler.convert(nil) { add(rest) }
        var packets = try encodeFullFrames()
        let size = encoder.frameSize
        if chunker.count > 0 {
            if size > 0 && !encoder.acceptsShortLastFrame {
                let silence = try Frame(sampleCount: size - chunker.count, sampleFormat: encoder.sampleFormat,
                                        sampleRate: encoder.sampleRate, channelCount: encoder.channelCount,
                                        channelLayout: encoder.channelLayout)
                let planes = encoder.sampleFormat.isPlanar ? encoder.channelCount : 1
                let bytes = silence.sampleCount * encoder.sampleFormat.bytesPerSample * (encoder.sampleFormat.isPlanar ? 1 : encoder.channelCount)
                for p in 0..<planes { silence.extendedData(plane: p)?.initializeMemory(as: UInt8.self, repeating: 0, count: bytes) }
                chunker.append(silence)
            }
            try send(chunker.take(chunker.count), into: &packets)
        }
        try encoder.sendEndOfStream()
        try drain(into: &packets)
        return packets
    }

    private func resample(_ source: Frame) throws(FFmpegError) -> Frame? {
        let key = (rate: source.sampleRate, format: source.sampleFormat, channels: source.channelCount)
        if resampler == nil || resamplerSource.map({ $0 != key }) ?? true {
            resampler = try Resampler(sourceSampleRate: key.rate, sourceFormat: key.format, sourceChannelCount: key.channels,
                                      sourceLayout: source.channelLayout, outputSampleRate: encoder.sampleRate,
                                      outputFormat: encoder.sampleFormat, outputChannelCount: encoder.channelCount,
                                      outputLayout: encoder.channelLayout)
            resamplerSource = key
        }
        return try resampler?.convert(source)
    }

    private func add(_ frame: Frame) {
        let skipped = min(skip, frame.sampleCount)
        chunker.append(frame, skipping: skipped)
        skip -= skipped
        if let limit, let chunkStart {
            chunker.truncate(to: Int(max(0, limit - chunkStart)))
        }
    }

    private func encodeFullFrames() throws(FFmpegError) -> [Packet] {
        var packets: [Packet] = []
        let size = encoder.frameSize
        if size == 0 {
            if chunker.count > 0 { try send(chunker.take(chunker.count), into: &packets) }
        } else {
            while chunker.count >= size { try send(chunker.take(size), into: &packets) }
        }
        return packets
    }

    private func send(_ frame: Frame, into packets: inout [Packet]) throws(FFmpegError) {
        let pts = chunkStart ?? 0
        frame.pts = pts
        chunkStart = pts + Int64(frame.sampleCount)
        while try encoder.send(frame) == .outputPending { try drain(into: &packets) }
        try drain(into: &packets)
    }

    private func drain(into packets: inout [Packet]) throws(FFmpegError) {
        while case .packet(let packet) = try encoder.receivePacket() { packets.append(packet) }
    }
}

import FFmpegSupport

/// One audio track decoded and encoded once for every output of a multi-output export that
/// writes it with the same settings: its samples are the encoder's packets, which each
/// output's writer copies. It encodes as a writer's audio input does (the same encoder,
/// configuration and frame cutting, times counted from the session's start; the reader ends
/// the audio where the range ends), so each output holds what its own encoder would have written.
///
/// The decoder and encoder run on this output's stage thread, one sample at a time, for the
/// `FanOutSource` that reads it.
// @unchecked: open base class; the decoding output, encoder and queue are used on the output's thread alone.
final class SharedAudioEncodingOutput: AssetReaderOutput, @unchecked Sendable {
    /// The output decoding the track into the PCM the encoder takes.
    private let decoded: AssetReaderTrackOutput
    private let encoding: WriterAudioStage
    /// The encoder's stream, for the writers that copy its packets.
    let parameters: CodecParameters
    private let encoderName: String
    /// Where each writer's session starts.
    private let sessionStart: MediaTime
    private let timeBase: Rational
    private let format: FormatDescription
    private let path: String?
    private var encoded: [SampleBuffer] = []
    private var flushed = false

    /// Decodes `track` as `decoded` says and encodes it with `settings`, for writers whose
    /// session starts at `sessionStart` and whose muxers want the codec's header apart (`globalHeader`).
    init(decoding decoded: AssetReaderTrackOutput, settings: AudioSettings, globalHeader: Bool,
         sessionStart: MediaTime, path: String?, probe: StageProbe?) throws(MediaError) {
        self.path = path
        try probe?.step(.encoderOpened(.audio))
        let plan = try WriterCodecs.audioConfiguration(settings, globalHeader: globalHeader)
        let encoder: Encoder
        do {
            encoder = try Encoder(name: plan.name, configuration: plan.configuration)
            parameters = try encoder.codecParameters()
        } catch {
            throw MediaError(.encodeFailed, "\(plan.name) refused the output settings", path: path, underlying: error)
        }
        self.decoded = decoded
        encoderName = plan.name
        encoding = WriterAudioStage(encoder: encoder)
        timeBase = encoder.timeBase
        self.sessionStart = sessionStart
        format = FormatDescription(mediaType: .audio, codec: parameters.codec.name)
        super.init(mediaType: .audio)
    }

    override var streamIndices: [Int] { decoded.streamIndices }

    override func prepare(session: DemuxSession, timeRange: MediaTimeRange) throws(MediaError) {
        decoded.weighsDamageAcrossTracks = weighsDamageAcrossTracks
        decoded.audioTimePitchAlgorithm = audioTimePitchAlgorithm
        try decoded.prepare(session: session, timeRange: timeRange)
    }

    override func prepare(composition tracks: [CompositionTrack], timeRange: MediaTimeRange) throws(MediaError) {
        decoded.audioTimePitchAlgorithm = audioTimePitchAlgorithm
        try decoded.prepare(composition: tracks, timeRange: timeRange)
    }

    override func produceNext() throws(MediaError) -> SampleBuffer? {
        while encoded.isEmpty && !flushed {
            guard let sample = try decoded.produceNext() else {
                flushed = true
                encoded = try encode { () throws(FFmpegError) in try encoding.finish() }
                break
            }
            guard case .audio(let buffer) = sample.content else { continue }
            let start = timeBase.ticks(of: sample.presentationTimeStamp - sessionStart) ?? 0
            encoded = try encode { () throws(FFmpegError) in try encoding.encode(buffer, start: start) }
        }
        return encoded.isEmpty ? nil : encoded.removeFirst()
    }

    /// The packets `step` encodes, as samples.
    private func encode(_ step: () throws(FFmpegError) -> [Packet]) throws(MediaError) -> [SampleBuffer] {
        do { return try step().compactMap(sample(of:)) } catch {
            throw MediaError(.encodeFailed, "\(encoderName) failed encoding the shared audio", path: path, underlying: error)
        }
    }

    /// `packet` as a copied sample on the source's timeline.
    private func sample(of packet: Packet) -> SampleBuffer? {
        guard let pts = packet.pts else { return nil }
        let time = sessionStart + timeBase.time(ofTicks: pts)
        return SampleBuffer(content: .compressed, packet: packet, codecParameters: parameters, presentationTimeStamp: time,
                            decodeTimeStamp: sessionStart + timeBase.time(ofTicks: packet.dts ?? pts),
                            duration: timeBase.time(ofTicks: packet.duration), formatDescription: format, attachments: SampleAttachments())
    }

    override func dropPipeline() {
        decoded.dropPipeline()
        encoded = []
    }

    override func readingCancelled() { decoded.readingCancelled() }
}

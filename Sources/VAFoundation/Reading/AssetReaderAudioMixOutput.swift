import FFmpegSupport

/// Mixes several audio tracks into one PCM stream (`AVAssetReaderAudioMixOutput`), applying the
/// `audioMix` volumes. Tracks are converted to a common rate and layout, aligned by time, and summed.
// @unchecked: `audioMix` is set before reading starts and `mixer` is used by the output's one consumer, serialised by its thread.
public final class AssetReaderAudioMixOutput: AssetReaderOutput, @unchecked Sendable {
    public let audioTracks: [AssetTrack]
    /// The PCM layout of the mix; nil gives 32-bit float, non-interleaved, at the highest rate
    /// and channel count among the tracks.
    public let audioSettings: LinearPCMSettings?
    /// Volumes per track; nil mixes every track at full volume. Set before reading starts.
    public nonisolated(unsafe) var audioMix: AudioMix?

    /// Each track's first channel becomes one channel of the output, in track order, instead
    /// of every track being summed into every channel: mono tracks merged into one (set by an
    /// export before reading starts).
    nonisolated(unsafe) var placesTracksAsChannels = false

    private nonisolated(unsafe) var mixer: Mixer?

    /// Samples mixed per output buffer.
    static let blockSize = 1024

    public init(audioTracks: [AssetTrack], audioSettings: LinearPCMSettings?) throws {
        guard !audioTracks.isEmpty, audioTracks.allSatisfy({ $0.mediaType == .audio }) else {
            throw MediaError(.invalidArgument, "an audio mix output needs one or more audio tracks")
        }
        self.audioTracks = audioTracks
        self.audioSettings = audioSettings
        super.init(mediaType: .audio)
    }

    override var streamIndices: [Int] { audioTracks.map(\.streamIndex) }

    /// The float planar format every track is mixed in: the settings' rate and channels, else
    /// the highest among the tracks.
    private func commonPCM() -> LinearPCMSettings {
        let rate = audioSettings?.sampleRate ?? audioTracks.compactMap { $0.formatDescription.audio?.sampleRate }.max() ?? 48000
        let channels = audioSettings?.channelCount ?? audioTracks.compactMap { $0.formatDescription.audio?.channelCount }.max() ?? 2
        return LinearPCMSettings(sampleRate: rate, channelCount: channels, channelLayout: audioSettings?.channelLayout,
                                 bitDepth: 32, isFloat: true, isInterleaved: false)
    }

    override func prepare(session: DemuxSession, timeRange: MediaTimeRange) throws(MediaError) {
        let common = commonPCM()
        let (rate, channels) = (common.sampleRate ?? 48000, common.channelCount ?? 2)
        var mono = common
        mono.channelCount = 1
        mono.channelLayout = "mono"
        let inputs = try audioTracks.enumerated().map { (index, track) throws(MediaError) in
            Mixer.Input(trackID: track.trackID,
                        pipeline: try AudioDecodePipeline(session: session, track: track, pcm: placesTracksAsChannels ? mono : common, timeRange: timeRange),
                        channel: placesTracksAsChannels ? index : nil)
        }
        mixer = Mixer(inputs: inputs, sampleRate: rate, channelCount: channels, layout: audioSettings?.channelLayout,
                      output: audioSettings ?? common, mix: audioMix ?? AudioMix(), path: session.path,
                      formatDescription: audioTracks[0].formatDescription)
    }

    override func prepare(composition tracks: [CompositionTrack], timeRange: MediaTimeRange) throws(MediaError) {
        let common = commonPCM()
        let inputs = try audioTracks.map { track throws(MediaError) in
            guard let compositionTrack = track.compositionTrack.flatMap({ own in tracks.first { $0.trackID == own.trackID } }) else {
                throw MediaError(.invalidArgument, "track \(track.trackID) is not a track of the composition being read", path: "composition")
            }
            return Mixer.Input(trackID: track.trackID,
                               pipeline: try CompositionTrackPipeline(track: compositionTrack, media: .audio(common, audioTimePitchAlgorithm),
                                                                     timeRange: timeRange))
        }
        mixer = Mixer(inputs: inputs, sampleRate: common.sampleRate ?? 48000, channelCount: common.channelCount ?? 2,
                      layout: audioSettings?.channelLayout, output: audioSettings ?? common, mix: audioMix ?? AudioMix(),
                      path: "composition", formatDescription: audioTracks[0].formatDescription)
    }

    override func produceNext() throws(MediaError) -> SampleBuffer? { try mixer?.next() }

    /// Pulls float planar blocks from each track and sums them in time order.
    final class Mixer {
        struct Input {
            let trackID: Int
            let pipeline: any TrackPipeline
            /// Buffered samples per channel, starting at `start` (output samples).
            var pending: [[Float]] = []
            var start: Int64 = 0
            var ended = false
            /// The output channel this input's one channel fills; nil: its channels sum into the output's.
            let channel: Int?

            init(trackID: Int, pipeline: any TrackPipeline, channel: Int? = nil) {
                self.trackID = trackID
                self.pipeline = pipeline
                self.channel = channel
            }
        }

        var inputs: [Input]
        let sampleRate: Int
        let channelCount: Int
        let layout: String?
        let output: LinearPCMSettings
        let mix: AudioMix
        let path: String
        let formatDescription: FormatDescription
        private var position: Int64?
        private var converter: Resampler?

        init(inputs: [Input], sampleRate: Int, channelCount: Int, layout: String?, output: LinearPCMSettings,
             mix: AudioMix, path: String, formatDescription: FormatDescription) {
            self.inputs = inputs
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.layout = layout
            self.output = output
            self.mix = mix
            self.path = path
            self.formatDescription = formatDescription
        }

        func next() throws(MediaError) -> SampleBuffer? {
            // Make sure every live input has data, so the mix starts at the earliest sample.
            for i in inputs.indices where inputs[i].pending.isEmpty && !inputs[i].ended { try refill(i) }
            if position == nil {
                position = inputs.filter { !$0.pending.isEmpty }.map(\.start).min()
            }
            guard let start = position else { return nil }
            let end = start + Int64(AssetReaderAudioMixOutput.blockSize)
            for i in inputs.indices {
                while !inputs[i].ended && inputs[i].start + Int64(inputs[i].pending.first?.count ?? 0) < end { try refill(i) }
            }
            let available = inputs.map { $0.start + Int64($0.pending.first?.count ?? 0) }.max() ?? start
            let blockEnd = min(end, max(available, start))
            guard blockEnd > start else { return nil }
            let count = Int(blockEnd - start)

            var sum = [[Float]](repeating: [Float](repeating: 0, count: count), count: channelCount)
            for i in inputs.indices {
                let input = inputs[i]
                guard let length = input.pending.first?.count else { continue }
                // One look-up for the block where the volume holds still over it (a loudness
                // gain, a mix without ramps there); else one per sample.
                let block = MediaTimeRange(start: MediaTime(value: start, timescale: Int32(sampleRate)),
                                           duration: MediaTime(value: Int64(count), timescale: Int32(sampleRate)))
                let steady = mix.constantVolume(trackID: input.trackID, over: block)
                for offset in 0..<count {
                    let at = start + Int64(offset) - input.start
                    guard at >= 0 && at < Int64(length) else { continue }
                    let gain = steady ?? mix.volume(trackID: input.trackID, at: MediaTime(value: start + Int64(offset), timescale: Int32(sampleRate)))
                    if let channel = input.channel {
                        if channel < channelCount { sum[channel][offset] += input.pending[0][Int(at)] * gain }
                    } else {
                        for c in 0..<min(channelCount, input.pending.count) { sum[c][offset] += input.pending[c][Int(at)] * gain }
                    }
                }
                // Drop what this block consumed.
                let consumed = Int(max(0, min(Int64(length), blockEnd - input.start)))
                if consumed > 0 {
                    inputs[i].pending = input.pending.map { Array($0[consumed...]) }
                    inputs[i].start += Int64(consumed)
                }
            }
            position = blockEnd
            return try makeSample(sum, at: start)
        }

        private func refill(_ i: Int) throws(MediaError) {
            guard let sample = try inputs[i].pipeline.next(), let buffer = sample.audioBuffer else {
                inputs[i].ended = true
                return
            }
            let first = sample.presentationTimeStamp.convertScale(Int32(sampleRate)).value
            if inputs[i].pending.isEmpty || (inputs[i].pending.first?.isEmpty ?? true) {
                inputs[i].start = first
                inputs[i].pending = [[Float]](repeating: [], count: buffer.channelCount)
            }
            buffer.withUnsafeChannels { channels in
                for (c, data) in channels.enumerated() {
                    inputs[i].pending[c].append(contentsOf: data.bindMemory(to: Float.self).prefix(buffer.sampleCount))
                }
            }
        }

        private func makeSample(_ channels: [[Float]], at start: Int64) throws(MediaError) -> SampleBuffer {
            let count = channels.first?.count ?? 0
            do {
                let mixed = try AudioBuffer(sampleCount: count, format: .float32Planar, sampleRate: sampleRate,
                                            channelCount: channelCount, channelLayout: layout)
                try mixed.withUnsafeMutableChannels { planes in
                    for (c, plane) in planes.enumerated() {
                        channels[c].withUnsafeBytes { plane.copyMemory(from: $0) }
                    }
                }
                var result = mixed
                if output.sampleFormat != .float32Planar {
                    if converter == nil {
                        converter = try Resampler(
                            sourceSampleRate: sampleRate, sourceFormat: .floatPlanar, sourceChannelCount: channelCount, sourceLayout: mixed.channelLayout,
                            outputSampleRate: sampleRate, outputFormat: SampleFormatID(output.sampleFormat) ?? .s16,
                            outputChannelCount: channelCount, outputLayout: mixed.channelLayout)
                    }
                    guard let converted = try converter!.convert(mixed.frame) else {
                        throw MediaError(.invalidState, "the sample format converter returned nothing", path: path)
                    }
                    result = AudioBuffer(frame: converted)
                }
                var format = formatDescription
                format.audio = AudioFormat(sampleRate: sampleRate, channelCount: channelCount,
                                           channelLayout: result.channelLayout, sampleFormat: result.format.rawValue)
                let timescale = Int32(sampleRate)
                return SampleBuffer(content: .audio(result), packet: nil, codecParameters: nil,
                                    presentationTimeStamp: MediaTime(value: start, timescale: timescale), decodeTimeStamp: .invalid,
                                    duration: MediaTime(value: Int64(result.sampleCount), timescale: timescale),
                                    formatDescription: format, attachments: SampleAttachments())
            } catch let error as MediaError {
                throw error
            } catch {
                throw MediaError(.invalidState, "cannot build the mixed audio buffer", path: path, underlying: error)
            }
        }
    }
}

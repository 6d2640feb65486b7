import FFmpegSupport

/// How audio played faster or slower is processed (`AVAudioTimePitchAlgorithm`).
public enum AudioTimePitchAlgorithm: String, Sendable, Hashable, CaseIterable {
    /// Best quality, pitch kept: rubberband where libavfilter has it, else WSOLA (atempo).
    case spectral
    /// Pitch kept, WSOLA time-domain stretching (libavfilter's atempo).
    case timeDomain
    /// Pitch follows speed, like a tape: the audio is resampled.
    case varispeed
}

/// Changes audio's speed through libavfilter (`atempo`, `rubberband`, or resampling for
/// varispeed) in the composition's PCM format: blocks go in, stretched blocks come out.
final class TimeStretch {
    private let graph: AudioFilterGraph
    private let path: String
    private(set) var ended = false
    private var finished = false

    /// A stretcher playing audio at `speed` (2: twice as fast, half as long).
    init(speed: Double, pcm: LinearPCMSettings, algorithm: AudioTimePitchAlgorithm = .spectral, path: String) throws(MediaError) {
        self.path = path
        let rate = pcm.sampleRate ?? 48000
        let layout = pcm.channelLayout ?? ChannelLayouts.defaultName(channelCount: pcm.channelCount ?? 2)
        let description = Self.filter(speed: speed, sampleRate: rate, algorithm: algorithm)
        guard let format = SampleFormatID(pcm.sampleFormat) else {
            throw MediaError(.unsupported, "PCM format \(pcm.sampleFormat) is unknown to FFmpeg", path: path)
        }
        do {
            graph = try AudioFilterGraph(description, sampleRate: rate, sampleFormat: format, channelLayout: layout)
        } catch {
            throw MediaError(.unsupported, "cannot change audio speed with \(description)", path: path, underlying: error)
        }
    }

    /// The filter chain for `speed`: atempo takes 0.5…100 per instance, so slower speeds chain
    /// several halvings.
    static func filter(speed: Double, sampleRate: Int, algorithm: AudioTimePitchAlgorithm) -> String {
        switch algorithm {
        case .varispeed:
            return "asetrate=\(Int((Double(sampleRate) * speed).rounded())),aresample=\(sampleRate)"
        case .spectral where FilterGraph.hasFilter("rubberband"):
            return "rubberband=tempo=\(speed)"
        case .spectral, .timeDomain:
            var factors: [Double] = []
            var rest = speed
            while rest < 0.5 {
                factors.append(0.5)
                rest /= 0.5
            }
            while rest > 100 {
                factors.append(100)
                rest /= 100
            }
            factors.append(rest)
            return factors.map { "atempo=\($0)" }.joined(separator: ",")
        }
    }

    func push(_ audio: AudioBuffer) throws(MediaError) {
        do { try graph.push(audio.frame) } catch {
            throw MediaError(.invalidState, "the time-stretch filter refused audio", path: path, underlying: error)
        }
    }

    /// No more audio comes: what the filter holds back can come out.
    func finish() throws(MediaError) {
        ended = true
        do { try graph.pushEndOfStream() } catch {
            throw MediaError(.invalidState, "the time-stretch filter refused the end of the audio", path: path, underlying: error)
        }
    }

    /// The next stretched block; nil when the filter needs more input or has given everything.
    func pull() throws(MediaError) -> AudioBuffer? {
        guard !finished else { return nil }
        do {
            switch try graph.pull() {
            case .frame(let frame): return AudioBuffer(frame: frame)
            case .needsInput: return nil
            case .endOfStream:
                finished = true
                return nil
            }
        } catch {
            throw MediaError(.invalidState, "the time-stretch filter failed", path: path, underlying: error)
        }
    }
}

import Foundation
import FFmpegSupport

/// The loudness an export normalises its audio to: integrated loudness and the true peak it
/// must stay under (EBU R 128: −23 LUFS, −1 dBTP; streaming services often ask −16 or −14 LUFS).
public struct LoudnessTarget: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Integrated loudness, LUFS.
    public var integrated: Double
    /// The highest true peak allowed, dBTP.
    public var truePeak: Double

    public init(integrated: Double, truePeak: Double) {
        self.integrated = integrated
        self.truePeak = truePeak
    }

    /// EBU R 128: −23 LUFS integrated, true peak at most −1 dBTP.
    public static let ebuR128 = LoudnessTarget(integrated: -23, truePeak: -1)

    /// Parses "ebu-r128" or "I=-16:TP=-1.5" (either key may be left out: EBU R 128's value
    /// stays); nil for anything else or values no programme could have.
    public init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces)
        if text.lowercased() == "ebu-r128" {
            self = .ebuR128
            return
        }
        var target = LoudnessTarget.ebuR128
        let pairs = text.split(separator: ":", omittingEmptySubsequences: false)
        guard !pairs.isEmpty else { return nil }
        for pair in pairs {
            let parts = pair.split(separator: "=", omittingEmptySubsequences: false)
            guard parts.count == 2, let value = Double(parts[1]), value.isFinite else { return nil }
            switch parts[0].uppercased() {
            case "I" where (-70 ... -5).contains(value): target.integrated = value
            case "TP" where (-9...0).contains(value): target.truePeak = value
            default: return nil
            }
        }
        self = target
    }

    public var description: String { String(format: "I=%g:TP=%g", integrated, truePeak) }
}

/// A programme's loudness as EBU R 128 measures it.
public struct Loudness: Sendable, Hashable, Codable {
    /// Integrated (gated) loudness, LUFS.
    public var integrated: Double
    /// True peak (4× oversampled), dBTP.
    public var truePeak: Double
}

/// What normalising one audio track of an export did: the loudness measured in the first pass,
/// the linear gain applied, and the loudness of the track written, measured again from the file.
public struct LoudnessNormalization: Sendable, Hashable, Codable {
    /// The source tracks the output track is made of.
    public var trackIDs: [Int]
    public var measured: Loudness
    /// dB; the same at every instant (no compression, no limiter).
    public var gain: Double
    /// Measured from the written file; nil when there is no file to read (streaming segments).
    public var result: Loudness?
}

/// Measures the loudness of the audio pushed into it with libavfilter's `ebur128` (ITU-R
/// BS.1770 weighting and gating, true peak by 4× oversampling), as `ffmpeg -af ebur128` does.
/// One task at a time.
final class LoudnessMeter {
    private var graph: AudioFilterGraph?
    /// The programme's figures so far, from the latest block that carried them (ebur128 says
    /// them on the block in which each 100 ms step ends, not on every block).
    private var integrated: Double?
    private var truePeak: Double?
    private let path: String
    /// ebur128 says the true peak as a linear amplitude to three decimals: 0.003 at −50 dBTP,
    /// ±1.5 dB. Measured 40 dB up (in floating point, which does not clip), a quiet programme's
    /// peak keeps its precision, and is taken down again.
    private static let headroom = 40.0

    init(path: String) { self.path = path }

    func push(_ audio: AudioBuffer) throws(MediaError) {
        do {
            if graph == nil {
                // The peak 40 dB up; then, at the programme's own level, the loudness (ebur128's
                // gating scale ends at +10 LUFS), whose figures replace the first's on each block.
                let chain = "volume=\(Self.headroom)dB:precision=double,ebur128=peak=true:metadata=1,"
                    + "volume=-\(Self.headroom)dB:precision=double,ebur128=metadata=1"
                graph = try AudioFilterGraph(chain, sampleRate: audio.sampleRate,
                                             sampleFormat: audio.frame.sampleFormat,
                                             channelLayout: audio.channelLayout ?? ChannelLayouts.defaultName(channelCount: audio.channelCount))
            }
            try graph?.push(audio.frame)
            try drain()
        } catch {
            throw MediaError(.unsupported, "cannot measure the loudness of the audio", path: path, underlying: error)
        }
    }

    /// The programme's loudness; nil when it had no audio above the gate (silence).
    func finish() throws(MediaError) -> Loudness? {
        do {
            try graph?.pushEndOfStream()
            try drain()
        } catch {
            throw MediaError(.unsupported, "cannot measure the loudness of the audio", path: path, underlying: error)
        }
        // ebur128 gates below −70 LUFS: a programme all under it has no loudness (silence).
        guard let integrated, let truePeak, integrated > -69.9, truePeak > 0 else { return nil }
        return Loudness(integrated: integrated, truePeak: 20 * log10(truePeak) - Self.headroom)
    }

    private func drain() throws(FFmpegError) {
        while let graph, case .frame(let frame) = try graph.pull() {
            if let value = frame.metadataValue(forKey: "lavfi.r128.I").flatMap(Double.init) { integrated = value }
            if let value = frame.metadataValue(forKey: "lavfi.r128.true_peak").flatMap(Double.init) { truePeak = value }
        }
    }

    /// Reads `output` (added to `reader`, not yet started) to its end and measures it.
    static func measure(_ output: AssetReaderOutput, of reader: AssetReader, path: String) async throws -> Loudness? {
        try reader.add(output)
        try reader.startReading()
        defer { reader.cancelReading() }
        let meter = LoudnessMeter(path: path)
        for try await sample in output.sampleBuffers {
            guard case .audio(let audio) = sample.content else { continue }
            try meter.push(audio)
        }
        if let error = reader.error { throw error }
        return try meter.finish()
    }
}

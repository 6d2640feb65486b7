import Foundation
import Testing

/// A camera-style MXF with two mono PCM tracks (440 Hz and 880 Hz) becomes one stereo track:
/// the first track on the left, the second on the right, said in the warnings.
@Suite struct MonoTracksCommandTests {
    @Test func twoMonoTracksBecomeLeftAndRight() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-mono-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = Vaf.packageRoot.appendingPathComponent("Tests/vafTests/Corpus/mxf_mpeg2_two_mono_pcm.mxf").path
        let result = try Vaf.run(["transcode", source, "--output-dir", dir.path, "--json"])
        try #require(result.status == 0, "\(result.stderr)")
        let report = try #require(try Vaf.jsonLines(result.stdout).last)
        let warnings = report["warnings"] as? [String] ?? []
        #expect(warnings.contains { $0.contains("mono audio tracks") && $0.contains("one stereo track (left, right)") }, "\(warnings)")
        let output = try #require(report["output"] as? String)
        let probe = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "stream=channels",
                                                                  "-of", "csv=p=0", output])
        #expect(probe.stdout.split(separator: "\n") == ["2"], "one stereo audio track: \(probe.stdout)")
        let left = try MonoTracksCommandTests.channelFrequency(output, channel: 0)
        let right = try MonoTracksCommandTests.channelFrequency(output, channel: 1)
        #expect(abs(left - 440) < 15 && abs(right - 880) < 15, "left \(left) Hz, right \(right) Hz")
    }

    /// The dominant frequency of one channel of `file`, from the zero crossings of its samples
    /// (ffmpeg decodes; the first and last 50 ms, where the encoder's priming and padding sit, are left out).
    static func channelFrequency(_ file: String, channel: Int) throws -> Double {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-mono-\(UUID().uuidString).raw")
        defer { try? FileManager.default.removeItem(at: url) }
        let decoded = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-i", file, "-af", "pan=mono|c0=c\(channel)",
                                                                  "-ar", "48000", "-f", "s16le", url.path])
        try #require(decoded.status == 0, "\(decoded.stderr)")
        let bytes = try Data(contentsOf: url)
        let samples = stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
        let kept = samples.dropFirst(2400).dropLast(2400)
        var crossings = 0
        var previous = kept.first ?? 0
        for sample in kept {
            if (previous < 0) != (sample < 0) { crossings += 1 }
            previous = sample
        }
        return Double(crossings) / 2 / (Double(kept.count) / 48000)
    }
}

import Foundation
import Testing
@testable import VAFoundation

/// Opus takes 48, 24, 16, 12 or 8 kHz only: like ffmpeg, an export picks the nearest rate the
/// encoder takes and resamples, instead of failing on a 44.1 kHz source. ffprobe is the oracle.
@Suite struct OpusSampleRateTests {
    /// A 2 s testsrc2 clip with a 440 Hz sine in AAC at 44.1 kHz.
    static func source441(in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("in44k.mp4")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
                                      "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=2",
                                      "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-ar", "44100", "-shortest", url.path]).status == 0)
        return url
    }

    @Test func webMFromA44kHzSourceIsOpusAt48kHz() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source441(in: dir)
        let output = dir.appendingPathComponent("out.webm")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: "640x480"))
        let result = try await session.export(to: output, as: .webm)
        #expect(result.audioSettings?.sampleRate == 48000)

        let probe = try #require(which("ffprobe"))
        let audio = String(decoding: try run(probe, ["-v", "error", "-select_streams", "a", "-show_entries", "stream=codec_name,sample_rate",
                                                     "-of", "csv=p=0", output.path]).stdout, as: UTF8.self)
        #expect(audio.trimmingCharacters(in: .whitespacesAndNewlines) == "opus,48000")
        let duration = { (url: URL) throws -> Double in
            Double(String(decoding: try run(probe, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", url.path]).stdout,
                          as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        let (made, original) = (try duration(output), try duration(source))
        #expect(abs(made - original) <= 1.0 / 30, "\(made) s against the source's \(original) s")
    }

    @Test(arguments: [(44100, 48000), (22050, 24000), (11025, 12000), (32000, 24000), (48000, 48000), (96000, 48000)])
    func nearestRateOpusTakes(source: Int, chosen: Int) {
        #expect(WriterCodecs.nearestSampleRate(to: source, forEncoder: "libopus") == chosen)
    }
}

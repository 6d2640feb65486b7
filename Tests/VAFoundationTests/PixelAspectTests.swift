import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// Anamorphic sources (non-square pixels) are fitted on their displayed aspect and come out in
/// square pixels, neither squeezed nor letterboxed. ffmpeg makes the sources and is the oracle.
@Suite struct PixelAspectTests {
    /// A 1 s testsrc2 clip of `size` whose pixels are `sar` wide.
    static func anamorphic(_ size: String, sar: String, in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("anamorphic-\(size).mp4")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=25", "-t", "1",
                                      "-vf", "setsar=\(sar)", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", url.path]).status == 0)
        return url
    }

    @Test(arguments: [
        // source, pixel aspect, preset → output (square pixels)
        ("1440x1080", "4/3", "1280x720", 1280, 720),     // HDV / broadcast 1080 anamorphic: 16:9
        ("720x480", "8/9", "1280x720", 640, 480),        // NTSC DV 4:3: never upscaled
        ("720x576", "64/45", "960x540", 960, 540),       // PAL 16:9 widescreen (1024x576 displayed)
    ] as [(String, String, String, Int, Int)])
    func displayedAspectIsKeptInSquarePixels(size: String, sar: String, preset: String, width: Int, height: Int) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.anamorphic(size, sar: sar, in: dir)
        let output = dir.appendingPathComponent("out.mp4")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: preset))
        let result = try await session.export(to: output, as: .mp4)
        #expect(result.videoSettings.map { ($0.width, $0.height) } ?? (0, 0) == (width, height))
        let probe = try #require(which("ffprobe"))
        let stream = String(decoding: try run(probe, ["-v", "error", "-select_streams", "v", "-show_entries", "stream=width,height,sample_aspect_ratio",
                                                      "-of", "csv=p=0", output.path]).stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(stream == "\(width),\(height),1:1" || stream == "\(width),\(height),N/A" || stream == "\(width),\(height)", "\(stream)")
        // Against ffmpeg's own bicubic scale of the source to the same size. Measured: 58.3 dB
        // (1440x1080 → 1280x720), 54.9 dB (720x480 → 640x480), 54.8 dB (720x576 → 960x540);
        // the same picture letterboxed as before (squeezed into 960x720 with bars) reads 11.6 dB.
        let ffmpeg = try #require(which("ffmpeg"))
        let psnr = try await ChildProcess.run(ffmpeg, ["-v", "info", "-i", output.path, "-i", source.path, "-lavfi",
                                                       "[1:v]scale=\(width):\(height):flags=bicubic[ref];[0:v][ref]psnr", "-f", "null", "-"], timeLimit: 120)
        let line = try #require(psnr.stderr.split(separator: "\n").first { $0.contains("PSNR y:") }, "\(psnr.stderr)")
        let luma = Double(line.split(separator: " ").first { $0.hasPrefix("y:") }?.dropFirst(2) ?? "") ?? 0
        print("pixel aspect: \(size) at \(sar) → \(width)x\(height): luma PSNR \(luma) dB")
        #expect(luma >= 52, "luma PSNR \(luma) dB against ffmpeg's scale")
    }
}

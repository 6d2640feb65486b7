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

    /// A 320x240 clip whose MP4 `pasp` says square pixels while its H.264 VUI says 27:64: ffmpeg
    /// shows it 320x240, the container's aspect winning (`av_guess_sample_aspect_ratio`).
    static func conflictingAspect(in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("sar_conflict.mp4")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2", "-c:v", "libx264",
                                      "-preset", "ultrafast", "-bsf:v", "h264_metadata=sample_aspect_ratio=27/64", "-aspect", "4:3", url.path]).status == 0)
        return url
    }

    /// ffprobe's `width,height,sample_aspect_ratio,display_aspect_ratio` of the first video stream.
    static func probeAspect(_ url: URL) throws -> String {
        let probe = try #require(which("ffprobe"))
        return String(decoding: try run(probe, ["-v", "error", "-select_streams", "v", "-show_entries",
                                                "stream=width,height,sample_aspect_ratio,display_aspect_ratio", "-of", "csv=p=0", url.path]).stdout,
                      as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func containerAspectWinsOverTheBitstreams() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.conflictingAspect(in: dir)
        #expect(try Self.probeAspect(source) == "320,240,1:1,4:3")

        let output = dir.appendingPathComponent("out.mp4")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: "640x480"))
        let result = try await session.export(to: output, as: .mp4)
        let exported = try Self.probeAspect(output)
        #expect(exported.hasPrefix("320,240,"), "\(exported)")
        #expect(result.warnings.contains { $0.contains("pixel aspect 1:1 differs from the h264 bitstream's 27:64") }, "\(result.warnings)")

        let generator = AssetImageGenerator(asset: Asset(url: source))
        let image = try await generator.image(at: .zero).image
        #expect(image.width * 3 == image.height * 4, "thumbnail \(image.width)x\(image.height)")

        let copied = dir.appendingPathComponent("copy.mp4")
        let passthrough = try #require(ExportSession(asset: Asset(url: source), presetName: "Passthrough"))
        _ = try await passthrough.export(to: copied, as: .mp4)
        #expect(try Self.probeAspect(copied) == "320,240,1:1,4:3")
    }
}

/// A writer keeps non-square pixels when its settings say so (`VideoSettings.pixelAspectRatio`,
/// `AVVideoPixelAspectRatioKey`): the source's shape, read from its format description, is
/// written in the stream and the container, and players show the picture as wide as before.
@Suite struct PixelAspectWriterTests {
    /// VP9 has no pixel aspect in its bitstream: in WebM the container's display size alone says it.
    @Test(arguments: [(FileType.mp4, VideoCodec.h264), (.mkv, .h264), (.mov, .h264), (.webm, .vp9)])
    func anAnamorphicPictureIsWrittenAnamorphic(fileType: FileType, codec: VideoCodec) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try PixelAspectTests.anamorphic("480x360", sar: "4/3", in: dir)
        let asset = Asset(url: source)
        let track = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let shape = try #require(track.formatDescription.video?.pixelAspectRatio, "ffmpeg's source says 4:3 pixels")
        #expect(shape == [4, 3])
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
        try reader.add(output)
        let url = dir.appendingPathComponent("out.\(fileType.fileExtension)")
        let writer = try AssetWriter(url: url, fileType: fileType)
        var settings = VideoSettings(codec: codec, width: 480, height: 360)
        settings.pixelAspectRatio = PixelAspectRatio(horizontalSpacing: shape[0], verticalSpacing: shape[1])
        let input = try AssetWriterInput(videoSettings: settings)
        try writer.add(input)
        try reader.startReading()
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        while let sample = try output.copyNextSampleBuffer() { try await input.append(sample) }
        input.markAsFinished()
        try await writer.finishWriting()
        let probe = try #require(which("ffprobe"))
        let stream = String(decoding: try run(probe, ["-v", "error", "-select_streams", "v", "-show_entries",
                                                      "stream=width,height,sample_aspect_ratio,display_aspect_ratio", "-of", "csv=p=0", url.path]).stdout,
                            as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(stream == "480,360,4:3,16:9", "\(stream)")
        // Read back, the format description says so too.
        let written = try #require(try await Asset(url: url).loadTracks(withMediaType: .video).first)
        #expect(written.formatDescription.video?.pixelAspectRatio == [4, 3])
    }

    @Test func anImpossibleShapeIsRefusedBeforeWriting() throws {
        var settings = VideoSettings(codec: .h264, width: 320, height: 240)
        settings.pixelAspectRatio = PixelAspectRatio(horizontalSpacing: 0, verticalSpacing: 1)
        let writer = try AssetWriter(url: FileManager.default.temporaryDirectory.appendingPathComponent("never-\(UUID()).mp4"), fileType: .mp4)
        #expect(!writer.canAdd(try AssetWriterInput(videoSettings: settings)))
    }
}

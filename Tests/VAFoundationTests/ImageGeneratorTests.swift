import Foundation
import Testing
import VAFoundation

/// `AssetImageGenerator` against ffmpeg's own decode: exact pictures, keyframe answers,
/// orientation, sizes, the sequence API and the guide's two listings.
@Suite(.disabled(if: which("ffmpeg") == nil, "ffmpeg is not installed (Hardware/setup.sh installs it)"))
struct ImageGeneratorTests {
    /// 3 s at 30 fps, keyframes at 0, 1 and 2 s, two B-frames: every picture differs.
    let clip = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")

    /// ffmpeg's picture at presentation time `seconds` (its first picture at or after it), in RGB.
    private func ffmpegPicture(_ url: URL, at seconds: Double, width: Int, height: Int) throws -> [UInt8] {
        let result = try run(which("ffmpeg")!, ["-v", "error", "-ss", String(format: "%.6f", seconds), "-i", url.path, "-frames:v", "1",
                                                "-vf", "scale=\(width):\(height):flags=bicubic+accurate_rnd+full_chroma_int",
                                                "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        return [UInt8](result.stdout)
    }

    private func meanDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return .infinity }
        return Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
    }

    @Test func exactTimesGiveThePictureOnScreenThen() async throws {
        let generator = AssetImageGenerator(asset: Asset(url: clip))
        generator.requestedTimeToleranceBefore = .zero
        generator.requestedTimeToleranceAfter = .zero
        // In order and out of order, inside pictures and on their edges, across keyframes.
        for (seconds, frame) in [(0.0, 0), (0.51, 15), (1.01, 30), (0.2, 6), (2.999, 89), (1.98, 59), (2.0, 60)] {
            let (image, actual) = try await generator.image(at: MediaTime(seconds: seconds, preferredTimescale: 600))
            #expect(abs(actual.seconds - Double(frame) / 30) < 0.0005, "at \(seconds) s: \(actual.seconds) s")
            let reference = try ffmpegPicture(clip, at: Double(frame) / 30, width: 320, height: 240)
            let neighbour = try ffmpegPicture(clip, at: Double(frame == 89 ? 88 : frame + 1) / 30, width: 320, height: 240)
            let same = meanDifference(image.pixels, reference), other = meanDifference(image.pixels, neighbour)
            #expect(same < 1.0 && other > 4 * same + 1, "at \(seconds) s: \(same) against its picture, \(other) against the next")
        }
    }

    @Test func theDefaultToleranceAnswersWithAKeyframe() async throws {
        let generator = AssetImageGenerator(asset: Asset(url: clip))
        for (seconds, keyframe) in [(0.3, 0.0), (1.4, 1.0), (1.7, 2.0), (2.9, 2.0)] {
            let (_, actual) = try await generator.image(at: MediaTime(seconds: seconds, preferredTimescale: 600))
            #expect(abs(actual.seconds - keyframe) < 0.0005, "at \(seconds) s the nearest keyframe is \(keyframe) s, got \(actual.seconds)")
        }
    }

    @Test func sizesFitTheBoxAndPortraitClipsTurnUpright() async throws {
        let generator = AssetImageGenerator(asset: Asset(url: clip))
        generator.maximumSize = Size(width: 160, height: 160)
        #expect(try await generator.image(at: .zero).image.width == 160)
        #expect(try await generator.image(at: .zero).image.height == 120)
        generator.maximumSize = Size(width: 1000, height: 1000)
        let full = try await generator.image(at: .zero).image
        #expect(full.width == 320 && full.height == 240, "never upscaled")

        let phone = AssetImageGenerator(asset: Asset(url: TestFiles.fixture("h264_aac_iphone6_rot90_gps_metadata.mov")))
        let stored = try await phone.image(at: .zero).image
        #expect(stored.width == 568 && stored.height == 320)
        phone.appliesPreferredTrackTransform = true
        phone.maximumSize = Size(width: 200, height: 200)
        let upright = try await phone.image(at: .zero).image
        #expect(upright.height == 200 && upright.width == 113, "\(upright.width)x\(upright.height)")
    }

    @Test func imagesEncodeAsPNGAndJPEG() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let image = try await AssetImageGenerator(asset: Asset(url: clip)).image(at: MediaTime(value: 1, timescale: 1)).image
        for format in Image.Format.allCases {
            let url = dir.appendingPathComponent("still.\(format.fileExtension)")
            try image.write(to: url, as: format)
            let probe = try WriterTestSupport.probeStream(url, "v")
            #expect(probe["codec_name"] as? String == (format == .png ? "png" : "mjpeg"))
            #expect(probe["width"] as? Int == 320 && probe["height"] as? Int == 240)
            // The file's picture is the image's (JPEG within its loss).
            let decoded = try run(which("ffmpeg")!, ["-v", "error", "-i", url.path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).stdout
            #expect(meanDifference(image.pixels, [UInt8](decoded)) < (format == .png ? 0.001 : 4))
        }
    }

    @Test func aSequenceAnswersEachTimeInOrderAndCancelsTheRest() async throws {
        let generator = AssetImageGenerator(asset: Asset(url: clip))
        let times = [0.5, 1.5, 2.5].map { MediaTime(seconds: $0, preferredTimescale: 600) }
        var requested: [MediaTime] = []
        for await result in generator.images(for: times) {
            guard case .success = result else { Issue.record("\(result)"); continue }
            requested.append(result.requestedTime)
        }
        #expect(requested == times)

        generator.cancelAllImageGeneration()
        // Requests made after the cancel run; the cancel only ends what was under way.
        #expect(try await generator.image(at: .zero).image.width == 320)
        let stream = generator.images(for: times)
        generator.cancelAllImageGeneration()
        var cancelled = 0
        for await result in stream {
            if case .failure(_, let error) = result, error.code == .cancelled { cancelled += 1 }
        }
        #expect(cancelled == times.count)
    }

    /// The guide's "Generating a Single Image" listing.
    @Test func guideListingGeneratingASingleImage() async throws {
        let myAsset = Asset(url: clip)
        let imageGenerator = AssetImageGenerator(asset: myAsset)
        let durationSeconds = try await myAsset.load(.duration).seconds
        let midpoint = MediaTime(seconds: durationSeconds / 2, preferredTimescale: 600)
        let (halfWayImage, actualTime) = try imageGenerator.copyImage(at: midpoint)
        #expect(halfWayImage.width == 320)
        #expect(actualTime.isNumeric && abs(actualTime.seconds - midpoint.seconds) <= 1, "asked for \(midpoint.seconds), got \(actualTime.seconds)")
    }

    /// The guide's "Generating a Sequence of Images" listing.
    @Test func guideListingGeneratingASequenceOfImages() async throws {
        let myAsset = Asset(url: clip)
        let imageGenerator = AssetImageGenerator(asset: myAsset)
        let durationSeconds = try await myAsset.load(.duration).seconds
        let firstThird = MediaTime(seconds: durationSeconds / 3, preferredTimescale: 600)
        let secondThird = MediaTime(seconds: durationSeconds * 2 / 3, preferredTimescale: 600)
        let end = MediaTime(seconds: durationSeconds, preferredTimescale: 600)
        let times = [MediaTime.zero, firstThird, secondThird, end]
        var succeeded = 0
        for await result in imageGenerator.images(for: times) {
            switch result {
            case .success(let requestedTime, let image, let actualTime):
                #expect(image.width == 320 && actualTime <= requestedTime + MediaTime(value: 1, timescale: 1))
                succeeded += 1
            case .failure(let requestedTime, let error):
                Issue.record("failed at \(requestedTime.seconds) s: \(error)")
            }
        }
        #expect(succeeded == 4)
    }

    @Test func aFileWithoutVideoIsAClearError() async throws {
        let generator = AssetImageGenerator(asset: Asset(url: TestFiles.fixture("ac3_51_plus_aac_stereo_two_tracks.mp4")))
        await #expect(throws: MediaError.self) { try await generator.image(at: .zero) }
        let missing = AssetImageGenerator(asset: Asset(url: URL(fileURLWithPath: "/nonexistent/clip.mp4")))
        do {
            _ = try await missing.image(at: .zero)
            Issue.record("an image from a missing file")
        } catch let error as MediaError {
            #expect(error.code == .fileNotFound && error.path == "/nonexistent/clip.mp4")
        }
    }
}

import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// The listings of the AVFoundation Programming Guide's "Time and Media Representations"
/// chapter, ported type for type: `CMTime` → `MediaTime`, `CMTimeRange` → `MediaTimeRange`,
/// `CMSampleBufferRef` → `SampleBuffer`, `CVPixelBufferRef` → `PixelBuffer`. Each runs on a
/// real clip and checks what it can against ffprobe/ffmpeg.
@Suite struct TimeGuideListingTests {
    /// 3 s of 320x240 H.264 at exactly 30 fps (90 frames, a keyframe every second) and 48 kHz AAC.
    let clip = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")

    /// "Creating a Time":
    /// ```objc
    /// CMTime time1 = CMTimeMake(200, 2); // 200 half-seconds
    /// CMTime time2 = CMTimeMake(400, 4); // 400 quarter-seconds
    /// // time1 and time2 both represent 100 seconds, but using different timescales.
    /// if (CMTimeCompare(time1, time2) == 0) {
    ///     NSLog(@"time1 and time2 are the same");
    /// }
    /// Float64 float64Seconds = 200.0 / 3;
    /// CMTime time3 = CMTimeMakeWithSeconds(float64Seconds , 3); // 66.66... third-seconds
    /// time3 = CMTimeMultiply(time3, 3);
    /// // time3 now represents 200 seconds; next subtract time1 (100 seconds).
    /// time3 = CMTimeSubtract(time3, time1);
    /// if (CMTIME_COMPARE_INLINE(time2, ==, time3)) {
    ///     NSLog(@"time2 and time3 are the same");
    /// }
    /// ```
    /// The same comparison across timescales holds for the clip's duration: 90 frames at 1/30 s.
    @Test func creatingATime() async throws {
        let time1 = MediaTime(value: 200, timescale: 2)
        let time2 = MediaTime(value: 400, timescale: 4)
        #expect(MediaTime.compare(time1, time2) == 0, "time1 and time2 are the same")
        let float64Seconds = 200.0 / 3
        var time3 = MediaTime(seconds: float64Seconds, preferredTimescale: 3)
        #expect(time3.value == 200 && time3.timescale == 3)
        time3 = time3.multiplied(by: Int32(3))
        #expect(time3.seconds == 200)
        time3 = time3 - time1
        #expect(time2 == time3, "time2 and time3 are the same")
        #expect(time3.seconds == 100)

        let duration = try await Asset(url: clip).load(.duration)
        #expect(MediaTime.compare(duration, MediaTime(value: 90, timescale: 30)) == 0, "the clip lasts \(duration)")
        #expect(try await GuideProbe.formatDuration(clip) == duration.seconds)
    }

    /// "Special Values of CMTime":
    /// ```objc
    /// CMTime myTime = <#Get a CMTime#>;
    /// if (CMTIME_IS_INVALID(myTime)) {
    ///     // Perhaps treat this as an error; display a suitable alert to the user.
    /// }
    /// ```
    /// The times come from the clip: its duration is valid; a decoded picture's decode time
    /// stamp (which decoded media does not have) and arithmetic with it are not.
    @Test func specialValuesOfCMTime() async throws {
        let asset = Asset(url: clip)
        let myTime = try await asset.load(.duration)
        #expect(!(!myTime.isValid))
        #expect(myTime.isNumeric && !myTime.isIndefinite && !myTime.isPositiveInfinity)

        let track = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
        try reader.add(output)
        try reader.startReading()
        let sample = try #require(try output.copyNextSampleBuffer())
        reader.cancelReading()
        #expect(sample.presentationTimeStamp.isValid)
        let invalid = sample.decodeTimeStamp - sample.presentationTimeStamp
        #expect(!invalid.isValid, "decoded media has no decode time: \(sample.decodeTimeStamp)")
        #expect(!MediaTime.invalid.isValid && MediaTime.positiveInfinity.isValid && MediaTime.indefinite.isValid)
        #expect((myTime + .positiveInfinity).isPositiveInfinity)
    }

    /// "Creating a Time Range" (a range does not contain its end):
    /// ```objc
    /// CMTimeRangeContainsTime(range, CMTimeRangeGetEnd(range))
    /// ```
    /// The range is the video track's; ffprobe's last frame time lies inside it, its end does not.
    @Test func aTimeRangeDoesNotContainItsEnd() async throws {
        let track = try #require(try await Asset(url: clip).loadTracks(withMediaType: .video).first)
        let range = track.timeRange
        #expect(!range.containsTime(range.end))
        #expect(range.containsTime(range.start))
        let lastFrame = try #require(try await GuideProbe.lastVideoFrameTime(clip))
        #expect(range.containsTime(MediaTime(seconds: lastFrame, preferredTimescale: 90_000)), "last frame at \(lastFrame) s, range \(range)")
        #expect(abs(range.end.seconds - (lastFrame + 1.0 / 30)) < 0.001)
    }

    /// "Special Values of CMTimeRange":
    /// ```objc
    /// CMTimeRange myTimeRange = <#Get a CMTimeRange#>;
    /// if (CMTIMERANGE_IS_EMPTY(myTimeRange)) {
    ///     // The time range is zero.
    /// }
    /// ```
    @Test func specialValuesOfCMTimeRange() async throws {
        let track = try #require(try await Asset(url: clip).loadTracks(withMediaType: .audio).first)
        let myTimeRange = track.timeRange
        #expect(!myTimeRange.isEmpty && myTimeRange.isValid)
        #expect(MediaTimeRange(start: myTimeRange.end, duration: .zero).isEmpty)
        #expect(MediaTimeRange.zero.isEmpty)
        #expect(!MediaTimeRange.invalid.isEmpty && !MediaTimeRange.invalid.isValid)
        #expect(myTimeRange.intersection(MediaTimeRange(start: myTimeRange.end, duration: myTimeRange.duration)).isEmpty)
    }

    /// "Representations of Media" (the picture of a video sample buffer):
    /// ```objc
    /// CVPixelBufferRef pixelBuffer = CMSampleBufferGetImageBuffer(<#A CMSampleBuffer#>);
    /// ```
    /// A decoded sample has a picture of the clip's size, with its timing and format; a sample
    /// read as stored has none.
    @Test func sampleBufferImageBuffer() async throws {
        let asset = Asset(url: clip)
        let track = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let reader = AssetReader(asset: asset)
        let decoded = try AssetReaderTrackOutput(track: track, outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
        let stored = try AssetReaderTrackOutput(track: track, outputSettings: nil)
        try reader.add(decoded)
        try reader.add(stored)
        try reader.startReading()
        let sample = try #require(try decoded.copyNextSampleBuffer())
        let pixelBuffer = try #require(sample.imageBuffer)
        let probed = try await GuideProbe.stream(clip, "v:0")
        #expect(pixelBuffer.width == probed["width"] as? Int && pixelBuffer.height == probed["height"] as? Int)
        #expect(sample.presentationTimeStamp == .zero && sample.formatDescription.video?.width == 320)
        let packet = try #require(try stored.copyNextSampleBuffer())
        #expect(packet.imageBuffer == nil && packet.totalSampleSize > 0)
        reader.cancelReading()
    }

    /// "Representations of Media" (a sample buffer's metadata attachments):
    /// ```objc
    /// CMSampleBufferRef sampleBuffer = <#Get a sample buffer#>;
    /// CFDictionaryRef metadataDictionary =
    ///     CMGetAttachment(sampleBuffer, CFSTR("MetadataDictionary", NULL);
    /// if (metadataDictionary) {
    ///     // Do something with the metadata.
    /// }
    /// ```
    /// Keyed attachments read as `CMGetAttachment` reads them, and are also typed
    /// (`SampleAttachments`): the sync flag of every stored sample must match ffprobe's keyframe
    /// flags packet for packet, under its Core Media key as well. The metadata dictionary is
    /// `metadataDictionaryOfADecodedPicture`'s.
    @Test func sampleBufferAttachments() async throws {
        let asset = Asset(url: clip)
        let track = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
        try reader.add(output)
        try reader.startReading()
        var syncFlags: [Bool] = []
        while let sampleBuffer = try output.copyNextSampleBuffer() {
            let attachments = sampleBuffer.attachments
            syncFlags.append(attachments.isSync)
            #expect(attachments.isSync == sampleBuffer.isSync)
            #expect(sampleBuffer.attachment(forKey: "NotSync") == (attachments.isSync ? nil : .bool(true)))
        }
        let probed = try await GuideProbe.keyframeFlags(clip)
        #expect(syncFlags.count == 90)
        #expect(syncFlags == probed)
        #expect(syncFlags.filter { $0 }.count == 3, "a keyframe every second")
    }

    /// "Representations of Media" again, on a picture whose decoder has metadata to give: a
    /// JPEG with EXIF tags (the still-image listing reads `kCGImagePropertyExifDictionary`
    /// the same way). ffprobe reads the same tags from the file.
    /// ```objc
    /// CFDictionaryRef metadataDictionary =
    ///     CMGetAttachment(sampleBuffer, CFSTR("MetadataDictionary", NULL);
    /// if (metadataDictionary) {
    ///     // Do something with the metadata.
    /// }
    /// ```
    @Test func metadataDictionaryOfADecodedPicture() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let jpeg = dir.appendingPathComponent("camera.jpg")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240", "-frames:v", "1", jpeg.path]).status == 0)
        try Self.insertEXIF(make: "VAFCam", model: "Test 1", into: jpeg)
        let probed = try run(try #require(which("ffprobe")), ["-v", "error", "-show_entries", "frame_tags=Make,Model", "-of", "csv=p=0", jpeg.path])
        #expect(String(decoding: probed.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "VAFCam,Test 1")

        let asset = Asset(url: jpeg)
        let track = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: .video(PixelBufferAttributes(pixelFormat: .bgra)))
        try reader.add(output)
        try reader.startReading()
        let sampleBuffer = try #require(try output.copyNextSampleBuffer())
        let metadataDictionary = sampleBuffer.attachment(forKey: "MetadataDictionary")?.dictionaryValue
        #expect(metadataDictionary?["Make"] == .string("VAFCam"), "\(String(describing: metadataDictionary))")
        #expect(metadataDictionary?["Model"] == .string("Test 1"))
        // Set and removed by key, as CMSetAttachment and CMRemoveAttachment do.
        sampleBuffer.setAttachment(.string("checked"), forKey: "com.example.review")
        #expect(sampleBuffer.attachment(forKey: "com.example.review")?.stringValue == "checked")
        sampleBuffer.setAttachment(nil, forKey: "com.example.review")
        #expect(sampleBuffer.attachment(forKey: "com.example.review") == nil)
        sampleBuffer.setAttachment(.time(MediaTime(value: 1, timescale: 100)), forKey: SampleAttachments.trimDurationAtStart)
        #expect(sampleBuffer.outputPresentationTimeStamp == MediaTime(value: 1, timescale: 100))
        reader.cancelReading()
    }

    /// Puts an EXIF segment (APP1: a little-endian TIFF header and one IFD with Make and Model)
    /// after `jpeg`'s start-of-image marker.
    static func insertEXIF(make: String, model: String, into jpeg: URL) throws {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func le32(_ v: Int) -> [UInt8] { le16(v & 0xFFFF) + le16(v >> 16) }
        let strings = [(0x010F, Array(make.utf8) + [0]), (0x0110, Array(model.utf8) + [0])]
        var entries: [UInt8] = [], values: [UInt8] = []
        var offset = 8 + 2 + strings.count * 12 + 4
        for (tag, bytes) in strings {
            entries += le16(tag) + le16(2) + le32(bytes.count) + le32(offset)
            values += bytes
            offset += bytes.count
        }
        let tiff = Array("II*\u{0}".utf8) + le32(8) + le16(strings.count) + entries + le32(0) + values
        let payload = Array("Exif\u{0}\u{0}".utf8) + tiff
        let segment: [UInt8] = [0xFF, 0xE1, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        var data = try Data(contentsOf: jpeg)
        data.insert(contentsOf: segment, at: 2)
        try data.write(to: jpeg)
    }

    /// "Converting CMSampleBuffer to a UIImage Object":
    /// ```objc
    /// - (UIImage *) imageFromSampleBuffer:(CMSampleBufferRef) sampleBuffer
    /// {
    ///     CVImageBufferRef imageBuffer = CMSampleBufferGetImageBuffer(sampleBuffer);
    ///     CVPixelBufferLockBaseAddress(imageBuffer, 0);
    ///     void *baseAddress = CVPixelBufferGetBaseAddress(imageBuffer);
    ///     size_t bytesPerRow = CVPixelBufferGetBytesPerRow(imageBuffer);
    ///     size_t width = CVPixelBufferGetWidth(imageBuffer);
    ///     size_t height = CVPixelBufferGetHeight(imageBuffer);
    ///     CGColorSpaceRef colorSpace = CGColorSpaceCreateDeviceRGB();
    ///     CGContextRef context = CGBitmapContextCreate(baseAddress, width, height, 8,
    ///       bytesPerRow, colorSpace, kCGBitmapByteOrder32Little | kCGImageAlphaPremultipliedFirst);
    ///     CGImageRef quartzImage = CGBitmapContextCreateImage(context);
    ///     CVPixelBufferUnlockBaseAddress(imageBuffer,0);
    ///     CGContextRelease(context);
    ///     CGColorSpaceRelease(colorSpace);
    ///     UIImage *image = [UIImage imageWithCGImage:quartzImage];
    ///     CGImageRelease(quartzImage);
    ///     return (image);
    /// }
    /// ```
    /// `Image` stands for `UIImage`; the BGRA picture is read under `withUnsafePlanes` (the
    /// lock). The first frame must match ffmpeg's own RGB decode of it.
    @Test func imageFromSampleBuffer() async throws {
        let asset = Asset(url: clip)
        let track = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: .video(PixelBufferAttributes(pixelFormat: .bgra)))
        try reader.add(output)
        try reader.startReading()
        let sampleBuffer = try #require(try output.copyNextSampleBuffer())
        reader.cancelReading()
        #expect(sampleBuffer.imageBuffer?.pixelFormat == .bgra, "kCGBitmapByteOrder32Little | kCGImageAlphaPremultipliedFirst")
        let image = try Self.image(from: sampleBuffer)
        #expect(image.width == 320 && image.height == 240)

        let ffmpeg = try #require(which("ffmpeg"))
        let decoded = try await ChildProcess.run(ffmpeg, ["-v", "error", "-i", clip.path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                                                 timeLimit: 120)
        try #require(decoded.succeeded && decoded.standardOutput.count == image.pixels.count, "ffmpeg: \(decoded.stderr)")
        let difference = zip(decoded.standardOutput, image.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
        let mean = Double(difference) / Double(image.pixels.count)
        #expect(mean < 3, "mean difference from ffmpeg's RGB: \(mean)")
    }

    /// The guide's `imageFromSampleBuffer:`: the sample's BGRA (or ARGB) picture as an RGB `Image`.
    static func image(from sampleBuffer: SampleBuffer) throws -> Image {
        let imageBuffer = try #require(sampleBuffer.imageBuffer)
        let (red, green, blue) = try #require([PixelFormat.bgra: (2, 1, 0), .argb: (1, 2, 3)][imageBuffer.pixelFormat],
                                              "a 32-bit RGB picture, not \(imageBuffer.pixelFormat)")
        let (width, height) = (imageBuffer.width, imageBuffer.height)
        let pixels = try imageBuffer.withUnsafePlanes { planes in
            let baseAddress = planes[0].baseAddress
            let bytesPerRow = planes[0].bytesPerRow
            var rgb = [UInt8](repeating: 0, count: width * height * 3)
            for y in 0..<height {
                let row = baseAddress.advanced(by: y * bytesPerRow).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width {
                    rgb[(y * width + x) * 3] = row[x * 4 + red]
                    rgb[(y * width + x) * 3 + 1] = row[x * 4 + green]
                    rgb[(y * width + x) * 3 + 2] = row[x * 4 + blue]
                }
            }
            return rgb
        }
        return try Image(width: width, height: height, pixels: pixels)
    }
}

/// ffprobe as the guide listings' oracle, run with the async `ChildProcess.run` so that the
/// tests' cooperative threads are never blocked on a child process.
enum GuideProbe {
    /// ffprobe's JSON for `arguments` plus `url`.
    static func json(_ url: URL, _ arguments: [String]) async throws -> [String: Any] {
        let ffprobe = try #require(which("ffprobe"), "ffprobe is the oracle and must be installed")
        let result = try await ChildProcess.run(ffprobe, ["-v", "error", "-of", "json"] + arguments + [url.path], timeLimit: 300)
        try #require(result.succeeded, "ffprobe \(url.lastPathComponent): \(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: result.standardOutput) as? [String: Any])
    }

    /// The first stream matching `specifier` ("v:0", "a"), with its frames counted (`nb_read_frames`).
    static func stream(_ url: URL, _ specifier: String) async throws -> [String: Any] {
        let json = try await json(url, ["-count_frames", "-select_streams", specifier, "-show_streams"])
        return (json["streams"] as? [[String: Any]])?.first ?? [:]
    }

    /// Every stream of the file, in order.
    static func streams(_ url: URL) async throws -> [[String: Any]] {
        try await json(url, ["-show_streams"])["streams"] as? [[String: Any]] ?? []
    }

    /// The container's duration in seconds (-1 when ffprobe gives none).
    static func formatDuration(_ url: URL) async throws -> Double {
        let format = try await json(url, ["-show_format"])["format"] as? [String: Any]
        return Double(format?["duration"] as? String ?? "") ?? -1
    }

    /// A stream's duration in seconds (-1 when ffprobe gives none).
    static func duration(_ url: URL, _ specifier: String) async throws -> Double {
        Double(try await stream(url, specifier)["duration"] as? String ?? "") ?? -1
    }

    /// The number of frames ffprobe decodes from a stream (-1 when it gives none).
    static func frameCount(_ url: URL, _ specifier: String) async throws -> Int {
        Int(try await stream(url, specifier)["nb_read_frames"] as? String ?? "") ?? -1
    }

    /// The presentation time of the first video stream's last frame, in seconds.
    static func lastVideoFrameTime(_ url: URL) async throws -> Double? {
        let json = try await json(url, ["-select_streams", "v:0", "-show_entries", "frame=pts_time"])
        let frames = json["frames"] as? [[String: Any]] ?? []
        return frames.compactMap { Double($0["pts_time"] as? String ?? "") }.max()
    }

    /// The keyframe flag of each packet of the first video stream, in decode order.
    static func keyframeFlags(_ url: URL) async throws -> [Bool] {
        let json = try await json(url, ["-select_streams", "v:0", "-show_entries", "packet=flags"])
        return (json["packets"] as? [[String: Any]] ?? []).map { ($0["flags"] as? String ?? "").hasPrefix("K") }
    }
}

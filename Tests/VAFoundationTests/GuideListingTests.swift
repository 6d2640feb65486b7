import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// The Editing chapter's listings of the AVFoundation Programming Guide (`../shared/seeds/002_*`),
/// ported type for type. Each quotes the Objective-C it ports, runs on a real clip, and checks
/// its effect with ffprobe/ffmpeg where it makes a file.
@Suite(.disabled(if: which("ffprobe") == nil || which("ffmpeg") == nil, "ffmpeg/ffprobe are not installed (Hardware/setup.sh installs them)"))
struct EditingGuideListingTests {
    let videoAsset = Asset(url: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4"))
    let anotherVideoAsset = Asset(url: TestFiles.fixture("h264_aac_iphone6_rot90_gps_metadata.mov"))

    /// ```objc
    /// AVMutableComposition *mutableComposition = [AVMutableComposition composition];
    /// AVMutableCompositionTrack *mutableCompositionVideoTrack = [mutableComposition addMutableTrackWithMediaType:AVMediaTypeVideo preferredTrackID:kCMPersistentTrackID_Invalid];
    /// AVMutableCompositionTrack *mutableCompositionAudioTrack = [mutableComposition addMutableTrackWithMediaType:AVMediaTypeAudio preferredTrackID:kCMPersistentTrackID_Invalid];
    /// ```
    @Test func creatingAComposition() throws {
        let mutableComposition = MutableComposition()
        let mutableCompositionVideoTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .video, preferredTrackID: 0))
        let mutableCompositionAudioTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .audio, preferredTrackID: 0))
        // kCMPersistentTrackID_Invalid asks for a unique ID to be generated.
        #expect(mutableCompositionVideoTrack.trackID != mutableCompositionAudioTrack.trackID)
        #expect(mutableComposition.tracks.map(\.mediaType) == [.video, .audio])
        #expect(mutableComposition.addMutableTrack(withMediaType: .video, preferredTrackID: mutableCompositionVideoTrack.trackID) == nil,
                "an ID in use is refused")
    }

    /// ```objc
    /// AVAssetTrack *videoAssetTrack = [[videoAsset tracksWithMediaType:AVMediaTypeVideo] objectAtIndex:0];
    /// AVAssetTrack *anotherVideoAssetTrack = [[anotherVideoAsset tracksWithMediaType:AVMediaTypeVideo] objectAtIndex:0];
    /// [mutableCompositionVideoTrack insertTimeRange:CMTimeRangeMake(kCMTimeZero,videoAssetTrack.timeRange.duration) ofTrack:videoAssetTrack atTime:kCMTimeZero error:nil];
    /// [mutableCompositionVideoTrack insertTimeRange:CMTimeRangeMake(kCMTimeZero,anotherVideoAssetTrack.timeRange.duration) ofTrack:anotherVideoAssetTrack atTime:videoAssetTrack.timeRange.duration error:nil];
    /// ```
    @Test func addingAudiovisualDataToAComposition() async throws {
        let mutableComposition = MutableComposition()
        let mutableCompositionVideoTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .video))
        let videoAssetTrack = try #require(try await videoAsset.loadTracks(withMediaType: .video).first)
        let anotherVideoAssetTrack = try #require(try await anotherVideoAsset.loadTracks(withMediaType: .video).first)
        try mutableCompositionVideoTrack.insertTimeRange(MediaTimeRange(start: .zero, duration: videoAssetTrack.timeRange.duration),
                                                         of: videoAssetTrack, at: .zero)
        try mutableCompositionVideoTrack.insertTimeRange(MediaTimeRange(start: .zero, duration: anotherVideoAssetTrack.timeRange.duration),
                                                         of: anotherVideoAssetTrack, at: videoAssetTrack.timeRange.duration)
        let expected = videoAssetTrack.timeRange.duration + anotherVideoAssetTrack.timeRange.duration
        #expect(mutableComposition.duration == expected)

        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("two.mp4")
        _ = try await ExportSession(asset: mutableComposition, preset: .preset640x480).export(to: output, as: .mp4)
        let probed = try CompositionExportTests.duration(output, stream: "v")
        #expect(abs(probed - expected.seconds) <= 1.0 / 30 + 0.001, "ffprobe: \(probed) s, composition: \(expected.seconds) s")
    }

    /// ```objc
    /// AVMutableCompositionTrack *compatibleCompositionTrack = [mutableComposition mutableTrackCompatibleWithTrack:<#the AVAssetTrack you want to insert#>];
    /// if (compatibleCompositionTrack) {
    /// // Implementation continues.
    /// }
    /// ```
    @Test func retrievingCompatibleCompositionTracks() async throws {
        let mutableComposition = MutableComposition()
        let audio = try #require(try await videoAsset.loadTracks(withMediaType: .audio).first)
        let video = try #require(try await videoAsset.loadTracks(withMediaType: .video).first)
        #expect(mutableComposition.mutableTrack(compatibleWith: video) == nil)
        let videoTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .video))
        let compatibleCompositionTrack = try #require(mutableComposition.mutableTrack(compatibleWith: video))
        #expect(compatibleCompositionTrack.trackID == videoTrack.trackID)
        #expect(mutableComposition.mutableTrack(compatibleWith: audio) == nil)
    }

    /// ```objc
    /// AVMutableAudioMix *mutableAudioMix = [AVMutableAudioMix audioMix];
    /// AVMutableAudioMixInputParameters *mixParameters = [AVMutableAudioMixInputParameters audioMixInputParametersWithTrack:mutableCompositionAudioTrack];
    /// [mixParameters setVolumeRampFromStartVolume:1.f toEndVolume:0.f timeRange:CMTimeRangeMake(kCMTimeZero, mutableComposition.duration)];
    /// mutableAudioMix.inputParameters = @[mixParameters];
    /// ```
    @Test func generatingAVolumeRamp() async throws {
        let mutableComposition = MutableComposition()
        let mutableCompositionAudioTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .audio))
        let audio = try #require(try await videoAsset.loadTracks(withMediaType: .audio).first)
        try mutableCompositionAudioTrack.insertTimeRange(audio.timeRange, of: audio, at: .zero)
        var mutableAudioMix = AudioMix()
        var mixParameters = AudioMixInputParameters(track: mutableCompositionAudioTrack)
        mixParameters.setVolumeRamp(fromStartVolume: 1, toEndVolume: 0, timeRange: MediaTimeRange(start: .zero, duration: mutableComposition.duration))
        mutableAudioMix.inputParameters = [mixParameters]
        let ramp = try #require(mixParameters.getVolumeRamp(for: MediaTime(value: 1, timescale: 1)))
        #expect(ramp.startVolume == 1 && ramp.endVolume == 0 && ramp.timeRange.duration == mutableComposition.duration)

        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("fade.m4a")
        let session = ExportSession(asset: mutableComposition, preset: .appleM4A)
        session.audioMix = mutableAudioMix
        _ = try await session.export(to: output, as: .m4a)
        // ffmpeg measures the level: the fade leaves the last fifth far quieter than the first.
        let duration = mutableComposition.duration.seconds
        let early = try await Self.rmsLevel(output, from: 0.1, length: 0.4)
        let late = try await Self.rmsLevel(output, from: duration - 0.5, length: 0.4)
        #expect(early - late > 12, "a fade to silence: \(early) dB at the start, \(late) dB at the end")
    }

    /// ```objc
    /// AVMutableVideoCompositionInstruction *mutableVideoCompositionInstruction = [AVMutableVideoCompositionInstruction videoCompositionInstruction];
    /// mutableVideoCompositionInstruction.timeRange = CMTimeRangeMake(kCMTimeZero, mutableComposition.duration);
    /// mutableVideoCompositionInstruction.backgroundColor = [[UIColor redColor] CGColor];
    /// ```
    @Test func changingTheCompositionsBackgroundColor() async throws {
        let mutableComposition = MutableComposition()
        try await mutableComposition.insertTimeRange(MediaTimeRange(start: .zero, duration: MediaTime(value: 1, timescale: 1)), of: videoAsset, at: .zero)
        var mutableVideoCompositionInstruction = VideoCompositionInstruction(timeRange: MediaTimeRange(start: .zero, duration: mutableComposition.duration))
        mutableVideoCompositionInstruction.backgroundColor = RGBAColor(red: 1, green: 0, blue: 0)
        // With no layer instruction, nothing covers the background.
        let videoComposition = VideoComposition(renderSize: Size(width: 320, height: 240), frameDuration: MediaTime(value: 1, timescale: 30),
                                                instructions: [mutableVideoCompositionInstruction])
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("red.mp4")
        let session = ExportSession(asset: mutableComposition, preset: .preset640x480)
        session.videoComposition = videoComposition
        _ = try await session.export(to: output, as: .mp4)
        let pixel = try await VideoCompositionExportTests.pixel(output, at: 0.5, x: 100, y: 100)
        #expect(pixel[0] > 220 && pixel[1] < 40 && pixel[2] < 40, "red background: \(pixel)")
    }

    /// ```objc
    /// AVMutableVideoCompositionInstruction *firstVideoCompositionInstruction = [AVMutableVideoCompositionInstruction videoCompositionInstruction];
    /// firstVideoCompositionInstruction.timeRange = CMTimeRangeMake(kCMTimeZero, firstVideoAssetTrack.timeRange.duration);
    /// AVMutableVideoCompositionLayerInstruction *firstVideoLayerInstruction = [AVMutableVideoCompositionLayerInstruction videoCompositionLayerInstructionWithAssetTrack:mutableCompositionVideoTrack];
    /// [firstVideoLayerInstruction setOpacityRampFromStartOpacity:1.f toEndOpacity:0.f timeRange:CMTimeRangeMake(kCMTimeZero, firstVideoAssetTrack.timeRange.duration)];
    /// AVMutableVideoCompositionInstruction *secondVideoCompositionInstruction = [AVMutableVideoCompositionInstruction videoCompositionInstruction];
    /// secondVideoCompositionInstruction.timeRange = CMTimeRangeMake(firstVideoAssetTrack.timeRange.duration, CMTimeAdd(firstVideoAssetTrack.timeRange.duration, secondVideoAssetTrack.timeRange.duration));
    /// AVMutableVideoCompositionLayerInstruction *secondVideoLayerInstruction = [AVMutableVideoCompositionLayerInstruction videoCompositionLayerInstructionWithAssetTrack:mutableCompositionVideoTrack];
    /// firstVideoCompositionInstruction.layerInstructions = @[firstVideoLayerInstruction];
    /// secondVideoCompositionInstruction.layerInstructions = @[secondVideoLayerInstruction];
    /// AVMutableVideoComposition *mutableVideoComposition = [AVMutableVideoComposition videoComposition];
    /// mutableVideoComposition.instructions = @[firstVideoCompositionInstruction, secondVideoCompositionInstruction];
    /// ```
    @Test func applyingOpacityRamps() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let white = dir.appendingPathComponent("white.mp4")
        try await VideoCompositionExportTests.colourClip(white, colour: "white")
        let mutableComposition = MutableComposition()
        let mutableCompositionVideoTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .video))
        let firstVideoAssetTrack = try #require(try await Asset(url: white).loadTracks(withMediaType: .video).first)
        let secondVideoAssetTrack = firstVideoAssetTrack
        try mutableCompositionVideoTrack.insertTimeRange(MediaTimeRange(start: .zero, duration: firstVideoAssetTrack.timeRange.duration), of: firstVideoAssetTrack, at: .zero)
        try mutableCompositionVideoTrack.insertTimeRange(MediaTimeRange(start: .zero, duration: secondVideoAssetTrack.timeRange.duration), of: secondVideoAssetTrack,
                                                         at: firstVideoAssetTrack.timeRange.duration)
        var firstVideoCompositionInstruction = VideoCompositionInstruction(timeRange: MediaTimeRange(start: .zero, duration: firstVideoAssetTrack.timeRange.duration))
        var firstVideoLayerInstruction = VideoCompositionLayerInstruction(assetTrack: mutableCompositionVideoTrack)
        firstVideoLayerInstruction.setOpacityRamp(fromStartOpacity: 1, toEndOpacity: 0, timeRange: MediaTimeRange(start: .zero, duration: firstVideoAssetTrack.timeRange.duration))
        var secondVideoCompositionInstruction = VideoCompositionInstruction(timeRange: MediaTimeRange(
            start: firstVideoAssetTrack.timeRange.duration, duration: secondVideoAssetTrack.timeRange.duration))
        let secondVideoLayerInstruction = VideoCompositionLayerInstruction(assetTrack: mutableCompositionVideoTrack)
        firstVideoCompositionInstruction.layerInstructions = [firstVideoLayerInstruction]
        secondVideoCompositionInstruction.layerInstructions = [secondVideoLayerInstruction]
        var mutableVideoComposition = VideoComposition()
        mutableVideoComposition.instructions = [firstVideoCompositionInstruction, secondVideoCompositionInstruction]
        mutableVideoComposition.renderSize = Size(width: 320, height: 240)
        mutableVideoComposition.frameDuration = MediaTime(value: 1, timescale: 30)

        let output = dir.appendingPathComponent("fade.mp4")
        let session = ExportSession(asset: mutableComposition, preset: .preset640x480)
        session.videoComposition = mutableVideoComposition
        _ = try await session.export(to: output, as: .mp4)
        // The first clip fades from white to the black background over its 2 s; the second shows whole.
        let start = try await VideoCompositionExportTests.pixel(output, at: 0.05, x: 160, y: 120)[0]
        let middle = try await VideoCompositionExportTests.pixel(output, at: 1.0, x: 160, y: 120)[0]
        let end = try await VideoCompositionExportTests.pixel(output, at: 1.95, x: 160, y: 120)[0]
        let second = try await VideoCompositionExportTests.pixel(output, at: 3.0, x: 160, y: 120)[0]
        #expect(start > 230 && abs(middle - 128) <= 12 && end < 30 && second > 230, "white → half → black, then white: \(start) \(middle) \(end) \(second)")
    }

    /// "Putting It All Together": two video tracks and an audio track into one composition,
    /// orientation checked, layer transforms from each track's preferred transform, render size
    /// and frame duration set, exported as a QuickTime movie at the highest quality.
    ///
    /// ```objc
    /// AVMutableComposition *mutableComposition = [AVMutableComposition composition];
    /// AVMutableCompositionTrack *videoCompositionTrack = [mutableComposition addMutableTrackWithMediaType:AVMediaTypeVideo preferredTrackID:kCMPersistentTrackID_Invalid];
    /// AVMutableCompositionTrack *audioCompositionTrack = [mutableComposition addMutableTrackWithMediaType:AVMediaTypeAudio preferredTrackID:kCMPersistentTrackID_Invalid];
    /// [videoCompositionTrack insertTimeRange:CMTimeRangeMake(kCMTimeZero, firstVideoAssetTrack.timeRange.duration) ofTrack:firstVideoAssetTrack atTime:kCMTimeZero error:nil];
    /// [videoCompositionTrack insertTimeRange:CMTimeRangeMake(kCMTimeZero, secondVideoAssetTrack.timeRange.duration) ofTrack:secondVideoAssetTrack atTime:firstVideoAssetTrack.timeRange.duration error:nil];
    /// [audioCompositionTrack insertTimeRange:CMTimeRangeMake(kCMTimeZero, CMTimeAdd(firstVideoAssetTrack.timeRange.duration, secondVideoAssetTrack.timeRange.duration)) ofTrack:[[audioAsset tracksWithMediaType:AVMediaTypeAudio] objectAtIndex:0] atTime:kCMTimeZero error:nil];
    /// if (firstTransform.a == 0 && firstTransform.d == 0 && (firstTransform.b == 1.0 || firstTransform.b == -1.0) && (firstTransform.c == 1.0 || firstTransform.c == -1.0)) { isFirstVideoPortrait = YES; }
    /// …
    /// [firstVideoLayerInstruction setTransform:firstTransform atTime:kCMTimeZero];
    /// [secondVideoLayerInstruction setTransform:secondTransform atTime:firstVideoAssetTrack.timeRange.duration];
    /// mutableVideoComposition.renderSize = CGSizeMake(renderWidth, renderHeight);
    /// mutableVideoComposition.frameDuration = CMTimeMake(1,30);
    /// AVAssetExportSession *exporter = [[AVAssetExportSession alloc] initWithAsset:mutableComposition presetName:AVAssetExportPresetHighestQuality];
    /// exporter.outputFileType = AVFileTypeQuickTimeMovie;
    /// exporter.shouldOptimizeForNetworkUse = YES;
    /// exporter.videoComposition = mutableVideoComposition;
    /// [exporter exportAsynchronouslyWithCompletionHandler:^{ … }];
    /// ```
    @Test func puttingItAllTogether() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let secondURL = dir.appendingPathComponent("second.mp4"), audioURL = dir.appendingPathComponent("music.m4a")
        for (url, arguments) in [(secondURL, ["-f", "lavfi", "-i", "testsrc2=s=480x270:r=25:d=2", "-c:v", "libx264", "-pix_fmt", "yuv420p"]),
                                 (audioURL, ["-f", "lavfi", "-i", "sine=f=330:d=6", "-c:a", "aac"])] {
            let made = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin"] + arguments + [url.path], timeLimit: 120)
            try #require(made.shellStatus == 0)
        }
        let firstVideoAsset = videoAsset, secondVideoAsset = Asset(url: secondURL), audioAsset = Asset(url: audioURL)

        // 1. The composition, with a video and an audio track.
        let mutableComposition = MutableComposition()
        let videoCompositionTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .video))
        let audioCompositionTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .audio))
        // 2. The assets.
        let firstVideoAssetTrack = try #require(try await firstVideoAsset.loadTracks(withMediaType: .video).first)
        let secondVideoAssetTrack = try #require(try await secondVideoAsset.loadTracks(withMediaType: .video).first)
        try videoCompositionTrack.insertTimeRange(MediaTimeRange(start: .zero, duration: firstVideoAssetTrack.timeRange.duration), of: firstVideoAssetTrack, at: .zero)
        try videoCompositionTrack.insertTimeRange(MediaTimeRange(start: .zero, duration: secondVideoAssetTrack.timeRange.duration), of: secondVideoAssetTrack,
                                                  at: firstVideoAssetTrack.timeRange.duration)
        let total = firstVideoAssetTrack.timeRange.duration + secondVideoAssetTrack.timeRange.duration
        try audioCompositionTrack.insertTimeRange(MediaTimeRange(start: .zero, duration: total),
                                                  of: try #require(try await audioAsset.loadTracks(withMediaType: .audio).first), at: .zero)
        // 3. The orientation check.
        func isPortrait(_ t: VideoTransform) -> Bool { t.a == 0 && t.d == 0 && (t.b == 1 || t.b == -1) && (t.c == 1 || t.c == -1) }
        let firstTransform = firstVideoAssetTrack.preferredTransform, secondTransform = secondVideoAssetTrack.preferredTransform
        let isFirstVideoPortrait = isPortrait(firstTransform), isSecondVideoPortrait = isPortrait(secondTransform)
        #expect(isFirstVideoPortrait == isSecondVideoPortrait, "two landscape clips combine")
        let portraitTrack = try #require(try await anotherVideoAsset.loadTracks(withMediaType: .video).first)
        #expect(isPortrait(portraitTrack.preferredTransform) != isFirstVideoPortrait, "the iPhone clip is portrait: the guide refuses to combine it")
        // 4. The layer instructions.
        var firstVideoCompositionInstruction = VideoCompositionInstruction(timeRange: MediaTimeRange(start: .zero, duration: firstVideoAssetTrack.timeRange.duration))
        var secondVideoCompositionInstruction = VideoCompositionInstruction(timeRange: MediaTimeRange(
            start: firstVideoAssetTrack.timeRange.duration, duration: secondVideoAssetTrack.timeRange.duration))
        var firstVideoLayerInstruction = VideoCompositionLayerInstruction(assetTrack: videoCompositionTrack)
        firstVideoLayerInstruction.setTransform(firstTransform, at: .zero)
        var secondVideoLayerInstruction = VideoCompositionLayerInstruction(assetTrack: videoCompositionTrack)
        secondVideoLayerInstruction.setTransform(secondTransform, at: firstVideoAssetTrack.timeRange.duration)
        firstVideoCompositionInstruction.layerInstructions = [firstVideoLayerInstruction]
        secondVideoCompositionInstruction.layerInstructions = [secondVideoLayerInstruction]
        var mutableVideoComposition = VideoComposition()
        mutableVideoComposition.instructions = [firstVideoCompositionInstruction, secondVideoCompositionInstruction]
        // 5. Render size and frame rate.
        let naturalSizeFirst = isFirstVideoPortrait ? Size(width: firstVideoAssetTrack.naturalSize.height, height: firstVideoAssetTrack.naturalSize.width) : firstVideoAssetTrack.naturalSize
        let naturalSizeSecond = isFirstVideoPortrait ? Size(width: secondVideoAssetTrack.naturalSize.height, height: secondVideoAssetTrack.naturalSize.width) : secondVideoAssetTrack.naturalSize
        mutableVideoComposition.renderSize = Size(width: max(naturalSizeFirst.width, naturalSizeSecond.width), height: max(naturalSizeFirst.height, naturalSizeSecond.height))
        mutableVideoComposition.frameDuration = MediaTime(value: 1, timescale: 30)
        // 6. The export.
        let exporter = ExportSession(asset: mutableComposition, preset: .highestQuality)
        exporter.shouldOptimizeForNetworkUse = true
        exporter.videoComposition = mutableVideoComposition
        let outputURL = dir.appendingPathComponent("together.mov")
        _ = try await exporter.export(to: outputURL, as: .mov)
        #expect(exporter.status == .completed)

        let video = try WriterTestSupport.probeStream(outputURL, "v")
        #expect(video["width"] as? Int == 480 && video["height"] as? Int == 270, "the render size: \(video)")
        #expect(abs(try CompositionExportTests.duration(outputURL, stream: "v") - total.seconds) <= 1.0 / 30 + 0.001)
        #expect(abs(try CompositionExportTests.duration(outputURL, stream: "a") - total.seconds) <= 0.05)
        let frames = try await ChildProcess.run(which("ffprobe")!, ["-v", "error", "-count_frames", "-select_streams", "v", "-show_entries",
                                                                    "stream=nb_read_frames", "-of", "csv=p=0", outputURL.path], timeLimit: 120)
        #expect(Int(frames.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == Int((total.seconds * 30).rounded()), "30 fps throughout")
    }

    /// The RMS level (dBFS) of `length` seconds from `start`, by ffmpeg's astats.
    static func rmsLevel(_ url: URL, from start: Double, length: Double) async throws -> Double {
        let child = try await ChildProcess.run(which("ffmpeg")!, ["-v", "info", "-nostdin", "-ss", "\(start)", "-t", "\(length)", "-i", url.path,
                                                                  "-af", "astats=measure_perchannel=none", "-f", "null", "-"], timeLimit: 120)
        let line = try #require(child.stderr.split(separator: "\n").last { $0.contains("RMS level dB:") })
        return Double(line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) ?? .nan
    }
}

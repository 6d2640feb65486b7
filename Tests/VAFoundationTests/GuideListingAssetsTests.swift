import Foundation
import Testing
@testable import VAFoundation

/// The listings of the AVFoundation Programming Guide's "Using Assets" chapter, ported type for
/// type: `AVURLAsset` → `Asset`, `AVAssetExportSession` → `ExportSession`, `CMTime` →
/// `MediaTime`. "Generating a Single Image" and "Generating a Sequence of Images" are in
/// ImageGeneratorTests (`guideListing…`); "Accessing the User's Assets" (`ALAssetsLibrary`,
/// the photo library) has no Linux counterpart and is not ported.
@Suite struct AssetsGuideListingTests {
    /// 3 s of 320x240 H.264 at 30 fps and 48 kHz AAC.
    let clip = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")
    /// A 4 s iPhone QuickTime movie: 568x320 H.264 turned a quarter, AAC mono, two metadata tracks.
    let movie = TestFiles.fixture("h264_aac_iphone6_rot90_gps_metadata.mov")

    /// "Creating an Asset Object":
    /// ```objc
    /// NSURL *url = <#A URL that identifies an audiovisual asset such as a movie file#>;
    /// AVURLAsset *anAsset = [[AVURLAsset alloc] initWithURL:url options:nil];
    /// ```
    @Test func creatingAnAssetObject() async throws {
        let url = movie
        let anAsset = Asset(url: url)
        #expect(anAsset.url == url && !anAsset.options.prefersPreciseDurationAndTiming)
        let (duration, tracks) = try await anAsset.load(.duration, .tracks)
        #expect(abs(duration.seconds - (try await GuideProbe.formatDuration(url))) < 0.01, "duration \(duration.seconds)")
        let probed = try await GuideProbe.streams(url)
        let kinds = probed.compactMap { $0["codec_type"] as? String }.filter { $0 == "video" || $0 == "audio" }
        #expect(tracks.filter { $0.mediaType == .video || $0.mediaType == .audio }.map(\.mediaType.rawValue) == kinds)
    }

    /// "Options for Initializing an Asset":
    /// ```objc
    /// NSURL *url = <#A URL that identifies an audiovisual asset such as a movie file#>;
    /// NSDictionary *options = @{ AVURLAssetPreferPreciseDurationAndTimingKey : @YES };
    /// AVURLAsset *anAssetToUseInAComposition = [[AVURLAsset alloc] initWithURL:url options:options];
    /// ```
    /// The precise asset's duration is the container's to the millisecond, and the asset goes
    /// into a composition whole.
    @Test func initializationOptionsPreciseTiming() async throws {
        let url = clip
        let options = Asset.Options(prefersPreciseDurationAndTiming: true)
        let anAssetToUseInAComposition = Asset(url: url, options: options)
        #expect(anAssetToUseInAComposition.options.prefersPreciseDurationAndTiming)
        let duration = try await anAssetToUseInAComposition.load(.duration)
        #expect(abs(duration.seconds - (try await GuideProbe.formatDuration(url))) < 0.001)
        let video = try #require(try await anAssetToUseInAComposition.loadTracks(withMediaType: .video).first)
        #expect(video.sampleCount == (try await GuideProbe.frameCount(url, "v:0")))

        let composition = MutableComposition()
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: duration), of: anAssetToUseInAComposition, at: .zero)
        #expect(composition.duration == duration)
    }

    /// "Preparing an Asset for Use":
    /// ```objc
    /// NSURL *url = <#A URL that identifies an audiovisual asset such as a movie file#>;
    /// AVURLAsset *anAsset = [[AVURLAsset alloc] initWithURL:url options:nil];
    /// NSArray *keys = @[@"duration"];
    ///
    /// [asset loadValuesAsynchronouslyForKeys:keys completionHandler:^() {
    ///     NSError *error = nil;
    ///     AVKeyValueStatus tracksStatus = [asset statusOfValueForKey:@"duration" error:&error];
    ///     switch (tracksStatus) {
    ///         case AVKeyValueStatusLoaded:
    ///             [self updateUserInterfaceForDuration];
    ///             break;
    ///         case AVKeyValueStatusFailed:
    ///             [self reportError:error forAsset:asset];
    ///             break;
    ///         case AVKeyValueStatusCancelled:
    ///             // Do whatever is appropriate for cancelation.
    ///             break;
    ///    }
    /// }];
    /// ```
    /// The status switch is the `async throws` load's result: loaded, or failed with a typed
    /// error (a missing file here). Loading is not cancelled by the caller's task: the
    /// inspection is shared by every caller of the asset.
    @Test func preparingAnAssetForUse() async throws {
        /// The guide's switch on the loading status, as the result of `load(.duration)`.
        func loadDuration(of asset: Asset) async -> Result<MediaTime, MediaError> {
            do {
                return .success(try await asset.load(.duration))
            } catch let error as MediaError {
                return .failure(error)
            } catch {
                return .failure(MediaError(.ioError, "\(error)"))
            }
        }
        let anAsset = Asset(url: clip)
        switch await loadDuration(of: anAsset) {
        case .success(let duration):
            #expect(abs(duration.seconds - (try await GuideProbe.formatDuration(clip))) < 0.01)
        case .failure(let error):
            Issue.record("the clip failed to load: \(error)")
        }
        let missing = Asset(url: URL(fileURLWithPath: "/nonexistent/movie.mov"))
        switch await loadDuration(of: missing) {
        case .success(let duration):
            Issue.record("a missing file loaded with duration \(duration)")
        case .failure(let error):
            #expect(error.code == .fileNotFound && error.path == "/nonexistent/movie.mov")
        }
    }

    /// "Getting Still Images From a Video":
    /// ```objc
    /// AVAsset anAsset = <#Get an asset#>;
    /// if ([[anAsset tracksWithMediaType:AVMediaTypeVideo] count] > 0) {
    ///     AVAssetImageGenerator *imageGenerator =
    ///         [AVAssetImageGenerator assetImageGeneratorWithAsset:anAsset];
    ///     // Implementation continues...
    /// }
    /// ```
    /// A movie has video and gets a generator whose first image is its upright size; an
    /// audio-only file has none.
    @Test func gettingStillImagesFromAVideo() async throws {
        let anAsset = Asset(url: movie)
        var generated = 0
        if try await anAsset.loadTracks(withMediaType: .video).count > 0 {
            let imageGenerator = AssetImageGenerator(asset: anAsset)
            imageGenerator.appliesPreferredTrackTransform = true
            let image = try await imageGenerator.image(at: .zero).image
            let probed = try await GuideProbe.stream(movie, "v:0")
            #expect(image.width == probed["height"] as? Int && image.height == probed["width"] as? Int, "turned a quarter")
            generated += 1
        }
        #expect(generated == 1)
        let audioOnly = Asset(url: TestFiles.fixture("ac3_51_plus_aac_stereo_two_tracks.mp4"))
        #expect(try await audioOnly.loadTracks(withMediaType: .video).isEmpty)
    }

    /// "Trimming and Transcoding a Movie" (checking the preset against the asset):
    /// ```objc
    /// AVAsset *anAsset = <#Get an asset#>;
    /// NSArray *compatiblePresets = [AVAssetExportSession exportPresetsCompatibleWithAsset:anAsset];
    /// if ([compatiblePresets containsObject:AVAssetExportPresetLowQuality]) {
    ///     AVAssetExportSession *exportSession = [[AVAssetExportSession alloc]
    ///         initWithAsset:anAsset presetName:AVAssetExportPresetLowQuality];
    ///     // Implementation continues.
    /// }
    /// ```
    /// The implementation continues with an export: ffprobe sees LowQuality's H.264 in its
    /// 224x128 box.
    @Test func exportPresetsCompatibleWithAsset() async throws {
        let anAsset = Asset(url: clip)
        let compatiblePresets = try await ExportSession.exportPresets(compatibleWith: anAsset)
        var exported = 0
        if compatiblePresets.contains(ExportPreset.lowQuality.name) {
            let exportSession = try #require(ExportSession(asset: anAsset, presetName: ExportPreset.lowQuality.name))
            #expect(exportSession.preset == .lowQuality)
            let dir = try TestFiles.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let url = dir.appendingPathComponent("low.mp4")
            _ = try await exportSession.export(to: url, as: .mp4)
            let video = try await GuideProbe.stream(url, "v:0")
            #expect(video["codec_name"] as? String == "h264")
            let (width, height) = (video["width"] as? Int ?? 0, video["height"] as? Int ?? 0)
            #expect(width <= 224 && height <= 128 && width > 0 && abs(Double(width) / Double(height) - 4.0 / 3) < 0.05, "\(width)x\(height)")
            exported += 1
        }
        #expect(exported == 1)
        #expect(!compatiblePresets.contains(ExportPreset.passthrough.name))
    }

    /// "Trimming and Transcoding a Movie" (output and time range):
    /// ```objc
    /// exportSession.outputURL = <#A file URL#>;
    /// exportSession.outputFileType = AVFileTypeQuickTimeMovie;
    ///
    /// CMTime start = CMTimeMakeWithSeconds(1.0, 600);
    /// CMTime duration = CMTimeMakeWithSeconds(3.0, 600);
    /// CMTimeRange range = CMTimeRangeMake(start, duration);
    /// exportSession.timeRange = range;
    /// ```
    /// The output URL and file type are `export(to:as:)`'s arguments. Seconds 1–4 of the 4 s
    /// movie come out as a 3 s QuickTime file.
    @Test func exportSessionTimeRange() async throws {
        let exportSession = ExportSession(asset: Asset(url: movie), preset: .lowQuality)
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let outputURL = dir.appendingPathComponent("trimmed.mov")
        let outputFileType = FileType.mov

        let start = MediaTime(seconds: 1.0, preferredTimescale: 600)
        let duration = MediaTime(seconds: 3.0, preferredTimescale: 600)
        let range = MediaTimeRange(start: start, duration: duration)
        exportSession.timeRange = range
        _ = try await exportSession.export(to: outputURL, as: outputFileType)

        let probed = try await GuideProbe.json(outputURL, ["-show_format"])["format"] as? [String: Any]
        let formatName = probed?["format_name"] as? String ?? ""
        #expect(formatName.hasPrefix("mov"), "\(formatName)")
        #expect(abs(try await GuideProbe.duration(outputURL, "v:0") - 3.0) < 0.1)
        #expect(abs(try await GuideProbe.duration(outputURL, "a:0") - 3.0) < 0.1)
    }

    /// "Trimming and Transcoding a Movie" (running the export and reading its status):
    /// ```objc
    /// [exportSession exportAsynchronouslyWithCompletionHandler:^{
    ///     switch ([exportSession status]) {
    ///         case AVAssetExportSessionStatusFailed:
    ///             NSLog(@"Export failed: %@", [[exportSession error] localizedDescription]);
    ///             break;
    ///         case AVAssetExportSessionStatusCancelled:
    ///             NSLog(@"Export canceled");
    ///             break;
    ///         default:
    ///             break;
    ///     }
    /// }];
    /// ```
    /// All three endings: completed; failed (the guide: "The export will fail if you try to
    /// overwrite an existing file"); cancelled with `cancelExport()` (the guide's
    /// `cancelExport` message) once frames flow, leaving no file.
    @Test func exportAsynchronouslyAndStatus() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let asset = Asset(url: clip)

        let completed = ExportSession(asset: asset, preset: .lowQuality)
        let url = dir.appendingPathComponent("out.mov")
        _ = try? await completed.export(to: url, as: .mov)
        #expect(completed.status == .completed && completed.error == nil)
        #expect(try await GuideProbe.frameCount(url, "v:0") == 90)

        let overwriting = ExportSession(asset: asset, preset: .lowQuality)
        _ = try? await overwriting.export(to: url, as: .mov)
        #expect(overwriting.status == .failed)
        #expect(overwriting.error?.code == .outputExists, "Export failed: \(String(describing: overwriting.error))")

        let cancelled = ExportSession(asset: asset, preset: .lowQuality)
        // Cancelled from another thread once the reader has read five frames (the export's
        // test seam): a task polling the progress could run too late on a starved pool.
        cancelled.stageProbe = StageProbe { [weak cancelled] step throws(MediaError) in
            if case .sampleRead(.video, 5, _) = step, let session = cancelled { DispatchQueue.global().async { session.cancelExport() } }
        }
        let cancelledURL = dir.appendingPathComponent("cancelled.mov")
        _ = try? await cancelled.export(to: cancelledURL, as: .mov)
        #expect(cancelled.status == .cancelled, "Export canceled")
        #expect(cancelled.error?.code == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: cancelledURL.path))
    }
}

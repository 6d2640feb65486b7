import Dispatch
import Foundation
import Testing
@testable import VAFoundation

/// The listings of the AVFoundation Programming Guide's "Export" chapter, ported type for type:
/// `AVAssetReader` → `AssetReader`, `AVAssetReaderTrackOutput` → `AssetReaderTrackOutput`,
/// `AVAssetWriter` → `AssetWriter`, `AVAssetWriterInput` → `AssetWriterInput`, output-settings
/// dictionaries → `LinearPCMSettings`/`AudioSettings`/`VideoSettings`/`PixelBufferAttributes`,
/// dispatch queues stay dispatch queues. Every file made is checked with ffprobe.
@Suite struct ExportGuideListingTests {
    /// 3 s of 320x240 H.264 at exactly 30 fps (90 frames) and 48 kHz mono AAC.
    let clip = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")
    /// A 4 s iPhone QuickTime movie: 568x320 H.264 shown turned a quarter, AAC mono.
    let movie = TestFiles.fixture("h264_aac_iphone6_rot90_gps_metadata.mov")

    // MARK: High frame rate

    /// "Recording" (high frame rate capture written with an asset writer):
    /// ```objc
    /// assetWriterInput.expectsMediaDataInRealTime = YES;
    /// ```
    /// The clip's 90 frames, stamped 1/60 s apart as a 60 fps capture would be, go to a
    /// real-time input: ffprobe sees all 90 at 60 fps.
    @Test func expectsMediaDataInRealTime() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("capture.mov")
        let assetWriter = try AssetWriter(url: url, fileType: .mov)
        let assetWriterInput = try AssetWriterInput(videoSettings: VideoSettings(codec: .h264, width: 320, height: 240))
        assetWriterInput.expectsMediaDataInRealTime = true
        #expect(assetWriterInput.expectsMediaDataInRealTime)
        try assetWriter.add(assetWriterInput)
        try assetWriter.startWriting()
        try assetWriter.startSession(atSourceTime: .zero)
        var index: Int64 = 0
        for try await sample in try await Self.decodedVideo(clip).output.sampleBuffers {
            let picture = try #require(sample.imageBuffer)
            try await assetWriterInput.append(SampleBuffer(pixelBuffer: picture, presentationTimeStamp: MediaTime(value: index, timescale: 60)))
            index += 1
        }
        assetWriterInput.markAsFinished()
        try await assetWriter.finishWriting()
        let stream = try await GuideProbe.stream(url, "v:0")
        #expect(stream["nb_read_frames"] as? String == "90")
        #expect(stream["r_frame_rate"] as? String == "60/1")
    }

    // MARK: Reading an asset

    /// "Creating the Asset Reader":
    /// ```objc
    /// NSError *outError;
    /// AVAsset *someAsset = <#AVAsset that you want to read#>;
    /// AVAssetReader *assetReader = [AVAssetReader assetReaderWithAsset:someAsset error:&outError];
    /// BOOL success = (assetReader != nil);
    /// ```
    /// Creating a reader cannot fail (the file is opened by `startReading()`, which throws the
    /// error `outError` would hold): it starts unknown, with no outputs, reading nothing yet.
    @Test func creatingTheAssetReader() async throws {
        let someAsset = Asset(url: clip)
        let assetReader = AssetReader(asset: someAsset)
        let success = assetReader.status == .unknown && assetReader.error == nil
        #expect(success)
        #expect(assetReader.asset === someAsset && assetReader.outputs.isEmpty)
        do {
            try assetReader.startReading()
            Issue.record("a reader without outputs started")
        } catch let error as MediaError {
            #expect(error.code == .invalidState)
        }
    }

    /// "Setting Up the Asset Reader Outputs" (a track output decompressing to Linear PCM):
    /// ```objc
    /// AVAsset *localAsset = assetReader.asset;
    /// // Get the audio track to read.
    /// AVAssetTrack *audioTrack = [[localAsset tracksWithMediaType:AVMediaTypeAudio] objectAtIndex:0];
    /// // Decompression settings for Linear PCM
    /// NSDictionary *decompressionAudioSettings = @{ AVFormatIDKey : [NSNumber numberWithUnsignedInt:kAudioFormatLinearPCM] };
    /// // Create the output with the audio track and decompression settings.
    /// AVAssetReaderOutput *trackOutput = [AVAssetReaderTrackOutput assetReaderTrackOutputWithTrack:audioTrack outputSettings:decompressionAudioSettings];
    /// // Add the output to the reader if possible.
    /// if ([assetReader canAddOutput:trackOutput])
    ///     [assetReader addOutput:trackOutput];
    /// ```
    /// Every sample of the track comes out as 16-bit PCM: as many as ffprobe's duration holds.
    @Test func trackOutputDecompressingAudio() async throws {
        let assetReader = AssetReader(asset: Asset(url: clip))
        let localAsset = assetReader.asset
        let audioTrack = try await localAsset.loadTracks(withMediaType: .audio)[0]
        let decompressionAudioSettings = LinearPCMSettings()
        let trackOutput = try AssetReaderTrackOutput(track: audioTrack, outputSettings: .audio(decompressionAudioSettings))
        trackOutput.alwaysCopiesSampleData = false
        if assetReader.canAdd(trackOutput) {
            try assetReader.add(trackOutput)
        }
        #expect(assetReader.outputs.count == 1)
        try assetReader.startReading()
        var frames = 0
        while let sample = try trackOutput.copyNextSampleBuffer() {
            let buffer = try #require(sample.audioBuffer)
            #expect(buffer.format == .int16 && buffer.sampleRate == 48000)
            frames += buffer.sampleCount
        }
        let expected = try await GuideProbe.duration(clip, "a:0") * 48000
        #expect(abs(Double(frames) - expected) <= 1024, "\(frames) PCM frames, ffprobe's duration holds \(expected)")
    }

    /// "Setting Up the Asset Reader Outputs" (an audio mix output):
    /// ```objc
    /// AVAudioMix *audioMix = <#An AVAudioMix that specifies how the audio tracks from the AVAsset are mixed#>;
    /// // Assumes that assetReader was initialized with an AVComposition object.
    /// AVComposition *composition = (AVComposition *)assetReader.asset;
    /// // Get the audio tracks to read.
    /// NSArray *audioTracks = [composition tracksWithMediaType:AVMediaTypeAudio];
    /// // Get the decompression settings for Linear PCM.
    /// NSDictionary *decompressionAudioSettings = @{ AVFormatIDKey : [NSNumber numberWithUnsignedInt:kAudioFormatLinearPCM] };
    /// // Create the audio mix output with the audio tracks and decompression setttings.
    /// AVAssetReaderOutput *audioMixOutput = [AVAssetReaderAudioMixOutput assetReaderAudioMixOutputWithAudioTracks:audioTracks audioSettings:decompressionAudioSettings];
    /// // Associate the audio mix used to mix the audio tracks being read with the output.
    /// audioMixOutput.audioMix = audioMix;
    /// // Add the output to the reader if possible.
    /// if ([assetReader canAddOutput:audioMixOutput])
    ///     [assetReader addOutput:audioMixOutput];
    /// ```
    /// The mix silences the clip's tone for its first second: the PCM is silent there and
    /// loud after, and as long as ffprobe says the audio is.
    @Test func audioMixOutput() async throws {
        let source = Asset(url: clip)
        let composition = MutableComposition()
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: try await source.load(.duration)), of: source, at: .zero)
        let assetReader = AssetReader(asset: composition)
        let audioTracks = try await composition.loadTracks(withMediaType: .audio)
        try #require(audioTracks.count == 1)
        var muted = AudioMixInputParameters(track: audioTracks[0])
        muted.setVolume(0, at: .zero)
        muted.setVolume(1, at: MediaTime(value: 1, timescale: 1))
        let audioMix = AudioMix(inputParameters: [muted])
        let decompressionAudioSettings = LinearPCMSettings(bitDepth: 32, isFloat: true, isInterleaved: false)
        let audioMixOutput = try AssetReaderAudioMixOutput(audioTracks: audioTracks, audioSettings: decompressionAudioSettings)
        audioMixOutput.audioMix = audioMix
        if assetReader.canAdd(audioMixOutput) {
            try assetReader.add(audioMixOutput)
        }
        try assetReader.startReading()
        var samples: [Float] = []
        var sampleRate = 0
        while let sample = try audioMixOutput.copyNextSampleBuffer() {
            let buffer = try #require(sample.audioBuffer)
            sampleRate = buffer.sampleRate
            buffer.withUnsafeChannels { samples.append(contentsOf: $0[0].bindMemory(to: Float.self).prefix(buffer.sampleCount)) }
        }
        try #require(sampleRate > 0)
        /// Root mean square of the samples between two times in seconds.
        func rms(_ from: Double, _ to: Double) -> Double {
            let slice = samples[min(samples.count, Int(from * Double(sampleRate)))..<min(samples.count, Int(to * Double(sampleRate)))]
            return slice.isEmpty ? -1 : (slice.reduce(0) { $0 + Double($1 * $1) } / Double(slice.count)).squareRoot()
        }
        #expect(rms(0.1, 0.9) < 0.001, "muted first second")
        #expect(rms(1.1, 2.9) > 0.05, "the tone after it")
        let expected = try await GuideProbe.duration(clip, "a:0")
        #expect(abs(Double(samples.count) / Double(sampleRate) - expected) < 0.03)
    }

    /// "Setting Up the Asset Reader Outputs" (a video composition output):
    /// ```objc
    /// AVVideoComposition *videoComposition = <#An AVVideoComposition that specifies how the video tracks from the AVAsset are composited#>;
    /// // Assumes assetReader was initialized with an AVComposition.
    /// AVComposition *composition = (AVComposition *)assetReader.asset;
    /// // Get the video tracks to read.
    /// NSArray *videoTracks = [composition tracksWithMediaType:AVMediaTypeVideo];
    /// // Decompression settings for ARGB.
    /// NSDictionary *decompressionVideoSettings = @{ (id)kCVPixelBufferPixelFormatTypeKey : [NSNumber numberWithUnsignedInt:kCVPixelFormatType_32ARGB], (id)kCVPixelBufferIOSurfacePropertiesKey : [NSDictionary dictionary] };
    /// // Create the video composition output with the video tracks and decompression setttings.
    /// AVAssetReaderOutput *videoCompositionOutput = [AVAssetReaderVideoCompositionOutput assetReaderVideoCompositionOutputWithVideoTracks:videoTracks videoSettings:decompressionVideoSettings];
    /// // Associate the video composition used to composite the video tracks being read with the output.
    /// videoCompositionOutput.videoComposition = videoComposition;
    /// // Add the output to the reader if possible.
    /// if ([assetReader canAddOutput:videoCompositionOutput])
    ///     [assetReader addOutput:videoCompositionOutput];
    /// ```
    /// (`kCVPixelBufferIOSurfacePropertiesKey` has no counterpart.) One ARGB picture per source
    /// frame comes out, as many as ffprobe counts, at the render size; through the identity
    /// composition each is the source frame, as the track output converts it to BGRA.
    @Test func videoCompositionOutput() async throws {
        let source = Asset(url: clip)
        let composition = MutableComposition()
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: try await source.load(.duration)), of: source, at: .zero)
        let assetReader = AssetReader(asset: composition)
        let videoComposition = try await VideoComposition.videoComposition(withPropertiesOf: composition)
        let videoTracks = try await composition.loadTracks(withMediaType: .video)
        let decompressionVideoSettings = PixelBufferAttributes(pixelFormat: .argb)
        let videoCompositionOutput = try AssetReaderVideoCompositionOutput(videoTracks: videoTracks, videoSettings: decompressionVideoSettings)
        videoCompositionOutput.videoComposition = videoComposition
        if assetReader.canAdd(videoCompositionOutput) {
            try assetReader.add(videoCompositionOutput)
        }
        try assetReader.startReading()
        var pictures: [PixelBuffer] = []
        while let sample = try videoCompositionOutput.copyNextSampleBuffer() {
            let picture = try #require(sample.imageBuffer)
            #expect(picture.width == 320 && picture.height == 240 && picture.pixelFormat == .argb)
            pictures.append(picture)
        }
        #expect(pictures.count == (try await GuideProbe.frameCount(clip, "v:0")))
        #expect(assetReader.status == .completed)

        let (_, direct) = try await Self.decodedVideo(clip, format: .bgra)
        var frame: SampleBuffer?
        for _ in 0...45 { frame = try direct.copyNextSampleBuffer() }
        let expected = try TimeGuideListingTests.image(from: try #require(frame))
        let composited = try TimeGuideListingTests.image(from: SampleBuffer(pixelBuffer: pictures[45], presentationTimeStamp: .zero))
        let difference = zip(expected.pixels, composited.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
        #expect(Double(difference) / Double(expected.pixels.count) < 2, "mean difference \(Double(difference) / Double(expected.pixels.count))")

        #expect(throws: MediaError.self) {
            try AssetReaderVideoCompositionOutput(videoTracks: videoTracks, videoSettings: PixelBufferAttributes(pixelFormat: .vaapiSurface))
        }
    }

    /// "Reading the Asset's Media Data":
    /// ```objc
    /// // Start the asset reader up.
    /// [self.assetReader startReading];
    /// BOOL done = NO;
    /// while (!done)
    /// {
    ///   // Copy the next sample buffer from the reader output.
    ///   CMSampleBufferRef sampleBuffer = [self.assetReaderOutput copyNextSampleBuffer];
    ///   if (sampleBuffer)
    ///   {
    ///     // Do something with sampleBuffer here.
    ///     CFRelease(sampleBuffer);
    ///     sampleBuffer = NULL;
    ///   }
    ///   else
    ///   {
    ///     // Find out why the asset reader output couldn't copy another sample buffer.
    ///     if (self.assetReader.status == AVAssetReaderStatusFailed)
    ///     {
    ///       NSError *failureError = self.assetReader.error;
    ///       // Handle the error here.
    ///     }
    ///     else
    ///     {
    ///       // The asset reader output has read all of its samples.
    ///       done = YES;
    ///     }
    ///   }
    /// }
    /// ```
    /// On the clip the loop reads every frame ffprobe decodes and the reader completes; on a
    /// damaged VP9 file it ends with the reader failed and its error set.
    @Test func readingTheAssetsMediaData() async throws {
        /// The guide's loop: the samples read, and the reader's error if it failed.
        func read(_ assetReader: AssetReader, _ assetReaderOutput: AssetReaderOutput) throws -> (samples: Int, failureError: MediaError?) {
            try assetReader.startReading()
            var done = false
            var samples = 0
            var failureError: MediaError?
            while !done {
                let sampleBuffer = try? assetReaderOutput.copyNextSampleBuffer()
                if sampleBuffer != nil {
                    samples += 1
                } else {
                    if assetReader.status == .failed { failureError = assetReader.error }
                    done = true
                }
            }
            return (samples, failureError)
        }
        let (reader, output) = try await Self.decodedVideo(clip, start: false)
        let (samples, failureError) = try read(reader, output)
        #expect(failureError == nil && reader.status == .completed)
        #expect(samples == (try await GuideProbe.frameCount(clip, "v:0")))

        let (broken, brokenOutput) = try await Self.decodedVideo(TestFiles.fixture("broken_vp9_invalid_bitstream.webm"), start: false)
        let failed = try read(broken, brokenOutput)
        #expect(broken.status == .failed)
        #expect(failed.failureError?.code == .decodeFailed)
    }

    // MARK: Writing an asset

    /// "Creating the Asset Writer":
    /// ```objc
    /// NSError *outError;
    /// NSURL *outputURL = <#NSURL object representing the URL where you want to save the video#>;
    /// AVAssetWriter *assetWriter = [AVAssetWriter assetWriterWithURL:outputURL
    ///                                                       fileType:AVFileTypeQuickTimeMovie
    ///                                                          error:&outError];
    /// BOOL success = (assetWriter != nil);
    /// ```
    /// The writer starts unknown, for a QuickTime movie; where a file already is, creating one
    /// throws (the `outError` case).
    @Test func creatingTheAssetWriter() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let outputURL = dir.appendingPathComponent("movie.mov")
        var outError: MediaError?
        var assetWriter: AssetWriter?
        do { assetWriter = try AssetWriter(url: outputURL, fileType: .mov) } catch { outError = error }
        let success = assetWriter != nil
        #expect(success && outError == nil)
        #expect(assetWriter?.status == .unknown && assetWriter?.outputFileType == .mov && assetWriter?.outputFileType.muxerName == "mov")

        try FileManager.default.copyItem(at: clip, to: outputURL)
        do { assetWriter = try AssetWriter(url: outputURL, fileType: .mov) } catch { outError = error }
        #expect(outError?.code == .outputExists)
    }

    /// "Setting Up the Asset Writer Inputs" (128 kbps AAC):
    /// ```objc
    /// // Configure the channel layout as stereo.
    /// AudioChannelLayout stereoChannelLayout = {
    ///     .mChannelLayoutTag = kAudioChannelLayoutTag_Stereo,
    ///     .mChannelBitmap = 0,
    ///     .mNumberChannelDescriptions = 0
    /// };
    /// // Convert the channel layout object to an NSData object.
    /// NSData *channelLayoutAsData = [NSData dataWithBytes:&stereoChannelLayout length:offsetof(AudioChannelLayout, mChannelDescriptions)];
    /// // Get the compression settings for 128 kbps AAC.
    /// NSDictionary *compressionAudioSettings = @{
    ///     AVFormatIDKey         : [NSNumber numberWithUnsignedInt:kAudioFormatMPEG4AAC],
    ///     AVEncoderBitRateKey   : [NSNumber numberWithInteger:128000],
    ///     AVSampleRateKey       : [NSNumber numberWithInteger:44100],
    ///     AVChannelLayoutKey    : channelLayoutAsData,
    ///     AVNumberOfChannelsKey : [NSNumber numberWithUnsignedInteger:2]
    /// };
    /// // Create the asset writer input with the compression settings and specify the media type as audio.
    /// AVAssetWriterInput *assetWriterInput = [AVAssetWriterInput assetWriterInputWithMediaType:AVMediaTypeAudio outputSettings:compressionAudioSettings];
    /// // Add the input to the writer if possible.
    /// if ([assetWriter canAddInput:assetWriterInput])
    ///     [assetWriter addInput:assetWriterInput];
    /// ```
    /// The clip's 48 kHz mono sound, appended as read, comes out as 44.1 kHz stereo AAC near
    /// 128 kbps, as long as the source.
    @Test func audioWriterInput() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("sound.mov")
        let assetWriter = try AssetWriter(url: url, fileType: .mov)
        let stereoChannelLayout = "stereo"
        let compressionAudioSettings = AudioSettings(codec: .aac, sampleRate: 44100, channelCount: 2,
                                                     channelLayout: stereoChannelLayout, bitRate: 128_000)
        let assetWriterInput = try AssetWriterInput(mediaType: .audio, outputSettings: .audio(compressionAudioSettings))
        if assetWriter.canAdd(assetWriterInput) {
            try assetWriter.add(assetWriterInput)
        }
        #expect(assetWriter.inputs.count == 1)

        let asset = Asset(url: clip)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .audio)[0],
                                                outputSettings: .audio(LinearPCMSettings(bitDepth: 32, isFloat: true, isInterleaved: false)))
        try reader.add(output)
        try reader.startReading()
        try assetWriter.startWriting()
        try assetWriter.startSession(atSourceTime: .zero)
        for try await sample in output.sampleBuffers { try await assetWriterInput.append(sample) }
        assetWriterInput.markAsFinished()
        try await assetWriter.finishWriting()

        let stream = try await GuideProbe.stream(url, "a:0")
        #expect(stream["codec_name"] as? String == "aac")
        #expect(stream["sample_rate"] as? String == "44100" && stream["channels"] as? Int == 2)
        #expect(stream["channel_layout"] as? String == "stereo")
        let bitRate = Double(stream["bit_rate"] as? String ?? "") ?? 0
        #expect(abs(bitRate - 128_000) < 16_000, "bit rate \(bitRate)")
        let seconds = Double(stream["duration"] as? String ?? "") ?? 0
        #expect(abs(seconds - 3.0) < 0.05, "\(seconds) s")
    }

    /// "Setting Up the Asset Writer Inputs" (keeping the track's transform):
    /// ```objc
    /// AVAsset *videoAsset = <#AVAsset with at least one video track#>;
    /// AVAssetTrack *videoAssetTrack = [[videoAsset tracksWithMediaType:AVMediaTypeVideo] objectAtIndex:0];
    /// assetWriterInput.transform = videoAssetTrack.preferredTransform;
    /// ```
    /// The iPhone movie's packets, written as stored (nil settings, QuickTime), keep its
    /// quarter turn: ffprobe reads the same display rotation from both files.
    @Test func writerInputTransform() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("turned.mov")
        let videoAsset = Asset(url: movie)
        let videoAssetTrack = try await videoAsset.loadTracks(withMediaType: .video)[0]
        let assetWriterInput = try AssetWriterInput(mediaType: .video, outputSettings: nil, sourceFormatHint: videoAssetTrack.formatDescription)
        assetWriterInput.transform = videoAssetTrack.preferredTransform
        #expect(assetWriterInput.transform == videoAssetTrack.preferredTransform && videoAssetTrack.preferredTransform != .identity)

        let assetWriter = try AssetWriter(url: url, fileType: .mov)
        try assetWriter.add(assetWriterInput)
        let reader = AssetReader(asset: videoAsset)
        let output = try AssetReaderTrackOutput(track: videoAssetTrack, outputSettings: nil)
        try reader.add(output)
        try reader.startReading()
        try assetWriter.startWriting()
        try assetWriter.startSession(atSourceTime: videoAssetTrack.timeRange.start)
        for try await sample in output.sampleBuffers { try await assetWriterInput.append(sample) }
        assetWriterInput.markAsFinished()
        try await assetWriter.finishWriting()

        let written = try await GuideProbe.stream(url, "v:0")
        let source = try await GuideProbe.stream(movie, "v:0")
        let rotation = try #require(WriterTestSupport.displayRotation(source))
        #expect(rotation == -90 || rotation == 90)
        #expect(WriterTestSupport.displayRotation(written) == rotation)
        #expect(written["nb_read_frames"] as? String == source["nb_read_frames"] as? String)
    }

    /// "Setting Up the Asset Writer Inputs" (a pixel buffer adaptor):
    /// ```objc
    /// NSDictionary *pixelBufferAttributes = @{
    ///     kCVPixelBufferCGImageCompatibilityKey : [NSNumber numberWithBool:YES],
    ///     kCVPixelBufferCGBitmapContextCompatibilityKey : [NSNumber numberWithBool:YES],
    ///     kCVPixelBufferPixelFormatTypeKey : [NSNumber numberWithInt:kCVPixelFormatType_32ARGB]
    /// };
    /// AVAssetWriterInputPixelBufferAdaptor *inputPixelBufferAdaptor = [AVAssetWriterInputPixelBufferAdaptor assetWriterInputPixelBufferAdaptorWithAssetWriterInput:self.assetWriterInput sourcePixelBufferAttributes:pixelBufferAttributes];
    /// ```
    /// (The CG compatibility keys have no counterpart.) Every clip frame, read as ARGB, is
    /// copied into a picture from the adaptor's pool and appended: ffprobe counts all 90,
    /// H.264 at the input's size.
    @Test func pixelBufferAdaptor() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("drawn.mp4")
        let assetWriter = try AssetWriter(url: url, fileType: .mp4)
        let assetWriterInput = try AssetWriterInput(videoSettings: VideoSettings(codec: .h264, width: 320, height: 240))
        try assetWriter.add(assetWriterInput)
        let pixelBufferAttributes = PixelBufferAttributes(pixelFormat: .argb)
        let inputPixelBufferAdaptor = try AssetWriterInputPixelBufferAdaptor(assetWriterInput: assetWriterInput,
                                                                            sourcePixelBufferAttributes: pixelBufferAttributes)
        #expect(inputPixelBufferAdaptor.pixelBufferPool == nil, "no pool before writing starts")
        try assetWriter.startWriting()
        try assetWriter.startSession(atSourceTime: .zero)
        let pool = try #require(inputPixelBufferAdaptor.pixelBufferPool)
        #expect(pool.pixelFormat == .argb && pool.width == 320 && pool.height == 240)

        let (_, output) = try await Self.decodedVideo(clip, format: .argb)
        for try await sample in output.sampleBuffers {
            let source = try #require(sample.imageBuffer)
            let picture = try await pool.waitForPixelBuffer()
            try source.withUnsafePlanes { from in
                try picture.withUnsafeMutablePlanes { to in
                    for y in 0..<240 {
                        to[0].baseAddress.advanced(by: y * to[0].bytesPerRow)
                            .copyMemory(from: from[0].baseAddress.advanced(by: y * from[0].bytesPerRow), byteCount: 320 * 4)
                    }
                }
            }
            try await inputPixelBufferAdaptor.append(picture, withPresentationTime: sample.presentationTimeStamp)
        }
        assetWriterInput.markAsFinished()
        try await assetWriter.finishWriting()
        let stream = try await GuideProbe.stream(url, "v:0")
        #expect(stream["codec_name"] as? String == "h264" && stream["width"] as? Int == 320 && stream["height"] as? Int == 240)
        #expect(stream["nb_read_frames"] as? String == "90")
    }

    /// "Writing Media Data" (a session starting half way):
    /// ```objc
    /// CMTime halfAssetDuration = CMTimeMultiplyByFloat64(self.asset.duration, 0.5);
    /// [self.assetWriter startSessionAtSourceTime:halfAssetDuration];
    /// //Implementation continues.
    /// ```
    /// Every frame of the clip is appended; the file holds only the second half (ffprobe: 1.5 s).
    @Test func sessionStartingHalfWay() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("half.mp4")
        let asset = Asset(url: clip)
        let assetWriter = try AssetWriter(url: url, fileType: .mp4)
        let assetWriterInput = try AssetWriterInput(videoSettings: VideoSettings(codec: .h264, width: 320, height: 240))
        try assetWriter.add(assetWriterInput)
        try assetWriter.startWriting()
        let halfAssetDuration = try await asset.load(.duration).multiplied(by: 0.5)
        #expect(halfAssetDuration.seconds == 1.5)
        try assetWriter.startSession(atSourceTime: halfAssetDuration)
        for try await sample in try await Self.decodedVideo(clip).output.sampleBuffers { try await assetWriterInput.append(sample) }
        assetWriterInput.markAsFinished()
        try await assetWriter.finishWriting()
        #expect(abs(try await GuideProbe.duration(url, "v:0") - 1.5) < 0.05)
        #expect(abs(try await GuideProbe.frameCount(url, "v:0") - 45) <= 1)
    }

    /// "Writing Media Data" (the pull loop):
    /// ```objc
    /// // Prepare the asset writer for writing.
    /// [self.assetWriter startWriting];
    /// // Start a sample-writing session.
    /// [self.assetWriter startSessionAtSourceTime:kCMTimeZero];
    /// // Specify the block to execute when the asset writer is ready for media data and the queue to call it on.
    /// [self.assetWriterInput requestMediaDataWhenReadyOnQueue:myInputSerialQueue usingBlock:^{
    ///      while ([self.assetWriterInput isReadyForMoreMediaData])
    ///      {
    ///           // Get the next sample buffer.
    ///           CMSampleBufferRef nextSampleBuffer = [self copyNextSampleBufferToWrite];
    ///           if (nextSampleBuffer)
    ///           {
    ///                // If it exists, append the next sample buffer to the output file.
    ///                [self.assetWriterInput appendSampleBuffer:nextSampleBuffer];
    ///                CFRelease(nextSampleBuffer);
    ///                nextSampleBuffer = nil;
    ///           }
    ///           else
    ///           {
    ///                // Assume that lack of a next sample buffer means the sample buffer source is out of samples and mark the input as finished.
    ///                [self.assetWriterInput markAsFinished];
    ///                break;
    ///           }
    ///      }
    /// }];
    /// ```
    /// `copyNextSampleBufferToWrite` is the stub the guide leaves: here, the clip's decoded
    /// frames. All 90 reach the file.
    @Test func writingMediaDataWhenReady() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("pulled.mp4")
        let assetWriter = try AssetWriter(url: url, fileType: .mp4)
        let assetWriterInput = try AssetWriterInput(videoSettings: VideoSettings(codec: .h264, width: 320, height: 240))
        try assetWriter.add(assetWriterInput)
        let (_, source) = try await Self.decodedVideo(clip)
        /// The guide's stub: the next sample to write, nil when there are no more.
        @Sendable func copyNextSampleBufferToWrite() -> SampleBuffer? { try? source.copyNextSampleBuffer() }
        let appended = GuideCounter()

        try assetWriter.startWriting()
        try assetWriter.startSession(atSourceTime: .zero)
        let myInputSerialQueue = DispatchQueue(label: "guide input serial queue")
        await withLockedContinuation { (finished: LockedContinuation<Void, Never>) in
            assetWriterInput.requestMediaDataWhenReady(on: myInputSerialQueue) {
                while assetWriterInput.isReadyForMoreMediaData {
                    if let nextSampleBuffer = copyNextSampleBufferToWrite() {
                        if (try? assetWriterInput.appendImmediately(nextSampleBuffer)) == true { appended.increment() }
                    } else {
                        assetWriterInput.markAsFinished()
                        finished.resume()
                        break
                    }
                }
            }
        }
        try await assetWriter.finishWriting()
        #expect(appended.value == 90)
        #expect(try await GuideProbe.frameCount(url, "v:0") == 90)
    }

    // MARK: Reencoding assets

    /// "Reencoding Assets" (one reader output feeding one writer input):
    /// ```objc
    /// NSString *serializationQueueDescription = [NSString stringWithFormat:@"%@ serialization queue", self];
    /// // Create a serialization queue for reading and writing.
    /// dispatch_queue_t serializationQueue = dispatch_queue_create([serializationQueueDescription UTF8String], NULL);
    /// // Specify the block to execute when the asset writer is ready for media data and the queue to call it on.
    /// [self.assetWriterInput requestMediaDataWhenReadyOnQueue:serializationQueue usingBlock:^{
    ///      while ([self.assetWriterInput isReadyForMoreMediaData])
    ///      {
    ///           // Get the asset reader output's next sample buffer.
    ///           CMSampleBufferRef sampleBuffer = [self.assetReaderOutput copyNextSampleBuffer];
    ///           if (sampleBuffer != NULL)
    ///           {
    ///                // If it exists, append this sample buffer to the output file.
    ///                BOOL success = [self.assetWriterInput appendSampleBuffer:sampleBuffer];
    ///                CFRelease(sampleBuffer);
    ///                sampleBuffer = NULL;
    ///                // Check for errors that may have occurred when appending the new sample buffer.
    ///                if (!success && self.assetWriter.status == AVAssetWriterStatusFailed)
    ///                {
    ///                     NSError *failureError = self.assetWriter.error;
    ///                     //Handle the error.
    ///                }
    ///           }
    ///           else
    ///           {
    ///                // If the next sample buffer doesn't exist, find out why the asset reader output couldn't vend another one.
    ///                if (self.assetReader.status == AVAssetReaderStatusFailed)
    ///                {
    ///                     NSError *failureError = self.assetReader.error;
    ///                     //Handle the error here.
    ///                }
    ///                else
    ///                {
    ///                     // The asset reader output must have vended all of its samples. Mark the input as finished.
    ///                     [self.assetWriterInput markAsFinished];
    ///                     break;
    ///                }
    ///           }
    ///      }
    /// }];
    /// ```
    /// The movie's video, decoded and re-encoded to H.264 at its size: ffprobe counts every
    /// source frame in the output and no error is seen.
    @Test func reencodingAssetsInTandem() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("tandem.mp4")
        let (assetReader, assetReaderOutput) = try await Self.decodedVideo(movie)
        let assetWriter = try AssetWriter(url: url, fileType: .mp4)
        let assetWriterInput = try AssetWriterInput(videoSettings: VideoSettings(codec: .h264, width: 568, height: 320))
        try assetWriter.add(assetWriterInput)
        try assetWriter.startWriting()
        let start = try await Asset(url: movie).loadTracks(withMediaType: .video)[0].timeRange.start
        try assetWriter.startSession(atSourceTime: start)
        let failures = GuideCounter()

        let serializationQueueDescription = "\(Self.self) serialization queue"
        let serializationQueue = DispatchQueue(label: serializationQueueDescription)
        await withLockedContinuation { (finished: LockedContinuation<Void, Never>) in
            assetWriterInput.requestMediaDataWhenReady(on: serializationQueue) {
                while assetWriterInput.isReadyForMoreMediaData {
                    if let sampleBuffer = try? assetReaderOutput.copyNextSampleBuffer() {
                        let success = (try? assetWriterInput.appendImmediately(sampleBuffer)) ?? false
                        if !success && assetWriter.status == .failed {
                            failures.increment()
                            finished.resume()
                            return
                        }
                    } else if assetReader.status == .failed {
                        failures.increment()
                        finished.resume()
                        return
                    } else {
                        assetWriterInput.markAsFinished()
                        finished.resume()
                        break
                    }
                }
            }
        }
        #expect(failures.value == 0)
        try await assetWriter.finishWriting()
        let written = try await GuideProbe.stream(url, "v:0")
        #expect(written["codec_name"] as? String == "h264" && written["width"] as? Int == 568)
        #expect(written["nb_read_frames"] as? String == (try await GuideProbe.stream(movie, "v:0"))["nb_read_frames"] as? String)
    }

    /// "Putting It All Together … Handling the Initial Setup" (three serialization queues):
    /// ```objc
    /// NSString *serializationQueueDescription = [NSString stringWithFormat:@"%@ serialization queue", self];
    /// // Create the main serialization queue.
    /// self.mainSerializationQueue = dispatch_queue_create([serializationQueueDescription UTF8String], NULL);
    /// NSString *rwAudioSerializationQueueDescription = [NSString stringWithFormat:@"%@ rw audio serialization queue", self];
    /// // Create the serialization queue to use for reading and writing the audio data.
    /// self.rwAudioSerializationQueue = dispatch_queue_create([rwAudioSerializationQueueDescription UTF8String], NULL);
    /// NSString *rwVideoSerializationQueueDescription = [NSString stringWithFormat:@"%@ rw video serialization queue", self];
    /// // Create the serialization queue to use for reading and writing the video data.
    /// self.rwVideoSerializationQueue = dispatch_queue_create([rwVideoSerializationQueueDescription UTF8String], NULL);
    /// ```
    /// The queues are serial (NULL attributes): two blocks sent to one never overlap.
    @Test func reencodeInitialSetup() async throws {
        let reencoder = GuideReencoder(asset: Asset(url: clip), outputURL: URL(fileURLWithPath: "/tmp/unused.mov"))
        let labels = [reencoder.mainSerializationQueue, reencoder.rwAudioSerializationQueue, reencoder.rwVideoSerializationQueue].map(\.label)
        #expect(labels[0].hasSuffix(" serialization queue") && labels[1].hasSuffix(" rw audio serialization queue")
                && labels[2].hasSuffix(" rw video serialization queue"))
        #expect(Set(labels).count == 3)
        let overlaps = GuideCounter(), running = GuideCounter()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await withLockedContinuation { (done: LockedContinuation<Void, Never>) in
                        reencoder.rwVideoSerializationQueue.async {
                            if running.increment() > 1 { overlaps.increment() }
                            usleep(2000)
                            running.decrement()
                            done.resume()
                        }
                    }
                }
            }
        }
        #expect(overlaps.value == 0)
    }

    /// "Putting It All Together … Handling the Initial Setup" (load the tracks, then begin):
    /// ```objc
    /// self.asset = <#AVAsset that you want to reencode#>;
    /// self.cancelled = NO;
    /// self.outputURL = <#NSURL representing desired output URL for file generated by asset writer#>;
    /// // Asynchronously load the tracks of the asset you want to read.
    /// [self.asset loadValuesAsynchronouslyForKeys:@[@"tracks"] completionHandler:^{
    ///      // Once the tracks have finished loading, dispatch the work to the main serialization queue.
    ///      dispatch_async(self.mainSerializationQueue, ^{
    ///           // Due to asynchronous nature, check to see if user has already cancelled.
    ///           if (self.cancelled)
    ///                return;
    ///           BOOL success = YES;
    ///           NSError *localError = nil;
    ///           // Check for success of loading the assets tracks.
    ///           success = ([self.asset statusOfValueForKey:@"tracks" error:&localError] == AVKeyValueStatusLoaded);
    ///           if (success)
    ///           {
    ///                // If the tracks loaded successfully, make sure that no file exists at the output path for the asset writer.
    ///                NSFileManager *fm = [NSFileManager defaultManager];
    ///                NSString *localOutputPath = [self.outputURL path];
    ///                if ([fm fileExistsAtPath:localOutputPath])
    ///                     success = [fm removeItemAtPath:localOutputPath error:&localError];
    ///           }
    ///           if (success)
    ///                success = [self setupAssetReaderAndAssetWriter:&localError];
    ///           if (success)
    ///                success = [self startAssetReaderAndWriter:&localError];
    ///           if (!success)
    ///                [self readingAndWritingDidFinishSuccessfully:success withError:localError];
    ///      });
    /// }];
    /// ```
    /// A file already at the output is removed and replaced by the re-encoded movie; an asset
    /// whose tracks fail to load ends in the completion with the loading error.
    @Test func reencodeLoadTracksAndBegin() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let outputURL = dir.appendingPathComponent("reencoded.mov")
        try Data("not a movie".utf8).write(to: outputURL)
        let (success, error) = await GuideReencoder(asset: Asset(url: clip), outputURL: outputURL).run()
        #expect(success && error == nil)
        let streams = try await GuideProbe.streams(outputURL)
        #expect(streams.compactMap { $0["codec_name"] as? String } == ["aac", "h264"] || streams.compactMap { $0["codec_name"] as? String } == ["h264", "aac"])

        let missing = GuideReencoder(asset: Asset(url: URL(fileURLWithPath: "/nonexistent/clip.mov")), outputURL: dir.appendingPathComponent("none.mov"))
        let failed = await missing.run()
        #expect(!failed.success && failed.error?.code == .fileNotFound)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("none.mov").path))
    }

    /// "Putting It All Together … Initializing the Asset Reader and Writer"
    /// (`setupAssetReaderAndAssetWriter:`, quoted in full on `GuideReencoder.setupAssetReaderAndAssetWriter()`):
    /// the reader gets a Linear PCM audio output and a 4:2:2 YUV video output, the writer a
    /// 128 kbps stereo AAC input and an H.264 input of the track's encoded dimensions (ffprobe's),
    /// with the track's format description as its source format hint.
    @Test func reencodeSetupAssetReaderAndAssetWriter() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let reencoder = GuideReencoder(asset: Asset(url: movie), outputURL: dir.appendingPathComponent("setup.mov"))
        let tracks = try await reencoder.asset.load(.tracks)
        try reencoder.mainSerializationQueue.sync { try reencoder.setupAssetReaderAndAssetWriter(tracks: tracks) }
        let reader = try #require(reencoder.assetReader), writer = try #require(reencoder.assetWriter)
        #expect(reader.outputs.map(\.mediaType) == [.audio, .video])
        #expect(writer.inputs.map(\.mediaType) == [.audio, .video])
        let probed = try await GuideProbe.stream(movie, "v:0")
        guard case .video(let video)? = reencoder.assetWriterVideoInput?.outputSettings else {
            Issue.record("the video input has no video settings")
            return
        }
        #expect(video.codec == .h264 && video.width == probed["width"] as? Int && video.height == probed["height"] as? Int)
        let videoTrack = try #require(tracks.first { $0.mediaType == .video })
        #expect(reencoder.assetWriterVideoInput?.sourceFormatHint == videoTrack.formatDescription)
        guard case .audio(let audio)? = reencoder.assetWriterAudioInput?.outputSettings else {
            Issue.record("the audio input has no audio settings")
            return
        }
        #expect(audio == AudioSettings(codec: .aac, sampleRate: 44100, channelCount: 2, channelLayout: "stereo", bitRate: 128_000))
        guard case .video(let attributes)? = (reader.outputs[1] as? AssetReaderTrackOutput)?.outputSettings else {
            Issue.record("the video output has no picture settings")
            return
        }
        #expect(attributes.pixelFormat == .yuv422p)
    }

    /// The setup's clean aperture and pixel aspect ratio, carried from a source that has both
    /// into the re-encoded QuickTime file, as ExifTool and ffprobe read them there.
    @Test func reencodeCarriesTheCleanApertureAndPixelAspect() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let aperture = CleanAperture(width: 304, height: 224, horizontalOffset: -2, verticalOffset: 2)
        let source = try await CleanApertureTests.write(aperture, to: .mov, optimizedForNetwork: false, anamorphic: true, in: dir)
        let outputURL = dir.appendingPathComponent("reencoded.mov")
        let (success, error) = await GuideReencoder(asset: Asset(url: source), outputURL: outputURL).run()
        #expect(success && error == nil)
        #expect(try CleanApertureTests.exifToolAperture(outputURL) == [304, 224, -2, 2])
        let video = try await GuideProbe.stream(outputURL, "v:0")
        #expect(video["sample_aspect_ratio"] as? String == "4:3", "\(video)")
        #expect(try CleanApertureTests.cleanlyDecodedPictures(outputURL) == 25)
    }

    /// "Putting It All Together … Reencoding the Asset" (`startAssetReaderAndWriter:`, quoted in
    /// full on `GuideReencoder.startAssetReaderAndWriter()`): the two pull loops run on their
    /// own queues until both inputs are finished, then the group's notification finishes the
    /// file. ffprobe: every video frame of the source, the audio as long as the source's.
    @Test func reencodeStartAssetReaderAndWriter() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let outputURL = dir.appendingPathComponent("reencoded.mov")
        let reencoder = GuideReencoder(asset: Asset(url: movie), outputURL: outputURL)
        let (success, error) = await reencoder.run()
        #expect(success && error == nil)
        #expect(reencoder.assetWriter?.status == .completed)
        let sourceFrames = try await GuideProbe.frameCount(movie, "v:0")
        #expect(reencoder.videoSamplesAppended == sourceFrames)
        let video = try await GuideProbe.stream(outputURL, "v:0")
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["nb_read_frames"] as? String == String(sourceFrames))
        let audio = try await GuideProbe.stream(outputURL, "a:0")
        #expect(audio["codec_name"] as? String == "aac" && audio["sample_rate"] as? String == "44100")
        #expect(abs((Double(audio["duration"] as? String ?? "") ?? 0) - (try await GuideProbe.duration(movie, "a:0"))) < 0.1)
    }

    /// "Putting It All Together … Handling Completion" (`readingAndWritingDidFinishSuccessfully:withError:`,
    /// quoted in full on `GuideReencoder.readingAndWritingDidFinish(successfully:error:)`): a source
    /// that fails to decode ends there with the reader's error, the reader and writer cancelled
    /// and no output file.
    @Test func reencodeHandlingCompletion() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let outputURL = dir.appendingPathComponent("broken.mov")
        let reencoder = GuideReencoder(asset: Asset(url: TestFiles.fixture("broken_vp9_invalid_bitstream.webm")), outputURL: outputURL)
        let (success, error) = await reencoder.run()
        #expect(!success && error?.code == .decodeFailed)
        #expect(reencoder.assetWriter?.status == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: outputURL.path))
    }

    /// "Putting It All Together … Handling Cancellation" (`cancel`, quoted in full on
    /// `GuideReencoder.cancel()`): cancelled once video frames flow, both inputs are marked
    /// finished, the reader and writer are cancelled before every frame is written, and no
    /// file is left.
    @Test func reencodeHandlingCancellation() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let outputURL = dir.appendingPathComponent("cancelled.mov")
        let reencoder = GuideReencoder(asset: Asset(url: movie), outputURL: outputURL)
        reencoder.onVideoSampleAppended = { [weak reencoder] count in if count == 5 { reencoder?.cancel() } }
        let (success, _) = await reencoder.run()
        #expect(success, "the guide's completion reports a cancelled run as a success")
        #expect(reencoder.videoSamplesAppended < (try await GuideProbe.frameCount(movie, "v:0")))
        #expect(reencoder.assetWriter?.status == .cancelled && reencoder.assetReader?.status == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: outputURL.path))
    }

    // MARK: Output settings assistant

    /// "Asset Output Settings Assistant" (Listing 5-1):
    /// ```objc
    /// AVOutputSettingsAssistant *outputSettingsAssistant = [AVOutputSettingsAssistant outputSettingsAssistantWithPreset:<some preset>];
    /// CMFormatDescriptionRef audioFormat = [self getAudioFormat];
    /// if (audioFormat != NULL)
    ///     [outputSettingsAssistant setSourceAudioFormat:(CMAudioFormatDescriptionRef)audioFormat];
    /// CMFormatDescriptionRef videoFormat = [self getVideoFormat];
    /// if (videoFormat != NULL)
    ///     [outputSettingsAssistant setSourceVideoFormat:(CMVideoFormatDescriptionRef)videoFormat];
    /// CMTime assetMinVideoFrameDuration = [self getMinFrameDuration];
    /// CMTime averageFrameDuration = [self getAvgFrameDuration]
    /// [outputSettingsAssistant setSourceVideoAverageFrameDuration:averageFrameDuration];
    /// [outputSettingsAssistant setSourceVideoMinFrameDuration:assetMinVideoFrameDuration];
    /// AVAssetWriter *assetWriter = [AVAssetWriter assetWriterWithURL:<some URL> fileType:[outputSettingsAssistant outputFileType] error:NULL];
    /// AVAssetWriterInput *audioInput = [AVAssetWriterInput assetWriterInputWithMediaType:AVMediaTypeAudio outputSettings:[outputSettingsAssistant audioSettings] sourceFormatHint:audioFormat];
    /// AVAssetWriterInput *videoInput = [AVAssetWriterInput assetWriterInputWithMediaType:AVMediaTypeVideo outputSettings:[outputSettingsAssistant videoSettings] sourceFormatHint:videoFormat];
    /// ```
    /// The clip written with the 640x480 preset's settings: a QuickTime file of H.264 no
    /// larger than the source (320x240) and AAC, all 90 frames.
    @Test func outputSettingsAssistant() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let asset = Asset(url: clip)
        let videoTrack = try await asset.loadTracks(withMediaType: .video)[0]
        let audioTrack = try await asset.loadTracks(withMediaType: .audio)[0]
        var outputSettingsAssistant = try #require(OutputSettingsAssistant(preset: .preset640x480))
        let audioFormat: FormatDescription? = audioTrack.formatDescription
        if let audioFormat { outputSettingsAssistant.sourceAudioFormat = audioFormat }
        let videoFormat: FormatDescription? = videoTrack.formatDescription
        if let videoFormat { outputSettingsAssistant.sourceVideoFormat = videoFormat }
        let assetMinVideoFrameDuration = videoTrack.minFrameDuration
        let averageFrameDuration = MediaTime(seconds: 1 / Double(videoTrack.nominalFrameRate), preferredTimescale: 600)
        outputSettingsAssistant.sourceVideoAverageFrameDuration = averageFrameDuration
        outputSettingsAssistant.sourceVideoMinFrameDuration = assetMinVideoFrameDuration
        let url = dir.appendingPathComponent("assisted.\(outputSettingsAssistant.outputFileType.fileExtension)")
        let assetWriter = try AssetWriter(url: url, fileType: outputSettingsAssistant.outputFileType)
        let audioInput = try AssetWriterInput(mediaType: .audio, outputSettings: outputSettingsAssistant.audioSettings.map { .audio($0) },
                                              sourceFormatHint: audioFormat)
        let videoInput = try AssetWriterInput(mediaType: .video, outputSettings: outputSettingsAssistant.videoSettings.map { .video($0) },
                                              sourceFormatHint: videoFormat)
        #expect(outputSettingsAssistant.outputFileType == .mov)
        #expect(outputSettingsAssistant.videoSettings?.width == 320 && outputSettingsAssistant.videoSettings?.height == 240)

        try assetWriter.add(audioInput)
        try assetWriter.add(videoInput)
        let reader = AssetReader(asset: asset)
        let videoOutput = try AssetReaderTrackOutput(track: videoTrack, outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
        let audioOutput = try AssetReaderTrackOutput(track: audioTrack, outputSettings: .audio(LinearPCMSettings(bitDepth: 32, isFloat: true, isInterleaved: false)))
        try reader.add(videoOutput)
        try reader.add(audioOutput)
        try reader.startReading()
        try assetWriter.startWriting()
        try assetWriter.startSession(atSourceTime: .zero)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (output, input) in [(videoOutput, videoInput), (audioOutput, audioInput)] {
                group.addTask {
                    for try await sample in output.sampleBuffers { try await input.append(sample) }
                    input.markAsFinished()
                }
            }
            try await group.waitForAll()
        }
        try await assetWriter.finishWriting()

        let format = try await GuideProbe.json(url, ["-show_format"])["format"] as? [String: Any]
        let formatName = format?["format_name"] as? String ?? ""
        #expect(formatName.hasPrefix("mov"), "\(formatName)")
        let video = try await GuideProbe.stream(url, "v:0")
        #expect(video["codec_name"] as? String == "h264" && video["width"] as? Int == 320 && video["height"] as? Int == 240)
        #expect(video["nb_read_frames"] as? String == "90")
        #expect(try await GuideProbe.stream(url, "a:0")["codec_name"] as? String == "aac")
    }

    // MARK: Helpers

    /// A reader with one output decoding the first video track of `url` to `format`; started
    /// unless `start` is false.
    static func decodedVideo(_ url: URL, format: PixelFormat = .yuv420p, start: Bool = true) async throws -> (reader: AssetReader, output: AssetReaderTrackOutput) {
        let asset = Asset(url: url)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                                outputSettings: .video(PixelBufferAttributes(pixelFormat: format)))
        try reader.add(output)
        if start { try reader.startReading() }
        return (reader, output)
    }
}

/// A count shared between a test and the blocks it sends to dispatch queues.
final class GuideCounter: Sendable {
    private let count = Locked(0)
    /// Adds one; returns the new count.
    @discardableResult func increment() -> Int { count.withLock { $0 += 1; return $0 } }
    /// Takes one away.
    func decrement() { count.withLock { $0 -= 1 } }
    var value: Int { count.withLock { $0 } }
}

/// The guide's "Putting It All Together: Using an Asset Reader and Writer in Tandem to
/// Reencode an Asset", ported method for method: three serial queues, a reader with a Linear
/// PCM and a YUV output, a writer with an AAC and an H.264 input, a dispatch group joining the
/// two pull loops, completion and cancellation. (`Sources/ReencodeExample` is the same example
/// written the Swift-concurrency way.)
// @unchecked: as in the guide, each property is confined to a queue. The reader, writer, outputs,
// inputs, `dispatchGroup` and `cancelled` belong to the main serialization queue (the first four
// are set before the pull loops start and only read after); `audioFinished` and `videoFinished`
// to their rw queues; `videoSamplesAppended` to the video queue. Tests read them after `run()`.
final class GuideReencoder: @unchecked Sendable {
    let asset: Asset
    let outputURL: URL
    let mainSerializationQueue: DispatchQueue
    let rwAudioSerializationQueue: DispatchQueue
    let rwVideoSerializationQueue: DispatchQueue
    private(set) var cancelled = false
    private(set) var audioFinished = false
    private(set) var videoFinished = false
    private(set) var assetReader: AssetReader?
    private(set) var assetWriter: AssetWriter?
    private(set) var assetReaderAudioOutput: AssetReaderTrackOutput?
    private(set) var assetReaderVideoOutput: AssetReaderTrackOutput?
    private(set) var assetWriterAudioInput: AssetWriterInput?
    private(set) var assetWriterVideoInput: AssetWriterInput?
    /// Video samples appended by the current run.
    private(set) var videoSamplesAppended = 0
    /// Told on the video queue after each appended video sample, with the count so far (a test seam).
    var onVideoSampleAppended: (@Sendable (Int) -> Void)?
    private var dispatchGroup: DispatchGroup?
    /// Where `readingAndWritingDidFinish` reports (the guide's main-queue UI work).
    private var completion: (@Sendable (Bool, MediaError?) -> Void)?

    /// "Handling the Initial Setup": the three serialization queues (serial, as `NULL` attributes make them).
    init(asset: Asset, outputURL: URL) {
        self.asset = asset
        self.outputURL = outputURL
        let name = "GuideReencoder \(UUID().uuidString.prefix(8))"
        let serializationQueueDescription = "\(name) serialization queue"
        mainSerializationQueue = DispatchQueue(label: serializationQueueDescription)
        let rwAudioSerializationQueueDescription = "\(name) rw audio serialization queue"
        rwAudioSerializationQueue = DispatchQueue(label: rwAudioSerializationQueueDescription)
        let rwVideoSerializationQueueDescription = "\(name) rw video serialization queue"
        rwVideoSerializationQueue = DispatchQueue(label: rwVideoSerializationQueueDescription)
    }

    /// `start(completion:)` as an async call: its completion's success and error.
    func run() async -> (success: Bool, error: MediaError?) {
        await withLockedContinuation { (done: LockedContinuation<(success: Bool, error: MediaError?), Never>) in
            start { success, error in done.resume(returning: (success, error)) }
        }
    }

    /// "Handling the Initial Setup": loads the tracks, then on the main queue removes an old
    /// output, sets up and starts the reader and writer; `completion` gets the outcome.
    func start(completion: @escaping @Sendable (Bool, MediaError?) -> Void) {
        Task {
            var tracks: [AssetTrack] = []
            var loadError: MediaError?
            do { tracks = try await asset.load(.tracks) } catch { loadError = Self.mediaError(error) }
            mainSerializationQueue.async { [self, tracks, loadError] in
                self.completion = completion
                // Due to asynchronous nature, check to see if user has already cancelled.
                if cancelled { return }
                var localError = loadError
                var success = localError == nil
                if success {
                    let fm = FileManager.default
                    let localOutputPath = outputURL.path
                    if fm.fileExists(atPath: localOutputPath) {
                        do { try fm.removeItem(atPath: localOutputPath) } catch {
                            success = false
                            localError = MediaError(.ioError, "the old output could not be removed", path: localOutputPath, underlying: error)
                        }
                    }
                }
                if success {
                    do { try setupAssetReaderAndAssetWriter(tracks: tracks) } catch {
                        success = false
                        localError = Self.mediaError(error)
                    }
                }
                if success {
                    do { try startAssetReaderAndWriter() } catch {
                        success = false
                        localError = Self.mediaError(error)
                    }
                }
                if !success { readingAndWritingDidFinish(successfully: success, error: localError) }
            }
        }
    }

    /// "Initializing the Asset Reader and Writer":
    /// ```objc
    /// - (BOOL)setupAssetReaderAndAssetWriter:(NSError **)outError
    /// {
    ///      self.assetReader = [[AVAssetReader alloc] initWithAsset:self.asset error:outError];
    ///      BOOL success = (self.assetReader != nil);
    ///      if (success)
    ///      {
    ///           self.assetWriter = [[AVAssetWriter alloc] initWithURL:self.outputURL
    ///                                                        fileType:AVFileTypeQuickTimeMovie
    ///                                                           error:outError];
    ///           success = (self.assetWriter != nil);
    ///      }
    ///      if (success)
    ///      {
    ///           AVAssetTrack *assetAudioTrack = nil, *assetVideoTrack = nil;
    ///           NSArray *audioTracks = [self.asset tracksWithMediaType:AVMediaTypeAudio];
    ///           if ([audioTracks count] > 0)
    ///                assetAudioTrack = [audioTracks objectAtIndex:0];
    ///           NSArray *videoTracks = [self.asset tracksWithMediaType:AVMediaTypeVideo];
    ///           if ([videoTracks count] > 0)
    ///                assetVideoTrack = [videoTracks objectAtIndex:0];
    ///           if (assetAudioTrack)
    ///           {
    ///                NSDictionary *decompressionAudioSettings = @{ AVFormatIDKey : [NSNumber numberWithUnsignedInt:kAudioFormatLinearPCM] };
    ///                self.assetReaderAudioOutput = [AVAssetReaderTrackOutput assetReaderTrackOutputWithTrack:assetAudioTrack
    ///                                                                                         outputSettings:decompressionAudioSettings];
    ///                [self.assetReader addOutput:self.assetReaderAudioOutput];
    ///                AudioChannelLayout stereoChannelLayout = { .mChannelLayoutTag = kAudioChannelLayoutTag_Stereo, … };
    ///                NSData *channelLayoutAsData = [NSData dataWithBytes:&stereoChannelLayout length:offsetof(AudioChannelLayout, mChannelDescriptions)];
    ///                NSDictionary *compressionAudioSettings = @{
    ///                     AVFormatIDKey         : [NSNumber numberWithUnsignedInt:kAudioFormatMPEG4AAC],
    ///                     AVEncoderBitRateKey   : [NSNumber numberWithInteger:128000],
    ///                     AVSampleRateKey       : [NSNumber numberWithInteger:44100],
    ///                     AVChannelLayoutKey    : channelLayoutAsData,
    ///                     AVNumberOfChannelsKey : [NSNumber numberWithUnsignedInteger:2]
    ///                };
    ///                self.assetWriterAudioInput = [AVAssetWriterInput assetWriterInputWithMediaType:[assetAudioTrack mediaType]
    ///                                                                                outputSettings:compressionAudioSettings];
    ///                [self.assetWriter addInput:self.assetWriterAudioInput];
    ///           }
    ///           if (assetVideoTrack)
    ///           {
    ///                NSDictionary *decompressionVideoSettings = @{
    ///                     (id)kCVPixelBufferPixelFormatTypeKey     : [NSNumber numberWithUnsignedInt:kCVPixelFormatType_422YpCbCr8],
    ///                     (id)kCVPixelBufferIOSurfacePropertiesKey : [NSDictionary dictionary]
    ///                };
    ///                self.assetReaderVideoOutput = [AVAssetReaderTrackOutput assetReaderTrackOutputWithTrack:assetVideoTrack
    ///                                                                                         outputSettings:decompressionVideoSettings];
    ///                [self.assetReader addOutput:self.assetReaderVideoOutput];
    ///                CMFormatDescriptionRef formatDescription = NULL;
    ///                NSArray *videoFormatDescriptions = [assetVideoTrack formatDescriptions];
    ///                if ([videoFormatDescriptions count] > 0)
    ///                     formatDescription = (__bridge CMFormatDescriptionRef)[formatDescriptions objectAtIndex:0];
    ///                CGSize trackDimensions = { .width = 0.0, .height = 0.0 };
    ///                if (formatDescription)
    ///                     trackDimensions = CMVideoFormatDescriptionGetPresentationDimensions(formatDescription, false, false);
    ///                else
    ///                     trackDimensions = [assetVideoTrack naturalSize];
    ///                NSDictionary *compressionSettings = nil;
    ///                if (formatDescription)
    ///                {
    ///                     // … clean aperture and pixel aspect ratio from the format description's extensions
    ///                     // (AVVideoCleanApertureKey, AVVideoPixelAspectRatioKey) into compressionSettings …
    ///                }
    ///                NSMutableDictionary *videoSettings = (NSMutableDictionary *) @{
    ///                     AVVideoCodecKey  : AVVideoCodecH264,
    ///                     AVVideoWidthKey  : [NSNumber numberWithDouble:trackDimensions.width],
    ///                     AVVideoHeightKey : [NSNumber numberWithDouble:trackDimensions.height]
    ///                };
    ///                if (compressionSettings)
    ///                     [videoSettings setObject:compressionSettings forKey:AVVideoCompressionPropertiesKey];
    ///                self.assetWriterVideoInput = [AVAssetWriterInput assetWriterInputWithMediaType:[videoTrack mediaType]
    ///                                                                                outputSettings:videoSettings];
    ///                [self.assetWriter addInput:self.assetWriterVideoInput];
    ///           }
    ///      }
    ///      return success;
    /// }
    /// ```
    /// `kCVPixelFormatType_422YpCbCr8` (packed 4:2:2) is planar `yuv422p` here. The clean
    /// aperture and the pixel aspect ratio go from the format description into the settings
    /// (`VideoSettings.cleanAperture`, `AVVideoCleanApertureKey`; `VideoSettings.pixelAspectRatio`,
    /// `AVVideoPixelAspectRatioKey`); the reader takes the first from the file's `clap`, the
    /// writer puts it back there, since FFmpeg 5.1 does neither.
    func setupAssetReaderAndAssetWriter(tracks: [AssetTrack]) throws {
        dispatchPrecondition(condition: .onQueue(mainSerializationQueue))
        let assetReader = AssetReader(asset: asset)
        self.assetReader = assetReader
        let assetWriter = try AssetWriter(url: outputURL, fileType: .mov)
        self.assetWriter = assetWriter
        let assetAudioTrack = tracks.first { $0.mediaType == .audio }
        let assetVideoTrack = tracks.first { $0.mediaType == .video }
        if let assetAudioTrack {
            let decompressionAudioSettings = LinearPCMSettings()
            let assetReaderAudioOutput = try AssetReaderTrackOutput(track: assetAudioTrack, outputSettings: .audio(decompressionAudioSettings))
            self.assetReaderAudioOutput = assetReaderAudioOutput
            try assetReader.add(assetReaderAudioOutput)
            let compressionAudioSettings = AudioSettings(codec: .aac, sampleRate: 44100, channelCount: 2, channelLayout: "stereo", bitRate: 128_000)
            let assetWriterAudioInput = try AssetWriterInput(mediaType: assetAudioTrack.mediaType, outputSettings: .audio(compressionAudioSettings))
            self.assetWriterAudioInput = assetWriterAudioInput
            try assetWriter.add(assetWriterAudioInput)
        }
        if let assetVideoTrack {
            let decompressionVideoSettings = PixelBufferAttributes(pixelFormat: .yuv422p)
            let assetReaderVideoOutput = try AssetReaderTrackOutput(track: assetVideoTrack, outputSettings: .video(decompressionVideoSettings))
            self.assetReaderVideoOutput = assetReaderVideoOutput
            try assetReader.add(assetReaderVideoOutput)
            let formatDescription = assetVideoTrack.formatDescriptions.first
            var trackDimensions = Size.zero
            if let video = formatDescription?.video {
                trackDimensions = Size(width: video.width, height: video.height)
            } else {
                trackDimensions = assetVideoTrack.naturalSize
            }
            var videoSettings = VideoSettings(codec: .h264, width: Int(trackDimensions.width), height: Int(trackDimensions.height))
            if let cleanAperture = formatDescription?.video?.cleanAperture {
                videoSettings.cleanAperture = cleanAperture
            }
            if let pixelAspectRatio = formatDescription?.video?.pixelAspectRatio, pixelAspectRatio.count == 2 {
                videoSettings.pixelAspectRatio = PixelAspectRatio(horizontalSpacing: pixelAspectRatio[0], verticalSpacing: pixelAspectRatio[1])
            }
            let assetWriterVideoInput = try AssetWriterInput(mediaType: assetVideoTrack.mediaType, outputSettings: .video(videoSettings),
                                                             sourceFormatHint: formatDescription)
            self.assetWriterVideoInput = assetWriterVideoInput
            try assetWriter.add(assetWriterVideoInput)
        }
    }

    /// "Reencoding the Asset":
    /// ```objc
    /// - (BOOL)startAssetReaderAndWriter:(NSError **)outError
    /// {
    ///      BOOL success = YES;
    ///      success = [self.assetReader startReading];
    ///      if (!success)
    ///           *outError = [self.assetReader error];
    ///      if (success)
    ///      {
    ///           success = [self.assetWriter startWriting];
    ///           if (!success)
    ///                *outError = [self.assetWriter error];
    ///      }
    ///      if (success)
    ///      {
    ///           self.dispatchGroup = dispatch_group_create();
    ///           [self.assetWriter startSessionAtSourceTime:kCMTimeZero];
    ///           self.audioFinished = NO;
    ///           self.videoFinished = NO;
    ///           if (self.assetWriterAudioInput)
    ///           {
    ///                dispatch_group_enter(self.dispatchGroup);
    ///                [self.assetWriterAudioInput requestMediaDataWhenReadyOnQueue:self.rwAudioSerializationQueue usingBlock:^{
    ///                     if (self.audioFinished)
    ///                          return;
    ///                     BOOL completedOrFailed = NO;
    ///                     while ([self.assetWriterAudioInput isReadyForMoreMediaData] && !completedOrFailed)
    ///                     {
    ///                          CMSampleBufferRef sampleBuffer = [self.assetReaderAudioOutput copyNextSampleBuffer];
    ///                          if (sampleBuffer != NULL)
    ///                          {
    ///                               BOOL success = [self.assetWriterAudioInput appendSampleBuffer:sampleBuffer];
    ///                               CFRelease(sampleBuffer);
    ///                               sampleBuffer = NULL;
    ///                               completedOrFailed = !success;
    ///                          }
    ///                          else
    ///                          {
    ///                               completedOrFailed = YES;
    ///                          }
    ///                     }
    ///                     if (completedOrFailed)
    ///                     {
    ///                          BOOL oldFinished = self.audioFinished;
    ///                          self.audioFinished = YES;
    ///                          if (oldFinished == NO)
    ///                          {
    ///                               [self.assetWriterAudioInput markAsFinished];
    ///                          }
    ///                          dispatch_group_leave(self.dispatchGroup);
    ///                     }
    ///                }];
    ///           }
    ///           if (self.assetWriterVideoInput)
    ///           {
    ///                // … the same loop for video on self.rwVideoSerializationQueue …
    ///           }
    ///           dispatch_group_notify(self.dispatchGroup, self.mainSerializationQueue, ^{
    ///                BOOL finalSuccess = YES;
    ///                NSError *finalError = nil;
    ///                if (self.cancelled)
    ///                {
    ///                     [self.assetReader cancelReading];
    ///                     [self.assetWriter cancelWriting];
    ///                }
    ///                else
    ///                {
    ///                     if ([self.assetReader status] == AVAssetReaderStatusFailed)
    ///                     {
    ///                          finalSuccess = NO;
    ///                          finalError = [self.assetReader error];
    ///                     }
    ///                     if (finalSuccess)
    ///                     {
    ///                          finalSuccess = [self.assetWriter finishWriting];
    ///                          if (!finalSuccess)
    ///                               finalError = [self.assetWriter error];
    ///                     }
    ///                }
    ///                [self readingAndWritingDidFinishSuccessfully:finalSuccess withError:finalError];
    ///           });
    ///      }
    ///      return success;
    /// }
    /// ```
    /// `finishWriting` is asynchronous here: it runs in a task that reports back on the main queue.
    func startAssetReaderAndWriter() throws {
        dispatchPrecondition(condition: .onQueue(mainSerializationQueue))
        guard let assetReader, let assetWriter else { throw MediaError(.invalidState, "set up the asset reader and writer first") }
        try assetReader.startReading()
        try assetWriter.startWriting()
        let dispatchGroup = DispatchGroup()
        self.dispatchGroup = dispatchGroup
        try assetWriter.startSession(atSourceTime: .zero)
        audioFinished = false
        videoFinished = false
        videoSamplesAppended = 0
        if let input = assetWriterAudioInput, let output = assetReaderAudioOutput {
            dispatchGroup.enter()
            input.requestMediaDataWhenReady(on: rwAudioSerializationQueue) { [self] in
                if audioFinished { return }
                let completedOrFailed = pull(from: output, into: input, onAppend: nil)
                if completedOrFailed {
                    let oldFinished = audioFinished
                    audioFinished = true
                    if !oldFinished { input.markAsFinished() }
                    dispatchGroup.leave()
                }
            }
        }
        if let input = assetWriterVideoInput, let output = assetReaderVideoOutput {
            dispatchGroup.enter()
            input.requestMediaDataWhenReady(on: rwVideoSerializationQueue) { [self] in
                if videoFinished { return }
                let completedOrFailed = pull(from: output, into: input) { [self] in
                    videoSamplesAppended += 1
                    onVideoSampleAppended?(videoSamplesAppended)
                }
                if completedOrFailed {
                    let oldFinished = videoFinished
                    videoFinished = true
                    if !oldFinished { input.markAsFinished() }
                    dispatchGroup.leave()
                }
            }
        }
        dispatchGroup.notify(queue: mainSerializationQueue) { [self] in
            if cancelled {
                assetReader.cancelReading()
                assetWriter.cancelWriting()
                readingAndWritingDidFinish(successfully: true, error: nil)
            } else if assetReader.status == .failed {
                readingAndWritingDidFinish(successfully: false, error: assetReader.error)
            } else {
                Task {
                    var finalError: MediaError?
                    do { try await assetWriter.finishWriting() } catch { finalError = Self.mediaError(error) }
                    mainSerializationQueue.async { [self, finalError] in
                        readingAndWritingDidFinish(successfully: finalError == nil, error: finalError)
                    }
                }
            }
        }
    }

    /// The body of the guide's pull loop: appends while the input is ready; true once the
    /// output ran dry or an append failed (`completedOrFailed`).
    private func pull(from output: AssetReaderOutput, into input: AssetWriterInput, onAppend: (() -> Void)?) -> Bool {
        var completedOrFailed = false
        while input.isReadyForMoreMediaData && !completedOrFailed {
            if let sampleBuffer = try? output.copyNextSampleBuffer() {
                let success = (try? input.appendImmediately(sampleBuffer)) ?? false
                if success { onAppend?() }
                completedOrFailed = !success
            } else {
                completedOrFailed = true
            }
        }
        return completedOrFailed
    }

    /// "Handling Completion":
    /// ```objc
    /// - (void)readingAndWritingDidFinishSuccessfully:(BOOL)success withError:(NSError *)error
    /// {
    ///      if (!success)
    ///      {
    ///           [self.assetReader cancelReading];
    ///           [self.assetWriter cancelWriting];
    ///           dispatch_async(dispatch_get_main_queue(), ^{
    ///                // Handle any UI tasks here related to failure.
    ///           });
    ///      }
    ///      else
    ///      {
    ///           self.cancelled = NO;
    ///           self.videoFinished = NO;
    ///           self.audioFinished = NO;
    ///           dispatch_async(dispatch_get_main_queue(), ^{
    ///                // Handle any UI tasks here related to success.
    ///           });
    ///      }
    /// }
    /// ```
    /// The UI work is the `completion` handed to `start`.
    func readingAndWritingDidFinish(successfully success: Bool, error: MediaError?) {
        dispatchPrecondition(condition: .onQueue(mainSerializationQueue))
        if !success {
            assetReader?.cancelReading()
            assetWriter?.cancelWriting()
        } else {
            cancelled = false
            rwVideoSerializationQueue.sync { videoFinished = false }
            rwAudioSerializationQueue.sync { audioFinished = false }
        }
        completion?(success, error)
    }

    /// "Handling Cancellation":
    /// ```objc
    /// - (void)cancel
    /// {
    ///      dispatch_async(self.mainSerializationQueue, ^{
    ///           if (self.assetWriterAudioInput)
    ///           {
    ///                dispatch_async(self.rwAudioSerializationQueue, ^{
    ///                     BOOL oldFinished = self.audioFinished;
    ///                     self.audioFinished = YES;
    ///                     if (oldFinished == NO)
    ///                     {
    ///                          [self.assetWriterAudioInput markAsFinished];
    ///                     }
    ///                     dispatch_group_leave(self.dispatchGroup);
    ///                });
    ///           }
    ///           if (self.assetWriterVideoInput)
    ///           {
    ///                // … the same on self.rwVideoSerializationQueue …
    ///           }
    ///           self.cancelled = YES;
    ///      });
    /// }
    /// ```
    /// The group is left only by the side that marks the input finished: the guide's code
    /// leaves it a second time when a track had already finished, which unbalances the group.
    func cancel() {
        mainSerializationQueue.async { [self] in
            let dispatchGroup = dispatchGroup
            if let input = assetWriterAudioInput {
                rwAudioSerializationQueue.async { [self] in
                    let oldFinished = audioFinished
                    audioFinished = true
                    if !oldFinished {
                        input.markAsFinished()
                        dispatchGroup?.leave()
                    }
                }
            }
            if let input = assetWriterVideoInput {
                rwVideoSerializationQueue.async { [self] in
                    let oldFinished = videoFinished
                    videoFinished = true
                    if !oldFinished {
                        input.markAsFinished()
                        dispatchGroup?.leave()
                    }
                }
            }
            cancelled = true
        }
    }

    /// `error` as a `MediaError`, wrapping any other error.
    private static func mediaError(_ error: any Error) -> MediaError {
        error as? MediaError ?? MediaError(.ioError, "\(error)", underlying: error)
    }
}

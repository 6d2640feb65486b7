import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation

@Suite struct AssetReaderTests {
    let clip = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")

    private func openReader(_ url: URL, range: MediaTimeRange? = nil,
                        _ outputs: (Asset) async throws -> [AssetReaderOutput]) async throws -> (AssetReader, [AssetReaderOutput]) {
        let asset = Asset(url: url)
        let reader = AssetReader(asset: asset)
        if let range { reader.timeRange = range }
        let made = try await outputs(asset)
        for output in made { try reader.add(output) }
        try reader.startReading()
        return (reader, made)
    }

    private func drain(_ output: AssetReaderOutput) throws -> [SampleBuffer] {
        var samples: [SampleBuffer] = []
        while let sample = try output.copyNextSampleBuffer() { samples.append(sample) }
        return samples
    }

    @Test func oneSecondOfA30fpsClipIsExactly30FramesWithTheirTimestamps() async throws {
        let range = MediaTimeRange(start: MediaTime(value: 1, timescale: 1), duration: MediaTime(value: 1, timescale: 1))
        let (reader, outputs) = try await openReader(clip, range: range) { asset in
            [try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                        outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))]
        }
        let frames = try drain(outputs[0])
        #expect(frames.count == 30)
        #expect(frames.map(\.presentationTimeStamp) == (30..<60).map { MediaTime(value: Int64($0), timescale: 30) })
        #expect(frames.allSatisfy { $0.duration == MediaTime(value: 1, timescale: 30) })
        #expect(reader.status == .completed)
    }

    @Test func decodedFramesInTheRequestedFormatAndSize() async throws {
        let (_, outputs) = try await openReader(clip) { asset in
            [try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                        outputSettings: .video(PixelBufferAttributes(pixelFormat: .nv12, width: 160, height: 120)))]
        }
        let frames = try drain(outputs[0])
        #expect(frames.count == 90)
        let picture = try #require(frames.first?.imageBuffer)
        #expect(picture.width == 160 && picture.height == 120 && picture.pixelFormat == .nv12)
        #expect(picture.planeCount == 2)
        try picture.withUnsafePlanes { planes in
            #expect(planes.count == 2 && planes[1].height == 60)
        }
    }

    @Test func aspectFitLeavesBlackBars() async throws {
        // 320x240 fitted into 320x320: 40 rows of black above and below.
        let (_, outputs) = try await openReader(clip) { asset in
            [try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                        outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p, width: 320, height: 320,
                                                                                     scalingMode: .resizeAspect)))]
        }
        let picture = try #require(try outputs[0].copyNextSampleBuffer()?.imageBuffer)
        try picture.withUnsafePlanes { planes in
            let luma = planes[0]
            let top = luma.baseAddress.load(fromByteOffset: 5 * luma.bytesPerRow + 160, as: UInt8.self)
            let middle = (0..<320).map { luma.baseAddress.load(fromByteOffset: 160 * luma.bytesPerRow + $0, as: UInt8.self) }
            #expect(top == 16, "limited-range black")
            #expect(middle.contains { $0 > 40 }, "the picture is in the middle")
        }
    }

    @Test func decodedAudioAsInterleavedPCMTrimmedToTheRange() async throws {
        let range = MediaTimeRange(start: MediaTime(value: 1, timescale: 1), duration: MediaTime(value: 1, timescale: 1))
        let (_, outputs) = try await openReader(clip, range: range) { asset in
            [try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .audio)[0],
                                        outputSettings: .audio(LinearPCMSettings(sampleRate: 44100, channelCount: 2, bitDepth: 16)))]
        }
        let blocks = try drain(outputs[0])
        let total = blocks.reduce(0) { $0 + ($1.audioBuffer?.sampleCount ?? 0) }
        #expect(abs(total - 44100) <= 1, "one second at 44.1 kHz, got \(total)")
        #expect(blocks.first?.presentationTimeStamp == MediaTime(value: 44100, timescale: 44100))
        let first = try #require(blocks.first?.audioBuffer)
        #expect(first.format == .int16 && first.channelCount == 2 && first.channelLayout == "stereo")
    }

    @Test func audioAndVideoReadTogetherLoseNoPackets() async throws {
        let asset = Asset(url: clip)
        let alone = try await (0..<2).asyncMap { index in
            let (_, outputs) = try await openReader(clip) { _ in [try AssetReaderTrackOutput(track: try await asset.load(.tracks)[index], outputSettings: nil)] }
            return try drain(outputs[0]).map { $0.withUnsafeDataBytes { checksum($0) } }
        }
        let (reader, outputs) = try await openReader(clip) { asset in
            try await asset.load(.tracks).map { try AssetReaderTrackOutput(track: $0, outputSettings: nil) }
        }
        var together: [[UInt64]] = [[], []]
        var done = [false, false]
        while !done.allSatisfy({ $0 }) {
            for i in 0..<2 where !done[i] {
                if let sample = try outputs[i].copyNextSampleBuffer() { together[i].append(sample.withUnsafeDataBytes { checksum($0) }) } else { done[i] = true }
            }
        }
        #expect(together[0].count == 90 && together[1].count >= 141)
        #expect(together == alone, "same packets, bit for bit, read alone or together")
        #expect(reader.status == .completed)
    }

    @Test func passthroughSamplesCarryTimingAndSyncFlags() async throws {
        let (_, outputs) = try await openReader(clip) { asset in
            [try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0], outputSettings: nil)]
        }
        let samples = try drain(outputs[0])
        #expect(samples.filter(\.isSync).count == 3, "a keyframe every second")
        #expect(samples.allSatisfy { $0.totalSampleSize > 0 && $0.decodeTimeStamp.isValid })
        #expect(samples.map(\.decodeTimeStamp) == samples.map(\.decodeTimeStamp).sorted())
    }

    @Test func asyncSequenceAndCancellation() async throws {
        let (reader, outputs) = try await openReader(clip) { asset in
            [try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                        outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))]
        }
        var count = 0
        for try await _ in outputs[0].sampleBuffers {
            count += 1
            if count == 10 { reader.cancelReading() }
        }
        #expect(count == 10)
        #expect(reader.status == .cancelled)
    }

    @Test func decodedFramesAreSharedUnlessCopiesAreAsked() async throws {
        let (_, outputs) = try await openReader(clip) { asset in
            let output = try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                                    outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
            output.alwaysCopiesSampleData = true
            return [output]
        }
        let picture = try #require(try outputs[0].copyNextSampleBuffer()?.imageBuffer)
        #expect(picture.frame.isWritable, "a copy owns its buffers alone")
    }

    @Test func theDecoderRunsOnTheThreadsAskedForAndDecodesTheSamePictures() async throws {
        // The export gives a decoder beside x264 fewer threads than FFmpeg's default; frame
        // threading changes when pictures come out, never what they hold.
        func decode(threads: Int) async throws -> (inUse: Int?, pictures: [UInt64]) {
            let (_, outputs) = try await openReader(clip) { asset in
                let output = try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                                        outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
                output.decoderThreadCount = threads
                return [output]
            }
            let output = try #require(outputs[0] as? AssetReaderTrackOutput)
            let pictures = try drain(output).map { sample in
                try #require(sample.imageBuffer).withUnsafePlanes { planes in
                    planes.reduce(0) { hash, plane in
                        hash ^ checksum(UnsafeRawBufferPointer(start: plane.baseAddress, count: plane.bytesPerRow * plane.height))
                    }
                }
            }
            return (output.decoderThreadsInUse, pictures)
        }
        let one = try await decode(threads: 1)
        let two = try await decode(threads: 2)
        #expect(one.inUse == 1 && two.inUse == 2)
        #expect(one.pictures.count == 90)
        #expect(one.pictures == two.pictures)
    }

    @Test func aDecoderBesideASoftwareEncoderGetsAQuarterOfTheCoresAndAtLeastTwo() {
        for codec in [VideoCodec.h264, .hevc] {
            #expect([1, 2, 4, 8, 16, 64].map { PipelineBounds.decoderThreads(besideHostEncoderOf: codec, cores: $0) } == [2, 2, 2, 2, 4, 16])
        }
        #expect(PipelineBounds.decoderThreads(besideHostEncoderOf: .mjpeg, cores: 16) == 0,
                "FFmpeg's default beside an encoder that does not fill the cores")
    }

    @Test func theExportPlacesADecoderOnTheDeviceOrBesideTheHostEncoder() async throws {
        let videoTrack = try await Asset(url: clip).loadTracks(withMediaType: .video)[0]
        let x264 = VideoSettings(codec: .h264, width: 1280, height: 720)
        func threads(_ hardware: HardwareDecision?) throws -> Int {
            let output = try AssetReaderTrackOutput(track: videoTrack, outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
            ExportSession.placeDecoding(of: output, hardware: hardware, device: nil, encodingTo: x264)
            return output.decoderThreadCount
        }
        let hybrid = HardwareDecision(path: .hybrid, decodesOnDevice: true, encodesOnDevice: false, encoder: nil, reason: "test")
        let uploads = HardwareDecision(path: .hybrid, decodesOnDevice: false, encodesOnDevice: true, encoder: "h264_vaapi", reason: "test")
        #expect(try threads(nil) == PipelineBounds.decoderThreads(besideHostEncoderOf: .h264))
        #expect(try threads(.software("no device")) == PipelineBounds.decoderThreads(besideHostEncoderOf: .h264))
        #expect(try threads(hybrid) == 0, "a device decoder keeps FFmpeg's default")
        #expect(try threads(uploads) == 0, "beside a device encoder the host decoder keeps FFmpeg's default")
    }

    @Test func audioMixOutputSumsTracksWithTheirVolumes() async throws {
        let asset = Asset(url: TestFiles.fixture("ac3_51_plus_aac_stereo_two_tracks.mp4"))
        let tracks = try await asset.loadTracks(withMediaType: .audio)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderAudioMixOutput(audioTracks: tracks, audioSettings: LinearPCMSettings(channelCount: 2, bitDepth: 32, isFloat: true, isInterleaved: false))
        var silent = AudioMixInputParameters(trackID: tracks[0].trackID)
        silent.setVolume(0, at: .zero)
        output.audioMix = AudioMix(inputParameters: [silent])
        try reader.add(output)
        try reader.startReading()
        let blocks = try drain(output)
        let total = blocks.reduce(0) { $0 + ($1.audioBuffer?.sampleCount ?? 0) }
        #expect(abs(Double(total) / 48000 - 0.298) < 0.03, "as long as the longer track")
        #expect(blocks.first?.audioBuffer?.channelCount == 2)
    }

    @Test func corruptBitstreamFailsWithAClearError() async throws {
        let (reader, outputs) = try await openReader(TestFiles.fixture("broken_vp9_invalid_bitstream.webm")) { asset in
            [try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                        outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))]
        }
        #expect(throws: MediaError.self) { _ = try drain(outputs[0]) }
        #expect(reader.status == .failed)
        let error = try #require(reader.error)
        #expect(error.code == .decodeFailed)
        #expect(error.description.contains("broken_vp9_invalid_bitstream.webm"))
    }
}

/// FNV-1a of the bytes: enough to tell packets apart without printing them.
func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    bytes.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}

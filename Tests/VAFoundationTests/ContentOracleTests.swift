import Foundation
import Testing
@testable import VAFoundation

/// Pixels and samples checked against an independent decode by ffmpeg, so that grey frames,
/// silence or a wrong mix cannot pass on codec, size and count alone.
@Suite struct ContentOracleTests {
    /// ffmpeg's stdout for `arguments` (raw samples).
    static func ffmpegRaw(_ arguments: [String]) throws -> [UInt8] {
        let ffmpeg = try #require(ffmpegPath, "ffmpeg is not installed (Hardware/setup.sh installs it)")
        let result = try run(ffmpeg, ["-v", "error", "-nostdin"] + arguments + ["-f", "rawvideo", "-"])
        try #require(result.status == 0, "ffmpeg \(arguments.joined(separator: " ")) failed")
        return [UInt8](result.stdout)
    }

    /// The planes of a picture, rows packed (each row `rowBytes[plane]` long).
    static func packed(_ picture: PixelBuffer, rowBytes: [Int]) throws -> [UInt8] {
        try picture.withUnsafePlanes { planes in
            var bytes: [UInt8] = []
            for (p, plane) in planes.enumerated() {
                for y in 0..<plane.height {
                    let row = plane.baseAddress.advanced(by: y * plane.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    bytes.append(contentsOf: UnsafeBufferPointer(start: row, count: rowBytes[p]))
                }
            }
            return bytes
        }
    }

    static func psnr(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Double {
        precondition(a.count == b.count && !a.isEmpty)
        var sum = 0.0
        for (x, y) in zip(a, b) { let d = Double(Int(x) - Int(y)); sum += d * d }
        let mse = sum / Double(a.count)
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }

    // MARK: reader: the CPU scaler

    /// The reader's 320x240 → 160x120 NV12 pictures against ffmpeg's scale filter with the flags our
    /// scaler uses (bicubic, accurate rounding, full chroma interpolation) on ffmpeg's own decode.
    @Test func readerScalesLikeFFmpeg() async throws {
        let clip = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")
        let asset = Asset(url: clip)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                                outputSettings: .video(PixelBufferAttributes(pixelFormat: .nv12, width: 160, height: 120)))
        try reader.add(output)
        try reader.startReading()
        var ours: [[UInt8]] = []
        while let sample = try output.copyNextSampleBuffer() {
            ours.append(try Self.packed(try #require(sample.imageBuffer), rowBytes: [160, 160]))
        }
        try #require(ours.count == 90)
        let frameBytes = 160 * 120 * 3 / 2
        let oracle = try Self.ffmpegRaw(["-i", clip.path, "-vf", "scale=160:120:flags=bicubic+accurate_rnd+full_chroma_int", "-pix_fmt", "nv12"])
        try #require(oracle.count == 90 * frameBytes)
        // Frames that differ (testsrc moves): 0, 45 and 89 — a reader that repeated one picture fails.
        for index in [0, 45, 89] {
            let theirs = oracle[(index * frameBytes)..<((index + 1) * frameBytes)]
            let luma = Self.psnr(ours[index][0..<(160 * 120)], theirs.prefix(160 * 120))
            let chroma = Self.psnr(ours[index][(160 * 120)...], theirs.suffix(160 * 60))
            // Measured: identical (PSNR capped at 99 dB) in every frame and plane; with bilinear instead of
            // our flags it would be about 41 dB luma and 37 dB chroma, so 60 dB tells the filters apart.
            #expect(luma >= 60, "frame \(index): luma PSNR \(luma) dB")
            #expect(chroma >= 60, "frame \(index): chroma PSNR \(chroma) dB")
        }
        #expect(Self.psnr(ours[0][...], ours[45][...]) < 30, "frames 0 and 45 differ")
    }

    // MARK: writer: what reaches the encoder

    /// The pattern pictures written through each encoder come back from ffmpeg's decode close to what was appended.
    @Test(arguments: [(VideoCodec.h264, FileType.mp4), (VideoCodec.hevc, FileType.mp4), (VideoCodec.vp9, FileType.webm)])
    func writtenPicturesMatchWhatWasAppended(codec: VideoCodec, fileType: FileType) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("pattern.\(fileType.fileExtension)")
        let (w, h, frames) = (160, 96, 10)
        let settings = VideoSettings(codec: codec, width: w, height: h, quality: 0.9, expectedSourceFrameRate: 30)
        try await WriterTestSupport.writePattern(to: url, fileType: fileType, settings: settings, frames: frames, sourceWidth: w, sourceHeight: h)
        let decoded = try Self.ffmpegRaw(["-i", url.path, "-pix_fmt", "yuv420p"])
        let frameBytes = w * h * 3 / 2
        try #require(decoded.count == frames * frameBytes)
        for index in [0, 5, 9] {
            let appended = try Self.packed(try WriterTestSupport.pattern(width: w, height: h, index: index), rowBytes: [w, w / 2, w / 2])
            let back = decoded[(index * frameBytes)..<((index + 1) * frameBytes)]
            let value = Self.psnr(appended[...], back)
            // Measured at quality 0.9 (README's scale: x264 CRF 5, x265 CRF 6, libvpx CRF 7): h264
            // 50.9–53.3 dB, hevc 48.6–56 dB, vp9 46.9–60 dB (frames 0, 5, 9); a grey or stale picture
            // is below 15 dB.
            let bound = switch codec { case .h264: 50.5; case .hevc: 48.0; default: 46.5 }
            #expect(value >= bound, "\(codec) frame \(index): PSNR \(value) dB")
        }
    }

    // MARK: export: presets scale, encode and carry audio

    /// The 640x480 preset of a real 1280x720 phone clip against ffmpeg's own scale of its own
    /// decode to the same 640x360, frame by frame (both decoded by ffmpeg as limited-range yuv420p).
    @Test func presetExportMatchesFFmpegsScaleOfTheSource() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = TestFiles.fixture("h264_720p_android_slowmo_capture240fps.mp4")
        let url = dir.appendingPathComponent("640.mp4")
        // At the preset's table rate: this checks the scaling, not the cap at the source's rate
        // (a 43 KB clip would be encoded at a fraction of it).
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        session.capsBitRatesAtSource = false
        let result = try await session.export(to: url, as: .mp4)
        try #require(result.videoSettings.map { ($0.width, $0.height) } ?? (0, 0) == (640, 360))
        // The clip has variable frame rate: every decoded frame once, none duplicated to a constant rate.
        let ours = try Self.ffmpegRaw(["-i", url.path, "-fps_mode", "passthrough", "-pix_fmt", "yuv420p"])
        let oracle = try Self.ffmpegRaw(["-i", source.path, "-fps_mode", "passthrough", "-vf", "scale=640:360", "-pix_fmt", "yuv420p"])
        let (frameBytes, luma) = (640 * 360 * 3 / 2, 640 * 360)
        try #require(oracle.count == 7 * frameBytes, "ffmpeg decodes 7 frames of the source")
        try #require(ours.count == oracle.count, "\(ours.count / frameBytes) frames exported")
        var worstLuma = Double.infinity, worstChroma = Double.infinity
        for index in 0..<7 {
            let range = (index * frameBytes)..<((index + 1) * frameBytes)
            let y = Self.psnr(ours[range].prefix(luma), oracle[range].prefix(luma))
            let uv = Self.psnr(ours[range].suffix(frameBytes - luma), oracle[range].suffix(frameBytes - luma))
            print("content: 640x480 preset frame \(index) vs ffmpeg scale of the source: luma \(y) dB, chroma \(uv) dB")
            worstLuma = min(worstLuma, y)
            worstChroma = min(worstChroma, uv)
        }
        // Measured (x264 at the preset's rate): luma 47.64–48.45 dB, chroma 52.01–52.23 dB. ffmpeg's own
        // scale against itself shifted by 2 source columns is 32.2 dB luma; bilinear instead of bicubic
        // is 46.8 dB. The clip hardly moves (frames 0 and 6 are 52.4 dB apart), so a repeated
        // frame is caught by the next test, not this one.
        #expect(worstLuma >= 47.0, "worst luma PSNR \(worstLuma) dB")
        #expect(worstChroma >= 51.5, "worst chroma PSNR \(worstChroma) dB")
    }

    /// An export of the bundled clip whose audio is lavfi's 440 Hz sine (amplitude 1/8): the
    /// AAC that comes out is still a 440 Hz tone at that level, and the pictures are the source's.
    @Test func exportKeepsTheSourcesToneAndPictures() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")
        let url = dir.appendingPathComponent("out.mp4")
        // At the preset's table rate: pictures and tone, not the cap at the source's rate.
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        session.capsBitRatesAtSource = false
        _ = try await session.export(to: url, as: .mp4)

        let bytes = try Self.ffmpegRaw(["-i", url.path, "-map", "0:a:0", "-ac", "1", "-c:a", "pcm_f32le", "-f", "f32le"])
        let samples = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        try #require(samples.count >= 47000 * 3, "\(samples.count) samples of audio")
        // Away from the ends (AAC priming and the last partial frame): the middle 2 s.
        let middle = samples[24000..<120000]
        let level = Self.rms(middle)
        // Frequency from the upward zero crossings: cycles between the first and the last one.
        let rising = middle.indices.dropFirst().filter { middle[$0 - 1] < 0 && middle[$0] >= 0 }
        try #require(rising.count >= 2, "the exported audio has no tone: \(rising.count) zero crossings, RMS \(level)")
        let frequency = Double(rising.count - 1) * 48000 / Double(rising.last! - rising.first!)
        print("content: exported audio: RMS \(level) (sine of amplitude 1/8: \(0.125 / 2.0.squareRoot())), \(frequency) Hz")
        // Measured: RMS 0.08819 (0.2% under the source's 0.08839), 439.995 Hz.
        #expect(abs(level - 0.125 / 2.0.squareRoot()) <= 0.001, "RMS \(level)")
        #expect(abs(frequency - 440) <= 0.05, "\(frequency) Hz")

        let ours = try Self.ffmpegRaw(["-i", url.path, "-pix_fmt", "yuv420p"])
        let oracle = try Self.ffmpegRaw(["-i", source.path, "-pix_fmt", "yuv420p"])
        let frameBytes = 320 * 240 * 3 / 2
        try #require(oracle.count == 90 * frameBytes && ours.count == oracle.count, "\(ours.count / frameBytes) frames")
        var worst = Double.infinity
        for index in [0, 45, 89] {
            let range = (index * frameBytes)..<((index + 1) * frameBytes)
            let value = Self.psnr(ours[range], oracle[range])
            print("content: export frame \(index) vs ffmpeg's decode of the source: \(value) dB")
            worst = min(worst, value)
        }
        // Measured: 49.7 (frame 0), 55.2 (45) and 54.3 dB (89); testsrc2 moves, so a repeated or
        // grey frame is far below.
        #expect(worst >= 49.0, "worst PSNR \(worst) dB")
    }

    // MARK: audio mix: sums, volumes and ramps

    /// Two PCM tracks (440 Hz and 1 kHz sines, 1 s, 48 kHz stereo), lossless so ffmpeg's decode of each is exact.
    static func twoToneFile(in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("two-tones.mov")
        let ffmpeg = try #require(ffmpegPath, "ffmpeg is not installed")
        let result = try run(ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
                                      "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000:duration=1",
                                      "-map", "0:a", "-map", "1:a", "-ac", "2", "-c:a", "pcm_s16le", url.path])
        try #require(result.status == 0)
        return url
    }

    /// One track of the file, decoded by ffmpeg as planar float: [left, right].
    static func ffmpegTrack(_ url: URL, _ index: Int) throws -> [[Float]] {
        let bytes = try ffmpegRaw(["-i", url.path, "-map", "0:a:\(index)", "-c:a", "pcm_f32le", "-f", "f32le"])
        let floats = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return [stride(from: 0, to: floats.count, by: 2).map { floats[$0] }, stride(from: 1, to: floats.count, by: 2).map { floats[$0] }]
    }

    /// Our mix of both tracks with `parameters`, as planar float: [left, right].
    static func mix(_ url: URL, _ parameters: (AssetTrack, AssetTrack) -> [AudioMixInputParameters]) async throws -> [[Float]] {
        let asset = Asset(url: url)
        let tracks = try await asset.loadTracks(withMediaType: .audio)
        try #require(tracks.count == 2)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderAudioMixOutput(audioTracks: tracks, audioSettings: LinearPCMSettings(
            sampleRate: 48000, channelCount: 2, bitDepth: 32, isFloat: true, isInterleaved: false))
        output.audioMix = AudioMix(inputParameters: parameters(tracks[0], tracks[1]))
        try reader.add(output)
        try reader.startReading()
        var channels: [[Float]] = [[], []]
        while let sample = try output.copyNextSampleBuffer() {
            let buffer = try #require(sample.audioBuffer)
            buffer.withUnsafeChannels { planes in
                for c in 0..<2 { channels[c].append(contentsOf: planes[c].bindMemory(to: Float.self).prefix(buffer.sampleCount)) }
            }
        }
        return channels
    }

    static func rms(_ x: ArraySlice<Float>) -> Double { (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)).squareRoot() }

    @Test func mixIsTheVolumeWeightedSumOfFFmpegsDecodes() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try Self.twoToneFile(in: dir)
        let a = try Self.ffmpegTrack(url, 0), b = try Self.ffmpegTrack(url, 1)
        try #require(a[0].count == 48000 && b[0].count == 48000)
        let ours = try await Self.mix(url) { first, second in
            var half = AudioMixInputParameters(trackID: first.trackID)
            half.setVolume(0.5, at: .zero)
            var full = AudioMixInputParameters(trackID: second.trackID)
            full.setVolume(1, at: .zero)
            return [half, full]
        }
        try #require(ours[0].count == 48000, "\(ours[0].count) samples")
        var worst: Float = 0
        for c in 0..<2 { for i in 0..<48000 { worst = max(worst, abs(ours[c][i] - (0.5 * a[c][i] + b[c][i]))) } }
        print("content: mix 0.5·440 Hz + 1·1 kHz vs ffmpeg decodes: max error \(worst)")
        // Measured: 0 (float arithmetic on the same decoded samples).
        #expect(worst <= 1e-6, "max error \(worst)")
        // Level: sines of amplitude 1/8 (lavfi's sine): RMS of the sum of two unrelated tones.
        let level = Self.rms(ours[0][...])
        let expected = Self.rms(zip(a[0], b[0]).map { 0.5 * $0 + $1 }[...])
        #expect(abs(level - expected) < 1e-4 && level > 0.05, "RMS \(level), expected \(expected)")
    }

    @Test func volumeRampScalesTheTrackLinearly() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try Self.twoToneFile(in: dir)
        let a = try Self.ffmpegTrack(url, 0)
        let ours = try await Self.mix(url) { first, second in
            var ramp = AudioMixInputParameters(trackID: first.trackID)
            ramp.setVolumeRamp(fromStartVolume: 1, toEndVolume: 0,
                               timeRange: MediaTimeRange(start: .zero, duration: MediaTime(value: 1, timescale: 1)))
            var mute = AudioMixInputParameters(trackID: second.trackID)
            mute.setVolume(0, at: .zero)
            return [ramp, mute]
        }
        try #require(ours[0].count == 48000, "\(ours[0].count) samples")
        var worst: Float = 0
        for i in 0..<48000 {
            let gain = 1 - Float(i) / 48000
            worst = max(worst, abs(ours[0][i] - gain * a[0][i]))
        }
        print("content: ramp 1→0 over 1 s vs ffmpeg decode × (1 − t): max error \(worst)")
        // Measured: 0 (the gain is 1 − t sample by sample).
        #expect(worst <= 1e-6, "max error \(worst)")
        // Level falls with the ramp: mean gain 0.95 over the first tenth, 0.05 over the last. Measured RMS:
        // source 0.0625, first tenth 0.0594, last tenth 0.0036.
        let first = Self.rms(ours[0][0..<4800]), last = Self.rms(ours[0][43200..<48000])
        let source = Self.rms(a[0][0..<4800])
        #expect(abs(first - 0.95 * source) < 0.002 && last < first / 10, "RMS first tenth \(first), last tenth \(last), source \(source)")
    }
}

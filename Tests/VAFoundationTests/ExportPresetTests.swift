import Foundation
import Testing
@testable import VAFoundation

/// Every preset on real clips: the codec, the fitted size (portrait stays portrait), the table
/// bit rate within 15% for clips longer than 3.5 s (both), and the duration within one frame.
@Suite(.serialized)
struct ExportPresetTests {
    /// A portrait phone clip (1080x1440, 11.4 s, variable frame rate) and a rotated 720p one.
    static let clips = ["h264_aac_vfr_iphone_flir_gps.mp4", "h264_aac_iphone6_rot90_gps_metadata.mov"]
    static let presets = ExportPreset.all.filter { !$0.isPassthrough }

    @Test(arguments: presets, clips)
    func presetOnARealClip(_ preset: ExportPreset, _ clip: String) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try TestFiles.requireSharedMedia().appendingPathComponent(clip)
        let asset = Asset(url: source)
        let sourceVideo = try await asset.loadTracks(withMediaType: .video).first
        let type: FileType = preset == .appleM4A ? .m4a : .mp4
        let url = dir.appendingPathComponent("out.\(type.fileExtension)")
        let session = ExportSession(asset: asset, preset: preset)
        let result = try await session.export(to: url, as: type)
        // The result is read back by ffprobe, not by our own Asset; so is the source it is held to.
        let output = try WriterTestSupport.probeFile(url)
        let original = try WriterTestSupport.probeFile(source)
        let duration = Double(output.format["duration"] as? String ?? "") ?? -1
        let sourceDuration = Double(original.format["duration"] as? String ?? "") ?? -1
        // Audio-only exports end where the source's audio ends (AAC frames are 23 ms).
        let sourceAudio = original.streams.first { $0["codec_type"] as? String == "audio" }
        let audioEnd = sourceAudio.map { (Double($0["start_time"] as? String ?? "") ?? 0) + (Double($0["duration"] as? String ?? "") ?? 0) } ?? 0
        let expected = preset.videoCodec == nil ? audioEnd : sourceDuration
        // The tolerance (one source frame; the phone clip has a variable rate) is the one input still from our Asset.
        let frame = preset.videoCodec == nil ? 0.05 : (sourceVideo.map { $0.minFrameDuration.seconds } ?? 0.05)
        #expect(abs(duration - expected) <= max(frame, 0.05), "\(preset) \(clip): \(duration) s vs \(expected) s")

        guard let codec = preset.videoCodec, let sourceStream = original.streams.first(where: { $0["codec_type"] as? String == "video" }) else {
            #expect(!output.streams.isEmpty && output.streams.allSatisfy { $0["codec_type"] as? String == "audio" })
            #expect(output.streams.first?["codec_name"] as? String == "aac")
            return
        }
        let video = try #require(output.streams.first { $0["codec_type"] as? String == "video" })
        #expect(video["codec_name"] as? String == codec.rawValue)
        let (w, h) = (video["width"] as? Int ?? 0, video["height"] as? Int ?? 0)
        let (sw, sh) = (sourceStream["width"] as? Int ?? 0, sourceStream["height"] as? Int ?? 0)
        #expect(w > 0 && h > 0 && sw > 0 && sh > 0)
        #expect(w % 2 == 0 && h % 2 == 0 && w <= sw && h <= sh, "never upscaled, even: \(w)x\(h) from \(sw)x\(sh)")
        #expect((w > h) == (sw > sh), "orientation kept")
        #expect(WriterTestSupport.displayRotation(video) == WriterTestSupport.displayRotation(sourceStream), "rotation kept")
        if let box = preset.box {
            let (long, short) = (max(box.width, box.height), min(box.width, box.height))
            #expect(max(w, h) <= long && min(w, h) <= short, "fits \(box)")
        }
        if sourceDuration > 3.5, let target = result.videoSettings?.averageBitRate {
            let actual = Double(video["bit_rate"] as? String ?? "") ?? 0
            print("preset: \(preset) \(clip): \(Int(actual)) bit/s vs target \(target): \(String(format: "%+.1f", 100 * (actual - Double(target)) / Double(target)))%")
            // Measured (ffprobe's stream bit_rate, 2026-11-22) against the target: the 11.4 s phone clip +0.2% to +13.3% (HEVC 1280x720),
            // the 4.0 s rotated clip -10.1% to -2.6% (it was checked only on the first, within 20%).
            if result.videoSettings?.maxBitRate != nil {
                // Capped at what the source needs, the target is also the peak over one second:
                // never over it, and the variable-rate phone clip falls up to 23% under it
                // (measured 2026-11-23: -22.7% LowQuality, -15.5% to -18.7% at 568 to 960 wide).
                #expect(actual <= Double(target) * 1.05 && actual >= Double(target) * 0.7, "\(preset): \(Int(actual)) bit/s vs capped \(target)")
            } else {
                #expect(abs(actual - Double(target)) / Double(target) <= 0.15, "\(preset): \(Int(actual)) bit/s vs table \(target)")
            }
        }
    }
}

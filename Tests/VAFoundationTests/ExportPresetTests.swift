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
        let output = Asset(url: url)
        let (duration, tracks) = try await output.load(.duration, .tracks)
        let sourceDuration = try await asset.load(.duration)
        // Audio-only exports end where the source's audio ends (AAC frames are 23 ms).
        let sourceAudio = try await asset.loadTracks(withMediaType: .audio).first
        let expected = preset.videoCodec == nil ? (sourceAudio.map { $0.timeRange.start.seconds + $0.timeRange.duration.seconds } ?? 0) : sourceDuration.seconds
        let frame = preset.videoCodec == nil ? 0.05 : (sourceVideo.map { $0.minFrameDuration.seconds } ?? 0.05)
        #expect(abs(duration.seconds - expected) <= max(frame, 0.05), "\(preset) \(clip): \(duration.seconds) s vs \(expected) s")

        guard let codec = preset.videoCodec, let sourceVideo else {
            #expect(tracks.allSatisfy { $0.mediaType == .audio } && tracks.first?.formatDescription.codec == "aac")
            return
        }
        let video = try #require(tracks.first { $0.mediaType == .video })
        #expect(video.formatDescription.codec == codec.rawValue)
        let (w, h) = (Int(video.naturalSize.width), Int(video.naturalSize.height))
        let (sw, sh) = (Int(sourceVideo.naturalSize.width), Int(sourceVideo.naturalSize.height))
        #expect(w % 2 == 0 && h % 2 == 0 && w <= sw && h <= sh, "never upscaled, even: \(w)x\(h) from \(sw)x\(sh)")
        #expect((w > h) == (sw > sh), "orientation kept")
        #expect(video.preferredTransform.rotationDegrees == sourceVideo.preferredTransform.rotationDegrees, "rotation kept")
        if let box = preset.box {
            let (long, short) = (max(box.width, box.height), min(box.width, box.height))
            #expect(max(w, h) <= long && min(w, h) <= short, "fits \(box)")
        }
        if sourceDuration.seconds > 3.5, let target = result.videoSettings?.averageBitRate {
            let actual = Double(video.estimatedDataRate)
            print("preset: \(preset) \(clip): \(Int(actual)) bit/s vs target \(target): \(String(format: "%+.1f", 100 * (actual - Double(target)) / Double(target)))%")
            // Measured against the target: the 11.4 s phone clip +0.2% to +13.3% (HEVC 1280x720),
            // the 4.0 s rotated clip -10.1% to -2.6% (it was checked only on the first, within 20%).
            #expect(abs(actual - Double(target)) / Double(target) <= 0.15, "\(preset): \(Int(actual)) bit/s vs table \(target)")
        }
    }
}

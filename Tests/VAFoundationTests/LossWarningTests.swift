import Foundation
import Testing
@testable import VAFoundation

/// What a re-encode cannot keep is said in the result's warnings, never dropped in silence:
/// a Dolby Vision RPU, an alpha channel. A copy keeps them, and says nothing.
@Suite(.serialized) struct LossWarningTests {
    @Test func aDolbyVisionRPUDroppedByAReencodeIsSaid() async throws {
        let clip = try TestFiles.requireSharedMedia().appendingPathComponent("hevc_main10_dolbyvision84_hlg_iphone14pro.mov")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let reencoded = try await ExportSession(asset: Asset(url: clip), preset: .preset640x480).export(to: dir.appendingPathComponent("a.mp4"), as: .mp4)
        #expect(reencoded.warnings.contains { $0.contains("Dolby Vision") && $0.contains("profile 8") }, "\(reencoded.warnings)")
        let copied = try await ExportSession(asset: Asset(url: clip), preset: .passthrough).export(to: dir.appendingPathComponent("b.mov"), as: .mov)
        #expect(!copied.warnings.contains { $0.contains("Dolby Vision") }, "a copy keeps the RPU: \(copied.warnings)")
    }

    @Test func anAlphaChannelDroppedByAReencodeIsSaid() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("alpha.mov")
        let ffmpeg = try #require(which("ffmpeg"), "ffmpeg makes the source (Hardware/setup.sh installs it)")
        let made = try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25,format=yuva444p10le", "-t", "1",
                                    "-c:v", "prores_ks", "-profile:v", "4444", "-pix_fmt", "yuva444p10le", source.path])
        try #require(made.status == 0)
        let result = try await ExportSession(asset: Asset(url: source), preset: .preset640x480).export(to: dir.appendingPathComponent("out.mp4"), as: .mp4)
        // FFmpeg decodes ProRes 4444 with alpha as 12-bit.
        #expect(result.warnings.contains { $0.contains("alpha channel (yuva444p12le)") }, "\(result.warnings)")
        let opaque = try await ExportSession(asset: Asset(url: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")), preset: .preset640x480)
            .export(to: dir.appendingPathComponent("opaque.mp4"), as: .mp4)
        #expect(!opaque.warnings.contains { $0.contains("alpha") || $0.contains("Dolby") }, "\(opaque.warnings)")
    }
}

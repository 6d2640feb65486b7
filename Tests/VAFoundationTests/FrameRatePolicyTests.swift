import Foundation
import Testing
@testable import VAFoundation

/// `.automatic` keeps every rate up to 60 fps and converts faster captures to 30, whatever the
/// container's time base does to the intervals (Matroska and WebM store 1 ms timestamps, so
/// 60 fps alternates 16 and 17 ms; TS uses 90 kHz; MP4 the encoder's time base).
@Suite struct FrameRatePolicyTests {
    static let rates: [(String, Double)] = [("24", 24), ("25", 25), ("30", 30), ("50", 50), ("60000/1001", 59.94), ("60", 60), ("120", 120)]
    static let containers = ["mkv", "webm", "mp4", "ts"]

    @Test(arguments: containers)
    func theSameContentKeepsItsRateUpTo60InEveryContainer(container: String) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ffmpeg = try #require(which("ffmpeg"))
        for (text, fps) in Self.rates {
            let file = dir.appendingPathComponent("clip\(Int(fps * 100)).\(container)")
            let codec = container == "webm" ? ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"] : ["-c:v", "libx264", "-preset", "ultrafast"]
            let made = try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=\(text)", "-t", "1"] + codec + [file.path])
            try #require(made.status == 0, "ffmpeg made no \(container) at \(text) fps")
            let plan = try await ExportSession(asset: Asset(url: file), preset: .preset640x480).plan(fileType: .mp4)
            if fps > 60 {
                #expect(plan.frameRate == 30, "\(container) at \(text) fps is converted to 30")
            } else {
                #expect(plan.frameRate == nil, "\(container) at \(text) fps keeps its timing, got \(plan.frameRate ?? 0)")
            }
        }
    }

    @Test func phonesRecordingAt60Point06AreKept() {
        var assistant = OutputSettingsAssistant(preset: .preset1280x720)!
        assistant.sourceVideoAverageFrameDuration = MediaTime(value: 1000, timescale: 60058)   // measured on h264_aac_2160p60_portrait_android_rot90.mp4
        assistant.sourceVideoMinFrameDuration = MediaTime(value: 1, timescale: 90)           // one burst does not make it a fast capture
        #expect(assistant.outputFrameRate == nil)
        assistant.sourceVideoAverageFrameDuration = MediaTime(value: 1, timescale: 90)
        #expect(assistant.outputFrameRate == 30, "a 90 fps capture is converted")
    }
}

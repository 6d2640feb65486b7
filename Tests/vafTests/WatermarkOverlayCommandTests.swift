import ChildProcess
import Foundation
import Testing
import VAFoundation
@testable import vaf

/// `vaf transcode --watermark`: the option's parsing, and a watermark exported over a black
/// clip read back with ffmpeg.
@Suite struct WatermarkOverlayCommandTests {
    @Test func theArgumentTakesAPathAPositionAndAnOpacity() throws {
        let full = try #require(Watermark(argument: "/tmp/logo.png:96,64,0.5"))
        #expect(full.url.path == "/tmp/logo.png" && full.origin == Point(x: 96, y: 64) && full.opacity == 0.5)
        let placed = try #require(Watermark(argument: "logo.png:10,20"))
        #expect(placed.origin == Point(x: 10, y: 20) && placed.opacity == 1)
        let bare = try #require(Watermark(argument: "a:b/logo.png"))
        #expect(bare.url.lastPathComponent == "logo.png" && bare.origin == Point(x: 16, y: 16), "a colon in the path with no position after it")
        #expect(Watermark(argument: "logo.png:1,2,3,4") == nil)
        #expect(Watermark(argument: "logo.png:1") == nil)
        #expect(Watermark(argument: "logo.png:1,2,1.5") == nil, "opacity above 1")
    }

    @Test func aHalfOpaqueWatermarkIsMidGreyOverBlack() async throws {
        let ffmpeg = QualityCommandTests.ffmpeg
        try #require(FileManager.default.isExecutableFile(atPath: ffmpeg), "ffmpeg is not installed (Hardware/setup.sh installs it)")
        let dir = try ResumeCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = dir.appendingPathComponent("black.mp4").path, png = dir.appendingPathComponent("wm.png").path
        let out = dir.appendingPathComponent("out").path
        let made = try await ChildProcess.run(ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "color=c=black:s=320x240:r=30:d=2", "-c:v", "libx264",
                                                       "-pix_fmt", "yuv420p", clip], timeLimit: 120)
        let logo = try await ChildProcess.run(ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "color=c=white:s=64x64", "-frames:v", "1", png], timeLimit: 60)
        try #require(made.shellStatus == 0 && logo.shellStatus == 0)
        let run = try await ResumeCommandTests.vaf(["transcode", clip, "--preset", "HighestQuality", "--output-dir", out, "--json",
                                                    "--watermark", "\(png):96,64,0.5"])
        #expect(run.status == 0, "\(run.stderr)")
        let output = try #require(run.rows.first?["output"] as? String)
        let pixel = try await ChildProcess.run(ffmpeg, ["-v", "error", "-nostdin", "-ss", "1", "-i", output, "-frames:v", "1", "-vf", "format=rgb24,crop=2:2:126:94",
                                                        "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], timeLimit: 120)
        let rgb = pixel.standardOutput.prefix(3).map { Int($0) }
        #expect(rgb.count == 3 && rgb.allSatisfy { abs($0 - 128) <= 6 }, "inside the watermark: \(rgb), mid-grey is 128 ± 6")

        let bad = try await ResumeCommandTests.vaf(["transcode", clip, "--output-dir", out, "--watermark", "\(png):1,2,3,4"])
        #expect(bad.status == 64 && bad.stderr.contains("--watermark"), "status \(bad.status): \(bad.stderr)")
    }
}

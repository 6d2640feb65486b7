import ChildProcess
import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation
import VATestSupport

extension HardwareExportTests {
    /// Two seconds of `width`×`height` H.264 (10 fps, which SoftVA decodes; no colour tags) with
    /// a PGS track of two cues: an opaque red rectangle from 0.5 s to 1 s, and a half-transparent
    /// white one at odd coordinates from 1.2 s to the end.
    static func subtitledSource(in dir: TemporaryDirectory, width: Int = 320, height: Int = 180) async throws -> String {
        let sup = dir.file("cues.sup"), source = dir.file("subtitled.mkv")
        // ffmpeg starts each input at 0: a first cue at 0 (a dot in a corner) keeps the others' times.
        let cues = [PGSStream.Cue(start: 0, end: 0.1, x: width - 20, y: height - 20, width: 4, height: 4, colour: (235, 128, 128, 255)),
                    PGSStream.Cue(start: 0.5, end: 1, x: 40, y: 40, width: 80, height: 40, colour: (81, 240, 90, 255)),
                    PGSStream.Cue(start: 1.2, end: nil, x: 151, y: 101, width: 61, height: 31, colour: (235, 128, 128, 128))]
        try PGSStream.data(cues, width: width, height: height).write(to: URL(fileURLWithPath: sup))
        let made = try await ChildProcess.run(Tools.ffmpeg, [
            "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=10:duration=2", "-i", sup, "-map", "0", "-map", "1",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "20", "-c:s", "copy", source,
        ], timeLimit: 60)
        try #require(made.succeeded, "ffmpeg: \(made.stderr)")
        return source
    }

    /// The mean Y, U and V of the `width`×`height` region at (`x`, `y`) of the picture at `time` s of `path`.
    static func meanColour(_ path: String, at time: Double, x: Int, y: Int, width: Int, height: Int) async throws -> [Int] {
        let run = try await ChildProcess.run(Tools.ffmpeg, ["-v", "error", "-nostdin", "-ss", String(time), "-i", path, "-frames:v", "1", "-vf",
                                                            "crop=\(width):\(height):\(x):\(y),scale=1:1:flags=area,format=yuv444p",
                                                            "-f", "rawvideo", "-"], timeLimit: 60)
        return run.standardOutput.map(Int.init)
    }

    /// Bitmap subtitles burnt in on a device whose video processor blends RGBA by alpha: each
    /// picture a cue shows over is drawn there, the subtitle a layer above the decoded surface,
    /// and none is copied to host memory. The colours match the software path's blend, the
    /// half-transparent cue's included, in the picture's own matrix: BT.709 for an untagged HD
    /// picture on both paths. (SoftVA copies a YUV picture between colour standards unconverted,
    /// so that the picture itself is taken in that matrix too is not seen here.)
    @Test(arguments: [(320, 180), (1280, 720)])
    func bitmapSubtitlesAreDrawnByTheVideoProcessorWithoutHostTransfers(width: Int, height: Int) async throws {
        let dir = try TemporaryDirectory()
        let source = try await Self.subtitledSource(in: dir, width: width, height: height)
        let counters = dir.file("counters.txt")
        func export(_ name: String, _ configure: (ExportSession) -> Void) async throws -> ExportResult {
            let session = ExportSession(asset: Asset(url: URL(fileURLWithPath: source)), preset: .preset640x480)
            session.subtitlesBurnedIn = .all
            // The source's own size: the video processor draws the subtitles and scales nothing.
            session.outputSize = Size(width: width, height: height)
            configure(session)
            return try await session.export(to: URL(fileURLWithPath: dir.file(name)), as: .mp4)
        }
        let hardware = try await Self.withDevice(SoftVAOptions(countersPath: counters)) { device in
            let session = ExportSession(asset: Asset(url: URL(fileURLWithPath: source)), preset: .preset640x480)
            session.subtitlesBurnedIn = .all
            session.outputSize = Size(width: width, height: height)
            session.hardwareDevice = device
            let plan = try await session.plan(fileType: .mp4)
            #expect(plan.hardware?.burningInSubtitles == .device, "\(String(describing: plan.hardware))")
            #expect(plan.hardware?.reason.contains("bitmap subtitles drawn as a VPP layer") == true, "\(String(describing: plan.hardware?.reason))")
            return try await export("hardware.mp4") {
                $0.hardwareDevice = device
                $0.hardwarePolicy = .require
            }
        }
        let software = try await export("software.mp4") { $0.hardwarePolicy = .off }
        let driver = try SoftVACounters(path: counters)
        print("softva bitmap subtitles: path \(hardware.path), \(hardware.pathReason); \(hardware.hostTransfers) host transfers; counters \(driver.values)")
        #expect(hardware.path == .hardware, "\(hardware.pathReason)")
        #expect(hardware.hostTransfers == 0, "\(hardware.hostTransfers) host transfers")
        #expect(driver["h264_decodes"] == 20 && driver["h264_encodes"] == 20, "decoded and encoded on the device: \(driver.values)")
        // The dot (picture 0), the red cue (pictures 5 to 9) and the white one (pictures 12 to 19): the others pass untouched.
        #expect(driver["vpp_ops"] == 14, "one VPP picture per picture a cue shows over: \(driver.values)")
        // Only the cues' own pictures go to the device, once each: less than one video picture in all.
        #expect(driver["derived_images_mapped"] == 3, "each cue uploaded once: \(driver.values)")
        #expect(driver["host_transfer_bytes"] > 0 && driver["host_transfer_bytes"] < 320 * 180 * 3 / 2, "no video picture was mapped, read or written by the host")
        for (time, x, y, width, height) in [(0.75, 44, 44, 72, 32), (1.55, 154, 104, 55, 25), (1.55, 4, 4, 30, 30)] {
            let device = try await Self.meanColour(hardware.outputURL.path, at: time, x: x, y: y, width: width, height: height)
            let host = try await Self.meanColour(software.outputURL.path, at: time, x: x, y: y, width: width, height: height)
            print("softva bitmap subtitles at \(time) s, (\(x), \(y)) \(width)x\(height): device YUV \(device), host \(host)")
            #expect(device.count == 3 && host.count == 3 && zip(device, host).allSatisfy { abs($0 - $1) <= 3 },
                    "at \(time) s: device \(device), host \(host)")
        }
        let red = try await Self.meanColour(hardware.outputURL.path, at: 0.75, x: 44, y: 44, width: 72, height: 32)
        #expect(red.count == 3 && red[2] > 200 && red[1] < 120, "the red cue is drawn: \(red)")
        let after = try await Self.meanColour(hardware.outputURL.path, at: 1.05, x: 44, y: 44, width: 72, height: 32)
        let clean = try await Self.meanColour(source, at: 1.05, x: 44, y: 44, width: 72, height: 32)
        #expect(after.count == 3 && clean.count == 3 && zip(after, clean).allSatisfy { abs($0 - $1) <= 3 },
                "the red cue is gone at 1.05 s: \(after), the source \(clean)")
    }

    /// The video processor fails while drawing the second cue: the video goes on in software
    /// from the last keyframe, and the pictures written in software carry their cues too.
    @Test func aVideoProcessorFailingWhileDrawingSubtitlesGoesOnInSoftware() async throws {
        let dir = try TemporaryDirectory()
        let source = try await Self.subtitledSource(in: dir)
        // The 9th VPP picture is the white cue's third, at 1.4 s.
        let options = SoftVAOptions(failAfter: 8, failStatus: "VA_STATUS_ERROR_HW_BUSY", failOn: "vpp")
        let result = try await Self.withDevice(options) { device in
            let session = ExportSession(asset: Asset(url: URL(fileURLWithPath: source)), preset: .preset640x480)
            session.subtitlesBurnedIn = .all
            session.hardwareDevice = device
            return try await session.export(to: URL(fileURLWithPath: dir.file("out.mp4")), as: .mp4)
        }
        #expect(result.fallbackReason != nil && result.warnings.contains { $0.hasPrefix("device failure: the video went on in software") },
                "\(result.pathReason); \(result.warnings)")
        #expect(try Self.frameCount(result.outputURL.path) == 20, "every picture once")
        let red = try await Self.meanColour(result.outputURL.path, at: 0.75, x: 44, y: 44, width: 72, height: 32)
        #expect(red.count == 3 && red[2] > 200 && red[1] < 120, "the red cue is drawn: \(red)")
        for time in [1.25, 1.55, 1.85] {
            let white = try await Self.meanColour(result.outputURL.path, at: time, x: 154, y: 104, width: 55, height: 25)
            let clean = try await Self.meanColour(source, at: time, x: 154, y: 104, width: 55, height: 25)
            #expect(white.count == 3 && clean.count == 3 && white[0] > clean[0] + 30, "the white cue is drawn at \(time) s: \(white) over \(clean)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("vaf-partial") }
        #expect(leftovers.isEmpty, "no partial file: \(leftovers)")
    }
}

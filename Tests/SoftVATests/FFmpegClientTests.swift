import Foundation
import Testing
import VATestSupport

/// FFmpeg's own VA-API code (the mjpeg hwaccel, the mjpeg_vaapi encoder, scale_vaapi,
/// hwupload/hwdownload) running on SoftVA, with software FFmpeg as the oracle.
@Suite("FFmpeg's VA-API code on SoftVA")
struct FFmpegClientTests {
    static func hwArgs(_ env: SoftVAEnvironment) -> [String] {
        ["-hide_banner", "-loglevel", "error", "-init_hw_device", "vaapi=va:\(env.display.name)",
         "-hwaccel", "vaapi", "-hwaccel_device", "va", "-hwaccel_output_format", "vaapi"]
    }

    @Test("JPEG decode through the mjpeg hwaccel matches libavcodec within ±2 per sample",
          arguments: [Fixtures.path("kodak_frame0.jpg"), Fixtures.kodakAVI])
    func jpegDecodeMatchesLibavcodec(input: String) throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let counters = tmp.file("counters.txt")
        let r = try env.run(Tools.ffmpeg, Self.hwArgs(env) + [
            "-i", input, "-an", "-vf", "hwdownload,format=yuv422p", "-f", "rawvideo", "-y", tmp.file("hw.yuv"),
        ], options: SoftVAOptions(countersPath: counters))
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        // The source is yuvj422p: ask software for the same samples, without range conversion.
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-i", input, "-an",
                                      "-f", "rawvideo", "-pix_fmt", "yuvj422p", "-y", tmp.file("sw.yuv")])
        let hw = try readBytes(tmp.file("hw.yuv")), sw = try readBytes(tmp.file("sw.yuv"))
        #expect(hw.count == sw.count)
        #expect(!hw.isEmpty)
        let diff = SampleDifference(hw, sw)
        #expect(diff.maximum <= 2, "\(diff)")
        let c = try SoftVACounters(path: counters)
        #expect(c["decodes"] == UInt64(hw.count / (320 * 240 * 2)))
        #expect(c["failed_operations"] == 0)
    }

    @Test("mjpeg_vaapi at quality 90 encodes a real frame that software decodes at PSNR ≥ 38 dB")
    func jpegEncodePSNR() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        // A real 1080p picture in NV12, uploaded to a surface and encoded there.
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-i", Fixtures.h264_1080p,
                                      "-frames:v", "1", "-pix_fmt", "nv12", "-f", "rawvideo", "-y", tmp.file("src.nv12")])
        let r = try env.run(Tools.ffmpeg, [
            "-hide_banner", "-loglevel", "error", "-init_hw_device", "vaapi=va:\(env.display.name)",
            "-filter_hw_device", "va", "-f", "rawvideo", "-pix_fmt", "nv12", "-s", "1920x1080",
            "-i", tmp.file("src.nv12"), "-vf", "hwupload", "-c:v", "mjpeg_vaapi", "-global_quality", "90",
            "-f", "mjpeg", "-y", tmp.file("out.jpg"),
        ])
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        // The JPEG holds the surface's samples as they are: read them back without range conversion.
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-i", tmp.file("out.jpg"),
                                      "-pix_fmt", "yuvj420p", "-f", "rawvideo", "-y", tmp.file("back.yuv")])
        let src = try readBytes(tmp.file("src.nv12")), back = try readBytes(tmp.file("back.yuv"))
        let y = 1920 * 1080, c = y / 4
        #expect(src.count == y * 3 / 2)
        #expect(back.count == src.count)
        guard src.count == y * 3 / 2, back.count == src.count else { return }
        // NV12 to planar, to compare plane by plane.
        var planar = Array(src[0..<y])
        planar += (0..<c).map { src[y + 2 * $0] }
        planar += (0..<c).map { src[y + 2 * $0 + 1] }
        let luma = psnr(Array(planar[0..<y]), Array(back[0..<y]))
        let all = psnr(planar, back)
        #expect(luma >= 38, "luma PSNR \(luma) dB")
        #expect(all >= 38, "PSNR \(all) dB")
    }

    @Test("Decode → encode with -hwaccel_output_format vaapi keeps frames on surfaces: zero host transfer")
    func zeroCopyTranscode() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let counters = tmp.file("counters.txt")
        let r = try env.run(Tools.ffmpeg, Self.hwArgs(env) + [
            "-i", Fixtures.kodakAVI, "-an", "-c:v", "mjpeg_vaapi", "-global_quality", "90", "-y", tmp.file("out.avi"),
        ], options: SoftVAOptions(countersPath: counters))
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        let source = try countFrames(Fixtures.kodakAVI)
        let output = try countFrames(tmp.file("out.avi"))
        #expect(source == 41)
        #expect(output == source)
        let c = try SoftVACounters(path: counters)
        #expect(c["decodes"] == 41)
        #expect(c["encodes"] == 41)
        #expect(c.hostTransferBytes == 0)
        #expect(c["get_image_calls"] == 0)
        #expect(c["put_image_calls"] == 0)
        #expect(c["derived_images_mapped"] == 0)
        #expect(c["coded_bytes"] > 0)
    }

    @Test("Downloading decoded frames is counted as host transfer")
    func downloadIsCounted() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let counters = tmp.file("counters.txt")
        let r = try env.run(Tools.ffmpeg, Self.hwArgs(env) + [
            "-i", Fixtures.kodakAVI, "-an", "-frames:v", "5", "-vf", "hwdownload,format=yuv422p", "-f", "null", "-",
        ], options: SoftVAOptions(countersPath: counters))
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        let c = try SoftVACounters(path: counters)
        // 5 frames of 320x240 4:2:2 (2 bytes per pixel), whichever way hwcontext_vaapi maps them.
        #expect(c.hostTransferBytes >= 5 * 320 * 240 * 2)
    }

    @Test("scale_vaapi runs on SoftVA and matches swscale's bilinear output")
    func scaleVaapi() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-i", Fixtures.h264_1080p,
                                      "-frames:v", "1", "-pix_fmt", "nv12", "-f", "rawvideo", "-y", tmp.file("src.nv12")])
        let r = try env.run(Tools.ffmpeg, [
            "-hide_banner", "-loglevel", "error", "-init_hw_device", "vaapi=va:\(env.display.name)",
            "-filter_hw_device", "va", "-f", "rawvideo", "-pix_fmt", "nv12", "-s", "1920x1080",
            "-i", tmp.file("src.nv12"), "-vf", "hwupload,scale_vaapi=w=1280:h=720,hwdownload,format=nv12",
            "-f", "rawvideo", "-y", tmp.file("vpp.nv12"),
        ])
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "nv12",
                                      "-s", "1920x1080", "-i", tmp.file("src.nv12"),
                                      "-vf", "scale=1280:720:flags=bilinear", "-pix_fmt", "nv12",
                                      "-f", "rawvideo", "-y", tmp.file("sws.nv12")])
        let a = try readBytes(tmp.file("vpp.nv12")), b = try readBytes(tmp.file("sws.nv12"))
        #expect(a.count == 1280 * 720 * 3 / 2)
        #expect(b.count == a.count)
        let y = SampleDifference(a, b, range: 0..<(1280 * 720))
        let uv = SampleDifference(a, b, range: (1280 * 720)..<a.count)
        #expect(y.maximum <= 4 && y.mean <= 0.05, "luma \(y)")
        #expect(uv.maximum <= 4 && uv.mean <= 0.05, "chroma \(uv)")
    }

    @Test("An injected decode failure at frame 6 makes ffmpeg exit with the error, not crash")
    func decodeFaultInjection() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let counters = tmp.file("counters.txt")
        let r = try env.run(Tools.ffmpeg, Self.hwArgs(env) + [
            "-xerror", "-i", Fixtures.kodakAVI, "-an", "-c:v", "mjpeg_vaapi", "-f", "null", "-",
        ], options: SoftVAOptions(countersPath: counters, failAfter: 5, failOn: "decode"))
        #expect(!r.signalled)
        #expect(r.status != 0)
        #expect(r.stderr.contains("Failed to end picture decode issue: 34 (HW busy now)"))
        let c = try SoftVACounters(path: counters)
        #expect(c["decodes"] == 5)
        #expect(c["injected_failures"] >= 1)
    }

    @Test("An injected encode failure (operation failed) at frame 4 ends ffmpeg with an error, not a crash")
    func encodeFaultInjection() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let counters = tmp.file("counters.txt")
        let r = try env.run(Tools.ffmpeg, Self.hwArgs(env) + [
            "-i", Fixtures.kodakAVI, "-an", "-c:v", "mjpeg_vaapi", "-f", "null", "-",
        ], options: SoftVAOptions(countersPath: counters, failAfter: 3,
                                  failStatus: "VA_STATUS_ERROR_OPERATION_FAILED", failOn: "encode"))
        #expect(!r.signalled)
        #expect(r.status != 0)
        #expect(r.stderr.contains("Failed to end picture encode issue: 1 (operation failed)"))
        let c = try SoftVACounters(path: counters)
        #expect(c["encodes"] == 3)
        #expect(c["injected_failures"] == 1)
    }
}

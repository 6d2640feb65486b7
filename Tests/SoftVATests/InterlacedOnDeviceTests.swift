import ChildProcess
import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation
import VATestSupport

extension HardwareExportTests {
    /// HDR (HLG-tagged 8-bit H.264, which SoftVA decodes) into the 640x480 preset's SDR H.264 on
    /// the device: decoded and encoded there, tone-mapped on the CPU in between (SoftVA's video
    /// processor has no tone mapping, and VA tone mapping is not driven anywhere yet), as the
    /// plan says; the output is tagged BT.709 and matches ffmpeg's own tone mapping.
    @Test func hdrOnTheDeviceIsToneMappedOnTheCPU() async throws {
        let dir = try TemporaryDirectory()
        let source = dir.file("hlg.mp4")
        let made = try await ChildProcess.run(Tools.ffmpeg, [
            "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "1", "-c:v", "libx264", "-crf", "12",
            "-pix_fmt", "yuv420p", "-color_primaries", "bt2020", "-color_trc", "arib-std-b67", "-colorspace", "bt2020nc", source,
        ], timeLimit: 60)
        try #require(made.succeeded, "ffmpeg: \(made.stderr)")
        let counters = dir.file("counters.txt")
        let result = try await Self.withDevice(SoftVAOptions(countersPath: counters)) { device in
            let session = ExportSession(asset: Asset(url: URL(fileURLWithPath: source)), preset: .preset640x480)
            session.hardwareDevice = device
            session.capsBitRatesAtSource = false
            let plan = try await session.plan(fileType: .mp4)
            #expect(plan.hardware?.toneMapping == .host && plan.hardware?.deinterlacing == nil, "\(String(describing: plan.hardware))")
            return try await session.export(to: URL(fileURLWithPath: dir.file("sdr.mp4")), as: .mp4)
        }
        let driver = try SoftVACounters(path: counters)
        print("softva HDR: path \(result.path), \(result.pathReason); \(result.hostTransfers) host transfers; counters \(driver.values)")
        #expect(result.path == .hybrid, "\(result.pathReason)")
        #expect(result.pathReason.contains("tone-mapped to SDR by zscale and tonemap on the CPU: the device's video processor has no HDR-to-SDR tone mapping"),
                "\(result.pathReason)")
        #expect(!result.warnings.contains { $0.hasPrefix("planned the") }, "the path ran as planned: \(result.warnings)")
        #expect(driver["h264_decodes"] == 25 && driver["h264_encodes"] == 25, "decoded and encoded on the device: \(driver.values)")
        #expect(result.hostTransfers == 50, "one download and one upload per picture: \(result.hostTransfers)")
        let tags = try await ChildProcess.run(Tools.ffprobe, ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                              "stream=color_transfer,color_primaries,color_space", "-of", "csv=p=0",
                                                              result.outputURL.path], timeLimit: 60)
        #expect(tags.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "bt709,bt709,bt709", "\(tags.stdout)")
        let (w, h) = try #require(result.videoSettings.map { ($0.width, $0.height) })
        let toneMap = "zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p"
        func chromaPSNR(_ reference: String) async throws -> Double {
            let run = try await ChildProcess.run(Tools.ffmpeg, ["-hide_banner", "-nostdin", "-i", result.outputURL.path, "-i", source, "-lavfi",
                                                                "[1:v]\(reference)[ref];[0:v][ref]psnr", "-f", "null", "-"], timeLimit: 120)
            guard let range = run.stderr.range(of: " v:") else { return -1 }
            return Double(run.stderr[range.upperBound...].prefix { !$0.isWhitespace }) ?? -1
        }
        let mapped = try await chromaPSNR("\(toneMap),scale=\(w):\(h):flags=bicubic")
        let unmapped = try await chromaPSNR("scale=\(w):\(h):flags=bicubic,format=yuv420p")
        print("softva HDR → SDR \(w)x\(h): V PSNR \(mapped) dB against ffmpeg's tone mapping, \(unmapped) dB against none")
        // Measured: V PSNR infinite against ffmpeg's chain (the same filters, and SoftVA's encoder is lossless), 24.0 dB against none.
        #expect(mapped >= 40 && mapped - unmapped >= 6, "tone-mapped \(mapped) dB, untouched \(unmapped) dB")
    }

    /// Interlaced MJPEG (30 pictures of 720x576) whose stream says `order` ("tt" or "bb") and
    /// whose pictures say nothing (JPEG has no such flag).
    static func unflaggedInterlacedMJPEG(_ order: String, in dir: TemporaryDirectory) async throws -> String {
        let woven = dir.file("woven-\(order).mp4"), source = dir.file("interlaced-\(order).mov")
        let weave = order == "tt" ? "interleave_top" : "interleave_bottom"
        let made = try await ChildProcess.run(Tools.ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=720x576:rate=50",
                                                             "-t", "2", "-vf", "tinterlace=\(weave)", "-c:v", "libx264", "-preset", "ultrafast",
                                                             "-qp", "0", woven], timeLimit: 60)
        try #require(made.succeeded, "ffmpeg: \(made.stderr)")
        let coded = try await ChildProcess.run(Tools.ffmpeg, ["-v", "error", "-nostdin", "-i", woven, "-t", "1.2", "-c:v", "mjpeg", "-q:v", "2",
                                                              "-pix_fmt", "yuvj420p", "-field_order", order, source], timeLimit: 60)
        try #require(coded.succeeded, "ffmpeg: \(coded.stderr)")
        return source
    }

    /// Luma PSNR of `output` against `source` run through `reference`, measured by ffmpeg.
    static func lumaPSNR(_ output: String, _ source: String, reference: String) async throws -> Double {
        let run = try await ChildProcess.run(Tools.ffmpeg, ["-hide_banner", "-nostdin", "-i", output, "-i", source, "-lavfi",
                                                            "[1:v]\(reference)[ref];[0:v][ref]psnr", "-f", "null", "-"], timeLimit: 120)
        guard let range = run.stderr.range(of: "PSNR y:") else { return -1 }
        return Double(run.stderr[range.upperBound...].prefix { !$0.isWhitespace }) ?? -1
    }

    /// Unflagged interlaced pictures on a device whose video processor deinterlaces: every
    /// picture is deinterlaced there (`deinterlace_vaapi` with `auto=0`), keeping the field the
    /// stream's field order puts first, and nothing is copied to host memory.
    @Test(arguments: ["tt", "bb"]) func unflaggedInterlacedPicturesAreDeinterlacedOnTheDeviceInTheStreamsOrder(order: String) async throws {
        let dir = try TemporaryDirectory()
        let source = try await Self.unflaggedInterlacedMJPEG(order, in: dir)
        let counters = dir.file("counters.txt")
        let result = try await Self.withDevice(SoftVAOptions(countersPath: counters)) { device in
            try await Self.exportJPEG(URL(fileURLWithPath: source), to: URL(fileURLWithPath: dir.file("out.mov"))) { $0.hardwareDevice = device }
        }
        let driver = try SoftVACounters(path: counters)
        #expect(result.path == .hardware, "\(result.pathReason)")
        #expect(result.pathReason.contains("VPP deinterlacing (bob, deinterlace_vaapi)"), "\(result.pathReason)")
        #expect(result.hostTransfers == 0)
        #expect(driver["vpp_deinterlaced"] == UInt64(Self.frames), "\(driver.values)")
        let (w, h) = try #require(result.videoSettings.map { ($0.width, $0.height) })
        let first = order == "tt" ? "top" : "bottom", second = order == "tt" ? "bottom" : "top"
        let kept = try await Self.lumaPSNR(result.outputURL.path, source, reference: "field=\(first),scale=\(w):\(h):flags=bicubic")
        let other = try await Self.lumaPSNR(result.outputURL.path, source, reference: "field=\(second),scale=\(w):\(h):flags=bicubic")
        let woven = try await Self.lumaPSNR(result.outputURL.path, source, reference: "scale=\(w):\(h):flags=bicubic")
        print("softva unflagged \(order) → \(w)x\(h) on the device: luma PSNR \(kept) dB against the \(first) field scaled, \(other) dB against the \(second) field, \(woven) dB against the woven pictures")
        // Measured: tt 39.2 dB against the top field, 28.1 against the bottom one, 33.6 against the woven pictures; bb 39.2, 28.9, 35.1.
        #expect(kept - other >= 3 && kept - woven >= 3, "the \(first) field is kept: \(kept) dB, \(second) \(other) dB, woven \(woven) dB")
    }

    /// An interlaced MJPEG source (the stream says top field first; its pictures are not
    /// flagged, as JPEG has no such flag) decodes on the device, whose video processor offers no
    /// deinterlacing (`SOFTVA_VPP_FILTERS=none`): the plan says so, and each picture is downloaded,
    /// deinterlaced by bwdif and scaled in host memory, then uploaded for the device's encoder.
    @Test func interlacedSourceOnTheDeviceIsDeinterlacedOnTheCPU() async throws {
        let dir = try TemporaryDirectory()
        let woven = dir.file("woven.mp4"), source = dir.file("interlaced.mov")
        _ = try runChecked(Tools.ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=720x576:rate=50", "-t", "2",
                                          "-vf", "tinterlace=interleave_top,fieldorder=tff", "-c:v", "libx264", "-preset", "ultrafast",
                                          "-qp", "0", woven])
        _ = try runChecked(Tools.ffmpeg, ["-v", "error", "-i", woven, "-t", "1.2", "-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj420p",
                                          "-field_order", "tt", source])
        let counters = dir.file("counters.txt")
        try await Self.withDevice(SoftVAOptions(countersPath: counters, vppFilters: "none")) { device in
            let result = try await Self.exportJPEG(URL(fileURLWithPath: source), to: URL(fileURLWithPath: dir.file("out.mov"))) {
                $0.hardwareDevice = device
            }
            let driver = try SoftVACounters(path: counters)
            print("softva interlaced: path \(result.path), \(result.pathReason); \(result.hostTransfers) host transfers; counters \(driver.values)")
            #expect(result.path == .hybrid, "decoded and encoded on the device, filtered and scaled on the host: \(result.pathReason)")
            #expect(result.pathReason.contains("deinterlaced by bwdif on the CPU: the device's video processor has no deinterlacing filter"),
                    "the plan says why: \(result.pathReason)")
            #expect(!result.warnings.contains { $0.hasPrefix("planned the") }, "the path ran as planned: \(result.warnings)")
            #expect(result.videoEncoder?.encoder == "mjpeg_vaapi")
            #expect(driver["decodes"] == UInt64(Self.frames), "decoded on the device")
            #expect(driver["encodes"] == UInt64(Self.frames), "encoded on the device")
            #expect(result.hostTransfers == 2 * Self.frames, "one download and one upload per frame: \(result.hostTransfers)")
            #expect(try Self.frameCount(result.outputURL.path) == Self.frames)
            let (w, h) = try #require(result.videoSettings.map { ($0.width, $0.height) })
            let deinterlaced = try await Self.lumaPSNR(result.outputURL.path, source, reference: "bwdif=mode=send_frame:parity=tff:deint=all,scale=\(w):\(h):flags=bicubic")
            let scaledOnly = try await Self.lumaPSNR(result.outputURL.path, source, reference: "scale=\(w):\(h):flags=bicubic")
            print("softva interlaced → \(w)x\(h): luma PSNR \(deinterlaced) dB against ffmpeg's bwdif+scale, \(scaledOnly) dB against scale alone")
            // Measured: 46.3 dB against bwdif+scale, 33.4 dB against scale alone.
            #expect(deinterlaced >= 42, "bwdif+scale \(deinterlaced) dB")
            #expect(deinterlaced - scaledOnly >= 8, "bwdif+scale \(deinterlaced) dB, scale alone \(scaledOnly) dB")
        }
    }
}

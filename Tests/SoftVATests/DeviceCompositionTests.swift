import ChildProcess
import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation
import VATestSupport
import HardwareAcceleration

/// Video compositions drawn by the device's video processor on SoftVA: picture-in-picture, a
/// crossfade and quarter turns match the software compositor, an export runs with no copy to host
/// memory, and a frame the video processor cannot draw is drawn in software and reported. Nested
/// in `HardwareExportTests`, whose serialisation keeps one SoftVA device (and counters file) at a time.
extension HardwareExportTests {
@Suite struct DeviceCompositionTests {
    static let second = MediaTime(value: 1, timescale: 1)
    static let half = MediaTime(value: 1, timescale: 2)
    static let frameDuration = MediaTime(value: 1, timescale: 30)

    /// Two one-second 320x240 H.264 clips of different content: our moving pattern, and ffmpeg's testsrc2.
    static func sources(in dir: TemporaryDirectory) async throws -> (URL, URL) {
        let a = URL(fileURLWithPath: dir.file("a.mov")), b = URL(fileURLWithPath: dir.file("b.mp4"))
        try await HardwareExportTests.writeSource(to: a, settings: VideoSettings(codec: .h264, width: 320, height: 240, averageBitRate: 3_000_000))
        let made = try await ChildProcess.run(Tools.ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                                             "-t", "1", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "12", b.path], timeLimit: 60)
        try #require(made.succeeded, "ffmpeg: \(String(decoding: made.standardError, as: UTF8.self))")
        return (a, b)
    }

    /// A composition of both clips over one second: the first half shows B at half size in the
    /// lower right over A (picture in picture), the second half fades A out over B.
    static func composition(_ a: URL, _ b: URL, topTransform: VideoTransform? = nil) async throws -> (MutableComposition, VideoComposition) {
        let composition = MutableComposition()
        let trackA = try #require(composition.addMutableTrack(withMediaType: .video))
        let trackB = try #require(composition.addMutableTrack(withMediaType: .video))
        let all = MediaTimeRange(start: .zero, duration: second)
        try trackA.insertTimeRange(all, of: try #require(try await Asset(url: a).loadTracks(withMediaType: .video).first), at: .zero)
        try trackB.insertTimeRange(all, of: try #require(try await Asset(url: b).loadTracks(withMediaType: .video).first), at: .zero)
        var inset = VideoCompositionLayerInstruction(assetTrack: trackB)
        inset.setTransform(topTransform ?? VideoTransform(a: 0.5, b: 0, c: 0, d: 0.5, tx: 150, ty: 110), at: .zero)
        var fading = VideoCompositionLayerInstruction(assetTrack: trackA)
        fading.setOpacityRamp(fromStartOpacity: 1, toEndOpacity: 0, timeRange: MediaTimeRange(start: half, duration: half))
        let video = VideoComposition(renderSize: Size(width: 320, height: 240), frameDuration: frameDuration, instructions: [
            VideoCompositionInstruction(timeRange: MediaTimeRange(start: .zero, duration: half),
                                        layerInstructions: [inset, VideoCompositionLayerInstruction(assetTrack: trackA)]),
            VideoCompositionInstruction(timeRange: MediaTimeRange(start: half, duration: half),
                                        layerInstructions: [fading, VideoCompositionLayerInstruction(assetTrack: trackB)]),
        ])
        return (composition, video)
    }

    /// Every composited picture of `composition`, as (Y, Cb, Cr) sample planes, on `device` or in software.
    static func pictures(_ composition: MutableComposition, _ video: VideoComposition, device: VADevice?) async throws -> [[[UInt8]]] {
        let reader = AssetReader(asset: composition)
        let tracks = try await composition.loadTracks(withMediaType: .video)
        let output = try AssetReaderVideoCompositionOutput(videoTracks: tracks)
        output.videoComposition = video
        output.hardwareDevice = device
        try reader.add(output)
        try reader.startReading()
        var pictures: [[[UInt8]]] = []
        while let sample = try output.copyNextSampleBuffer() {
            let picture = try #require(sample.imageBuffer)
            #expect(picture.isSurfaceBacked == (device != nil))
            pictures.append(try planes(of: try picture.transferredToHost()))
        }
        return pictures
    }

    /// The Y, Cb and Cr samples of an 8-bit 4:2:0 picture, planar or NV12.
    static func planes(of picture: PixelBuffer) throws -> [[UInt8]] {
        let (w, h, cw, ch) = (picture.width, picture.height, (picture.width + 1) / 2, (picture.height + 1) / 2)
        return try picture.withUnsafePlanes { planes in
            func row(_ plane: Int, _ y: Int) -> UnsafePointer<UInt8> {
                planes[plane].baseAddress.advanced(by: y * planes[plane].bytesPerRow).assumingMemoryBound(to: UInt8.self)
            }
            var luma: [UInt8] = [], blue: [UInt8] = [], red: [UInt8] = []
            for y in 0..<h { luma += UnsafeBufferPointer(start: row(0, y), count: w) }
            for y in 0..<ch {
                if planes.count == 2 {
                    let pairs = UnsafeBufferPointer(start: row(1, y), count: 2 * cw)
                    blue += stride(from: 0, to: 2 * cw, by: 2).map { pairs[$0] }
                    red += stride(from: 1, to: 2 * cw, by: 2).map { pairs[$0] }
                } else {
                    blue += UnsafeBufferPointer(start: row(1, y), count: cw)
                    red += UnsafeBufferPointer(start: row(2, y), count: cw)
                }
            }
            return [luma, blue, red]
        }
    }

    static func meanDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(max(a.count, 1))
    }

    /// Every frame of the device's drawing is the software compositor's within a small mean
    /// difference per plane: the video processor scales with a tent filter where the software
    /// compositor samples bilinearly, and rounds its blends its own way.
    @Test(arguments: [
        ("picture in picture, then a crossfade", VideoTransform?.none),
        ("a quarter turn of the inset", VideoTransform(a: 0, b: 0.5, c: -0.5, d: 0, tx: 200, ty: 40)),
        ("a mirrored inset", VideoTransform(a: -0.5, b: 0, c: 0, d: 0.5, tx: 300, ty: 20)),
    ])
    func theDeviceDrawsWhatTheSoftwareCompositorDraws(case name: String, inset: VideoTransform?) async throws {
        let dir = try TemporaryDirectory()
        let (a, b) = try await Self.sources(in: dir)
        let (composition, video) = try await Self.composition(a, b, topTransform: inset)
        // Every picture the device draws comes out as a GPU surface (`pictures` checks it); one drawn
        // in software would come out in host memory.
        try await HardwareExportTests.withDevice { device in
            let drawn = try await Self.pictures(composition, video, device: device)
            let reference = try await Self.pictures(composition, video, device: nil)
            try #require(drawn.count == 30 && reference.count == 30, "\(drawn.count) pictures on the device, \(reference.count) in software")
            // Worst mean difference per plane, for the inset frames (0 ..< 15) and the crossfade's.
            var worst = [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
            for (frame, (d, r)) in zip(drawn, reference).enumerated() {
                for plane in 0..<3 {
                    let difference = Self.meanDifference(d[plane], r[plane])
                    worst[frame < 15 ? 0 : 1][plane] = max(worst[frame < 15 ? 0 : 1][plane], difference)
                    #expect(difference <= 2.5, "\(name): frame \(frame), plane \(plane): mean difference \(difference)")
                }
            }
            print("softva composition, \(name): worst mean difference per plane against the software compositor: inset \(worst[0]), crossfade \(worst[1])")
            // The inset shows: frame 5 is not A's picture alone (B covers a quarter of it).
            let plainA = try await Self.sourceLuma(a, frame: 5)
            #expect(Self.meanDifference(drawn[5][0], plainA) > 5, "\(name): frame 5 looks like A alone: the inset was not drawn")
            // Frame 22 (22/30 s) of the crossfade shows A at opacity 1 − (22/30 − 1/2)·2 = 8/15 over B,
            // checked against both sources as ffmpeg decodes them.
            let opacity = 8.0 / 15
            let middle = drawn[22][0], aFrame = try await Self.sourceLuma(a, frame: 22), bFrame = try await Self.sourceLuma(b, frame: 22)
            let blend = zip(aFrame, bFrame).map { UInt8((opacity * Double($0) + (1 - opacity) * Double($1)).rounded()) }
            #expect(Self.meanDifference(middle, blend) <= 1.5, "frame 22 of the crossfade against the \(opacity) blend of the sources")
        }
    }

    /// The luma plane of frame `index` of a clip, decoded by ffmpeg (samples as coded: a
    /// conversion to `gray` would stretch limited range to full).
    static func sourceLuma(_ clip: URL, frame index: Int) async throws -> [UInt8] {
        let result = try await ChildProcess.run(Tools.ffmpeg, ["-v", "error", "-nostdin", "-i", clip.path, "-vf", "select=eq(n\\,\(index))",
                                                               "-frames:v", "1", "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"], timeLimit: 60)
        try #require(result.succeeded && result.standardOutput.count == 320 * 240 * 3 / 2)
        return [UInt8](result.standardOutput.prefix(320 * 240))
    }

    /// `composition(a, b)` drawn by ffmpeg's filters from its own decode of the sources, kept lossless:
    /// B scaled to half size and overlaid at (150, 110) on A for the first 15 pictures, then A faded
    /// out (an alpha of 1 − (t − ½)·2) and overlaid on B.
    static func ffmpegComposition(_ a: URL, _ b: URL, in dir: TemporaryDirectory) async throws -> String {
        let reference = dir.file("ffmpeg-composition.nut")
        let graph = "[0:v]split[a1][a2];[1:v]split[b1][b2];[b1]scale=160:120:flags=bicubic[inset];"
            + "[a1][inset]overlay=150:110,trim=end_frame=15[pip];"
            + "[a2]format=yuva420p,fade=out:st=0.5:d=0.5:alpha=1[faded];[b2][faded]overlay,trim=start_frame=15,setpts=PTS-STARTPTS[fade];"
            + "[pip][fade]concat=n=2,format=yuv420p"
        let made = try await ChildProcess.run(Tools.ffmpeg, ["-v", "error", "-nostdin", "-i", a.path, "-i", b.path, "-filter_complex", graph,
                                                             "-frames:v", "30", "-c:v", "ffv1", "-y", reference], timeLimit: 120)
        try #require(made.succeeded, "ffmpeg: \(made.stderr)")
        return reference
    }

    static func export(_ composition: MutableComposition, _ video: VideoComposition, device: VADevice?, to url: URL) async throws -> ExportResult {
        let session = ExportSession(asset: composition, preset: .preset640x480)
        session.videoComposition = video
        session.hardwareDevice = device
        session.hardwarePolicy = device == nil ? .off : .auto
        return try await session.export(to: url, as: .mp4)
    }

    @Test func anExportDecodesCompositesAndEncodesOnTheDeviceWithoutCopies() async throws {
        let dir = try TemporaryDirectory()
        let (a, b) = try await Self.sources(in: dir)
        let (composition, video) = try await Self.composition(a, b)
        try await HardwareExportTests.withDevice { device in
            let hardware = try await Self.export(composition, video, device: device, to: URL(fileURLWithPath: dir.file("hardware.mp4")))
            let software = try await Self.export(composition, video, device: nil, to: URL(fileURLWithPath: dir.file("software.mp4")))
            #expect(hardware.path == .hardware, "\(hardware.pathReason)")
            #expect(hardware.pathReason.contains("drawn by the video processor"), "\(hardware.pathReason)")
            #expect(hardware.hostTransfers == 0 && hardware.hostTransferBytes == 0, "\(hardware.hostTransfers) copies, \(hardware.hostTransferBytes) bytes")
            #expect(hardware.videoEncoder?.encoder == "h264_vaapi")
            #expect(software.path == .software)
            #expect(try HardwareExportTests.frameCount(hardware.outputURL.path) == 30)
            let reference = try await Self.ffmpegComposition(a, b, in: dir)
            let quality = try HardwareExportTests.psnr(hardware.outputURL.path, reference)
            let softwareQuality = try HardwareExportTests.psnr(software.outputURL.path, reference)
            print("softva composition export: PSNR against ffmpeg's drawing of the composition: device \(quality) dB, software \(softwareQuality) dB")
            // Measured: 48.4 dB (the inset's 15 pictures 45.2–45.7 dB: SoftVA scales with a tent filter,
            // ffmpeg bicubic; the crossfade's 15 identical).
            #expect(quality >= 45, "PSNR of the device's composition against ffmpeg's: \(quality) dB")
        }
    }

    /// A plain composition (no video composition): clip A, half a second of nothing, clip B
    /// drawn from a 640x480 source. On the device every segment is decoded there, scaled by the
    /// video processor and joined without a copy; the gap shows one black surface the video
    /// processor drew. Its pictures and their count match the same export in software.
    @Test func aPlainCompositionIsDecodedScaledAndJoinedOnTheDevice() async throws {
        let dir = try TemporaryDirectory()
        let (a, _) = try await Self.sources(in: dir)
        let large = URL(fileURLWithPath: dir.file("large.mp4"))
        let made = try await ChildProcess.run(Tools.ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=640x480:rate=30",
                                                             "-t", "1", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "12", large.path], timeLimit: 60)
        try #require(made.succeeded, "ffmpeg: \(made.stderr)")
        let composition = MutableComposition()
        let track = try #require(composition.addMutableTrack(withMediaType: .video))
        try track.insertTimeRange(MediaTimeRange(start: .zero, duration: Self.second),
                                  of: try #require(try await Asset(url: a).loadTracks(withMediaType: .video).first), at: .zero)
        try track.insertTimeRange(MediaTimeRange(start: .zero, duration: Self.second),
                                  of: try #require(try await Asset(url: large).loadTracks(withMediaType: .video).first), at: Self.second + Self.half)
        func export(_ device: VADevice?, _ name: String) async throws -> ExportResult {
            let session = ExportSession(asset: composition, preset: .preset640x480)
            session.hardwareDevice = device
            session.hardwarePolicy = device == nil ? .off : .auto
            return try await session.export(to: URL(fileURLWithPath: dir.file(name)), as: .mp4)
        }
        let counters = dir.file("counters.txt")
        let hardware = try await HardwareExportTests.withDevice(SoftVAOptions(countersPath: counters)) { device in
            try await export(device, "hardware.mp4")
        }
        let software = try await export(nil, "software.mp4")
        let driver = try SoftVACounters(path: counters)
        print("softva plain composition: path \(hardware.path), \(hardware.pathReason); \(hardware.hostTransfers) host transfers; counters \(driver.values)")
        #expect(hardware.path == .hardware, "\(hardware.pathReason)")
        #expect(hardware.pathReason.contains("joined on the device"), "\(hardware.pathReason)")
        #expect(hardware.hostTransfers == 0 && hardware.hostTransferBytes == 0, "\(hardware.hostTransfers) copies to or from host memory")
        #expect(driver["h264_decodes"] == 60, "both segments' 60 pictures decoded on the device: \(driver.values)")
        #expect(software.path == .software)
        let frames = try HardwareExportTests.frameCount(hardware.outputURL.path)
        #expect(frames == (try HardwareExportTests.frameCount(software.outputURL.path)) && frames >= 60, "\(frames) frames")
        let quality = try HardwareExportTests.psnr(hardware.outputURL.path, software.outputURL.path)
        #expect(quality >= 35, "PSNR of the device's export against the software one: \(quality) dB")
    }

    /// A video composition over an interlaced source (the stripes clip of `VPPDeinterlacingTests`
    /// under the picture-in-picture and crossfade): on a device that deinterlaces by bob, every
    /// picture of it is deinterlaced and drawn by the video processor with no copy to host memory;
    /// on one that does not, the plan draws the composition in host memory and says why.
    @Test func anInterlacedSourceIsDeinterlacedByTheVideoProcessorOrTheCompositionIsDrawnOnTheHost() async throws {
        let dir = try TemporaryDirectory()
        let (_, b) = try await Self.sources(in: dir)
        let interlaced = URL(fileURLWithPath: try await HardwareExportTests.VPPDeinterlacingTests.interlacedClip("tff", in: dir))
        let (composition, video) = try await Self.composition(interlaced, b)
        let counters = dir.file("counters.txt")
        let onDevice = try await HardwareExportTests.withDevice(SoftVAOptions(countersPath: counters)) { device in
            try await Self.export(composition, video, device: device, to: URL(fileURLWithPath: dir.file("device.mp4")))
        }
        let driver = try SoftVACounters(path: counters)
        print("softva interlaced composition: path \(onDevice.path), \(onDevice.pathReason); counters \(driver.values)")
        #expect(onDevice.path == .hardware, "\(onDevice.pathReason)")
        #expect(onDevice.pathReason.contains("interlaced pictures deinterlaced by the video processor"), "\(onDevice.pathReason)")
        #expect(onDevice.hostTransfers == 0)
        #expect(driver["vpp_deinterlaced"] == 25, "the interlaced source's 25 pictures deinterlaced on the device: \(driver.values)")
        let onHost = try await HardwareExportTests.withDevice(SoftVAOptions(vppFilters: "none")) { device in
            try await Self.export(composition, video, device: device, to: URL(fileURLWithPath: dir.file("host.mp4")))
        }
        #expect(onHost.path == .hybrid, "\(onHost.pathReason)")
        #expect(onHost.pathReason.contains("source is interlaced and the libsoftva device's video processor does not deinterlace by bob"),
                "\(onHost.pathReason)")
        #expect(!onHost.warnings.contains { $0.hasPrefix("planned the") }, "the path ran as planned: \(onHost.warnings)")
        #expect(try HardwareExportTests.frameCount(onDevice.outputURL.path) == 30 && HardwareExportTests.frameCount(onHost.outputURL.path) == 30)
    }

    /// A 30° turn is beyond the video processor: those frames are drawn in software from
    /// downloaded pictures, the rest on the device, and the result says which and why.
    @Test func aFrameTheVideoProcessorCannotDrawIsDrawnInSoftwareAndSaidSo() async throws {
        let dir = try TemporaryDirectory()
        let (a, b) = try await Self.sources(in: dir)
        let angle = Double.pi / 6
        let turned = VideoTransform(a: 0.5 * cos(angle), b: 0.5 * sin(angle), c: -0.5 * sin(angle), d: 0.5 * cos(angle), tx: 180, ty: 60)
        let (composition, video) = try await Self.composition(a, b, topTransform: turned)
        try await HardwareExportTests.withDevice { device in
            let mixed = try await Self.export(composition, video, device: device, to: URL(fileURLWithPath: dir.file("mixed.mp4")))
            let software = try await Self.export(composition, video, device: nil, to: URL(fileURLWithPath: dir.file("software.mp4")))
            #expect(mixed.path == .hybrid, "\(mixed.pathReason)")
            #expect(mixed.pathReason.contains("15 composited in host memory") && mixed.pathReason.contains("quarter turns"), "\(mixed.pathReason)")
            #expect(mixed.pathReason.contains("15 pictures composited on the device"), "\(mixed.pathReason)")
            // Each of the 15 turned pictures: both sources downloaded, the composed picture uploaded,
            // each 320x240 NV12; the 15 crossfade pictures cross nothing.
            #expect(mixed.hostTransfers == 15 * 3, "\(mixed.hostTransfers) transfers")
            #expect(mixed.hostTransferBytes == 15 * 3 * 320 * 240 * 3 / 2, "\(mixed.hostTransferBytes) bytes")
            #expect(try HardwareExportTests.frameCount(mixed.outputURL.path) == 30)
            let quality = try HardwareExportTests.psnr(mixed.outputURL.path, software.outputURL.path)
            #expect(quality >= 35, "PSNR of the mixed export against the software one: \(quality) dB")
        }
    }
}
}

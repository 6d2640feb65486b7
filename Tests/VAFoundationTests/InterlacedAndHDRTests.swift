import ChildProcess
import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation

/// Interlaced sources are deinterlaced (bwdif) before they are scaled, and HDR sources going to
/// 8-bit SDR are tone-mapped to BT.709 and tagged so. ffmpeg's own filters are the oracle.
@Suite struct InterlacedAndHDRTests {
    /// Luma PSNR of `output` against `source` run through `reference` (a filter chain), as
    /// ffmpeg's psnr filter measures it. Neither input is auto-rotated.
    static func lumaPSNR(_ output: URL, against source: URL, reference: String) async throws -> Double {
        try await psnr(output, against: source, reference: reference)["y"] ?? 0
    }

    /// PSNR per plane ("y", "u", "v") and "average" of `output` against `source` run through `reference`.
    static func psnr(_ output: URL, against source: URL, reference: String) async throws -> [String: Double] {
        let ffmpeg = try #require(which("ffmpeg"))
        let psnr = try await ChildProcess.run(ffmpeg, ["-v", "info", "-noautorotate", "-i", output.path, "-noautorotate", "-i", source.path,
                                                       "-lavfi", "[1:v]\(reference)[ref];[0:v][ref]psnr", "-f", "null", "-"], timeLimit: 300)
        let line = try #require(psnr.stderr.split(separator: "\n").first { $0.contains("PSNR y:") }, "\(psnr.stderr)")
        var values: [String: Double] = [:]
        for part in line.split(separator: " ") {
            let pair = part.split(separator: ":")
            if pair.count == 2, let value = Double(pair[1]) { values[String(pair[0])] = value }
        }
        return values
    }

    /// `entries` of the first video stream, as ffprobe prints them in CSV.
    static func probe(_ url: URL, _ entries: String) throws -> String {
        let ffprobe = try #require(which("ffprobe"))
        return String(decoding: try run(ffprobe, ["-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
                                                  "stream=\(entries)", "-of", "csv=p=0", url.path]).stdout, as: UTF8.self)
            .trimmingCharacters(in: CharacterSet(charactersIn: ", \n"))
    }

    /// 2 s of 720x576 25i (top field first): testsrc2 at 50 fps woven two fields a frame.
    static func interlacedClip(in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("interlaced.mp4")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=720x576:rate=50", "-t", "2",
                                      "-vf", "tinterlace=interleave_top,fieldorder=tff", "-flags", "+ildct+ilme", "-c:v", "libx264",
                                      "-preset", "ultrafast", "-qp", "0", "-x264opts", "tff=1", url.path]).status == 0)
        return url
    }

    @Test func filterGraphKeepsOnePicturePerFrameAndDrains() throws {
        let graph = try FilterGraph("bwdif=mode=send_frame:parity=tff:deint=all", width: 64, height: 48, pixelFormat: PixelFormatID(name: "yuv420p")!,
                                    timeBase: Rational(1, 25))
        var out: [Int64] = []
        for k in 0..<5 {
            let frame = try Frame(width: 64, height: 48, pixelFormat: PixelFormatID(name: "yuv420p")!)
            try frame.fillBlack()
            frame.pts = Int64(k)
            try graph.push(frame)
            while case .frame(let f) = try graph.pull() { out.append(f.pts ?? -1) }
        }
        // bwdif holds pictures back until it sees the next: some are still inside.
        #expect(out.count < 5)
        if case .endOfStream = try graph.pull() { Issue.record("end of stream before the input ended") }
        try graph.pushEndOfStream()
        loop: while true {
            switch try graph.pull() {
            case .frame(let f): out.append(f.pts ?? -1)
            case .endOfStream: break loop
            case .needsInput: Issue.record("needs input after the end"); break loop
            }
        }
        #expect(out == [0, 1, 2, 3, 4])
        #expect(throws: FFmpegError.self) { try FilterGraph("nosuchfilter", width: 64, height: 48, pixelFormat: PixelFormatID(name: "yuv420p")!, timeBase: Rational(1, 25)) }
    }

    @Test func interlacedSourceIsDeinterlacedBeforeScaling() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.interlacedClip(in: dir)
        #expect(try Self.probe(source, "field_order") == "tt")
        let output = dir.appendingPathComponent("out.mp4")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: "640x480"))
        let result = try await session.export(to: output, as: .mp4)
        let (width, height) = try #require(result.videoSettings.map { ($0.width, $0.height) })
        #expect((width, height) == (600, 480))
        // The frame count and rate are the source's: one picture per frame, not per field.
        #expect(try Self.probe(output, "r_frame_rate,nb_read_frames") == "25/1,50")
        let deinterlaced = try await Self.lumaPSNR(output, against: source, reference: "bwdif=mode=send_frame,scale=\(width):\(height):flags=bicubic")
        let woven = try await Self.lumaPSNR(output, against: source, reference: "scale=\(width):\(height):flags=bicubic")
        // Measured: 52.9 dB against bwdif+scale, 33.5 dB against scale alone.
        print("interlaced 720x576 → \(width)x\(height): luma PSNR \(deinterlaced) dB against ffmpeg's bwdif+scale, \(woven) dB against scale alone")
        #expect(deinterlaced >= 38, "against bwdif+scale: \(deinterlaced) dB")
        #expect(deinterlaced - woven >= 4, "against bwdif+scale \(deinterlaced) dB, against scale alone \(woven) dB")
    }

    /// ffmpeg's tone mapping of HLG or PQ to BT.709 SDR, the chain the reader runs.
    static let toneMap = "zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p"

    @Test func hdrIntoEightBitH264IsToneMappedAndTaggedBT709() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = TestFiles.fixture("hevc_main10_dolbyvision84_hlg_iphone14pro.mov")
        let output = dir.appendingPathComponent("sdr.mp4")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: "640x480"))
        // At the preset's table rate: a small clip capped at its own rate would measure the
        // encoder's loss, not the tone mapping.
        session.capsBitRatesAtSource = false
        _ = try await session.export(to: output, as: .mp4)
        let tags = try Self.probe(output, "pix_fmt,color_range,color_space,color_transfer,color_primaries")
        #expect(tags == "yuv420p,tv,bt709,bt709,bt709", "\(tags)")
        let size = try Self.probe(output, "width,height").split(separator: ",")
        let scale = "scale=\(size[0]):\(size[1]):flags=bicubic"
        let mapped = try await Self.psnr(output, against: source, reference: "\(Self.toneMap),\(scale)")
        // Without tone mapping: the HLG samples squeezed into 8 bits as they are. HLG is made to
        // look passable on SDR screens, so luma is near; BT.2020's chroma read as BT.709's is not.
        let unmapped = try await Self.psnr(output, against: source, reference: "\(scale),format=yuv420p")
        // Measured: luma 43.3 / V 50.2 dB against ffmpeg's tone mapping; 39.4 / 33.4 dB against none.
        print("HLG → H.264 SDR \(size[0])x\(size[1]): PSNR against ffmpeg's tone mapping \(mapped), against none \(unmapped)")
        #expect(mapped["y"] ?? 0 >= 40, "against ffmpeg's tone mapping: \(mapped)")
        #expect(mapped["v"] ?? 0 >= 40, "against ffmpeg's tone mapping: \(mapped)")
        #expect((mapped["v"] ?? 0) - (unmapped["v"] ?? 0) >= 6, "tone-mapped \(mapped), untouched \(unmapped)")
    }

    @Test func hdrIntoTenBitHEVCKeepsItsTags() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = TestFiles.fixture("hevc_main10_dolbyvision84_hlg_iphone14pro.mov")
        let output = dir.appendingPathComponent("hdr.mov")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: "HEVC1280x720"))
        let result = try await session.export(to: output, as: .mov)
        #expect(result.videoSettings?.pixelFormat == .yuv420p10)
        let tags = try Self.probe(output, "pix_fmt,color_space,color_transfer,color_primaries")
        #expect(tags == "yuv420p10le,bt2020nc,arib-std-b67,bt2020", "\(tags)")
    }
}

extension InterlacedAndHDRTests {
    /// The side data of the first video stream (`stream`) or of its first frame (`frame`), as ffprobe prints it.
    static func sideData(_ url: URL, frame: Bool) throws -> String {
        let ffprobe = try #require(which("ffprobe"))
        let args = frame ? ["-read_intervals", "%+#1", "-show_entries", "frame_side_data"] : ["-show_entries", "stream_side_data"]
        return String(decoding: try run(ffprobe, ["-v", "error", "-select_streams", "v:0"] + args + ["-of", "flat", url.path]).stdout, as: UTF8.self)
    }

    /// The values of `text`'s flat ffprobe lines whose key ends in one of `keys`, in order.
    static func values(_ text: String, _ keys: [String]) -> [String] {
        keys.map { key in
            text.split(separator: "\n").first { $0.split(separator: "=").first?.hasSuffix(".\(key)") == true }
                .map { String($0.split(separator: "=").last ?? "") } ?? "missing"
        }
    }

    @Test func hdr10IntoHEVCKeepsMasteringDisplayAndContentLight() async throws {
        let source = try TestFiles.requireSharedMedia().appendingPathComponent("av1_main10_hdr10_1080p60_aac.mp4")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("hdr10.mp4")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: "HEVC1280x720"))
        _ = try await session.export(to: output, as: .mp4)
        let tags = try Self.probe(output, "pix_fmt,color_space,color_transfer,color_primaries")
        #expect(tags == "yuv420p10le,bt2020nc,smpte2084,bt2020", "\(tags)")
        let keys = ["red_x", "red_y", "green_x", "green_y", "blue_x", "blue_y", "white_point_x", "white_point_y",
                    "min_luminance", "max_luminance", "max_content", "max_average"]
        let wanted = Self.values(try Self.sideData(source, frame: false), keys)
        #expect(!wanted.contains("missing"), "\(wanted)")
        // In the container (mdcv, clli) and in the HEVC stream's SEI, as the source has them.
        let container = Self.values(try Self.sideData(output, frame: false), keys)
        let sei = Self.values(try Self.sideData(output, frame: true), keys)
        #expect(container == wanted)
        #expect(sei == wanted)
    }
}

extension InterlacedAndHDRTests {
    /// Every frame's luma, row by row without padding, as the reader hands it out.
    static func readLuma(_ url: URL, deinterlaces: Bool) async throws -> [Data] {
        let asset = Asset(url: url)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                                outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p, deinterlaces: deinterlaces)))
        try reader.add(output)
        try reader.startReading()
        var frames: [Data] = []
        while let sample = try output.copyNextSampleBuffer() {
            let picture = try #require(sample.imageBuffer)
            frames.append(try picture.withUnsafePlanes { planes in
                var luma = Data(capacity: picture.width * picture.height)
                for row in 0..<picture.height {
                    luma.append(UnsafeRawBufferPointer(start: planes[0].baseAddress + row * planes[0].bytesPerRow, count: picture.width)
                        .bindMemory(to: UInt8.self))
                }
                return luma
            })
        }
        return frames
    }

    /// Every frame's luma from ffmpeg's own decode, through `filter` when given.
    static func ffmpegLuma(_ url: URL, filter: String?, width: Int, height: Int) throws -> [Data] {
        let ffmpeg = try #require(which("ffmpeg"))
        let raw = try run(ffmpeg, ["-v", "error", "-i", url.path] + (filter.map { ["-vf", $0] } ?? []) + ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]).stdout
        let frameSize = width * height * 3 / 2
        return stride(from: 0, to: raw.count - frameSize + 1, by: frameSize).map { raw.subdata(in: $0..<($0 + width * height)) }
    }

    @Test func readerDeinterlacesExactlyAsFFmpegsBwdifAndKeepsFieldsWhenAsked() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.interlacedClip(in: dir)
        let deinterlaced = try await Self.readLuma(source, deinterlaces: true)
        let woven = try await Self.readLuma(source, deinterlaces: false)
        let bwdif = try Self.ffmpegLuma(source, filter: "bwdif=mode=send_frame:parity=auto:deint=interlaced", width: 720, height: 576)
        let decoded = try Self.ffmpegLuma(source, filter: nil, width: 720, height: 576)
        #expect(deinterlaced.count == 50 && woven.count == 50 && bwdif.count == 50 && decoded.count == 50)
        #expect(deinterlaced == bwdif, "bit-exact with ffmpeg's bwdif")
        #expect(woven == decoded, "fields kept woven, as decoded")
        #expect(deinterlaced != woven)
    }
}

extension InterlacedAndHDRTests {
    @Test func pqIntoEightBitH264IsToneMappedAndTaggedBT709() async throws {
        let source = try TestFiles.requireSharedMedia().appendingPathComponent("av1_main10_hdr10_1080p60_aac.mp4")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("sdr.mp4")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: "640x480"))
        // At the preset's table rate: a small clip capped at its own rate would measure the
        // encoder's loss, not the tone mapping.
        session.capsBitRatesAtSource = false
        _ = try await session.export(to: output, as: .mp4)
        let tags = try Self.probe(output, "pix_fmt,color_range,color_space,color_transfer,color_primaries")
        #expect(tags == "yuv420p,tv,bt709,bt709,bt709", "\(tags)")
        #expect(!(try Self.sideData(output, frame: false)).contains("Mastering"), "no HDR metadata on SDR output")
        let size = try Self.probe(output, "width,height").split(separator: ",")
        let scale = "scale=\(size[0]):\(size[1]):flags=bicubic"
        let mapped = try await Self.psnr(output, against: source, reference: "\(Self.toneMap),\(scale)")
        let unmapped = try await Self.psnr(output, against: source, reference: "\(scale),format=yuv420p")
        // Measured: luma 49.4 dB against ffmpeg's tone mapping, 26.7 dB against none.
        print("PQ → H.264 SDR \(size[0])x\(size[1]): PSNR against ffmpeg's tone mapping \(mapped), against none \(unmapped)")
        #expect(mapped["y"] ?? 0 >= 38, "against ffmpeg's tone mapping: \(mapped)")
        #expect((mapped["y"] ?? 0) - (unmapped["y"] ?? 0) >= 6, "tone-mapped \(mapped), untouched \(unmapped)")
    }
}

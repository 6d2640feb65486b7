import FFmpegSupport
import Foundation
import Testing
import VATestSupport
import HardwareAcceleration

/// FFmpegSupport's decoder decodes into VA surfaces on SoftVA: SoftVA's own counters say how
/// many pictures it decoded and what crossed to host memory, and the pictures match ffmpeg's
/// software decode of the same file.
@Suite struct HardwareDecodeTests {
    /// Row widths in bytes of each plane of a `width`-wide picture in `format`, nil for a
    /// format this test does not lay out.
    static func rowBytes(_ format: PixelFormatID, width w: Int) -> [Int]? {
        switch format.name {
        case "nv12": [w, w]
        case "yuv420p", "yuvj420p", "yuv422p", "yuvj422p": [w, (w + 1) / 2, (w + 1) / 2]
        default: nil
        }
    }

    /// The visible rows of every plane of a host frame, packed as ffmpeg's rawvideo writes them.
    static func packed(_ frame: Frame) throws -> [UInt8] {
        let format = frame.pixelFormat
        let rows = try #require(rowBytes(format, width: frame.width), "no layout for \(format)")
        var bytes: [UInt8] = []
        for (plane, width) in rows.enumerated() {
            let base = try #require(frame.baseAddress(plane: plane)).assumingMemoryBound(to: UInt8.self)
            let height = plane == 0 ? frame.height : (frame.height + (1 << format.chromaHeightShift) - 1) >> format.chromaHeightShift
            for y in 0..<height {
                bytes.append(contentsOf: UnsafeBufferPointer(start: base + y * frame.bytesPerRow(plane: plane), count: width))
            }
        }
        return bytes
    }

    @Test func decoderOutputsSurfacesThatMatchFFmpegsSoftwareDecode() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let counters = tmp.file("counters.txt")
        let (surfaces, pictures, transferred) = try env.withProcessEnvironment(SoftVAOptions(countersPath: counters)) {
            () throws -> (Int, [Frame], (count: Int, bytes: Int)) in
            let device = try VADevice(env.display.name).hardware
            let demuxer = try Demuxer(path: Fixtures.kodakAVI)
            let stream = try #require(demuxer.streams.first { $0.kind == .video })
            let decoder = try Decoder(parameters: try demuxer.codecParameters(ofStream: stream.index), timeBase: stream.timeBase,
                                      hardware: device, extraHardwareFrames: 4)
            let before = HostTransferCounter.totals
            var surfaces = 0
            var pictures: [Frame] = []
            let packet = Packet()
            func drain() throws {
                while case .frame(let frame) = try decoder.receiveFrame() {
                    if frame.pixelFormat == .vaapi { surfaces += 1 }
                    // Each picture is copied to host memory once, here, to compare it.
                    pictures.append(frame.pixelFormat == .vaapi ? try frame.transferToHost() : frame)
                }
            }
            while try demuxer.readPacket(into: packet) == .packet {
                guard packet.streamIndex == stream.index else { continue }
                _ = try decoder.send(packet)
                try drain()
            }
            try decoder.sendEndOfStream()
            try drain()
            #expect(decoder.isDecodingToSurfaces)
            let after = HostTransferCounter.totals
            return (surfaces, pictures, (after.count - before.count, after.bytes - before.bytes))
        }
        let frames = Fixtures.kodakAVIFrames
        try #require(pictures.count == frames)
        #expect(surfaces == frames, "every frame came out of the decoder in a VA surface")
        #expect(transferred.count == frames, "one explicit transfer per frame, \(transferred.count) counted")

        // SoftVA's view: it decoded every picture, and the only images that crossed to host
        // memory are the explicit transfers above (decoding itself copies nothing).
        let driver = try SoftVACounters(path: counters)
        print("softva: decode counters \(driver.values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
        print("softva: our transfers \(transferred.count) of \(transferred.bytes) bytes; host format \(pictures[0].pixelFormat)")
        #expect(driver["decodes"] == UInt64(frames))
        #expect(driver["failed_operations"] == 0)
        #expect(driver["get_image_calls"] + driver["derived_images_mapped"] == UInt64(frames),
                "one image read per transfer: \(driver["get_image_calls"]) get, \(driver["derived_images_mapped"]) derived maps")
        #expect(driver["put_image_calls"] == 0, "nothing uploaded")
        // Measured: 10 reads of 153,600 bytes (320x240 4:2:2), the same bytes our counter counted.
        #expect(driver.hostTransferBytes == UInt64(frames * 320 * 240 * 2), "\(driver.hostTransferBytes) bytes crossed")
        #expect(transferred.bytes == Int(driver.hostTransferBytes), "our count \(transferred.bytes) bytes")

        // Pixels: ffmpeg's software MJPEG decode of the same file. SoftVA's 4:2:2 surfaces read
        // back as yuv422p, the layout of the decoder's own yuvj422p (full range, as the JPEGs
        // are): compared unconverted, since a conversion to yuv422p would also squeeze the range.
        let format = pictures[0].pixelFormat
        let name = try #require(format.name)
        #expect(name == "yuv422p", "SoftVA's 4:2:2 JPEG surfaces read back as yuv422p, not \(name)")
        #expect(pictures.allSatisfy { $0.width == 320 && $0.height == 240 && $0.pixelFormat == format })
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-nostdin", "-i", Fixtures.kodakAVI,
                                      "-pix_fmt", name == "yuv422p" ? "yuvj422p" : name, "-f", "rawvideo", "-y", tmp.file("ffmpeg.raw")])
        let oracle = try readBytes(tmp.file("ffmpeg.raw"))
        let frameBytes = try Self.packed(pictures[0]).count
        try #require(oracle.count == frames * frameBytes, "ffmpeg wrote \(oracle.count) bytes for \(frames) \(name) frames of \(frameBytes)")
        let lumaBytes = 320 * 240
        var worstLuma = Double.infinity, worstChroma = Double.infinity, worstSample = 0, worstMean = 0.0
        for (index, picture) in pictures.enumerated() {
            let ours = try Self.packed(picture)
            let theirs = Array(oracle[(index * frameBytes)..<((index + 1) * frameBytes)])
            let luma = psnr(Array(ours[..<lumaBytes]), Array(theirs[..<lumaBytes]))
            let chroma = psnr(Array(ours[lumaBytes...]), Array(theirs[lumaBytes...]))
            let difference = SampleDifference(ours, theirs)
            print("softva: decoded frame \(index) vs ffmpeg's software decode (\(name)): luma \(luma) dB, chroma \(chroma) dB, \(difference)")
            worstLuma = min(worstLuma, luma)
            worstChroma = min(worstChroma, chroma)
            worstSample = max(worstSample, difference.maximum)
            worstMean = max(worstMean, difference.mean)
        }
        // libjpeg-turbo's IDCT (SoftVA) and libavcodec's round a few samples apart. Measured over
        // the 10 frames: luma 65.04–65.48 dB, chroma 63.76–65.02 dB, no sample off by more than 1,
        // mean difference 0.020–0.024. A frame repeated, shifted, or range-converted is below 30 dB.
        #expect(worstSample <= 1, "largest sample difference \(worstSample)")
        #expect(worstMean <= 0.03, "largest mean difference \(worstMean)")
        #expect(worstLuma >= 64.5, "worst luma PSNR \(worstLuma) dB")
        #expect(worstChroma >= 63.5, "worst chroma PSNR \(worstChroma) dB")
    }

    /// H.264 with B-frames (decode order differs from display order): every picture comes out of
    /// FFmpegSupport's decoder in a VA surface, in display order, equal to ffmpeg's software decode.
    @Test func h264WithBFramesDecodesToSurfacesInDisplayOrder() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let input = tmp.file("h264.mp4")
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                      "-t", "1", "-c:v", "libx264", "-profile:v", "high", "-bf", "3", "-pix_fmt", "yuv420p", "-y", input])
        let counters = tmp.file("counters.txt")
        let pictures = try env.withProcessEnvironment(SoftVAOptions(countersPath: counters)) { () throws -> [Frame] in
            let device = try VADevice(env.display.name).hardware
            let demuxer = try Demuxer(path: input)
            let stream = try #require(demuxer.streams.first { $0.kind == .video })
            let decoder = try Decoder(parameters: try demuxer.codecParameters(ofStream: stream.index), timeBase: stream.timeBase,
                                      hardware: device, extraHardwareFrames: 4)
            var pictures: [Frame] = []
            let packet = Packet()
            func drain() throws {
                while case .frame(let frame) = try decoder.receiveFrame() {
                    #expect(frame.pixelFormat == .vaapi, "a picture came out in host memory")
                    pictures.append(try frame.transferToHost())
                }
            }
            while try demuxer.readPacket(into: packet) == .packet {
                guard packet.streamIndex == stream.index else { continue }
                _ = try decoder.send(packet)
                try drain()
            }
            try decoder.sendEndOfStream()
            try drain()
            #expect(decoder.isDecodingToSurfaces)
            return pictures
        }
        try #require(pictures.count == 30)
        let c = try SoftVACounters(path: counters)
        #expect(c["h264_decodes"] == 30 && c["failed_operations"] == 0)
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-i", input, "-pix_fmt", "nv12", "-f", "rawvideo",
                                      "-y", tmp.file("sw.nv12")])
        let oracle = try readBytes(tmp.file("sw.nv12"))
        let frameBytes = 320 * 240 * 3 / 2
        try #require(oracle.count == 30 * frameBytes)
        for (index, picture) in pictures.enumerated() {
            #expect(picture.width == 320 && picture.height == 240 && picture.pixelFormat.name == "nv12")
            var ours: [UInt8] = []
            for plane in 0..<2 {
                let base = try #require(picture.baseAddress(plane: plane)).assumingMemoryBound(to: UInt8.self)
                for y in 0..<(plane == 0 ? 240 : 120) {
                    ours.append(contentsOf: UnsafeBufferPointer(start: base + y * picture.bytesPerRow(plane: plane), count: 320))
                }
            }
            #expect(ours == Array(oracle[(index * frameBytes)..<((index + 1) * frameBytes)]), "picture \(index) differs")
        }
    }
}

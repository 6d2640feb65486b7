import Foundation
import Testing
@testable import VAFoundation
import FFmpegSupport

/// ffprobe is the oracle for what the writer produced; the tests that need it are skipped without it.
let ffprobePath = which("ffprobe")
let ffmpegPath = which("ffmpeg")

@Suite struct AssetWriterTests {
    @Test(.disabled(if: ffprobePath == nil, "ffprobe is not installed"),
          arguments: [
            (VideoCodec.h264, FileType.mp4, 320, 240, 30, "h264"),
            (VideoCodec.hevc, FileType.mp4, 320, 240, 30, "hevc"),
            (VideoCodec.av1, FileType.mp4, 160, 96, 8, "av1"),
            (VideoCodec.vp9, FileType.webm, 320, 240, 30, "vp9"),
          ])
    func encodesGeneratedPattern(codec: VideoCodec, fileType: FileType, width: Int, height: Int, frames: Int, expected: String) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("pattern.\(fileType.fileExtension)")
        let settings = VideoSettings(codec: codec, width: width, height: height, quality: 0.5, expectedSourceFrameRate: 30)
        try await WriterTestSupport.writePattern(to: url, fileType: fileType, settings: settings, frames: frames,
                                                 sourceWidth: width, sourceHeight: height)
        let stream = try WriterTestSupport.probeStream(url, "v:0")
        #expect(stream["codec_name"] as? String == expected)
        #expect(stream["width"] as? Int == width)
        #expect(stream["height"] as? Int == height)
        #expect(stream["nb_read_frames"] as? String == String(frames))
        if codec == .hevc { #expect(stream["codec_tag_string"] as? String == "hvc1") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["pattern.\(fileType.fileExtension)"])
    }

    @Test(.disabled(if: ffprobePath == nil, "ffprobe is not installed"),
          arguments: [
            (AudioCodec.aac, FileType.m4a, "aac"), (AudioCodec.aac, FileType.mp4, "aac"),
            (AudioCodec.opus, FileType.webm, "opus"), (AudioCodec.opus, FileType.mkv, "opus"),
          ])
    func encodesSine(codec: AudioCodec, fileType: FileType, expected: String) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("sine.\(fileType.fileExtension)")
        let writer = try AssetWriter(url: url, fileType: fileType)
        let input = try AssetWriterInput(audioSettings: AudioSettings(codec: codec, sampleRate: 48000, channelCount: 2, bitRate: 96000))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        // 1.5 s of a 440 Hz sine at 44.1 kHz mono s16, in uneven blocks, so the writer resamples and re-chunks.
        var written = 0
        let total = 66150
        while written < total {
            let count = min(777, total - written)
            let buffer = try WriterTestSupport.sine(sampleCount: count, offset: written, sampleRate: 44100)
            try await input.append(SampleBuffer(audioBuffer: buffer, presentationTimeStamp: MediaTime(value: Int64(written), timescale: 44100)))
            written += count
        }
        try await writer.finishWriting()
        #expect(writer.status == .completed)
        let stream = try WriterTestSupport.probeStream(url, "a:0")
        #expect(stream["codec_name"] as? String == expected)
        #expect(stream["sample_rate"] as? String == "48000")
        #expect(stream["channels"] as? Int == 2)
        let duration = try WriterTestSupport.probeDuration(url)
        #expect(abs(duration - 1.5) < 0.025, "duration \(duration)")
    }

    @Test(.disabled(if: ffprobePath == nil, "ffprobe is not installed"))
    func passthroughKeepsPacketsBitIdentical() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = TestFiles.fixture("h264_aac_iphone6_rot90_gps_metadata.mov")
        let url = dir.appendingPathComponent("copy.mp4")
        let demuxer = try Demuxer(path: source.path)
        let streams = demuxer.streams.filter { $0.kind == .video || $0.kind == .audio }
        let writer = try AssetWriter(url: url, fileType: .mp4)
        var inputs: [Int: AssetWriterInput] = [:]
        var parameters: [Int: CodecParameters] = [:]
        for stream in streams {
            let input = try AssetWriterInput(mediaType: stream.kind == .video ? .video : .audio, outputSettings: nil)
            try writer.add(input)
            inputs[stream.index] = input
            parameters[stream.index] = try demuxer.codecParameters(ofStream: stream.index)
        }
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        while true {
            let packet = Packet()
            guard try demuxer.readPacket(into: packet) == .packet else { break }
            guard let input = inputs[packet.streamIndex] else { continue }
            let info = demuxer.streams[packet.streamIndex]
            let scale = info.timeBase.denominator
            #expect(info.timeBase.numerator == 1)
            func time(_ v: Int64?) -> MediaTime { v.map { MediaTime(value: $0, timescale: scale) } ?? .invalid }
            var attachments = SampleAttachments()
            attachments.isSync = packet.isKeyframe
            let sample = SampleBuffer(content: .compressed, packet: packet, codecParameters: parameters[packet.streamIndex],
                                      presentationTimeStamp: time(packet.pts), decodeTimeStamp: time(packet.dts),
                                      duration: time(packet.duration),
                                      formatDescription: FormatDescription(mediaType: info.kind == .video ? .video : .audio, codec: info.codecName),
                                      attachments: attachments)
            try await input.append(sample)
        }
        try await writer.finishWriting()
        for (kind, sourceSpecifier) in [("v:0", "v:0"), ("a:0", "a:0")] {
            let original = try WriterTestSupport.packetHashes(source, sourceSpecifier)
            let copied = try WriterTestSupport.packetHashes(url, kind)
            #expect(!original.isEmpty)
            #expect(copied == original, "stream \(kind): \(copied.count) packets vs \(original.count)")
        }
    }

    @Test(.disabled(if: ffprobePath == nil, "ffprobe is not installed"))
    func transformBecomesDisplayMatrix() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("rotated.mov")
        let settings = VideoSettings(codec: .h264, width: 160, height: 96)
        try await WriterTestSupport.writePattern(to: url, fileType: .mov, settings: settings, frames: 5, sourceWidth: 160, sourceHeight: 96) { input in
            input.transform = VideoTransform(rotationDegrees: 90, size: Size(width: 160, height: 96))
            input.languageCode = "fra"
        }
        let stream = try WriterTestSupport.probeStream(url, "v:0")
        let sideData = stream["side_data_list"] as? [[String: Any]] ?? []
        #expect(sideData.compactMap { $0["rotation"] as? Int }.first == -90)
        #expect((stream["tags"] as? [String: Any])?["language"] as? String == "fra")
        let track = try #require(try await Asset(url: url).loadTracks(withMediaType: .video).first)
        #expect(track.preferredTransform.rotationDegrees == 90)
    }

    @Test func containerMetadataIsWritten() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("tagged.mp4")
        try await WriterTestSupport.writePattern(to: url, fileType: .mp4, settings: VideoSettings(codec: .h264, width: 64, height: 64),
                                                 frames: 3, sourceWidth: 64, sourceHeight: 64, writerSetup: { writer in
            writer.metadata = [MetadataItem(key: "title", value: "Test pattern"), MetadataItem(key: "artist", value: "VAFoundation")]
        })
        // Read back by ffprobe (format_tags), not by our own Asset.
        let tags = try WriterTestSupport.probeFile(url).format["tags"] as? [String: Any] ?? [:]
        #expect(tags["title"] as? String == "Test pattern", "\(tags)")
        #expect(tags["artist"] as? String == "VAFoundation", "\(tags)")
    }
}

/// Pattern, sine and ffprobe helpers for the writer tests.
enum WriterTestSupport {
    /// A yuv420p test picture: a diagonal gradient moving with `index`, plus pseudo-random noise.
    static func pattern(width: Int, height: Int, index: Int, into buffer: PixelBuffer? = nil) throws -> PixelBuffer {
        let picture = try buffer ?? PixelBuffer(width: width, height: height, pixelFormat: .yuv420p)
        var seed = UInt32(truncatingIfNeeded: index &* 2_654_435_761 &+ 1)
        try picture.withUnsafeMutablePlanes { planes in
            for (p, plane) in planes.enumerated() {
                let rows = plane.height
                let columns = p == 0 ? width : (width + 1) / 2
                for y in 0..<rows {
                    let row = plane.baseAddress.advanced(by: y * plane.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    for x in 0..<columns {
                        seed = seed &* 1_664_525 &+ 1_013_904_223
                        let noise = Int(seed >> 28)
                        let value = p == 0 ? 60 + ((x + y + index * 4) % 160) + noise : 128 + ((x * (p == 1 ? 1 : -1) + index) % 40) - 20
                        row[x] = UInt8(clamping: value)
                    }
                }
            }
        }
        return picture
    }

    /// A mono s16 440 Hz sine block starting at sample `offset`.
    static func sine(sampleCount: Int, offset: Int, sampleRate: Int) throws -> AudioBuffer {
        let buffer = try AudioBuffer(sampleCount: sampleCount, format: .int16, sampleRate: sampleRate, channelCount: 1)
        try buffer.withUnsafeMutableChannels { channels in
            let samples = channels[0].bindMemory(to: Int16.self)
            for i in 0..<sampleCount {
                samples[i] = Int16(12000 * sin(2 * Double.pi * 440 * Double(offset + i) / Double(sampleRate)))
            }
        }
        return buffer
    }

    /// Writes `frames` pattern pictures at 30 fps through a pixel buffer adaptor and finishes.
    static func writePattern(to url: URL, fileType: FileType, settings: VideoSettings, frames: Int,
                             sourceWidth: Int, sourceHeight: Int, sourceFormat: PixelFormat = .yuv420p,
                             inputSetup: (AssetWriterInput) -> Void = { _ in },
                             writerSetup: (AssetWriter) -> Void = { _ in }) async throws {
        let writer = try AssetWriter(url: url, fileType: fileType)
        writerSetup(writer)
        let input = try AssetWriterInput(videoSettings: settings)
        inputSetup(input)
        let adaptor = try AssetWriterInputPixelBufferAdaptor(
            assetWriterInput: input,
            sourcePixelBufferAttributes: PixelBufferAttributes(pixelFormat: sourceFormat, width: sourceWidth, height: sourceHeight))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        let pool = try #require(adaptor.pixelBufferPool)
        for i in 0..<frames {
            let buffer = try await pool.waitForPixelBuffer()
            if sourceFormat == .yuv420p { _ = try pattern(width: sourceWidth, height: sourceHeight, index: i, into: buffer) }
            try await adaptor.append(buffer, withPresentationTime: MediaTime(value: Int64(i), timescale: 30))
        }
        input.markAsFinished()
        try await writer.finishWriting()
        #expect(writer.status == .completed)
    }

    static func probe(_ url: URL, _ arguments: [String]) throws -> [String: Any] {
        let result = try run(ffprobePath ?? "/usr/bin/ffprobe", ["-v", "error", "-of", "json"] + arguments + [url.path])
        #expect(result.status == 0)
        return try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] ?? [:]
    }

    /// ffprobe's description of one stream, frames counted by decoding.
    static func probeStream(_ url: URL, _ specifier: String) throws -> [String: Any] {
        let json = try probe(url, ["-count_frames", "-select_streams", specifier, "-show_streams"])
        return (json["streams"] as? [[String: Any]])?.first ?? [:]
    }

    /// ffprobe's `-show_streams -show_format -of json` of a file: its streams and its format.
    static func probeFile(_ url: URL) throws -> (streams: [[String: Any]], format: [String: Any]) {
        let json = try probe(url, ["-show_streams", "-show_format"])
        return (json["streams"] as? [[String: Any]] ?? [], json["format"] as? [String: Any] ?? [:])
    }

    /// The rotation ffprobe reports for a video stream: its display-matrix side data (ffprobe's sign,
    /// -90 for a picture shown turned 90° clockwise), else the legacy `rotate` tag (negated to the
    /// same sign); nil when it shows neither.
    static func displayRotation(_ stream: [String: Any]) -> Int? {
        for side in stream["side_data_list"] as? [[String: Any]] ?? [] {
            if let rotation = side["rotation"] as? Int { return rotation }
        }
        if let tag = (stream["tags"] as? [String: Any])?["rotate"] as? String, let degrees = Int(tag) { return -degrees }
        return nil
    }

    static func probeDuration(_ url: URL) throws -> Double {
        let json = try probe(url, ["-show_format"])
        return Double((json["format"] as? [String: Any])?["duration"] as? String ?? "") ?? -1
    }

    /// MD5 of every packet of one stream, in file order.
    static func packetHashes(_ url: URL, _ specifier: String) throws -> [String] {
        let json = try probe(url, ["-select_streams", specifier, "-show_packets", "-show_data_hash", "MD5", "-show_entries", "packet=data_hash"])
        return (json["packets"] as? [[String: Any]] ?? []).compactMap { $0["data_hash"] as? String }
    }

    /// The luma plane of the first picture, decoded by ffmpeg.
    static func firstLumaPlane(_ url: URL, width: Int, height: Int) throws -> [UInt8] {
        let result = try run(ffmpegPath ?? "/usr/bin/ffmpeg", ["-v", "error", "-i", url.path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        #expect(result.status == 0)
        #expect(result.stdout.count == width * height)
        return [UInt8](result.stdout)
    }

    /// The first compressed sample of the first `kind` stream of `url`, as a reader would vend it.
    static func firstCompressedSample(_ url: URL, kind: StreamInfo.Kind) throws -> SampleBuffer {
        let demuxer = try Demuxer(path: url.path)
        let info = try #require(demuxer.streams.first { $0.kind == kind })
        let parameters = try demuxer.codecParameters(ofStream: info.index)
        let packet = Packet()
        repeat {
            guard try demuxer.readPacket(into: packet) == .packet else { throw MediaError(.noTracks, "no packet") }
        } while packet.streamIndex != info.index
        let scale = info.timeBase.denominator
        return SampleBuffer(content: .compressed, packet: packet, codecParameters: parameters,
                            presentationTimeStamp: MediaTime(value: packet.pts ?? 0, timescale: scale),
                            decodeTimeStamp: MediaTime(value: packet.dts ?? 0, timescale: scale),
                            duration: MediaTime(value: packet.duration, timescale: scale),
                            formatDescription: FormatDescription(mediaType: kind == .video ? .video : .audio, codec: info.codecName),
                            attachments: SampleAttachments())
    }

    /// Top-level box types of an mp4/mov file, in order.
    static func topLevelBoxes(_ url: URL) throws -> [String] {
        let data = try Data(contentsOf: url)
        var boxes: [String] = []
        var offset = 0
        while offset + 8 <= data.count {
            var size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: data[offset + 4..<offset + 8], as: UTF8.self)
            if size == 1, offset + 16 <= data.count { size = data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
            if size == 0 { size = data.count - offset }
            guard size >= 8 else { break }
            boxes.append(type)
            offset += size
        }
        return boxes
    }
}

import BenchKit
import Foundation
import VAFoundation

/// A clip the bench makes itself with our AssetWriter: a panning test pattern with noise that
/// changes every frame (so encoders have real work: motion to search and detail to code) and a
/// stereo sine, at one of the standard sizes and rates.
struct SyntheticSource: Sendable, Hashable {
    let name: String
    let width: Int
    let height: Int
    let frameRate: Int

    static let all = [
        SyntheticSource(name: "360p30", width: 640, height: 360, frameRate: 30),
        SyntheticSource(name: "720p30", width: 1280, height: 720, frameRate: 30),
        SyntheticSource(name: "1080p30", width: 1920, height: 1080, frameRate: 30),
        SyntheticSource(name: "1080p60", width: 1920, height: 1080, frameRate: 60),
        SyntheticSource(name: "2160p30", width: 3840, height: 2160, frameRate: 30),
    ]

    /// The sources of a full run (the issue's matrix); `--quick` uses 360p30 alone.
    static let standard = ["720p30", "1080p30", "1080p60", "2160p30"]

    static func named(_ name: String) -> SyntheticSource? { all.first { $0.name == name.lowercased() } }

    /// The cached file for `codec` and `seconds` under `directory`: H.264 in mp4, MJPEG in mov.
    func url(in directory: URL, codec: VideoCodec, seconds: Double) -> URL {
        let type: FileType = codec == .mjpeg ? .mov : .mp4
        return directory.appendingPathComponent("synthetic-\(name)-\(codec.rawValue)-\(String(format: "%g", seconds))s.\(type.fileExtension)")
    }

    /// Writes the clip to `url` unless a readable one is already there (sources are cached across runs).
    func make(at url: URL, codec: VideoCodec, seconds: Double) async throws {
        if FileManager.default.fileExists(atPath: url.path) {
            let existing: MediaTime? = try? await Asset(url: url).load(.duration)
            if let existing, abs(existing.seconds - seconds) < 0.5 { return }
        }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let writer = try AssetWriter(url: url, fileType: codec == .mjpeg ? .mov : .mp4, overwritesExistingFile: true)
        // A generous bit rate: the source should look clean, so quality numbers measure the transcode.
        let settings = VideoSettings(codec: codec, width: width, height: height,
                                     averageBitRate: codec == .mjpeg ? nil : width * height * frameRate / 6,
                                     quality: codec == .mjpeg ? 0.9 : nil, maxKeyFrameIntervalDuration: 2,
                                     expectedSourceFrameRate: Double(frameRate))
        let video = try AssetWriterInput(videoSettings: settings)
        // Sources are not what is measured: encode them fast.
        video.expectsMediaDataInRealTime = true
        let audio = try AssetWriterInput(audioSettings: AudioSettings(codec: .aac, sampleRate: 48000, channelCount: 2, bitRate: 128_000))
        let adaptor = try AssetWriterInputPixelBufferAdaptor(assetWriterInput: video, sourcePixelBufferAttributes: PixelBufferAttributes(pixelFormat: .yuv420p))
        try writer.add(video)
        try writer.add(audio)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        guard let pool = adaptor.pixelBufferPool else { throw MediaError(.invalidState, "the writer vends no picture pool", path: url.path) }
        let pattern = TestPattern(width: width, height: height)
        let frames = Int((seconds * Double(frameRate)).rounded())
        let sampleRate = 48000
        var audioWritten = 0
        for index in 0..<frames {
            let picture = try await pool.waitForPixelBuffer()
            try pattern.draw(frame: index, into: picture)
            try await adaptor.append(picture, withPresentationTime: MediaTime(value: Int64(index), timescale: Int32(frameRate)))
            // Audio up to the end of this frame keeps the two inputs interleaved.
            let audioEnd = (index + 1) * sampleRate / frameRate
            while audioWritten < audioEnd {
                let count = min(1024, audioEnd - audioWritten)
                try await audio.append(SampleBuffer(audioBuffer: try Self.sine(sampleCount: count, offset: audioWritten, sampleRate: sampleRate),
                                                    presentationTimeStamp: MediaTime(value: Int64(audioWritten), timescale: Int32(sampleRate))))
                audioWritten += count
            }
        }
        video.markAsFinished()
        audio.markAsFinished()
        try await writer.finishWriting()
    }

    /// Interleaved s16 stereo: 440 Hz on the left, 660 Hz on the right.
    static func sine(sampleCount: Int, offset: Int, sampleRate: Int) throws -> AudioBuffer {
        let buffer = try AudioBuffer(sampleCount: sampleCount, format: .int16, sampleRate: sampleRate, channelCount: 2)
        try buffer.withUnsafeMutableChannels { channels in
            let samples = channels[0].bindMemory(to: Int16.self)
            for i in 0..<sampleCount {
                let t = Double(offset + i) / Double(sampleRate)
                samples[2 * i] = Int16(9000 * sin(2 * Double.pi * 440 * t))
                samples[2 * i + 1] = Int16(9000 * sin(2 * Double.pi * 660 * t))
            }
        }
        return buffer
    }
}

/// Pre-drawn noisy canvases larger than the picture; each frame copies a window of one of them,
/// moved a few pixels further, so drawing a 4K frame is a few row copies (fast even in debug builds).
struct TestPattern: Sendable {
    let width: Int
    let height: Int
    /// How far the window pans before wrapping, in luma pixels (even).
    static let panRange = 128
    /// Canvases with different noise, used in turn: the noise changes from frame to frame.
    static let variants = 3
    private let canvases: [[[UInt8]]]

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        var seed: UInt32 = 0x9E37_79B9
        let range = Self.panRange
        canvases = (0..<Self.variants).map { _ in
            (0..<3).map { plane -> [UInt8] in
                let w = plane == 0 ? width + range : (width + 1) / 2 + range / 2
                let h = plane == 0 ? height + range : (height + 1) / 2 + range / 2
                var bytes = [UInt8](repeating: 0, count: w * h)
                for y in 0..<h {
                    for x in 0..<w {
                        seed = seed &* 1_664_525 &+ 1_013_904_223
                        let noise = Int(seed >> 28)
                        let value: Int
                        if plane == 0 {
                            let checker = ((x / 48 + y / 48) % 2 == 0) ? 28 : 0
                            value = 40 + (x + 2 * y) % 150 + checker + noise
                        } else {
                            value = 128 + ((plane == 1 ? x : y) % 64) - 32 + noise / 4
                        }
                        bytes[y * w + x] = UInt8(clamping: value)
                    }
                }
                return bytes
            }
        }
    }

    /// Copies frame `index`'s window into `picture` (yuv420p, `width`×`height`).
    func draw(frame index: Int, into picture: PixelBuffer) throws {
        let canvas = canvases[index % Self.variants]
        let range = Self.panRange
        let dx = (index * 4) % range & ~1, dy = (index * 2) % range & ~1
        try picture.withUnsafeMutablePlanes { planes in
            for (p, plane) in planes.enumerated() {
                let canvasWidth = p == 0 ? width + range : (width + 1) / 2 + range / 2
                let columns = p == 0 ? width : (width + 1) / 2
                let (ox, oy) = p == 0 ? (dx, dy) : (dx / 2, dy / 2)
                canvas[p].withUnsafeBufferPointer { source in
                    for row in 0..<plane.height {
                        let from = source.baseAddress! + (row + oy) * canvasWidth + ox
                        (plane.baseAddress + row * plane.bytesPerRow).copyMemory(from: from, byteCount: columns)
                    }
                }
            }
        }
    }
}

extension SourceInfo {
    /// What the bench needs to know about a clip: its video size, rate, length and frame count.
    static func load(id: String, url: URL, synthetic: Bool) async throws -> SourceInfo {
        let asset = Asset(url: url)
        let (duration, tracks) = try await asset.load(.duration, .tracks)
        guard let video = ExportSession.primaryVideoTrack(tracks) else {
            throw MediaError(.noTracks, "no video track to benchmark", path: url.path)
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
        return SourceInfo(id: id, path: url.path, synthetic: synthetic, videoCodec: video.formatDescription.codec,
                          width: Int(video.naturalSize.width), height: Int(video.naturalSize.height),
                          frameRate: Double(video.nominalFrameRate), seconds: duration.seconds, frames: video.sampleCount, bytes: bytes)
    }
}

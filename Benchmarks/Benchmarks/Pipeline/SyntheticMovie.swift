import Foundation
import Synchronization
import VAFoundation

/// The 1080p30 H.264 + AAC source of the pipeline benchmarks, written with our own
/// `AssetWriter`: a moving gradient with per-pixel noise (so the encoders have real work)
/// and a 440 Hz tone, 3 s long.
///
/// package-benchmark runs every benchmark in its own process, all started by one
/// BenchmarkTool process; the movie is written once per run into a directory named after
/// that parent (`$TMPDIR/vaf-benchmarks-<pid>`), in the setup of the first benchmark that needs
/// it, outside every measurement. Directories of runs whose tool has exited are removed then.
enum SyntheticMovie {
    static let width = 1920
    static let height = 1080
    static let frameRate = 30
    static let frameCount = 90
    static let sampleRate = 48000

    private static let prepared = Mutex<URL?>(nil)

    /// The movie's location, written first when this run has none yet.
    static func url() async throws -> URL {
        if let url = prepared.withLock({ $0 }) { return url }
        let directory = runDirectory()
        let url = directory.appendingPathComponent("source-1080p30-h264-aac.mp4")
        if !FileManager.default.fileExists(atPath: url.path) {
            removeStaleRunDirectories()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            // Written under another name and renamed, so an interrupted run leaves no half file.
            let partial = directory.appendingPathComponent("partial-\(getpid()).mp4")
            try await write(to: partial)
            try FileManager.default.moveItem(at: partial, to: url)
            // Give the writer's freed heap back, so this process's resident memory is not
            // inflated for the benchmark that generated the movie.
            trimHeap()
        }
        prepared.withLock { $0 = url }
        return url
    }

    /// glibc's `malloc_trim(0)`, looked up at run time (Swift's Glibc module leaves out malloc.h).
    private static func trimHeap() {
        #if os(Linux)
        typealias Trim = @convention(c) (Int) -> Int32
        if let program = dlopen(nil, RTLD_NOW), let symbol = dlsym(program, "malloc_trim") {
            _ = unsafeBitCast(symbol, to: Trim.self)(0)
        }
        #endif
    }

    /// A fresh output path in this run's directory, for the benchmarks that write.
    static func outputURL(_ name: String) -> URL {
        runDirectory().appendingPathComponent("\(getpid())-\(name)")
    }

    /// The directory shared by the benchmark processes of this run.
    static func runDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("vaf-benchmarks-\(getppid())")
    }

    /// Removes the directories of earlier runs whose BenchmarkTool process is gone.
    private static func removeStaleRunDirectories() {
        let temporary = FileManager.default.temporaryDirectory
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: temporary.path) else { return }
        for name in names where name.hasPrefix("vaf-benchmarks-") {
            guard let pid = pid_t(name.dropFirst("vaf-benchmarks-".count)), pid != getppid() else { continue }
            if kill(pid, 0) != 0, errno == ESRCH {
                try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
            }
        }
    }

    /// Writes the movie: video and audio appended from two tasks, so the writer can interleave.
    static func write(to url: URL) async throws {
        let writer = try AssetWriter(url: url, fileType: .mp4, overwritesExistingFile: true)
        let video = try AssetWriterInput(videoSettings: VideoSettings(
            codec: .h264, width: width, height: height, quality: 0.6, maxKeyFrameInterval: frameRate,
            expectedSourceFrameRate: Double(frameRate)))
        // "Real time" picks x264's veryfast preset: the source only has to exist, not be small.
        video.expectsMediaDataInRealTime = true
        let adaptor = try AssetWriterInputPixelBufferAdaptor(
            assetWriterInput: video,
            sourcePixelBufferAttributes: PixelBufferAttributes(pixelFormat: .yuv420p, width: width, height: height))
        let audio = try AssetWriterInput(audioSettings: AudioSettings(codec: .aac, sampleRate: sampleRate, channelCount: 2, bitRate: 128_000))
        try writer.add(video)
        try writer.add(audio)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        guard let pool = adaptor.pixelBufferPool else { throw MediaError(.invalidState, "the adaptor has no pool") }

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for index in 0..<frameCount {
                    let picture = try await pool.waitForPixelBuffer()
                    try drawPattern(into: picture, index: index)
                    try await adaptor.append(picture, withPresentationTime: MediaTime(value: Int64(index), timescale: Int32(frameRate)))
                }
                video.markAsFinished()
            }
            group.addTask {
                let total = sampleRate * frameCount / frameRate
                var written = 0
                while written < total {
                    let count = min(1024, total - written)
                    let buffer = try tone(sampleCount: count, offset: written)
                    try await audio.append(SampleBuffer(audioBuffer: buffer, presentationTimeStamp: MediaTime(value: Int64(written), timescale: Int32(sampleRate))))
                    written += count
                }
                audio.markAsFinished()
            }
            try await group.waitForAll()
        }
        try await writer.finishWriting()
    }

    /// A yuv420p picture: a diagonal gradient moving with `index`, plus pseudo-random noise
    /// (the generator of the writer tests, `WriterTestSupport.pattern`).
    static func drawPattern(into picture: PixelBuffer, index: Int) throws {
        let width = picture.width
        var seed = UInt32(truncatingIfNeeded: index &* 2_654_435_761 &+ 1)
        try picture.withUnsafeMutablePlanes { planes in
            for (p, plane) in planes.enumerated() {
                let columns = p == 0 ? width : (width + 1) / 2
                for y in 0..<plane.height {
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
    }

    /// A stereo float 440 Hz tone block starting at sample `offset`.
    static func tone(sampleCount: Int, offset: Int) throws -> AudioBuffer {
        let buffer = try AudioBuffer(sampleCount: sampleCount, format: .float32Planar, sampleRate: sampleRate, channelCount: 2)
        try buffer.withUnsafeMutableChannels { channels in
            for channel in channels {
                let samples = channel.bindMemory(to: Float.self)
                for i in 0..<sampleCount {
                    samples[i] = Float(0.3 * sin(2 * Double.pi * 440 * Double(offset + i) / Double(sampleRate)))
                }
            }
        }
        return buffer
    }
}

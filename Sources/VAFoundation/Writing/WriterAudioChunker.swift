import FFmpegSupport

/// A first-in first-out store of audio samples in one format, cut into frames of the size an
/// encoder needs (1024 for AAC, 960 for Opus). Confined to the writer's queue.
final class WriterAudioChunker {
    let format: SampleFormatID
    let sampleRate: Int
    let channelCount: Int
    let channelLayout: String?
    private var planes: [[UInt8]]
    private let bytesPerSample: Int
    /// Samples per channel held.
    private(set) var count = 0

    init(format: SampleFormatID, sampleRate: Int, channelCount: Int, channelLayout: String?) {
        self.format = format
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.channelLayout = channelLayout
        let planar = format.isPlanar
        planes = Array(repeating: [], count: planar ? channelCount : 1)
        bytesPerSample = format.bytesPerSample * (planar ? 1 : channelCount)
    }

    /// Appends `frame`'s samples (which must be in this format), skipping the first `skipping`.
    func append(_ frame: Frame, skipping: Int = 0) {
        let skip = min(max(0, skipping), frame.sampleCount)
        let take = frame.sampleCount - skip
        guard take > 0 else { return }
        for p in planes.indices {
            guard let base = frame.extendedData(plane: p) else { continue }
            let bytes = UnsafeRawBufferPointer(start: base + skip * bytesPerSample, count: take * bytesPerSample)
            planes[p].append(contentsOf: bytes)
        }
        count += take
    }

    /// Drops samples beyond the first `limit`.
    func truncate(to limit: Int) {
        guard limit < count else { return }
        let keep = max(0, limit)
        for p in planes.indices { planes[p].removeLast((count - keep) * bytesPerSample) }
        count = keep
    }

    /// A frame of the first `n` samples (n ≤ count), removed from the store.
    func take(_ n: Int) throws(FFmpegError) -> Frame {
        let frame = try Frame(sampleCount: n, sampleFormat: format, sampleRate: sampleRate,
                              channelCount: channelCount, channelLayout: channelLayout)
        let bytes = n * bytesPerSample
        for p in planes.indices {
            guard let destination = frame.extendedData(plane: p) else { continue }
            planes[p].withUnsafeBytes { destination.copyMemory(from: $0.baseAddress!, byteCount: bytes) }
            planes[p].removeFirst(bytes)
        }
        count -= n
        return frame
    }
}

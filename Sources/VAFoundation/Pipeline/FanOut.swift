/// One decoded track read once and handed to several exports (the renditions of a ladder):
/// every branch takes every sample, by reference, in order. The window bounds how far the
/// fastest branch may run ahead of the slowest, so a slow branch holds back the source instead
/// of growing memory, and a fast one waits only once it is a window ahead.
///
/// The source is read on its own output's stage thread (so its decoder stays confined to that
/// thread), one sample at a time, by whichever branch first needs a sample not yet read. A
/// branch that ends or fails lets go (`detach`), and never holds the others back.
final class FanOutSource: Sendable {
    private struct State: Sendable {
        /// Samples read and not yet taken by every branch; `window[0]` is sample `firstIndex`.
        var window: [SampleBuffer] = []
        var firstIndex = 0
        /// Each branch's next sample; nil once the branch has let go.
        var cursors: [Int?]
        /// A branch is reading the source's next sample.
        var reading = false
        var ended = false
        var failure: MediaError?

        /// Drops the samples every branch still attached has taken.
        mutating func trim() {
            let slowest = cursors.compactMap { $0 }.min() ?? (firstIndex + window.count)
            let taken = min(max(0, slowest - firstIndex), window.count)
            window.removeFirst(taken)
            firstIndex += taken
        }
    }

    /// The output read once for every branch, on its own stage thread.
    let source: AssetReaderOutput
    let capacity: Int
    /// The export's test seam, told of each sample read from the source.
    let probe: StageProbe?
    private let state: ConditionLocked<State>

    init(source: AssetReaderOutput, branches: Int, capacity: Int, probe: StageProbe? = nil) {
        self.source = source
        self.capacity = max(1, capacity)
        self.probe = probe
        state = ConditionLocked(State(cursors: Array(repeating: 0, count: branches)))
    }

    /// What a branch does next, decided under the lock.
    private enum Step { case take(SampleBuffer), end, read(index: Int, branches: Int) }

    /// Branch `branch`'s next sample: from the window, or read from the source when the
    /// branch is first to need it and the window has room; nil at the end or once detached.
    /// Blocks while another branch reads, or while this one is a window ahead of the slowest.
    func next(branch: Int) throws(MediaError) -> SampleBuffer? {
        while true {
            let capacity = self.capacity
            let step = try state.withLock(when: { s in
                guard let cursor = s.cursors[branch] else { return true }
                return cursor < s.firstIndex + s.window.count || s.ended || s.failure != nil
                    || (!s.reading && s.window.count < capacity)
            }) { s throws(MediaError) -> Step in
                guard let cursor = s.cursors[branch] else { return .end }
                if cursor < s.firstIndex + s.window.count {
                    s.cursors[branch] = cursor + 1
                    return .take(s.window[cursor - s.firstIndex])
                }
                if let failure = s.failure { throw failure }
                if s.ended { return .end }
                s.reading = true
                return .read(index: s.firstIndex + s.window.count, branches: s.cursors.count)
            }
            switch step {
            case .take(let sample):
                // The slowest branch moving on frees room for a branch waiting to read.
                state.withLockWakingWaiters { $0.trim() }
                return sample
            case .end:
                return nil
            case .read(let index, let branches):
                let result = Result { () throws(MediaError) -> SampleBuffer? in
                    let sample = try self.readSource()
                    if sample != nil { try self.probe?.step(.sharedSampleRead(self.source.mediaType, index: index, branches: branches)) }
                    return sample
                }
                state.withLockWakingWaiters { s in
                    s.reading = false
                    switch result {
                    case .success(let sample?): s.window.append(sample)
                    case .success(nil): s.ended = true
                    case .failure(let error): s.failure = error
                    }
                    s.trim()
                }
            }
        }
    }

    /// The source's next sample, read on its own thread.
    private func readSource() throws(MediaError) -> SampleBuffer? {
        do { return try source.nextOnOwnThread() } catch let error as MediaError { throw error } catch {
            throw MediaError(.decodeFailed, "\(error)", path: source.reader?.asset.displayPath)
        }
    }

    /// Branch `branch` needs no more samples: it no longer holds the others back. Idempotent.
    func detach(branch: Int) {
        state.withLockWakingWaiters { s in
            s.cursors[branch] = nil
            s.trim()
        }
    }
}

/// One branch of a `FanOutSource`, read like any output of the branch's own reader: the
/// branch's export takes its samples from the shared decode instead of a decoder of its own.
// @unchecked: open base class; its own state is the immutable source and branch number.
final class FanOutBranchOutput: AssetReaderOutput, @unchecked Sendable {
    let fanOut: FanOutSource
    let branch: Int

    init(_ fanOut: FanOutSource, branch: Int) {
        self.fanOut = fanOut
        self.branch = branch
        super.init(mediaType: fanOut.source.mediaType)
    }

    /// The shared source reads the file: this output needs no demuxer of its own.
    override var readsFile: Bool { false }

    override func prepare(composition tracks: [CompositionTrack], timeRange: MediaTimeRange) throws(MediaError) {}

    override func produceNext() throws(MediaError) -> SampleBuffer? { try fanOut.next(branch: branch) }

    override func dropPipeline() { fanOut.detach(branch: branch) }

    override func readingCancelled() { fanOut.detach(branch: branch) }
}

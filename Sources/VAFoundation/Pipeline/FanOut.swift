/// One decoded track read once and handed to several exports (the renditions of a ladder):
/// every branch takes every sample, by reference, in order. The window bounds how far the
/// fastest branch may run ahead of the slowest, so a slow branch holds back the source instead
/// of growing memory, and a fast one waits only once it is a window ahead.
///
/// The source is read on its own output's stage thread (so its decoder stays confined to that
/// thread), one sample at a time, by whichever branch first needs a sample not yet read. A
/// branch that ends or fails lets go (`detach`), and never holds the others back.
///
/// A branch read by an export's edge never waits inside `next`: the edge asks `waitToRead`
/// first, and is parked by the graph's scheduler until the fan-out wakes it (a sample read by
/// another branch, room in the window, the end). Other consumers block in `next`.
final class FanOutSource: Sendable {
    private struct State: Sendable {
        /// Samples read and not yet taken by every branch; `window[0]` is sample `firstIndex`.
        var window: [SampleBuffer] = []
        var firstIndex = 0
        /// Each branch's next sample; nil once the branch has let go.
        var cursors: [Int?]
        /// A branch is reading the source's next sample.
        var reading = false
        /// The branch `waitToRead` let read the source's next sample: no other starts a read first.
        var reserved: Int?
        var ended = false
        var failure: MediaError?
        /// Parked edges to wake at the next change.
        var wakes: [@Sendable () -> Void] = []

        /// Whether `branch`'s next `next` would go on without waiting: a sample waits for it,
        /// the source has ended or failed, the branch has let go, or it may read the source now.
        func mayGoOn(_ branch: Int, capacity: Int) -> Bool {
            guard let cursor = cursors[branch] else { return true }
            return cursor < firstIndex + window.count || ended || failure != nil || reserved == branch
                || (!reading && reserved == nil && window.count < capacity)
        }

        /// Whether `branch` must read the source for its next sample, and may now: it reserves the read.
        mutating func reserveReadIfDue(_ branch: Int, capacity: Int) {
            guard let cursor = cursors[branch], cursor >= firstIndex + window.count, !ended, failure == nil,
                  !reading, reserved == nil, window.count < capacity else { return }
            reserved = branch
        }

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
            var blocked = false
            let step = try state.withLock(when: { s in
                let mayGoOn = s.mayGoOn(branch, capacity: capacity)
                if !mayGoOn { blocked = true }
                return mayGoOn
            }) { s throws(MediaError) -> Step in
                guard let cursor = s.cursors[branch] else { return .end }
                if cursor < s.firstIndex + s.window.count {
                    s.cursors[branch] = cursor + 1
                    return .take(s.window[cursor - s.firstIndex])
                }
                if let failure = s.failure { throw failure }
                if s.ended { return .end }
                s.reading = true
                if s.reserved == branch { s.reserved = nil }
                return .read(index: s.firstIndex + s.window.count, branches: s.cursors.count)
            }
            if blocked { probe?.countFanOutRead(parked: false) }
            switch step {
            case .take(let sample):
                // The slowest branch moving on frees room for a branch waiting to read.
                changeWakingWaiters { $0.trim() }
                return sample
            case .end:
                return nil
            case .read(let index, let branches):
                let result = Result { () throws(MediaError) -> SampleBuffer? in
                    let sample = try self.readSource()
                    if sample != nil { try self.probe?.step(.sharedSampleRead(self.source.mediaType, index: index, branches: branches)) }
                    return sample
                }
                changeWakingWaiters { s in
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

    /// nil when branch `branch`'s next `next` would go on without waiting (reserving the
    /// source's next read for it, when that is what it needs); else what registers a wake-up
    /// for the branch, called once it may go on (at once when it already may): an edge's
    /// `EdgeProgress.blocked`.
    func waitToRead(branch: Int) -> (@Sendable (_ wake: @escaping @Sendable () -> Void) -> Void)? {
        let capacity = self.capacity
        let mayGoOn = state.withLock { s in
            s.reserveReadIfDue(branch, capacity: capacity)
            return s.mayGoOn(branch, capacity: capacity)
        }
        if mayGoOn { return nil }
        probe?.countFanOutRead(parked: true)
        return { [self] wake in
            let now = state.withLock { s -> Bool in
                if s.mayGoOn(branch, capacity: capacity) { return true }
                s.wakes.append(wake)
                return false
            }
            if now { wake() }
        }
    }

    /// Changes the state, then wakes every branch blocked in `next` and every parked edge: each
    /// looks again at what it waits for.
    private func changeWakingWaiters(_ change: (inout State) -> Void) {
        let wakes = state.withLockWakingWaiters { s -> [@Sendable () -> Void] in
            change(&s)
            defer { s.wakes = [] }
            return s.wakes
        }
        for wake in wakes { wake() }
    }

    /// Branch `branch` needs no more samples: it no longer holds the others back. Idempotent.
    func detach(branch: Int) {
        changeWakingWaiters { s in
            s.cursors[branch] = nil
            if s.reserved == branch { s.reserved = nil }
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

    override func waitToRead() -> (@Sendable (_ wake: @escaping @Sendable () -> Void) -> Void)? { fanOut.waitToRead(branch: branch) }

    override func dropPipeline() { fanOut.detach(branch: branch) }

    override func readingCancelled() { fanOut.detach(branch: branch) }
}

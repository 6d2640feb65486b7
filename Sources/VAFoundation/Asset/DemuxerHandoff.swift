import FFmpegSupport
import MediaCore

/// The demuxer an asset's inspection opened and probed, kept for the first reader of the file
/// (`AssetReader`, `AssetImageGenerator`), so a file is not opened and probed twice: probing
/// decodes the first pictures of each video stream, a real share of a remux's time.
///
/// Only a demuxer whose read position is still at the start of the data is kept (the
/// inspection read the container's index, not the packets); the reader that takes it finds it
/// as a freshly opened one. At most `processLimit` are kept in the process, the most recent
/// ones: a program that inspects thousands of files keeps a few open, not thousands. One that
/// is never taken closes when it is pushed out or its asset goes.
final class DemuxerHandoff: Sendable {
    private let slot = Locked<Owned?>(nil)
    private let registry: Registry

    /// The demuxer while it waits in the slot.
    // @unchecked: it has one owner at a time (the inspection until `keep`, then the one caller `take` hands it to).
    private struct Owned: @unchecked Sendable { let demuxer: Demuxer }

    /// Kept demuxers in the process at most.
    static let processLimit = 4
    /// The process's registry: the handoffs of every asset.
    static let processRegistry = Registry(limit: processLimit)

    init(registry: Registry = DemuxerHandoff.processRegistry) { self.registry = registry }

    /// Keeps `demuxer` for the next `take`; pushes out the oldest kept one past the limit.
    func keep(_ demuxer: Demuxer) {
        let owned = Owned(demuxer: demuxer)
        slot.withLock { $0 = owned }
        for pushedOut in registry.add(self) { _ = pushedOut.take() }
    }

    /// The kept demuxer, once; nil when there is none (never kept, pushed out, or taken).
    func take() -> Demuxer? {
        slot.withLock { $0.take() }?.demuxer
    }

    /// Whether a demuxer waits in the slot.
    var isHolding: Bool { slot.withLock { $0 != nil } }

    /// How many times the asset's file was opened and probed for inspection: one, however many
    /// loads ask at once (a test's count; `AssetInspector.inspect` adds to it).
    var inspections: Int { inspectionCount.withLock { $0 } }
    private let inspectionCount = Locked(0)

    /// Counts one inspection of the file.
    func countInspection() { inspectionCount.withLock { $0 += 1 } }

    /// The handoffs holding a kept demuxer, oldest first, held weakly: one whose demuxer was
    /// taken (or whose asset went) leaves at the next `add`, so it never counts against the
    /// limit nor pushes out a demuxer still waiting. Its lock is taken before a slot's, never
    /// the other way round.
    final class Registry: Sendable {
        private struct Entry: Sendable { weak var handoff: DemuxerHandoff? }
        private let entries = Locked<[Entry]>([])
        private let limit: Int

        init(limit: Int) { self.limit = limit }

        /// Records `handoff` as the newest; returns those pushed out past the limit.
        func add(_ handoff: DemuxerHandoff) -> [DemuxerHandoff] {
            entries.withLock { entries in
                entries.removeAll { entry in
                    guard let kept = entry.handoff, kept !== handoff else { return true }
                    return !kept.isHolding
                }
                entries.append(Entry(handoff: handoff))
                let excess = max(0, entries.count - limit)
                defer { entries.removeFirst(excess) }
                return entries.prefix(excess).compactMap(\.handoff)
            }
        }
    }
}

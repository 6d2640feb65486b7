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

    /// The demuxer while it waits in the slot.
    // @unchecked: it has one owner at a time (the inspection until `keep`, then the one caller `take` hands it to).
    private struct Owned: @unchecked Sendable { let demuxer: Demuxer }

    /// Kept demuxers in the process at most.
    static let processLimit = 4
    private static let registry = Registry()

    /// Keeps `demuxer` for the next `take`; pushes out the oldest kept one past the limit.
    func keep(_ demuxer: Demuxer) {
        let owned = Owned(demuxer: demuxer)
        slot.withLock { $0 = owned }
        for pushedOut in Self.registry.add(self) { _ = pushedOut.take() }
    }

    /// The kept demuxer, once; nil when there is none (never kept, pushed out, or taken).
    func take() -> Demuxer? {
        slot.withLock { $0.take() }?.demuxer
    }

    /// The handoffs that kept a demuxer, oldest first, held weakly.
    private final class Registry: Sendable {
        private struct Entry: Sendable { weak var handoff: DemuxerHandoff? }
        private let entries = Locked<[Entry]>([])

        /// Records `handoff` as the newest; returns those pushed out past the limit.
        func add(_ handoff: DemuxerHandoff) -> [DemuxerHandoff] {
            entries.withLock { entries in
                entries.removeAll { $0.handoff == nil || $0.handoff === handoff }
                entries.append(Entry(handoff: handoff))
                let excess = max(0, entries.count - DemuxerHandoff.processLimit)
                defer { entries.removeFirst(excess) }
                return entries.prefix(excess).compactMap(\.handoff)
            }
        }
    }
}

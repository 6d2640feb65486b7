import Foundation

/// The export's edges as the graph scheduler runs them: each reads its reader output on the
/// output's own thread and hands what it read to its writer input, counting what it handed,
/// holding a file-length limit, retiming to a constant frame rate, and going on in software
/// when its device fails.
extension ExportSession {
    /// What every edge of one attempt shares.
    struct EdgeContext: Sendable {
        let reader: AssetReader
        let writer: AssetWriter
        let span: ExportSpan
        let limit: Int64?
        let tally: EdgeTally
        let edgeCount: Int

        /// Whether `bytes` more in `samples` more samples would take the file past its length
        /// limit, its index included (nil limit: never).
        func passesLimit(addingBytes bytes: Int64, samples: Int) -> Bool {
            guard let limit else { return false }
            let (handed, count) = (tally.bytes.withLock { $0.reduce(0, +) }, tally.counts.withLock { $0.reduce(0, +) })
            return handed + bytes + ExportSession.indexBytes(samples: count + samples, tracks: edgeCount) > limit
        }

        /// Whether edge `i` (`edge`) ended without one sample although its track lists some,
        /// where neither the length limit nor a cancel ended it: its track is unreadable.
        func yieldedNothing(_ i: Int, _ edge: Edge) -> Bool {
            let stoppedForLimit = tally.limitReached.withLock { $0 } || (limit.map { l in tally.bytes.withLock { $0.reduce(0, +) } >= l } ?? false)
            return tally.counts.withLock { $0[i] } == 0 && !stoppedForLimit && reader.status != .cancelled && !edge.isSparse
        }
    }

    /// Runs the attempt's edges on one scheduler (a multi-output export's, shared by its
    /// outputs) until each has ended; the first to fail ends the attempt. A remux (every edge
    /// copies packets) is one edge on the writer's thread.
    func runEdges(_ edges: [Edge], _ context: EdgeContext) async throws {
        let running: [any ScheduledEdge] = if edges.allSatisfy(\.copiesPackets) {
            [try RemuxRunner(edges: edges, context: context, session: self)]
        } else {
            edges.enumerated().map { i, edge in EdgeRunner(index: i, edge: edge, context: context, session: self) }
        }
        let scheduler = settings.withLock { $0.scheduler } ?? GraphScheduler()
        try await scheduler.run(running)
    }

    /// A remux as one edge whose source and sink share the writer's thread: it reads the tracks
    /// in decode-time order and hands each packet straight to the muxer, with no queue and no
    /// thread hop between demuxer and muxer. A step writes up to a batch of packets.
    final class RemuxRunner: ScheduledEdge {
        private struct State {
            let sink: WriterThreadSink
            /// The next sample of each track, read ahead by one (nil once the track has ended);
            /// nil before the first step.
            var next: [SampleBuffer?]?
        }

        private let edges: [Edge]
        private let inputs: [Int]
        private let context: EdgeContext
        private let session: ExportSession
        private let stage: StageThread
        private let state: Locked<State>

        init(edges: [Edge], context: EdgeContext, session: ExportSession) throws {
            let (stage, sink) = try context.writer.writerThreadStage()
            self.edges = edges
            inputs = edges.map { $0.input.writerIndex ?? -1 }
            self.context = context
            self.session = session
            self.stage = stage
            state = Locked(State(sink: sink))
        }

        func onSourceThread(_ job: @escaping @Sendable () -> Void, then: @escaping @Sendable () -> Void) {
            stage.async(job, then: then)
        }

        func step() -> EdgeProgress {
            do {
                return try state.withLock { s throws -> EdgeProgress in try advance(&s) }
            } catch {
                return .failed(error)
            }
        }

        private func advance(_ s: inout State) throws -> EdgeProgress {
            let starting = s.next == nil
            var next = try s.next ?? edges.map { try $0.output.copyNextSampleBuffer() }
            defer { s.next = next }
            if starting {
                for (i, sample) in next.enumerated() where inputs[i] >= 0 {
                    if let sample { try s.sink.prepareCopy(from: sample, input: inputs[i]) }
                    try s.sink.expectNoSample(input: inputs[i], before: Self.earliestTime(of: sample))
                }
            }
            let tally = context.tally
            for _ in 0..<PipelineBounds.packetBatch {
                guard s.sink.isWriting, let i = Self.earliest(next), let sample = next[i] else { break }
                let size = Int64(sample.totalSampleSize)
                // Under a limit, a packet that would take the file past it (its index included)
                // is not written: the file ends where every track has arrived.
                if context.passesLimit(addingBytes: size, samples: 1) {
                    let reached = next.compactMap { $0?.presentationTimeStamp }.filter(\.isNumeric).min() ?? context.span.start
                    if reached > context.span.start { s.sink.endSession(at: reached) }
                    tally.limitReached.withLock { $0 = true }
                    context.reader.cancelReading()
                    break
                }
                try s.sink.write(sample, input: inputs[i])
                tally.reached(i, sample.presentationTimeStamp + sample.duration)
                tally.counts.withLock { $0[i] += 1 }
                tally.bytes.withLock { $0[i] += size }
                next[i] = try edges[i].output.copyNextSampleBuffer()
                try s.sink.expectNoSample(input: inputs[i], before: Self.earliestTime(of: next[i]))
            }
            if s.sink.isWriting, !tally.limitReached.withLock({ $0 }), Self.earliest(next) != nil { return .again }
            try finish()
            return .ended
        }

        /// No packet of a track comes before its next sample's decode or presentation time (the
        /// earlier), or ever once it has ended: the muxer writes the other tracks' earlier packets
        /// without waiting for it.
        private static func earliestTime(of next: SampleBuffer?) -> MediaTime {
            guard let next else { return .positiveInfinity }
            let (decode, presentation) = (next.decodeTimeStamp, next.presentationTimeStamp)
            switch (decode.isNumeric, presentation.isNumeric) {
            case (true, true): return min(decode, presentation)
            case (true, false): return decode
            case (false, true): return presentation
            case (false, false): return .negativeInfinity
            }
        }

        /// The track whose next sample comes first in decode order (samples without a time at
        /// once); nil once every track has ended.
        private static func earliest(_ next: [SampleBuffer?]) -> Int? {
            var earliest: Int?
            for (i, sample) in next.enumerated() {
                guard let sample else { continue }
                guard let e = earliest, let current = next[e] else { earliest = i; continue }
                if decodeOrder(sample) < decodeOrder(current) { earliest = i }
            }
            return earliest
        }

        /// Where a sample stands in decode order: its decode time, else its presentation time;
        /// one with neither comes first.
        private static func decodeOrder(_ sample: SampleBuffer) -> MediaTime {
            let t = sample.decodeTimeStamp.isNumeric ? sample.decodeTimeStamp : sample.presentationTimeStamp
            return t.isNumeric ? t : .negativeInfinity
        }

        /// Every track has ended (or the limit or a cancel ended the file): a track that yielded
        /// nothing although it lists samples fails; else the inputs are finished.
        private func finish() throws {
            for (i, edge) in edges.enumerated() where context.yieldedNothing(i, edge) {
                throw session.yieldedNothing(edge, besideEdges: edges.count - 1)
            }
            for edge in edges { edge.input.markAsFinished() }
        }
    }

    /// One edge at work. Its state is touched by one step at a time: the scheduler queues a
    /// step only once the last has returned, and a detour runs between steps.
    final class EdgeRunner: ScheduledEdge {
        private enum Phase {
            case reading
            /// The output has ended (or the file reached its limit): what the frame-rate
            /// converter still holds goes out, then the input is finished.
            case finishing
        }

        private struct State {
            var converter: FrameRateConverter?
            /// The edge may still go on in software, once, when its device fails.
            var resumable: Bool
            /// Read and not yet taken by the input, in order.
            var pending: [SampleBuffer] = []
            /// What was read last, counted once `pending` is handed on.
            var read: [SampleBuffer]?
            var phase = Phase.reading
        }

        private let index: Int
        private let edge: Edge
        private let context: EdgeContext
        private let session: ExportSession
        private let state: Locked<State>
        /// The output read now: the edge's own, or the software reader's after a device
        /// failure. Apart from `state`, so that scheduling the edge (from another edge's step,
        /// whose append woke the writer's waiters) never waits for a step in progress.
        private let source: Locked<AssetReaderOutput>

        init(index: Int, edge: Edge, context: EdgeContext, session: ExportSession) {
            self.index = index
            self.edge = edge
            self.context = context
            self.session = session
            state = Locked(State(converter: edge.converter, resumable: edge.resumesWith != nil))
            source = Locked(edge.output)
        }

        func onSourceThread(_ job: @escaping @Sendable () -> Void, then: @escaping @Sendable () -> Void) {
            source.withLock { $0 }.onOwnThread(job, then: then)
        }

        func step() -> EdgeProgress {
            do {
                let output = source.withLock { $0 }
                return try state.withLock { s throws -> EdgeProgress in try advance(&s, reading: output) }
            } catch {
                return recovery(from: error)
            }
        }

        /// What a failed read (or append) of a decoding edge comes to: a device failure goes on
        /// in software; damage past the error rate ends the edge; a track of which not one
        /// packet decodes is left out of the export. Anything else fails the export.
        private func recovery(from error: any Error) -> EdgeProgress {
            let output = source.withLock { $0 }
            let (reading, resumable) = state.withLock { ($0.phase == .reading, $0.resumable) }
            guard let failure = error as? MediaError, reading, !edge.copiesPackets else { return .failed(error) }
            let deviceFailed = ExportSession.isDeviceFailure(failure, of: output)
            if resumable && deviceFailed {
                return .detour { [self] in try await resumeInSoftware(after: failure) }
            }
            if failure.underlying is DecodeTally && handedCount > 0 {
                // More than 2/3 of the track's packets were damaged, and what decoded is written.
                // Whether that fails the export is weighed over every track once all are done, as
                // ffmpeg's error rate is.
                context.tally.overDamaged.withLock { $0.append((edge.track, failure)) }
                state.withLock { $0.phase = .finishing }
                return .again
            }
            if failure.code == .decodeFailed && !deviceFailed && handedCount == 0 {
                // Not one packet of the track decodes: it is as unreadable as a track without
                // packets, and is left out the same way (ffmpeg writes the other tracks).
                return .failed(TrackYieldedNothing(trackID: edge.track.trackID, mediaType: edge.track.mediaType,
                                                   otherEdges: context.edgeCount - 1, error: failure))
            }
            return .failed(error)
        }

        private var handedCount: Int { context.tally.counts.withLock { $0[index] } }

        /// Hands on what waits, then reads what comes next: one read per step.
        private func advance(_ s: inout State, reading output: AssetReaderOutput) throws -> EdgeProgress {
            var hasRead = false
            while true {
                guard try handOnPending(&s) else { return .blocked { [input = edge.input] wake in input.whenReady(wake) } }
                if let read = s.read.take(), s.phase == .reading, handOver(read) { s.phase = .finishing }
                if hasRead { return .again }
                switch s.phase {
                case .reading:
                    // A fan-out's branch waits for another branch's read (or for the slowest to
                    // take what it holds) parked, not blocking its thread.
                    if let waiting = output.waitToRead() { return .blocked(whenReady: waiting) }
                    try read(output, into: &s)
                    hasRead = true
                case .finishing:
                    // What the frame-rate converter still holds goes out last (taken: once).
                    if var converter = s.converter.take() {
                        let end = context.span.range.end
                        s.pending = converter.finish(end: end.isNumeric ? min(end, context.span.duration) : context.span.duration)
                        continue
                    }
                    try finish()
                    return .ended
                }
            }
        }

        /// Appends what waits to the input; false while the input is not ready for it.
        private func handOnPending(_ s: inout State) throws -> Bool {
            if edge.copiesPackets {
                guard !s.pending.isEmpty else { return true }
                guard try edge.input.appendImmediately(contentsOf: s.pending) else { return false }
                let count = s.pending.count
                context.tally.counts.withLock { $0[index] += count }
                s.pending = []
                return true
            }
            while let sample = s.pending.first {
                guard try edge.input.appendImmediately(sample) else { return false }
                s.pending.removeFirst()
                context.tally.counts.withLock { $0[index] += 1 }
            }
            return true
        }

        /// Reads the edge's next sample (a batch of copied packets), or finds its end.
        private func read(_ output: AssetReaderOutput, into s: inout State) throws {
            if edge.copiesPackets {
                let batch = try output.nextBatch(maximumCount: context.limit == nil ? PipelineBounds.packetBatch : 1,
                                                   maximumSpan: PipelineBounds.packetBatchSpan)
                if batch.isEmpty || reachesLimit(with: batch) {
                    s.phase = .finishing
                } else {
                    (s.pending, s.read) = (batch, batch)
                }
                return
            }
            guard let sample = try output.copyNextSampleBuffer() else {
                s.phase = .finishing
                return
            }
            s.pending = s.converter != nil ? s.converter!.push(sample) : [sample]
            s.read = [sample]
        }

        /// Under a limit, a packet that would take the file past it (its index included) is
        /// not written: the file ends where every track has arrived.
        private func reachesLimit(with batch: [SampleBuffer]) -> Bool {
            let adding = batch.reduce(Int64(0)) { $0 + Int64($1.totalSampleSize) }
            guard context.passesLimit(addingBytes: adding, samples: batch.count) else { return false }
            context.tally.reached(index, batch[0].presentationTimeStamp)
            context.tally.limitReached.withLock { $0 = true }
            stopAtLengthLimit()
            return true
        }

        /// Counts what the edge handed over in `batch`. Returns true where the file reached its
        /// length limit: the file then ends where every track has arrived, so a track running
        /// ahead in the writer's interleave window is cut there too.
        private func handOver(_ batch: [SampleBuffer]) -> Bool {
            let last = batch[batch.count - 1]
            // Bytes on disk lag behind the writer's queue: also count what was handed to it (exact
            // for copied packets, the target rate for encoded media).
            let handed = context.tally.bytes.withLock { b -> Int64 in
                if edge.copiesPackets {
                    b[index] += batch.reduce(0) { $0 + Int64($1.totalSampleSize) }
                } else {
                    b[index] = Int64(max(0, last.presentationTimeStamp.seconds - context.span.start.seconds) * Double(edge.bitRate) / 8)
                }
                return b.reduce(0, +)
            }
            let batchEnd = batch.map { $0.presentationTimeStamp + $0.duration }.filter(\.isNumeric).max() ?? last.presentationTimeStamp
            context.tally.reached(index, batchEnd)
            guard let limit = context.limit, max(context.writer.bytesWritten, handed) >= limit else { return false }
            stopAtLengthLimit()
            return true
        }

        /// The file has reached its length limit: it ends where every track has arrived, and the
        /// source is read no further.
        private func stopAtLengthLimit() {
            let reached = context.tally.arrivedByAll(from: context.span.start)
            if reached > context.span.start { try? context.writer.endSession(atSourceTime: reached) }
            context.reader.cancelReading()
        }

        /// The edge's output has ended: a track that yielded nothing although it lists samples
        /// fails (unless the limit or a cancel ended it); else its input is finished.
        private func finish() throws {
            if context.yieldedNothing(index, edge) {
                throw session.yieldedNothing(edge, besideEdges: context.edgeCount - 1)
            }
            edge.input.markAsFinished()
        }

        /// Goes on in software after the device failed (once: the software stages that take
        /// over have no device to lose), from the open group's keyframe.
        private func resumeInSoftware(after failure: MediaError) async throws {
            state.withLock { s in
                s.resumable = false
                s.pending = []
                s.read = nil
            }
            let resumed = try await session.resumeInSoftware(edge, replacing: source.withLock { $0 }, after: failure, end: context.span.range.end)
            source.withLock { $0 = resumed.output }
            state.withLock { s in s.converter = s.converter.map { FrameRateConverter(resuming: $0, at: resumed.at) } }
            context.tally.counts.withLock { $0[index] = resumed.framesKept }
        }
    }

    /// A failure of the device under a video edge: a stage on the device (the decoder, which
    /// rethrows at once there, the video processor, or the encoder) gave up.
    static func isDeviceFailure(_ error: MediaError, of output: AssetReaderOutput) -> Bool {
        error.code == .hardwareFailed || (error.code == .decodeFailed && (output as? AssetReaderTrackOutput)?.hardwareDevice != nil)
    }

    /// Samples written and progress (0…1 of the range) per edge, shared by the edges.
    final class EdgeTally: Sendable {
        /// A copying edge stopped short of the file-length limit.
        let limitReached = Locked(false)
        /// Tracks more than 2/3 of whose packets were damaged, with their failure.
        let overDamaged = Locked<[(track: AssetTrack, failure: MediaError)]>([])
        let counts: Locked<[Int]>
        /// Bytes handed to the writer per edge (estimated from the bit rate for encoded edges).
        let bytes: Locked<[Int64]>
        /// Where each edge's samples handed to the writer end (source time); nil before any.
        let ends: Locked<[MediaTime?]>
        /// Edges that hold no other back (subtitles: their next cue may be minutes away).
        let sparse: Set<Int>
        init(edges: Int, sparse: Set<Int>) {
            self.sparse = sparse
            bytes = Locked([Int64](repeating: 0, count: edges))
            counts = Locked([Int](repeating: 0, count: edges))
            ends = Locked([MediaTime?](repeating: nil, count: edges))
        }

        /// Records that edge `i` has handed samples up to `end`.
        func reached(_ i: Int, _ end: MediaTime) {
            guard end.isNumeric else { return }
            ends.withLock { $0[i] = max($0[i] ?? end, end) }
        }

        /// Where every edge but the sparse ones has arrived: the earliest of their ends, `start`
        /// for an edge with none yet. A file-length limit ends the file there.
        func arrivedByAll(from start: MediaTime) -> MediaTime {
            ends.withLock { ends in ends.indices.filter { !sparse.contains($0) }.map { ends[$0] ?? start }.min() } ?? start
        }
    }
}

import FFmpegSupport
import Foundation

/// Reads samples out of an asset (`AVAssetReader`'s role): compressed as stored, or decoded
/// into pictures and PCM audio, through the outputs added to it.
///
/// One demuxer serves every output: packets of other outputs' tracks are queued for them, so
/// audio and video read together lose nothing. Read every output you add (in any order, from
/// any task); an output left unread keeps its packets queued.
public final class AssetReader: Sendable {
    /// `AVAssetReader.Status`.
    public enum Status: Sendable, Equatable { case unknown, reading, completed, failed, cancelled }

    public let asset: Asset
    private let state = Locked(State())

    // @unchecked: reached only through `state`'s mutex.
    private struct State: @unchecked Sendable {
        var status: Status = .unknown
        var error: MediaError?
        var timeRange = MediaTimeRange(start: .zero, duration: .positiveInfinity)
        var outputs: [AssetReaderOutput] = []
        var session: DemuxSession?
        var seeksToRangeStart = true
    }

    /// A reader for `asset`; the file is opened by `startReading()`.
    public init(asset: Asset) {
        self.asset = asset
    }

    public var status: Status { state.withLock { $0.status } }
    /// Why reading failed; nil unless `status` is `.failed`.
    public var error: MediaError? { state.withLock { $0.error } }
    public var outputs: [AssetReaderOutput] { state.withLock { $0.outputs } }

    /// Whether reading a range seeks near its start (default) or reads the file from its start
    /// and drops what lies before the range: for a file whose seek lands where nothing decodes
    /// (FFmpeg 5.1's Ogg Opus), as ffmpeg's output-side trim does. Set before `startReading()`.
    var seeksToRangeStart: Bool {
        get { state.withLock { $0.seeksToRangeStart } }
        set { state.withLock { if $0.status == .unknown { $0.seeksToRangeStart = newValue } } }
    }

    /// The part of the asset to read (default: all of it). Reading is frame-accurate for decoded
    /// outputs (decoding starts at the preceding keyframe and earlier frames are dropped);
    /// compressed outputs start at that keyframe so the samples stay decodable.
    public var timeRange: MediaTimeRange {
        get { state.withLock { $0.timeRange } }
        set { state.withLock { if $0.status == .unknown { $0.timeRange = newValue } } }
    }

    /// True if `output` can be added: not yet started, and its tracks belong to this asset.
    public func canAdd(_ output: AssetReaderOutput) -> Bool {
        state.withLock { $0.status == .unknown && !$0.outputs.contains { $0 === output } } && output.reader == nil
    }

    /// Adds an output. Outputs can only be added before `startReading()`.
    public func add(_ output: AssetReaderOutput) throws {
        guard canAdd(output) else {
            throw MediaError(.invalidState, "an output can be added once, to one reader, before reading starts", path: asset.displayPath)
        }
        output.reader = self
        state.withLock { $0.outputs.append(output) }
    }

    /// Opens the file and prepares every output's decoder. Throws (and sets `status` to
    /// `.failed`) when the file or a track cannot be read.
    public func startReading() throws {
        let (outputs, range, seeks) = try state.withLock { s throws(MediaError) in
            guard s.status == .unknown else {
                throw MediaError(.invalidState, "startReading can be called once", path: asset.displayPath)
            }
            guard !s.outputs.isEmpty else {
                throw MediaError(.invalidState, "add at least one output before reading", path: asset.displayPath)
            }
            return (s.outputs, s.timeRange, s.seeksToRangeStart)
        }
        do {
            if !outputs.contains(where: \.readsFile) {
                // Every output takes its samples from elsewhere (fan-out branches): nothing to open.
                state.withLock { $0.status = .reading }
                return
            }
            if let composition = asset as? Composition {
                // Each composition track opens its segments' files as it reaches them.
                let tracks = composition.tracks
                for output in outputs { try output.prepare(composition: tracks, timeRange: range) }
                state.withLock { $0.status = .reading }
                return
            }
            let session = try DemuxSession(path: asset.displayPath, timeRange: range, seeks: seeks,
                                           streams: Set(outputs.flatMap(\.streamIndices)), opened: asset.inspectedDemuxer.take())
            for output in outputs { try output.prepare(session: session, timeRange: range) }
            state.withLock {
                $0.session = session
                $0.status = .reading
            }
        } catch {
            fail(error)
            throw error
        }
    }

    /// Stops reading; outputs return nil from then on. Safe to call at any time.
    public func cancelReading() {
        let outputs = state.withLock { s -> [AssetReaderOutput] in
            if s.status == .reading || s.status == .unknown { s.status = .cancelled }
            s.session?.cancel()
            return s.outputs
        }
        for output in outputs { output.readingCancelled() }
    }

    /// Records a failure from an output (the first one wins).
    func fail(_ error: MediaError) {
        state.withLock {
            guard $0.status != .failed && $0.status != .cancelled else { return }
            $0.status = .failed
            $0.error = error
            $0.session?.cancel()
        }
    }

    /// Called by an output when it has returned its last sample.
    func outputDidFinish() {
        state.withLock { s in
            if s.status == .reading && s.outputs.allSatisfy(\.isFinished) { s.status = .completed }
        }
    }

    var isReading: Bool { state.withLock { $0.status == .reading } }

    /// The demuxer session, once reading started (for the export's test seam).
    var demuxSession: DemuxSession? { state.withLock { $0.session } }
}

/// The demuxer shared by a reader's outputs, with one packet queue per stream in use.
///
/// The queues are bounded (`PipelineBounds.demuxerQueueBytes`, `demuxerQueuePackets`): a
/// stream whose next packet lies past more than that of another stream's packets (a track
/// starting late, a file storing long runs of one track) goes on reading on a demuxer of its
/// own, opened on the same file and brought to where the stream stood, instead of queueing the
/// other stream's packets. Each stream reads the same packets either way.
///
/// Thread-safe: outputs on different tasks pull packets through the lock.
final class DemuxSession: Sendable {
    // @unchecked: the demuxers (not thread-safe) and the queues are reached only through `state`'s mutex.
    private struct State: @unchecked Sendable {
        var demuxer: Demuxer
        var queues: [Int: PacketQueue]
        /// Streams read on demuxers of their own: no longer read (or queued) by the shared one.
        var separate: [Int: SeparateReader] = [:]
        /// Packets each stream has taken so far: where a demuxer of its own must bring it.
        var taken: [Int: Int] = [:]
        var endOfFile = false
        var cancelled = false
        var failure: FFmpegError?
        /// Packets queued for outputs now, and the most at once.
        var queued = 0
        var peakQueued = 0
    }

    /// One stream's own demuxer, and where its reading ended.
    private struct SeparateReader {
        let demuxer: Demuxer
        var ended = false
        var failure: FFmpegError?
    }

    let path: String
    let streams: [StreamInfo]
    /// The streams read, and the seek the shared demuxer started from (anchor stream and its
    /// target): what a stream's own demuxer repeats to start where the shared one did.
    private let wanted: Set<Int>
    private let startingSeek: (anchor: Int, target: Int64)?
    private let queueBytes: Int
    private let queuePackets: Int
    private let state: Locked<State>

    /// Reads `wanted` of `path` over `timeRange`, from `opened` when given (a demuxer of that
    /// file at the start of its data, e.g. the asset's inspection's), else from a new one;
    /// from the range's preceding keyframe when `seeks`, else from the file's start. A stream's
    /// queue holds at most `queueBytes` and `queuePackets` (tests lower them).
    init(path: String, timeRange: MediaTimeRange, seeks: Bool = true, streams wanted: Set<Int>, opened: Demuxer? = nil,
         queueBytes: Int = PipelineBounds.demuxerQueueBytes, queuePackets: Int = PipelineBounds.demuxerQueuePackets) throws(MediaError) {
        self.path = path
        let demuxer: Demuxer
        if let opened {
            demuxer = opened
        } else {
            do { demuxer = try Demuxer(path: path) } catch { throw AssetInspector.openFailure(error, path: path) }
        }
        self.streams = demuxer.streams
        self.wanted = wanted
        self.queueBytes = queueBytes
        self.queuePackets = max(1, queuePackets)
        demuxer.selectStreams(wanted)
        var queues = Dictionary(uniqueKeysWithValues: wanted.map { ($0, PacketQueue()) })
        var checked = 0
        if seeks && timeRange.start.isNumeric && timeRange.start > .zero {
            // Seek on the lowest-numbered video stream (or the first wanted one) to its keyframe at or before the start.
            let anchor = wanted.sorted().first { demuxer.streams[$0].kind == .video } ?? wanted.min() ?? 0
            let target = TickRange(timeRange, timeBase: demuxer.streams[anchor].timeBase).start
            startingSeek = (anchor, target)
            (queues, checked) = Self.seek(demuxer, anchor: anchor, to: target, queues: queues)
        } else {
            startingSeek = nil
        }
        var state = State(demuxer: demuxer, queues: queues)
        state.queued = checked
        state.peakQueued = checked
        self.state = Locked(state)
    }

    /// Seeks `anchor` to its keyframe at or before `target`, and checks where it landed: a
    /// container seeking by a guess (MPEG-TS and PS seek by bit rate) can land on a later
    /// keyframe, or mid-way into a group whose keyframe it skipped, and the pictures before the
    /// next keyframe would be lost. Its first keyframe must start at or before the target; else
    /// it seeks earlier, by what it overshot and a second more each time, and at last reads from
    /// the start. Returns the queues with the packets read to check.
    /// A file that cannot seek (an AVI without an index) is read from its start: the pipelines
    /// drop what lies before the range.
    private static func seek(_ demuxer: Demuxer, anchor: Int, to target: Int64,
                             queues empty: [Int: PacketQueue]) -> (queues: [Int: PacketQueue], count: Int) {
        let second = demuxer.streams[anchor].timeBase.ticks(of: MediaTime(value: 1, timescale: 1)) ?? 1
        var goal = target
        for attempt in 0..<4 {
            let fromStart = attempt == 3
            do {
                if fromStart { try demuxer.rewind() } else { try demuxer.seek(stream: anchor, toKeyframeAtOrBefore: goal) }
            } catch {
                return (empty, 0)
            }
            var queues = empty
            var count = 0
            var anchorPackets = 0
            while true {
                let packet = Packet()
                // The end, or damage, ends the check: what was read is kept, and reading goes on from there.
                guard (try? demuxer.readPacket(into: packet)) == .packet else { return (queues, count) }
                if queues[packet.streamIndex] != nil {
                    queues[packet.streamIndex]!.push(packet)
                    count += 1
                }
                guard packet.streamIndex == anchor else { continue }
                anchorPackets += 1
                // A stream that marks no keyframe within a few hundred packets is taken as it comes.
                guard packet.isKeyframe || anchorPackets > 600, let time = packet.pts ?? packet.dts else { continue }
                if time <= target || fromStart { return (queues, count) }
                goal = goal - (time - target) - second
                break
            }
        }
        return (empty, 0)
    }

    /// What `nextPacket` found.
    enum Next { case packet(Packet), endOfStream, cancelled }

    /// The next packet of `stream`, reading ahead (and queueing other streams' packets) as needed.
    func nextPacket(stream: Int) throws(MediaError) -> Next {
        try state.withLock { s throws(MediaError) -> Next in
            while true {
                if s.cancelled { return .cancelled }
                if s.separate[stream] != nil { return try nextSeparatePacket(stream: stream, &s) }
                guard s.queues[stream] != nil else { return .endOfStream }
                if let packet = s.queues[stream]!.pop() {
                    s.queued -= 1
                    s.taken[stream, default: 0] += 1
                    return .packet(packet)
                }
                if let failure = s.failure { throw readFailure(failure) }
                if s.endOfFile { return .endOfStream }
                let packet = Packet()
                do throws(FFmpegError) {
                    if try s.demuxer.readPacket(into: packet) == .endOfFile {
                        s.endOfFile = true
                        continue
                    }
                } catch {
                    // Keep what was read before the damage; report it once the queue drains.
                    s.failure = error
                    continue
                }
                guard let other = s.queues[packet.streamIndex] else { continue }
                let passesBound = packet.streamIndex != stream
                    && (other.count >= queuePackets || other.bytes + packet.size > queueBytes)
                s.queues[packet.streamIndex]!.push(packet)
                s.queued += 1
                s.peakQueued = max(s.peakQueued, s.queued)
                if passesBound, let separate = separateReader(for: stream, taken: s.taken[stream, default: 0]) {
                    // The other stream's queue passed its bound: this stream reads on alone, and
                    // the shared demuxer leaves it.
                    s.separate[stream] = separate
                    s.queues[stream] = nil
                    s.demuxer.selectStreams(Set(s.queues.keys))
                }
            }
        }
    }

    /// The next packet of `stream` from its own demuxer.
    private func nextSeparatePacket(stream: Int, _ s: inout State) throws(MediaError) -> Next {
        guard var reader = s.separate[stream] else { return .endOfStream }
        defer { s.separate[stream] = reader }
        if let failure = reader.failure { throw readFailure(failure) }
        if reader.ended { return .endOfStream }
        let packet = Packet()
        repeat {
            do throws(FFmpegError) {
                if try reader.demuxer.readPacket(into: packet) == .endOfFile {
                    reader.ended = true
                    return .endOfStream
                }
            } catch {
                reader.failure = error
                throw readFailure(error)
            }
        } while packet.streamIndex != stream  // a demuxer may still hand out a stream it was told to skip
        s.taken[stream, default: 0] += 1
        return .packet(packet)
    }

    /// What a demuxer's failure to read is to the outputs.
    private func readFailure(_ error: FFmpegError) -> MediaError {
        MediaError(.corruptOrTruncated, "reading packets failed: \(error.message)", path: path, underlying: error)
    }

    /// A demuxer of `stream`'s own, on the same file, whose next packet of the stream is the
    /// shared demuxer's `taken`th: it starts where the shared one started (the same seek on
    /// the same streams lands on the same packet) and passes over the packets already taken.
    /// Nil when the file cannot be opened or read that far again: the stream then stays on
    /// the shared demuxer, and its queue is not bounded.
    private func separateReader(for stream: Int, taken: Int) -> SeparateReader? {
        guard let demuxer = try? Demuxer(path: path), demuxer.streams.count == streams.count else { return nil }
        demuxer.selectStreams(wanted)
        // The packets the seek's check read came first, and the stream has taken them all: it
        // reads the shared demuxer only once its queue is empty.
        var passed = 0
        if let startingSeek {
            let (queues, _) = Self.seek(demuxer, anchor: startingSeek.anchor, to: startingSeek.target, queues: [stream: PacketQueue()])
            passed = queues[stream]?.count ?? 0
        }
        guard passed <= taken else { return nil }
        demuxer.selectStreams([stream])
        let packet = Packet()
        while passed < taken {
            guard (try? demuxer.readPacket(into: packet)) == .packet else { return nil }
            if packet.streamIndex == stream { passed += 1 }
        }
        return SeparateReader(demuxer: demuxer)
    }

    /// A copy of a stream's codec parameters.
    func codecParameters(stream: Int) throws(MediaError) -> CodecParameters {
        do { return try state.withLock { s throws(FFmpegError) in try s.demuxer.codecParameters(ofStream: stream) } } catch {
            throw MediaError(.corruptOrTruncated, "cannot read the parameters of stream \(stream)", path: path, underlying: error)
        }
    }

    /// The size the container's index gives the sample of `stream` at byte offset `position`
    /// (mp4 sample tables); nil where the index lists none there.
    func indexedSampleSize(stream: Int, at position: Int64) -> Int? {
        state.withLock { s in s.demuxer.indexEntries(ofStream: stream).last { $0.position == position && $0.size > 0 }?.size }
    }

    /// Stops queueing packets for `stream`: its output needs no more.
    func finish(stream: Int) {
        state.withLock { s in
            var dropped = s.queues[stream]
            while dropped?.pop() != nil { s.queued -= 1 }
            s.queues[stream] = nil
            s.separate[stream] = nil
        }
    }

    /// The most packets queued for outputs at once so far.
    var peakQueuedPackets: Int { state.withLock { $0.peakQueued } }

    func cancel() { state.withLock { $0.cancelled = true } }
}

/// A FIFO of packets that lets go of each packet as soon as it is taken, so memory follows
/// what is actually waiting (compressed 1080p packets can be half a megabyte each).
struct PacketQueue {
    private var storage: [Packet?] = []
    private var head = 0
    /// The packets waiting, and their payload bytes.
    private(set) var count = 0
    private(set) var bytes = 0

    mutating func push(_ packet: Packet) {
        storage.append(packet)
        count += 1
        bytes += packet.size
    }

    mutating func pop() -> Packet? {
        guard head < storage.count, let packet = storage[head] else { return nil }
        storage[head] = nil
        head += 1
        count -= 1
        bytes -= packet.size
        if head >= 64 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return packet
    }
}

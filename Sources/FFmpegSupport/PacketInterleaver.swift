internal import CFFmpeg
import MediaCore

/// A muxer's interleaving queue, kept here rather than in libavformat so that it is counted and
/// knows what libavformat cannot: that a stream has ended, that a stream's next packet is no
/// earlier than a given time, and that a sparse stream (subtitles, data, a cover picture) is not
/// worth waiting for. libavformat's own queue waits for every stream, ended or sparse, until it
/// spans `max_interleave_delta` (10 s); this one waits only for audio and video streams that
/// may still send an earlier packet, and never beyond the same 10 s.
///
/// Packets leave in decode-time order across streams: the earliest queued one goes as soon as
/// no awaited stream can still send an earlier one.
struct PacketInterleaver {
    /// How far the queue may span before its earliest packet goes regardless: libavformat's
    /// default `max_interleave_delta`, so no stream waits longer than it would in ffmpeg.
    static let maximumSpanMicroseconds: Int64 = 10_000_000

    private struct Stream {
        var timeBase = AVRational(num: 1, den: 1)
        var queue: [Packet] = []
        /// Index of the first packet still queued in `queue`.
        var head = 0
        /// An audio or video stream that is not a cover picture: worth waiting for.
        var awaited = false
        var ended = false
        /// No packet will come with an earlier decode time (ticks of the time base given with it).
        var noPacketBefore: (ticks: Int64, timeBase: AVRational)?

        var isEmpty: Bool { head == queue.count }
        var first: Packet? { isEmpty ? nil : queue[head] }
    }

    private var streams: [Stream] = []
    /// Packets and payload bytes queued now.
    private(set) var packetCount = 0
    private(set) var byteCount = 0
    /// Packets written while an awaited stream could still send an earlier one, because the
    /// queue had reached `maximumSpanMicroseconds`: out of decode-time order.
    private(set) var writtenOutOfOrder = 0

    /// Registers stream `index`, or sets its final time base once the header is written.
    mutating func set(stream index: Int, timeBase: AVRational, awaited: Bool) {
        while streams.count <= index { streams.append(Stream()) }
        streams[index].timeBase = timeBase
        streams[index].awaited = awaited
    }

    /// Queues a packet of a registered stream.
    mutating func queue(_ packet: Packet) {
        let index = packet.streamIndex
        streams[index].queue.append(packet)
        packetCount += 1
        byteCount += packet.size
    }

    /// Stream `index` sends no more packets.
    mutating func end(stream index: Int) {
        guard streams.indices.contains(index) else { return }
        streams[index].ended = true
    }

    /// Stream `index` sends no packet decoded before `ticks` of `timeBase`.
    mutating func promise(stream index: Int, noPacketBefore ticks: Int64, timeBase: AVRational) {
        guard streams.indices.contains(index) else { return }
        streams[index].noPacketBefore = (ticks, timeBase)
    }

    /// The time from the earliest queued decode time to the latest of an awaited stream.
    var span: MediaTime {
        guard let earliest = earliestStream(), let latest = latestMicroseconds() else { return .zero }
        return MediaTime(value: max(latest - microseconds(earliest), 0), timescale: 1_000_000)
    }

    /// Takes the next packet that may be written: the earliest queued one, when no awaited stream
    /// can still send an earlier packet, the queue spans more than `maximumSpanMicroseconds`, or
    /// `all` (the end, or a fragment's).
    mutating func next(all: Bool) -> Packet? {
        guard let earliest = earliestStream() else { return nil }
        if all || !isWaiting(before: earliest) { return take(earliest) }
        guard spansTooLong(from: earliest) else { return nil }
        writtenOutOfOrder += 1
        return take(earliest)
    }

    private func isWaiting(before index: Int) -> Bool {
        guard let head = streams[index].first, let dts = decodeTime(head) else { return false }
        let timeBase = streams[index].timeBase
        return streams.contains { other in
            guard other.awaited, !other.ended, other.isEmpty else { return false }
            guard let bound = other.noPacketBefore else { return true }
            return av_compare_ts(bound.ticks, bound.timeBase, dts, timeBase) < 0
        }
    }

    private func spansTooLong(from index: Int) -> Bool {
        guard let latest = latestMicroseconds() else { return false }
        return latest - microseconds(index) > Self.maximumSpanMicroseconds
    }

    /// The stream whose first queued packet has the earliest decode time; a packet without
    /// one goes first, as it cannot be placed.
    private func earliestStream() -> Int? {
        var best: Int?
        for (index, stream) in streams.enumerated() {
            guard let packet = stream.first else { continue }
            guard let dts = decodeTime(packet) else { return index }
            if let b = best, let bestTime = streams[b].first.flatMap(decodeTime),
               av_compare_ts(dts, stream.timeBase, bestTime, streams[b].timeBase) >= 0 { continue }
            best = index
        }
        return best
    }

    private func decodeTime(_ packet: Packet) -> Int64? { packet.dts ?? packet.pts }

    private func microseconds(_ index: Int) -> Int64 {
        guard let packet = streams[index].first, let dts = decodeTime(packet) else { return 0 }
        return av_rescale_q(dts, streams[index].timeBase, AVRational(num: 1, den: 1_000_000))
    }

    /// The latest decode time queued in an awaited stream: a subtitle cue queued far ahead of
    /// the pictures is not a span of media held.
    private func latestMicroseconds() -> Int64? {
        var latest: Int64?
        for stream in streams where stream.awaited && !stream.isEmpty {
            guard let dts = stream.queue.last.flatMap(decodeTime) else { continue }
            let time = av_rescale_q(dts, stream.timeBase, AVRational(num: 1, den: 1_000_000))
            latest = max(latest ?? time, time)
        }
        return latest
    }

    private mutating func take(_ index: Int) -> Packet {
        let packet = streams[index].queue[streams[index].head]
        streams[index].head += 1
        if streams[index].isEmpty {
            streams[index].queue.removeAll(keepingCapacity: true)
            streams[index].head = 0
        } else if streams[index].head >= 256 {
            streams[index].queue.removeFirst(streams[index].head)
            streams[index].head = 0
        }
        packetCount -= 1
        byteCount -= packet.size
        return packet
    }
}

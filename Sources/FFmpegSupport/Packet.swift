internal import CFFmpeg

/// A compressed packet: reference-counted data plus timestamps in its stream's time base.
///
/// A packet is owned by one task at a time; handing it to another task transfers it.
// @unchecked: owned by one task at a time (see above); a packet is handed over, not shared.
public final class Packet: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<AVPacket>

    /// Allocates an empty packet. The corresponding C function is `av_packet_alloc`.
    public init() {
        guard let packet = av_packet_alloc() else { fatalError("av_packet_alloc: out of memory") }
        pointer = packet
    }

    /// A packet holding a copy of `bytes`. The corresponding C function is `av_new_packet`.
    public convenience init(copying bytes: UnsafeRawBufferPointer) throws(FFmpegError) {
        self.init()
        try check(av_new_packet(pointer, Int32(bytes.count)), "av_new_packet")
        if let base = bytes.baseAddress, bytes.count > 0 {
            pointer.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        }
    }

    deinit { var p: UnsafeMutablePointer<AVPacket>? = pointer; av_packet_free(&p) }

    /// A new reference to the same data (no copy). The corresponding C function is `av_packet_ref`.
    public func reference() throws(FFmpegError) -> Packet {
        let copy = Packet()
        try check(av_packet_ref(copy.pointer, pointer), "av_packet_ref")
        return copy
    }

    /// Drops the data, keeping the allocation for reuse. The corresponding C function is `av_packet_unref`.
    public func reset() { av_packet_unref(pointer) }

    public var streamIndex: Int {
        get { Int(pointer.pointee.stream_index) }
        set { pointer.pointee.stream_index = Int32(newValue) }
    }
    /// Presentation timestamp in the stream's time base, nil when unknown.
    public var pts: Int64? {
        get { timestamp(pointer.pointee.pts) }
        set { pointer.pointee.pts = newValue ?? cffmpeg_AV_NOPTS_VALUE() }
    }
    /// Decode timestamp in the stream's time base, nil when unknown.
    public var dts: Int64? {
        get { timestamp(pointer.pointee.dts) }
        set { pointer.pointee.dts = newValue ?? cffmpeg_AV_NOPTS_VALUE() }
    }
    public var duration: Int64 {
        get { pointer.pointee.duration }
        set { pointer.pointee.duration = newValue }
    }
    public var size: Int { Int(pointer.pointee.size) }
    /// Byte position in the source file, nil when unknown.
    public var position: Int64? { pointer.pointee.pos >= 0 ? pointer.pointee.pos : nil }

    public var isKeyframe: Bool {
        get { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
        set { setFlag(AV_PKT_FLAG_KEY, newValue) }
    }
    /// The demuxer marked the packet corrupt.
    public var isCorrupt: Bool { pointer.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 }
    /// The packet must be decoded but its output dropped (edit-list priming, for example).
    public var isDiscardable: Bool { pointer.pointee.flags & AV_PKT_FLAG_DISCARD != 0 }

    /// Calls `body` with the packet's bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer.pointee.data, count: Int(pointer.pointee.size)))
    }

    /// Rescales pts, dts and duration from one time base to another. The corresponding C function is `av_packet_rescale_ts`.
    public func rescaleTimestamps(from source: Rational, to target: Rational) {
        av_packet_rescale_ts(pointer, source.avRational, target.avRational)
    }

    private func setFlag(_ flag: Int32, _ on: Bool) {
        if on { pointer.pointee.flags |= flag } else { pointer.pointee.flags &= ~flag }
    }
}

func timestamp(_ value: Int64) -> Int64? { value == cffmpeg_AV_NOPTS_VALUE() ? nil : value }

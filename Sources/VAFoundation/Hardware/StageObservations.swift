import FFmpegSupport

/// What the video stages of one export actually did, recorded by the stages as they run:
/// where pictures were decoded, scaled and encoded, and every copy between GPU surfaces and
/// host memory. The export reports its path from this, not from its plan, and counts only
/// its own copies (a process running several exports keeps them apart).
final class StageObservations: Sendable {
    /// Where a stage ran.
    enum Place: String, Sendable { case device, host }

    struct Record: Sendable {
        var decode: Place?
        /// Where interlaced pictures were deinterlaced (the device's video processor, or bwdif on the host).
        var deinterlace: Place?
        var scale: Place?
        var encode: Place?
        /// Pictures a video composition drew on the device and in host memory, and why the
        /// first host one was not drawn on the device.
        var compositedOnDevice = 0
        var compositedOnHost = 0
        var hostCompositionReason: String?
        var transfers = 0
        var transferBytes = 0
    }

    private let record = Locked(Record())

    var snapshot: Record { record.withLock { $0 } }

    func decoded(on place: Place) { record.withLock { if $0.decode == nil { $0.decode = place } } }
    func deinterlaced(on place: Place) { record.withLock { if $0.deinterlace == nil || place == .host { $0.deinterlace = place } } }
    func scaled(on place: Place) { record.withLock { if $0.scale == nil || place == .host { $0.scale = place } } }
    func encoded(on place: Place) { record.withLock { if $0.encode == nil { $0.encode = place } } }

    /// One picture of a video composition drawn at `place`; `reason` says why not on the device.
    func composited(on place: Place, because reason: String? = nil) {
        record.withLock {
            switch place {
            case .device: $0.compositedOnDevice += 1
            case .host:
                $0.compositedOnHost += 1
                if $0.hostCompositionReason == nil { $0.hostCompositionReason = reason }
            }
        }
    }

    /// One copy of `frame` (the host side of the copy) between a surface and host memory.
    func transferred(_ frame: Frame) {
        record.withLock {
            $0.transfers += 1
            $0.transferBytes += frame.hostImageByteCount
        }
    }

    /// The path that ran, from what the stages saw; nil when no picture was decoded or encoded.
    var path: ExportResult.Path? {
        let r = snapshot
        guard let decode = r.decode, let encode = r.encode else { return nil }
        switch (decode, encode) {
        case (.device, .device) where r.scale != .host && r.compositedOnHost == 0 && r.transfers == 0: return .hardware
        case (.host, .host): return .software
        default: return .hybrid
        }
    }

    /// The stages in words: "decode on the device, scale on the host, encode on the host, 30 copies".
    var summary: String {
        let r = snapshot
        var parts: [String] = []
        if let d = r.decode { parts.append("decode on the \(d == .device ? "device" : "host")") }
        if let d = r.deinterlace { parts.append(d == .device ? "deinterlace by the device's video processor" : "deinterlace (bwdif) on the host") }
        if let s = r.scale { parts.append("scale on the \(s == .device ? "device" : "host")") }
        if r.compositedOnDevice > 0 { parts.append("\(r.compositedOnDevice) pictures composited on the device") }
        if r.compositedOnHost > 0 {
            parts.append("\(r.compositedOnHost) composited in host memory" + (r.hostCompositionReason.map { " (\($0))" } ?? ""))
        }
        if let e = r.encode { parts.append("encode on the \(e == .device ? "device" : "host")") }
        parts.append(r.transfers == 0 ? "no copy between surfaces and host memory" : "\(r.transfers) copies between surfaces and host memory")
        return parts.joined(separator: ", ")
    }
}

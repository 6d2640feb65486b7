import FFmpegSupport
import Foundation
import MediaCore
import Synchronization
import HardwareAcceleration

/// A full decode of every packet of every track of a file, to find damage: the health check
/// media libraries run on their files (`vaf verify`; `ffmpeg -v error -i F -f null -`).
///
/// Packets are read in file order and each goes to its track's decoder at once, so nothing
/// queues. Video is decoded on `hardwareDevice` when one is set and its driver takes the
/// stream; a device that fails mid-file has the file checked again in software, where damage
/// is told apart from the device. Subtitle and data tracks are read, not decoded. Software
/// decoders skip their deblocking filter: it cannot fail, and the pictures are not kept.
public final class AssetVerifier: Sendable {
    public let url: URL
    private let device = Locked<VADevice?>(nil)
    /// The file's bytes read so far, for progress.
    private let bytesRead = Atomic<Int64>(0)
    private let fileBytes = Atomic<Int64>(0)
    private let cancelled = Atomic<Bool>(false)
    /// The verifier's own thread: the demuxer and decoders are confined to it.
    private let stage = StageThread(name: "vaf.verify")

    public init(url: URL) {
        self.url = url
    }

    /// Decodes video on this VA-API device where its driver takes the stream. Nil (the
    /// default): the CPU only.
    public var hardwareDevice: VADevice? {
        get { device.withLock { $0 } }
        set { device.withLock { $0 = newValue } }
    }

    /// The share of the file read so far, 0 to 1.
    public var fractionRead: Double {
        let total = fileBytes.load(ordering: .relaxed)
        return total > 0 ? min(Double(bytesRead.load(ordering: .relaxed)) / Double(total), 1) : 0
    }

    /// Reads and decodes the whole file. Throws `MediaError` when it cannot be opened (missing,
    /// not media, its structure unreadable) or when cancelled; damage found inside it is the
    /// result's, not an error.
    public func verify() async throws -> AssetVerification {
        let path = url.path
        let device = hardwareDevice
        return try await withTaskCancellationHandler {
            try await withLockedThrowingContinuation { continuation in
                stage.async {
                    continuation.resume(with: Swift.Result { () throws(MediaError) -> AssetVerification in try self.run(path, device: device) })
                }
            }
        } onCancel: {
            cancelled.store(true, ordering: .relaxed)
        }
    }

    private func run(_ path: String, device: VADevice?) throws(MediaError) -> AssetVerification {
        stage.preconditionIsCurrent()
        fileBytes.store(try AssetInspector.checkReadableFile(path), ordering: .relaxed)
        guard let device else { return try pass(path, device: nil) }
        do {
            return try pass(path, device: device)
        } catch let failure where failure.code == .hardwareFailed {
            var result = try pass(path, device: nil)
            result.notes.append("checked again in software: \(failure.message)")
            return result
        }
    }

    /// One reading of the whole file, decoding on `device` when given.
    private func pass(_ path: String, device: VADevice?) throws(MediaError) -> AssetVerification {
        let demuxer: Demuxer
        do { demuxer = try Demuxer(path: path, mendingDiscontinuities: false) } catch { throw AssetInspector.openFailure(error, path: path) }
        var checks: [StreamCheck] = []
        for info in demuxer.streams {
            let check = StreamCheck(info, path: path, formatName: demuxer.formatName)
            if info.kind == .video || info.kind == .audio {
                do {
                    check.decoder = try Decoder(parameters: try demuxer.codecParameters(ofStream: info.index), timeBase: info.timeBase,
                                                hardware: info.kind == .video ? device?.hardware : nil, skippingLoopFilter: true)
                } catch {
                    check.undecodable = "cannot be decoded: \(error.message)"
                }
            }
            checks.append(check)
        }
        var readFailure: String?
        let packet = Packet()
        bytesRead.store(0, ordering: .relaxed)
        while true {
            if cancelled.load(ordering: .relaxed) { throw MediaError(.cancelled, "verification cancelled", path: path) }
            do throws(FFmpegError) {
                if try demuxer.readPacket(into: packet) == .endOfFile { break }
            } catch {
                let at = bytesRead.load(ordering: .relaxed)
                // The disk or the network failed, not the file: no verdict (another try may pass).
                if error.code == .ioError || error.code == .outOfMemory {
                    throw MediaError(.ioError, "reading failed after byte \(at): \(error.message)", path: path, underlying: error)
                }
                readFailure = "reading stopped after byte \(at) of \(fileBytes.load(ordering: .relaxed)): \(error.message)"
                break
            }
            if let position = packet.position { bytesRead.store(position + Int64(packet.size), ordering: .relaxed) }
            try checks[packet.streamIndex].take(packet)
        }
        for check in checks { try check.finish() }
        bytesRead.store(fileBytes.load(ordering: .relaxed), ordering: .relaxed)
        // Durations FFmpeg guessed from the bit rate are not declarations to hold the data to.
        let declared = !demuxer.durationIsEstimated
        let containerEnd = declared ? demuxer.durationMicroseconds.map { MediaTime(value: $0, timescale: 1_000_000) } : nil
        let tracks = checks.map(\.result).map { track in
            var track = track
            if !declared { track.declaredEnd = nil }
            return track
        }
        let onDevice = checks.contains { $0.decoder?.isDecodingToSurfaces == true }
        return AssetVerification(tracks: tracks, readFailure: readFailure, containerEnd: containerEnd, decodedOnDevice: onDevice,
                                 notes: onDevice ? [AssetVerification.deviceNote] : [])
    }
}

/// What a full decode found in a file.
public struct AssetVerification: Sendable {
    public enum Verdict: String, Sendable, CaseIterable { case ok, damaged, unreadable }

    public var tracks: [TrackVerification]
    /// Why reading stopped before the end of the file (cut short, or unreadable from there
    /// on); nil when it read to the end.
    public var readFailure: String?
    /// The file's duration as its container declares it, when it does.
    public var containerEnd: MediaTime?
    /// Whether video was decoded on a device.
    public var decodedOnDevice: Bool
    /// How the check ran, when that is worth saying (video decoded on a device, a device that
    /// failed mid-file).
    public var notes: [String] = []

    /// What a device's decode cannot tell: libavcodec conceals nothing on VA-API, and drivers
    /// report no damage inside a picture's data, so concealed frames are counted in software only.
    static let deviceNote = "video decoded on the device: damage inside pictures is not reported there (--hw off checks it in software)"

    /// A track or the file ends this much earlier than declared: data is missing. Below it,
    /// the gaps between a container's declared and its tracks' real ends in whole files (up to
    /// 0.13 s over the shared corpus: a phone's last frame lasting one tick).
    public static let missingTolerance = MediaTime(value: 1, timescale: 2)

    /// The longest stretch missing at the end of the file, by its container's duration, for a
    /// file whose tracks declare none of their own.
    public var missingAtEnd: MediaTime? {
        guard tracks.allSatisfy({ $0.declaredEnd == nil }), let containerEnd,
              let end = tracks.compactMap(\.end).max(), containerEnd - end > Self.missingTolerance else { return nil }
        return containerEnd - end
    }

    /// `.unreadable` when no track could be decoded; `.damaged` when anything was wrong;
    /// `.ok` when every packet of every track decoded cleanly and the data was all there.
    public var verdict: Verdict {
        let decodable = tracks.filter { $0.mediaType == .video || $0.mediaType == .audio }
        if !decodable.isEmpty && decodable.allSatisfy({ $0.frames == 0 }) { return .unreadable }
        if readFailure != nil || missingAtEnd != nil || tracks.contains(where: \.isDamaged) { return .damaged }
        return .ok
    }

    /// Every problem found, one line each: "video (h264, stream 0): 3 damaged packets at 1.20 s, …".
    public var problems: [String] {
        var lines = tracks.flatMap(\.problems)
        if let readFailure { lines.append(readFailure) }
        if let missing = missingAtEnd, let containerEnd {
            lines.append("the file ends \(seconds(missing)) early: its container declares \(seconds(containerEnd))")
        }
        if lines.isEmpty && verdict == .unreadable {
            lines.append(tracks.allSatisfy { $0.packets == 0 } ? "no packet could be read from any track" : "no frame decoded from any track")
        }
        return lines
    }
}

/// What a full decode found in one track.
public struct TrackVerification: Sendable {
    /// A jump in the presentation times of decoded frames: back before the previous frame, or
    /// forward leaving a gap longer than `TrackVerification.gapTolerance`.
    public struct TimestampJump: Sendable, Equatable {
        /// The frame's time after the jump.
        public var at: MediaTime
        /// From the previous frame's end to `at`: negative for a jump back.
        public var by: MediaTime
    }

    public var streamIndex: Int
    public var mediaType: MediaType
    public var codec: String
    /// The decoder that ran, nil for a track that is read only (subtitles, data) or cannot be decoded.
    public var decoder: String?
    public var packets: Int
    public var frames: Int
    /// The times of packets the decoder refused (`.invalid` where the packet had none), and of
    /// packets the demuxer marked corrupt.
    public var damagedPackets: [MediaTime]
    /// The times of frames decoded from damaged data, concealed by the decoder.
    public var concealedFrames: [MediaTime]
    public var timestampJumps: [TimestampJump]
    /// From the first decoded frame's time to the last one's end; nil when nothing decoded.
    public var start: MediaTime?
    public var end: MediaTime?
    /// Where the track declares it starts and ends (its start plus its declared duration, less
    /// an audio codec's priming, which FFmpeg counts in an Ogg stream's duration), when it does.
    public var declaredStart: MediaTime?
    public var declaredEnd: MediaTime?
    /// The samples a QuickTime/MP4 file's sample table says the track holds (within its edit);
    /// 0 for other containers, or an empty track.
    public var declaredSampleCount: Int64
    /// Why the track could not be decoded at all.
    public var undecodable: String?

    /// A gap between frames longer than this is a jump: ffmpeg's `-dts_delta_threshold`. Shorter
    /// ones are a variable frame rate's (a phone holds a picture for seconds).
    public static let gapTolerance = MediaTime(value: 10, timescale: 1)

    /// How much of the track is missing at its end: its declared end past its last frame's, beyond
    /// `AssetVerification.missingTolerance`; nil when none. With no frame decoded, a track that
    /// was meant to hold samples (packets were read, or the container counts some) misses all of
    /// it; one that holds none by its container's account is empty, not damaged.
    public var missing: MediaTime? {
        guard let declaredEnd else { return nil }
        let decodedEnd: MediaTime
        if let end {
            decodedEnd = end
        } else if packets > 0 || declaredSampleCount > 0, let declaredStart {
            decodedEnd = declaredStart
        } else {
            return nil
        }
        return declaredEnd - decodedEnd > AssetVerification.missingTolerance ? declaredEnd - decodedEnd : nil
    }

    /// Packets were read but the decoder made no frame of them.
    public var decodedNothing: Bool { decoder != nil && packets > 0 && frames == 0 }

    /// How many of the samples a video track's index lists could not be read (FFmpeg drops an
    /// index from an entry it refuses, such as an impossible sample size, on); nil when all
    /// were, or the container counts none. Audio is left out: containers count PCM in samples
    /// and edit lists trim AAC priming, so its packets rarely match the count.
    public var unreadSamples: Int? {
        guard mediaType == .video, declaredEnd != nil else { return nil }
        return Self.unreadSamples(declared: declaredSampleCount, read: packets)
    }

    /// The samples of `declared` (0: not counted) missing from the `read` ones, when more than
    /// a couple and 5 % are: edit lists trim a few, damage loses the rest. Nil otherwise.
    static func unreadSamples(declared: Int64, read: Int) -> Int? {
        let unread = Int(declared) - read
        return declared > 0 && unread > 2 && Double(read) < 0.95 * Double(declared) ? unread : nil
    }

    /// The samples a stream's index should yield, for a QuickTime/MP4 file (its sample table
    /// counts them; an AVI counts its dropped frames' empty chunks too, other formats count
    /// none): the table's count, or, where an edit list shows only part of the track (FFmpeg's
    /// index then drops the rest, and its duration is the edit's, but the count stays the
    /// whole track's), the frames of its declared duration. 0 where there is no such count.
    static func declaredSamples(_ stream: StreamInfo, formatName: String) -> Int64 {
        guard formatName.hasPrefix("mov,") else { return 0 }
        let rate = stream.averageFrameRate
        guard stream.declaredFrameCount > 0, let duration = stream.duration, rate.isPositive else { return stream.declaredFrameCount }
        let shown = (stream.timeBase.time(ofTicks: duration).seconds * rate.doubleValue).rounded(.up)
        return shown.isFinite && shown >= 1 ? min(stream.declaredFrameCount, Int64(shown)) : stream.declaredFrameCount
    }

    public var isDamaged: Bool {
        !damagedPackets.isEmpty || !concealedFrames.isEmpty || !timestampJumps.isEmpty || missing != nil || undecodable != nil || decodedNothing
            || unreadSamples != nil
    }

    /// The track's problems, one line each, led by what the track is.
    public var problems: [String] {
        let name = "\(mediaType.rawValue) (\(codec), stream \(streamIndex))"
        var lines: [String] = []
        if let undecodable { lines.append("\(name) \(undecodable)") }
        if !damagedPackets.isEmpty {
            lines.append("\(name): \(count(damagedPackets.count, "damaged packet")) at \(times(damagedPackets))")
        }
        if !concealedFrames.isEmpty {
            lines.append("\(name): \(count(concealedFrames.count, "frame")) decoded from damaged data (concealed) at \(times(concealedFrames))")
        }
        if !timestampJumps.isEmpty {
            let shown = timestampJumps.prefix(5).map { "\($0.by > .zero ? "+" : "")\(seconds($0.by)) at \(seconds($0.at))" }
            lines.append("\(name): timestamps jump \(count(timestampJumps.count, "time")): \(shown.joined(separator: ", "))\(timestampJumps.count > 5 ? ", …" : "")")
        }
        if decodedNothing { lines.append("\(name): \(count(packets, "packet")) decoded to no frame") }
        if let unreadSamples {
            lines.append("\(name): \(unreadSamples) of the \(declaredSampleCount) samples its index lists could not be read")
        }
        if let missing, let declaredEnd {
            let found = end.map { "its frames end at \(seconds($0))" } ?? "no frame decoded"
            lines.append("\(name): \(seconds(missing)) missing at the end: \(found), it declares \(seconds(declaredEnd))")
        }
        return lines
    }
}

private func seconds(_ time: MediaTime) -> String { time.isNumeric ? String(format: "%.2f s", time.seconds) : "?" }
private func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
private func times(_ list: [MediaTime]) -> String {
    list.prefix(5).map(seconds).joined(separator: ", ") + (list.count > 5 ? ", …" : "")
}

/// One stream's packets, decoder and findings, on the verifier's thread.
private final class StreamCheck {
    let info: StreamInfo
    let path: String
    /// The demuxer's name for the container ("mov,mp4,m4a,3gp,3g2,mj2").
    let formatName: String
    var decoder: Decoder?
    var undecodable: String?
    private var packets = 0
    private var frames = 0
    private var damaged: [MediaTime] = []
    private var concealed: [MediaTime] = []
    private var jumps: [TrackVerification.TimestampJump] = []
    private var start: MediaTime?
    private var previous: (start: MediaTime, end: MediaTime)?
    /// The time of the packet last sent: where a refusal at receive time happened.
    private var lastSent: MediaTime = .invalid
    /// A video frame's length when it does not say: one frame at the stream's average rate.
    private let nominalFrameDuration: MediaTime

    init(_ info: StreamInfo, path: String, formatName: String) {
        self.info = info
        self.path = path
        self.formatName = formatName
        let rate = info.averageFrameRate.isPositive ? info.averageFrameRate : info.realFrameRate
        nominalFrameDuration = rate.isPositive ? MediaTime(value: Int64(rate.denominator), timescale: rate.numerator) : .zero
    }

    private func time(_ ticks: Int64?) -> MediaTime { ticks.map { info.timeBase.time(ofTicks: $0) } ?? .invalid }

    /// Counts `packet` and decodes it, draining every frame it yields.
    func take(_ packet: Packet) throws(MediaError) {
        packets += 1
        if packet.isCorrupt { damaged.append(time(packet.pts ?? packet.dts)) }
        // An empty packet (an AVI's dropped frame) holds nothing to decode, and a decoder takes
        // one as the end of the stream, as ffmpeg knows and skips it.
        guard let decoder, packet.size > 0 else { return }
        while true {
            let sent: Decoder.SendResult
            do { sent = try decoder.send(packet) } catch {
                // Flagged by the demuxer already: one damaged packet, not two.
                if packet.isCorrupt { try rethrowUnlessDamage(error, at: time(packet.pts ?? packet.dts)) } else {
                    try refused(error, at: time(packet.pts ?? packet.dts))
                }
                return
            }
            try drain()
            if sent == .accepted {
                lastSent = time(packet.pts ?? packet.dts)
                return
            }
        }
    }

    /// Drains the decoder after the last packet.
    func finish() throws(MediaError) {
        guard let decoder else { return }
        do { try decoder.sendEndOfStream() } catch {
            // A threaded decoder reports an earlier packet's damage on a later send.
            try refused(error, at: lastSent)
            do { try decoder.sendEndOfStream() } catch { try refused(error, at: lastSent) }
        }
        try drain()
    }

    private func drain() throws(MediaError) {
        guard let decoder else { return }
        var errorsInARow = 0
        while true {
            let result: Decoder.ReceiveResult
            do { result = try decoder.receiveFrame() } catch {
                try refused(error, at: lastSent)
                // A decoder that keeps failing without moving on (each of a frame-threaded
                // decoder's threads reports once) is left, not asked forever.
                errorsInARow += 1
                if errorsInARow > Self.errorsInARowAtMost { return }
                continue
            }
            errorsInARow = 0
            guard case .frame(let frame) = result else { return }
            record(frame)
        }
    }

    /// More receive errors than this in a row end a drain: well past a decoder's threads.
    static let errorsInARowAtMost = 64

    private func record(_ frame: Frame) {
        frames += 1
        let at = time(frame.bestEffortTimestamp ?? frame.pts)
        if frame.isConcealed { concealed.append(at) }
        guard at.isNumeric else { return }
        let length: MediaTime = if info.kind == .audio, frame.sampleRate > 0 {
            MediaTime(value: Int64(frame.sampleCount), timescale: Int32(frame.sampleRate))
        } else if frame.duration > 0 {
            time(frame.duration)
        } else {
            nominalFrameDuration
        }
        if let previous, at < previous.start || at - previous.end > TrackVerification.gapTolerance {
            jumps.append(TrackVerification.TimestampJump(at: at, by: at - previous.end))
        }
        start = start.map { min($0, at) } ?? at
        previous = (at, max(at + length, previous?.end ?? at + length))
    }

    /// Counts a refusal by the decoder as damage at `time`, or rethrows one that is not about
    /// the data: memory, or a device (the file is then checked again in software).
    private func refused(_ error: FFmpegError, at time: MediaTime) throws(MediaError) {
        try rethrowUnlessDamage(error, at: time)
        damaged.append(time)
    }

    /// Throws for a refusal that is not about the data: a device decoding (the file is checked
    /// again in software), or memory.
    private func rethrowUnlessDamage(_ error: FFmpegError, at time: MediaTime) throws(MediaError) {
        if decoder?.isDecodingToSurfaces == true {
            throw MediaError(.hardwareFailed, "the device's \(info.codecName) decoder failed at \(seconds(time)): \(error.message)", path: path, underlying: error)
        }
        if error.code == .outOfMemory {
            throw MediaError(.ioError, "decoding \(info.codecName) (stream \(info.index)) ran out of memory", path: path, underlying: error)
        }
    }

    var result: TrackVerification {
        let mediaType: MediaType = switch info.kind {
        case .video: .video
        case .audio: .audio
        case .subtitle: .subtitle
        default: .data
        }
        let declaredStart = time(info.startTime ?? 0)
        let priming = info.kind == .audio && info.sampleRate > 0 && info.initialPadding > 0
            ? MediaTime(value: Int64(info.initialPadding), timescale: Int32(info.sampleRate)) : .zero
        let declaredEnd = info.duration.map { time((info.startTime ?? 0) + $0) - priming }
        // A cover picture's declared span is the file's, not its own.
        let decodes = decoder != nil && !info.isAttachedPicture
        return TrackVerification(streamIndex: info.index, mediaType: mediaType, codec: info.codecName, decoder: decoder?.name,
                                 packets: packets, frames: frames, damagedPackets: damaged, concealedFrames: concealed,
                                 timestampJumps: jumps, start: start, end: previous?.end, declaredStart: decodes ? declaredStart : nil,
                                 declaredEnd: decodes ? declaredEnd : nil, declaredSampleCount: TrackVerification.declaredSamples(info, formatName: formatName),
                                 undecodable: undecodable)
    }
}

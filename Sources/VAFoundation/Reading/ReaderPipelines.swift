import FFmpegSupport
import HardwareAcceleration

/// Produces one track's samples for a reader output.
protocol TrackPipeline: AnyObject {
    func next() throws(MediaError) -> SampleBuffer?
    /// Stops reading the stream: the shared demuxer queues no more of its packets.
    func stop()
    /// Damaged packets skipped so far, in words; nil when none.
    var damageReport: String? { get }
    /// Frames decoded and damaged packets skipped so far; nil for a pipeline that does not decode one stream.
    var decodeTally: DecodeTally? { get }
}

extension TrackPipeline {
    var damageReport: String? { nil }
    var decodeTally: DecodeTally? { nil }
}

/// What a decoder made of its stream: frames decoded and packets refused as damaged. It is
/// also the cause a stream's error-rate failure carries, so an export can weigh every track's
/// damage together as ffmpeg does.
struct DecodeTally: Error, Sendable, Hashable {
    var decoded: Int
    var damaged: Int

    /// More than `DecodeLoop.maximumErrorRate` of the packets were damaged.
    var exceedsErrorRate: Bool { Double(damaged) > DecodeLoop.maximumErrorRate * Double(damaged + decoded) }

    static func + (a: DecodeTally, b: DecodeTally) -> DecodeTally { DecodeTally(decoded: a.decoded + b.decoded, damaged: a.damaged + b.damaged) }
}

/// A reading range in one stream's time base: `start ..< end` ticks, end nil when open. Counted
/// exactly in the stream's own clock (a 29.97 fps AVI's 1001/30000), never in whole ticks per second.
struct TickRange {
    var start: Int64
    var end: Int64?

    init(_ range: MediaTimeRange, timeBase: Rational) {
        start = range.start.isNumeric ? (timeBase.clock?.clampedTicks(of: range.start, rounding: .roundTowardNegativeInfinity) ?? -TimeBase.safeTickBound)
            : -TimeBase.safeTickBound
        let end = range.end
        self.end = end.isNumeric ? timeBase.clock?.clampedTicks(of: end, rounding: .roundTowardPositiveInfinity) : nil
    }
}

/// Compressed samples exactly as stored, from the keyframe at or before the range start.
final class PassthroughPipeline: TrackPipeline {
    let session: DemuxSession
    let track: AssetTrack
    let timeBase: Rational
    let range: TickRange
    private var parameters: CodecParameters?
    /// Video packets read without a decode time, waiting for the first that has one.
    private var withoutDTS: [Packet] = []
    /// Packets whose decode time is settled, to hand out before reading more.
    private var settled: [Packet] = []
    private lazy var fileSize: Int64 = Asset.fileSize(atPath: session.path) ?? .max
    /// The samples left out for that: their presentation times (ticks), sizes read and sizes listed.
    private var cutOff: [(pts: Int64?, read: Int, listed: Int)] = []

    init(session: DemuxSession, track: AssetTrack, timeRange: MediaTimeRange) {
        self.session = session
        self.track = track
        self.timeBase = session.streams[track.streamIndex].timeBase
        self.range = TickRange(timeRange, timeBase: timeBase)
    }

    func next() throws(MediaError) -> SampleBuffer? {
        if parameters == nil { parameters = try session.codecParameters(stream: track.streamIndex) }
        while true {
            guard let packet = try nextPacketWithDecodeTime() else { return nil }
            let pts = packet.pts ?? packet.dts
            // A packet ending at the end of the file, shorter than the index lists it, was cut
            // off there (FFmpeg hands out what it could read). Shorter packets elsewhere are
            // FFmpeg's own doing (captions repacked, samples a parser split) and are whole.
            if let position = packet.position, position + Int64(packet.size) >= fileSize,
               let listed = session.indexedSampleSize(stream: track.streamIndex, at: position), packet.size < listed {
                // Copied, it would be a damaged sample that no decoder can read.
                cutOff.append((pts, packet.size, listed))
                continue
            }
            if let end = range.end, let pts, pts >= end, packet.isKeyframe || track.mediaType != .video {
                session.finish(stream: track.streamIndex)
                return nil
            }
            if let end = range.end, let dts = packet.dts, dts >= end { continue }
            var attachments = SampleAttachments()
            attachments.isSync = packet.isKeyframe
            attachments.dependsOnOthers = !packet.isKeyframe
            attachments.doNotDisplay = packet.isDiscardable || (pts.map { $0 + max(packet.duration, 1) <= range.start } ?? false)
            return SampleBuffer(
                content: .compressed, packet: packet, codecParameters: parameters,
                presentationTimeStamp: pts.map { timeBase.time(ofTicks: $0) } ?? .invalid,
                decodeTimeStamp: packet.dts.map { timeBase.time(ofTicks: $0) } ?? .invalid,
                duration: timeBase.time(ofTicks: packet.duration), formatDescription: track.formatDescription,
                attachments: attachments)
        }
    }

    /// The next packet, with a decode time. Matroska stores none: FFmpeg derives one from the
    /// presentation times once a stream's reorder delay has passed, so the first few B-frame
    /// stream packets come without one, and muxers need increasing decode times. Those take
    /// the first derived time, one frame earlier per packet back (as ffmpeg's own remux does).
    private func nextPacketWithDecodeTime() throws(MediaError) -> Packet? {
        if !settled.isEmpty { return settled.removeFirst() }
        while true {
            guard case .packet(let packet) = try session.nextPacket(stream: track.streamIndex) else {
                // No packet with a decode time came: the held ones go in presentation order.
                let held = withoutDTS.sorted { ($0.pts ?? 0) < ($1.pts ?? 0) }.map(\.pts)
                for (packet, time) in zip(withoutDTS, held) { packet.dts = time }
                settled = withoutDTS
                withoutDTS = []
                return settled.isEmpty ? nil : settled.removeFirst()
            }
            guard track.mediaType == .video, packet.pts != nil else { return packet }
            guard let dts = packet.dts else {
                withoutDTS.append(packet)
                continue
            }
            if withoutDTS.isEmpty { return packet }
            let step = max(packet.duration, frameDurationTicks, 1)
            for (k, held) in withoutDTS.enumerated() {
                held.dts = min(dts - Int64(withoutDTS.count - k) * step, held.pts ?? .max)
            }
            settled = withoutDTS + [packet]
            withoutDTS = []
            return settled.removeFirst()
        }
    }

    func stop() { session.finish(stream: track.streamIndex) }

    var damageReport: String? {
        guard let first = cutOff.first else { return nil }
        let times = damageTimes(cutOff.map(\.pts), timeBase)
        return "\(cutOff.count) sample\(cutOff.count == 1 ? "" : "s") cut off by the end of the file (the first: \(first.read) of the \(first.listed) bytes "
            + "its index lists) at \(times): not copied"
    }

    /// The track's shortest frame duration in its time base, 0 when unknown.
    private var frameDurationTicks: Int64 {
        guard track.minFrameDuration.isNumeric else { return 0 }
        return timeBase.ticks(of: track.minFrameDuration) ?? 0
    }
}

/// Feeds one stream's packets to a decoder and drains every frame each packet yields.
final class DecodeLoop {
    let session: DemuxSession
    let stream: Int
    let decoder: Decoder
    let path: String
    private var pending: Packet?
    private var inputEnded = false
    /// Frames decoded, and the presentation times (stream ticks; nil when unknown) of the
    /// packets the decoder refused as damaged and skipped.
    private(set) var framesDecoded = 0
    private(set) var damagedPackets: [Int64?] = []
    /// The presentation times of frames the decoder made from damaged data (a corrupt slice,
    /// a missing reference), concealing what it could: decoded and counted, not skipped.
    private(set) var concealedFrames: [Int64?] = []
    /// The decode time of the packet last sent: where a refusal at receive time happened.
    private var lastSentTime: Int64?
    /// Above this share of damaged packets the stream counts as undecodable (ffmpeg's
    /// `-max_error_rate` default, 2/3).
    static let maximumErrorRate = 2.0 / 3.0

    /// Surfaces a hardware decoder keeps beyond its references: every picture the VPP, the
    /// writer's queue and a VA encoder may hold (FFmpeg 5.1's decoder pools cannot grow).
    static let extraHardwareFrames = 20

    /// A decoder for `stream`, decoding into VA surfaces on `hardware` when the driver takes it;
    /// `threadCount` 0 lets FFmpeg choose.
    init(session: DemuxSession, stream: Int, hardware: HardwareDeviceContext? = nil, threadCount: Int = 0,
         extraHardwareFrames: Int = DecodeLoop.extraHardwareFrames) throws(MediaError) {
        self.session = session
        self.stream = stream
        self.path = session.path
        let info = session.streams[stream]
        let parameters = try session.codecParameters(stream: stream)
        do throws(FFmpegError) {
            decoder = try Decoder(parameters: parameters, timeBase: info.timeBase, threadCount: threadCount, hardware: hardware,
                                  extraHardwareFrames: hardware == nil ? 0 : extraHardwareFrames)
        } catch {
            throw MediaError(.unsupported, "cannot decode \(info.codecName) (stream \(stream))", path: session.path, underlying: error)
        }
    }

    /// The next decoded frame, or nil when the stream is exhausted or reading was cancelled.
    ///
    /// Like ffmpeg, a damaged packet is skipped (the decoder conceals what it can) and counted;
    /// the stream fails only when more than `maximumErrorRate` of its packets were damaged, or
    /// when none decoded. A decoder on a VA device rethrows at once, so the export can redo the
    /// work in software, which then tolerates the damage.
    func nextFrame() throws(MediaError) -> Frame? {
        while true {
            let result: Decoder.ReceiveResult
            do { result = try decoder.receiveFrame() } catch {
                try skipDamage(error, at: lastSentTime)
                continue
            }
            switch result {
            case .frame(let frame):
                framesDecoded += 1
                if frame.isConcealed { concealedFrames.append(frame.bestEffortTimestamp ?? frame.pts) }
                return frame
            case .endOfStream:
                session.finish(stream: stream)
                try checkErrorRate()
                return nil
            case .needsInput:
                if let packet = pending {
                    do {
                        if try decoder.send(packet) == .accepted {
                            pending = nil
                            lastSentTime = packet.pts ?? packet.dts
                        }
                    } catch {
                        pending = nil
                        try skipDamage(error, at: packet.pts ?? packet.dts)
                    }
                    continue
                }
                guard !inputEnded else { return nil }
                switch try session.nextPacket(stream: stream) {
                case .packet(let packet) where packet.size == 0:
                    // An empty packet (an AVI's dropped frame) holds nothing, and a decoder
                    // takes one as the end of the stream: ffmpeg skips it too.
                    continue
                case .packet(let packet):
                    pending = packet
                case .endOfStream:
                    inputEnded = true
                    // A threaded decoder reports an earlier packet's damage on a later send,
                    // this one included: count it and ask again to drain.
                    do { try decoder.sendEndOfStream() } catch {
                        try skipDamage(error, at: lastSentTime)
                        do { try decoder.sendEndOfStream() } catch {
                            try skipDamage(error, at: lastSentTime)
                            session.finish(stream: stream)
                            try checkErrorRate()
                            return nil
                        }
                    }
                case .cancelled:
                    return nil
                }
            }
        }
    }

    /// Stops decoding early: the rest of the stream is not needed.
    func stop() { session.finish(stream: stream) }

    private func decodeFailure(_ error: FFmpegError) -> MediaError {
        MediaError(.decodeFailed, "decoding \(session.streams[stream].codecName) (stream \(stream)) failed: \(error.message)",
                   path: path, underlying: error)
    }

    /// Counts a packet the decoder refused, or rethrows when the refusal is not about damage
    /// (memory, a device).
    private func skipDamage(_ error: FFmpegError, at time: Int64?) throws(MediaError) {
        guard error.code != .outOfMemory, !decoder.usesDevice else { throw decodeFailure(error) }
        // Counted only: like ffmpeg's error rate, the rule is measured over the whole track at its
        // end (`checkErrorRate`), so a track whose first stretch is damaged still decodes the rest.
        damagedPackets.append(time)
        lastError = error
    }

    private var lastError: FFmpegError?

    var tally: DecodeTally { DecodeTally(decoded: framesDecoded, damaged: damagedPackets.count) }

    /// Throws when the share of damaged packets exceeds `maximumErrorRate`, or nothing decoded.
    /// Past the rate with frames decoded, the error's cause is the tally: every frame that
    /// decoded has been handed out by then, and an export weighs all its tracks together.
    private func checkErrorRate() throws(MediaError) {
        guard let error = lastError, !damagedPackets.isEmpty else { return }
        if framesDecoded == 0 || tally.exceedsErrorRate { throw undecodable(error) }
    }

    /// The stream's failure for its damage, the last decoder error in words. Its cause is the
    /// tally, so an export can tell a track's own damage from a failure of the whole reader.
    private func undecodable(_ error: FFmpegError) -> MediaError {
        MediaError(.decodeFailed, "decoding \(session.streams[stream].codecName) (stream \(stream)) failed: \(damagedPackets.count) damaged packets against \(framesDecoded) decoded frames (last: \(error.message))",
                   path: path, underlying: tally)
    }

    /// The damage in words, nil when there was none: "3 damaged packets skipped (decoder
    /// concealment) at 1.20 s, 4.80 s, …; 2 frames decoded from damaged data (concealed) at …".
    var damageReport: String? {
        let timeBase = session.streams[stream].timeBase
        func times(_ list: [Int64?]) -> String { damageTimes(list, timeBase) }
        var parts: [String] = []
        if !damagedPackets.isEmpty {
            parts.append("\(damagedPackets.count) damaged packet\(damagedPackets.count == 1 ? "" : "s") skipped (decoder concealment) at \(times(damagedPackets))")
        }
        if !concealedFrames.isEmpty {
            parts.append("\(concealedFrames.count) frame\(concealedFrames.count == 1 ? "" : "s") decoded from damaged data (concealed) at \(times(concealedFrames))")
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }
}

/// Decoded pictures in the requested format and size, frame-accurate within the range.
///
/// With a device, frames are decoded into VA surfaces. Surface output (`.vaapiSurface`) keeps
/// them there, scaled by the device's video processor into a bounded surface pool; a host
/// format downloads each once (counted). A stream the driver cannot decode comes out of the
/// decoder in host memory; surface output then vends host NV12/P010 for the writer to upload.
final class VideoDecodePipeline: TrackPipeline {
    let loop: DecodeLoop
    var decodeTally: DecodeTally? { loop.tally }
    var damageReport: String? {
        let dropped = outOfOrder.isEmpty ? nil
            : "\(outOfOrder.count) picture\(outOfOrder.count == 1 ? "" : "s") out of order dropped (damaged stream) at \(damageTimes(outOfOrder, timeBase))"
        let parts = [loop.damageReport, dropped, filters.subtitleDamageReport].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }
    let track: AssetTrack
    let attributes: PixelBufferAttributes
    /// The host format pictures are converted to (NV12 or P010 when surfaces were asked for).
    let targetFormat: PixelFormatID
    let wantsSurfaces: Bool
    let timeBase: Rational
    let range: TickRange
    private let device: VADevice?
    /// Told where pictures were decoded and scaled, and of each copy to host memory.
    private let observations: StageObservations?
    private var scaler: Scaler?
    /// Deinterlacing and tone mapping, between the decoder and the fitting.
    private let filters: PictureFilters
    private var surfaceScaler: SurfaceScaler?
    /// Host frames converted pictures are written into, recycled once their consumer lets go.
    private var outputFrames: FramePool?
    private var lastEnd: Int64?
    /// The presentation time of the latest picture vended: pictures come out in presentation
    /// order, so one at or before it (a damaged stream confusing the decoder's reordering) is
    /// dropped and its time kept here, as ffmpeg drops it.
    private var lastVended: Int64?
    private var outOfOrder: [Int64] = []
    /// Surfaces the reader's video processor renders into: enough for the writer's queue, a
    /// VA encoder's look-ahead and a frame-rate converter's held picture.
    static let surfacePoolCapacity = PipelineBounds.readerSurfaces
    /// Host frames recycled for converted pictures: the writer's queue, the edge's picture and
    /// a frame-rate converter's; more in use at once are allocated and freed as before.
    static let hostFramePoolCapacity = PipelineBounds.readerHostFrames

    init(session: DemuxSession, track: AssetTrack, attributes: PixelBufferAttributes, timeRange: MediaTimeRange,
         device: VADevice? = nil, observations: StageObservations? = nil, decoderThreads: Int = 0,
         extraDeviceSurfaces: Int = DecodeLoop.extraHardwareFrames) throws(MediaError) {
        self.observations = observations
        wantsSurfaces = attributes.pixelFormat == .vaapiSurface
        let deep = (track.formatDescription.video?.bitDepth ?? 8) > 8
        let format: PixelFormatID
        if wantsSurfaces {
            guard device != nil else {
                throw MediaError(.invalidArgument, "GPU-surface output needs the output's hardwareDevice", path: session.path)
            }
            format = deep ? .p010 : .nv12
        } else {
            guard let id = PixelFormatID(attributes.pixelFormat), !id.isHardware else {
                throw MediaError(.unsupported, "pixel format \(attributes.pixelFormat) cannot be produced in host memory", path: session.path)
            }
            format = id
        }
        if let w = attributes.width, let h = attributes.height, w <= 0 || h <= 0 {
            throw MediaError(.invalidArgument, "output size \(w)x\(h) is not positive", path: session.path)
        }
        self.loop = try DecodeLoop(session: session, stream: track.streamIndex, hardware: device?.hardware, threadCount: decoderThreads,
                                   extraHardwareFrames: extraDeviceSurfaces)
        self.track = track
        self.attributes = attributes
        self.targetFormat = format
        self.device = device
        self.timeBase = session.streams[track.streamIndex].timeBase
        self.range = TickRange(timeRange, timeBase: timeBase)
        // Surfaces that stay on the device are deinterlaced there where its video processor can.
        // The subtitles filter numbers a file's subtitle streams among themselves.
        let burnIn = attributes.burnedSubtitles.flatMap { burn in
            burn.isBitmap ? nil : (path: burn.path, index: session.streams.filter { $0.kind == .subtitle && $0.index < burn.streamIndex }.count)
        }
        self.filters = PictureFilters(loop: loop, stream: session.streams[track.streamIndex], attributes: attributes, subtitles: burnIn,
                                      bitmapSubtitles: attributes.burnedSubtitles.flatMap { $0.isBitmap ? $0 : nil },
                                      subtitleDevice: device.flatMap { [wantsSurfaces] device in
                                          wantsSurfaces && HardwareJob.drawsSubtitlesOnVPP(device.capabilities)
                                              ? SubtitleLayerDevice(hardware: device.hardware,
                                                                    minimumInput: device.capabilities.videoProcessing?.pipeline?.minInputSize) : nil
                                      },
                                      outputFormat: format, observations: observations,
                                      deviceDeinterlaces: wantsSurfaces && device.map { HardwareJob.deinterlacesOnVPP($0.capabilities) } == true)
    }

    /// A decoded picture with its time and how long it shows, in stream ticks.
    private typealias TimedFrame = (frame: Frame, pts: Int64, duration: Int64)
    /// The latest picture shown before the range start: it is the one on screen at the start
    /// unless the next picture starts there, whatever its own duration claims (VFR phone
    /// clips store one-tick durations).
    private var shownBeforeStart: TimedFrame?
    /// The picture read while deciding on `shownBeforeStart`, vended right after it.
    private var readAhead: TimedFrame?

    func next() throws(MediaError) -> SampleBuffer? {
        if let waiting = readAhead {
            readAhead = nil
            return try vend(waiting)
        }
        while let frame = try filters.next() {
            let pts = frame.bestEffortTimestamp ?? frame.pts ?? lastEnd ?? 0
            let fallback = timeBase.ticks(of: track.minFrameDuration) ?? 1
            let duration = frame.duration > 0 ? frame.duration : max(fallback, 1)
            if let last = lastVended ?? shownBeforeStart?.pts, pts <= last {
                outOfOrder.append(pts)
                continue
            }
            lastEnd = pts + duration
            if let end = range.end, pts >= end {
                loop.stop()
                return try takeShownBeforeStart(endedAt: pts).map(vend)
            }
            let current: TimedFrame = (frame, pts, duration)
            if pts < range.start {
                shownBeforeStart = current
                continue
            }
            if pts > range.start, let held = shownBeforeStart {
                shownBeforeStart = nil
                readAhead = current
                return try vend(held)
            }
            shownBeforeStart = nil
            return try vend(current)
        }
        return try takeShownBeforeStart(endedAt: nil).map(vend)
    }

    /// The picture held from before the range start once nothing later came inside the range:
    /// still on screen at the start when the next picture (at `next`, nil at the stream's end,
    /// where its own duration decides) comes after the start.
    private func takeShownBeforeStart(endedAt next: Int64?) -> TimedFrame? {
        guard let held = shownBeforeStart else { return nil }
        shownBeforeStart = nil
        return (next ?? held.pts + held.duration) > range.start ? held : nil
    }

    private func vend(_ timed: TimedFrame) throws(MediaError) -> SampleBuffer {
        lastVended = timed.pts
        // What the decoder said of this picture (a JPEG's EXIF tags), before conversion drops it.
        var attachments = SampleAttachments()
        let metadata = timed.frame.metadata
        if !metadata.isEmpty {
            attachments[SampleAttachments.metadataDictionary] = .dictionary(metadata.mapValues { .string($0) })
        }
        let picture = try convert(timed.frame)
        return SampleBuffer(content: .pixelBuffer(picture), packet: nil, codecParameters: nil,
                            presentationTimeStamp: timeBase.time(ofTicks: timed.pts), decodeTimeStamp: .invalid,
                            duration: timeBase.time(ofTicks: timed.duration), formatDescription: outputFormat(picture),
                            attachments: attachments)
    }

    func stop() { loop.stop() }

    private func outputFormat(_ picture: PixelBuffer) -> FormatDescription {
        var format = track.formatDescription
        format.video?.width = picture.width
        format.video?.height = picture.height
        format.video?.pixelFormat = picture.pixelFormat.rawValue
        format.video?.bitDepth = targetFormat.bitDepth
        return format
    }

    /// The frame itself when it already matches; otherwise scaled and converted, on the
    /// device for surfaces that stay there.
    private func convert(_ decoded: Frame) throws(MediaError) -> PixelBuffer {
        let width = attributes.width ?? decoded.width
        let height = attributes.height ?? decoded.height
        var frame = decoded
        do {
            if let layout = decoded.surfaceSoftwareFormat {
                if wantsSurfaces {
                    if layout == targetFormat && decoded.width == width && decoded.height == height { return PixelBuffer(frame: decoded) }
                    observations?.scaled(on: .device)
                    return PixelBuffer(frame: try scaleOnDevice(decoded, width: width, height: height))
                }
                frame = try decoded.transferToHost()
                observations?.transferred(frame)
            }
        } catch {
            throw MediaError(.hardwareFailed, "cannot \(wantsSurfaces ? "scale" : "download") a \(decoded.width)x\(decoded.height) surface on the device",
                             path: loop.path, underlying: error)
        }
        if frame.pixelFormat == targetFormat && frame.width == width && frame.height == height {
            return PixelBuffer(frame: frame)
        }
        observations?.scaled(on: .host)
        do {
            let output = try outputFrame(width: width, height: height)
            let fit = PictureFit(source: Size(width: frame.width, height: frame.height), pixelAspect: frame.pixelAspect,
                                 output: Size(width: width, height: height), mode: attributes.scalingMode.pictureFit)
            if fit.hasBars { try output.fillBlack() }
            let source = try frame.cropped(to: fit.source)
            let (x, y, w, h) = (fit.output.pixelX, fit.output.pixelY, fit.output.pixelWidth, fit.output.pixelHeight)
            // A downloaded surface says its range only in its tag (NV12 has no "j" variant).
            let sourceFull = source.isFullRange ?? source.pixelFormat.impliesFullRange
            if scaler == nil || scaler!.sourceWidth != source.width || scaler!.sourceHeight != source.height
                || scaler!.sourceFormat != source.pixelFormat || scaler!.outputWidth != w || scaler!.outputHeight != h
                || scaler!.sourceFullRange != sourceFull {
                // Host pictures vended in place of surfaces keep their range, as the video processor does.
                scaler = try Scaler(from: source.width, source.height, source.pixelFormat, to: w, h, targetFormat, sourceFullRange: sourceFull,
                                    outputFullRange: wantsSurfaces ? sourceFull : nil)
            }
            try scaler!.scale(source, into: output, x: x, y: y)
            return PixelBuffer(frame: output)
        } catch {
            throw MediaError(.unsupported, "cannot convert \(frame.width)x\(frame.height) \(frame.pixelFormat) to \(width)x\(height) \(targetFormat)",
                             path: loop.path, underlying: error)
        }
    }
}

extension VideoDecodePipeline {
    /// A frame to convert a picture into, from the pool while it has one free.
    private func outputFrame(width: Int, height: Int) throws(FFmpegError) -> Frame {
        if let pool = outputFrames, pool.width == width, pool.height == height, let frame = try pool.makeFrame() {
            return frame
        }
        if outputFrames == nil || outputFrames!.width != width || outputFrames!.height != height {
            outputFrames = try FramePool(width: width, height: height, pixelFormat: targetFormat, capacity: Self.hostFramePoolCapacity)
            if let frame = try outputFrames!.makeFrame() { return frame }
        }
        return try Frame(width: width, height: height, pixelFormat: targetFormat)
    }

    /// `surface` scaled by the device's video processor into the reader's surface pool. Throws
    /// FFmpeg's errors for the pool and `VAError` for the video processor.
    private func scaleOnDevice(_ surface: Frame, width: Int, height: Int) throws -> Frame {
        if surfaceScaler == nil, let device {
            let pool = try SurfacePool(device: device.hardware, width: width, height: height, softwareFormat: targetFormat,
                                       capacity: Self.surfacePoolCapacity)
            surfaceScaler = try SurfaceScaler(output: pool)
        }
        guard let surfaceScaler else { throw FFmpegError(code: .invalidArgument, function: "SurfaceScaler (no device)") }
        return try surfaceScaler.scale(surface, fit: attributes.scalingMode.pictureFit)
    }
}

extension ScalingMode {
    /// How every scaler places the picture for this mode.
    var pictureFit: PictureFit.Mode {
        switch self {
        case .resize: .stretch
        case .resizeAspect: .fit
        case .resizeAspectFill: .fill
        }
    }
}

extension Frame {
    /// The frame itself, or a reference to it cropped to `rectangle` (no pixels copied).
    func cropped(to rectangle: Rect) throws(FFmpegError) -> Frame {
        let (x, y, w, h) = (rectangle.pixelX, rectangle.pixelY, rectangle.pixelWidth, rectangle.pixelHeight)
        guard w != width || h != height else { return self }
        let cropped = try reference()
        try cropped.crop(left: x, top: y, right: width - w - x, bottom: height - h - y)
        return cropped
    }
}

/// The first five of `ticks` as seconds ("1.20 s, 4.80 s, …"), for damage reports; "?" where unknown.
func damageTimes(_ ticks: [Int64?], _ timeBase: Rational) -> String {
    ticks.prefix(5).map { $0.map { String(format: "%.2f s", timeBase.time(ofTicks: $0).seconds) } ?? "?" }.joined(separator: ", ")
        + (ticks.count > 5 ? ", …" : "")
}

func evenRounded(_ value: Double) -> Int { max(2, Int((value / 2).rounded()) * 2) }

/// Decoded audio as linear PCM in the requested layout, trimmed exactly to the range.
final class AudioDecodePipeline: TrackPipeline {
    let loop: DecodeLoop
    var damageReport: String? { loop.damageReport }
    var decodeTally: DecodeTally? { loop.tally }
    let track: AssetTrack
    let pcm: LinearPCMSettings
    let targetFormat: SampleFormatID
    let timeBase: Rational
    let range: MediaTimeRange
    private var resampler: Resampler?
    /// Position of the next output sample, in samples at the output rate.
    private var nextSample: Int64?
    private var drained = false
    /// Where the latest decoded block ends on the stream's clock, and its length in samples.
    private var inputEnd: (time: MediaTime, samples: Int)?
    /// Damaged packets the decoder had skipped by the latest decoded block.
    private var damageSeen = 0
    /// Blocks waiting their turn, first first: a decoded block while the silence that takes
    /// the place of damaged packets before it is converted, or while the resampler made for
    /// other parameters is drained.
    private var waitingInputs: [Frame] = []
    /// The rate, channel count and layout of the converted audio, fixed by the first block.
    private var outputShape: (rate: Int, channels: Int, layout: String?)?

    init(session: DemuxSession, track: AssetTrack, pcm: LinearPCMSettings, timeRange: MediaTimeRange) throws(MediaError) {
        guard let format = SampleFormatID(pcm.sampleFormat) else {
            throw MediaError(.unsupported, "PCM format \(pcm.sampleFormat) is unknown to FFmpeg", path: session.path)
        }
        self.loop = try DecodeLoop(session: session, stream: track.streamIndex)
        self.track = track
        self.pcm = pcm
        self.targetFormat = format
        self.timeBase = session.streams[track.streamIndex].timeBase
        self.range = timeRange
    }

    var outputRate: Int { outputShape?.rate ?? pcm.sampleRate ?? track.formatDescription.audio?.sampleRate ?? 48000 }

    func stop() { loop.stop() }

    func next() throws(MediaError) -> SampleBuffer? {
        while true {
            guard let converted = try nextConverted() else { return nil }
            let (frame, position) = converted
            if let sample = try trimmed(frame, at: position) { return sample }
        }
    }

    /// The next block of converted samples and its position in output samples.
    private func nextConverted() throws(MediaError) -> (Frame, Int64)? {
        while true {
            if drained { return nil }
            var input: Frame?
            if !waitingInputs.isEmpty {
                input = waitingInputs.removeFirst()
            } else {
                input = try loop.nextFrame()
                if let decoded = input, let silence = try silence(replacingDamageBefore: decoded) {
                    waitingInputs.append(decoded)
                    input = silence
                }
            }
            if input == nil && resampler == nil { return nil }
            // The stream's rate, format or channels changed (a damaged header): what the
            // resampler holds is drained first, then a new one takes the block.
            var changing = false
            if let decoded = input, let current = resampler, !current.accepts(decoded) {
                waitingInputs.insert(decoded, at: 0)
                input = nil
                changing = true
            }
            do {
                if let input, resampler == nil {
                    // After a change mid-stream the output keeps the first block's rate and layout.
                    let shape = outputShape ?? (rate: pcm.sampleRate ?? input.sampleRate, channels: pcm.channelCount ?? input.channelCount,
                                                layout: pcm.channelLayout ?? (pcm.channelCount == nil ? input.channelLayout : nil))
                    outputShape = shape
                    resampler = try Resampler(
                        sourceSampleRate: input.sampleRate, sourceFormat: input.sampleFormat,
                        sourceChannelCount: input.channelCount, sourceLayout: input.channelLayout,
                        outputSampleRate: shape.rate, outputFormat: targetFormat,
                        outputChannelCount: shape.channels, outputLayout: shape.layout)
                }
                if let input, nextSample == nil {
                    let pts = input.bestEffortTimestamp ?? input.pts ?? 0
                    nextSample = timeBase.time(ofTicks: pts).convertScale(Int32(clamping: outputRate), rounding: .roundHalfAwayFromZero).value
                }
                if input == nil && !changing { drained = true }
                let converted = try resampler!.convert(input)
                if changing { resampler = nil }
                guard let output = converted else { continue }
                let position = nextSample ?? 0
                nextSample = position + Int64(output.sampleCount)
                return (output, position)
            } catch {
                throw MediaError(.decodeFailed, "cannot convert \(track.formatDescription.codec) audio to \(pcm.sampleFormat)",
                                 path: loop.path, underlying: error)
            }
        }
    }

    /// Silence in `decoded`'s format for the time the damaged packets skipped just before it
    /// took, so the audio after them keeps its time (ffmpeg keeps their hole in the timeline);
    /// nil when none were skipped or they left no gap. The gap is taken from the timestamps,
    /// at most the length of a block per skipped packet: a damaged timestamp adds no more.
    private func silence(replacingDamageBefore decoded: Frame) throws(MediaError) -> Frame? {
        let skipped = loop.damagedPackets.count - damageSeen
        damageSeen = loop.damagedPackets.count
        let rate = Int32(clamping: max(decoded.sampleRate, 1))
        let start = (decoded.bestEffortTimestamp ?? decoded.pts).map { timeBase.time(ofTicks: $0) } ?? inputEnd?.time
        defer {
            if let start { inputEnd = (start + MediaTime(value: Int64(decoded.sampleCount), timescale: rate), decoded.sampleCount) }
        }
        guard skipped > 0, let start, let previous = inputEnd else { return nil }
        let gap = (start - previous.time).convertScale(rate, rounding: .roundHalfAwayFromZero).value
        // Within 2 ms: timestamps rounded by the container, not a hole.
        guard gap > Int64(rate / 500) else { return nil }
        let count = Int(min(gap, Int64(skipped * max(previous.samples, 1))))
        do {
            let format = AudioSampleFormat(decoded.sampleFormat)
            return try AudioBuffer(sampleCount: count, format: format, sampleRate: decoded.sampleRate,
                                   channelCount: decoded.channelCount, channelLayout: decoded.channelLayout).frame
        } catch {
            throw MediaError(.decodeFailed, "cannot make \(count) samples of silence for damaged \(track.formatDescription.codec) packets",
                             path: loop.path, underlying: error as? MediaError)
        }
    }

    /// The block cut to the reading range, or nil when it lies wholly outside it.
    private func trimmed(_ frame: Frame, at position: Int64) throws(MediaError) -> SampleBuffer? {
        let rate = Int32(clamping: outputRate)
        let first = range.start.isNumeric ? range.start.convertScale(rate, rounding: .roundHalfAwayFromZero).value : Int64.min
        let last = range.end.isNumeric ? range.end.convertScale(rate, rounding: .roundHalfAwayFromZero).value : Int64.max
        let count = Int64(frame.sampleCount)
        if position + count <= first { return nil }
        if position >= last {
            loop.stop()
            drained = true
            return nil
        }
        let skip = Int(max(0, first - position))
        let keep = Int(min(position + count, last) - position) - skip
        var buffer = AudioBuffer(frame: frame)
        if skip > 0 || keep < frame.sampleCount {
            buffer = try slice(buffer, from: skip, count: keep)
        }
        let start = position + Int64(skip)
        let timescale = Int32(clamping: outputRate)
        var format = track.formatDescription
        format.audio = AudioFormat(sampleRate: outputRate, channelCount: buffer.channelCount,
                                   channelLayout: buffer.channelLayout, sampleFormat: buffer.format.rawValue)
        return SampleBuffer(content: .audio(buffer), packet: nil, codecParameters: nil,
                            presentationTimeStamp: MediaTime(value: start, timescale: timescale), decodeTimeStamp: .invalid,
                            duration: MediaTime(value: Int64(keep), timescale: timescale), formatDescription: format,
                            attachments: SampleAttachments())
    }

    private func slice(_ buffer: AudioBuffer, from offset: Int, count: Int) throws(MediaError) -> AudioBuffer {
        do {
            let part = try AudioBuffer(sampleCount: count, format: buffer.format, sampleRate: buffer.sampleRate,
                                       channelCount: buffer.channelCount, channelLayout: buffer.channelLayout)
            let bytesPerFrame = buffer.format.bytesPerSample * (buffer.format.isPlanar ? 1 : buffer.channelCount)
            try buffer.withUnsafeChannels { source in
                try part.withUnsafeMutableChannels { destination in
                    for (s, d) in zip(source, destination) {
                        d.copyMemory(from: UnsafeRawBufferPointer(rebasing: s[(offset * bytesPerFrame)..<((offset + count) * bytesPerFrame)]))
                    }
                }
            }
            return part
        } catch {
            throw error as? MediaError ?? MediaError(.invalidState, "cannot trim audio", path: loop.path)
        }
    }
}

import FFmpegSupport
import HardwareAcceleration

/// Reads one composition track, segment after segment: each segment opens its source file,
/// decodes its source range with the output's settings (so sources of any codec, size, rate
/// or layout come out alike) and carries the timestamps onto the composition's timeline.
/// Empty segments give a black picture or silence for their length. While a segment decodes,
/// the next one's file is opened, sought and its decoder made on a thread of its own, so a
/// joint waits for no file.
///
/// Audio is cut to the sample: each segment fills exactly the samples from its start to its
/// end on the composition's timeline (padded with silence when its source runs short), so
/// joints never drift. Segments played faster or slower are time-stretched with their pitch kept.
final class CompositionTrackPipeline: TrackPipeline {
    typealias OpenedSource = (session: DemuxSession, pipeline: TrackPipeline, stretch: TimeStretch?)

    enum Media {
        case video(PixelBufferAttributes)
        case audio(LinearPCMSettings, AudioTimePitchAlgorithm)
    }

    let track: CompositionTrack
    let media: Media
    private let segments: [CompositionTrackSegment]
    private var index = 0
    private var current: OpenedSource?
    /// The next segment with a source, opening on `opener`'s thread.
    private var upcoming: (index: Int, opened: Completion<OpenedSegment>)?
    /// The thread segments are opened ahead on, started with the first one opened ahead.
    private lazy var opener = StageThread(name: "vaf.segments")
    /// What each segment's source is opened with.
    private let opening: SegmentOpening
    private var cancelled = false
    private var damage: [String] = []
    /// Audio: the composition's sample rate, and the next sample to vend (at that rate).
    private let sampleRate: Int
    private var position: Int64 = 0
    /// Video: the last picture's size and format (a surface's layout), which an empty segment's
    /// black picture takes.
    private var lastPicture: (width: Int, height: Int, format: PixelFormatID)?
    /// Video on a device: the black surface every gap shows, made once.
    private var blackSurface: Frame?
    /// Video: the empty segment under way has had its black picture.
    private var gapServed = false
    /// Video: the latest picture of the segment under way, out once the next one's time is known.
    private var held: SampleBuffer?
    /// Video: the segment under way has shown a picture.
    private var segmentShowedPicture = false

    /// Video: an empty segment gives one black picture (false: nothing, for a compositor,
    /// which shows what lies below instead).
    private let picturesEmptySegments: Bool

    /// A pipeline for `track` over `timeRange` of the composition. With a `device`, video
    /// segments are decoded there, and with `.vaapiSurface` their pictures stay in GPU
    /// surfaces, scaled by the video processor; an empty segment then shows one black surface
    /// (or nothing, for a compositor).
    init(track: CompositionTrack, media: Media, timeRange: MediaTimeRange, picturesEmptySegments: Bool = true,
         device: VADevice? = nil, observations: StageObservations? = nil, decoderThreads: Int = 0) throws(MediaError) {
        self.track = track
        self.picturesEmptySegments = picturesEmptySegments
        let range = timeRange.isValid && timeRange.duration.isNumeric
            ? timeRange : MediaTimeRange(start: timeRange.start.isNumeric ? timeRange.start : .zero, end: track.timeRange.end)
        segments = track.segments.compactMap { segment in
            let part = segment.targetRange.intersection(range)
            return part.isValid && part.duration > .zero ? segment.restricted(to: part) : nil
        }
        let sources = track.sourceTracks
        switch media {
        case .video(let attributes):
            guard attributes.pixelFormat != .vaapiSurface || device != nil else {
                throw MediaError(.unsupported, "composition tracks are read into GPU surfaces on a device only; give the output a hardwareDevice", path: "composition")
            }
            self.media = media
            sampleRate = 0
            opening = SegmentOpening(media: media, device: device, observations: observations, decoderThreads: decoderThreads)
        case .audio(var pcm, let algorithm):
            let first = sources.first?.formatDescription.audio
            // One rate and layout for every segment: the settings', else the first source's.
            pcm.sampleRate = pcm.sampleRate ?? first?.sampleRate ?? 48000
            if pcm.channelCount == nil {
                pcm.channelCount = first?.channelCount ?? 2
                pcm.channelLayout = pcm.channelLayout ?? first?.channelLayout
            }
            self.media = .audio(pcm, algorithm)
            sampleRate = pcm.sampleRate ?? 48000
            opening = SegmentOpening(media: self.media, device: nil, observations: nil, decoderThreads: decoderThreads)
        }
        position = segments.first.map { samples(at: $0.targetRange.start) } ?? 0
    }

    /// The segment being opened ahead, if one is (for tests).
    var upcomingSegment: Int? { upcoming?.index }

    var damageReport: String? { damage.isEmpty ? nil : damage.joined(separator: "; ") }

    func stop() {
        cancelled = true
        current?.pipeline.stop()
        current = nil
        if let upcoming { (try? upcoming.opened.wait().result.get())?.pipeline.stop() }
        upcoming = nil
    }

    func next() throws(MediaError) -> SampleBuffer? {
        while !cancelled, index < segments.count {
            let segment = segments[index]
            if case .audio = media {
                if let sample = try nextAudio(in: segment) { return sample }
            } else if let sample = try nextVideo(in: segment) {
                return sample
            }
            endSegment()
        }
        return nil
    }

    /// Closes the segment's source and moves to the next segment.
    private func endSegment() {
        if let current {
            current.pipeline.stop()
            if let report = current.pipeline.damageReport { damage.append("\(current.session.path): \(report)") }
        }
        current = nil
        gapServed = false
        held = nil
        segmentShowedPicture = false
        index += 1
    }

    /// The segment's source: opened ahead while the previous segment decoded, or now.
    private func source(for segment: CompositionTrackSegment) throws(MediaError) -> OpenedSource {
        if let current { return current }
        let opened: OpenedSource
        if let upcoming, upcoming.index == index {
            self.upcoming = nil
            opened = try upcoming.opened.wait().result.get()
        } else {
            opened = try opening.open(segment, number: index, of: track.trackID)
        }
        current = opened
        openAhead()
        return opened
    }

    /// Starts opening the next segment that has a source on the opener's thread, so its file
    /// is open, sought and its decoder made by the time this segment ends. A failure to open
    /// it is kept for when it is reached, as if it had been opened then.
    private func openAhead() {
        guard upcoming == nil, !cancelled,
              let next = segments.indices.first(where: { $0 > index && segments[$0].sourceTrack != nil }) else { return }
        let segment = segments[next], trackID = track.trackID, opening = opening
        let done = Completion<OpenedSegment>()
        opener.async {
            done.complete(OpenedSegment(result: Result { () throws(MediaError) in try opening.open(segment, number: next, of: trackID) }))
        }
        upcoming = (next, done)
    }

    // MARK: Video

    private func nextVideo(in segment: CompositionTrackSegment) throws(MediaError) -> SampleBuffer? {
        if segment.isEmpty {
            // One black picture for the whole gap; the export's frame-rate policy repeats it.
            guard !gapServed, picturesEmptySegments else { return nil }
            gapServed = true
            return try blackPicture(for: segment.targetRange)
        }
        let (_, pipeline, _) = try source(for: segment)
        let mapping = segment.timeMapping
        while true {
            guard let sample = try pipeline.next(), let picture = sample.imageBuffer else {
                // The segment's last picture stays on screen until the segment ends.
                guard let last = held else { return nil }
                held = nil
                return last.retimed(presentationTimeStamp: last.presentationTimeStamp, duration: mapping.target.end - last.presentationTimeStamp)
            }
            lastPicture = (picture.width, picture.height, picture.frame.surfaceSoftwareFormat ?? picture.frame.pixelFormat)
            var start = MediaTimeRange.mapTime(sample.presentationTimeStamp, from: mapping.source, to: mapping.target)
            // The first picture is shown from the segment's start, whatever time it has: one
            // shown before the source range, or the first decodable one after a seek (leading
            // pictures of an open GOP), leaves no hole at the joint.
            if held == nil && !segmentShowedPicture { start = mapping.target.start }
            if !start.isNumeric || start < mapping.target.start { start = mapping.target.start }
            guard start < mapping.target.end else { continue }
            segmentShowedPicture = true
            let current = sample.retimed(presentationTimeStamp: start, duration: .invalid)
            // Each picture lasts until the next one starts (containers' own durations are
            // often a tick for variable-rate video); one replaced at the same time is dropped.
            guard let previous = held else {
                held = current
                continue
            }
            held = current
            guard start > previous.presentationTimeStamp else { continue }
            return previous.retimed(presentationTimeStamp: previous.presentationTimeStamp, duration: start - previous.presentationTimeStamp)
        }
    }

    private func blackPicture(for range: MediaTimeRange) throws(MediaError) -> SampleBuffer {
        guard case .video(let attributes) = media else { throw MediaError(.invalidState, "not a video track", path: "composition") }
        let size = track.naturalSize
        let width = attributes.width ?? lastPicture?.width ?? Int(size.width)
        let height = attributes.height ?? lastPicture?.height ?? Int(size.height)
        let onDevice = attributes.pixelFormat == .vaapiSurface
        let format = onDevice ? lastPicture?.format ?? .nv12 : PixelFormatID(attributes.pixelFormat) ?? lastPicture?.format ?? .yuv420p
        guard width > 0, height > 0 else {
            throw MediaError(.invalidArgument, "composition track \(track.trackID) starts with an empty segment and has no picture size; give the output a width and height", path: "composition")
        }
        do {
            let picture = PixelBuffer(frame: onDevice ? try blackSurface(width: width, height: height, layout: format)
                                                      : try Self.black(width: width, height: height, format: format))
            var description = track.sourceTracks.first?.formatDescription ?? FormatDescription(mediaType: .video, codec: "rawvideo")
            description.video = VideoFormat(width: width, height: height, pixelFormat: format.name, bitDepth: format.bitDepth)
            return SampleBuffer(content: .pixelBuffer(picture), packet: nil, codecParameters: nil, presentationTimeStamp: range.start,
                                decodeTimeStamp: .invalid, duration: range.duration, formatDescription: description, attachments: SampleAttachments())
        } catch {
            throw MediaError(.invalidState, "cannot make a \(width)x\(height) black picture", path: "composition", underlying: error)
        }
    }

    /// A black host picture.
    private static func black(width: Int, height: Int, format: PixelFormatID) throws(FFmpegError) -> Frame {
        let frame = try Frame(width: width, height: height, pixelFormat: format)
        try frame.fillBlack()
        return frame
    }

    /// A black surface of `width`×`height` in `layout` on the device, made the first time a gap
    /// shows it and shared by every gap of that size: drawn by the video processor as a
    /// transparent pass over a black background, as the device compositor draws an empty
    /// frame; uploaded from host memory (one counted copy) where the video processor refuses.
    private func blackSurface(width: Int, height: Int, layout: PixelFormatID) throws(FFmpegError) -> Frame {
        if let blackSurface, blackSurface.width == width, blackSurface.height == height,
           blackSurface.surfaceSoftwareFormat == layout { return try blackSurface.reference() }
        guard let device = opening.device else { throw FFmpegError(code: .invalidArgument, function: "CompositionTrackPipeline (no device)") }
        let pool = try SurfacePool(device: device.hardware, width: width, height: height, softwareFormat: layout, capacity: 2)
        let surface: Frame
        do {
            let whole = Rect(x: 0, y: 0, width: width, height: height)
            let canvas = SurfaceLayer(source: try pool.waitForSurface(), sourceRegion: whole, outputRegion: whole, opacity: 0)
            surface = try SurfaceCompositor(output: pool).draw([canvas], background: 0xff00_0000, outputFullRange: false)
            opening.observations?.scaled(on: .device)
        } catch {
            let host = try Self.black(width: width, height: height, format: layout)
            surface = try pool.upload(host)
            opening.observations?.transferred(host)
        }
        blackSurface = surface
        return try surface.reference()
    }

    // MARK: Audio

    /// Samples at the composition's rate from its start to `time`.
    private func samples(at time: MediaTime) -> Int64 {
        time.convertScale(Int32(clamping: sampleRate), rounding: .roundHalfAwayFromZero).value
    }

    private func nextAudio(in segment: CompositionTrackSegment) throws(MediaError) -> SampleBuffer? {
        let end = samples(at: segment.targetRange.end)
        guard position < end else { return nil }
        var block: AudioBuffer?
        if !segment.isEmpty {
            let (_, pipeline, stretch) = try source(for: segment)
            while block == nil {
                if let stretch, let stretched = try stretch.pull() {
                    block = stretched
                } else if let sample = try pipeline.next(), let audio = sample.audioBuffer {
                    if let stretch { try stretch.push(audio) } else { block = audio }
                } else if let stretch, !stretch.ended {
                    try stretch.finish()
                } else {
                    break
                }
            }
        }
        // Past its source's end (or in an empty segment) the segment plays silence.
        let count = Int(min(end - position, Int64(block?.sampleCount ?? AssetReaderAudioMixOutput.blockSize)))
        let buffer: AudioBuffer
        if let block { buffer = count < block.sampleCount ? try block.prefix(count) : block } else { buffer = try silence(count) }
        let start = MediaTime(value: position, timescale: Int32(clamping: sampleRate))
        position += Int64(buffer.sampleCount)
        var description = track.sourceTracks.first?.formatDescription ?? FormatDescription(mediaType: .audio, codec: "pcm")
        description.audio = AudioFormat(sampleRate: sampleRate, channelCount: buffer.channelCount,
                                        channelLayout: buffer.channelLayout, sampleFormat: buffer.format.rawValue)
        return SampleBuffer(content: .audio(buffer), packet: nil, codecParameters: nil, presentationTimeStamp: start,
                            decodeTimeStamp: .invalid, duration: MediaTime(value: Int64(buffer.sampleCount), timescale: Int32(clamping: sampleRate)),
                            formatDescription: description, attachments: SampleAttachments())
    }

    private func silence(_ count: Int) throws(MediaError) -> AudioBuffer {
        guard case .audio(let pcm, _) = media else { throw MediaError(.invalidState, "not an audio track", path: "composition") }
        do {
            return try AudioBuffer(sampleCount: count, format: pcm.sampleFormat, sampleRate: sampleRate,
                                   channelCount: pcm.channelCount ?? 2, channelLayout: pcm.channelLayout)
        } catch {
            throw MediaError(.invalidState, "cannot make \(count) samples of silence", path: "composition", underlying: error)
        }
    }
}

extension SampleBuffer {
    /// The same sample shown at `presentationTimeStamp` for `duration`.
    func retimed(presentationTimeStamp: MediaTime, duration: MediaTime) -> SampleBuffer {
        SampleBuffer(content: content, packet: packet, codecParameters: codecParameters, presentationTimeStamp: presentationTimeStamp,
                     decodeTimeStamp: .invalid, duration: duration, formatDescription: formatDescription, attachments: attachments)
    }
}

extension AudioBuffer {
    /// The first `count` samples, copied.
    func prefix(_ count: Int) throws(MediaError) -> AudioBuffer {
        do {
            let part = try AudioBuffer(sampleCount: count, format: format, sampleRate: sampleRate, channelCount: channelCount,
                                       channelLayout: channelLayout)
            let bytes = count * format.bytesPerSample * (format.isPlanar ? 1 : channelCount)
            try withUnsafeChannels { source in
                try part.withUnsafeMutableChannels { destination in
                    for (s, d) in zip(source, destination) { d.copyMemory(from: UnsafeRawBufferPointer(rebasing: s[..<bytes])) }
                }
            }
            return part
        } catch {
            throw error as? MediaError ?? MediaError(.invalidState, "cannot cut an audio buffer", path: nil, underlying: error)
        }
    }
}

/// What a composition track's segments are opened with, and the opening itself: on the
/// output's thread, or ahead on the segment opener's.
struct SegmentOpening: Sendable {
    let media: CompositionTrackPipeline.Media
    /// Video: the device segments are decoded on, and what to tell of it.
    let device: VADevice?
    let observations: StageObservations?
    /// Video: the threads each segment's decoder may use (0: FFmpeg's default).
    let decoderThreads: Int

    /// `segment`'s source file opened and sought to its range, and its decoder made.
    func open(_ segment: CompositionTrackSegment, number: Int, of trackID: Int) throws(MediaError) -> CompositionTrackPipeline.OpenedSource {
        guard let sourceTrack = segment.sourceTrack, let path = sourceTrack.sourcePath else {
            throw MediaError(.invalidState, "segment \(number) of composition track \(trackID) names no source file", path: "composition")
        }
        let range = segment.timeMapping.source
        let session = try DemuxSession(path: path, timeRange: range, streams: [sourceTrack.streamIndex])
        switch media {
        case .video(let attributes):
            return (session, try VideoDecodePipeline(session: session, track: sourceTrack, attributes: attributes, timeRange: range,
                                                     device: device, observations: observations, decoderThreads: decoderThreads), nil)
        case .audio(let pcm, let algorithm):
            // Only a scaled segment is stretched; the filter takes its speed as a number.
            let stretch = range.duration == segment.targetRange.duration ? nil
                : try TimeStretch(speed: range.duration.seconds / segment.targetRange.duration.seconds, pcm: pcm, algorithm: algorithm, path: path)
            return (session, try AudioDecodePipeline(session: session, track: sourceTrack, pcm: pcm, timeRange: range), stretch)
        }
    }
}

/// A segment's source opened ahead, handed from the opener's thread to the output's.
// @unchecked: made on the opener's thread and handed once, through a Completion, to the output's thread, which alone uses it after.
struct OpenedSegment: @unchecked Sendable {
    let result: Result<CompositionTrackPipeline.OpenedSource, MediaError>
}

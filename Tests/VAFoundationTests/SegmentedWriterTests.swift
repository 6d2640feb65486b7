import Foundation
import Testing
@testable import VAFoundation

/// Collects what a segmenting writer hands out, in order.
final class SegmentCollector: AssetWriterDelegate {
    let segments = Locked<[(data: Data, type: SegmentType, report: SegmentReport?)]>([])

    func assetWriter(_ writer: AssetWriter, didOutputSegmentData segmentData: Data, segmentType: SegmentType,
                     segmentReport report: SegmentReport?) {
        segments.withLock { $0.append((segmentData, segmentType, report)) }
    }
}

/// Segmented writing (`AssetWriter(fileType:)` with a delegate): where segments are cut,
/// what they hold, and that the concatenated segments play in ffmpeg, an independent reader.
@Suite struct SegmentedWriterTests {
    private static let second = MediaTime(value: 1, timescale: 1)

    /// Writes `frames` pattern pictures at 30 fps (and, with `audio`, AAC in 1/30 s blocks
    /// beside them) through a segmenting writer, calling `flushSegment()` before the pictures
    /// in `flushBefore`; returns what the delegate received.
    private func writeSegments(profile: FileTypeProfile = .mpeg4AppleHLS, interval: MediaTime, frames: Int, audio: Bool = false,
                               keyFrameInterval: Int = 250, flushBefore: Set<Int> = [],
                               initialSegmentStartTime: MediaTime = .invalid) async throws -> [(data: Data, type: SegmentType, report: SegmentReport?)] {
        let collector = SegmentCollector()
        let writer = AssetWriter(fileType: .mp4)
        writer.outputFileTypeProfile = profile
        writer.preferredOutputSegmentInterval = interval
        writer.initialSegmentStartTime = initialSegmentStartTime
        writer.delegate = collector
        let video = try AssetWriterInput(videoSettings: VideoSettings(codec: .h264, width: 64, height: 48, maxKeyFrameInterval: keyFrameInterval))
        let adaptor = try AssetWriterInputPixelBufferAdaptor(assetWriterInput: video,
                                                             sourcePixelBufferAttributes: PixelBufferAttributes(pixelFormat: .yuv420p, width: 64, height: 48))
        try writer.add(video)
        var sound: AssetWriterInput?
        if audio {
            let input = try AssetWriterInput(audioSettings: AudioSettings(codec: .aac, sampleRate: 48000, channelCount: 1, bitRate: 64000))
            try writer.add(input)
            sound = input
        }
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        let pool = try #require(adaptor.pixelBufferPool)
        for i in 0..<frames {
            if flushBefore.contains(i) { try writer.flushSegment() }
            let buffer = try await pool.waitForPixelBuffer()
            _ = try WriterTestSupport.pattern(width: 64, height: 48, index: i, into: buffer)
            try await adaptor.append(buffer, withPresentationTime: MediaTime(value: Int64(i), timescale: 30))
            if let sound {
                let block = try WriterTestSupport.sine(sampleCount: 1600, offset: i * 1600, sampleRate: 48000)
                try await sound.append(SampleBuffer(audioBuffer: block, presentationTimeStamp: MediaTime(value: Int64(i * 1600), timescale: 48000)))
            }
        }
        try await writer.finishWriting()
        #expect(writer.status == .completed)
        #expect(writer.outputURL == nil)
        return collector.segments.withLock { $0 }
    }

    /// The segments joined into one file, as a player fetching them in order reads them.
    private func joined(_ segments: [(data: Data, type: SegmentType, report: SegmentReport?)], in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("joined.mp4")
        try segments.reduce(Data()) { $0 + $1.data }.write(to: url)
        return url
    }

    /// ffprobe's video packets of `url`: presentation time in seconds and keyframe flag.
    private func videoPackets(_ url: URL) throws -> [(time: Double, key: Bool)] {
        let json = try WriterTestSupport.probe(url, ["-select_streams", "v:0", "-show_entries", "packet=pts_time,flags", "-show_packets"])
        return (json["packets"] as? [[String: Any]] ?? []).map {
            (Double($0["pts_time"] as? String ?? "") ?? -1, ($0["flags"] as? String ?? "").hasPrefix("K"))
        }
    }

    @Test(.disabled(if: ffprobePath == nil, "ffprobe is not installed (Hardware/setup.sh installs it)"))
    func segmentsStartAtKeyframesOnEachBoundary() async throws {
        let segments = try await writeSegments(interval: Self.second, frames: 120)
        #expect(segments.first?.type == .initialization && segments.first?.report == nil)
        let media = segments.dropFirst()
        #expect(media.allSatisfy { $0.type == .separable })
        // Keyframes every 250 frames would give one segment: the writer forces one at each second.
        #expect(media.count == 4, "\(media.count) media segments")
        for (k, segment) in media.enumerated() {
            let report = try #require(segment.report)
            #expect(report.sequenceNumber == k + 1)
            let track = try #require(report.trackReports.first)
            #expect(track.mediaType == .video && track.trackID == 1)
            #expect(track.earliestPresentationTimeStamp == MediaTime(value: Int64(k), timescale: 1), "segment \(k): \(track.earliestPresentationTimeStamp)")
            #expect(track.duration == Self.second && track.sampleCount == 30)
            let first = try #require(track.firstVideoSampleInformation)
            #expect(first.isSyncSample && first.presentationTimeStamp == track.earliestPresentationTimeStamp)
            // The offset points into the segment's mdat, at a sample of the stated length: its
            // NAL units' 4-byte lengths add up to exactly that length.
            #expect(first.offset > 0 && first.offset + first.length <= segment.data.count)
            let sample = [UInt8](segment.data[first.offset..<min(first.offset + first.length, segment.data.count)])
            var at = 0
            while at + 4 <= sample.count { at += 4 + sample[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
            #expect(at == first.length, "NAL lengths reach \(at) of \(first.length) bytes")
            #expect(String(decoding: segment.data[4..<8], as: UTF8.self) == "moof", "an HLS segment is moof + mdat")
        }
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let packets = try videoPackets(try joined(segments, in: dir))
        #expect(packets.count == 120)
        let keyTimes = packets.filter(\.key).map(\.time)
        for k in 0..<4 { #expect(keyTimes.contains { abs($0 - Double(k)) < 0.001 }, "no keyframe at \(k) s: \(keyTimes)") }
        #expect(try WriterTestSupport.probeStream(try joined(segments, in: dir), "v:0")["nb_read_frames"] as? String == "120")
    }

    @Test(.disabled(if: ffprobePath == nil, "ffprobe is not installed (Hardware/setup.sh installs it)"))
    func cmafSegmentsOpenWithStypAndSidx() async throws {
        let segments = try await writeSegments(profile: .mpeg4CMAFCompliant, interval: Self.second, frames: 60)
        let initialization = try #require(segments.first)
        #expect(String(decoding: initialization.data[4..<8], as: UTF8.self) == "ftyp")
        #expect(initialization.data.range(of: Data("cmfc".utf8)) != nil, "the CMAF brand is declared")
        for segment in segments.dropFirst() {
            #expect(String(decoding: segment.data[4..<8], as: UTF8.self) == "styp")
            #expect(String(decoding: segment.data[28 + 4..<28 + 8], as: UTF8.self) == "sidx")
        }
        #expect(segments.count == 3)
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try WriterTestSupport.probeStream(try joined(segments, in: dir), "v:0")["nb_read_frames"] as? String == "60")
    }

    @Test(.disabled(if: ffprobePath == nil, "ffprobe is not installed (Hardware/setup.sh installs it)"))
    func indefiniteIntervalCutsOnlyAtFlushSegment() async throws {
        let segments = try await writeSegments(interval: .indefinite, frames: 90, flushBefore: [20, 75])
        let starts = segments.dropFirst().compactMap { $0.report?.trackReports.first?.earliestPresentationTimeStamp }
        #expect(starts == [.zero, MediaTime(value: 20, timescale: 30), MediaTime(value: 75, timescale: 30)], "\(starts)")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = try videoPackets(try joined(segments, in: dir)).filter(\.key).map(\.time)
        #expect(keys.contains { abs($0 - 20.0 / 30) < 0.001 } && keys.contains { abs($0 - 2.5) < 0.001 }, "\(keys)")
    }

    /// Audio finished before the video: its last packets, held back by the writer, still go
    /// into the segment they play in, not into a later one.
    @Test func audioFinishedEarlyStaysInItsSegments() async throws {
        let collector = SegmentCollector()
        let writer = AssetWriter(fileType: .mp4)
        writer.outputFileTypeProfile = .mpeg4AppleHLS
        writer.preferredOutputSegmentInterval = Self.second
        writer.delegate = collector
        let video = try AssetWriterInput(videoSettings: VideoSettings(codec: .h264, width: 64, height: 48))
        let adaptor = try AssetWriterInputPixelBufferAdaptor(assetWriterInput: video,
                                                             sourcePixelBufferAttributes: PixelBufferAttributes(pixelFormat: .yuv420p, width: 64, height: 48))
        let audio = try AssetWriterInput(audioSettings: AudioSettings(codec: .aac, sampleRate: 48000, channelCount: 1, bitRate: 64000))
        try writer.add(video)
        try writer.add(audio)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        let pool = try #require(adaptor.pixelBufferPool)
        for i in 0..<120 {
            let buffer = try await pool.waitForPixelBuffer()
            _ = try WriterTestSupport.pattern(width: 64, height: 48, index: i, into: buffer)
            try await adaptor.append(buffer, withPresentationTime: MediaTime(value: Int64(i), timescale: 30))
            if i < 45 {
                let block = try WriterTestSupport.sine(sampleCount: 1600, offset: i * 1600, sampleRate: 48000)
                try await audio.append(SampleBuffer(audioBuffer: block, presentationTimeStamp: MediaTime(value: Int64(i * 1600), timescale: 48000)))
            } else if i == 45 {
                audio.markAsFinished()
            }
        }
        try await writer.finishWriting()
        let media = collector.segments.withLock { $0 }.dropFirst()
        #expect(media.count == 4)
        let aacFrame = MediaTime(value: 1024, timescale: 48000)
        for segment in media {
            let reports = try #require(segment.report?.trackReports)
            let videoStart = try #require(reports.first { $0.mediaType == .video }).earliestPresentationTimeStamp
            guard let sound = reports.first(where: { $0.mediaType == .audio }) else { continue }
            // Within the segment's second, give or take an AAC frame (priming, the cut's frame).
            #expect(sound.earliestPresentationTimeStamp >= videoStart - aacFrame,
                    "audio from \(sound.earliestPresentationTimeStamp.seconds) s in the segment from \(videoStart.seconds) s")
            #expect(sound.earliestPresentationTimeStamp + sound.duration <= videoStart + Self.second + aacFrame,
                    "audio up to \((sound.earliestPresentationTimeStamp + sound.duration).seconds) s in the segment from \(videoStart.seconds) s")
        }
        let withAudio = media.enumerated().filter { $0.element.report?.trackReports.contains { $0.mediaType == .audio } == true }.map(\.offset)
        #expect(withAudio == [0, 1], "1.5 s of audio spans the first two segments only")
    }

    @Test func segmentBoundariesCountFromTheInitialSegmentStartTime() async throws {
        let segments = try await writeSegments(interval: Self.second, frames: 75, initialSegmentStartTime: MediaTime(value: 1, timescale: 2))
        let starts = segments.dropFirst().compactMap { $0.report?.trackReports.first?.earliestPresentationTimeStamp.seconds }
        #expect(starts == [0, 0.5, 1.5], "\(starts)")
    }

    /// With audio beside the video, each segment holds the audio shown up to the video's next
    /// cut: every track of a segment starts within one AAC frame of its video.
    @Test(.disabled(if: ffprobePath == nil, "ffprobe is not installed (Hardware/setup.sh installs it)"))
    func audioFollowsTheVideoCuts() async throws {
        let segments = try await writeSegments(interval: Self.second, frames: 90, audio: true)
        let media = segments.dropFirst()
        #expect(media.count == 3)
        let aacFrame = MediaTime(value: 1024, timescale: 48000)
        for segment in media {
            let reports = try #require(segment.report?.trackReports)
            let video = try #require(reports.first { $0.mediaType == .video })
            let audio = try #require(reports.first { $0.mediaType == .audio }, "every segment carries audio")
            #expect(audio.trackID == 2)
            let gap = audio.earliestPresentationTimeStamp - video.earliestPresentationTimeStamp
            #expect(gap < aacFrame && MediaTime.zero - gap <= aacFrame, "audio starts \(gap.seconds) s from its video")
        }
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try joined(segments, in: dir)
        #expect(try WriterTestSupport.probeStream(url, "v:0")["nb_read_frames"] as? String == "90")
        let audioSeconds = Double(try WriterTestSupport.probeStream(url, "a:0")["duration"] as? String ?? "") ?? 0
        #expect(abs(audioSeconds - 3) < 0.05, "audio lasts \(audioSeconds) s")
    }

    @Test func aWriterWithoutAFileNeedsAProfileAndADelegate() throws {
        for withProfile in [false, true] {
            let writer = AssetWriter(fileType: .mp4)
            if withProfile { writer.outputFileTypeProfile = .mpeg4AppleHLS }
            writer.preferredOutputSegmentInterval = Self.second
            try writer.add(try AssetWriterInput(videoSettings: VideoSettings(codec: .h264, width: 64, height: 48)))
            #expect { try writer.startWriting() } throws: {
                ($0 as? MediaError)?.message.contains(withProfile ? "delegate" : "outputFileTypeProfile") == true
            }
            #expect(writer.status == .failed)
        }
        let writer = AssetWriter(fileType: .mkv)
        writer.outputFileTypeProfile = .mpeg4CMAFCompliant
        writer.preferredOutputSegmentInterval = Self.second
        let collector = SegmentCollector()
        writer.delegate = collector
        try writer.add(try AssetWriterInput(videoSettings: VideoSettings(codec: .h264, width: 64, height: 48)))
        #expect { try writer.startWriting() } throws: { ($0 as? MediaError)?.message.contains("mp4/mov") == true }
        #expect(collector.segments.withLock { $0.isEmpty })
    }
}

/// The fragment cutter alone: where cuts fall and which samples each fragment takes.
@Suite struct FragmentCutterTests {
    typealias Cutter = FragmentCutter<String>
    private static func t(_ value: Int64, _ scale: Int32 = 30) -> MediaTime { MediaTime(value: value, timescale: scale) }
    private static func item(_ name: String, track: Int, time: MediaTime, decode: MediaTime? = nil, sync: Bool = true) -> Cutter.Item {
        .init(payload: name, track: track, time: time, decodeTime: decode ?? time, duration: t(1), isSync: sync, byteCount: 1)
    }

    /// Does what the cutter says, as the writer does: the fragments ended so far, and what was
    /// written into the one under way.
    private struct Muxer {
        var fragments: [[String]] = []
        var open: [String] = []

        mutating func run(_ cutter: inout Cutter, final: Bool = false) {
            while let step = cutter.next(final: final) {
                switch step {
                case .write(let item): open.append(item.payload)
                case .endFragment(let samples, _):
                    #expect(samples.count == open.count, "the fragment's report lists what was written into it")
                    fragments.append(open)
                    open = []
                }
            }
        }
    }

    @Test func aFragmentWaitsForEveryTrackToPassTheCut() {
        var cutter = Cutter(trackCount: 2, leadTrack: 0, interval: MediaTime(value: 1, timescale: 1), origin: .zero)
        var muxer = Muxer()
        for i in 0..<30 { cutter.add(Self.item("v\(i)", track: 0, time: Self.t(Int64(i)), sync: i == 0)) }
        muxer.run(&cutter)
        #expect(muxer.open.count == 30 && muxer.fragments.isEmpty, "the lead's samples go on as they come: \(muxer.open.count)")
        cutter.add(Self.item("v30", track: 0, time: Self.t(30)))
        muxer.run(&cutter)
        #expect(muxer.fragments.isEmpty, "the audio has not reached 1 s")
        cutter.add(Self.item("a0", track: 1, time: .zero))
        cutter.add(Self.item("a1", track: 1, time: MediaTime(value: 99, timescale: 100)))
        muxer.run(&cutter)
        #expect(muxer.fragments.isEmpty && muxer.open.count == 32, "the audio before the cut goes in; the fragment waits")
        cutter.add(Self.item("a2", track: 1, time: MediaTime(value: 1, timescale: 1)))
        muxer.run(&cutter)
        let first = muxer.fragments.first ?? []
        #expect(muxer.fragments.count == 1 && first.count == 32 && first.contains("a1") && !first.contains("a2") && !first.contains("v30"))
        #expect(muxer.open == ["v30"], "the next fragment's picture goes on; its sound waits for the next cut")
        muxer.run(&cutter, final: true)
        #expect(muxer.fragments.count == 2 && muxer.fragments[1].sorted() == ["a2", "v30"] && muxer.open.isEmpty)
    }

    @Test func aLateKeyframeCutsLateAndTheNextBoundaryStaysOnTheGrid() {
        var cutter = Cutter(trackCount: 1, leadTrack: 0, interval: MediaTime(value: 1, timescale: 1), origin: .zero)
        var muxer = Muxer()
        // Keyframes at 0, 1.2 s and 2.0 s: cuts at 1.2 (first at or after 1) and 2.0.
        for i in 0..<75 { cutter.add(Self.item("\(i)", track: 0, time: Self.t(Int64(i)), sync: [0, 36, 60].contains(i))) }
        muxer.run(&cutter)
        #expect(muxer.fragments.map(\.count) == [36, 24] && muxer.open.count == 15)
        muxer.run(&cutter, final: true)
        #expect(muxer.fragments.map(\.count) == [36, 24, 15])
    }

    @Test func aFinishedTrackHoldsNothingBack() {
        var cutter = Cutter(trackCount: 2, leadTrack: 0, interval: MediaTime(value: 1, timescale: 1), origin: .zero)
        var muxer = Muxer()
        cutter.add(Self.item("a0", track: 1, time: .zero))
        cutter.finish(track: 1)
        cutter.add(Self.item("v0", track: 0, time: .zero))
        cutter.add(Self.item("v1", track: 0, time: Self.t(30)))
        muxer.run(&cutter)
        #expect(muxer.fragments.map { $0.sorted() } == [["a0", "v0"]])
    }

    @Test func decodeOrderWithinATrackAndARequestedCut() {
        var cutter = Cutter(trackCount: 1, leadTrack: 0, interval: .indefinite, origin: .zero)
        var muxer = Muxer()
        cutter.add(Self.item("I0", track: 0, time: Self.t(0), decode: Self.t(-1)))
        cutter.add(Self.item("P2", track: 0, time: Self.t(2), decode: Self.t(0), sync: false))
        cutter.add(Self.item("B1", track: 0, time: Self.t(1), decode: Self.t(1), sync: false))
        cutter.requestCut(at: Self.t(3))
        cutter.add(Self.item("I3", track: 0, time: Self.t(3), decode: Self.t(2)))
        muxer.run(&cutter)
        #expect(muxer.fragments == [["I0", "P2", "B1"]])
        cutter.add(Self.item("I4", track: 0, time: Self.t(4)))
        muxer.run(&cutter)
        #expect(muxer.fragments.count == 1 && muxer.open == ["I3", "I4"], "with an indefinite interval only a requested cut ends a fragment")
    }

    /// Requests made faster than the encoder returns their keyframes: each still cuts.
    @Test func requestsWaitingBehindTheEncoderAllCut() {
        var cutter = Cutter(trackCount: 1, leadTrack: 0, interval: .indefinite, origin: .zero)
        var muxer = Muxer()
        cutter.requestCut(at: Self.t(30))
        cutter.requestCut(at: Self.t(60))
        cutter.requestCut(at: Self.t(90))
        for i in 0..<100 { cutter.add(Self.item("\(i)", track: 0, time: Self.t(Int64(i)), sync: i % 30 == 0)) }
        muxer.run(&cutter)
        #expect(muxer.fragments.map(\.count) == [30, 30, 30])
        muxer.run(&cutter, final: true)
        #expect(muxer.fragments.map(\.count) == [30, 30, 30, 10])
    }

    /// With a fragment at every lead keyframe, a segment is several fragments: each keyframe
    /// opens one, and only the keyframe at a boundary ends the segment. Sound goes into the
    /// fragment it is shown in.
    @Test func aFragmentAtEveryKeyframeWithinEachSegment() {
        var cutter = Cutter(trackCount: 2, leadTrack: 0, interval: MediaTime(value: 6, timescale: 1), origin: .zero,
                            fragmentsAtLeadSyncSamples: true)
        var fragments: [(names: [String], endsSegment: Bool)] = []
        var open: [String] = []
        func run(final: Bool = false) {
            while let step = cutter.next(final: final) {
                switch step {
                case .write(let item): open.append(item.payload)
                case .endFragment(_, let endsSegment):
                    fragments.append((open, endsSegment))
                    open = []
                }
            }
        }
        for i in 0..<240 {
            if i % 15 == 0 { cutter.add(Self.item("a\(i / 15)", track: 1, time: Self.t(Int64(i)))) }
            cutter.add(Self.item("v\(i)", track: 0, time: Self.t(Int64(i)), sync: i % 60 == 0))
            run()
        }
        cutter.finish(track: 1)
        run(final: true)
        #expect(fragments.map(\.endsSegment) == [false, false, true, true], "keyframes at 0, 2, 4 s, the segment ending at 6 s; then the last")
        #expect(fragments.map { $0.names.filter { $0.hasPrefix("v") }.count } == [60, 60, 60, 60])
        #expect(fragments.map { $0.names.filter { $0.hasPrefix("a") } } == (0..<4).map { f in (4 * f..<4 * f + 4).map { "a\($0)" } })
        // Without it, each segment is one fragment.
        var plain = Cutter(trackCount: 1, leadTrack: 0, interval: MediaTime(value: 6, timescale: 1), origin: .zero)
        var muxer = Muxer()
        for i in 0..<240 { plain.add(Self.item("v\(i)", track: 0, time: Self.t(Int64(i)), sync: i % 60 == 0)) }
        muxer.run(&plain, final: true)
        #expect(muxer.fragments.map(\.count) == [180, 60])
    }

    /// Sound queued far ahead of the pictures (a long fragment's worth) goes out in order,
    /// each sample once, in the fragment it is shown in, however much waited.
    @Test func aLongQueueOfSoundIsHandedOnInOrder() {
        var cutter = Cutter(trackCount: 2, leadTrack: 0, interval: MediaTime(value: 10, timescale: 1), origin: .zero)
        var muxer = Muxer()
        for i in 0..<1000 { cutter.add(Self.item("a\(i)", track: 1, time: MediaTime(value: Int64(i), timescale: 50))) }
        cutter.finish(track: 1)
        for i in 0..<600 {
            cutter.add(Self.item("v\(i)", track: 0, time: Self.t(Int64(i)), sync: i % 300 == 0))
            muxer.run(&cutter)
        }
        muxer.run(&cutter, final: true)
        let sound = muxer.fragments.map { $0.filter { $0.hasPrefix("a") } }
        let pictures = muxer.fragments.map { $0.filter { $0.hasPrefix("v") } }
        #expect(sound == [(0..<500).map { "a\($0)" }, (500..<1000).map { "a\($0)" }])
        #expect(pictures == [(0..<300).map { "v\($0)" }, (300..<600).map { "v\($0)" }])
    }
}

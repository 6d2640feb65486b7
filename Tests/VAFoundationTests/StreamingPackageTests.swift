import Foundation
import Testing
@testable import VAFoundation
import HardwareAcceleration

/// The ladder, the playlists' arithmetic and the codec strings, without encoding anything
/// (the packages themselves are checked by independent players in PackageCommandTests), and
/// what a package reads of its source.
@Suite struct StreamingPackageTests {
    private func sizes(_ rungs: [StreamingRung]) -> [String] { rungs.map { "\($0.width)x\($0.height)" } }

    @Test func autoLadderFollowsApplesTableUpToTheSource() {
        let hd = StreamingRung.automatic(sourceWidth: 1920, sourceHeight: 1080, frameRate: 30, codec: .h264)
        #expect(sizes(hd) == ["1920x1080", "1280x720", "960x540", "768x432", "640x360", "416x234"])
        #expect(hd.map(\.bitRate) == [6_000_000, 3_000_000, 2_000_000, 730_000, 365_000, 145_000])
        // Faster than 30 fps: the table's higher rate where it has two.
        let fast = StreamingRung.automatic(sourceWidth: 1280, sourceHeight: 720, frameRate: 60, codec: .h264)
        #expect(fast.first == StreamingRung(width: 1280, height: 720, bitRate: 4_500_000))
        #expect(!fast.contains { $0.width > 1280 }, "never above the source")
        let hevc = StreamingRung.automatic(sourceWidth: 3840, sourceHeight: 2160, frameRate: 24, codec: .hevc)
        #expect(hevc.first == StreamingRung(width: 3840, height: 2160, bitRate: 11_600_000) && hevc.last?.width == 640)
    }

    @Test func autoLadderKeepsPortraitAndWideAspects() {
        let portrait = StreamingRung.automatic(sourceWidth: 1080, sourceHeight: 1920, frameRate: 30, codec: .h264)
        #expect(sizes(portrait).prefix(2) == ["1080x1920", "720x1280"])
        #expect(portrait.allSatisfy { $0.height > $0.width })
        // 2.39:1 scope: each rung fits its 16:9 box by width, keeping the aspect.
        let scope = StreamingRung.automatic(sourceWidth: 1920, sourceHeight: 804, frameRate: 24, codec: .h264)
        #expect(sizes(scope).prefix(3) == ["1920x804", "1280x536", "960x402"])
        // 4:3 at 1080 lines keeps its width.
        #expect(sizes(StreamingRung.automatic(sourceWidth: 1440, sourceHeight: 1080, frameRate: 25, codec: .h264)).first == "1440x1080")
        // Smaller than the smallest rung: one rung at the source's size.
        #expect(sizes(StreamingRung.automatic(sourceWidth: 320, sourceHeight: 180, frameRate: 30, codec: .h264)) == ["320x180"])
        #expect(StreamingRung.automatic(sourceWidth: 0, sourceHeight: 0, frameRate: 30, codec: .h264).isEmpty)
    }

    @Test func rungsParseAndPrint() {
        #expect(StreamingRung(parsing: "1920x1080@6M") == StreamingRung(width: 1920, height: 1080, bitRate: 6_000_000))
        #expect(StreamingRung(parsing: "640x360@730k")?.bitRate == 730_000)
        #expect(StreamingRung(parsing: "640x360@1.5M")?.bitRate == 1_500_000)
        for bad in ["1920x1080", "1920@6M", "0x360@1M", "640x360@", "640x360@-1M", "640x360@12"] {
            #expect(StreamingRung(parsing: bad) == nil, "\(bad)")
        }
        #expect(StreamingRung(width: 1280, height: 720, bitRate: 4_500_000).description == "1280x720@4500k")
        #expect(StreamingRung.folderNames([StreamingRung(width: 1280, height: 720, bitRate: 3_000_000),
                                           StreamingRung(width: 1280, height: 720, bitRate: 4_500_000),
                                           StreamingRung(width: 640, height: 360, bitRate: 365_000)]) == ["720p-3000k", "720p-4500k", "360p"])
    }

    @Test func keyframesEveryTwoSecondsWhenSegmentsAreAMultiple() {
        let packager = StreamingPackager(asset: Asset(url: URL(fileURLWithPath: "/nonexistent.mp4")))
        for (segment, keyframes) in [(6, 2), (4, 2), (2, 2), (5, 5), (3, 3), (1, 1)] {
            packager.segmentDuration = MediaTime(value: Int64(segment), timescale: 1)
            #expect(packager.keyframeInterval == MediaTime(value: Int64(keyframes), timescale: 1), "segments of \(segment) s")
        }
    }

    private func report(_ durations: [Double], bytes: [Int], folder: String = "720p") -> StreamingRenditionReport {
        var start = 0.0
        let segments = zip(durations, bytes).enumerated().map { i, pair in
            defer { start += pair.0 }
            return StreamingRenditionReport.Segment(file: String(format: "segment-%05d.m4s", i + 1), start: MediaTime(seconds: start, preferredTimescale: 90000),
                                                    duration: MediaTime(seconds: pair.0, preferredTimescale: 90000), bytes: pair.1,
                                                    keyframes: [.init(offset: .zero, byteOffset: 0, byteCount: pair.1 / 10)], sampleCount: Int(pair.0 * 30))
        }
        return StreamingRenditionReport(folder: folder, mediaType: .video, codec: "avc1.64001f", width: 1280, height: 720, language: nil,
                                        isDefault: false, channelCount: nil, sampleRate: nil, segments: segments)
    }

    @Test func ratesAndTargetDurationComeFromTheSegments() {
        let r = report([6, 6, 2.5], bytes: [750_000, 1_500_000, 100_000])
        #expect(r.peakBitRate == 2_000_000)
        #expect(r.averageBitRate == Int((2_350_000.0 * 8 / 14.5).rounded()))
        #expect(StreamingPlaylists.targetDuration(r) == 6)
        #expect(StreamingPlaylists.targetDuration(report([6.4, 2], bytes: [1, 1])) == 6, "rounded to the nearest second")
        #expect(StreamingPlaylists.targetDuration(report([6.6, 2], bytes: [1, 1])) == 7)
        let playlist = StreamingPlaylists.mediaPlaylist(r)
        #expect(playlist.contains("#EXT-X-TARGETDURATION:6\n") && playlist.contains("#EXT-X-PLAYLIST-TYPE:VOD\n"))
        #expect(playlist.contains("#EXT-X-MAP:URI=\"init.mp4\"\n") && playlist.hasSuffix("#EXT-X-ENDLIST\n"))
        #expect(playlist.contains("#EXTINF:2.500000,\nsegment-00003.m4s\n"))
        let iframes = StreamingPlaylists.iFramePlaylist(r)
        #expect(iframes.contains("#EXT-X-I-FRAMES-ONLY") && iframes.contains("#EXT-X-BYTERANGE:150000@0\nsegment-00002.m4s"))
    }

    @Test func masterPlaylistAddsTheLargestAudioToEachVariant() {
        let video = report([6, 6], bytes: [750_000, 900_000])
        var audio = report([6, 6], bytes: [96_000, 90_000], folder: "audio-eng")
        audio.mediaType = .audio
        audio.codec = "mp4a.40.2"
        audio.language = "eng"
        audio.channelCount = 2
        var french = audio
        french.folder = "audio-fre"
        french.language = "fre"
        french.isDefault = true
        let master = StreamingPlaylists.masterPlaylist(video: [video], audio: [audio, french])
        #expect(master.contains("BANDWIDTH=\(video.peakBitRate + audio.peakBitRate),AVERAGE-BANDWIDTH=\(video.averageBitRate + audio.averageBitRate)"))
        #expect(master.contains("CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,FRAME-RATE=30.000,AUDIO=\"audio\"\n720p/index.m3u8"))
        #expect(master.contains("NAME=\"English\",LANGUAGE=\"en\",DEFAULT=NO"))
        #expect(master.contains("NAME=\"French\",LANGUAGE=\"fr\",DEFAULT=YES"), "the bibliographic code becomes fr; the source's default stays default")
        #expect(master.contains("#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=\(StreamingPlaylists.iFramePeakBitRate(video)),CODECS=\"avc1.64001f\""))
        let mpd = StreamingPlaylists.dashManifest(video: [video], audio: [audio, french])
        #expect(mpd.contains("media=\"720p/segment-$Number%05d$.m4s\""))
        #expect(mpd.contains("<S t=\"0\" d=\"6000\"/><S d=\"6000\"/>"))
        #expect(mpd.contains("lang=\"fr\"") && mpd.contains("mediaPresentationDuration=\"PT12.000S\""))
    }

    @Test func languageTags() {
        for (code, tag) in [("eng", "en"), ("ger", "de"), ("cat", "ca"), ("hrv", "hr"), ("slo", "sk"), ("may", "ms"), ("per", "fa"), ("bul", "bg")] {
            #expect(StreamingPlaylists.languageTag(code) == tag, "\(code)")
        }
        #expect(StreamingPlaylists.languageTag("yue") == "yue", "three letters where ISO 639-1 has none")
        for none in ["und", "mul", "zxx", "qq1", ""] { #expect(StreamingPlaylists.languageTag(none) == nil, "\(none)") }
    }

    @Test func aShortLastSegmentDoesNotSetThePeak() {
        // 6 s segments at 1 Mb/s and a last 0.2 s one that is almost all keyframe (8 Mb/s alone).
        let r = report([6, 6, 0.2], bytes: [750_000, 750_000, 200_000])
        #expect(r.peakBitRate == Int((950_000.0 * 8 / 6.2).rounded(.up)), "the last run of 0.5–1.5 target durations: \(r.peakBitRate)")
        #expect(StreamingRenditionReport.peakRate([(100, 1)], target: 6) == 800, "shorter than half the target: the whole rate")
    }

    @Test func dashFrameRates() {
        #expect(StreamingPlaylists.dashFrameRate(29.97) == "30000/1001")
        #expect(StreamingPlaylists.dashFrameRate(23.976) == "24000/1001")
        #expect(StreamingPlaylists.dashFrameRate(25.004) == "25")
        #expect(StreamingPlaylists.dashFrameRate(12.5) == "12500/1000")
    }

    @Test func folderNamesAreUnique() {
        let rungs = [StreamingRung(width: 1280, height: 720, bitRate: 3_000_000), StreamingRung(width: 960, height: 720, bitRate: 3_000_000),
                     StreamingRung(width: 1280, height: 720, bitRate: 3_000_000)]
        let names = StreamingRung.folderNames(rungs)
        #expect(Set(names).count == 3, "\(names)")
        #expect(names[1] == "960x720-3000k")
    }

    /// The codec strings read from real initialization segments that the writer made, as
    /// ffmpeg's own RFC 6381 rules spell them for these streams.
    /// A source turned by its track matrix (a phone held upright) is drawn upright once, and
    /// every rung is scaled from that one picture: one shared read per picture, for all three.
    @Test func aRotatedSourceIsDrawnUprightOnceForEveryRung() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let coded = dir.appendingPathComponent("landscape.mp4"), rotated = dir.appendingPathComponent("phone.mp4")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=480x270:rate=30:duration=2", "-c:v", "libx264",
                                      "-preset", "ultrafast", coded.path]).status == 0)
        try #require(try run(ffmpeg, ["-v", "error", "-i", coded.path, "-c", "copy", "-metadata:s:v:0", "rotate=90", rotated.path]).status == 0)
        let packager = StreamingPackager(asset: Asset(url: rotated))
        packager.ladder = [StreamingRung(width: 270, height: 480, bitRate: 900_000), StreamingRung(width: 180, height: 320, bitRate: 500_000),
                           StreamingRung(width: 144, height: 256, bitRate: 300_000)]
        packager.formats = .hls
        let sharedReads = Locked<[Int]>([])
        packager.exportSession.stageProbe = StageProbe { step in
            if case .sharedSampleRead(.video, _, let branches) = step { sharedReads.withLock { $0.append(branches) } }
        }
        let result = try await packager.package(to: dir.appendingPathComponent("package"))
        let reads = sharedReads.withLock { $0 }
        #expect(reads.count == 60 && reads.allSatisfy { $0 == 3 }, "\(reads.count) shared reads, branches \(Set(reads))")
        #expect(result.video.map { "\($0.width ?? 0)x\($0.height ?? 0)" } == ["270x480", "180x320", "144x256"])
        #expect(result.video.allSatisfy { $0.sampleCount == 60 }, "\(result.video.map(\.sampleCount))")
    }

    @Test func webVTTCueTextEscapesWhatIsNoTag() {
        let cue = WebVTTCue(start: .zero, end: MediaTime(value: 1, timescale: 1), text: "Tom & Jerry <3 a < b")
        #expect(StreamingSubtitles.document([cue], forHLSSegment: false) == "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nTom &amp; Jerry &lt;3 a &lt; b\n")
        #expect(StreamingSubtitles.escaped("<i>so</i> &amp; <b>on</b> <c.red>x</c> <00:01.000>") == "<i>so</i> &amp; <b>on</b> <c.red>x</c> <00:01.000>")
    }

    /// Reading a subtitle track for WebVTT may read the whole file: a cancelled package stops
    /// at the next cue, with a cancel, instead of reading on to the end.
    @Test(.disabled(if: ffmpegPath == nil, "ffmpeg makes the subtitled file (Hardware/setup.sh installs it)"))
    func aCancelledPackageStopsReadingSubtitles() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cues = dir.appendingPathComponent("cues.srt"), source = dir.appendingPathComponent("subtitled.mkv")
        try Data("1\n00:00:00,100 --> 00:00:00,900\nOne\n\n2\n00:00:01,100 --> 00:00:01,900\nTwo\n".utf8).write(to: cues)
        try #require(try run(try #require(ffmpegPath), ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=2",
                                                        "-i", cues.path, "-c:v", "libx264", "-preset", "ultrafast", "-c:s", "srt", source.path]).status == 0)
        let asset = Asset(url: source)
        let tracks = try await asset.load(.tracks)
        let track = try #require(tracks.first { $0.mediaType == .subtitle })
        let whole = MediaTimeRange(start: .zero, duration: .positiveInfinity), end = MediaTime(value: 2, timescale: 1)
        #expect(try StreamingSubtitles.cues(of: track, in: asset, range: whole, end: end).cues.map(\.text) == ["One", "Two"])
        let cancelled = Task { () throws -> Int in
            withUnsafeCurrentTask { $0?.cancel() }
            return try StreamingSubtitles.cues(of: track, in: asset, range: whole, end: end).cues.count
        }
        do {
            let count = try await cancelled.value
            Issue.record("read \(count) cues on after the cancel")
        } catch {
            #expect((error as? MediaError)?.code == .cancelled, "\(error)")
        }
    }

    /// A subtitle surface is never smaller than the video processor takes, and still covers the cue.
    @Test func subtitleLayersAreGrownToThePipelinesMinimum() {
        typealias R = Rect
        let minimum = Size(width: 16, height: 16)
        #expect(BitmapSubtitleBurner.layerRegion(of: R(x: 300, y: 160, width: 4, height: 4), pictureWidth: 320, pictureHeight: 180, minimum: minimum)
                == R(x: 300, y: 160, width: 16, height: 16))
        // At the picture's edge the window grows inwards; off it, the visible part is still 16x16.
        #expect(BitmapSubtitleBurner.layerRegion(of: R(x: 316, y: 176, width: 4, height: 4), pictureWidth: 320, pictureHeight: 180, minimum: minimum)
                == R(x: 304, y: 164, width: 16, height: 16))
        #expect(BitmapSubtitleBurner.layerRegion(of: R(x: -10, y: 10, width: 12, height: 40), pictureWidth: 320, pictureHeight: 180, minimum: minimum)
                == R(x: -10, y: 10, width: 26, height: 40))
        #expect(BitmapSubtitleBurner.layerRegion(of: R(x: 40, y: 40, width: 80, height: 40), pictureWidth: 320, pictureHeight: 180, minimum: minimum)
                == R(x: 40, y: 40, width: 80, height: 40))
        #expect(BitmapSubtitleBurner.layerRegion(of: R(x: 40, y: 40, width: 4, height: 4), pictureWidth: 320, pictureHeight: 180, minimum: nil)
                == R(x: 40, y: 40, width: 4, height: 4))
    }

    @Test(arguments: [VideoCodec.h264, .hevc])
    func codecStringsFromInitializationSegments(codec: VideoCodec) async throws {
        let collector = SegmentCollector()
        let writer = AssetWriter(fileType: .mp4)
        writer.outputFileTypeProfile = .mpeg4CMAFCompliant
        writer.preferredOutputSegmentInterval = MediaTime(value: 1, timescale: 1)
        writer.delegate = collector
        let settings = VideoSettings(codec: codec, width: 320, height: 240, profile: codec == .h264 ? "main" : nil)
        let input = try AssetWriterInput(videoSettings: settings)
        let adaptor = try AssetWriterInputPixelBufferAdaptor(assetWriterInput: input,
                                                             sourcePixelBufferAttributes: PixelBufferAttributes(pixelFormat: .yuv420p, width: 320, height: 240))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        let pool = try #require(adaptor.pixelBufferPool)
        for i in 0..<10 {
            let buffer = try await pool.waitForPixelBuffer()
            _ = try WriterTestSupport.pattern(width: 320, height: 240, index: i, into: buffer)
            try await adaptor.append(buffer, withPresentationTime: MediaTime(value: Int64(i), timescale: 30))
        }
        try await writer.finishWriting()
        let initialization = try #require(collector.segments.withLock { $0.first?.data })
        let string = try #require(SegmentBoxes.codecString(initialization: initialization))
        // ffprobe reads the profile and level of the same stream, segments joined.
        try #require(ffprobePath != nil, "ffprobe is not installed (Hardware/setup.sh installs it)")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let joined = dir.appendingPathComponent("joined.mp4")
        try collector.segments.withLock { $0.reduce(Data()) { $0 + $1.data } }.write(to: joined)
        let stream = try WriterTestSupport.probeStream(joined, "v:0")
        let level = try #require(stream["level"] as? Int)
        if codec == .h264 {
            // Main (0x4d) with constraint_set1 (0x40), as H.264 Main streams set it.
            #expect(stream["profile"] as? String == "Main")
            #expect(string == "avc1.4d40" + String(format: "%02x", level), "\(string) for level \(level)")
        } else {
            // Main profile (1) compatible with Main and Main 10 (flags 1 and 2, reversed: 6), Main tier.
            #expect(stream["profile"] as? String == "Main")
            #expect(string.hasPrefix("hvc1.1.6.L\(level).") || string == "hvc1.1.6.L\(level)", "\(string) for level \(level)")
        }
        let size = try #require(SegmentBoxes.pictureSize(initialization: initialization))
        #expect(size.width == 320 && size.height == 240)
    }

    @Test func aacCodecStringFromAnAudioInitializationSegment() async throws {
        let collector = SegmentCollector()
        let writer = AssetWriter(fileType: .mp4)
        writer.outputFileTypeProfile = .mpeg4AppleHLS
        writer.preferredOutputSegmentInterval = MediaTime(value: 1, timescale: 1)
        writer.delegate = collector
        let input = try AssetWriterInput(audioSettings: AudioSettings(codec: .aac, sampleRate: 48000, channelCount: 2, bitRate: 96000))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for block in 0..<60 {
            let buffer = try WriterTestSupport.sine(sampleCount: 1600, offset: block * 1600, sampleRate: 48000)
            try await input.append(SampleBuffer(audioBuffer: buffer, presentationTimeStamp: MediaTime(value: Int64(block * 1600), timescale: 48000)))
        }
        try await writer.finishWriting()
        let segments = collector.segments.withLock { $0 }
        #expect(SegmentBoxes.codecString(initialization: try #require(segments.first?.data)) == "mp4a.40.2")
        // An audio-only writer cuts at the first packet at or after each second, not at the priming packet before zero.
        let starts = segments.dropFirst().compactMap { $0.report?.trackReports.first?.earliestPresentationTimeStamp.seconds }
        #expect(starts.count == 2 && starts[0] < 0 && abs(starts[1] - 1) < 0.022, "\(starts)")
    }
}

import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// Composition edits give the segment lists AVFoundation's documentation implies, checked
/// against tables computed by hand (times in seconds; sources as (start, end) of the clip).
@Suite struct CompositionEditTests {
    let clip = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")

    private func s(_ seconds: Double) -> MediaTime { MediaTime(value: Int64((seconds * 600).rounded()), timescale: 600) }
    private func range(_ from: Double, _ to: Double) -> MediaTimeRange { MediaTimeRange(start: s(from), end: s(to)) }

    /// The segments as (target start, target end, source start, source end), nil sources for empty ones.
    private func table(_ segments: [CompositionTrackSegment]) -> [[Double?]] {
        segments.map { segment in
            let t = segment.timeMapping.target
            let source = segment.timeMapping.source
            return [t.start.seconds, t.end.seconds, segment.isEmpty ? nil : source.start.seconds, segment.isEmpty ? nil : source.end.seconds]
        }
    }

    private func videoTrack() async throws -> AssetTrack {
        try #require(try await Asset(url: clip).loadTracks(withMediaType: .video).first)
    }

    @Test func insertInTheMiddleSplitsAndMovesWhatFollows() async throws {
        let source = try await videoTrack()
        let composition = MutableComposition()
        let track = try #require(composition.addMutableTrack(withMediaType: .video))
        try track.insertTimeRange(range(0, 3), of: source, at: .zero)
        try track.insertTimeRange(range(0.5, 1.5), of: source, at: s(1))
        #expect(table(track.segments) == [[0, 1, 0, 1], [1, 2, 0.5, 1.5], [2, 4, 1, 3]])
        #expect(composition.duration == s(4))
        try track.validateSegments(track.segments)
    }

    @Test func insertPastTheEndFillsTheGapWithAnEmptySegment() async throws {
        let source = try await videoTrack()
        let composition = MutableComposition()
        let track = try #require(composition.addMutableTrack(withMediaType: .video))
        try track.insertTimeRange(range(0, 1), of: source, at: .zero)
        try track.insertTimeRange(range(2, 3), of: source, at: s(1.5))
        #expect(table(track.segments) == [[0, 1, 0, 1], [1, 1.5, nil, nil], [1.5, 2.5, 2, 3]])
    }

    @Test func removeCutsAcrossSegmentsAndClosesTheGap() async throws {
        let source = try await videoTrack()
        let composition = MutableComposition()
        let track = try #require(composition.addMutableTrack(withMediaType: .video))
        try track.insertTimeRange(range(0, 1), of: source, at: .zero)
        try track.insertTimeRange(range(2, 3), of: source, at: s(1))
        try composition.removeTimeRange(range(0.5, 1.25))
        #expect(table(track.segments) == [[0, 0.5, 0, 0.5], [0.5, 1.25, 2.25, 3]])
        #expect(composition.duration == s(1.25))
    }

    @Test func scaleStretchesTheRangeAndMovesWhatFollows() async throws {
        let source = try await videoTrack()
        let composition = MutableComposition()
        let track = try #require(composition.addMutableTrack(withMediaType: .video))
        try track.insertTimeRange(range(0, 3), of: source, at: .zero)
        // 0–2 s plays in 1 s (twice as fast); 2–3 s follows at 1 s.
        try composition.scaleTimeRange(range(0, 2), toDuration: s(1))
        #expect(table(track.segments) == [[0, 1, 0, 2], [1, 2, 2, 3]])
        // 1–2 s slowed to 3 s.
        try track.scaleTimeRange(range(1, 2), toDuration: s(3))
        #expect(table(track.segments) == [[0, 1, 0, 2], [1, 4, 2, 3]])
    }

    @Test func emptyRangeMovesEveryTrack() async throws {
        let composition = MutableComposition()
        try await composition.insertTimeRange(range(0, 2), of: Asset(url: clip), at: .zero)
        try composition.insertEmptyTimeRange(range(1, 1.5))
        #expect(composition.tracks.count == 2)
        for track in composition.tracks {
            #expect(table(track.segments) == [[0, 1, 0, 1], [1, 1.5, nil, nil], [1.5, 2.5, 1, 2]], "\(track.mediaType)")
        }
    }

    @Test func insertingAnAssetMovesTracksThatGetNothing() async throws {
        let composition = MutableComposition()
        try await composition.insertTimeRange(range(0, 1), of: Asset(url: clip), at: .zero)
        let extra = try #require(composition.addMutableTrack(withMediaType: .video))
        try extra.insertTimeRange(range(0, 1), of: try await videoTrack(), at: .zero)
        // Both video tracks are in use for the second insertion: the clip's one video track goes into
        // the first, and the added track gets an empty stretch so its media still follows 0–1 s.
        try await composition.insertTimeRange(range(2, 3), of: Asset(url: clip), at: .zero)
        #expect(table(extra.segments) == [[0, 1, nil, nil], [1, 2, 0, 1]])
        #expect(table(composition.tracks[0].segments) == [[0, 1, 2, 3], [1, 2, 0, 1]])
    }

    @Test func validationNamesEachFault() async throws {
        let source = try await videoTrack()
        let composition = MutableComposition()
        let track = try #require(composition.addMutableTrack(withMediaType: .video))
        let url = clip
        func media(_ from: Double, _ to: Double, at: Double) -> CompositionTrackSegment {
            CompositionTrackSegment(url: url, track: source, sourceRange: range(from, to), targetRange: range(at, at + to - from))
        }
        #expect(throws: CompositionError.gap(segment: 1, from: s(1), to: s(1.5))) { try track.setSegments([media(0, 1, at: 0), media(1, 2, at: 1.5)]) }
        #expect(throws: CompositionError.overlap(segment: 1, at: s(0.5))) { try track.setSegments([media(0, 1, at: 0), media(1, 2, at: 0.5)]) }
        #expect(throws: CompositionError.doesNotStartAtZero(start: s(0.25))) { try track.setSegments([media(0, 1, at: 0.25)]) }
        #expect(throws: CompositionError.invalidTimeRange(segment: 0)) {
            try track.setSegments([CompositionTrackSegment(emptyTimeRange: MediaTimeRange(start: .zero, duration: .invalid))])
        }
        #expect(track.segments.isEmpty, "a refused list leaves the track as it was")
        try track.setSegments([media(0, 1, at: 0), CompositionTrackSegment(emptyTimeRange: range(1, 2)), media(2, 3, at: 2)])
        #expect(track.segments.count == 3)
        #expect(throws: CompositionError.incompatibleTrack(expected: .audio, got: .video)) {
            try composition.addMutableTrack(withMediaType: .audio)!.insertTimeRange(range(0, 1), of: source, at: .zero)
        }
        #expect(throws: CompositionError.noSourceMedia(track: source.trackID, range: range(5, 6))) {
            try track.insertTimeRange(range(5, 6), of: source, at: .zero)
        }
        #expect(throws: CompositionError.invalidEditRange(MediaTimeRange(start: s(-1), duration: s(1)))) {
            try composition.removeTimeRange(MediaTimeRange(start: s(-1), duration: s(1)))
        }
    }

    @Test func compositionLoadsAsAnAsset() async throws {
        let composition = MutableComposition()
        try await composition.insertTimeRange(range(0.5, 2.5), of: Asset(url: clip), at: .zero)
        let asset: Asset = composition
        let (duration, tracks) = try await asset.load(.duration, .tracks)
        #expect(duration == s(2))
        #expect(tracks.map(\.mediaType).sorted { $0.rawValue < $1.rawValue } == [.audio, .video])
        let video = try #require(tracks.first { $0.mediaType == .video })
        #expect(video.naturalSize == Size(width: 320, height: 240))
        #expect(composition.naturalSize == Size(width: 320, height: 240))
    }
}

/// Compositions read and exported, checked with ffmpeg and ffprobe as independent oracles.
@Suite(.disabled(if: which("ffprobe") == nil || which("ffmpeg") == nil, "ffmpeg/ffprobe are not installed (Hardware/setup.sh installs them)"))
struct CompositionExportTests {
    /// A 1 s clip: black video with one white frame from 0.5 s, and audio silent until a
    /// 1 kHz tone starts at 0.5 s, so each clip's flash and tone onset mark the same instant.
    static func markedClip(_ url: URL, size: String, rate: Int, sampleRate: Int, seconds: Double = 1) throws {
        let video = "color=c=black:s=\(size):r=\(rate):d=\(seconds),drawbox=c=white:t=fill:enable='between(t,0.5,0.5+1/\(rate)-0.001)'"
        let audio = "sine=f=1000:r=\(sampleRate):d=\(seconds),volume=volume=0:enable='lt(t,0.5)'"
        let made = try run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", video, "-f", "lavfi", "-i", audio,
                                              "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "12", "-c:a", "aac", "-shortest", url.path])
        try #require(made.status == 0, "ffmpeg could not make \(url.lastPathComponent)")
    }

    /// Presentation times (s) of the frames whose average luma is above mid-grey, by ffmpeg's signalstats.
    static func flashTimes(_ url: URL) throws -> [Double] {
        let child = try ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-i", url.path, "-vf",
                                                            "signalstats,metadata=mode=print:key=lavfi.signalstats.YAVG:file=-", "-f", "null", "-"], timeLimit: 300)
        let lines = String(decoding: child.standardOutput, as: UTF8.self).split(separator: "\n")
        var times: [Double] = []
        var time = 0.0
        for line in lines {
            if let r = line.range(of: "pts_time:") { time = Double(line[r.upperBound...].split(separator: " ")[0]) ?? 0 }
            if let r = line.range(of: "YAVG=") , let y = Double(line[r.upperBound...]), y > 128 { times.append(time) }
        }
        return times
    }

    /// The times (s) where a tone starts after silence, by ffmpeg's silencedetect.
    static func toneOnsets(_ url: URL) throws -> [Double] {
        let child = try ChildProcess.run(which("ffmpeg")!, ["-v", "info", "-nostdin", "-i", url.path, "-af", "silencedetect=n=-40dB:d=0.1",
                                                            "-f", "null", "-"], timeLimit: 300)
        return String(decoding: child.standardError, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard let r = line.range(of: "silence_end: ") else { return nil }
            return Double(line[r.upperBound...].split(separator: " ")[0])
        }
    }

    static func duration(_ url: URL, stream: String) throws -> Double {
        let result = try run(which("ffprobe")!, ["-v", "error", "-select_streams", stream, "-show_entries", "stream=duration", "-of", "csv=p=0", url.path])
        return Double(String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test func threeClipsOfDifferentSizesAndRatesJoinInSync() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clips = [("a.mp4", "320x240", 30, 48000), ("b.mp4", "640x360", 25, 44100), ("c.mp4", "160x120", 24, 32000)]
        let composition = MutableComposition()
        for (name, size, rate, sampleRate) in clips {
            let url = dir.appendingPathComponent(name)
            try Self.markedClip(url, size: size, rate: rate, sampleRate: sampleRate)
            try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: MediaTime(value: 1, timescale: 1)),
                                                  of: Asset(url: url), at: composition.duration)
        }
        #expect(composition.duration == MediaTime(value: 3, timescale: 1))
        let output = dir.appendingPathComponent("joined.mp4")
        let session = ExportSession(asset: composition, preset: .preset640x480)
        let result = try await session.export(to: output, as: .mp4)
        #expect(result.path == .software)
        // The summed duration within one frame (1/30 s) on both tracks.
        #expect(abs(try Self.duration(output, stream: "v") - 3) <= 1.0 / 30 + 0.001)
        #expect(abs(try Self.duration(output, stream: "a") - 3) <= 1.0 / 30 + 0.001)
        let flashes = try Self.flashTimes(output)
        let onsets = try Self.toneOnsets(output)
        #expect(flashes.count == 3, "one white frame per clip: \(flashes)")
        #expect(onsets.count == 3, "one tone onset per clip: \(onsets)")
        // Each joint keeps picture and sound together: the flash and the tone onset within one
        // output frame (plus AAC's 1024-sample block) of each other and of the clip's 0.5 s mark.
        for (k, (flash, onset)) in zip(flashes, onsets).enumerated() {
            #expect(abs(flash - (Double(k) + 0.5)) <= 1.0 / 24 + 0.001, "flash \(k) at \(flash) s")
            #expect(abs(onset - (Double(k) + 0.5)) <= 0.03, "tone \(k) at \(onset) s")
        }
    }

    @Test(arguments: [(AudioTimePitchAlgorithm.spectral, 440.0), (.timeDomain, 440), (.varispeed, 880)])
    func doubleSpeedHalvesTheDurationAndKeepsThePitch(algorithm: AudioTimePitchAlgorithm, expectedFrequency: Double) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("tone.mp4")
        let made = try run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=4",
                                              "-f", "lavfi", "-i", "sine=f=440:r=48000:d=4", "-c:v", "libx264", "-c:a", "aac", "-shortest", source.path])
        try #require(made.status == 0)
        let composition = MutableComposition()
        let four = MediaTimeRange(start: .zero, duration: MediaTime(value: 4, timescale: 1))
        try await composition.insertTimeRange(four, of: Asset(url: source), at: .zero)
        try composition.scaleTimeRange(four, toDuration: MediaTime(value: 2, timescale: 1))
        let output = dir.appendingPathComponent("fast.mp4")
        let session = ExportSession(asset: composition, preset: .preset640x480)
        session.audioTimePitchAlgorithm = algorithm
        _ = try await session.export(to: output, as: .mp4)
        #expect(abs(try Self.duration(output, stream: "v") - 2) <= 1.0 / 30 + 0.001)
        #expect(abs(try Self.duration(output, stream: "a") - 2) <= 0.05)
        // The dominant frequency, from zero crossings of the decoded middle second, within 2%:
        // 440 Hz with the pitch kept, 880 Hz when it follows the speed.
        let pcm = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-ss", "0.5", "-t", "1", "-i", output.path,
                                                          "-ac", "1", "-f", "f32le", "-"], timeLimit: 120).standardOutput
        let samples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        try #require(samples.count > 40000)
        let crossings = zip(samples, samples.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
        let frequency = Double(crossings) * 48000 / Double(samples.count)
        #expect(abs(frequency - expectedFrequency) / expectedFrequency < 0.02, "\(algorithm): dominant frequency \(frequency) Hz")
    }

    @Test func compositionReadsThroughTheReaderOnItsOwnTimeline() async throws {
        let clip = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")
        let composition = MutableComposition()
        // 2–3 s of the clip, then 0–1 s: two segments of one file.
        try await composition.insertTimeRange(MediaTimeRange(start: MediaTime(value: 2, timescale: 1), duration: MediaTime(value: 1, timescale: 1)),
                                              of: Asset(url: clip), at: .zero)
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: MediaTime(value: 1, timescale: 1)),
                                              of: Asset(url: clip), at: composition.duration)
        let reader = AssetReader(asset: composition)
        let track = try #require(try await composition.loadTracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
        try reader.add(output)
        try reader.startReading()
        var times: [MediaTime] = []
        while let sample = try output.copyNextSampleBuffer() { times.append(sample.presentationTimeStamp) }
        #expect(reader.status == .completed)
        #expect(times.count == 60, "30 frames from each second")
        #expect(times.first == .zero)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "increasing across the joint")
        #expect(abs(times[30].seconds - 1) < 0.001, "the second segment starts at 1 s: \(times[30])")
    }

    @Test func passthroughOfACompositionIsRefusedInWords() async throws {
        let composition = MutableComposition()
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: MediaTime(value: 1, timescale: 1)),
                                              of: Asset(url: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")), at: .zero)
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("copy.mp4")
        await #expect(throws: MediaError.self) { try await ExportSession(asset: composition, preset: .passthrough).export(to: output, as: .mp4) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty, "no file or temp file left")
    }
}

/// The image generator reads a composition on the composition's timeline.
@Suite(.disabled(if: which("ffmpeg") == nil, "ffmpeg is not installed (Hardware/setup.sh installs it)"))
struct CompositionImageTests {
    @Test func imagesComeFromTheSegmentOnScreen() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Two 1 s clips of flat colours, joined with a 1 s gap between them.
        var assets: [Asset] = []
        for (name, colour) in [("red.mp4", "red"), ("blue.mp4", "blue")] {
            let url = dir.appendingPathComponent(name)
            let made = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "color=c=\(colour):s=160x120:r=25:d=1",
                                                                     "-c:v", "libx264", "-pix_fmt", "yuv420p", url.path], timeLimit: 120)
            try #require(made.shellStatus == 0)
            assets.append(Asset(url: url))
        }
        let composition = MutableComposition()
        let one = MediaTimeRange(start: .zero, duration: MediaTime(value: 1, timescale: 1))
        try await composition.insertTimeRange(one, of: assets[0], at: .zero)
        try await composition.insertTimeRange(one, of: assets[1], at: MediaTime(value: 2, timescale: 1))
        let generator = AssetImageGenerator(asset: composition)
        generator.requestedTimeToleranceBefore = .zero
        generator.requestedTimeToleranceAfter = .zero
        let (red, redTime) = try await generator.image(at: MediaTime(value: 1, timescale: 2))
        let (gap, _) = try await generator.image(at: MediaTime(value: 3, timescale: 2))
        let (blue, blueTime) = try await generator.image(at: MediaTime(value: 5, timescale: 2))
        let r = red.pixel(x: 80, y: 60), g = gap.pixel(x: 80, y: 60), b = blue.pixel(x: 80, y: 60)
        #expect(r.red > 200 && r.blue < 60, "red clip at 0.5 s: \(r)")
        #expect(g.red < 20 && g.green < 20 && g.blue < 20, "black in the gap: \(g)")
        #expect(b.blue > 200 && b.red < 60, "blue clip at 2.5 s: \(b)")
        #expect(abs(redTime.seconds - 0.5) <= 0.04 && abs(blueTime.seconds - 2.5) <= 0.04, "actual times on the composition's timeline: \(redTime), \(blueTime)")
    }
}

/// Video compositions exported, checked against ffmpeg's own filters as the oracle.
@Suite(.disabled(if: which("ffprobe") == nil || which("ffmpeg") == nil, "ffmpeg/ffprobe are not installed (Hardware/setup.sh installs them)"))
struct VideoCompositionExportTests {
    static func colourClip(_ url: URL, colour: String, seconds: Int = 2) async throws {
        let made = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "color=c=\(colour):s=320x240:r=30:d=\(seconds)",
                                                                 "-f", "lavfi", "-i", "sine=f=440:d=\(seconds)", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                                                                 "-c:a", "aac", "-shortest", url.path], timeLimit: 120)
        try #require(made.shellStatus == 0)
    }

    /// The RGB of the pixel at (x, y) of the frame shown at `time`, decoded by ffmpeg.
    static func pixel(_ url: URL, at time: Double, x: Int, y: Int) async throws -> [Int] {
        let child = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-ss", "\(time)", "-i", url.path, "-frames:v", "1",
                                                                  "-vf", "format=rgb24,crop=2:2:\(x):\(y)", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], timeLimit: 120)
        try #require(child.standardOutput.count == 12, "ffmpeg gave no pixel at \(time) s of \(url.lastPathComponent): \(child.stderr)")
        return child.standardOutput.prefix(3).map { Int($0) }
    }

    /// The RGB of the pixel at (x, y) of every frame, in order (no frame dropped or repeated),
    /// decoded by ffmpeg: frame n of a constant-rate export is the picture at n frame durations.
    static func pixels(_ url: URL, x: Int, y: Int) async throws -> [[Int]] {
        let child = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-i", url.path, "-an", "-fps_mode", "passthrough",
                                                                  "-vf", "format=rgb24,crop=2:2:\(x):\(y)", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], timeLimit: 120)
        let bytes = [UInt8](child.standardOutput)
        try #require(!bytes.isEmpty && bytes.count % 12 == 0, "ffmpeg gave no whole frames of \(url.lastPathComponent): \(child.stderr)")
        return stride(from: 0, to: bytes.count, by: 12).map { bytes[$0..<$0 + 3].map { Int($0) } }
    }

    /// A 1 s cross-dissolve from red to blue over 1–2 s at 30 fps: frame n of the ramp
    /// (p = n/30 − 1) is red × (1 − p) + blue × p, checked at p = 1/5, 1/3, 1/2, 2/3 and 4/5 so
    /// that swapped or reversed weights (the same picture at the middle) fail.
    @Test func aCrossfadesFramesFollowTheRamp() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let red = dir.appendingPathComponent("red.mp4"), blue = dir.appendingPathComponent("blue.mp4")
        try await Self.colourClip(red, colour: "red")
        try await Self.colourClip(blue, colour: "blue")
        // Track A: red 0–2 s; track B: blue 1–3 s; a 1 s cross-dissolve over 1–2 s.
        let composition = MutableComposition()
        let a = try #require(composition.addMutableTrack(withMediaType: .video))
        let b = try #require(composition.addMutableTrack(withMediaType: .video))
        let second = MediaTime(value: 1, timescale: 1)
        let two = MediaTimeRange(start: .zero, duration: MediaTime(value: 2, timescale: 1))
        try a.insertTimeRange(two, of: try #require(try await Asset(url: red).loadTracks(withMediaType: .video).first), at: .zero)
        try b.insertTimeRange(two, of: try #require(try await Asset(url: blue).loadTracks(withMediaType: .video).first), at: second)
        var fadeOut = VideoCompositionLayerInstruction(assetTrack: a)
        fadeOut.setOpacityRamp(fromStartOpacity: 1, toEndOpacity: 0, timeRange: MediaTimeRange(start: second, duration: second))
        let video = VideoComposition(renderSize: Size(width: 320, height: 240), frameDuration: MediaTime(value: 1, timescale: 30), instructions: [
            VideoCompositionInstruction(timeRange: MediaTimeRange(start: .zero, duration: second), layerInstructions: [VideoCompositionLayerInstruction(assetTrack: a)]),
            VideoCompositionInstruction(timeRange: MediaTimeRange(start: second, duration: second), layerInstructions: [fadeOut, VideoCompositionLayerInstruction(assetTrack: b)]),
            VideoCompositionInstruction(timeRange: MediaTimeRange(start: MediaTime(value: 2, timescale: 1), duration: second), layerInstructions: [VideoCompositionLayerInstruction(assetTrack: b)]),
        ])
        let output = dir.appendingPathComponent("xfade.mp4")
        let session = ExportSession(asset: composition, preset: .preset640x480)
        session.videoComposition = video
        let result = try await session.export(to: output, as: .mp4)
        #expect(result.pathReason.contains("compositor"))
        #expect(abs(try CompositionExportTests.duration(output, stream: "v") - 3) <= 1.0 / 30 + 0.001)
        let frames = try await Self.pixels(output, x: 160, y: 120)
        try #require(frames.count == 90, "3 s at 30 fps: \(frames.count) frames")
        let (before, after) = (frames[15], frames[75])
        #expect(before[0] > 200 && before[2] < 60 && after[2] > 200 && after[0] < 60, "red then blue: \(before) \(after)")
        for n in [36, 40, 45, 50, 54] {
            let p = Double(n) / 30 - 1
            // Tolerance: ±8 per channel, for the two 4:2:0 round trips and two H.264 encodes (the
            // source clips' and the export's) between the blend and the pixel read back; a frame
            // early or late moves a channel by 255/30 ≈ 8.5, swapped weights by 50 or more.
            for c in 0..<3 {
                let blend = Double(before[c]) * (1 - p) + Double(after[c]) * p
                #expect(abs(Double(frames[n][c]) - blend) <= 8, "channel \(c) of frame \(n) (p = \(p)): \(frames[n][c]), the blend is \(blend)")
            }
        }
    }

    @Test func aQuarterTurnMatchesFFmpegsTranspose() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = Asset(url: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4"))
        var video = try await VideoComposition.videoComposition(withPropertiesOf: clip)
        let track = try #require(try await clip.loadTracks(withMediaType: .video).first)
        // A clockwise quarter turn: (x, y) → (240 − y, x); the render size turns with it.
        var layer = VideoCompositionLayerInstruction(assetTrack: track)
        layer.setTransform(VideoTransform(a: 0, b: 1, c: -1, d: 0, tx: 240, ty: 0), at: .zero)
        video.renderSize = Size(width: 240, height: 320)
        video.instructions = [VideoCompositionInstruction(timeRange: MediaTimeRange(start: .zero, duration: try await clip.load(.duration)),
                                                          layerInstructions: [layer])]
        let output = dir.appendingPathComponent("portrait.mp4")
        let session = ExportSession(asset: clip, preset: .highestQuality)
        session.videoComposition = video
        _ = try await session.export(to: output, as: .mp4)
        let stream = try WriterTestSupport.probeStream(output, "v")
        #expect(stream["width"] as? Int == 240 && stream["height"] as? Int == 320)
        let psnr = try await ChildProcess.run(which("ffmpeg")!, ["-v", "info", "-nostdin", "-i", output.path, "-i", clip.url.path, "-lavfi",
                                                                 "[1:v]transpose=clock[turned];[0:v][turned]psnr", "-f", "null", "-"], timeLimit: 300)
        let line = try #require(psnr.stderr.split(separator: "\n").last { $0.contains("PSNR") && $0.contains("average:") })
        let average = Double(line.split(separator: " ").first { $0.hasPrefix("average:") }!.dropFirst("average:".count)) ?? 0
        #expect(average > 30, "PSNR against ffmpeg's transpose=clock: \(line)")
    }

    /// The times of the pictures a composition output hands out.
    private static func frameTimes(of asset: Asset, _ composition: VideoComposition) async throws -> [MediaTime] {
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderVideoCompositionOutput(videoTracks: try await asset.loadTracks(withMediaType: .video))
        output.videoComposition = composition
        try reader.add(output)
        try reader.startReading()
        var times: [MediaTime] = []
        while let sample = try output.copyNextSampleBuffer() { times.append(sample.presentationTimeStamp) }
        return times
    }

    /// Apple's `sourceTrackIDForFrameTiming`: a composition of one track (as
    /// `videoComposition(withPropertiesOf:)` makes it) comes out at that track's own picture
    /// times, a variable rate included, and fills an empty edit every `frameDuration`; with no
    /// timing track it steps by `frameDuration`.
    @Test func theTimingTracksPicturesTimeTheOutput() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // 60 pictures at 30 fps with one picture's gap at 1 s: 29.5 fps on average.
        let clip = dir.appendingPathComponent("vfr.mp4")
        let made = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=2",
                                                                 "-vf", "setpts='if(lt(N,30),N,N+1)/30/TB'", "-fps_mode", "passthrough",
                                                                 "-c:v", "libx264", "-preset", "ultrafast", clip.path], timeLimit: 120)
        try #require(made.exitStatus == 0, "\(made.stderr)")
        let source = (0..<60).map { MediaTime(value: Int64($0 < 30 ? $0 : $0 + 1), timescale: 30) }
        let asset = Asset(url: clip)
        var video = try await VideoComposition.videoComposition(withPropertiesOf: asset)
        #expect(video.sourceTrackIDForFrameTiming == 1)
        video.frameDuration = MediaTime(value: 1, timescale: 24)
        #expect(try await Self.frameTimes(of: asset, video) == source)

        video.sourceTrackIDForFrameTiming = 0
        let grid = try await Self.frameTimes(of: asset, video)
        #expect(grid == (0..<grid.count).map { MediaTime(value: Int64($0), timescale: 24) } && grid.count == 49, "\(grid.count) frames")

        // Placed at 1 s: the empty edit before it is filled every frameDuration.
        let composition = MutableComposition()
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: try await asset.load(.duration)), of: asset,
                                              at: MediaTime(value: 1, timescale: 1))
        let placed = try await VideoComposition.videoComposition(withPropertiesOf: composition)
        let step = placed.frameDuration
        let filler = (0..<30).map { step * Int32($0) }.filter { $0 < MediaTime(value: 1, timescale: 1) }
        let times = try await Self.frameTimes(of: composition, placed)
        #expect(times == filler + source.map { $0 + MediaTime(value: 1, timescale: 1) }, "\(times.prefix(40).map(\.seconds))")
    }

    @Test func anInvalidVideoCompositionIsATypedErrorAndLeavesNoFile() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = Asset(url: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4"))
        var video = try await VideoComposition.videoComposition(withPropertiesOf: clip)
        video.instructions[0].timeRange = MediaTimeRange(start: .zero, duration: MediaTime(value: 1, timescale: 1))
        #expect(throws: VideoCompositionError.self) {
            try video.validate(forTrackIDs: [1], timeRange: MediaTimeRange(start: .zero, duration: MediaTime(value: 3, timescale: 1)))
        }
        let session = ExportSession(asset: clip, preset: .preset640x480)
        session.videoComposition = video
        let error = await #expect(throws: MediaError.self) { try await session.export(to: dir.appendingPathComponent("bad.mp4"), as: .mp4) }
        #expect(error?.message.contains("video composition is invalid") == true, "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }
}

/// The image generator with a video composition, and with HDR sources.
@Suite(.disabled(if: which("ffmpeg") == nil, "ffmpeg is not installed (Hardware/setup.sh installs it)"))
struct ImageGeneratorDrawingTests {
    @Test func aVideoCompositionsPictureIsTheImage() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let red = dir.appendingPathComponent("red.mp4"), blue = dir.appendingPathComponent("blue.mp4")
        try await VideoCompositionExportTests.colourClip(red, colour: "red")
        try await VideoCompositionExportTests.colourClip(blue, colour: "blue")
        let composition = MutableComposition()
        let a = try #require(composition.addMutableTrack(withMediaType: .video))
        let b = try #require(composition.addMutableTrack(withMediaType: .video))
        let two = MediaTimeRange(start: .zero, duration: MediaTime(value: 2, timescale: 1))
        try a.insertTimeRange(two, of: try #require(try await Asset(url: red).loadTracks(withMediaType: .video).first), at: .zero)
        try b.insertTimeRange(two, of: try #require(try await Asset(url: blue).loadTracks(withMediaType: .video).first), at: .zero)
        var top = VideoCompositionLayerInstruction(assetTrack: a)
        top.setOpacityRamp(fromStartOpacity: 1, toEndOpacity: 0, timeRange: two)
        let video = VideoComposition(renderSize: Size(width: 320, height: 240), frameDuration: MediaTime(value: 1, timescale: 30), instructions: [
            VideoCompositionInstruction(timeRange: two, layerInstructions: [top, VideoCompositionLayerInstruction(assetTrack: b)]),
        ])
        let generator = AssetImageGenerator(asset: composition)
        generator.videoComposition = video
        // Red fades out over 0–2 s above blue: at t, red × (1 − t/2) + blue × t/2, checked at a
        // quarter, a half and three quarters of the ramp (swapped weights agree only at the half).
        for quarter in 1...3 {
            let time = MediaTime(value: Int64(quarter), timescale: 2)
            let (image, actual) = try await generator.image(at: time)
            #expect(actual == time)
            #expect(image.width == 320 && image.height == 240)
            let p = image.pixel(x: 160, y: 120)
            let blue = Double(quarter) / 4
            // ±10 per channel: one H.264 encode and the RGB conversion.
            #expect(abs(Double(p.red) - 255 * (1 - blue)) <= 10 && p.green < 20 && abs(Double(p.blue) - 255 * blue) <= 10,
                    "at \(time.seconds) s: \(p), expected \(255 * (1 - blue)), 0, \(255 * blue)")
        }
    }

    /// An HLG picture tone-mapped to SDR matches ffmpeg's own tone mapping of it (zscale +
    /// tonemap=hable, the reader's recipe); untouched it does not.
    @Test func hdrPicturesAreToneMappedUnlessAskedNotTo() async throws {
        let clip = TestFiles.fixture("hevc_main10_dolbyvision84_hlg_iphone14pro.mov")
        let generator = AssetImageGenerator(asset: Asset(url: clip))
        generator.requestedTimeToleranceBefore = .zero
        generator.requestedTimeToleranceAfter = .zero
        let (sdr, _) = try await generator.image(at: .zero)
        generator.dynamicRangePolicy = .matchSource
        let (raw, _) = try await generator.image(at: .zero)
        let reference = try await ChildProcess.run(which("ffmpeg")!, [
            "-v", "error", "-nostdin", "-noautorotate", "-i", clip.path, "-frames:v", "1", "-vf",
            "zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p,scale=\(sdr.width):\(sdr.height),format=rgb24",
            "-f", "rawvideo", "-"], timeLimit: 120).standardOutput
        try #require(reference.count == sdr.pixels.count, "ffmpeg gave \(reference.count) bytes for a \(sdr.width)x\(sdr.height) image")
        func meanDifference(_ a: [UInt8], _ b: Data) -> Double {
            Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
        }
        let mapped = meanDifference(sdr.pixels, reference), untouched = meanDifference(raw.pixels, reference)
        #expect(mapped < 4, "tone-mapped image against ffmpeg's: mean difference \(mapped)")
        #expect(untouched > mapped * 2, "the untouched HLG picture differs more: \(untouched) against \(mapped)")
    }
}

/// A composition's export is planned from its sources' rates, as the file's own export is.
@Suite struct CompositionPlanTests {
    @Test func aCompositionOfOneClipGetsTheClipsBitRates() async throws {
        let clip = Asset(url: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4"))
        let composition = MutableComposition()
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: try await clip.load(.duration)), of: clip, at: .zero)
        let direct = try await ExportSession(asset: clip, preset: .preset640x480).plan(fileType: .mp4)
        let composed = try await ExportSession(asset: composition, preset: .preset640x480).plan(fileType: .mp4)
        let (a, b) = (try #require(direct.videoSettings?.averageBitRate), try #require(composed.videoSettings?.averageBitRate))
        // The source-matched cap, not the 32 kb/s floor a file size of nothing would give.
        #expect(b > 100_000 && Double(abs(a - b)) <= 0.1 * Double(a), "the clip's plan: \(a) b/s, the composition's: \(b) b/s")
    }
}

/// README.md's editing example, as written there (with the test's files), checked with ffprobe.
@Suite(.disabled(if: which("ffprobe") == nil || which("ffmpeg") == nil, "ffmpeg/ffprobe are not installed (Hardware/setup.sh installs them)"))
struct ReadmeEditingExampleTests {
    @Test func theReadmeEditingExample() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (name, seconds) in [("a.mp4", 4), ("b.mov", 6)] {
            let made = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=\(seconds)",
                                                                     "-f", "lavfi", "-i", "sine=f=440:d=\(seconds)", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                                                                     "-c:a", "aac", "-shortest", dir.appendingPathComponent(name).path], timeLimit: 120)
            try #require(made.shellStatus == 0)
        }
        let output = dir.appendingPathComponent("edit.mp4")

        let composition = MutableComposition()
        let first = Asset(url: dir.appendingPathComponent("a.mp4")), second = Asset(url: dir.appendingPathComponent("b.mov"))
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: try await first.load(.duration)), of: first, at: .zero)
        try await composition.insertTimeRange(MediaTimeRange(start: MediaTime(value: 2, timescale: 1), duration: MediaTime(value: 3, timescale: 1)),
                                              of: second, at: composition.duration)
        // The last 3 s play twice as fast (audio keeps its pitch) and the sound fades out over them.
        let tail = MediaTimeRange(start: composition.duration - MediaTime(value: 3, timescale: 1), duration: MediaTime(value: 3, timescale: 1))
        try composition.scaleTimeRange(tail, toDuration: MediaTime(value: 3, timescale: 2))
        var fade = AudioMixInputParameters(track: composition.mutableTracks.first { $0.mediaType == .audio }!)
        fade.setVolumeRamp(fromStartVolume: 1, toEndVolume: 0, timeRange: MediaTimeRange(start: tail.start, duration: MediaTime(value: 3, timescale: 2)))
        let session = ExportSession(asset: composition, preset: .preset1920x1080)
        session.audioMix = AudioMix(inputParameters: [fade])
        _ = try await session.export(to: output, as: .mp4)

        // 4 s of a, then 3 s of b of which the last 3 s play in 1.5 s: 5.5 s.
        #expect(abs(try CompositionExportTests.duration(output, stream: "v") - 5.5) <= 1.0 / 30 + 0.001)
        #expect(abs(try CompositionExportTests.duration(output, stream: "a") - 5.5) <= 0.05)
    }
}

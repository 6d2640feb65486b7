import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// Trims count frames in the stream's own clock and keep the frame on screen at the start.
/// ffmpeg makes the sources and is the oracle for the frames a trim keeps; ffprobe reads the
/// outputs and lists the source's frames.
@Suite(.serialized) struct ExactTrimTests {
    /// A 16 s 29.97 fps AVI (MPEG-4 Part 2): its stream time base is 1001/30000.
    static func ntscAVI(in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("ntsc.avi")
        let ffmpeg = try #require(which("ffmpeg"), "ffmpeg makes the source (Hardware/setup.sh installs it)")
        let made = try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30000/1001", "-t", "16",
                                    "-c:v", "mpeg4", "-q:v", "5", "-g", "15", url.path])
        try #require(made.status == 0)
        return url
    }

    /// The number of video packets ffprobe counts in `url`, and the stream's duration in seconds.
    static func videoFrames(_ url: URL) throws -> (count: Int, duration: Double) {
        let probe = try #require(which("ffprobe"))
        let result = try run(probe, ["-v", "error", "-select_streams", "v:0", "-count_packets",
                                     "-show_entries", "stream=nb_read_packets,duration", "-of", "json", url.path])
        let json = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        let stream = try #require((json["streams"] as? [[String: Any]])?.first, "ffprobe read \(url.lastPathComponent)")
        return (Int(stream["nb_read_packets"] as? String ?? "") ?? -1, Double(stream["duration"] as? String ?? "") ?? .nan)
    }

    /// What ffmpeg keeps of `source` from `start` for `duration` seconds, re-encoded, counted by ffprobe.
    static func ffmpegTrimFrames(_ source: URL, start: Int, duration: Int, in dir: URL) throws -> Int {
        let ffmpeg = try #require(which("ffmpeg"))
        let output = dir.appendingPathComponent("ffmpeg-\(start)-\(duration).mp4")
        let made = try run(ffmpeg, ["-v", "error", "-ss", "\(start)", "-t", "\(duration)", "-i", source.path, "-an", "-c:v", "libx264",
                                    "-preset", "ultrafast", output.path])
        try #require(made.status == 0)
        return try videoFrames(output).count
    }

    @Test(arguments: [(0, 10), (10, 5)])
    func a29_97fpsAVITrimKeepsFFmpegsFrames(start: Int, duration: Int) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.ntscAVI(in: dir)
        let output = dir.appendingPathComponent("vaf.mp4")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: "640x480"))
        session.timeRange = MediaTimeRange(start: MediaTime(value: Int64(start), timescale: 1), duration: MediaTime(value: Int64(duration), timescale: 1))
        _ = try await session.export(to: output, as: .mp4)
        let written = try Self.videoFrames(output)
        let ffmpegKept = try Self.ffmpegTrimFrames(source, start: start, duration: duration, in: dir)
        // 30000/1001 frames a second: 300 in 10 s, 150 in 5 s (measured with ffmpeg 5.1: the same).
        #expect(ffmpegKept == duration * 30)
        // ffmpeg starts with the first frame at or after the start; vaf also keeps the frame on
        // screen at the start when the start falls inside it (10 s is 299.7 frames).
        let startsInsideAFrame = (Int64(start) * 30000) % 1001 != 0
        let expected = ffmpegKept + (startsInsideAFrame ? 1 : 0)
        #expect(written.count == expected, "vaf kept \(written.count) frames of \(start)+\(duration) s, ffmpeg \(ffmpegKept)")
        #expect(abs(written.duration - Double(duration)) < 0.04, "duration \(written.duration) s")
    }

    /// The presentation times (seconds) of the video frames ffprobe decodes from `url` in its first `seconds`.
    static func framesTimes(_ url: URL, seconds: Int) throws -> [Double] {
        let probe = try #require(which("ffprobe"))
        let result = try run(probe, ["-v", "error", "-select_streams", "v:0", "-read_intervals", "%+\(seconds)",
                                     "-show_entries", "frame=pts_time", "-of", "csv=p=0", url.path])
        return String(decoding: result.stdout, as: UTF8.self).split(whereSeparator: \.isNewline)
            .compactMap { line in line.split(separator: ",").first.flatMap { Double($0) } }
    }

    /// The iPhone FLIR clip shows its first frame from 0 s to 1.997 s, but each of its packets
    /// claims a duration of one 1/600 s tick: the frame on screen at 1 s is the 0 s frame.
    @Test func aRangeStartsWithTheFrameOnScreenWhateverThePacketsClaim() async throws {
        let clip = try TestFiles.requireSharedMedia().appendingPathComponent("h264_aac_vfr_iphone_flir_gps.mp4")
        let shown = try Self.framesTimes(clip, seconds: 4)
        let onScreenAtStart = try #require(shown.last { $0 <= 1.0 }, "ffprobe lists a frame at or before 1 s")
        let firstAfter = try #require(shown.first { $0 > 1.0 })
        #expect(firstAfter - onScreenAtStart > 0.5, "the clip has a long frame across 1 s (ffprobe: \(onScreenAtStart) → \(firstAfter))")

        let asset = Asset(url: clip)
        let reader = AssetReader(asset: asset)
        reader.timeRange = MediaTimeRange(start: MediaTime(value: 1, timescale: 1), duration: MediaTime(value: 3, timescale: 1))
        let output = try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                                outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
        try reader.add(output)
        try reader.startReading()
        let first = try #require(try output.copyNextSampleBuffer())
        let second = try #require(try output.copyNextSampleBuffer())
        #expect(abs(first.presentationTimeStamp.seconds - onScreenAtStart) < 0.001,
                "the first picture is the one on screen at 1 s (\(onScreenAtStart) s), not \(first.presentationTimeStamp.seconds) s")
        #expect(abs(second.presentationTimeStamp.seconds - firstAfter) < 0.001)
        reader.cancelReading()
    }

    /// A constant-rate clip: a start between two frames keeps the earlier one, a start on a
    /// frame begins with it, and every later frame of the range follows.
    @Test(arguments: [1.02, 1.0, 0.999])
    func aStartBetweenFramesKeepsTheEarlierOne(start: Double) async throws {
        let clip = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")
        let asset = Asset(url: clip)
        let shown = try Self.framesTimes(clip, seconds: 3)
        let expected = try #require(shown.last { $0 <= start + 1e-9 })
        let reader = AssetReader(asset: asset)
        reader.timeRange = MediaTimeRange(start: MediaTime(seconds: start, preferredTimescale: 1000), duration: MediaTime(value: 1, timescale: 1))
        let output = try AssetReaderTrackOutput(track: try await asset.loadTracks(withMediaType: .video)[0],
                                                outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
        try reader.add(output)
        try reader.startReading()
        var times: [Double] = []
        while let sample = try output.copyNextSampleBuffer() { times.append(sample.presentationTimeStamp.seconds) }
        #expect(abs((times.first ?? -1) - expected) < 0.001, "first \(times.first ?? -1) s, ffprobe's frame on screen at \(start) s is \(expected) s")
        #expect(times.count == shown.filter { $0 > expected - 1e-9 && $0 < start + 1 - 1e-9 }.count)
    }

    /// ffmpeg's mean volume (dB) of `url`'s audio, or of `seconds` of it from `start` when given (its `atrim`).
    static func meanVolume(_ url: URL, trim: (start: Double, seconds: Double)? = nil) throws -> Double {
        let ffmpeg = try #require(which("ffmpeg"))
        let filter = (trim.map { "atrim=\($0.start):\($0.start + $0.seconds)," } ?? "") + "volumedetect"
        let child = try ChildProcess.run(ffmpeg, ["-v", "info", "-nostats", "-i", url.path, "-af", filter, "-f", "null", "-"], timeLimit: 600)
        let line = try #require(child.stderr.split(separator: "\n").first { $0.contains("mean_volume:") }, "\(child.stderr)")
        return try #require(Double(line.split(separator: " ").dropLast().last ?? ""))
    }

    /// FFmpeg 5.1's Ogg seek lands where the Opus decoder yields nothing (`ffmpeg -ss 0.2 -t 1`
    /// writes 0 s of it): the export reads from the file's start and drops what lies before the range.
    @Test(arguments: [0.2, 5.0])
    func anOggOpusTrimReadsFromTheStartWhenItsSeekYieldsNothing(start: Double) async throws {
        let clip = try TestFiles.requireSharedMedia().appendingPathComponent("opus_mono.opus")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("trim.m4a")
        let session = try #require(ExportSession(asset: Asset(url: clip), presetName: "AppleM4A"))
        session.timeRange = MediaTimeRange(start: MediaTime(seconds: start, preferredTimescale: 1000), duration: MediaTime(value: 1, timescale: 1))
        _ = try await session.export(to: output, as: .m4a)
        let probe = try #require(which("ffprobe"))
        let duration = try run(probe, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", output.path])
        let seconds = Double(String(decoding: duration.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(abs(seconds - 1) < 0.025, "the trim lasts \(seconds) s")
        // The same second of sound as ffmpeg's decode of the whole file cut by atrim.
        let written = try Self.meanVolume(output), reference = try Self.meanVolume(clip, trim: (start, 1))
        #expect(abs(written - reference) < 1, "mean volume \(written) dB, ffmpeg's atrim of the source \(reference) dB")
    }
}

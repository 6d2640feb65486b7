import ChildProcess
import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation

/// The muxer's interleaving queue is the writer's own, and counted. Packets wait in it only for
/// an audio or video stream that may still send an earlier packet: not for a stream that has
/// ended, a sparse subtitle track, a copied track whose next packet is known to come later, or
/// encoded audio whose next packet time is known. libavformat's queue, which it replaces, waits
/// for each of these until it spans 10 s.
@Suite
struct MuxerQueueTests {
    enum Source: String, CaseIterable, Sendable {
        /// Pictures and sound from start to end.
        case plain
        /// Sound from 22 s only (`DemuxerQueueTests.lateAudioMovie`).
        case lateAudio
        /// A subtitle track with cues at 0.5 s and 25 s, in a Matroska file.
        case sparseSubtitles
        /// Sound for the first 3 s of 25 s of pictures.
        case earlyEndingAudio
    }

    static func ffmpeg(_ arguments: [String]) throws {
        let ffmpeg = try #require(which("ffmpeg"), "ffmpeg is not installed (Hardware/setup.sh installs it)")
        let made = try ChildProcess.run(ffmpeg, ["-v", "error", "-nostdin", "-y"] + arguments, timeLimit: 120)
        try #require(made.shellStatus == 0, "ffmpeg could not make the source: \(made.stderr)")
    }

    static func make(_ source: Source, in dir: URL) throws -> URL {
        switch source {
        case .plain:
            let url = dir.appendingPathComponent("plain.mp4")
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=10", "-f", "lavfi", "-i", "sine=duration=10",
                        "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", url.path])
            return url
        case .lateAudio:
            return try DemuxerQueueTests.lateAudioMovie(in: dir, container: "mp4")
        case .sparseSubtitles:
            let cues = dir.appendingPathComponent("cues.srt")
            try "1\n00:00:00,500 --> 00:00:01,500\nFirst\n\n2\n00:00:25,000 --> 00:00:26,000\nSecond\n"
                .write(to: cues, atomically: true, encoding: .utf8)
            let url = dir.appendingPathComponent("sparse.mkv")
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=30", "-f", "lavfi", "-i", "sine=duration=30",
                        "-i", cues.path, "-map", "0", "-map", "1", "-map", "2",
                        "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-c:s", "srt", url.path])
            return url
        case .earlyEndingAudio:
            let url = dir.appendingPathComponent("short-sound.mp4")
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=25", "-f", "lavfi", "-i", "sine=duration=3",
                        "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", url.path])
            return url
        }
    }

    /// Exports `source` with `preset` to `output`; the peak of the muxer's queue.
    static func peakQueue(_ source: URL, _ preset: ExportPreset, to output: URL) async throws -> (packets: Int, bytes: Int, span: MediaTime, outOfOrder: Int) {
        let session = ExportSession(asset: Asset(url: source), preset: preset)
        let probe = StageProbe { _ throws(MediaError) in }
        session.stageProbe = probe
        _ = try await session.export(to: output, as: output.pathExtension == "mkv" ? .mkv : .mp4)
        return probe.peakMuxerQueue
    }

    /// The decode times of `url`'s packets of every stream, in the order they lie in the file.
    static func decodeTimesInFileOrder(_ url: URL) throws -> [(stream: Int, dts: Double)] {
        let ffprobe = try #require(which("ffprobe"), "ffprobe is not installed (Hardware/setup.sh installs it)")
        let listed = try run(ffprobe, ["-v", "error", "-show_entries", "packet=stream_index,dts_time,pos", "-of", "csv=p=0", url.path])
        let rows = String(decoding: listed.stdout, as: UTF8.self).split(separator: "\n").compactMap { line -> (Int, Double, Int)? in
            let fields = line.split(separator: ",")
            guard fields.count == 3, let stream = Int(fields[0]), let dts = Double(fields[1]), let pos = Int(fields[2]) else { return nil }
            return (stream, dts, pos)
        }
        return rows.sorted { $0.2 < $1.2 }.map { ($0.0, $0.1) }
    }

    @Test(arguments: Source.allCases)
    func aCopyHoldsPacketsForAtMostAPicture(source: Source) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.make(source, in: dir)
        let output = dir.appendingPathComponent("copy.\(input.pathExtension)")
        let peak = try await Self.peakQueue(input, .passthrough, to: output)
        // The remux hands packets over in decode order and says after each when its track's
        // next one comes: a packet waits at most for the picture before it, which the writer
        // keeps until its successor gives its duration (a picture lasts 0.04 s here).
        let bound = MediaTime(value: 1, timescale: 10)
        #expect(peak.packets > 0, "no packet waited in the queue")
        #expect(peak.outOfOrder == 0, "\(peak.outOfOrder) packets written out of order after waiting 10 s")
        #expect(peak.span <= bound, "the muxer held \(peak.span.seconds) s of packets (\(peak.packets)) at once; bound \(bound.seconds) s")
        guard input.pathExtension == "mp4" else { return }
        // Written in decode-time order across the tracks.
        let times = try Self.decodeTimesInFileOrder(output)
        let late = zip(times, times.dropFirst()).first { $1.dts < $0.dts - 0.001 }
        #expect(late == nil, "a packet of stream \(late?.1.stream ?? -1) at \(late?.1.dts ?? 0) s lies after one at \(late?.0.dts ?? 0) s")
    }

    /// An encode holds what its encoders delay the pictures by (x264's look-ahead and frame
    /// threads: 3-4 s here), and never gives up waiting, where libavformat would wait 10 s for
    /// the late sound, the sparse subtitles and the sound that has ended, then write out of order.
    @Test(arguments: Source.allCases)
    func anEncodeNeverWaitsTheWholeDelta(source: Source) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.make(source, in: dir)
        let peak = try await Self.peakQueue(input, .preset640x480, to: dir.appendingPathComponent("encoded.\(input.pathExtension)"))
        #expect(peak.packets > 0, "no packet waited in the queue")
        #expect(peak.outOfOrder == 0, "\(peak.outOfOrder) packets written out of order after waiting 10 s")
        #expect(peak.span < Muxer.maximumInterleavingSpan, "the muxer held \(peak.span.seconds) s of packets (\(peak.packets)) at once")
    }
}

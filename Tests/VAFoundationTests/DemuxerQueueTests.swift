import ChildProcess
import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation

/// The demuxer's queues are bounded: a stream whose next packet lies past too many of another
/// stream's goes on reading on a demuxer of its own, and reads the same packets as it would
/// have through the shared one.
@Suite
struct DemuxerQueueTests {
    /// What identifies a packet: its stream, times, flags and a checksum of its bytes.
    struct Mark: Equatable, CustomStringConvertible {
        var pts: Int64?
        var dts: Int64?
        var size: Int
        var isKeyframe: Bool
        var checksum: UInt64
        var description: String { "pts \(pts.map(String.init) ?? "-") dts \(dts.map(String.init) ?? "-") size \(size)" }
    }

    /// What reading a session stream by stream gave: each stream's packets, whether its
    /// reading ended on damage, and the most packets the session queued at once.
    struct Reading {
        var packets: [Int: [Mark]] = [:]
        var failed: Set<Int> = []
        var peakQueued = 0
    }

    /// Reads every packet of each stream of `order` in turn (the whole of the first, then the
    /// whole of the next), from a session over `range` with queues of at most `bound` packets
    /// and `bytes` bytes.
    static func read(_ path: String, order: [Int], range: MediaTimeRange, bound: Int, bytes: Int) throws -> Reading {
        let session = try DemuxSession(path: path, timeRange: range, streams: Set(order), queueBytes: bytes, queuePackets: bound)
        var reading = Reading()
        for stream in order {
            var marks: [Mark] = []
            do {
                while case .packet(let packet) = try session.nextPacket(stream: stream) {
                    let checksum = packet.withUnsafeBytes { bytes in
                        bytes.reduce(UInt64(14_695_981_039_346_656_037)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }
                    }
                    marks.append(Mark(pts: packet.pts, dts: packet.dts, size: packet.size, isKeyframe: packet.isKeyframe, checksum: checksum))
                }
            } catch {
                reading.failed.insert(stream)
            }
            reading.packets[stream] = marks
        }
        reading.peakQueued = session.peakQueuedPackets
        return reading
    }

    /// Every stream of `path` (nil when it does not open, or has fewer than two).
    static func streams(of path: String) -> [Int]? {
        guard let demuxer = try? Demuxer(path: path), demuxer.streams.count > 1 else { return nil }
        return Array(demuxer.streams.indices)
    }

    /// Reads the file's streams one after another, first to last and last to first, so the
    /// others queue behind the one read, with queues of 3 packets, and compares with reading
    /// them through unbounded queues.
    static func expectSamePackets(_ path: String, range: MediaTimeRange) throws {
        guard let streams = streams(of: path) else { return }
        for order in [streams, streams.reversed()] {
            let unbounded = try read(path, order: order, range: range, bound: .max, bytes: .max)
            let bounded = try read(path, order: order, range: range, bound: 3, bytes: PipelineBounds.demuxerQueueBytes)
            for stream in streams {
                let (expected, got) = (unbounded.packets[stream] ?? [], bounded.packets[stream] ?? [])
                #expect(got.count == expected.count, "\(path) order \(order), stream \(stream): \(got.count) packets, \(expected.count) through the shared demuxer")
                if let i = zip(got, expected).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
                    Issue.record("\(path) order \(order), stream \(stream): packet \(i) is \(got[i]), through the shared demuxer \(expected[i])")
                }
            }
            #expect(bounded.failed == unbounded.failed, "\(path) order \(order): streams ending on damage")
            // Each stream waiting holds at most the bound and the packet that passed it (past a
            // seek, the packets read to check where it landed come on top).
            if !range.start.isNumeric || range.start == .zero {
                #expect(bounded.peakQueued <= (streams.count - 1) * 4, "\(path) order \(order): \(bounded.peakQueued) packets queued at once")
            }
        }
    }

    @Test(arguments: ["testsrc_320x240_30fps_3s.mp4", "h264_aac_iphone6_rot90_gps_metadata.mov", "ac3_51_plus_aac_stereo_two_tracks.mp4"])
    func aStreamReadingAloneReadsTheSamePackets(fixture: String) throws {
        let path = TestFiles.fixture(fixture).path
        try Self.expectSamePackets(path, range: MediaTimeRange(start: .zero, duration: .positiveInfinity))
        // From a seek: the demuxer of its own starts where the shared one's seek landed.
        try Self.expectSamePackets(path, range: MediaTimeRange(start: MediaTime(value: 2, timescale: 1), duration: .positiveInfinity))
    }

    @Test(arguments: TestFiles.sharedMediaFiles)
    func everyCorpusFileReadsTheSamePacketsThroughBoundedQueues(name: String) throws {
        let path = try TestFiles.requireSharedMedia().appendingPathComponent(name).path
        try Self.expectSamePackets(path, range: MediaTimeRange(start: .zero, duration: .positiveInfinity))
    }

    /// A movie whose audio starts 22 s after its video (100 pictures a second): reading the
    /// first sound means reading past 2,200 pictures, more than a queue may hold. In an MP4
    /// (read by time, through its index) or a Matroska file (read in file order).
    static func lateAudioMovie(in dir: URL, container: String) throws -> URL {
        let url = dir.appendingPathComponent("late-audio.\(container)")
        let ffmpeg = try #require(which("ffmpeg"), "ffmpeg is not installed (Hardware/setup.sh installs it)")
        let made = try ChildProcess.run(ffmpeg, ["-v", "error", "-nostdin", "-y",
                                                 "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=100:duration=25",
                                                 "-itsoffset", "22", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=3",
                                                 "-c:v", "libx264", "-preset", "ultrafast", "-g", "100", "-c:a", "aac", url.path], timeLimit: 120)
        try #require(made.shellStatus == 0, "ffmpeg could not make the late-audio movie: \(made.stderr)")
        return url
    }

    /// Where the packets of `url`'s first stream of `kind` ("v", "a") start and end, in
    /// seconds, as ffprobe reads them.
    static func packetSpan(_ url: URL, stream kind: String) throws -> (start: Double, end: Double) {
        let ffprobe = try #require(which("ffprobe"), "ffprobe is not installed (Hardware/setup.sh installs it)")
        let listed = try run(ffprobe, ["-v", "error", "-select_streams", "\(kind):0", "-show_entries", "packet=pts_time,duration_time",
                                       "-of", "csv=p=0", url.path])
        let packets = String(decoding: listed.stdout, as: UTF8.self).split(separator: "\n").compactMap { line -> (Double, Double)? in
            let fields = line.split(separator: ",").map { Double($0) }
            guard let pts = fields.first ?? nil else { return nil }
            return (pts, fields.count > 1 ? fields[1] ?? 0 : 0)
        }
        let start = try #require(packets.map(\.0).min(), "no \(kind) packets in \(url.lastPathComponent)")
        return (start, packets.map { $0.0 + $0.1 }.max() ?? start)
    }

    @Test(arguments: [ExportPreset.passthrough, .preset640x480], ["mp4", "mkv"])
    func anExportOfATrackStartingLateQueuesNoMoreThanTheBound(preset: ExportPreset, container: String) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.lateAudioMovie(in: dir, container: container)
        let session = ExportSession(asset: Asset(url: source), preset: preset)
        let probe = StageProbe { _ throws(MediaError) in }
        session.stageProbe = probe
        let output = dir.appendingPathComponent("out.mp4")
        _ = try await session.export(to: output, as: .mp4)
        #expect(probe.peakQueuedPackets <= PipelineBounds.demuxerQueuePackets + 1,
                "\(probe.peakQueuedPackets) packets queued at once (bound \(PipelineBounds.demuxerQueuePackets))")
        // Each track spans what the source's does: the sound from 22 s, the pictures from 0.
        for kind in ["v", "a"] {
            let written = try Self.packetSpan(output, stream: kind)
            let read = try Self.packetSpan(source, stream: kind)
            #expect(abs(written.start - read.start) <= 0.05, "\(kind): starts at \(written.start) s, the source's at \(read.start) s")
            #expect(abs(written.end - read.end) <= 0.05, "\(kind): ends at \(written.end) s, the source's at \(read.end) s")
        }
    }
}

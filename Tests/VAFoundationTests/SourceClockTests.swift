import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// Outputs start at 0 whatever the source's clock says, keep the sources' A/V offset, and
/// play through timestamp jumps; a failed export leaves nothing behind. ffmpeg makes the
/// sources and ffprobe reads the outputs (independent oracles).
@Suite(.serialized) struct SourceClockTests {
    /// A 3 s 320x240 25 fps H.264 + 48 kHz AAC transport stream whose clock starts at 6 h 22 min.
    static func broadcastCapture(in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("capture.ts")
        let ffmpeg = try #require(which("ffmpeg"), "ffmpeg makes the source (Hardware/setup.sh installs it)")
        let made = try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi",
                                    "-i", "sine=f=440:sample_rate=48000", "-t", "3", "-c:v", "libx264", "-c:a", "aac",
                                    "-output_ts_offset", "22920", url.path])
        try #require(made.status == 0)
        return url
    }

    /// ffprobe's start time and duration of each stream of `url`, by codec type.
    static func streams(_ url: URL) throws -> [String: (start: Double, duration: Double, frames: Int)] {
        let probe = try #require(which("ffprobe"))
        let result = try run(probe, ["-v", "error", "-count_packets", "-show_entries", "stream=codec_type,start_time,duration,nb_read_packets",
                                     "-of", "json", url.path])
        let json = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        var found: [String: (Double, Double, Int)] = [:]
        for stream in json["streams"] as? [[String: Any]] ?? [] {
            guard let type = stream["codec_type"] as? String else { continue }
            found[type] = (Double(stream["start_time"] as? String ?? "") ?? .nan, Double(stream["duration"] as? String ?? "") ?? .nan,
                           Int(stream["nb_read_packets"] as? String ?? "") ?? -1)
        }
        return found
    }

    @Test(arguments: ["640x480", "Passthrough"])
    func aLateClockStartsTheOutputAtZeroKeepingTheAVOffset(preset: String) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.broadcastCapture(in: dir)
        let input = try Self.streams(source)
        let sourceOffset = try #require(input["video"]).start - (try #require(input["audio"])).start
        #expect(try #require(input["audio"]).start > 22920, "the source's clock starts late")

        let tracks = try await Asset(url: source).load(.tracks)
        #expect(tracks.map(\.timeRange.start.seconds).min() == 0, "the asset's timeline starts at 0")

        let output = dir.appendingPathComponent("out.mp4")
        let session = try #require(ExportSession(asset: Asset(url: source), presetName: preset))
        _ = try await session.export(to: output, as: .mp4)
        let written = try Self.streams(output)
        let video = try #require(written["video"]), audio = try #require(written["audio"])
        #expect(min(video.start, audio.start) == 0, "starts at 0: video \(video.start), audio \(audio.start)")
        // Measured: 0.021 s in the source, 0.021 s written (the MP4 video time scale rounds to 1 ms).
        #expect(abs((video.start - audio.start) - sourceOffset) <= 0.002, "A/V offset \(video.start - audio.start) s, source \(sourceOffset) s")
        #expect(video.duration < 3.1, "the timeline holds the media only, not the clock: \(video.duration) s")
        #expect(video.frames == 75)
    }

    @Test(arguments: ["640x480", "Passthrough"])
    func twoJoinedCapturesPlayThroughTheTimestampJump(preset: String) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let part = try Data(contentsOf: try Self.broadcastCapture(in: dir))
        let joined = dir.appendingPathComponent("joined.ts")
        try (part + part).write(to: joined)

        let asset = Asset(url: joined)
        let warnings = try await asset.load(.warnings)
        #expect(warnings.contains { $0.contains("timestamps jump once") }, "\(warnings)")
        let duration = try await asset.load(.duration).seconds
        #expect(abs(duration - 6.03) < 0.05, "both halves count: \(duration) s")

        let output = dir.appendingPathComponent("out.mp4")
        let session = try #require(ExportSession(asset: asset, presetName: preset))
        let result = try await session.export(to: output, as: .mp4)
        #expect(result.warnings.contains { $0.contains("timestamps jump") }, "\(result.warnings)")
        let video = try #require(try Self.streams(output)["video"])
        #expect(video.frames == 150, "every frame of both halves")
        #expect(abs(video.duration - 6.0) <= 0.04, "full length within a frame: \(video.duration) s")
        let ffmpeg = try #require(which("ffmpeg"))
        #expect(try run(ffmpeg, ["-v", "error", "-xerror", "-i", output.path, "-f", "null", "-"]).status == 0, "decodes without errors")
    }

    /// Matroska stores no decode times; the first packets of a B-frame stream come without
    /// one. Copied into MP4, MOV or MKV they get increasing decode times before their pictures.
    @Test(arguments: [FileType.mp4, .mov, .mkv])
    func matroskaWithBFramesRemuxesWithIncreasingDecodeTimes(to fileType: FileType) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ffmpeg = try #require(which("ffmpeg"))
        let source = dir.appendingPathComponent("bframes.mkv")
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-f", "lavfi", "-i", "sine",
                                      "-t", "3", "-c:v", "libx264", "-bf", "3", "-c:a", "aac", source.path]).status == 0)
        let output = dir.appendingPathComponent("out.\(fileType.fileExtension)")
        let session = ExportSession(asset: Asset(url: source), preset: .passthrough)
        _ = try await session.export(to: output, as: fileType)
        let probe = try #require(which("ffprobe"))
        let packets = String(decoding: try run(probe, ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts,dts", "-of", "csv=p=0", output.path]).stdout,
                             as: UTF8.self).split(separator: "\n").map { $0.split(separator: ",").compactMap { Int64($0) } }
        #expect(packets.count == 90)
        if fileType != .mkv {  // Matroska stores no decode times to read back
            #expect(packets.allSatisfy { $0.count == 2 }, "every packet has both times")
            let dts = packets.map { $0.count == 2 ? $0[1] : 0 }
            #expect(zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 }, "decode times increase")
            #expect(packets.allSatisfy { $0.count != 2 || $0[1] <= $0[0] }, "no picture is decoded after it is shown")
        }
        let decode = try await ChildProcess.run(ffmpeg, ["-v", "error", "-i", output.path, "-f", "null", "-"], timeLimit: 120)
        #expect(decode.shellStatus == 0 && decode.stderr.isEmpty, "ffmpeg reads it without a complaint: \(decode.stderr)")
    }

    /// A range starting between two frames opens with the frame on screen at its start,
    /// clipped to it, as AVFoundation does; not with the next frame, later than the audio.
    @Test func aTrimBetweenFramesStartsWithTheFrameOnScreen() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ffmpeg = try #require(which("ffmpeg"))
        let source = dir.appendingPathComponent("ten.mp4")
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=10", "-f", "lavfi", "-i", "sine",
                                      "-t", "2", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-g", "1", "-c:a", "aac", source.path]).status == 0)
        let output = dir.appendingPathComponent("out.mp4")
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        session.timeRange = MediaTimeRange(start: MediaTime(value: 1, timescale: 4), end: MediaTime(value: 5, timescale: 4))
        let result = try await session.export(to: output, as: .mp4)
        #expect(result.videoFrames == 11, "the frame of 0.2 s (clipped) and the ten of 0.3-1.2 s")
        let probe = try #require(which("ffprobe"))
        let times = String(decoding: try run(probe, ["-v", "error", "-select_streams", "v", "-show_entries", "frame=pts_time", "-of", "csv=p=0", output.path]).stdout,
                           as: UTF8.self).split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: " ,"))) }
        #expect(times.first == 0 && abs((times.dropFirst().first ?? 0) - 0.05) < 0.001, "\(times.prefix(3))")
        // Which picture opens the file: measured 45.6 dB against the source's frame of 0.2 s,
        // 21.9 dB against that of 0.3 s.
        func psnr(against frame: Int) throws -> Double {
            let result = try ChildProcess.run(ffmpeg, ["-v", "info", "-i", output.path, "-i", source.path, "-lavfi",
                                                       "[0:v]select=eq(n\\,0),scale=320:240[a];[1:v]select=eq(n\\,\(frame))[b];[a][b]psnr", "-f", "null", "-"],
                                              timeLimit: 120)
            let text = result.stderr.split(separator: " ").first { $0.hasPrefix("y:") }.map { $0.dropFirst(2) } ?? ""
            return Double(text) ?? 0
        }
        #expect(try psnr(against: 2) > 40 && psnr(against: 3) < 30)
    }

    /// Whatever a damaged source makes the export do, no temporary file stays behind: repeated,
    /// since the old race left one in about eight failures.
    @Test func anExportFailingMidStreamLeavesNoFile() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let whole = dir.appendingPathComponent("whole.mp4")
        let ffmpeg = try #require(which("ffmpeg"))
        // The index first, so that a cut file opens and fails only once reading reaches the cut.
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "sine",
                                      "-t", "3", "-c:v", "libx264", "-c:a", "aac", "-movflags", "+faststart", whole.path]).status == 0)
        let data = try Data(contentsOf: whole)
        let cut = dir.appendingPathComponent("cut.mp4")
        try data.prefix(data.count * 6 / 10).write(to: cut)
        let outputs = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
        for attempt in 0..<8 {
            let session = ExportSession(asset: Asset(url: cut), preset: .preset640x480)
            let output = outputs.appendingPathComponent("cut\(attempt).mp4")
            do {
                _ = try await session.export(to: output, as: .mp4)
            } catch let error as MediaError {
                #expect(error.message.contains("failed") && error.path == cut.path, "\(error)")
                #expect(!FileManager.default.fileExists(atPath: output.path))
            }
            let partial = try FileManager.default.contentsOfDirectory(atPath: outputs.path).filter { $0.contains("vaf-partial") }
            #expect(partial.isEmpty, "attempt \(attempt) left \(partial)")
        }
    }
}

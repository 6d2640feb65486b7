import ChildProcess
import Foundation
import Testing

/// Raw elementary streams (`.h264`, `.hevc`, as cameras, encoders and security systems dump
/// them) carry no timestamps, no duration and no index: every packet follows its predecessor at
/// the stream's rate, as ffmpeg times them, and a seek reads the stream again from its start.
/// ffmpeg makes the streams and is the oracle.
@Suite struct RawStreamCommandTests {
    /// A 3 s 25 fps 320x240 stream with B-frames, in the raw `format` ("h264", "hevc").
    static func rawStream(_ format: String, in dir: URL) throws -> String {
        let url = dir.appendingPathComponent("camera.\(format)").path
        let encoder = format == "h264" ? "libx264" : "libx265"
        let made = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=3",
                                                                "-c:v", encoder, "-preset", "ultrafast", "-bf", "2", "-x265-params", "log-level=error",
                                                                "-f", format, url])
        try #require(made.status == 0, "\(made.stderr)")
        return url
    }

    @Test(arguments: ["h264", "hevc"])
    func aRawStreamConvertsWhole(format: String) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-raw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.rawStream(format, in: dir)
        let info = try Vaf.run(["info", source, "--json"])
        let described = try #require(try Vaf.jsonLines(info.stdout).first)
        #expect(abs((described["durationSeconds"] as? Double ?? 0) - 3) < 0.001, "\(described)")

        let run = try Vaf.run(["transcode", source, "--preset", "640x480", "--output-dir", dir.appendingPathComponent("out").path, "--json", "--quiet"])
        try #require(run.status == 0, "\(run.stderr)")
        let output = try #require(try Vaf.jsonLines(run.stdout).last?["output"] as? String)
        let probe = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames,start_time,duration",
                                                                  "-of", "csv=p=0", output])
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0.000000,3.000000,75", "every picture, from 0: \(probe.stdout)")

        let cut = try Vaf.run(["transcode", source, "--preset", "640x480", "--time-range", "1-2", "--name", "{name}-cut.{ext}",
                               "--output-dir", dir.appendingPathComponent("out").path, "--json", "--quiet"])
        try #require(cut.status == 0, "\(cut.stderr)")
        let row = try #require(try Vaf.jsonLines(cut.stdout).last)
        #expect(row["frames"] as? Int == 25, "a second of a stream that cannot seek: \(row)")
    }

    @Test func aThumbnailOfARawStreamIsThePictureOnScreenThen() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-raw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.rawStream("h264", in: dir)
        let run = try Vaf.run(["thumbnails", source, "--at", "2.5,1", "--format", "png", "--output-dir", dir.appendingPathComponent("thumbs").path])
        try #require(run.status == 0, "\(run.stderr)")
        // At 2.5 s the 63rd picture (2.48 s) is on screen; at 1 s the 26th. ffmpeg picks them by
        // number; each image must be nearest to its own picture, far nearer than to its neighbours
        // (testsrc2's clock and bar move each picture: about 10 dB apart; measured 27.9 dB against
        // the right one, the rest being RGB conversion).
        for (image, picture) in [("camera-001.png", 62), ("camera-002.png", 25)] {
            var scores: [Int: Double] = [:]
            for candidate in picture - 1 ... picture + 1 {
                let reference = dir.appendingPathComponent("ffmpeg-\(candidate).png").path
                let made = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-i", source, "-vf", "select=eq(n\\,\(candidate))",
                                                                        "-frames:v", "1", reference])
                try #require(made.status == 0, "\(made.stderr)")
                let compared = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "info", "-nostdin", "-i", dir.appendingPathComponent("thumbs/\(image)").path,
                                                                            "-i", reference, "-lavfi", "[0:v][1:v]psnr", "-f", "null", "-"])
                let psnr = compared.stderr.range(of: #"average:([0-9.]+|inf)"#, options: .regularExpression).map { String(compared.stderr[$0].dropFirst(8)) }
                scores[candidate] = psnr.flatMap { $0 == "inf" ? Double.infinity : Double($0) } ?? 0
            }
            let own = scores[picture] ?? 0
            #expect(scores.filter { $0.key != picture }.allSatisfy { own > $0.value + 5 }, "\(image) against ffmpeg's pictures: \(scores)")
        }
    }
}

/// A container that seeks by a guess (MPEG-TS seeks by bit rate) can land on a keyframe after
/// the range's start: the reader checks where it landed and seeks earlier, so a trim keeps
/// every picture of its range, as the same stream in MP4 does.
@Suite struct TransportStreamTrimCommandTests {
    @Test func aTrimOfATransportStreamStartsAtItsFirstPicture() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-tstrim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("broadcast.ts").path
        let made = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=30",
                                                                "-c:v", "libx264", "-preset", "ultrafast", "-g", "49", "-f", "mpegts", source])
        try #require(made.status == 0, "\(made.stderr)")
        let run = try Vaf.run(["transcode", source, "--time-range", "6-8", "--preset", "640x480", "--output-dir", dir.appendingPathComponent("out").path,
                               "--json", "--quiet"])
        try #require(run.status == 0, "\(run.stderr)")
        let row = try #require(try Vaf.jsonLines(run.stdout).last)
        #expect(row["frames"] as? Int == 50, "two seconds at 25 fps: \(row)")
        let output = try #require(row["output"] as? String)
        // Its first picture is the source's 151st (6 s after its first), picked by number.
        var scores: [Int: Double] = [:]
        for candidate in [149, 150, 151] {
            let compared = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "info", "-nostdin", "-i", output, "-i", source, "-filter_complex",
                                                                        "[0:v]select=eq(n\\,0),setpts=0[a];[1:v]select=eq(n\\,\(candidate)),setpts=0[b];[a][b]psnr",
                                                                        "-f", "null", "-"])
            let psnr = compared.stderr.range(of: #"average:([0-9.]+|inf)"#, options: .regularExpression).map { String(compared.stderr[$0].dropFirst(8)) }
            scores[candidate] = psnr.flatMap { $0 == "inf" ? Double.infinity : Double($0) } ?? 0
        }
        let own = scores[150] ?? 0
        #expect(scores.filter { $0.key != 150 }.allSatisfy { own > $0.value + 5 }, "the first picture against the source's: \(scores)")
    }
}

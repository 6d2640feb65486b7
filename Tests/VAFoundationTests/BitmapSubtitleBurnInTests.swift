import Foundation
import Testing
@testable import VAFoundation
import VATestSupport

/// Bitmap subtitles burnt into the picture where ffmpeg's `[0:v][0:s]overlay` puts them, in the
/// files and at the times that once went wrong: an MPEG-TS whose subtitles are minutes apart,
/// trims far into a file, a cue that started long before a trim. The cues are PGS rectangles
/// written by `PGSStream`; ffmpeg muxes them and draws the oracle.
@Suite struct BitmapSubtitleBurnInTests {
    /// A red rectangle at (40, 40) 80x40: Y 81, Cr 240, Cb 90.
    static let red: (UInt8, UInt8, UInt8, UInt8) = (81, 240, 90, 255)

    /// `seconds` of 320x180 testsrc2 at 10 fps with `cues` as a PGS track, in `container`; the
    /// export keeps its size (a 640x480 preset does not enlarge).
    static func source(_ cues: [PGSStream.Cue], seconds: Int, container: String, in dir: URL) throws -> URL {
        let sup = dir.appendingPathComponent("cues.sup")
        // ffmpeg starts each input at 0: a first cue at 0 (a dot in a corner) keeps the others' times.
        let mark = PGSStream.Cue(start: 0, end: 0.1, x: 300, y: 160, width: 4, height: 4, colour: (235, 128, 128, 255))
        try PGSStream.data([mark] + cues, width: 320, height: 180).write(to: sup)
        let url = dir.appendingPathComponent("source.\(container)")
        let ffmpeg = try #require(which("ffmpeg"))
        let made = try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=10:duration=\(seconds)", "-i", sup.path,
                                    "-map", "0", "-map", "1", "-c:v", "libx264", "-preset", "ultrafast", "-g", "20", "-c:s", "copy", url.path])
        try #require(made.status == 0)
        return url
    }

    /// The mean Y, U and V of the rectangle at (40, 40) 80x40 of 320x180 (scaled with the picture) at `time` s of `url`.
    static func rectangle(_ url: URL, at time: Double) throws -> [Int] {
        let ffmpeg = try #require(which("ffmpeg"))
        let result = try run(ffmpeg, ["-v", "error", "-ss", String(time), "-i", url.path, "-frames:v", "1", "-vf",
                                      "crop=iw/4:ih*2/9:iw/8:ih*2/9,scale=1:1:flags=area,format=yuv444p", "-f", "rawvideo", "-"])
        return result.stdout.map(Int.init)
    }

    static func isRed(_ yuv: [Int]) -> Bool { yuv.count == 3 && yuv[2] > 200 && yuv[1] < 120 }

    static func burn(_ source: URL, range: MediaTimeRange? = nil, in dir: URL) async throws -> URL {
        let output = dir.appendingPathComponent("burnt-\(UUID().uuidString.prefix(6)).mp4")
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        session.subtitlesBurnedIn = .all
        if let range { session.timeRange = range }
        _ = try await session.export(to: output, as: .mp4)
        return output
    }

    static func seconds(_ start: Int, _ end: Int) -> MediaTimeRange {
        MediaTimeRange(start: MediaTime(value: Int64(start), timescale: 1), end: MediaTime(value: Int64(end), timescale: 1))
    }

    @Test func cuesMinutesApartInATransportStreamKeepTheirTimes() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cues = [2.0, 30, 55].map { PGSStream.Cue(start: $0, end: $0 + 2, x: 40, y: 40, width: 80, height: 40, colour: Self.red) }
        let source = try Self.source(cues, seconds: 60, container: "m2ts", in: dir)
        let output = try await Self.burn(source, in: dir)
        for (time, shown) in [(1.5, false), (2.5, true), (12.5, false), (30.5, true), (40.5, false), (55.5, true), (58.5, false)] {
            let yuv = try Self.rectangle(output, at: time)
            #expect(Self.isRed(yuv) == shown, "at \(time) s: \(yuv)")
        }
    }

    @Test(arguments: ["m2ts", "mkv"])
    func aTrimFarIntoTheFileShowsTheCueThatBeganLongBefore(container: String) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // On screen from 5 s to 100 s: 65 s before the trim's start.
        let source = try Self.source([PGSStream.Cue(start: 5, end: 100, x: 40, y: 40, width: 80, height: 40, colour: Self.red)],
                                     seconds: 110, container: container, in: dir)
        let output = try await Self.burn(source, range: Self.seconds(70, 74), in: dir)
        for time in [0.2, 3.5] {
            let yuv = try Self.rectangle(output, at: time)
            #expect(Self.isRed(yuv), "at \(time) s of the trim: \(yuv)")
        }
        // ffmpeg draws the same there (its colours are BT.601's, so only the place is compared).
        let ffmpeg = try #require(which("ffmpeg"))
        let oracle = dir.appendingPathComponent("oracle.mp4")
        try #require(try run(ffmpeg, ["-v", "error", "-i", source.path, "-filter_complex", "[0:v][0:s]overlay", "-ss", "70", "-t", "4",
                                      "-c:v", "libx264", "-preset", "ultrafast", oracle.path]).status == 0)
        #expect(Self.isRed(try Self.rectangle(oracle, at: 0.2)))
    }

    /// A video composition draws its own pictures: burning subtitles into them is refused, not silently skipped.
    @Test func aVideoCompositionRefusesBurntInSubtitles() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source([PGSStream.Cue(start: 0.5, end: 1, x: 40, y: 40, width: 80, height: 40, colour: Self.red)],
                                     seconds: 2, container: "mkv", in: dir)
        let asset = Asset(url: source)
        let video = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let session = ExportSession(asset: asset, preset: .preset640x480)
        session.subtitlesBurnedIn = .all
        session.videoComposition = VideoComposition.videoComposition(withPropertiesOf: [VideoCompositionSourceTrack(track: video)],
                                                                     duration: try await asset.load(.duration))
        let output = dir.appendingPathComponent("composed.mp4")
        do {
            _ = try await session.export(to: output, as: .mp4)
            Issue.record("the export burnt nothing and succeeded")
        } catch let error as MediaError {
            #expect(error.code == .unsupported && error.message.contains("not into a video composition's"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }
}

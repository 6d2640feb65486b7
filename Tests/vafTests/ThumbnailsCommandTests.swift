import ChildProcess
import BenchKit
import Foundation
import Testing

/// `vaf thumbnails` as a user runs it: stills, sprite sheets with a WebVTT index checked
/// against ffprobe, JSON lines, and its errors.
@Suite struct ThumbnailsCommandTests {
    let clip = Vaf.fixture("testsrc_320x240_30fps_3s.mp4")

    private func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-thumbs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func imageSize(_ path: String) throws -> (Int, Int) {
        let r = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", path])
        let parts = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Int($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : (0, 0)
    }

    /// Milliseconds of a WebVTT time `HH:MM:SS.mmm`.
    private func milliseconds(_ text: Substring) -> Int {
        let f = text.split(separator: ":")
        let s = f[2].split(separator: ".")
        return ((Int(f[0])! * 60 + Int(f[1])!) * 60 + Int(s[0])!) * 1000 + Int(s[1])!
    }

    /// A contact sheet: 16 tiles (4 per row) fitted in 320x180 under a header, each with its
    /// time; its size follows from the layout, and the header's text is drawn.
    @Test func aContactSheetLaysOutTheImagesWithTheirTimes() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try Vaf.run(["thumbnails", clip, "--contact-sheet", "--format", "png", "--output-dir", dir, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let schema = try JSONSchemaSubset(json: Data(contentsOf: Vaf.packageRoot.appendingPathComponent("Schemas/vaf-thumbnails.schema.json")))
        #expect(schema.violations(of: report).isEmpty, "\(schema.violations(of: report))")
        let sheet = try #require(report["contactSheet"] as? String)
        #expect((report["images"] as? [[String: Any]])?.count == 16)
        // 320x240 tiles fit 320x180 as 240x180; 8 px gaps; a 32 px header: 4 x 248 + 8 by 32 + 8 + 4 x 188.
        let (width, height) = try imageSize(sheet)
        #expect(width == 1000 && height == 792, "\(width)x\(height)")
        // The header strip (dark grey ground) holds white text.
        let strip = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-i", sheet, "-vf", "crop=600:24:8:4",
                                                             "-f", "rawvideo", "-pix_fmt", "gray", "-"], timeLimit: 60)
        let lit = strip.standardOutput.filter { $0 > 200 }.count
        #expect(lit > 100, "\(lit) bright pixels of header text")
        let misuse = try Vaf.run(["thumbnails", clip, "--contact-sheet", "--sprite", "4x4"])
        #expect(misuse.status == 64 && misuse.stderr.contains("--contact-sheet") && misuse.stderr.contains("--sprite"))
    }

    @Test func spriteSheetsAndTheirWebVTTIndexCoverTheDuration() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try Vaf.run(["thumbnails", clip, "--every", "0.25s", "--sprite", "4x2", "--vtt", "--size", "80x80",
                                  "--output-dir", dir, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(report["schemaVersion"] as? Int == 1 && report["status"] as? String == "completed")
        let schema = try JSONSchemaSubset(json: Data(contentsOf: Vaf.packageRoot.appendingPathComponent("Schemas/vaf-thumbnails.schema.json")))
        #expect(schema.violations(of: report).isEmpty, "\(schema.violations(of: report))")
        let sheets = try #require(report["sprites"] as? [String])
        #expect(sheets.count == 2, "12 tiles on 4x2 sheets: \(sheets)")
        let vtt = try String(contentsOfFile: try #require(report["vtt"] as? String), encoding: .utf8)
        #expect(vtt.hasPrefix("WEBVTT\n\n"))
        let cues = vtt.components(separatedBy: "\n\n").dropFirst().map { $0.split(separator: "\n") }
        #expect(cues.count == 12)
        var end = 0
        for cue in cues {
            let times = cue[0].components(separatedBy: " --> ")
            let (from, to) = (milliseconds(Substring(times[0])), milliseconds(Substring(times[1])))
            #expect(from == end && to > from, "cues follow each other without gaps: \(cue[0])")
            end = to
            let target = cue[1].split(separator: "#")
            let (sheetWidth, sheetHeight) = try imageSize(dir + "/" + target[0])
            let xywh = target[1].dropFirst("xywh=".count).split(separator: ",").compactMap { Int($0) }
            #expect(xywh.count == 4 && xywh[2] == 80 && xywh[3] == 60)
            #expect(xywh[0] + xywh[2] <= sheetWidth && xywh[1] + xywh[3] <= sheetHeight, "\(cue[1]) inside \(sheetWidth)x\(sheetHeight)")
        }
        #expect(end == 3000, "the last cue ends at the duration")
        // Each tile is its own picture: the times are a quarter second apart, not keyframes.
        let images = try #require(report["images"] as? [[String: Any]])
        let actual = images.compactMap { $0["actualTime"] as? Double }
        #expect(Set(actual).count == 12 && actual == actual.sorted())
    }

    /// The rgb24 bytes ffmpeg decodes from a picture file, or from the frames `filter` keeps of a video.
    private func rgb(_ path: String, filter: String? = nil) throws -> [UInt8] {
        let run = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-i", path] + (filter.map { ["-vf", $0, "-fps_mode", "passthrough"] } ?? [])
                                       + ["-f", "rawvideo", "-pix_fmt", "rgb24", "-"], timeLimit: 60)
        #expect(run.succeeded, "ffmpeg \(path): \(run.stderr)")
        return [UInt8](run.standardOutput)
    }

    /// PSNR in dB of two pictures of the same size (rgb24), 99 when identical.
    private func psnr(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Double {
        let squares = zip(a, b).reduce(0.0) { sum, pair in sum + pow(Double(pair.0) - Double(pair.1), 2) }
        return squares == 0 ? 99 : 10 * log10(255 * 255 * Double(a.count) / squares)
    }

    /// The index of the frame ffprobe says is on screen at each of `milliseconds`: the last one
    /// whose presentation time is not after it, in exact integer arithmetic.
    private func framesOnScreen(_ path: String, at milliseconds: [Int]) throws -> [Int] {
        let base = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=time_base", "-of", "csv=p=0", path])
        let fraction = base.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "/").compactMap { Int($0) }
        let frames = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts", "-of", "csv=p=0", path])
        let pts = frames.stdout.split(separator: "\n").compactMap { Int($0.split(separator: ",")[0]) }.sorted()
        #expect(fraction.count == 2 && !pts.isEmpty, "ffprobe: \(base.stdout) \(frames.stdout.prefix(100))")
        return milliseconds.map { t in (pts.lastIndex { $0 * fraction[0] * 1000 <= t * fraction[1] }) ?? 0 }
    }

    /// Cue n of a sprite index, from first principles: tile n is the picture at n·interval, so
    /// its cue covers the times nearer to it than to any other tile (half an interval each side;
    /// the first cue from 0, the last to the duration), and it names cell n of the grid, row by row, sheet
    /// after sheet. Its tile shows ffmpeg's frame at n·interval (nearer it than any other tile's).
    @Test func everyCueNamesTheTileOfItsTimesAndThatTileShowsFFmpegsFrame() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (interval, duration) = (250, 3000) // ms; the clip lasts 3 s (ffprobe)
        let (columns, rows, tileWidth, tileHeight) = (4, 2, 80, 60) // 320x240 fitted in 80x80
        let result = try Vaf.run(["thumbnails", clip, "--every", "0.25s", "--sprite", "\(columns)x\(rows)", "--vtt", "--size", "80x80",
                                  "--format", "png", "--output-dir", dir, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let vtt = try String(contentsOfFile: try #require(report["vtt"] as? String), encoding: .utf8)
        let cues = vtt.components(separatedBy: "\n\n").dropFirst().map { $0.split(separator: "\n") }
        let count = (duration + interval - 1) / interval
        try #require(cues.count == count, "one cue per tile at 0, 0.25 … 2.75 s: \(cues.count)")
        let tileTimes = (0..<count).map { $0 * interval }
        let frames = try framesOnScreen(clip, at: tileTimes)
        let select = frames.map { "eq(n\\,\($0))" }.joined(separator: "+")
        let expectedPictures = try rgb(clip, filter: "select=\(select),scale=\(tileWidth):\(tileHeight):flags=area")
        let tileBytes = tileWidth * tileHeight * 3
        try #require(expectedPictures.count == count * tileBytes, "ffmpeg gave \(expectedPictures.count / tileBytes) of frames \(frames)")
        var sheets: [String: (width: Int, pixels: [UInt8])] = [:]
        for (n, cue) in cues.enumerated() {
            let times = cue[0].components(separatedBy: " --> ")
            let (from, to) = (milliseconds(Substring(times[0])), milliseconds(Substring(times[1])))
            #expect(from == (n == 0 ? 0 : tileTimes[n] - interval / 2) && to == (n == count - 1 ? duration : tileTimes[n] + interval / 2),
                    "cue \(n) (tile at \(tileTimes[n]) ms): \(cue[0])")
            let cell = n % (columns * rows)
            let sheet = "testsrc_320x240_30fps_3s-sprite-\(n / (columns * rows) + 1).png"
            let target = "\(sheet)#xywh=\((cell % columns) * tileWidth),\((cell / columns) * tileHeight),\(tileWidth),\(tileHeight)"
            #expect(cue[1] == target, "cue \(n)")
            // The picture in the tile the cue names, whatever it names.
            let named = cue[1].split(separator: "#"), xywh = named[1].dropFirst("xywh=".count).split(separator: ",").compactMap { Int($0) }
            try #require(xywh.count == 4 && xywh[2] == tileWidth && xywh[3] == tileHeight, "cue \(n): \(cue[1])")
            if sheets[String(named[0])] == nil {
                let path = dir + "/" + named[0]
                sheets[String(named[0])] = (try imageSize(path).0, try rgb(path))
            }
            let (width, pixels) = try #require(sheets[String(named[0])])
            try #require(xywh[0] + tileWidth <= width && (xywh[1] + tileHeight) * width * 3 <= pixels.count, "cue \(n): \(cue[1]) is off its sheet")
            let tile = (0..<tileHeight).flatMap { row -> ArraySlice<UInt8> in
                let start: Int = ((xywh[1] + row) * width + xywh[0]) * 3
                return pixels[start..<(start + tileWidth * 3)]
            }
            // Scalers differ (about 22 dB on testsrc's sharp edges); a tile 0.25 s away scores about 14 dB.
            let scores = (0..<count).map { psnr(tile[...], expectedPictures[($0 * tileBytes)..<(($0 + 1) * tileBytes)]) }
            #expect(scores.indices.max { scores[$0] < scores[$1] } == n && scores[n] > 18,
                    "cue \(n): its tile is nearest ffmpeg's frame \(frames[n]) at \(tileTimes[n]) ms (dB per tile time: \(scores.map { Int($0) }))")
        }
    }

    @Test func exactStillsAndAPoster() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let exact = try Vaf.run(["thumbnails", clip, "--at", "1.01,00:00:02.5", "--exact", "--format", "png", "--output-dir", dir, "--json"])
        #expect(exact.status == 0, "\(exact.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(exact.stdout.utf8)) as? [String: Any])
        let images = try #require(report["images"] as? [[String: Any]])
        #expect(images.compactMap { $0["actualTime"] as? Double } == [1.0, 2.5])
        for image in images {
            let path = try #require(image["path"] as? String)
            #expect(path.hasPrefix(dir + "/") && path.hasSuffix(".png"))
            #expect(try imageSize(path) == (320, 240))
        }
        let poster = try Vaf.run(["thumbnails", clip, "--size", "160x160", "--output-dir", dir])
        #expect(poster.status == 0 && poster.stdout.contains("1 image"), "\(poster.stdout)\(poster.stderr)")
        #expect(try imageSize(dir + "/testsrc_320x240_30fps_3s-001.jpg") == (160, 120))
        let left = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix(".") }
        #expect(left.isEmpty, "no temporary file left: \(left)")
    }

    /// A transport stream has no index of keyframes: each still is still the picture at (or,
    /// without --exact, near) its time, not the file's first picture three times over.
    @Test func stillsOfAStreamWithoutAnIndexShowTheirTimes() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let stream = dir + "/stream.ts"
        let made = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=3",
                                                               "-c:v", "libx264", "-g", "15", "-pix_fmt", "yuv420p", stream])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        let run = try Vaf.run(["thumbnails", stream, "--at", "0.5,1.5,2.5", "--output-dir", dir, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let images = try #require(report["images"] as? [[String: Any]])
        let times = images.compactMap { $0["actualTime"] as? Double }
        // The stream starts at 1.4 s on its own clock, which the demuxer moves to 0.
        #expect(zip(times, [0.5, 1.5, 2.5]).allSatisfy { abs($0 - $1) <= 0.5 }, "within a keyframe interval of each time: \(times)")
        let bytes = try images.map { try Data(contentsOf: URL(fileURLWithPath: try #require($0["path"] as? String))) }
        #expect(Set(bytes).count == 3, "three different pictures")
    }

    /// A transport stream whose one keyframe is its first picture: a search by time lands on
    /// the packet at the time, from which nothing decodes, so the still is found by seeking
    /// further back. The poster and an exact still are the pictures on screen then, as
    /// ffmpeg decodes them.
    @Test func stillsOfAStreamWithOneKeyframeAreThePicturesAtTheirTimes() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let stream = dir + "/one-gop.ts"
        let made = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
                                                               "-c:v", "libx264", "-g", "1000", "-pix_fmt", "yuv420p", stream])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        let poster = try Vaf.run(["thumbnails", stream, "--output-dir", dir + "/poster"])
        #expect(poster.status == 0, "\(poster.stderr)")
        let exact = try Vaf.run(["thumbnails", stream, "--at", "1.5", "--exact", "--output-dir", dir + "/exact"])
        #expect(exact.status == 0, "\(exact.stderr)")
        /// PSNR of an image against ffmpeg's decode of picture `n`.
        func psnr(_ image: String, picture n: Int) throws -> Double {
            let run = try Vaf.run(executable: "/usr/bin/ffmpeg", ["-v", "info", "-nostats", "-nostdin", "-i", dir + "/" + image, "-i", stream, "-lavfi",
                                                                  "[1:v]select=eq(n\\,\(n)),scale=320:240[ref];[0:v][ref]psnr", "-f", "null", "-"])
            let average = run.stderr.components(separatedBy: "average:").last.flatMap { Double($0.prefix { $0 == "." || $0.isNumber }) }
            return try #require(average, "no PSNR in \(run.stderr.suffix(300))")
        }
        // The middle (1 s) shows picture 30, 1.5 s picture 45: each closer to its own picture than to its neighbours.
        for (image, n) in [("poster/one-gop-001.jpg", 30), ("exact/one-gop-001.jpg", 45)] {
            let (own, before, after) = (try psnr(image, picture: n), try psnr(image, picture: n - 1), try psnr(image, picture: n + 1))
            #expect(own > 32 && own > before + 3 && own > after + 3, "\(image): \(own) dB against \(before) and \(after) for its neighbours")
        }
    }

    @Test func badInputsAndArgumentsAreOneLineErrors() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let missing = try Vaf.run(["thumbnails", "/nonexistent/clip.mp4", clip, "--output-dir", dir])
        #expect(missing.status == 1)
        #expect(missing.stderr.split(separator: "\n").count == 1 && missing.stderr.contains("/nonexistent/clip.mp4"), "\(missing.stderr)")
        #expect(missing.stdout.contains("1 image"), "the good input is still done: \(missing.stdout)")
        let audioOnly = try Vaf.run(["thumbnails", Vaf.fixture("ac3_51_plus_aac_stereo_two_tracks.mp4"), "--output-dir", dir, "--json"])
        #expect(audioOnly.status == 1)
        let failure = try #require(try JSONSerialization.jsonObject(with: Data(audioOnly.stdout.utf8)) as? [String: Any])
        #expect((failure["error"] as? String)?.contains("no video track") == true, "\(audioOnly.stdout)")
        let schema = try JSONSchemaSubset(json: Data(contentsOf: Vaf.packageRoot.appendingPathComponent("Schemas/vaf-thumbnails.schema.json")))
        #expect(schema.violations(of: failure).isEmpty, "\(schema.violations(of: failure))")
        for arguments in [["--at", "1", "--count", "3"], ["--sprite", "0x3"], ["--vtt"], ["--size", "big"], ["--format", "gif"], ["--every", "-2"]] {
            let usage = try Vaf.run(["thumbnails", clip, "--output-dir", dir] + arguments)
            #expect(usage.status == 64, "\(arguments): \(usage.status) \(usage.stderr)")
        }
    }
}

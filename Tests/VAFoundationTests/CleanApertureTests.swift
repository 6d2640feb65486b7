import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// The clean aperture (`AVVideoCleanApertureKey`, QuickTime/MP4 `clap`): written by the writer
/// into the index FFmpeg leaves without one, read back into the format description, and kept by
/// passthrough. ExifTool, which reads `clap` itself, is the independent oracle; ffmpeg checks
/// that the media around the rewritten index still decodes, picture for picture.
@Suite struct CleanApertureTests {
    /// The `clap` ExifTool reads from the file: width, height, horizontal and vertical offset.
    static func exifToolAperture(_ url: URL) throws -> [Double]? {
        let exiftool = try #require(which("exiftool"), "exiftool is installed by Hardware/setup.sh")
        let result = try run(exiftool, ["-n", "-s3", "-CleanApertureWidth", "-CleanApertureHeight", "-CleanApertureOffsetX",
                                        "-CleanApertureOffsetY", url.path])
        let values = String(decoding: result.stdout, as: UTF8.self).split(whereSeparator: \.isNewline).compactMap { Double($0) }
        return values.count == 4 ? values : nil
    }

    /// Pictures ffmpeg decodes from `url` without a single error, nil when it reports one.
    static func cleanlyDecodedPictures(_ url: URL) throws -> Int? {
        let ffmpeg = try #require(which("ffmpeg"))
        let result = try ChildProcess.run(ffmpeg, ["-v", "error", "-xerror", "-i", url.path, "-map", "0:v", "-f", "framemd5", "-"], timeLimit: 120)
        guard result.exitStatus == 0, result.stderr.isEmpty else { return nil }
        return result.stdout.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("#") }.count
    }

    /// Writes 25 testsrc2 pictures of 320x240 with `aperture` (and 4:3 pixels when `anamorphic`).
    static func write(_ aperture: CleanAperture, to fileType: FileType, optimizedForNetwork: Bool, anamorphic: Bool = false,
                      in dir: URL) async throws -> URL {
        let source = dir.appendingPathComponent("source-\(UUID().uuidString.prefix(6)).mp4")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "25",
                                      "-c:v", "libx264", "-preset", "ultrafast", source.path]).status == 0)
        let asset = Asset(url: source)
        let track = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
        try reader.add(output)
        let url = dir.appendingPathComponent("clap-\(UUID().uuidString.prefix(6)).\(fileType.fileExtension)")
        let writer = try AssetWriter(url: url, fileType: fileType)
        writer.shouldOptimizeForNetworkUse = optimizedForNetwork
        var settings = VideoSettings(codec: .h264, width: 320, height: 240)
        settings.cleanAperture = aperture
        if anamorphic { settings.pixelAspectRatio = PixelAspectRatio(horizontalSpacing: 4, verticalSpacing: 3) }
        let input = try AssetWriterInput(videoSettings: settings)
        try writer.add(input)
        try reader.startReading()
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        while let sample = try output.copyNextSampleBuffer() { try await input.append(sample) }
        input.markAsFinished()
        try await writer.finishWriting()
        return url
    }

    @Test(arguments: [
        // file type, index before the media (moved by faststart, so the media moves again), 4:3 pixels
        (FileType.mov, false, false),
        (.mp4, false, true),
        (.mp4, true, false),
        (.mov, true, true),
    ] as [(FileType, Bool, Bool)])
    func theWriterWritesItAndTheAssetReadsItBack(fileType: FileType, optimizedForNetwork: Bool, anamorphic: Bool) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let aperture = CleanAperture(width: 304, height: 224, horizontalOffset: 2, verticalOffset: -4)
        let url = try await Self.write(aperture, to: fileType, optimizedForNetwork: optimizedForNetwork, anamorphic: anamorphic, in: dir)
        #expect(try Self.exifToolAperture(url) == [304, 224, 2, -4])
        #expect(try Self.cleanlyDecodedPictures(url) == 25, "the media around the rewritten index decodes whole")
        // Optimised for the network, the index comes before the media.
        let bytes = try Data(contentsOf: url)
        let (moov, mdat) = (try #require(bytes.range(of: Data("moov".utf8))).lowerBound, try #require(bytes.range(of: Data("mdat".utf8))).lowerBound)
        #expect((moov < mdat) == optimizedForNetwork, "moov at \(moov), mdat at \(mdat)")
        if anamorphic {
            let probe = try #require(which("ffprobe"))
            let shape = String(decoding: try run(probe, ["-v", "error", "-select_streams", "v", "-show_entries", "stream=sample_aspect_ratio",
                                                         "-of", "csv=p=0", url.path]).stdout, as: UTF8.self)
            #expect(shape.trimmingCharacters(in: .whitespacesAndNewlines) == "4:3", "the pixel aspect stays beside it")
        }
        let format = try #require(try await Asset(url: url).loadTracks(withMediaType: .video).first?.formatDescription.video)
        #expect(format.cleanAperture == aperture)
        #expect(format.presentationDimensions(usePixelAspectRatio: false, useCleanAperture: true) == Size(width: 304, height: 224))
        #expect(format.presentationDimensions(usePixelAspectRatio: anamorphic, useCleanAperture: false)
                == Size(width: anamorphic ? 320.0 * 4 / 3 : 320, height: 240))
    }

    @Test func passthroughKeepsTheSourcesAperture() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let aperture = CleanAperture(width: 312, height: 232)
        let source = try await Self.write(aperture, to: .mov, optimizedForNetwork: false, in: dir)
        let output = dir.appendingPathComponent("passthrough.mov")
        let session = ExportSession(asset: Asset(url: source), preset: .passthrough)
        _ = try await session.export(to: output, as: .mov)
        #expect(try Self.exifToolAperture(output) == [312, 232, 0, 0])
        #expect(try Self.cleanlyDecodedPictures(output) == 25)
        // A file made by ffmpeg has none, and reads so.
        let plain = dir.appendingPathComponent("plain.mov")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-i", source.path, "-c", "copy", plain.path]).status == 0)
        #expect(try await Asset(url: plain).loadTracks(withMediaType: .video).first?.formatDescription.video?.cleanAperture == nil)
    }

    /// An index FFmpeg wrote first with room reserved after it (`-moov_size`): the aperture
    /// takes its bytes from that room, and the media stays where it was.
    @Test func anIndexWrittenFirstGrowsIntoTheRoomReservedAfterIt() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("reserved.mp4")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "25", "-c:v", "libx264",
                                      "-preset", "ultrafast", "-moov_size", "16384", url.path]).status == 0)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        try MovieBoxes.setCleanApertures([1: CleanAperture(width: 300, height: 200, horizontalOffset: -10, verticalOffset: 20)], path: url.path)
        #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int == size, "nothing after the room moved")
        #expect(try Self.exifToolAperture(url) == [300, 200, -10, 20])
        #expect(try Self.cleanlyDecodedPictures(url) == 25)
        #expect(MovieBoxes.cleanApertures(path: url.path) == [1: CleanAperture(width: 300, height: 200, horizontalOffset: -10, verticalOffset: 20)])
    }

    /// An index ffmpeg's faststart put before the media, with no room after it: the media moves
    /// on by the aperture's 40 bytes, and every chunk offset with it.
    @Test func anIndexBeforeTheMediaWithNoRoomMovesTheMedia() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("faststart.mp4")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "25", "-c:v", "libx264",
                                      "-preset", "ultrafast", "-movflags", "+faststart", url.path]).status == 0)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        try MovieBoxes.setCleanApertures([1: CleanAperture(width: 320, height: 232, verticalOffset: -2)], path: url.path)
        #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int == size + 40)
        #expect(try Self.exifToolAperture(url) == [320, 232, 0, -2])
        #expect(try Self.cleanlyDecodedPictures(url) == 25)
    }

    /// The example of the DocC article "Reading and writing samples" ("Keeping the picture's shape"), as written there.
    @Test func theArticlesSettingsCarryTheShape() async throws {
        func writerSettings(for track: AssetTrack) -> VideoSettings? {
            guard let format = track.formatDescription.video else { return nil }
            var settings = VideoSettings(codec: .h264, width: format.width, height: format.height)
            settings.cleanAperture = format.cleanAperture
            if let shape = format.pixelAspectRatio, shape.count == 2 {
                settings.pixelAspectRatio = PixelAspectRatio(horizontalSpacing: shape[0], verticalSpacing: shape[1])
            }
            return settings
        }
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let aperture = CleanAperture(width: 300, height: 220)
        let source = try await Self.write(aperture, to: .mp4, optimizedForNetwork: false, anamorphic: true, in: dir)
        let track = try #require(try await Asset(url: source).loadTracks(withMediaType: .video).first)
        let settings = try #require(writerSettings(for: track))
        #expect(settings.cleanAperture == aperture && settings.pixelAspectRatio == PixelAspectRatio(horizontalSpacing: 4, verticalSpacing: 3))
        #expect(track.formatDescription.video?.presentationDimensions(usePixelAspectRatio: true, useCleanAperture: true) == Size(width: 400, height: 220))
    }

    /// The index of a file is read by our own code: no damage to it may crash the reader. Every
    /// 32-bit word of a written index (a clap box's among them) is set in turn to sizes that
    /// lie (0, 1: a 64-bit size follows, 7, 40, far too large), and each box's size moved into a
    /// 64-bit field over its first payload bytes, and the file read again.
    @Test func aDamagedIndexNeverCrashesTheReader() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try await Self.write(CleanAperture(width: 300, height: 200), to: .mp4, optimizedForNetwork: false, in: dir)
        let original = try Data(contentsOf: url)
        let moov = try #require(original.range(of: Data("moov".utf8))).lowerBound - 4
        let damaged = dir.appendingPathComponent("damaged.mp4")
        var reads = 0
        func word(_ value: UInt64, _ count: Int) -> [UInt8] { (0..<count).reversed().map { UInt8((value >> (8 * UInt64($0))) & 0xFF) } }
        for offset in stride(from: moov + 8, to: original.count - 4, by: 4) {
            var damages: [[(at: Int, bytes: [UInt8])]] = [0, 1, 7, 40, 0xFFFF_FFF0].map { [(offset, word($0, 4))] }
            // A box's size moved into a 64-bit field after its type (size 1), its payload's first 8 bytes lost to it.
            let size = original[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt64($1) }
            if size >= 16, offset + 16 <= original.count { damages.append([(offset, word(1, 4)), (offset + 8, word(size, 8))]) }
            for damage in damages {
                var bytes = original
                for patch in damage { bytes.replaceSubrange(patch.at..<(patch.at + patch.bytes.count), with: patch.bytes) }
                try bytes.write(to: damaged)
                _ = MovieBoxes.cleanApertures(path: damaged.path)
                reads += 1
            }
        }
        #expect(reads > 500)
        #expect(MovieBoxes.cleanApertures(path: url.path) == [1: CleanAperture(width: 300, height: 200)])
    }

    @Test func anApertureNoFileCanHoldIsRefusedBeforeWriting() async throws {
        var settings = VideoSettings(codec: .h264, width: 320, height: 240)
        settings.cleanAperture = CleanAperture(width: 304, height: 224)
        let directory = FileManager.default.temporaryDirectory
        let mkv = try AssetWriter(url: directory.appendingPathComponent("never-\(UUID()).mkv"), fileType: .mkv)
        #expect(!mkv.canAdd(try AssetWriterInput(videoSettings: settings)), "Matroska has no clean aperture FFmpeg writes")
        let mp4 = try AssetWriter(url: directory.appendingPathComponent("never-\(UUID()).mp4"), fileType: .mp4)
        #expect(mp4.canAdd(try AssetWriterInput(videoSettings: settings)))
        settings.cleanAperture = CleanAperture(width: 304, height: 224, horizontalOffset: 10)
        #expect(!mp4.canAdd(try AssetWriterInput(videoSettings: settings)), "8 pixels each side cannot move 10")
        settings.cleanAperture = CleanAperture(width: 304, height: 224)
        let fragmented = try AssetWriter(url: directory.appendingPathComponent("never-\(UUID()).mp4"), fileType: .mp4)
        fragmented.movieFragmentInterval = MediaTime(value: 1, timescale: 1)
        try fragmented.add(try AssetWriterInput(videoSettings: settings))
        #expect(throws: MediaError.self) { try fragmented.startWriting() }
    }
}

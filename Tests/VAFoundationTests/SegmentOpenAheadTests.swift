import Foundation
import Testing
@testable import VAFoundation

/// A composition track opens each segment's file while the segment before it decodes, so a
/// joint waits for no file; what comes out, and when an error comes, are as if each segment
/// had been opened when it was reached.
@Suite struct SegmentOpenAheadTests {
    private func seconds(_ value: Int) -> MediaTime { MediaTime(value: Int64(value), timescale: 1) }

    /// A video track of three 1 s segments: `a` 0–1 s, `b` 0–1 s, `a` 1–2 s.
    private func composition(_ a: URL, _ b: URL) async throws -> CompositionTrack {
        let first = try #require(try await Asset(url: a).loadTracks(withMediaType: .video).first)
        let second = try #require(try await Asset(url: b).loadTracks(withMediaType: .video).first)
        let composition = MutableComposition()
        let track = try #require(composition.addMutableTrack(withMediaType: .video))
        try track.insertTimeRange(MediaTimeRange(start: seconds(0), end: seconds(1)), of: first, at: seconds(0))
        try track.insertTimeRange(MediaTimeRange(start: seconds(0), end: seconds(1)), of: second, at: seconds(1))
        try track.insertTimeRange(MediaTimeRange(start: seconds(1), end: seconds(2)), of: first, at: seconds(2))
        return try #require(composition.tracks.first)
    }

    /// Two copies of the 3 s test clip in a fresh folder.
    private func clips() throws -> (folder: URL, a: URL, b: URL) {
        let folder = try TestFiles.temporaryDirectory()
        let a = folder.appendingPathComponent("a.mp4"), b = folder.appendingPathComponent("b.mp4")
        try FileManager.default.copyItem(at: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4"), to: a)
        try FileManager.default.copyItem(at: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4"), to: b)
        return (folder, a, b)
    }

    @Test func eachSegmentIsOpenedWhileTheOneBeforeDecodes() async throws {
        let (folder, a, b) = try clips()
        defer { try? FileManager.default.removeItem(at: folder) }
        let track = try await composition(a, b)
        let pipeline = try CompositionTrackPipeline(track: track, media: .video(PixelBufferAttributes(pixelFormat: .yuv420p)),
                                                    timeRange: MediaTimeRange(start: .zero, end: seconds(3)))
        var times: [MediaTime] = []
        var openingAhead: [Int: Int] = [:]  // segment → the one opening ahead at its first picture (-1: none)
        while let sample = try pipeline.next() {
            let segment = Int(sample.presentationTimeStamp.seconds)
            if openingAhead[segment] == nil { openingAhead[segment] = pipeline.upcomingSegment ?? -1 }
            times.append(sample.presentationTimeStamp)
        }
        #expect(openingAhead == [0: 1, 1: 2, 2: -1], "the segment opened ahead while each one decoded")
        #expect(times.count == 90, "\(times.count) pictures")
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "the pictures' times increase across the joints")
    }

    @Test func aSegmentWhoseFileIsGoneFailsWhenItIsReached() async throws {
        let (folder, a, b) = try clips()
        defer { try? FileManager.default.removeItem(at: folder) }
        let track = try await composition(a, b)
        try FileManager.default.removeItem(at: b)
        let pipeline = try CompositionTrackPipeline(track: track, media: .video(PixelBufferAttributes(pixelFormat: .yuv420p)),
                                                    timeRange: MediaTimeRange(start: .zero, end: seconds(3)))
        var pictures = 0
        do {
            while try pipeline.next() != nil { pictures += 1 }
            Issue.record("the segment of a missing file was read")
        } catch {
            #expect(error.path == b.path, "\(error)")
        }
        #expect(pictures == 30, "every picture of the first segment came out before the second's failure: \(pictures)")
    }
}

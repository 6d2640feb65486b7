import Foundation
import Testing
@testable import VAFoundation

/// The export pipeline driven through its embedded seam (`StageProbe`): a failure, a
/// cancellation or a slow stage injected at each point, on that stage's own thread, with
/// deterministic outcomes. Both ways an export runs are covered: the copy stage of a remux
/// (Passthrough) and the scheduled decode/encode edges (640x480).
@Suite(.serialized)
struct PipelineSeamTests {
    let clip = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")

    /// Where a fault is injected.
    enum Point: String, CaseIterable, CustomTestStringConvertible {
        case open, outputCreated, firstRead, midStreamRead, firstWrite, midStreamWrite, finish
        var testDescription: String { rawValue }

        func matches(_ step: StageProbe.Step) -> Bool {
            switch (self, step) {
            case (.open, .sourceOpened), (.outputCreated, .outputCreated), (.finish, .finishing): true
            case (.firstRead, .sampleRead(.video, 0, _)), (.midStreamRead, .sampleRead(.video, 45, _)): true
            case (.firstWrite, .sampleWritten(.audio, 0, _)), (.midStreamWrite, .sampleWritten(.video, 45, _)): true
            default: false
            }
        }
    }

    static let presets: [ExportPreset] = [.passthrough, .preset640x480]

    /// Every file in `dir`, hidden partial files included.
    private func files(in dir: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path)
    }

    @Test(arguments: presets, Point.allCases)
    func aFailureAtEachPointEndsTheExportWithThatErrorAndNoFile(preset: ExportPreset, point: Point) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let session = ExportSession(asset: Asset(url: clip), preset: preset)
        let injected = "injected failure at \(point.rawValue)"
        let reached = Locked(false)
        session.stageProbe = StageProbe { step throws(MediaError) in
            guard point.matches(step) else { return }
            reached.withLock { $0 = true }
            throw MediaError(.ioError, injected)
        }
        do {
            _ = try await session.export(to: dir.appendingPathComponent("out.mp4"), as: .mp4)
            Issue.record("the export succeeded despite \(injected)")
        } catch let error as MediaError {
            #expect("\(error)".contains(injected), "the first error wins and is the one reported: \(error)")
        }
        #expect(reached.withLock { $0 }, "the point was reached")
        #expect(session.status == .failed)
        let left = try files(in: dir)
        #expect(left.isEmpty, "no file, not even a hidden partial one: \(left)")
    }

    @Test(arguments: presets, Point.allCases)
    func cancellingAtEachPointLeavesNoFileAndNoStageBehind(preset: ExportPreset, point: Point) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let exportTask = Locked<Task<Void, Error>?>(nil)
        let reached = Locked(false)
        let probe = StageProbe { step throws(MediaError) in
            guard point.matches(step) else { return }
            reached.withLock { $0 = true }
            exportTask.withLock { $0 }?.cancel()
        }
        do {
            let session = ExportSession(asset: Asset(url: clip), preset: preset)
            session.stageProbe = probe
            let url = dir.appendingPathComponent("out.mp4")
            // The task is published before the export can reach any point.
            let start = Locked(false)
            let task = Task {
                while !start.withLock({ $0 }) { await Task.yield() }
                _ = try await session.export(to: url, as: .mp4)
            }
            exportTask.withLock { $0 = task }
            start.withLock { $0 = true }
            let outcome = await task.result
            guard case .failure(let error) = outcome else {
                Issue.record("the export finished although it was cancelled at \(point.rawValue)")
                return
            }
            #expect((error as? MediaError)?.code == .cancelled, "\(error)")
            #expect(session.status == .cancelled)
            exportTask.withLock { $0 = nil }
        }
        #expect(reached.withLock { $0 })
        let left = try files(in: dir)
        #expect(left.isEmpty, "no file, not even a hidden partial one: \(left)")
        // The demuxer and the writer's engine (the FFmpeg contexts) are gone with the session.
        // Cancelled before the writer's engine finished opening, only the demuxer was attached.
        #expect(probe.attachedStages >= (point == .open || point == .outputCreated ? 1 : 2))
        #expect(probe.liveStages == 0, "\(probe.liveStages) stage(s) outlived the export")
    }

    /// One second of every track's packets: what the writer's window for an export (0.5 s) and the copy
    /// stage's decode-order merge should keep the demuxer's queues under.
    private func oneSecondOfPackets() async throws -> Int {
        let tracks = try await Asset(url: clip).load(.tracks)
        return tracks.reduce(0) { $0 + Int((Double($1.sampleCount) / $1.timeRange.duration.seconds).rounded(.up)) }
    }

    @Test(arguments: presets)
    func aSlowWriterBoundsWhatWaitsInTheDemuxer(preset: ExportPreset) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let session = ExportSession(asset: Asset(url: clip), preset: preset)
        // A writer (encoder, disk) 3 ms slower per sample than the reader.
        let probe = StageProbe { step throws(MediaError) in
            if case .sampleWritten = step { usleep(3000) }
        }
        session.stageProbe = probe
        _ = try await session.export(to: dir.appendingPathComponent("out.mp4"), as: .mp4)
        let bound = try await oneSecondOfPackets()
        #expect(probe.peakQueuedPackets > 0)
        #expect(probe.peakQueuedPackets <= bound, "\(probe.peakQueuedPackets) packets waited at once (bound \(bound))")
    }

    /// The writer holds encoded audio back so that `endSession` can still trim it: no more than
    /// `PipelineBounds.audioHoldback` of it, however long the export.
    @Test func theWriterHoldsBackAtMostTheHoldbacksWorthOfEncodedAudio() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("ten-seconds.mp4")
        let made = try run(which("ffmpeg")!, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=10",
                                              "-f", "lavfi", "-i", "sine=duration=10", "-c:v", "libx264", "-preset", "ultrafast",
                                              "-c:a", "aac", source.path])
        try #require(made.status == 0, "ffmpeg could not make the source")
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        let probe = StageProbe { _ throws(MediaError) in }
        session.stageProbe = probe
        _ = try await session.export(to: dir.appendingPathComponent("out.mp4"), as: .mp4)
        let held = probe.peakHeldAudio
        #expect(held.packets > 1, "no audio was held back")
        #expect(held.span <= PipelineBounds.audioHoldback, "\(held.span.seconds) s of audio held at once")
    }

    @Test(arguments: presets)
    func interleavingStaysWithinABoundOfMediaTime(preset: ExportPreset) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let session = ExportSession(asset: Asset(url: clip), preset: preset)
        let latest = Locked([MediaType: MediaTime]())
        let worst = Locked(MediaTime.zero)
        session.stageProbe = StageProbe { step throws(MediaError) in
            guard case .sampleWritten(let type, _, let time) = step, time.isNumeric else { return }
            latest.withLock { l in
                l[type] = max(l[type] ?? time, time)
                for (other, position) in l where other != type {
                    worst.withLock { $0 = max($0, time - position) }
                }
            }
        }
        _ = try await session.export(to: dir.appendingPathComponent("out.mp4"), as: .mp4)
        // The writer's window for an export plus one batch of copied packets.
        let bound = PipelineBounds.exportInterleavingWindow + PipelineBounds.packetBatchSpan
        let spread = worst.withLock { $0 }
        #expect(spread > .zero)
        #expect(spread <= bound, "one track ran \(spread.seconds) s ahead of another at the writer (bound \(bound.seconds) s)")
    }

    /// The decoders behind an output are confined to one consumer at a time: a second thread
    /// reading while the first is inside is refused with a clear error, not raced.
    @Test func aSecondConsumerOfOneOutputIsRefusedNotRaced() async throws {
        let asset = Asset(url: clip)
        let tracks = try await asset.load(.tracks)
        let track = try #require(tracks.first { $0.mediaType == .video })
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
        let inside = DispatchSemaphore(value: 0), letGo = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        output.probe = StageProbe { step throws(MediaError) in
            if case .sampleRead(_, 0, _) = step {
                inside.signal()
                letGo.wait()
            }
        }
        try reader.add(output)
        try reader.startReading()
        let firstGotASample = Locked(false)
        DispatchQueue.global().async {
            let sample = try? output.copyNextSampleBuffer()
            firstGotASample.withLock { $0 = sample != nil }
            done.signal()
        }
        inside.wait()
        do {
            _ = try output.copyNextSampleBuffer()
            Issue.record("a second consumer read while the first was inside")
        } catch let error as MediaError {
            #expect(error.code == .invalidState && error.message.contains("one consumer at a time"), "\(error)")
        }
        letGo.signal()
        done.wait()
        #expect(firstGotASample.withLock { $0 })
        #expect(try output.copyNextSampleBuffer() != nil, "one consumer at a time goes on reading")
        #expect(reader.status == .reading)
    }
}

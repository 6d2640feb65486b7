import ChildProcess
import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation

/// Several outputs from one decode (`ExportSession.export(to: [Output])`): the ladder's
/// renditions against ffmpeg's own decode and scale of the source, the shared decode counted
/// through the seam, and the failure policy. ffmpeg makes the source; ffprobe and ffmpeg's
/// psnr filter read the outputs.
@Suite(.serialized) struct FanOutExportTests {
    /// A 3 s 1280x720 30 fps H.264 + 48 kHz AAC clip.
    static func source(in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("source.mp4")
        let ffmpeg = try #require(which("ffmpeg"), "ffmpeg makes the source (Hardware/setup.sh installs it)")
        let made = try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi",
                                    "-i", "sine=f=440:sample_rate=48000", "-t", "3", "-c:v", "libx264", "-preset", "veryfast",
                                    "-c:a", "aac", "-pix_fmt", "yuv420p", url.path])
        try #require(made.status == 0)
        return url
    }

    /// The video frames' presentation times (seconds) and the picture size, as ffprobe reads them.
    static func videoFrames(_ url: URL) throws -> (times: [Double], width: Int, height: Int) {
        let probe = try #require(which("ffprobe"))
        let result = try run(probe, ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time:stream=width,height",
                                     "-of", "json", url.path])
        let json = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        let frames = (json["frames"] as? [[String: Any]] ?? []).compactMap { ($0["pts_time"] as? String).flatMap(Double.init) }
        let stream = (json["streams"] as? [[String: Any]])?.first ?? [:]
        return (frames, stream["width"] as? Int ?? 0, stream["height"] as? Int ?? 0)
    }

    /// The PSNR (dB, all planes) of `output` against ffmpeg's own decode of `source` scaled to the output's size.
    static func psnrAgainstFFmpegScale(_ output: URL, source: URL, width: Int, height: Int) throws -> Double {
        let ffmpeg = try #require(which("ffmpeg"))
        let child = try ChildProcess.run(ffmpeg, ["-v", "info", "-nostats", "-i", output.path, "-i", source.path, "-lavfi",
                                                  "[1:v]scale=\(width):\(height):flags=bicubic[reference];[0:v][reference]psnr",
                                                  "-f", "null", "-"], timeLimit: 600)
        let line = try #require(child.stderr.split(separator: "\n").last { $0.contains("PSNR") && $0.contains("average:") }, "\(child.stderr)")
        let average = try #require(line.split(separator: " ").first { $0.hasPrefix("average:") })
        return try #require(Double(average.dropFirst("average:".count)))
    }

    static let ladder: [(preset: ExportPreset, width: Int, height: Int)] = [
        (.preset1280x720, 1280, 720), (.preset960x540, 960, 540), (.preset640x480, 640, 360),
    ]

    @Test func aLadderIsDecodedOnceAndEachRenditionMatchesFFmpegsScale() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let sourceFrames = try Self.videoFrames(source)
        #expect(sourceFrames.times.count == 90)

        let sharedReads = Locked<[MediaType: [Int]]>([:])
        let branchReads = Locked<[MediaType: Int]>([:])
        let session = ExportSession(asset: Asset(url: source), preset: .preset1280x720)
        let probe = StageProbe { step in
            switch step {
            case .sharedSampleRead(let type, _, let branches): sharedReads.withLock { $0[type, default: []].append(branches) }
            case .sampleRead(let type, _, _): branchReads.withLock { $0[type, default: 0] += 1 }
            default: break
            }
        }
        session.stageProbe = probe
        let outputs = Self.ladder.map { rung in
            ExportSession.Output(url: dir.appendingPathComponent("out-\(rung.preset.name).mp4"), fileType: .mp4, preset: rung.preset)
        }
        let results = try await session.export(to: outputs)
        #expect(session.status == .completed)
        #expect(session.progress == 1)

        // One decode for the three renditions: each source picture read once, handed to all three.
        let video = sharedReads.withLock { $0[.video] ?? [] }
        #expect(video.count == sourceFrames.times.count, "the source's pictures were read \(video.count) times for \(sourceFrames.times.count) frames")
        #expect(video.allSatisfy { $0 == 3 })
        #expect(branchReads.withLock { $0[.video] } == 3 * sourceFrames.times.count, "each rendition took every picture")
        #expect(!(sharedReads.withLock { $0[.audio] } ?? []).isEmpty, "the audio is decoded once too")
        // Renditions waiting for one another (a read under way, a window ahead) were parked by
        // the scheduler; none blocked its thread.
        #expect(probe.fanOutReadsParked > 0)
        #expect(probe.fanOutReadsBlocked == 0, "\(probe.fanOutReadsBlocked) reads blocked their thread")

        for (rung, (output, result)) in zip(Self.ladder, zip(outputs, results)) {
            let written = try result.get()
            #expect(written.outputURL == output.url)
            let frames = try Self.videoFrames(output.url)
            #expect((frames.width, frames.height) == (rung.width, rung.height), "\(rung.preset.name): \(frames.width)x\(frames.height)")
            #expect(frames.times.count == sourceFrames.times.count, "\(rung.preset.name): \(frames.times.count) frames")
            let shifted = zip(frames.times, sourceFrames.times).map { abs($0 - $1) }.max() ?? 1
            #expect(shifted < 0.001, "\(rung.preset.name) keeps the source's timestamps (off by up to \(shifted) s)")
            // Measured: 45.1–46.2 dB against ffmpeg's bicubic scale of its own decode (x264's loss).
            let psnr = try Self.psnrAgainstFFmpegScale(output.url, source: source, width: rung.width, height: rung.height)
            #expect(psnr > 42, "\(rung.preset.name): \(psnr) dB against ffmpeg's scale")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".") }
        #expect(left.isEmpty, "no hidden partial file: \(left)")
    }

    /// The audio packets of `url` as ffmpeg's framemd5 lists them: time, duration, size and a hash of each.
    static func audioPackets(_ url: URL) throws -> [String] {
        let ffmpeg = try #require(which("ffmpeg"))
        let result = try run(ffmpeg, ["-v", "error", "-i", url.path, "-map", "0:a", "-c", "copy", "-f", "framemd5", "-"])
        return String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
    }

    /// Audio written alike by every output is encoded once: one audio encoder for the ladder
    /// (the seam counts the encoders opened), and each output holds exactly the packets an
    /// export of that output alone encodes, priming, session start and the cut at the end
    /// included, over the whole file and over a time range.
    @Test(arguments: [false, true])
    func audioWrittenAlikeIsEncodedOnceForEveryOutput(trimmed: Bool) async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let range = trimmed ? MediaTimeRange(start: MediaTime(value: 1, timescale: 3), end: MediaTime(value: 23, timescale: 10)) : nil
        let encoders = Locked<[MediaType: Int]>([:])
        let session = ExportSession(asset: Asset(url: source), preset: .preset1280x720)
        if let range { session.timeRange = range }
        session.stageProbe = StageProbe { step in
            if case .encoderOpened(let type) = step { encoders.withLock { $0[type, default: 0] += 1 } }
        }
        let outputs = Self.ladder.map { rung in
            ExportSession.Output(url: dir.appendingPathComponent("out-\(rung.preset.name).mp4"), fileType: .mp4, preset: rung.preset)
        }
        _ = try await session.export(to: outputs).map { try $0.get() }
        #expect(encoders.withLock { $0 } == [.video: 3, .audio: 1], "encoders opened: \(encoders.withLock { $0 })")

        let alone = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        if let range { alone.timeRange = range }
        let single = dir.appendingPathComponent("alone.mp4")
        _ = try await alone.export(to: single, as: .mp4)
        let expected = try Self.audioPackets(single)
        #expect(expected.count > (trimmed ? 80 : 140), "\(expected.count) packets")
        for output in outputs {
            let packets = try Self.audioPackets(output.url)
            #expect(packets == expected, "\(output.url.lastPathComponent): \(packets.count) packets, \(zip(packets, expected).first { $0 != $1 }.map { "\($0) against \($1)" } ?? "")")
        }
    }

    /// Under a file-length limit each output ends where its own tracks arrived, and its writer
    /// trims the audio it encodes there: the outputs encode their audio themselves, and none
    /// has sound past its pictures.
    @Test func underAFileLengthLimitEachOutputEncodesAndEndsItsOwnAudio() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let encoders = Locked<[MediaType: Int]>([:])
        let session = ExportSession(asset: Asset(url: source), preset: .preset1280x720)
        session.fileLengthLimit = 200_000
        session.stageProbe = StageProbe { step in
            if case .encoderOpened(let type) = step { encoders.withLock { $0[type, default: 0] += 1 } }
        }
        let outputs = Self.ladder.prefix(2).map { rung in
            ExportSession.Output(url: dir.appendingPathComponent("out-\(rung.preset.name).mp4"), fileType: .mp4, preset: rung.preset)
        }
        _ = try await session.export(to: outputs).map { try $0.get() }
        #expect(encoders.withLock { $0 } == [.video: 2, .audio: 2], "encoders opened: \(encoders.withLock { $0 })")
        for output in outputs {
            let tracks = try await Asset(url: output.url).load(.tracks)
            let video = try #require(tracks.first { $0.mediaType == .video }), audio = try #require(tracks.first { $0.mediaType == .audio })
            #expect(video.timeRange.end.seconds < 2.9, "\(output.url.lastPathComponent) was cut by the limit: \(video.timeRange.end.seconds) s")
            #expect(audio.timeRange.end.seconds <= video.timeRange.end.seconds + 0.05,
                    "\(output.url.lastPathComponent): sound to \(audio.timeRange.end.seconds) s, pictures to \(video.timeRange.end.seconds) s")
        }
    }

    @Test func anOutputThatDecodesNothingBesideOnesThatShareRunsToo() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        let outputs = [
            ExportSession.Output(url: dir.appendingPathComponent("copy.mp4"), fileType: .mp4, preset: .passthrough),
            ExportSession.Output(url: dir.appendingPathComponent("small.mp4"), fileType: .mp4),
            ExportSession.Output(url: dir.appendingPathComponent("smaller.mp4"), fileType: .mp4, preset: .lowQuality),
        ]
        let results = try await session.export(to: outputs)
        #expect(results.count == 3)
        for output in outputs {
            #expect(try Self.videoFrames(output.url).times.count == 90, "\(output.url.lastPathComponent)")
        }
        #expect(try results[0].get().videoSettings == nil, "the passthrough output copies the video")
    }

    /// An output of a preset that cannot write its file type fails as it starts.
    static func failingOutput(in dir: URL, optional: Bool) -> ExportSession.Output {
        ExportSession.Output(url: dir.appendingPathComponent("audio-only.m4a"), fileType: .m4a, preset: .preset960x540, isOptional: optional)
    }

    @Test func aFailingOutputFailsTheExportAndLeavesNoOutputAtAll() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        let outputs = [ExportSession.Output(url: dir.appendingPathComponent("a.mp4"), fileType: .mp4),
                       Self.failingOutput(in: dir, optional: false),
                       ExportSession.Output(url: dir.appendingPathComponent("b.mp4"), fileType: .mp4, preset: .lowQuality)]
        await #expect(throws: MediaError.self) { _ = try await session.export(to: outputs) }
        #expect(session.status == .failed)
        #expect(session.error.map { "\($0)".contains("cannot write") } == true, "the failing output's own error: \(String(describing: session.error))")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0 != "source.mp4" }
        #expect(left.isEmpty, "no output and no partial file is left: \(left)")
    }

    /// The second output to reach its end fails there, after the first one was finished and
    /// moved into place: the export fails, and the finished output is removed too.
    @Test func aFailureAfterAnotherOutputFinishedRemovesThatOutputToo() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        let finishing = Locked(0)
        session.stageProbe = StageProbe { step throws(MediaError) in
            guard step == .finishing else { return }
            if finishing.withLock({ n in defer { n += 1 }; return n }) == 1 { throw MediaError(.ioError, "injected failure at the second finish") }
        }
        let outputs = [ExportSession.Output(url: dir.appendingPathComponent("a.mp4"), fileType: .mp4),
                       ExportSession.Output(url: dir.appendingPathComponent("b.mp4"), fileType: .mp4, preset: .lowQuality)]
        await #expect(throws: MediaError.self) { _ = try await session.export(to: outputs) }
        #expect(finishing.withLock { $0 } == 2, "both outputs reached their end")
        #expect(session.error.map { "\($0)".contains("injected failure") } == true, "\(String(describing: session.error))")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0 != "source.mp4" }
        #expect(left.isEmpty, "the finished output is removed with the failed one: \(left)")
    }

    @Test func anOptionalOutputFailsAlone() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.source(in: dir)
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        let outputs = [ExportSession.Output(url: dir.appendingPathComponent("a.mp4"), fileType: .mp4),
                       Self.failingOutput(in: dir, optional: true),
                       ExportSession.Output(url: dir.appendingPathComponent("b.mp4"), fileType: .mp4, preset: .lowQuality)]
        let results = try await session.export(to: outputs)
        #expect(session.status == .completed)
        #expect(throws: MediaError.self) { try results[1].get() }
        for i in [0, 2] { #expect(try Self.videoFrames(try results[i].get().outputURL).times.count == 90) }
        #expect(!FileManager.default.fileExists(atPath: outputs[1].url.path))
    }

    @Test(arguments: [0, 40])
    func aFailureOrCancelInTheSharedDecodeLeavesNothing(atPicture index: Int) async throws {
        for cancels in [false, true] {
            let dir = try TestFiles.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let source = try Self.source(in: dir)
            let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
            let reached = Locked(false)
            session.stageProbe = StageProbe { step throws(MediaError) in
                guard case .sharedSampleRead(.video, index, _) = step else { return }
                reached.withLock { $0 = true }
                if cancels { DispatchQueue.global().async { session.cancelExport() } } else { throw MediaError(.ioError, "injected failure") }
            }
            let outputs = [ExportSession.Output(url: dir.appendingPathComponent("a.mp4"), fileType: .mp4),
                           ExportSession.Output(url: dir.appendingPathComponent("b.mp4"), fileType: .mp4, preset: .lowQuality)]
            do {
                _ = try await session.export(to: outputs)
                Issue.record("the export finished despite the \(cancels ? "cancel" : "failure") at picture \(index)")
            } catch let error as MediaError {
                #expect(cancels ? error.code == .cancelled : "\(error)".contains("injected failure"), "\(error)")
            }
            #expect(reached.withLock { $0 })
            #expect(session.status == (cancels ? .cancelled : .failed))
            let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0 != "source.mp4" }
            #expect(left.isEmpty, "nothing is left: \(left)")
        }
    }

    @Test func twoOutputsCannotShareADestination() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let session = ExportSession(asset: Asset(url: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4")), preset: .preset640x480)
        let url = dir.appendingPathComponent("same.mp4")
        await #expect(throws: MediaError.self) {
            _ = try await session.export(to: [.init(url: url, fileType: .mp4), .init(url: url, fileType: .mp4, preset: .lowQuality)])
        }
    }
}

/// The window of a fan-out, driven by a source that counts what it was asked for: the fastest
/// branch never gets more than the window ahead of the slowest, and a branch that lets go
/// holds no one back.
@Suite struct FanOutWindowTests {
    /// An output that makes `count` empty compressed samples and counts them.
    final class CountingOutput: AssetReaderOutput, @unchecked Sendable {
        // @unchecked: `made` is behind its lock; the rest is immutable.
        let count: Int
        let made = Locked(0)
        init(count: Int) {
            self.count = count
            super.init(mediaType: .video)
        }
        override func produceNext() throws(MediaError) -> SampleBuffer? {
            let index = made.withLock { m -> Int in defer { m += 1 }; return m }
            guard index < count else { return nil }
            return SampleBuffer(content: .compressed, packet: Packet(), codecParameters: nil,
                                presentationTimeStamp: MediaTime(value: Int64(index), timescale: 30), decodeTimeStamp: .invalid,
                                duration: MediaTime(value: 1, timescale: 30),
                                formatDescription: FormatDescription(mediaType: .video, codec: "h264"), attachments: SampleAttachments())
        }
    }

    @Test func theFastestBranchStaysWithinTheWindowOfTheSlowest() throws {
        let source = CountingOutput(count: 10)
        let fanOut = FanOutSource(source: source, branches: 2, capacity: 3)
        for expected in 0..<3 {
            #expect(try fanOut.next(branch: 0)?.presentationTimeStamp == MediaTime(value: Int64(expected), timescale: 30))
        }
        #expect(source.made.withLock { $0 } == 3, "three read for the fast branch, none beyond the window")
        // The slow branch takes its first from the window: nothing more is read.
        #expect(try fanOut.next(branch: 1)?.presentationTimeStamp == .zero)
        #expect(source.made.withLock { $0 } == 3)
        // Now there is room for one more.
        #expect(try fanOut.next(branch: 0)?.presentationTimeStamp == MediaTime(value: 3, timescale: 30))
        #expect(source.made.withLock { $0 } == 4)
        // A fast branch a window ahead waits until the slow one lets go.
        let waited = Locked<MediaTime?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let sample = try? fanOut.next(branch: 0)
            waited.withLock { $0 = sample?.presentationTimeStamp }
            done.signal()
        }
        fanOut.detach(branch: 1)
        done.wait()
        #expect(waited.withLock { $0 } == MediaTime(value: 4, timescale: 30))
        // Alone now, it reads to the end.
        var rest = 0
        while try fanOut.next(branch: 0) != nil { rest += 1 }
        #expect(rest == 5)
        #expect(try fanOut.next(branch: 1) == nil, "a detached branch gets nothing more")
    }

    /// An export's edge asks `waitToRead` before reading a branch, and parks instead of
    /// blocking its thread; the fan-out wakes it when it may go on.
    @Test func aBranchThatWouldWaitIsParkedAndWokenNotBlocked() throws {
        let source = CountingOutput(count: 10)
        let fanOut = FanOutSource(source: source, branches: 2, capacity: 3)
        // Both branches need the first sample: the first to ask reads it, the other waits for that read.
        #expect(fanOut.waitToRead(branch: 0) == nil, "branch 0 may read the source now")
        let registerBranch1 = try #require(fanOut.waitToRead(branch: 1), "branch 1 waits for branch 0's read")
        let woken = Locked(0)
        registerBranch1 { woken.withLock { $0 += 1 } }
        #expect(woken.withLock { $0 } == 0)
        #expect(try fanOut.next(branch: 0)?.presentationTimeStamp == .zero)
        #expect(woken.withLock { $0 } == 1, "the read woke the parked branch")
        #expect(fanOut.waitToRead(branch: 1) == nil, "its sample waits in the window")
        // Branch 0 runs a window (3) ahead of branch 1, then must wait for it.
        for expected in 1..<3 {
            #expect(fanOut.waitToRead(branch: 0) == nil)
            #expect(try fanOut.next(branch: 0)?.presentationTimeStamp == MediaTime(value: Int64(expected), timescale: 30))
        }
        let registerBranch0 = try #require(fanOut.waitToRead(branch: 0), "a window ahead, branch 0 waits")
        let woken0 = Locked(0)
        registerBranch0 { woken0.withLock { $0 += 1 } }
        #expect(woken0.withLock { $0 } == 0)
        #expect(try fanOut.next(branch: 1)?.presentationTimeStamp == .zero)
        #expect(woken0.withLock { $0 } == 1, "the slowest taking a sample made room and woke it")
        #expect(source.made.withLock { $0 } == 3, "nothing read past the window meanwhile")
        // Asked when it may already go on, the registration calls back at once.
        registerBranch0 { woken0.withLock { $0 += 1 } }
        #expect(woken0.withLock { $0 } == 2)
    }

    /// Four branches on threads of their own (they block, as stage threads do).
    @Test func everyBranchTakesEverySampleInOrder() throws {
        let source = CountingOutput(count: 200)
        let fanOut = FanOutSource(source: source, branches: 4, capacity: 2)
        let sequences = Locked<[[Int64]]>([])
        let finished = DispatchGroup()
        for branch in 0..<4 {
            finished.enter()
            Thread.detachNewThread {
                var values: [Int64] = []
                while let sample = try? fanOut.next(branch: branch) { values.append(sample.presentationTimeStamp.value) }
                sequences.withLock { $0.append(values) }
                finished.leave()
            }
        }
        finished.wait()
        #expect(sequences.withLock { $0.count } == 4)
        for values in sequences.withLock({ $0 }) { #expect(values == Array(0..<200)) }
        #expect(source.made.withLock { $0 } == 201, "each sample read once, and the end once")
    }
}

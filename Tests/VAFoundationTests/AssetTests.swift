import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation

@Suite struct AssetTests {
    @Test func rotatedIPhoneMovie() async throws {
        let asset = Asset(url: TestFiles.fixture("h264_aac_iphone6_rot90_gps_metadata.mov"))
        let (duration, tracks, metadata) = try await asset.load(.duration, .tracks, .metadata)
        #expect(abs(duration.seconds - 4.001667) < 0.001)
        #expect(tracks.map(\.mediaType) == [.audio, .video, .data, .data])

        let video = try #require(try await asset.loadTracks(withMediaType: .video).first)
        #expect(video.trackID == 2)
        #expect(video.naturalSize == Size(width: 568, height: 320))
        #expect(video.preferredTransform == VideoTransform(a: 0, b: 1, c: -1, d: 0, tx: 320, ty: 0))
        #expect(video.preferredTransform.rotationDegrees == 90)
        #expect(video.displaySize == Size(width: 320, height: 568))
        #expect(abs(video.nominalFrameRate - 72000 / 2401) < 0.001)
        #expect(!video.isVariableFrameRate)
        #expect(video.sampleCount == 120)
        #expect(video.formatDescription.codec == "h264")
        #expect(video.formatDescription.profile == "Baseline")
        #expect(video.formatDescription.video?.bitDepth == 8)
        #expect(video.formatDescription.video?.colorTransfer == "bt709")

        let audio = try #require(try await asset.loadTrack(withTrackID: 1))
        #expect(audio.formatDescription.audio == AudioFormat(sampleRate: 44100, channelCount: 1, channelLayout: "mono",
                                                              sampleFormat: "fltp", framesPerPacket: 1024))

        let location = try #require(metadata.first(.location))
        let point = try #require(GeoLocation(iso6709: location.value))
        #expect(abs(point.latitude - 32.0929) < 1e-9 && abs(point.longitude - 34.8620) < 1e-9)
        #expect(metadata.first(.model)?.value == "iPhone 6")
    }

    @Test func tenBitHDRPortraitHEVC() async throws {
        let asset = Asset(url: TestFiles.fixture("hevc_main10_dolbyvision84_hlg_iphone14pro.mov"))
        let video = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let format = try #require(video.formatDescription.video)
        #expect(video.formatDescription.codec == "hevc")
        #expect(video.formatDescription.profile == "Main 10")
        #expect(format.bitDepth == 10)
        #expect(format.pixelFormat == "yuv420p10le")
        #expect(format.colorTransfer == "arib-std-b67")
        #expect(format.isHDR)
        #expect(video.preferredTransform.rotationDegrees == 90)
        #expect(video.displaySize == Size(width: 720, height: 1280))
        #expect(video.requiresFrameReordering)
    }

    @Test func slowMotionCaptureIsVariableFrameRate() async throws {
        let asset = Asset(url: TestFiles.fixture("h264_720p_android_slowmo_capture240fps.mp4"))
        let video = try #require(try await asset.loadTracks(withMediaType: .video).first)
        #expect(video.isVariableFrameRate)
        #expect(video.sampleCount == 7)
        #expect(abs(video.minFrameDuration.seconds - 1.0 / 30) < 0.002)
        #expect(video.formatDescription.video?.colorRange == "pc")
    }

    @Test func twoAudioTracksWithTheirLayouts() async throws {
        let asset = Asset(url: TestFiles.fixture("ac3_51_plus_aac_stereo_two_tracks.mp4"))
        let audio = try await asset.loadTracks(withMediaType: .audio)
        #expect(audio.map(\.formatDescription.codec) == ["ac3", "aac"])
        #expect(audio.map { $0.formatDescription.audio?.channelLayout } == ["5.1(side)", "stereo"])
        #expect(try await asset.loadTracks(withMediaType: .video).isEmpty)
    }

    @Test func vp9Profile2InWebMIsReadWithoutAnIndex() async throws {
        let asset = Asset(url: TestFiles.fixture("vp9_profile2_10bit_240p.webm"))
        let (format, tracks) = try await asset.load(.containerFormat, .tracks)
        #expect(format.name == "matroska,webm")
        let video = try #require(tracks.first)
        #expect(video.formatDescription.video?.bitDepth == 10)
        #expect(abs(video.nominalFrameRate - 24000 / 1001) < 0.01)
        #expect(!video.isVariableFrameRate, "hidden-frame packets 1 ms apart are not frames")
        #expect(video.sampleCount >= 72)
    }

    @Test func emptyWaveHasATrackOfZeroSamples() async throws {
        let asset = Asset(url: TestFiles.fixture("wav_header_only_zero_samples.wav"))
        let tracks = try await asset.load(.tracks)
        #expect(tracks.count == 1)
        #expect(tracks[0].sampleCount == 0)
        #expect(tracks[0].formatDescription.audio?.sampleRate == 16000)
    }

    @Test func overlongMdatBoxStillHasEverySample() async throws {
        // The mdat box claims more bytes than the file has, but every sample is present.
        let asset = Asset(url: TestFiles.fixture("broken_mdat_too_long.mp4"))
        let (tracks, warnings) = try await asset.load(.tracks, .warnings)
        #expect(tracks.map(\.sampleCount) == [30, 45])
        #expect(warnings.isEmpty, "\(warnings)")
    }

    @Test func cutFileWithHeaderFirstWarnsOfMissingSamples() async throws {
        // moov comes before mdat here, so a cut file still opens but loses samples.
        let whole = try Data(contentsOf: TestFiles.fixture("broken_mdat_too_long.mp4"))
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("cut.mp4")
        try whole.prefix(whole.count * 2 / 3).write(to: url)
        let warnings = try await Asset(url: url).load(.warnings)
        #expect(warnings.contains { $0.contains("truncated") && $0.contains("lie beyond its end") }, "\(warnings)")
    }

    @Test func preciseTimingReadsEveryPacket() async throws {
        let url = TestFiles.fixture("h264_aac_iphone6_rot90_gps_metadata.mov")
        let fast = try await Asset(url: url).loadTracks(withMediaType: .video)[0]
        let precise = try await Asset(url: url, options: .init(prefersPreciseDurationAndTiming: true)).loadTracks(withMediaType: .video)[0]
        #expect(fast.sampleCount == precise.sampleCount)
        #expect(fast.totalSampleDataLength == precise.totalSampleDataLength)
        #expect(abs(fast.nominalFrameRate - precise.nominalFrameRate) < 0.01)
    }

    /// AVFoundation reports 0 fps for a track without samples; FFmpeg's guess for it is its time base (90000 fps).
    @Test func aVideoTrackWithoutSamplesHasNoFrameRate() async throws {
        let media = try #require(TestFiles.sharedMedia, "CI always has ../shared/media")
        let tracks = try await Asset(url: media.appendingPathComponent("mp4_with_empty_video_track.mp4")).loadTracks(withMediaType: .video)
        try #require(tracks.count == 2)
        #expect(tracks[1].sampleCount == 0)
        #expect(tracks[1].nominalFrameRate == 0)
        #expect(!tracks[1].minFrameDuration.isValid)
        #expect(abs(tracks[0].nominalFrameRate - 31.004) < 0.001, "the track with samples keeps its rate: \(tracks[0].nominalFrameRate)")
    }

    /// Eight loads of four properties at once open and probe the file once (the asset's
    /// count of inspections), and a load after them does not open it again.
    @Test func concurrentLoadsInspectOnce() async throws {
        let asset = Asset(url: TestFiles.fixture("vp9_profile2_10bit_240p.webm"))
        async let a = asset.load(.duration)
        async let b = asset.load(.tracks)
        let loads = try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<6 {
                group.addTask { i.isMultiple(of: 2) ? try await asset.load(.metadata).count >= 0 : try await asset.load(.fileSize) > 0 }
            }
            return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        let (duration, tracks) = try await (a, b)
        #expect(duration.seconds > 3 && tracks.count == 1 && loads == 6)
        #expect(asset.inspectedDemuxer.inspections == 1, "the file was inspected \(asset.inspectedDemuxer.inspections) times")
        _ = try await asset.load(.containerFormat)
        #expect(asset.inspectedDemuxer.inspections == 1, "a later load inspected it again")
    }
}

/// The demuxers inspections keep for the first reader of each file.
@Suite struct DemuxerHandoffTests {
    @Test func aTakenDemuxerNeverPushesOutOneStillWaiting() throws {
        let registry = DemuxerHandoff.Registry(limit: 4)
        let path = TestFiles.fixture("testsrc_320x240_30fps_3s.mp4").path
        let handoffs = (0..<6).map { _ in DemuxerHandoff(registry: registry) }
        for handoff in handoffs.prefix(4) { handoff.keep(try Demuxer(path: path, probingStreams: false)) }
        // Two readers take theirs; two more files are inspected.
        #expect(handoffs[1].take() != nil && handoffs[2].take() != nil)
        for handoff in handoffs.suffix(2) { handoff.keep(try Demuxer(path: path, probingStreams: false)) }
        #expect(handoffs.map(\.isHolding) == [true, false, false, true, true, true], "four wait, none pushed out")
        // A fifth waiting one pushes out the oldest waiting.
        let seventh = DemuxerHandoff(registry: registry)
        seventh.keep(try Demuxer(path: path, probingStreams: false))
        #expect(!handoffs[0].isHolding && seventh.isHolding)
        #expect(handoffs[0].take() == nil)
    }
}

import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// The Editing chapter's listings of the AVFoundation Programming Guide (`../shared/seeds/002_*`),
/// ported type for type. Each quotes the Objective-C it ports, runs on a real clip, and checks
/// its effect with ffprobe/ffmpeg where it makes a file.
@Suite(.disabled(if: which("ffprobe") == nil || which("ffmpeg") == nil, "ffmpeg/ffprobe are not installed (Hardware/setup.sh installs them)"))
struct EditingGuideListingTests {
    let videoAsset = Asset(url: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4"))
    let anotherVideoAsset = Asset(url: TestFiles.fixture("h264_aac_iphone6_rot90_gps_metadata.mov"))

    /// ```objc
    /// AVMutableComposition *mutableComposition = [AVMutableComposition composition];
    /// AVMutableCompositionTrack *mutableCompositionVideoTrack = [mutableComposition addMutableTrackWithMediaType:AVMediaTypeVideo preferredTrackID:kCMPersistentTrackID_Invalid];
    /// AVMutableCompositionTrack *mutableCompositionAudioTrack = [mutableComposition addMutableTrackWithMediaType:AVMediaTypeAudio preferredTrackID:kCMPersistentTrackID_Invalid];
    /// ```
    @Test func creatingAComposition() throws {
        let mutableComposition = MutableComposition()
        let mutableCompositionVideoTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .video, preferredTrackID: 0))
        let mutableCompositionAudioTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .audio, preferredTrackID: 0))
        // kCMPersistentTrackID_Invalid asks for a unique ID to be generated.
        #expect(mutableCompositionVideoTrack.trackID != mutableCompositionAudioTrack.trackID)
        #expect(mutableComposition.tracks.map(\.mediaType) == [.video, .audio])
        #expect(mutableComposition.addMutableTrack(withMediaType: .video, preferredTrackID: mutableCompositionVideoTrack.trackID) == nil,
                "an ID in use is refused")
    }

    /// ```objc
    /// AVAssetTrack *videoAssetTrack = [[videoAsset tracksWithMediaType:AVMediaTypeVideo] objectAtIndex:0];
    /// AVAssetTrack *anotherVideoAssetTrack = [[anotherVideoAsset tracksWithMediaType:AVMediaTypeVideo] objectAtIndex:0];
    /// [mutableCompositionVideoTrack insertTimeRange:CMTimeRangeMake(kCMTimeZero,videoAssetTrack.timeRange.duration) ofTrack:videoAssetTrack atTime:kCMTimeZero error:nil];
    /// [mutableCompositionVideoTrack insertTimeRange:CMTimeRangeMake(kCMTimeZero,anotherVideoAssetTrack.timeRange.duration) ofTrack:anotherVideoAssetTrack atTime:videoAssetTrack.timeRange.duration error:nil];
    /// ```
    @Test func addingAudiovisualDataToAComposition() async throws {
        let mutableComposition = MutableComposition()
        let mutableCompositionVideoTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .video))
        let videoAssetTrack = try #require(try await videoAsset.loadTracks(withMediaType: .video).first)
        let anotherVideoAssetTrack = try #require(try await anotherVideoAsset.loadTracks(withMediaType: .video).first)
        try mutableCompositionVideoTrack.insertTimeRange(MediaTimeRange(start: .zero, duration: videoAssetTrack.timeRange.duration),
                                                         of: videoAssetTrack, at: .zero)
        try mutableCompositionVideoTrack.insertTimeRange(MediaTimeRange(start: .zero, duration: anotherVideoAssetTrack.timeRange.duration),
                                                         of: anotherVideoAssetTrack, at: videoAssetTrack.timeRange.duration)
        let expected = videoAssetTrack.timeRange.duration + anotherVideoAssetTrack.timeRange.duration
        #expect(mutableComposition.duration == expected)

        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("two.mp4")
        _ = try await ExportSession(asset: mutableComposition, preset: .preset640x480).export(to: output, as: .mp4)
        let probed = try CompositionExportTests.duration(output, stream: "v")
        #expect(abs(probed - expected.seconds) <= 1.0 / 30 + 0.001, "ffprobe: \(probed) s, composition: \(expected.seconds) s")
    }

    /// ```objc
    /// AVMutableCompositionTrack *compatibleCompositionTrack = [mutableComposition mutableTrackCompatibleWithTrack:<#the AVAssetTrack you want to insert#>];
    /// if (compatibleCompositionTrack) {
    /// // Implementation continues.
    /// }
    /// ```
    @Test func retrievingCompatibleCompositionTracks() async throws {
        let mutableComposition = MutableComposition()
        let audio = try #require(try await videoAsset.loadTracks(withMediaType: .audio).first)
        let video = try #require(try await videoAsset.loadTracks(withMediaType: .video).first)
        #expect(mutableComposition.mutableTrack(compatibleWith: video) == nil)
        let videoTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .video))
        let compatibleCompositionTrack = try #require(mutableComposition.mutableTrack(compatibleWith: video))
        #expect(compatibleCompositionTrack.trackID == videoTrack.trackID)
        #expect(mutableComposition.mutableTrack(compatibleWith: audio) == nil)
    }

    /// ```objc
    /// AVMutableAudioMix *mutableAudioMix = [AVMutableAudioMix audioMix];
    /// AVMutableAudioMixInputParameters *mixParameters = [AVMutableAudioMixInputParameters audioMixInputParametersWithTrack:mutableCompositionAudioTrack];
    /// [mixParameters setVolumeRampFromStartVolume:1.f toEndVolume:0.f timeRange:CMTimeRangeMake(kCMTimeZero, mutableComposition.duration)];
    /// mutableAudioMix.inputParameters = @[mixParameters];
    /// ```
    @Test func generatingAVolumeRamp() async throws {
        let mutableComposition = MutableComposition()
        let mutableCompositionAudioTrack = try #require(mutableComposition.addMutableTrack(withMediaType: .audio))
        let audio = try #require(try await videoAsset.loadTracks(withMediaType: .audio).first)
        try mutableCompositionAudioTrack.insertTimeRange(audio.timeRange, of: audio, at: .zero)
        var mutableAudioMix = AudioMix()
        var mixParameters = AudioMixInputParameters(track: mutableCompositionAudioTrack)
        mixParameters.setVolumeRamp(fromStartVolume: 1, toEndVolume: 0, timeRange: MediaTimeRange(start: .zero, duration: mutableComposition.duration))
        mutableAudioMix.inputParameters = [mixParameters]
        let ramp = try #require(mixParameters.getVolumeRamp(for: MediaTime(value: 1, timescale: 1)))
        #expect(ramp.startVolume == 1 && ramp.endVolume == 0 && ramp.timeRange.duration == mutableComposition.duration)

        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("fade.m4a")
        let session = ExportSession(asset: mutableComposition, preset: .appleM4A)
        session.audioMix = mutableAudioMix
        _ = try await session.export(to: output, as: .m4a)
        // ffmpeg measures the level: the fade leaves the last fifth far quieter than the first.
        let duration = mutableComposition.duration.seconds
        let early = try await Self.rmsLevel(output, from: 0.1, length: 0.4)
        let late = try await Self.rmsLevel(output, from: duration - 0.5, length: 0.4)
        #expect(early - late > 12, "a fade to silence: \(early) dB at the start, \(late) dB at the end")
    }

    /// The RMS level (dBFS) of `length` seconds from `start`, by ffmpeg's astats.
    static func rmsLevel(_ url: URL, from start: Double, length: Double) async throws -> Double {
        let child = try await ChildProcess.run(which("ffmpeg")!, ["-v", "info", "-nostdin", "-ss", "\(start)", "-t", "\(length)", "-i", url.path,
                                                                  "-af", "astats=measure_perchannel=none", "-f", "null", "-"], timeLimit: 120)
        let line = try #require(child.stderr.split(separator: "\n").last { $0.contains("RMS level dB:") })
        return Double(line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) ?? .nan
    }
}

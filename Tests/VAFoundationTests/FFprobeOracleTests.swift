import Foundation
import Testing
@testable import VAFoundation

/// `Asset` agrees with ffprobe, an independent reader, on every file of the shared corpus.
@Suite(.disabled(if: TestFiles.sharedMedia == nil, "../shared/media is not beside this checkout"),
       .disabled(if: which("ffprobe") == nil, "ffprobe is not installed (Hardware/setup.sh installs it)"))
struct FFprobeOracleTests {
    struct Probe: Decodable {
        struct Format: Decodable { var duration: String? }
        struct Stream: Decodable {
            struct SideData: Decodable { var rotation: Int? }
            var codec_type: String?
            var codec_name: String?
            var profile: String?
            var width: Int?
            var height: Int?
            var pix_fmt: String?
            var avg_frame_rate: String?
            var sample_rate: String?
            var channels: Int?
            var channel_layout: String?
            var side_data_list: [SideData]?
            var disposition: [String: Int]?
        }
        var format: Format?
        var streams: [Stream]?
    }

    static func ffprobe(_ path: String) throws -> Probe? {
        let result = try run(which("ffprobe")!, ["-v", "error", "-show_format", "-show_streams", "-of", "json", path])
        guard result.status == 0 else { return nil }
        return try JSONDecoder().decode(Probe.self, from: result.stdout)
    }

    static func rate(_ text: String?) -> Double? {
        guard let parts = text?.split(separator: "/"), parts.count == 2,
              let n = Double(parts[0]), let d = Double(parts[1]), n > 0, d > 0 else { return nil }
        return n / d
    }

    @Test(arguments: TestFiles.sharedMediaFiles)
    func agreesWithFFprobe(_ name: String) async throws {
        let path = TestFiles.sharedMedia!.appendingPathComponent(name).path
        let oracle = try Self.ffprobe(path)
        let asset = Asset(url: URL(fileURLWithPath: path))
        guard let oracle, let streams = oracle.streams else {
            await #expect(throws: MediaError.self) { try await asset.load(.tracks) }
            return
        }
        let (tracks, duration) = try await asset.load(.tracks, .duration)
        try #require(tracks.count == streams.count, "\(name): \(tracks.count) tracks, ffprobe lists \(streams.count)")

        var frameDuration = 0.05
        for (track, stream) in zip(tracks, streams) {
            let format = track.formatDescription
            let context = "\(name) track \(track.trackID)"
            let expectedType: MediaType = switch stream.codec_type {
            case "video": .video
            case "audio": .audio
            case "subtitle": .subtitle
            default: .data
            }
            #expect(track.mediaType == expectedType, "\(context)")
            #expect(format.codec == (stream.codec_name ?? "none"), "\(context)")
            if let profile = stream.profile, profile != "unknown" {
                #expect(format.profile == profile, "\(context)")
            }
            if let video = format.video {
                #expect(video.width == stream.width && video.height == stream.height, "\(context)")
                if let pf = stream.pix_fmt { #expect(video.pixelFormat == pf, "\(context)") }
                let ccw = stream.side_data_list?.compactMap(\.rotation).first ?? 0
                #expect(track.preferredTransform.rotationDegrees == ((-ccw % 360) + 360) % 360, "\(context)")
                let attached = stream.disposition?["attached_pic"] == 1
                #expect(track.isAttachedPicture == attached, "\(context)")
                if !attached, let oracleRate = Self.rate(stream.avg_frame_rate), track.nominalFrameRate > 0 {
                    let ratio = oracleRate / Double(track.nominalFrameRate)
                    // We report ffprobe's average unless it contradicts the packet timeline by
                    // more than 2× (one Matroska file declares 1000 fps for 30 fps video).
                    #expect(abs(ratio - 1) < 0.01 || ratio > 2.2 || ratio < 0.45, "\(context): \(track.nominalFrameRate) fps, ffprobe \(oracleRate)")
                    if abs(ratio - 1) < 0.01 { frameDuration = min(frameDuration, 1 / oracleRate) }
                }
            }
            if let audio = format.audio {
                #expect(String(audio.sampleRate) == stream.sample_rate, "\(context)")
                #expect(audio.channelCount == stream.channels, "\(context)")
                if let layout = stream.channel_layout { #expect(audio.channelLayout == layout, "\(context)") }
            }
        }
        if let text = oracle.format?.duration, let expected = Double(text) {
            #expect(abs(duration.seconds - expected) <= frameDuration, "\(name): \(duration.seconds) s, ffprobe \(expected) s")
        }
    }
}

import ChildProcess
import FFmpegSupport
import Foundation
import Testing
@testable import VAFoundation

/// Sources whose channel layout an encoder cannot take (PCM that declares none, unusual
/// 6-channel orders, 5.1(side)) are written in the nearest layout it takes, with a warning.
@Suite struct ChannelLayoutTests {
    @Test(arguments: [
        // source layout, channels, encoder → written layout, channels
        ("1 channels", 1, "aac", "mono", 1),                               // PCM in WAV/AVI declares only a count
        ("2 channels", 2, "aac", "stereo", 2),
        ("5.1(side)", 6, "aac", "5.1", 6),                                 // MP4 would name it "unknown"
        ("6 channels (FL+FR+FC+LFE+FLC+FRC)", 6, "aac", "5.1", 6),         // aac refuses it outright
        ("7.1", 8, "aac", "7.1", 8),
        ("5.1(side)", 6, "libopus", "5.1", 6),                             // Vorbis channel order
        ("7.1(wide)", 8, "flac", "7.1(wide)", 8),                          // flac takes any mask
        ("7.1", 8, "libmp3lame", "stereo", 2),                             // more than it takes: the largest it takes
        ("4 channels", 4, "flac", "4.0", 4),                               // FFmpeg's default for 4, as ffmpeg assumes
    ] as [(String, Int, String, String, Int)])
    func nearestLayoutTheEncoderTakes(source: String, channels: Int, encoder: String, written: String, writtenChannels: Int) {
        let chosen = ChannelLayouts.closest(to: source, channelCount: channels, forEncoder: encoder)
        #expect(chosen.name == written && chosen.channelCount == writtenChannels, "\(source) → \(encoder): \(chosen)")
    }

    /// A resampler is made for one rate, format and channel count; a frame with others is
    /// refused with an error instead of being read by the wrong plane count (a crash).
    @Test func aResamplerRefusesAFrameWithOtherChannels() throws {
        let resampler = try Resampler(sourceSampleRate: 48000, sourceFormat: .floatPlanar, sourceChannelCount: 2, sourceLayout: "stereo",
                                      outputSampleRate: 48000, outputFormat: .s16, outputChannelCount: 2, outputLayout: "stereo")
        let mono = try Frame(sampleCount: 1024, sampleFormat: .floatPlanar, sampleRate: 48000, channelCount: 1)
        #expect(!resampler.accepts(mono))
        #expect(throws: FFmpegError.self) { try resampler.convert(mono) }
    }

    /// Joined MP3s (or a broadcast switching from stereo to mono) change channel count mid-stream:
    /// the reader drains its resampler and makes a new one, and the export goes on in the first
    /// layout. It used to crash in swr_convert.
    @Test(.disabled(if: ffmpegPath == nil, "ffmpeg makes the joined MP3 (Hardware/setup.sh installs it)"))
    func anAudioStreamWhoseChannelCountChangesMidwayConverts() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var joined = Data()
        for (name, channels) in [("stereo", 2), ("mono", 1)] {
            let part = dir.appendingPathComponent("\(name).mp3")
            let made = try run(try #require(ffmpegPath), ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=duration=1", "-ac", "\(channels)",
                                                          "-c:a", "libmp3lame", part.path])
            try #require(made.status == 0)
            joined.append(try Data(contentsOf: part))
        }
        let source = dir.appendingPathComponent("joined.mp3")
        try joined.write(to: source)
        let output = dir.appendingPathComponent("out.m4a")
        _ = try await ExportSession(asset: Asset(url: source), preset: .appleM4A).export(to: output, as: .m4a)
        #expect(try probeAudio(output).channels == 2, "the first part's layout")
        let probe = try #require(which("ffprobe"))
        let seconds = Double(String(decoding: try run(probe, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", output.path]).stdout,
                                    as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(abs(seconds - 2) < 0.1, "both parts: \(seconds) s")
    }

    /// ffprobe's channels and layout of the first audio stream.
    private func probeAudio(_ url: URL) throws -> (channels: Int, layout: String) {
        let probe = try #require(which("ffprobe"))
        let result = try run(probe, ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=channels,channel_layout", "-of", "csv=p=0", url.path])
        let fields = String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        try #require(fields.count == 2, "\(fields)")
        return (Int(fields[0]) ?? -1, String(fields[1]))
    }

    /// Mean volume (dB) of the audio ffmpeg decodes from `url`: the samples are really there.
    private func meanVolume(_ url: URL) throws -> Double {
        let ffmpeg = try #require(which("ffmpeg"))
        let child = try ChildProcessRun.run(ffmpeg, ["-v", "info", "-nostats", "-i", url.path, "-map", "0:a:0", "-af", "volumedetect", "-f", "null", "-"])
        let line = try #require(child.split(separator: "\n").first { $0.contains("mean_volume:") }, "\(child)")
        return Double(line.split(separator: " ").dropLast().last ?? "") ?? -999
    }

    @Test(arguments: [
        // shared corpus file, written channels and layout, whether a warning says the layout changed
        ("mjpeg_pcm_kodak_digicam.avi", 1, "mono", false),                 // 22.05 kHz PCM declaring no layout
        ("heaac_6ch_nonstandard_layout.m4a", 6, "5.1", true),              // FL+FR+FC+LFE+FLC+FRC
    ] as [(String, Int, String, Bool)])
    func realFilesWithLayoutsAACRefusesExport(name: String, channels: Int, layout: String, warns: Bool) async throws {
        let media = try #require(TestFiles.sharedMedia, "CI always has ../shared/media")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("out.mp4")
        let session = ExportSession(asset: Asset(url: media.appendingPathComponent(name)), preset: .preset640x480)
        let result = try await session.export(to: output, as: .mp4)
        let written = try probeAudio(output)
        #expect(written.channels == channels && written.layout == layout, "\(written)")
        #expect(result.warnings.contains { $0.contains("channel layout is written as \(layout)") } == warns, "\(result.warnings)")
        // Measured: -15.4 dB (PCM clip), -18.2 dB (HE-AAC); silence reads -91 dB.
        let volume = try meanVolume(output)
        #expect(volume > -25, "mean volume \(volume) dB")
    }
}

/// stderr of a program (ffmpeg prints filter reports there).
enum ChildProcessRun {
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let child = try ChildProcess.run(executable, arguments, timeLimit: 600)
        return child.stderr
    }
}

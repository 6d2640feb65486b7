import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// A composition's audio mix, heard through an independent decoder: each export is decoded by
/// ffmpeg, and the level of each source's tone is measured at several points with a
/// single-frequency DFT (the Goertzel sum). The expected levels come from the mix's definition:
/// the source's own measured amplitude times the volume at that composition time.
@Suite(.disabled(if: which("ffmpeg") == nil, "ffmpeg is not installed (Hardware/setup.sh installs it)"))
struct CompositionAudioMixTests {
    static let sampleRate = 48_000
    /// Tones that fit a whole number of cycles in a 0.1 s window, so neither leaks into the other's sum.
    static let (low, high) = (440.0, 1_000.0)

    /// A lossless 4 s tone at `frequency` (ffmpeg's `sine` source).
    static func tone(_ frequency: Double, in dir: URL) async throws -> Asset {
        let url = dir.appendingPathComponent("tone-\(Int(frequency)).mov")
        let made = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-f", "lavfi",
                                                                 "-i", "sine=f=\(frequency):d=4:sample_rate=\(sampleRate)",
                                                                 "-c:a", "pcm_s16le", url.path], timeLimit: 60)
        try #require(made.shellStatus == 0, "ffmpeg: \(made.stderr)")
        return Asset(url: url)
    }

    /// The first channel of `url`, decoded by ffmpeg to 48 kHz float samples.
    static func samples(_ url: URL) async throws -> [Float] {
        let child = try await ChildProcess.run(which("ffmpeg")!, ["-v", "error", "-nostdin", "-i", url.path, "-af", "pan=mono|c0=c0",
                                                                  "-ar", "\(sampleRate)", "-f", "f32le", "-"], timeLimit: 120)
        try #require(child.shellStatus == 0, "ffmpeg: \(child.stderr)")
        return child.standardOutput.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The amplitude of the `frequency` component in the 0.1 s of `samples` centred on `time`.
    static func amplitude(of frequency: Double, in samples: [Float], at time: Double) -> Double {
        let count = sampleRate / 10
        let first = Int((time * Double(sampleRate)).rounded()) - count / 2
        guard first >= 0, first + count <= samples.count else { return .nan }
        var (re, im) = (0.0, 0.0)
        for n in 0..<count {
            let phase = 2 * Double.pi * frequency * Double(n) / Double(sampleRate)
            re += Double(samples[first + n]) * cos(phase)
            im -= Double(samples[first + n]) * sin(phase)
        }
        return 2 * (re * re + im * im).squareRoot() / Double(count)
    }

    static func export(_ composition: MutableComposition, mix: AudioMix, in dir: URL) async throws -> URL {
        let output = dir.appendingPathComponent("mix.m4a")
        let session = ExportSession(asset: composition, preset: .appleM4A)
        session.audioMix = mix
        _ = try await session.export(to: output, as: .m4a)
        return output
    }

    /// Checks each `(time, frequency, volume)` against `volume × source amplitude`, within 2 % of it (measured: within 0.8 %).
    static func expectLevels(_ output: URL, source sourceAmplitude: Double, _ points: [(Double, Double, Double)]) async throws {
        let heard = try await samples(output)
        for (time, frequency, volume) in points {
            let measured = amplitude(of: frequency, in: heard, at: time)
            #expect(abs(measured - volume * sourceAmplitude) <= 0.02 * sourceAmplitude,
                    "\(Int(frequency)) Hz at \(time) s: \(measured / sourceAmplitude) of the source's amplitude, expected \(volume)")
        }
    }

    /// A composition of two 4 s tracks played at once: the low tone's (its source returned
    /// too, to measure) and the high tone's.
    static func twoTones(in dir: URL) async throws -> (Asset, MutableComposition, MutableCompositionTrack, MutableCompositionTrack) {
        let (a, b) = (try await tone(low, in: dir), try await tone(high, in: dir))
        let composition = MutableComposition()
        let first = try #require(composition.addMutableTrack(withMediaType: .audio))
        let second = try #require(composition.addMutableTrack(withMediaType: .audio))
        let four = MediaTimeRange(start: .zero, duration: MediaTime(value: 4, timescale: 1))
        try first.insertTimeRange(four, of: try #require(try await a.loadTracks(withMediaType: .audio).first), at: .zero)
        try second.insertTimeRange(four, of: try #require(try await b.loadTracks(withMediaType: .audio).first), at: .zero)
        return (a, composition, first, second)
    }

    /// Two tracks play at once, each with its own volume; the second is cut off at 2 s.
    @Test func twoTracksAreMixedEachAtItsOwnVolume() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (a, composition, first, second) = try await Self.twoTones(in: dir)
        var quieter = AudioMixInputParameters(track: first)
        quieter.setVolume(0.5, at: .zero)
        var cut = AudioMixInputParameters(track: second)
        cut.setVolume(0.25, at: .zero)
        cut.setVolume(0, at: MediaTime(value: 2, timescale: 1))
        let output = try await Self.export(composition, mix: AudioMix(inputParameters: [quieter, cut]), in: dir)
        let source = Self.amplitude(of: Self.low, in: try await Self.samples(a.url), at: 1)
        try await Self.expectLevels(output, source: source, [
            (0.5, Self.low, 0.5), (0.5, Self.high, 0.25), (1.5, Self.low, 0.5), (1.5, Self.high, 0.25),
            (2.5, Self.low, 0.5), (2.5, Self.high, 0), (3.5, Self.low, 0.5), (3.5, Self.high, 0),
        ])
    }

    /// Each track ramps by its own parameters, wherever they stand in the mix: the second
    /// track's ramp is heard on it alone, the first track keeping its steady volume.
    @Test func aRampOfTheSecondTrackIsItsOwn() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (a, composition, first, second) = try await Self.twoTones(in: dir)
        var steady = AudioMixInputParameters(track: first)
        steady.setVolume(0.5, at: .zero)
        var ramp = AudioMixInputParameters(track: second)
        ramp.setVolumeRamp(fromStartVolume: 1, toEndVolume: 0.2, timeRange: MediaTimeRange(start: MediaTime(value: 1, timescale: 1),
                                                                                           duration: MediaTime(value: 2, timescale: 1)))
        let output = try await Self.export(composition, mix: AudioMix(inputParameters: [steady, ramp]), in: dir)
        let source = Self.amplitude(of: Self.low, in: try await Self.samples(a.url), at: 1)
        try await Self.expectLevels(output, source: source, [
            (0.5, Self.low, 0.5), (0.5, Self.high, 1), (1.5, Self.low, 0.5), (1.5, Self.high, 0.8),
            (2.5, Self.low, 0.5), (2.5, Self.high, 0.4), (3.5, Self.high, 0.2),
        ])
    }

    /// A ramp is linear over its whole range, not only at its ends and middle, and holds its end volume after it.
    @Test func aRampIsLinearAtEveryPointAndHoldsItsEnd() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try await Self.tone(Self.low, in: dir)
        let composition = MutableComposition()
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: MediaTime(value: 4, timescale: 1)), of: a, at: .zero)
        let track = try #require(composition.mutableTracks.first { $0.mediaType == .audio })
        var ramp = AudioMixInputParameters(track: track)
        ramp.setVolumeRamp(fromStartVolume: 1, toEndVolume: 0.2, timeRange: MediaTimeRange(start: MediaTime(value: 1, timescale: 1),
                                                                                           duration: MediaTime(value: 2, timescale: 1)))
        let output = try await Self.export(composition, mix: AudioMix(inputParameters: [ramp]), in: dir)
        let source = Self.amplitude(of: Self.low, in: try await Self.samples(a.url), at: 1)
        try await Self.expectLevels(output, source: source, [
            (0.5, Self.low, 1), (1.5, Self.low, 0.8), (2.0, Self.low, 0.6), (2.5, Self.low, 0.4), (3.5, Self.low, 0.2),
        ])
    }

    /// A mix's times are the composition's: a ramp over the second clip, which starts 1 s into its
    /// source and 2 s into the composition, runs from 2 s to 4 s of the output.
    @Test func aRampFollowsCompositionTimeNotSourceTime() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (a, b) = (try await Self.tone(Self.low, in: dir), try await Self.tone(Self.high, in: dir))
        let composition = MutableComposition()
        let two = MediaTime(value: 2, timescale: 1)
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: two), of: a, at: .zero)
        try await composition.insertTimeRange(MediaTimeRange(start: MediaTime(value: 1, timescale: 1), duration: two), of: b, at: two)
        let track = try #require(composition.mutableTracks.first { $0.mediaType == .audio })
        var fade = AudioMixInputParameters(track: track)
        fade.setVolumeRamp(fromStartVolume: 1, toEndVolume: 0, timeRange: MediaTimeRange(start: two, duration: two))
        let output = try await Self.export(composition, mix: AudioMix(inputParameters: [fade]), in: dir)
        let source = Self.amplitude(of: Self.high, in: try await Self.samples(b.url), at: 1)
        try await Self.expectLevels(output, source: source, [
            (1.0, Self.low, 1), (1.0, Self.high, 0), (2.5, Self.high, 0.75), (3.0, Self.high, 0.5), (3.5, Self.high, 0.25), (2.5, Self.low, 0),
        ])
    }
}

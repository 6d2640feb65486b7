import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// Loudness normalisation in two passes: the programme is measured, one linear gain takes it
/// to the target without its true peak passing the limit. ffmpeg's `ebur128` filter, run on
/// the files, is the oracle for both the source and the output.
@Suite(.serialized) struct LoudnessTests {
    /// ffmpeg's reading of `url`'s first audio track: integrated loudness (LUFS) and true peak (dBTP).
    static func ffmpegLoudness(_ url: URL) throws -> (integrated: Double, truePeak: Double) {
        let ffmpeg = try #require(which("ffmpeg"))
        let child = try ChildProcess.run(ffmpeg, ["-v", "info", "-nostats", "-i", url.path, "-map", "0:a:0", "-af", "ebur128=peak=true", "-f", "null", "-"],
                                         timeLimit: 300)
        // The summary at the end: "I:  -23.0 LUFS" and, under "True peak:", "Peak:  -4.2 dBFS".
        let summary = child.stderr.components(separatedBy: "Summary:").last ?? ""
        func value(after label: String) -> Double? {
            guard let range = summary.range(of: label) else { return nil }
            return summary[range.upperBound...].split(whereSeparator: \.isWhitespace).first.flatMap { Double($0) }
        }
        let integrated = try #require(value(after: "I:"), "ebur128's summary: \(summary)")
        let peak = try #require(value(after: "Peak:"), "ebur128's summary: \(summary)")
        return (integrated, peak)
    }

    /// A 12 s programme: pink noise and a 1 kHz tone, at `gain` dB (about −30 LUFS at −10 dB),
    /// with a click of `click` dBFS every 2 s when given (a peak far above the programme).
    static func programme(in dir: URL, gain: Double, click: Double? = nil) throws -> URL {
        let url = dir.appendingPathComponent("programme-\(UUID().uuidString.prefix(6)).mkv")
        var graph = "anoisesrc=color=pink:sample_rate=48000:duration=12:seed=7[n];sine=f=1000:sample_rate=48000:duration=12[t];"
            + "[n][t]amix=inputs=2,volume=\(gain)dB"
        if let click {
            let amplitude = pow(10, click / 20)
            graph += "[p];aevalsrc='if(lt(mod(t\\,2)\\,0.0005)\\,\(amplitude)\\,0)':s=48000:d=12[c];[p][c]amix=inputs=2:normalize=0"
        }
        let ffmpeg = try #require(which("ffmpeg"))
        let made = try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=12", "-filter_complex", graph,
                                    "-map", "0:v", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "flac", url.path])
        try #require(made.status == 0, "ffmpeg made the programme")
        return url
    }

    @Test func aQuietProgrammeIsBroughtToMinus23LUFS() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.programme(in: dir, gain: -10)
        let before = try Self.ffmpegLoudness(source)
        try #require(abs(before.integrated + 30) < 3, "the programme is about −30 LUFS: \(before)")
        let output = dir.appendingPathComponent("normalised.mp4")
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        session.loudnessTarget = .ebuR128
        let result = try await session.export(to: output, as: .mp4)
        let after = try Self.ffmpegLoudness(output)
        #expect(abs(after.integrated + 23) <= 0.5, "ffmpeg measures \(after.integrated) LUFS after, \(before.integrated) before")
        #expect(after.truePeak <= -1, "true peak \(after.truePeak) dBTP")
        let report = try #require(result.loudness.first)
        #expect(result.loudness.count == 1 && report.trackIDs.count == 1)
        // Our first pass reads what ffmpeg reads; our second, what ffmpeg reads of the output.
        #expect(abs(report.measured.integrated - before.integrated) < 0.2, "\(report.measured) against ffmpeg's \(before)")
        #expect(abs(report.gain - (-23 - report.measured.integrated)) < 0.01, "the gain takes it to the target: \(report.gain) dB")
        let measuredAfter = try #require(report.result)
        #expect(abs(measuredAfter.integrated - after.integrated) < 0.2, "\(measuredAfter) against ffmpeg's \(after)")
        #expect(!result.warnings.contains { $0.contains("LUFS") }, "\(result.warnings)")
    }

    @Test func theTruePeakLimitHoldsTheGainBack() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // About −36 LUFS with clicks at −8 dBFS: the +20 dB to −16 LUFS would take the clicks past −1.5 dBTP.
        let source = try Self.programme(in: dir, gain: -16, click: -8)
        let before = try Self.ffmpegLoudness(source)
        let output = dir.appendingPathComponent("limited.mkv")
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        session.loudnessTarget = LoudnessTarget(integrated: -16, truePeak: -1.5)
        let result = try await session.export(to: output, as: .mkv)
        let after = try Self.ffmpegLoudness(output)
        let report = try #require(result.loudness.first)
        #expect(abs(report.gain - (-1.5 - report.measured.truePeak)) < 0.05, "the peak sets the gain: \(report), source \(before)")
        #expect(after.truePeak <= -1.5 + 0.3, "true peak \(after.truePeak) dBTP (the encoder moves peaks a little)")
        #expect(after.integrated < -17, "short of the target: \(after.integrated) LUFS")
        #expect(abs(after.integrated - (before.integrated + report.gain)) < 0.5, "one linear gain: \(before.integrated) + \(report.gain) → \(after.integrated)")
        #expect(result.warnings.contains { $0.contains("not -16.0") && $0.contains("true peak") }, "\(result.warnings)")
    }

    @Test func aQuietProgrammesTruePeakIsMeasuredFinelyEnoughToHoldItsLimit() async throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // A tone near −49 dBTP: its peak as ebur128 says it (0.003) is 1.4 dB off.
        let source = dir.appendingPathComponent("quiet.mkv")
        let ffmpeg = try #require(which("ffmpeg"))
        try #require(try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=6",
                                      "-f", "lavfi", "-i", "sine=f=997:sample_rate=48000:duration=6,volume=-31dB", "-map", "0", "-map", "1",
                                      "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "flac", source.path]).status == 0)
        let before = try Self.ffmpegLoudness(source)
        let output = dir.appendingPathComponent("loud.mkv")
        let session = ExportSession(asset: Asset(url: source), preset: .preset640x480)
        session.audioCodec = .flac
        session.loudnessTarget = LoudnessTarget(integrated: -5, truePeak: -9)
        let result = try await session.export(to: output, as: .mkv)
        let report = try #require(result.loudness.first)
        #expect(abs(report.measured.truePeak - before.truePeak) < 0.15, "\(report.measured) against ffmpeg's \(before)")
        let after = try Self.ffmpegLoudness(output)
        #expect(after.truePeak <= -9 + 0.1, "the limit holds: \(after.truePeak) dBTP, \(report)")
    }

    @Test func targetsParseAsTheCommandLineGivesThem() {
        #expect(LoudnessTarget(argument: "ebu-r128") == .ebuR128)
        #expect(LoudnessTarget(argument: "EBU-R128") == .ebuR128)
        #expect(LoudnessTarget(argument: "I=-16:TP=-1.5") == LoudnessTarget(integrated: -16, truePeak: -1.5))
        #expect(LoudnessTarget(argument: "I=-14") == LoudnessTarget(integrated: -14, truePeak: -1))
        #expect(LoudnessTarget(argument: "I=-16:TP=3") == nil)
        #expect(LoudnessTarget(argument: "I=16") == nil)
        #expect(LoudnessTarget(argument: "LRA=7") == nil)
        #expect(LoudnessTarget(argument: "loud") == nil)
    }
}

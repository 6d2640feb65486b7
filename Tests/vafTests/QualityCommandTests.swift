import Foundation
import Testing

/// Issue 13, item 1: default encodes never inflate a file, and `--quality` encodes match
/// ffmpeg's CRF at the mapped setting, measured against ffmpeg in the same run.
@Suite(.serialized) struct QualityCommandTests {
    /// The phone recordings among `../shared/media` (MANIFEST.md).
    static let phoneClips = [
        "h264_aac_720p30_iphone_gps.mp4", "h264_aac_2160p60_portrait_android_rot90.mp4", "h264_720p_android_slowmo_capture240fps.mp4",
        "h264_aac_vfr_iphone_flir_gps.mp4", "h264_aac_vfr_android_720p_rot180_gps.mp4", "h264_aac_iphone6_rot90_gps_metadata.mov",
        "hevc_main_1080p_android_rot90_metadata_track.mp4", "hevc_main10_dolbyvision84_hlg_iphone14pro.mov",
    ]

    static let ffmpeg = "/usr/bin/ffmpeg"

    private func rows(_ stdout: String) throws -> [[String: Any]] {
        try Vaf.jsonLines(stdout)
    }

    private func scratch(_ name: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// ffmpeg's PSNR (all planes) of `output` against `source` scaled to the output's displayed
    /// size, frames paired by timestamp.
    private func psnr(_ output: String, against source: String) throws -> Double {
        let graph = "[1:v][0:v]scale2ref[ref][out];[out]format=yuv420p[a];[ref]format=yuv420p[b];[a][b]psnr"
        let run = try Vaf.run(executable: Self.ffmpeg, ["-nostdin", "-i", output, "-i", source, "-lavfi", graph, "-f", "null", "-"])
        let line = try #require(run.stderr.split(separator: "\n").last { $0.contains("PSNR") && $0.contains("average:") }, "\(run.stderr.suffix(500))")
        let value = line.split(separator: " ").first { $0.hasPrefix("average:") }.map { $0.dropFirst("average:".count) }
        return try #require(value.flatMap { Double($0) }, "\(line)")
    }

    @Test func theDefaultPresetNeverMakesAClipLarger() throws {
        let media = try ReencodeCorpus.requireMedia()
        let dir = try scratch("no-inflation")
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try Vaf.run(["transcode", media.path, "--output-dir", dir.path, "--jobs", "2", "--json"])
        let reports = try rows(run.stdout)
        let completed = reports.filter { $0["status"] as? String == "completed" }
        let names = Set(completed.compactMap { ($0["input"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } })
        #expect(Set(Self.phoneClips).isSubset(of: names), "every phone clip is re-encoded: \(names)")
        #expect(completed.count >= 30, "\(completed.count) of \(reports.count) completed")
        var before: Int64 = 0, after: Int64 = 0
        for row in completed {
            let name = URL(fileURLWithPath: row["input"] as? String ?? "").lastPathComponent
            let input = try #require((row["inputBytes"] as? NSNumber)?.int64Value)
            let output = try #require((row["outputBytes"] as? NSNumber)?.int64Value)
            #expect(output <= input, "\(name): \(input) → \(output) bytes")
            if Self.phoneClips.contains(name) {
                before += input
                after += output
                print("phone clip \(name): \(input) → \(output) bytes, video \(row["videoBitRate"] as? Int ?? 0) bit/s")
            }
        }
        print("phone clips, default preset: \(before) → \(after) bytes")
    }

    @Test func qualityMatchesFFmpegsCRFAndStaysUnderTheSource() throws {
        let media = try ReencodeCorpus.requireMedia()
        try #require(FileManager.default.isExecutableFile(atPath: Self.ffmpeg), "ffmpeg is the oracle (Hardware/setup.sh installs it)")
        let dir = try scratch("quality")
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = Self.phoneClips.map { media.appendingPathComponent($0).path }
        let run = try Vaf.run(["transcode"] + inputs + ["--preset", "HighestQuality", "--quality", "55", "--speed", "medium",
                                                         "--output-dir", dir.appendingPathComponent("vaf").path, "--jobs", "2", "--json"])
        #expect(run.status == 0, "\(run.stderr.suffix(800))")
        let reports = try rows(run.stdout)
        #expect(reports.count == inputs.count)
        for row in reports {
            let input = try #require(row["input"] as? String), output = try #require(row["output"] as? String)
            let name = URL(fileURLWithPath: input).lastPathComponent
            #expect(row["status"] as? String == "completed", "\(name): \(row["error"] ?? "")")
            #expect(row["quality"] as? Int == 55 && row["videoBitRate"] is NSNull, "\(name) is a constant-quality encode")
            let inputBytes = try #require((row["inputBytes"] as? NSNumber)?.int64Value)
            let outputBytes = try #require((row["outputBytes"] as? NSNumber)?.int64Value)
            #expect(outputBytes <= inputBytes, "\(name): \(inputBytes) → \(outputBytes) bytes")
            // The oracle: x264 at the CRF README maps 55 to, with the same ceiling over the same
            // window, at the source's size as HighestQuality keeps it (ffmpeg turns rotated
            // pictures upright; the PSNR compares displayed pictures, so that is the same).
            let peak = try #require(row["videoMaxBitRate"] as? Int, "\(name) has a ceiling")
            // Our ceiling holds over the clip's duration when it is shorter than a second.
            let seconds = try #require(row["seconds"] as? Double)
            let oracle = dir.appendingPathComponent("ffmpeg-\(name).mp4").path
            // An HDR source is tone-mapped to SDR for H.264, as ours is (README: Interlaced and HDR
            // sources), so the oracle gets the same filter chain.
            let transfer = try Vaf.run(executable: "/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                                        "stream=color_transfer", "-of", "csv=p=0", input]).stdout
            let toneMap = ["arib-std-b67", "smpte2084"].contains(transfer.trimmingCharacters(in: CharacterSet(charactersIn: ", \n")))
                ? ["-vf", "zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p"] : []
            let made = try Vaf.run(executable: Self.ffmpeg, [
                "-nostdin", "-v", "error", "-y", "-i", input, "-map", "0:v:0"] + toneMap + ["-c:v", "libx264", "-preset", "medium", "-crf", "23",
                "-maxrate", String(peak), "-bufsize", String(Int((Double(peak) * min(1, seconds)).rounded(.up))),
                "-pix_fmt", "yuv420p", "-fps_mode", "passthrough", "-enc_time_base", "-1", oracle])
            try #require(made.status == 0, "\(made.stderr)")
            let ours = try psnr(output, against: input), theirs = try psnr(oracle, against: input)
            print("quality 55 \(name): \(inputBytes) → \(outputBytes) bytes, PSNR \(ours) dB; ffmpeg -crf 23 same ceiling: \(theirs) dB")
            #expect(ours >= theirs - 0.5, "\(name): PSNR \(ours) dB against ffmpeg's \(theirs) dB")
        }
    }

    /// AV1 and VP9 open with the assistant's settings (no H.264 profile name) at a bit rate
    /// and at constant quality, and stay under the source.
    @Test func av1AndVP9EncodeUnderTheSource() throws {
        let media = try ReencodeCorpus.requireMedia()
        let input = media.appendingPathComponent("h264_aac_iphone6_rot90_gps_metadata.mov").path
        let dir = try scratch("av1-vp9")
        defer { try? FileManager.default.removeItem(at: dir) }
        for (codec, container, encoder) in [("av1", "mp4", "libsvtav1"), ("vp9", "mkv", "libvpx-vp9")] {
            for quality in [nil, "55"] {
                let out = dir.appendingPathComponent("\(codec)-\(quality ?? "rate")").path
                let run = try Vaf.run(["transcode", input, "--video-codec", codec, "--container", container, "--output-dir", out, "--json"]
                                      + (quality.map { ["--quality", $0] } ?? []))
                let row = try #require(try rows(run.stdout).first, "\(run.stderr)")
                #expect(row["status"] as? String == "completed", "\(codec) \(quality ?? "rate"): \(row["error"] ?? "")")
                #expect((row["encoder"] as? String)?.hasPrefix(encoder) == true)
                let (before, after) = ((row["inputBytes"] as? Int) ?? 0, (row["outputBytes"] as? Int) ?? .max)
                #expect(after <= before, "\(codec) \(quality ?? "rate"): \(before) → \(after) bytes")
            }
        }
    }
}

import Foundation
import Testing
import VATestSupport

/// SoftVA's H.264 decode and encode, driven by FFmpeg's own VA-API code (the h264 hwaccel and
/// h264_vaapi), with libavcodec's software decoder as the oracle: decoding is bit-exact, and
/// encoding (I_PCM macroblocks) is lossless.
@Suite("SoftVA H.264")
struct H264Tests {
    static func hwArgs(_ env: SoftVAEnvironment) -> [String] {
        ["-hide_banner", "-loglevel", "error", "-init_hw_device", "vaapi=va:\(env.display.name)",
         "-hwaccel", "vaapi", "-hwaccel_device", "va", "-hwaccel_output_format", "vaapi",
         // Baseline (not Constrained Baseline) streams: FFmpeg then asks for the High profile.
         "-hwaccel_flags", "+allow_profile_mismatch"]
    }

    /// The per-frame MD5s of an ffmpeg framemd5 file.
    static func frameHashes(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            .filter { !$0.hasPrefix("#") }
            .compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    /// Decodes `input` on SoftVA and in software and returns both lists of per-frame MD5s, in NV12.
    /// The software frames are repacked to NV12 without range conversion (full-range sources keep
    /// their samples), and no frame is dropped or repeated (`-fps_mode passthrough`).
    static func decodeBothWays(_ env: SoftVAEnvironment, _ input: String, frames: Int? = nil, in tmp: TemporaryDirectory,
                               counters: String) throws -> (hardware: [String], software: [String], stderr: String) {
        let limit = frames.map { ["-frames:v", "\($0)"] } ?? []
        let r = try env.run(Tools.ffmpeg, hwArgs(env) + ["-autorotate", "0", "-i", input, "-an"] + limit + [
            "-vf", "hwdownload,format=nv12", "-fps_mode", "passthrough", "-f", "framemd5", "-y", tmp.file("hw.md5"),
        ], options: SoftVAOptions(countersPath: counters))
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-autorotate", "0", "-i", input, "-an"] + limit + [
            "-vf", "scale=in_range=full:out_range=full,format=nv12", "-fps_mode", "passthrough",
            "-f", "framemd5", "-y", tmp.file("sw.md5"),
        ])
        return (try frameHashes(tmp.file("hw.md5")), try frameHashes(tmp.file("sw.md5")), r.stderr)
    }

    /// x264 settings for the generated clips: each exercises a different part of the rebuilt
    /// parameter sets (profile, entropy coder, B-frames, 8x8 transform, scaling lists, slices,
    /// weighted prediction, several references).
    static let generatedClips: [(name: String, x264: [String])] = [
        ("constrained baseline", ["-profile:v", "baseline"]),
        ("main, CABAC, 3 B-frames", ["-profile:v", "main", "-bf", "3"]),
        ("high, 8x8 transform, B-pyramid, 4 refs, weighted P, 3 slices",
         ["-profile:v", "high", "-bf", "3", "-x264-params", "b-pyramid=normal:ref=4:weightp=2:slices=3"]),
        ("high, CAVLC, 2 B-frames", ["-profile:v", "high", "-bf", "2", "-x264-params", "cabac=0"]),
        ("high, asymmetric custom scaling matrices", ["-profile:v", "high", "-bf", "2", "-x264-params", "cqmfile=CQM"]),
    ]

    /// Custom scaling lists, none of them symmetric, so that a list written transposed or in the
    /// wrong scan order would change the pictures.
    static func writeAsymmetricCQM(_ path: String) throws {
        var text = ""
        var seed: UInt32 = 12345 // a fixed linear congruential sequence: the same lists every run
        func next() -> Int { seed = seed &* 1_103_515_245 &+ 12345; return 6 + Int((seed >> 16) % 55) }
        for (name, count) in [("INTRA4X4_LUMA", 16), ("INTRA4X4_CHROMAU", 16), ("INTRA4X4_CHROMAV", 16),
                              ("INTER4X4_LUMA", 16), ("INTER4X4_CHROMAU", 16), ("INTER4X4_CHROMAV", 16),
                              ("INTRA8X8_LUMA", 64), ("INTER8X8_LUMA", 64)] {
            text += "\(name) =\n" + (0..<count).map { _ in String(next()) }.joined(separator: ",") + "\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test("H.264 decode through the h264 hwaccel is bit-exact against libavcodec",
          arguments: generatedClips.indices)
    func decodeGeneratedClipBitExact(index: Int) throws {
        let (name, x264) = Self.generatedClips[index]
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        try Self.writeAsymmetricCQM(tmp.file("asym.cqm"))
        let settings = x264.map { $0.replacingOccurrences(of: "cqmfile=CQM", with: "cqmfile=\(tmp.file("asym.cqm"))") }
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-f", "lavfi",
                                      "-i", "testsrc2=size=352x288:rate=30", "-t", "1", "-pix_fmt", "yuv420p",
                                      "-c:v", "libx264"] + settings + ["-y", tmp.file("in.mp4")])
        let counters = tmp.file("counters.txt")
        let (hw, sw, _) = try Self.decodeBothWays(env, tmp.file("in.mp4"), in: tmp, counters: counters)
        print("softva: H.264 decode (\(name)): \(hw.count) frames, \(zip(hw, sw).filter { $0 != $1 }.count) differ")
        #expect(sw.count == 30)
        #expect(hw == sw, "\(name): SoftVA's pictures differ from libavcodec's")
        let c = try SoftVACounters(path: counters)
        #expect(c["h264_decodes"] == 30, "every picture decoded on SoftVA")
        #expect(c["decodes"] == 30)
        #expect(c["failed_operations"] == 0)
    }

    /// The progressive H.264 clips of the shared corpus (picture order count type 0 or 2), each
    /// decoded on SoftVA and compared with libavcodec's software decode, frame by frame.
    static let sharedClips: [(file: String, frames: Int?)] = [
        ("h264_aac_720p30_iphone_gps.mp4", 30),            // High, B-frames, POC 0
        ("h264_aac_1080p24_bframe_delay_no_elst.mp4", nil), // High 1080p, B-frames, POC 0
        ("h264_720p_android_slowmo_capture240fps.mp4", nil), // High, full range, long-term IDR, SVC prefix NALs, POC 2
        ("h264_aac_vfr_android_720p_rot180_gps.mp4", nil),  // Baseline, POC 0
        ("h264_in_webm_chrome_mediarecorder_vfr.webm", 30), // Constrained Baseline, POC 2
        ("h264_aac_iphone6_rot90_gps_metadata.mov", 30),    // Baseline, POC 0
        ("h264_ac3_srt_subtitle.mkv", nil),                 // High, B-frames, POC 0
        ("h264_aac_qt_and_nero_chapters.mp4", nil),         // High, POC 2
        ("h264_three_edit_lists.mov", nil),                 // High, deep B-frame reorder, POC 0
        ("h264_neg_first_pts_discard.mov", nil),            // High, B-frames, POC 0
        ("h264_aac_vfr_iphone_flir_gps.mp4", 30),           // High 1080x1440, B-frames, POC 0
        ("h264_aac_2160p60_portrait_android_rot90.mp4", 6), // High 3840x2160, full range, POC 2
    ]

    static var sharedMedia: String? {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("shared/media").path
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    @Test("H.264 decode of the shared corpus's progressive clips is bit-exact against libavcodec",
          arguments: sharedClips.indices)
    func decodeSharedClipBitExact(index: Int) throws {
        let (file, frames) = Self.sharedClips[index]
        let media = try #require(Self.sharedMedia, "CI has ../shared/media beside the checkout")
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let counters = tmp.file("counters.txt")
        let (hw, sw, _) = try Self.decodeBothWays(env, media + "/" + file, frames: frames, in: tmp, counters: counters)
        print("softva: H.264 decode of \(file): \(hw.count) frames, \(zip(hw, sw).filter { $0 != $1 }.count) differ")
        #expect(!sw.isEmpty)
        #expect(hw == sw, "\(file): SoftVA's pictures differ from libavcodec's")
        let c = try SoftVACounters(path: counters)
        #expect(c["h264_decodes"] >= UInt64(sw.count), "decoded on SoftVA: \(c["h264_decodes"])")
        #expect(c["failed_operations"] == 0)
    }

    @Test("Interlaced H.264 decode is bit-exact: field pictures (PAFF, a real 1080i50 camera clip) and MBAFF (x264)",
          arguments: ["paff", "mbaff"])
    func interlacedDecodeBitExact(kind: String) throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let input: String
        if kind == "paff" {
            let media = try #require(Self.sharedMedia, "CI has ../shared/media beside the checkout")
            input = media + "/h264_1080i50_ac3_pgs_sony_a7m3_avchd.mts" // each frame coded as two field pictures
        } else {
            input = tmp.file("mbaff.mp4")
            try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=720x576:rate=25",
                                          "-t", "1", "-c:v", "libx264", "-profile:v", "high", "-bf", "2", "-flags", "+ildct+ilme",
                                          "-x264-params", "tff=1", "-pix_fmt", "yuv420p", "-y", input])
        }
        let counters = tmp.file("counters.txt")
        let (hw, sw, _) = try Self.decodeBothWays(env, input, in: tmp, counters: counters)
        print("softva: H.264 decode (\(kind)): \(hw.count) frames, \(zip(hw, sw).filter { $0 != $1 }.count) differ")
        #expect(!sw.isEmpty)
        #expect(hw == sw, "\(kind): SoftVA's pictures differ from libavcodec's")
        let c = try SoftVACounters(path: counters)
        // Measured: PAFF 13 frames from 26 field pictures; MBAFF 25 frames.
        #expect(c["h264_decodes"] == UInt64(kind == "paff" ? 2 * sw.count : sw.count))
        #expect(c["failed_operations"] == 0)
    }

    /// h264_vaapi settings: default GOP (B-frames, CABAC), no B-frames, CAVLC, several slices,
    /// Constrained Baseline, and rate-control parameters that SoftVA records and ignores.
    static let encoderSettings: [[String]] = [
        [],
        ["-bf", "0"],
        ["-coder", "cavlc"],
        ["-bf", "0", "-coder", "cavlc"],
        ["-slices", "4"],
        ["-slices", "3", "-coder", "cavlc"],
        ["-profile:v", "constrained_baseline"],
        ["-rc_mode", "VBR", "-b:v", "2M", "-maxrate", "3M", "-bf", "3", "-g", "12"],
        ["-aud", "1", "-sei", "identifier+timing+recovery_point", "-b:v", "1M"],
    ]

    /// Encodes `source` (NV12, 360x202: not a whole number of macroblocks) with h264_vaapi and
    /// returns the coded stream's path.
    static func encode(_ env: SoftVAEnvironment, _ source: String, _ settings: [String], options: SoftVAOptions,
                       to output: String) throws -> ProcessResult {
        try env.run(Tools.ffmpeg, [
            "-hide_banner", "-loglevel", "error", "-init_hw_device", "vaapi=va:\(env.display.name)", "-filter_hw_device", "va",
            "-f", "rawvideo", "-pix_fmt", "nv12", "-s", "360x202", "-i", source,
            "-vf", "hwupload", "-c:v", "h264_vaapi",
        ] + settings + ["-f", "h264", "-y", output], options: options)
    }

    static func makeSource(_ tmp: TemporaryDirectory) throws -> [UInt8] {
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=360x202:rate=30",
                                      "-t", "0.5", "-pix_fmt", "nv12", "-f", "rawvideo", "-y", tmp.file("src.nv12")])
        return try readBytes(tmp.file("src.nv12"))
    }

    /// The slice types and entropy coder of a stream, from the trace_headers bitstream filter.
    static func sliceTypes(_ path: String) throws -> (types: Set<Int>, cabac: Set<Int>) {
        let r = try ProcessResult.run(Tools.ffmpeg, ["-hide_banner", "-i", path, "-c", "copy", "-bsf:v", "trace_headers", "-f", "null", "-"])
        var types = Set<Int>(), cabac = Set<Int>()
        for line in r.stderr.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let value = fields.last.flatMap({ Int($0) }) else { continue }
            if fields.contains("slice_type") { types.insert(value % 5) }
            if fields.contains("entropy_coding_mode_flag") { cabac.insert(value) }
        }
        return (types, cabac)
    }

    @Test("h264_vaapi on SoftVA is lossless: libavcodec decodes the stream to the source frames bit for bit",
          arguments: encoderSettings)
    func encodeIsLossless(settings: [String]) throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let source = try Self.makeSource(tmp)
        let counters = tmp.file("counters.txt")
        let r = try Self.encode(env, tmp.file("src.nv12"), settings, options: SoftVAOptions(countersPath: counters), to: tmp.file("out.h264"))
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-i", tmp.file("out.h264"),
                                      "-pix_fmt", "nv12", "-f", "rawvideo", "-y", tmp.file("back.nv12")])
        let back = try readBytes(tmp.file("back.nv12"))
        #expect(back.count == source.count, "\(back.count) bytes decoded for \(source.count)")
        #expect(back == source, "the decoded frames differ from the source: \(SampleDifference(source, back))")
        let (types, cabac) = try Self.sliceTypes(tmp.file("out.h264"))
        print("softva: h264_vaapi \(settings.joined(separator: " ")): slice types \(types.sorted()), CABAC \(cabac.sorted())")
        #expect(cabac == [settings.contains("cavlc") || settings.contains("constrained_baseline") ? 0 : 1])
        // Only -bf 0 turns B-frames off: FFmpeg 5.1's h264_vaapi codes B slices even under
        // -profile:v constrained_baseline (whose SPS then says a profile without B slices).
        let expectsB = !settings.contains("0")
        #expect(types == (expectsB ? [0, 1, 2] : [0, 2]), "I, P\(expectsB ? " and B" : "") slices: \(types.sorted())")
        let c = try SoftVACounters(path: counters)
        #expect(c["h264_encodes"] == 15)
        #expect(c["failed_operations"] == 0)
    }

    @Test("h264_vaapi with low_power=1 on the Arc personality (EncSliceLP only) is lossless")
    func lowPowerEncodeOnArcIsLossless() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let source = try Self.makeSource(tmp)
        let counters = tmp.file("counters.txt")
        let arc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Hardware/Profiles/intel-ihd-arc-dg2.profile").path
        let r = try Self.encode(env, tmp.file("src.nv12"), ["-low_power", "1"],
                                options: SoftVAOptions(profile: arc, countersPath: counters), to: tmp.file("out.h264"))
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-i", tmp.file("out.h264"),
                                      "-pix_fmt", "nv12", "-f", "rawvideo", "-y", tmp.file("back.nv12")])
        #expect(try readBytes(tmp.file("back.nv12")) == source)
        let c = try SoftVACounters(path: counters)
        #expect(c.personality == "intel-ihd-arc-dg2")
        #expect(c["h264_encodes"] == 15)
    }

    /// A personality whose H.264 encoder takes no packed headers, with SoftVA's other values
    /// (one L0 and one L1 reference, so FFmpeg codes B-frames).
    static let noPackedHeadersProfile = """
        name softva-no-packed-headers
        vendor SoftVA CPU driver 0.1 (libjpeg-turbo)
        driver softva
        api 1.17
        config VAProfileH264High VAEntrypointEncSlice
        attr VAProfileH264High VAEntrypointEncSlice VAConfigAttribEncPackedHeaders 0x00000000

        """

    @Test("Without packed headers, SoftVA writes the SPS, PPS and slice headers itself, still losslessly",
          arguments: ["amd-radeonsi-rdna2-rx6750xt-all", "no-packed-headers-with-b-frames"])
    func encodeWithDriverWrittenHeadersIsLossless(personality: String) throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let source = try Self.makeSource(tmp)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let profile: String
        if personality.hasPrefix("no-packed") {
            profile = tmp.file("no-packed.profile")
            try Self.noPackedHeadersProfile.write(toFile: profile, atomically: true, encoding: .utf8)
        } else {
            // The real RX 6750 XT (radeonsi) reported EncPackedHeaders 0 and one L0 reference.
            profile = root.appendingPathComponent("Hardware/Profiles/\(personality).profile").path
        }
        let counters = tmp.file("counters.txt")
        for settings in [[], ["-coder", "cavlc"]] {
            let r = try Self.encode(env, tmp.file("src.nv12"), settings, options: SoftVAOptions(profile: profile, countersPath: counters),
                                    to: tmp.file("out.h264"))
            #expect(r.succeeded, "ffmpeg: \(r.stderr)")
            let decode = try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "warning", "-i", tmp.file("out.h264"),
                                                       "-pix_fmt", "nv12", "-f", "rawvideo", "-y", tmp.file("back.nv12")])
            #expect(decode.stderr.isEmpty, "libavcodec complained: \(decode.stderr)")
            #expect(try readBytes(tmp.file("back.nv12")) == source, "\(personality) \(settings)")
            let (types, cabac) = try Self.sliceTypes(tmp.file("out.h264"))
            print("softva: driver-written headers, \(personality) \(settings.joined(separator: " ")): slice types \(types.sorted()), CABAC \(cabac.sorted())")
            #expect(types == (personality.hasPrefix("no-packed") ? [0, 1, 2] : [0, 2]))
            #expect(cabac == [settings.isEmpty ? 1 : 0])
            let c = try SoftVACounters(path: counters)
            #expect(c["h264_encodes"] == 15 && c["failed_operations"] == 0)
        }
    }

    @Test("Each real device's personality that lists H.264 decode and encode runs both on SoftVA (VA decode → h264_vaapi, lossless)",
          arguments: ["intel-ihd-tigerlake", "intel-ihd-arc-dg2", "amd-radeonsi-rdna2-rx6750xt", "amd-radeonsi-rdna2-rx6750xt-all",
                      "amd-radeonsi-rdna3-rx7900xtx", "intel-i965-haswell"])
    func personalityTranscodesH264(personality: String) throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                      "-t", "0.5", "-c:v", "libx264", "-profile:v", "high", "-bf", "2", "-pix_fmt", "yuv420p",
                                      "-y", tmp.file("in.mp4")])
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-i", tmp.file("in.mp4"),
                                      "-pix_fmt", "nv12", "-f", "rawvideo", "-y", tmp.file("sw.nv12")])
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let profile = root.appendingPathComponent("Hardware/Profiles/\(personality).profile").path
        let counters = tmp.file("counters.txt")
        // Arc's H.264 encoder is low-power only.
        let lowPower = personality == "intel-ihd-arc-dg2" ? ["-low_power", "1"] : []
        let r = try env.run(Tools.ffmpeg, Self.hwArgs(env) + ["-i", tmp.file("in.mp4"), "-c:v", "h264_vaapi"] + lowPower
                            + ["-f", "h264", "-y", tmp.file("out.h264")],
                            options: SoftVAOptions(profile: profile, countersPath: counters))
        #expect(r.succeeded, "ffmpeg: \(r.stderr)")
        try runChecked(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error", "-i", tmp.file("out.h264"),
                                      "-pix_fmt", "nv12", "-f", "rawvideo", "-y", tmp.file("back.nv12")])
        #expect(try readBytes(tmp.file("back.nv12")) == readBytes(tmp.file("sw.nv12")), "\(personality): not lossless")
        let c = try SoftVACounters(path: counters)
        #expect(c.personality == personality)
        #expect(c["h264_decodes"] == 15 && c["h264_encodes"] == 15 && c["failed_operations"] == 0)
    }
}

import Foundation
import HardwareAcceleration
import Testing
@testable import VAFoundation

/// The per-stream choice between hardware, hybrid and software, against the capability
/// profiles of real devices (Hardware/Profiles, made from their vainfo outputs).
@Suite struct HardwareDecisionTests {
    static func capabilities(_ profile: String) throws -> DeviceCapabilities {
        let url = TestFiles.packageRoot.appendingPathComponent("Hardware/Profiles/\(profile)")
        let parsed = try DeviceProfile(profileText: try String(contentsOf: url, encoding: .utf8), file: url.path)
        return try #require(parsed.capabilities)
    }

    static func job(_ source: String, _ sourceSize: (Int, Int), to target: VideoCodec, _ targetSize: (Int, Int),
                    bitDepth: Int = 8, chroma: String = "4:2:0") -> HardwareJob {
        HardwareJob(sourceCodec: source, sourceBitDepth: bitDepth, sourceChroma: chroma,
                    sourceSize: Size(width: sourceSize.0, height: sourceSize.1), targetCodec: target, targetBitDepth: bitDepth,
                    targetSize: Size(width: targetSize.0, height: targetSize.1))
    }

    @Test func tigerLakeRunsH264ToHEVCOnTheDevice() throws {
        let decision = try Self.job("h264", (1920, 1080), to: .hevc, (1280, 720))
            .decide(policy: .auto, capabilities: try Self.capabilities("intel-ihd-tigerlake.profile"), problem: nil)
        #expect(decision.path == .hardware)
        #expect(decision.encoder == "hevc_vaapi")
        #expect(decision.scalesOnDevice)
    }

    @Test func av1EncodeStaysInSoftwareEvenWhereTheDeviceListsIt() throws {
        // RDNA3 lists AV1 EncSlice; FFmpeg 5.1 has no av1_vaapi.
        let decision = try Self.job("h264", (1920, 1080), to: .av1, (1920, 1080))
            .decide(policy: .auto, capabilities: try Self.capabilities("amd-radeonsi-rdna3-rx7900xtx.profile"), problem: nil)
        #expect(!decision.encodesOnDevice)
        #expect(decision.decodesOnDevice, "H.264 is still decoded on the device")
        #expect(decision.path == .hybrid)
        #expect(decision.reason.contains("AV1"), "\(decision.reason)")
    }

    @Test func haswellCannotDecodeHEVCSoItUploadsForTheH264Encoder() throws {
        let decision = try Self.job("hevc", (1920, 1080), to: .h264, (1280, 720))
            .decide(policy: .auto, capabilities: try Self.capabilities("intel-i965-haswell.profile"), problem: nil)
        #expect(decision.path == .hybrid)
        #expect(!decision.decodesOnDevice && decision.encodesOnDevice)
    }

    @Test func tenBitSourcesNeedTenBitDecode() throws {
        let decision = try Self.job("hevc", (3840, 2160), to: .hevc, (3840, 2160), bitDepth: 10)
            .decide(policy: .auto, capabilities: try Self.capabilities("intel-i965-haswell.profile"), problem: nil)
        #expect(decision.path == .software, "\(decision.reason)")
    }

    @Test func fourTwoTwoSourcesAreDecodedInSoftware() throws {
        let decision = try Self.job("h264", (1920, 1080), to: .h264, (1280, 720), chroma: "4:2:2")
            .decide(policy: .auto, capabilities: try Self.capabilities("intel-ihd-tigerlake.profile"), problem: nil)
        #expect(!decision.decodesOnDevice)
        #expect(decision.path == .hybrid)
    }

    @Test func policiesOffRequireAndHybrid() throws {
        let tigerLake = try Self.capabilities("intel-ihd-tigerlake.profile")
        let job = Self.job("h264", (1920, 1080), to: .h264, (1280, 720))
        #expect(try job.decide(policy: .off, capabilities: tigerLake, problem: nil).path == .software)
        let hybrid = try job.decide(policy: .hybrid, capabilities: tigerLake, problem: nil)
        #expect(hybrid.path == .hybrid && !hybrid.decodesOnDevice && hybrid.encodesOnDevice)
        #expect(try job.decide(policy: .auto, capabilities: nil, problem: "no /dev/dri").path == .software)
        #expect(throws: MediaError.self) { try job.decide(policy: .require, capabilities: nil, problem: "no /dev/dri") }
        #expect(throws: MediaError.self) { try job.decide(policy: .hybrid, capabilities: nil, problem: "no /dev/dri") }
        let nvidia = try Self.capabilities("nvidia-vaapi-driver-direct.profile")
        #expect(throws: MediaError.self) {
            try Self.job("prores", (640, 480), to: .av1, (640, 480)).decide(policy: .require, capabilities: nvidia, problem: nil)
        }
    }

    // MARK: Interlaced and HDR sources (issue 14, classes 5 and 6)

    /// `profile`'s capabilities with the video-processing filters its driver reports to a live
    /// probe (a vainfo capture, and so a profile, has none): Intel iHD (media-driver's
    /// media_libva_vp.c: deinterlacing by Bob and MotionAdaptive; HDR10 tone mapping
    /// HDR-to-HDR, -SDR and -EDR on parts with FtrHDR, Gen11 and later), Mesa's radeonsi
    /// (frontends/va/surface.c: deinterlacing by Bob, Weave and MotionAdaptive; no tone mapping).
    static func probed(_ profile: String, deinterlacing: [String]?, toneMapping: [String]? = nil) throws -> DeviceCapabilities {
        var caps = try capabilities(profile)
        var filters: [String] = []
        if deinterlacing != nil { filters.append("Deinterlacing") }
        if toneMapping != nil { filters.append("HighDynamicRangeToneMapping") }
        caps.videoProcessing = VideoProcessingCapabilities(filters: filters, deinterlacing: deinterlacing, toneMapping: toneMapping, pipeline: nil)
        return caps
    }

    static let iHDToneMapping = ["HDR10 HDR-to-HDR", "HDR10 HDR-to-SDR", "HDR10 HDR-to-EDR"]

    static func interlacedJob(_ source: String = "h264", bitDepth: Int = 8, toneMapsHDR: Bool = false, interlaced: Bool = true) -> HardwareJob {
        var job = HardwareJob(sourceCodec: source, sourceBitDepth: bitDepth, sourceChroma: "4:2:0",
                              sourceSize: Size(width: 1920, height: 1080), targetCodec: .h264, targetBitDepth: 8,
                              targetSize: Size(width: 1280, height: 720))
        job.deinterlaces = interlaced
        job.toneMapsHDR = toneMapsHDR
        return job
    }

    @Test func tigerLakeDeinterlacesOnItsVideoProcessor() throws {
        let caps = try Self.probed("intel-ihd-tigerlake.profile", deinterlacing: ["Bob", "MotionAdaptive"], toneMapping: Self.iHDToneMapping)
        let decision = try Self.interlacedJob().decide(policy: .auto, capabilities: caps, problem: nil)
        #expect(decision.path == .hardware, "\(decision.reason)")
        #expect(decision.deinterlacing == .device)
        #expect(decision.toneMapping == nil)
        #expect(decision.scalesOnDevice)
        #expect(decision.reason.contains("VPP deinterlacing (bob, deinterlace_vaapi)"), "\(decision.reason)")
    }

    @Test func radeonDeinterlacesOnItsVideoProcessorToo() throws {
        let caps = try Self.probed("amd-radeonsi-rdna2-rx6750xt.profile", deinterlacing: ["Bob", "Weave", "MotionAdaptive"])
        let decision = try Self.interlacedJob().decide(policy: .auto, capabilities: caps, problem: nil)
        #expect(decision.path == .hardware, "\(decision.reason)")
        #expect(decision.deinterlacing == .device)
    }

    @Test func aProfileWithoutProbedFiltersDeinterlacesOnTheCPU() throws {
        // A vainfo capture says nothing of filters: the decision does not guess them from the driver's name.
        let decision = try Self.interlacedJob().decide(policy: .auto, capabilities: try Self.capabilities("intel-ihd-tigerlake.profile"), problem: nil)
        #expect(decision.path == .hybrid, "\(decision.reason)")
        #expect(decision.decodesOnDevice && decision.encodesOnDevice && !decision.scalesOnDevice)
        #expect(decision.deinterlacing == .host)
        #expect(decision.reason.contains("deinterlaced by bwdif on the CPU: the device's video processing filters are unknown (not probed)"), "\(decision.reason)")
    }

    @Test func aVideoProcessorWithoutDeinterlacingOrWithoutBobDeinterlacesOnTheCPU() throws {
        let none = try Self.probed("amd-radeonsi-rdna3-rx7900xtx.profile", deinterlacing: nil)
        let withoutFilter = try Self.interlacedJob().decide(policy: .auto, capabilities: none, problem: nil)
        #expect(withoutFilter.path == .hybrid && withoutFilter.deinterlacing == .host)
        #expect(withoutFilter.reason.contains("the device's video processor has no deinterlacing filter"), "\(withoutFilter.reason)")
        let motionOnly = try Self.probed("amd-radeonsi-rdna3-rx7900xtx.profile", deinterlacing: ["MotionAdaptive"])
        let withoutBob = try Self.interlacedJob().decide(policy: .auto, capabilities: motionOnly, problem: nil)
        #expect(withoutBob.path == .hybrid && withoutBob.deinterlacing == .host)
        #expect(withoutBob.reason.contains("only with MotionAdaptive"), "\(withoutBob.reason)")
    }

    @Test func progressiveSourcesAreUntouched() throws {
        let caps = try Self.probed("intel-ihd-tigerlake.profile", deinterlacing: ["Bob", "MotionAdaptive"])
        let decision = try Self.interlacedJob(interlaced: false).decide(policy: .auto, capabilities: caps, problem: nil)
        #expect(decision.path == .hardware)
        #expect(decision.deinterlacing == nil && decision.toneMapping == nil)
        #expect(!decision.reason.contains("deinterlac"), "\(decision.reason)")
    }

    @Test func hdrToSDRIsToneMappedOnTheCPUEvenWhereTheDeviceOffersIt() throws {
        // HEVC Main10 PQ into 8-bit H.264 on Tiger Lake: decoded and encoded on the device,
        // tone-mapped by zscale/tonemap in host memory (VA tone mapping is not driven yet).
        let caps = try Self.probed("intel-ihd-tigerlake.profile", deinterlacing: ["Bob", "MotionAdaptive"], toneMapping: Self.iHDToneMapping)
        let decision = try Self.interlacedJob("hevc", bitDepth: 10, toneMapsHDR: true, interlaced: false)
            .decide(policy: .auto, capabilities: caps, problem: nil)
        #expect(decision.path == .hybrid, "\(decision.reason)")
        #expect(decision.decodesOnDevice && decision.encodesOnDevice && !decision.scalesOnDevice)
        #expect(decision.toneMapping == .host && decision.deinterlacing == nil)
        #expect(decision.reason.contains("the device offers HDR10-to-SDR tone mapping, which VAFoundation does not drive yet"), "\(decision.reason)")
        let radeon = try Self.probed("amd-radeonsi-rdna2-rx6750xt.profile", deinterlacing: ["Bob", "Weave", "MotionAdaptive"])
        let onRadeon = try Self.interlacedJob("hevc", bitDepth: 10, toneMapsHDR: true, interlaced: false)
            .decide(policy: .auto, capabilities: radeon, problem: nil)
        #expect(onRadeon.toneMapping == .host)
        #expect(onRadeon.reason.contains("has no HDR-to-SDR tone mapping"), "\(onRadeon.reason)")
    }

    @Test func interlacedHDRIsDeinterlacedWhereItIsToneMapped() throws {
        let caps = try Self.probed("intel-ihd-tigerlake.profile", deinterlacing: ["Bob", "MotionAdaptive"], toneMapping: Self.iHDToneMapping)
        let decision = try Self.interlacedJob("hevc", bitDepth: 10, toneMapsHDR: true).decide(policy: .auto, capabilities: caps, problem: nil)
        #expect(decision.deinterlacing == .host && decision.toneMapping == .host)
        #expect(decision.reason.contains("deinterlaced by bwdif there too"), "\(decision.reason)")
    }

    @Test func burntInSubtitlesBringThePicturesToHostMemory() throws {
        // Progressive H.264 on Tiger Lake would stay on the device; libass draws in host memory.
        let caps = try Self.probed("intel-ihd-tigerlake.profile", deinterlacing: ["Bob", "MotionAdaptive"])
        var job = Self.interlacedJob(interlaced: false)
        job.burnsSubtitles = true
        let decision = try job.decide(policy: .auto, capabilities: caps, problem: nil)
        #expect(decision.path == .hybrid && decision.decodesOnDevice && decision.encodesOnDevice && !decision.scalesOnDevice, "\(decision.reason)")
        #expect(decision.burningInSubtitles == .host)
        #expect(decision.reason.contains("text subtitles are burnt in by libass on the CPU"), "\(decision.reason)")
        // Interlaced too: deinterlaced by bwdif where the subtitles are drawn, not on the device.
        var interlaced = Self.interlacedJob()
        interlaced.burnsSubtitles = true
        let both = try interlaced.decide(policy: .auto, capabilities: caps, problem: nil)
        #expect(both.deinterlacing == .host && both.burningInSubtitles == .host && !both.scalesOnDevice, "\(both.reason)")
        let off = try job.decide(policy: .off, capabilities: caps, problem: nil)
        #expect(off.burningInSubtitles == .host && off.reason.hasSuffix("given burnt-in subtitles (text by libass, bitmaps blended) on the CPU"), "\(off.reason)")
    }

    /// A video processor that takes RGBA and blends by premultiplied alpha (iHD's `VpHal`
    /// does both) draws bitmap subtitles as a layer: the pictures stay on the device, interlaced
    /// ones deinterlaced there too. One that cannot, or whose pipeline is unknown, blends them on the CPU.
    @Test func bitmapSubtitlesStayOnTheDeviceWhereItsVideoProcessorBlendsByAlpha() throws {
        func caps(blendFlags: UInt32, inputs: [String] = ["NV12", "P010", "RGBA", "BGRA"]) throws -> DeviceCapabilities {
            var caps = try Self.probed("intel-ihd-tigerlake.profile", deinterlacing: ["Bob", "MotionAdaptive"])
            caps.videoProcessing?.pipeline = PipelineCapabilities(inputPixelFormats: inputs, outputPixelFormats: ["NV12", "P010"], minInputSize: nil,
                                                                  maxInputSize: nil, minOutputSize: nil, maxOutputSize: nil,
                                                                  rotationFlags: 1, mirrorFlags: 0, blendFlags: blendFlags)
            return caps
        }
        var progressive = Self.interlacedJob(interlaced: false)
        progressive.burnsSubtitles = true
        progressive.subtitlesAreBitmaps = true
        let drawn = try progressive.decide(policy: .auto, capabilities: try caps(blendFlags: 3), problem: nil)
        #expect(drawn.path == .hardware && drawn.scalesOnDevice && drawn.burningInSubtitles == .device, "\(drawn.reason)")
        #expect(drawn.reason.contains("bitmap subtitles drawn as a VPP layer"), "\(drawn.reason)")
        var interlaced = Self.interlacedJob()
        interlaced.burnsSubtitles = true
        interlaced.subtitlesAreBitmaps = true
        let both = try interlaced.decide(policy: .auto, capabilities: try caps(blendFlags: 3), problem: nil)
        #expect(both.path == .hardware && both.deinterlacing == .device && both.burningInSubtitles == .device, "\(both.reason)")
        for (flags, inputs, why) in [(UInt32(1), ["NV12", "RGBA"], "cannot blend RGBA pictures by their premultiplied alpha"),
                                     (3, ["NV12", "P010"], "cannot blend RGBA pictures by their premultiplied alpha")] {
            let blended = try progressive.decide(policy: .auto, capabilities: try caps(blendFlags: flags, inputs: inputs), problem: nil)
            #expect(blended.path == .hybrid && !blended.scalesOnDevice && blended.burningInSubtitles == .host, "\(blended.reason)")
            #expect(blended.reason.contains("bitmap subtitles are blended on the CPU: the device's video processor \(why)"), "\(blended.reason)")
        }
        let unknown = try progressive.decide(policy: .auto, capabilities: try Self.probed("intel-ihd-tigerlake.profile", deinterlacing: nil), problem: nil)
        #expect(unknown.burningInSubtitles == .host && unknown.reason.contains("has no known pipeline capabilities"), "\(unknown.reason)")
    }

    @Test func pathsWithPicturesInHostMemoryFilterThere() throws {
        let caps = try Self.probed("intel-ihd-tigerlake.profile", deinterlacing: ["Bob", "MotionAdaptive"])
        // Forced hybrid (software decode, upload, device encode): bwdif runs on the decoded pictures.
        let hybrid = try Self.interlacedJob().decide(policy: .hybrid, capabilities: caps, problem: nil)
        #expect(hybrid.path == .hybrid && !hybrid.decodesOnDevice && hybrid.deinterlacing == .host)
        #expect(hybrid.reason.hasSuffix("; pictures deinterlaced by bwdif on the CPU"), "\(hybrid.reason)")
        // NVIDIA decodes only: downloaded pictures are deinterlaced and encoded in software.
        let nvidia = try Self.interlacedJob(toneMapsHDR: true).decide(policy: .auto, capabilities: try Self.capabilities("nvidia-vaapi-driver-direct.profile"), problem: nil)
        #expect(nvidia.path == .hybrid && nvidia.decodesOnDevice && !nvidia.encodesOnDevice)
        #expect(nvidia.deinterlacing == .host && nvidia.toneMapping == .host)
        #expect(nvidia.reason.hasSuffix("; pictures deinterlaced by bwdif and tone-mapped by zscale and tonemap on the CPU"), "\(nvidia.reason)")
        let off = try Self.interlacedJob().decide(policy: .off, capabilities: caps, problem: nil)
        #expect(off.path == .software && off.deinterlacing == .host)
    }

    @Test func nvidiaDecodesOnlyAndEncodesInSoftware() throws {
        let decision = try Self.job("h264", (1920, 1080), to: .h264, (1280, 720))
            .decide(policy: .auto, capabilities: try Self.capabilities("nvidia-vaapi-driver-direct.profile"), problem: nil)
        #expect(decision.path == .hybrid)
        #expect(decision.decodesOnDevice && !decision.encodesOnDevice)
    }
}

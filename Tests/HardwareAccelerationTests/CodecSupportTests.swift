import HardwareAcceleration
import MediaCore
import Testing

@Suite
struct CodecSupportTests {
    func capabilities(_ file: String) throws -> DeviceCapabilities {
        try #require(try Fixtures.capture(file).capabilities)
    }

    func verdict(_ caps: DeviceCapabilities, _ job: String) throws -> Verdict {
        try #require(caps.verdicts().first { $0.job == job })
    }

    @Test func arcEncodesOnlyThroughLowPowerAndAV1EncodeIsSoftware() throws {
        let caps = try capabilities("intel-ihd-arc-dg2.txt")
        let h264 = try #require(caps.support(for: .h264)?.encode)
        #expect(h264.lowPowerOnly)
        #expect(h264.ffmpegEncoder == "h264_vaapi")
        let av1 = try #require(caps.support(for: .av1)?.encode)
        #expect(av1.ffmpegEncoder == nil && !av1.usable)
        let av1Encode = try verdict(caps, "AV1 encode")
        #expect(av1Encode.path == .software)
        #expect(av1Encode.notes.contains { $0.contains("FFmpeg 5.1 has no VA-API AV1 encoder") })
        let hevc = try verdict(caps, "H.264 1080p → HEVC")
        #expect(hevc.path == .fullHardware)
        #expect(hevc.notes.contains { $0.contains("low_power=1") })
    }

    @Test func tigerLakeHasFullAndLowPowerEncode() throws {
        let caps = try capabilities("intel-ihd-tigerlake.txt")
        let hevc = try #require(caps.support(for: .hevc))
        #expect(hevc.encode?.full == true && hevc.encode?.lowPower == true && hevc.encode?.lowPowerOnly == false)
        #expect(hevc.decode?.bitDepths == [8, 10, 12])
        #expect(hevc.decode?.chroma == ["4:2:0", "4:2:2", "4:4:4"])
        // vainfo lists no decode size limit: that is usual, and no caveat in the verdict.
        #expect(try verdict(caps, "H.264 1080p → HEVC").description == "H.264 1080p → HEVC: full hardware path")
        #expect(try verdict(caps, "AV1 decode 1080p").path == .fullHardware)
        #expect(try verdict(caps, "AV1 encode").notes == ["no AV1 encode entry point"])
    }

    @Test func haswellHasNoHEVC() throws {
        let caps = try capabilities("intel-i965-haswell.txt")
        #expect(caps.support(for: .hevc) == nil)
        #expect(try verdict(caps, "H.264 1080p → HEVC").path == .hardwareDecode)
        #expect(try verdict(caps, "VP9 1080p → H.264").path == .hardwareEncode)
        let main10 = try verdict(caps, "HEVC Main10 2160p → HEVC Main10")
        #expect(main10.path == .software)
        #expect(main10.notes == ["no HEVC decode entry point", "no HEVC encode entry point"])
    }

    @Test func nvidiaDecodesButNeverEncodes() throws {
        let caps = try capabilities("nvidia-vaapi-driver-direct.txt")
        #expect(caps.codecs.allSatisfy { $0.encode == nil })
        #expect(try verdict(caps, "H.264 1080p → H.264").path == .hardwareDecode)
        #expect(try verdict(caps, "HEVC Main10 2160p → HEVC Main10").path == .hardwareDecode)
    }

    @Test func rdna2RateControlsAndBitDepthsComeFromTheAttributes() throws {
        let caps = try capabilities("amd-radeonsi-rdna2-rx6750xt-all.txt")
        let h264 = try #require(caps.support(for: .h264)?.encode)
        #expect(h264.rateControls == ["CBR", "VBR", "CQP"])
        // H.264 High lists YUV420_10 as an RT format, but no H.264 profile here is 10-bit.
        #expect(h264.bitDepths == [8])
        #expect(caps.support(for: .vp9)?.decode?.bitDepths == [8, 10])
        #expect(caps.support(for: .hevc)?.encode?.bitDepths == [8, 10])
        let brief = try capabilities("amd-radeonsi-rdna2-rx6750xt.txt")
        #expect(brief.support(for: .h264)?.encode?.rateControls == [])
    }

    @Test func sizeLimitsDecideTheVerdictWhenReported() {
        let pair = [ConfigAttribute(type: .maxPictureWidth, value: 1920), ConfigAttribute(type: .maxPictureHeight, value: 1088)]
        let caps = DeviceCapabilities(vendor: "test", driver: nil, apiVersion: nil, configs: [
            ConfigCapabilities(profile: .hevcMain10, entrypoint: .vld, attributes: pair),
            ConfigCapabilities(profile: .hevcMain10, entrypoint: .encSlice, attributes: pair),
        ])
        let verdict = caps.verdicts().first { $0.job == "HEVC Main10 2160p → HEVC Main10" }
        #expect(verdict?.path == .software)
        #expect(verdict?.notes == ["HEVC decode limited to 1920x1088", "HEVC encode limited to 1920x1088"])
        #expect(caps.support(for: .hevc)?.decode?.maxSize == Size(width: 1920, height: 1088))
    }

    @Test func noDeviceMeansSoftwareEverywhere() {
        let report = DeviceReport(device: "/dev/dri", diagnosis: DeviceDiagnosis(kind: .noDeviceDirectory, device: "/dev/dri", message: "none"))
        #expect(report.verdicts.count == TranscodeJob.common.count)
        #expect(report.verdicts.allSatisfy { $0.path == .software })
        #expect(!ProbeReport(source: "devices", devices: [report], software: nil).hardwareAvailable)
    }
}

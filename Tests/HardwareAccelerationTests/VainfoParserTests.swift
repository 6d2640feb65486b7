import Foundation
import HardwareAcceleration
import Testing

@Suite
struct VainfoParserTests {
    typealias Pair = DeviceProfile.Pair

    /// Pair counts per fixture, counted by hand from the files (one line or block per pair).
    static let pairCounts: [String: Int] = [
        "amd-radeonsi-rdna2-rx6750xt-all.txt": 20,
        "amd-radeonsi-rdna2-rx6750xt.txt": 20,
        "amd-radeonsi-rdna3-rx7900xtx.txt": 15,
        "intel-i965-haswell.txt": 19,
        "intel-ihd-arc-dg2.txt": 41,
        "intel-ihd-tigerlake.txt": 55,
        "nvidia-vaapi-driver-direct.txt": 18,
    ]

    @Test func everyFixtureIsRead() throws {
        let files = try Fixtures.vainfoFiles()
        #expect(files.count == 10)
        for file in files {
            let capture = try Fixtures.capture(file)
            if file.hasPrefix("failing-") {
                #expect(capture.profile.initFailure != nil, "\(file)")
                #expect(capture.profile.configs.isEmpty, "\(file)")
                #expect(capture.diagnosis != nil, "\(file)")
            } else {
                #expect(capture.profile.configs.count == Self.pairCounts[file], "\(file)")
                #expect(capture.profile.vendor?.isEmpty == false, "\(file)")
                #expect(capture.diagnosis == nil, "\(file)")
            }
        }
    }

    @Test func tigerLakeListsFullAndLowPowerEncodeAndFEI() throws {
        let profile = try Fixtures.capture("intel-ihd-tigerlake.txt").profile
        #expect(profile.vendor == "Intel iHD driver for Intel(R) Gen Graphics - 22.3.1 ()")
        #expect(profile.driver == "iHD")
        #expect(profile.api == "1.14")
        #expect(profile.configs.first == Pair(.none, .videoProc))
        #expect(profile.configs[1] == Pair(.none, .stats))
        #expect(profile.configs.last == Pair(VideoProfile(rawValue: "VAProfileHEVCSccMain444_10"), .encSliceLP))
        for entrypoint in [Entrypoint.vld, .encSlice, .fei, .encSliceLP] {
            #expect(profile.configs.contains(Pair(.h264Main, entrypoint)))
        }
        #expect(profile.configs.contains(Pair(.av1Profile0, .vld)))
        #expect(!profile.configs.contains(Pair(.av1Profile0, .encSliceLP)))
        #expect(profile.attributes.isEmpty)
    }

    @Test func arcIsLowPowerOnlyWithAV1Encode() throws {
        let profile = try Fixtures.capture("intel-ihd-arc-dg2.txt").profile
        #expect(profile.api == "1.20")
        #expect(profile.configs.contains(Pair(.av1Profile0, .encSliceLP)))
        #expect(!profile.configs.contains { $0.entrypoint == .encSlice })
        #expect(profile.configs.contains(Pair(.jpegBaseline, .encPicture)))
    }

    @Test func haswellFallsThroughToDRM() throws {
        let profile = try Fixtures.capture("intel-i965-haswell.txt").profile
        #expect(profile.vendor == "Intel i965 driver for Intel(R) Haswell Desktop - 2.4.1")
        #expect(profile.driver == "i965")
        #expect(profile.api == "1.22")
        #expect(profile.configs.contains(Pair(VideoProfile(rawValue: "VAProfileH264StereoHigh"), .encSlice)))
        #expect(!profile.configs.contains { $0.profile.rawValue.hasPrefix("VAProfileHEVC") })
    }

    @Test func nvidiaIsDecodeOnly() throws {
        let profile = try Fixtures.capture("nvidia-vaapi-driver-direct.txt").profile
        #expect(profile.vendor == "VA-API NVDEC driver [direct backend]")
        #expect(profile.driver == "nvidia")
        #expect(profile.configs.allSatisfy { $0.entrypoint == .vld })
        #expect(profile.configs.contains(Pair(VideoProfile(rawValue: "VAProfileHEVCMain444_12"), .vld)))
    }

    @Test func rdna2BriefAndAllListTheSamePairs() throws {
        let brief = try Fixtures.capture("amd-radeonsi-rdna2-rx6750xt.txt").profile
        let all = try Fixtures.capture("amd-radeonsi-rdna2-rx6750xt-all.txt").profile
        #expect(brief.configs == all.configs)
        #expect(brief.vendor == all.vendor)
        #expect(brief.api == "1.18")
        #expect(brief.driver == "radeonsi")
        #expect(brief.attributes.isEmpty)
        #expect(all.attributes.count == 58)  // 15 configs with RTFormat only, 3 H.264 encoders × 9, 2 HEVC encoders × 8
    }

    @Test func rdna2AllAttributesAreReadBackToTheirValues() throws {
        let capture = try Fixtures.capture("amd-radeonsi-rdna2-rx6750xt-all.txt")
        #expect(capture.warnings.isEmpty)
        let caps = try #require(capture.capabilities)
        let h264 = try #require(caps.config(.h264High, .encSlice))
        #expect(h264[.rtFormat] == 0x0000_0101)
        #expect(h264.rateControls == [.cbr, .vbr, .cqp])
        #expect(h264[.encPackedHeaders] == 0)
        #expect(h264.maxReferenceFrames?.l0 == 1 && h264.maxReferenceFrames?.l1 == 0)
        #expect(h264.maxSlices == 128)
        #expect(h264[.encSliceStructure] == 0x5)
        #expect(h264.qualityLevels == 32)
        #expect(h264[.encRateControlExt] == 0x103)
        #expect(h264[.maxFrameSize] == 0x1)
        #expect(caps.config(.hevcMain, .encSlice)?.packedHeaders == .sequence)
        #expect(caps.config(.none, .videoProc)?[.rtFormat] == 0x0002_0117)
        #expect(caps.config(.vp9Profile2, .vld)?.rtFormats == .yuv420_10)
        #expect(caps.config(.jpegBaseline, .vld)?.rtFormats == [.yuv420, .yuv422, .yuv444, .yuv400])
    }

    @Test func spacesInsteadOfTabParseTheSame() throws {
        let text = try Fixtures.vainfoText("amd-radeonsi-rdna2-rx6750xt.txt")
        #expect(text.contains(":\t"))
        let spaced = text.replacingOccurrences(of: ":\t", with: ":   ")
        let squeezed = text.replacingOccurrences(of: " *:\t", with: " : ", options: .regularExpression)
        let original = try Fixtures.capture(text: text, path: "x/amd.txt").profile
        #expect(try Fixtures.capture(text: spaced, path: "x/amd.txt").profile == original)
        #expect(try Fixtures.capture(text: squeezed, path: "x/amd.txt").profile == original)
        #expect(original.configs.count == 20)
    }

    @Test func forcedI965OnAlderLakeIsADriverInitFailure() throws {
        let capture = try Fixtures.capture("failing-i965-forced-on-alderlake-frigate.txt")
        #expect(capture.profile.initFailure?.status == .unknown)
        #expect(capture.profile.driver == "i965")
        #expect(capture.profile.api == "1.17")
        let diagnosis = try #require(capture.diagnosis)
        #expect(diagnosis.kind == .driverInitFailed)
        #expect(diagnosis.status == "VA_STATUS_ERROR_UNKNOWN")
        #expect(diagnosis.message.contains("'i965'"))
        #expect(diagnosis.remedy?.contains("LIBVA_DRIVER_NAME=i965") == true)
        #expect(diagnosis.remedy?.contains("intel-media-va-driver") == true)
    }

    @Test func haswellUnderWaylandIsADriverInitFailureNamingTheEGLError() throws {
        let diagnosis = try #require(try Fixtures.capture("failing-i965-haswell-wayland-vainitialize.txt").diagnosis)
        #expect(diagnosis.kind == .driverInitFailed)
        #expect(diagnosis.message.contains("i965_drv_video.so init failed"))
        #expect(diagnosis.remedy?.contains("wl_drm_interface") == true)
    }

    @Test func nvidiaWithoutDriverNameIsAnUndeterminedDriver() throws {
        let capture = try Fixtures.capture("failing-nvidia-vagetdrivernames.txt")
        #expect(capture.profile.driver == nil)
        let diagnosis = try #require(capture.diagnosis)
        #expect(diagnosis.kind == .driverUnknown)
        #expect(diagnosis.remedy?.contains("LIBVA_DRIVER_NAME") == true)
        #expect(diagnosis.remedy?.contains("nvidia") == true)
    }

    @Test func failingProfilesGiveTheSameDiagnosisKindAsTheirVainfo() throws {
        for file in try Fixtures.vainfoFiles() where file.hasPrefix("failing-") {
            let capture = try Fixtures.capture(file)
            let reread = try DeviceProfile(profileText: capture.profile.text, file: file)
            #expect(reread.diagnosis?.kind == capture.diagnosis?.kind, "\(file)")
        }
    }

    @Test func textThatIsNotVainfoIsRejectedNamingTheFile() {
        #expect(throws: ProfileFormatError.self) {
            try VainfoCapture(text: "hello\nworld\n", file: "notes.txt", name: "notes", source: "notes.txt")
        }
        do {
            _ = try VainfoCapture(text: "", file: "empty.txt", name: "empty", source: "empty.txt")
            Issue.record("empty text was accepted")
        } catch {
            #expect(error.description.hasPrefix("empty.txt: "))
        }
    }
}

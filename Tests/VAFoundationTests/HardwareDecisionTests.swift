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
                    sourceSize: PictureSize(width: sourceSize.0, height: sourceSize.1), targetCodec: target, targetBitDepth: bitDepth,
                    targetSize: PictureSize(width: targetSize.0, height: targetSize.1))
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

    @Test func nvidiaDecodesOnlyAndEncodesInSoftware() throws {
        let decision = try Self.job("h264", (1920, 1080), to: .h264, (1280, 720))
            .decide(policy: .auto, capabilities: try Self.capabilities("nvidia-vaapi-driver-direct.profile"), problem: nil)
        #expect(decision.path == .hybrid)
        #expect(decision.decodesOnDevice && !decision.encodesOnDevice)
    }
}

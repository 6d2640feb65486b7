import Foundation
import Testing
@testable import VAFoundation
import VATestSupport

/// `AssetVerifier` (`vaf verify`) on SoftVA: a file's video is decoded on the device, every
/// picture once and none copied to the host; a device failing mid-file has the file checked
/// again in software. Nested in `HardwareExportTests`, which keeps one SoftVA device at a time.
extension HardwareExportTests {
@Suite struct DeviceVerifyTests {
    @Test func videoIsDecodedOnTheDeviceOnceWithoutCopies() async throws {
        let dir = try TemporaryDirectory()
        let source = URL(fileURLWithPath: dir.file("source.mov"))
        try await HardwareExportTests.writeMJPEGSource(to: source)
        let counters = dir.file("counters.txt")
        let result = try await HardwareExportTests.withDevice(SoftVAOptions(countersPath: counters)) { device in
            let verifier = AssetVerifier(url: source)
            verifier.hardwareDevice = device
            return try await verifier.verify()
        }
        #expect(result.verdict == .ok, "\(result.problems)")
        #expect(result.decodedOnDevice)
        #expect(result.notes == ["video decoded on the device: damage inside pictures is not reported there (--hw off checks it in software)"], "\(result.notes)")
        let video = try #require(result.tracks.first { $0.mediaType == .video })
        #expect(video.frames == HardwareExportTests.frames)
        let driver = try SoftVACounters(path: counters)
        #expect(driver["decodes"] == UInt64(HardwareExportTests.frames), "each picture decoded once, on the device")
        #expect(driver["host_transfer_bytes"] == 0, "no picture copied to the host")
        #expect(driver["encodes"] == 0 && driver["vpp_ops"] == 0)
    }

    /// The device fails its 13th decode: the file is checked again in software and found whole.
    @Test func aDeviceFailingMidFileHasTheFileCheckedAgainInSoftware() async throws {
        let dir = try TemporaryDirectory()
        let source = URL(fileURLWithPath: dir.file("source.mov"))
        try await HardwareExportTests.writeMJPEGSource(to: source)
        let options = SoftVAOptions(failAfter: 12, failStatus: "VA_STATUS_ERROR_HW_BUSY", failOn: "decode")
        let result = try await HardwareExportTests.withDevice(options) { device in
            let verifier = AssetVerifier(url: source)
            verifier.hardwareDevice = device
            return try await verifier.verify()
        }
        #expect(result.verdict == .ok, "the device's failure is not the file's damage: \(result.problems)")
        #expect(!result.decodedOnDevice)
        #expect(result.notes.contains { $0.hasPrefix("checked again in software: the device's mjpeg decoder failed at") }, "\(result.notes)")
        #expect(result.tracks.first { $0.mediaType == .video }?.frames == HardwareExportTests.frames)
    }
}
}

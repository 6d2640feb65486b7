import ChildProcess
import Foundation
import Testing
@testable import VAFoundation
import VATestSupport
import HardwareAcceleration

/// The image generator on SoftVA: pictures decoded on the device and fitted by its video
/// processor come down once per image, at the image's size, and look like the CPU's images.
extension HardwareExportTests {
@Suite struct DeviceImageTests {
    @Test func imagesAreDecodedAndScaledOnTheDeviceWithOneDownloadEach() async throws {
        let dir = try TemporaryDirectory()
        let source = URL(fileURLWithPath: dir.file("h264.mov"))
        try await HardwareExportTests.writeSource(to: source, settings: VideoSettings(codec: .h264, width: 640, height: 360, averageBitRate: 4_000_000))
        let times = [0, 7, 15, 29].map { MediaTime(value: Int64($0), timescale: 30) }
        func images(on device: VADevice?) async throws -> [(Image, MediaTime)] {
            let generator = AssetImageGenerator(asset: Asset(url: source))
            generator.maximumSize = Size(width: 161, height: 91)
            generator.requestedTimeToleranceBefore = .zero
            generator.requestedTimeToleranceAfter = .zero
            generator.hardwareDevice = device
            var made: [(Image, MediaTime)] = []
            for time in times { made.append(try await generator.image(at: time)) }
            return made
        }
        let counters = dir.file("counters.txt")
        try await HardwareExportTests.withDevice(SoftVAOptions(countersPath: counters)) { device in
            let drawn = try await images(on: device)
            let reference = try await images(on: nil)
            let driver = try SoftVACounters(path: counters)
            // 640x360 fitted in 161x91: 161x91 (90.6 rounded); the device's surface has even sides, 162x92.
            #expect(drawn.map { "\($0.0.width)x\($0.0.height)" } == Array(repeating: "161x91", count: times.count))
            #expect(drawn.map(\.1) == reference.map(\.1), "the same pictures: \(drawn.map(\.1)) against \(reference.map(\.1))")
            #expect(driver["h264_decodes"] >= 30 - 1, "decoded on the device: \(driver["h264_decodes"])")
            #expect(driver["vpp_ops"] == UInt64(times.count), "one VPP scale per image: \(driver["vpp_ops"])")
            // One download per image, of the fitted NV12 picture (162x92x1.5 bytes), never the decoded 640x360 one.
            #expect(driver["host_transfer_bytes"] == UInt64(times.count * 162 * 92 * 3 / 2), "bytes downloaded: \(driver["host_transfer_bytes"])")
            func difference(_ a: [UInt8], _ b: [UInt8]) -> Double {
                Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(max(a.count, 1))
            }
            for (index, ((image, _), (cpu, _))) in zip(drawn, reference).enumerated() {
                // SoftVA scales with libswscale's "bilinear" (a tent as wide as the scale factor): ffmpeg's
                // own bilinear scale of the same picture is the oracle. The CPU path scales bicubic.
                let frame = [0, 7, 15, 29][index]
                let oracle = try await ChildProcess.run(Tools.ffmpeg, ["-v", "error", "-nostdin", "-i", source.path, "-vf",
                                                                       "select=eq(n\\,\(frame)),scale=161:91:flags=bilinear,format=rgb24",
                                                                       "-frames:v", "1", "-f", "rawvideo", "-"], timeLimit: 60)
                let bilinear = [UInt8](oracle.standardOutput)
                try #require(bilinear.count == image.pixels.count)
                let againstOracle = difference(image.pixels, bilinear), againstCPU = difference(image.pixels, cpu.pixels)
                print("softva image \(index): mean RGB difference \(againstOracle) against ffmpeg's bilinear scale, \(againstCPU) against the CPU's bicubic image")
                // Measured on this pattern (high detail, shrunk 4x): 4.5 and 5.7. At full size the two paths give the
                // same image (1.8 from ffmpeg's, its own RGB rounding); a picture misplaced or turned differs by tens.
                #expect(againstOracle < 6, "image \(index): mean RGB difference \(againstOracle) against ffmpeg's bilinear scale")
                #expect(againstCPU < 7, "image \(index): mean RGB difference \(againstCPU) against the CPU's image")
            }
        }
    }
}
}

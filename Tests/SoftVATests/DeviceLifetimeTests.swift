import FFmpegSupport
import Foundation
import HardwareAcceleration
import Testing
import VATestSupport

/// `VADevice` is the one owner of a VA display: libavutil's context, the surface pools on it and
/// the video processor keep the display open after the device object is gone, and the display
/// is terminated once the last of them goes.
@Suite struct DeviceLifetimeTests {
    @Test func surfacesAndTheVideoProcessorOutliveTheDeviceAndTheDisplayEndsWithThem() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        weak var display: AnyObject?
        do {
            let (source, scaler) = try Self.poolsWhoseDeviceIsGone(on: env, watching: &display)
            #expect(display != nil, "the display was terminated while its surfaces were still held")

            let host = try Frame(width: 32, height: 32, pixelFormat: .nv12)
            try Self.fill(host, luma: 200, chroma: 90)
            let scaled = try scaler.scale(try source.upload(host), fit: .stretch)
            #expect(scaled.width == 64 && scaled.height == 64)
            let back = try scaled.transferToHost()
            let luma = try #require(back.baseAddress(plane: 0)).assumingMemoryBound(to: UInt8.self)
            let chroma = try #require(back.baseAddress(plane: 1)).assumingMemoryBound(to: UInt8.self)
            #expect(abs(Int(luma[back.bytesPerRow(plane: 0) * 40 + 40]) - 200) <= 2, "luma \(luma[back.bytesPerRow(plane: 0) * 40 + 40])")
            #expect(abs(Int(chroma[back.bytesPerRow(plane: 1) * 20 + 20]) - 90) <= 2, "chroma \(chroma[back.bytesPerRow(plane: 1) * 20 + 20])")
        }
        #expect(display == nil, "the display outlived its last surface and VPP context")
    }

    /// A 32x32 pool to upload into and a scaler into a 64x64 pool, both on a device opened here
    /// and let go before they return.
    private static func poolsWhoseDeviceIsGone(on env: SoftVAEnvironment,
                                               watching display: inout AnyObject?) throws -> (SurfacePool, SurfaceScaler) {
        let device = try env.withProcessEnvironment { try VADevice(env.display.name) }
        display = device.hardware.displayOwner
        let source = try SurfacePool(device: device.hardware, width: 32, height: 32, softwareFormat: .nv12, capacity: 2)
        let output = try SurfacePool(device: device.hardware, width: 64, height: 64, softwareFormat: .nv12, capacity: 2)
        return (source, try SurfaceScaler(output: output))
    }

    /// Sets every luma sample of an NV12 frame to `luma`, and both chroma samples to `chroma`.
    private static func fill(_ frame: Frame, luma: UInt8, chroma: UInt8) throws {
        for (plane, value) in [(0, luma), (1, chroma)] {
            let base = try #require(frame.baseAddress(plane: plane)).assumingMemoryBound(to: UInt8.self)
            let rows = plane == 0 ? frame.height : frame.height / 2
            for y in 0..<rows {
                (base + y * frame.bytesPerRow(plane: plane)).initialize(repeating: value, count: frame.width)
            }
        }
    }
}

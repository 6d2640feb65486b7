import BenchKit
import Foundation
import Testing
import VATestSupport

/// Our PSNR and SSIM against FFmpeg's `psnr` and `ssim` filters, the oracle, on the same frames.
@Suite struct QualityMeterTests {
    static let ffmpeg = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// A noisy moving pattern, and the same with deterministic distortion of `strength`.
    static func clip(width: Int, height: Int, frames: Int, distortion strength: Int) -> [UInt8] {
        let frameBytes = PlaneView.yuv420pByteCount(width: width, height: height)
        var bytes = [UInt8](repeating: 0, count: frameBytes * frames)
        var seed: UInt32 = 12345
        for f in 0..<frames {
            for i in 0..<frameBytes {
                let x = i % width, y = i / width
                var value = 40 + (x * 3 + y * 2 + f * 5) % 170 + Int((UInt32(truncatingIfNeeded: i &* 2_654_435_761) >> 28))
                if strength > 0 {
                    seed = seed &* 1_664_525 &+ 1_013_904_223
                    value += Int(seed >> 27) % (2 * strength + 1) - strength
                    if (x / 8 + y / 8) % 5 == 0 { value = (value + 128) / 2 }
                }
                bytes[f * frameBytes + i] = UInt8(clamping: value)
            }
        }
        return bytes
    }

    /// Our meter over every frame pair.
    static func measure(_ a: [UInt8], _ b: [UInt8], width: Int, height: Int) throws -> QualitySummary {
        let frameBytes = PlaneView.yuv420pByteCount(width: width, height: height)
        var meter = QualityMeter()
        try a.withUnsafeBufferPointer { pa in
            try b.withUnsafeBufferPointer { pb in
                for f in 0..<(a.count / frameBytes) {
                    let fa = UnsafeBufferPointer(rebasing: pa[f * frameBytes..<(f + 1) * frameBytes])
                    let fb = UnsafeBufferPointer(rebasing: pb[f * frameBytes..<(f + 1) * frameBytes])
                    try meter.add(PlaneView.yuv420p(fa, width: width, height: height), PlaneView.yuv420p(fb, width: width, height: height))
                }
            }
        }
        return try #require(meter.summary)
    }

    /// FFmpeg's summary line for `filter` over the two raw clips, as name → value.
    static func oracle(_ filter: String, _ a: URL, _ b: URL, width: Int, height: Int) throws -> [String: Double] {
        let raw = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "\(width)x\(height)"]
        let child = try ProcessResult.run(try #require(ffmpeg), ["-hide_banner", "-nostdin"] + raw + ["-i", a.path] + raw + ["-i", b.path]
            + ["-lavfi", "[0:v][1:v]\(filter)", "-f", "null", "-"])
        let text = child.stderr
        let line = try #require(text.split(separator: "\n").last { $0.contains("Parsed_\(filter)") }, "\(text)")
        var values: [String: Double] = [:]
        // "PSNR y:34.1 u:35.2 v:35.0 average:34.5 min:… max:…" or "SSIM Y:0.91 (10.5) U:… All:0.93 (11.6)"
        for token in line.split(separator: " ") {
            let parts = token.split(separator: ":", maxSplits: 1)
            if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
        }
        return values
    }

    @Test(.disabled(if: ffmpeg == nil, "ffmpeg is not installed"),
          arguments: [(96, 64, 3, 6), (98, 66, 2, 12), (160, 90, 2, 2)])
    func psnrAndSSIMMatchFFmpegsFilters(width: Int, height: Int, frames: Int, strength: Int) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("bench-quality-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let reference = Self.clip(width: width, height: height, frames: frames, distortion: 0)
        let distorted = Self.clip(width: width, height: height, frames: frames, distortion: strength)
        let a = dir.appendingPathComponent("a.yuv"), b = dir.appendingPathComponent("b.yuv")
        try Data(distorted).write(to: a)
        try Data(reference).write(to: b)

        let ours = try Self.measure(distorted, reference, width: width, height: height)
        #expect(ours.frames == frames)
        let psnr = try Self.oracle("psnr", a, b, width: width, height: height)
        #expect(abs(try #require(ours.psnrY) - (try #require(psnr["y"]))) < 0.1, "Y \(ours.psnrY!) vs \(psnr)")
        #expect(abs(try #require(ours.psnrU) - (try #require(psnr["u"]))) < 0.1)
        #expect(abs(try #require(ours.psnrV) - (try #require(psnr["v"]))) < 0.1)
        #expect(abs(ours.psnr - (try #require(psnr["average"]))) < 0.1, "overall \(ours.psnr) vs \(psnr)")

        let ssim = try Self.oracle("ssim", a, b, width: width, height: height)
        #expect(abs(try #require(ours.ssimY) - (try #require(ssim["Y"]))) < 0.001, "Y \(ours.ssimY!) vs \(ssim)")
        #expect(abs(try #require(ours.ssimU) - (try #require(ssim["U"]))) < 0.001)
        #expect(abs(try #require(ours.ssimV) - (try #require(ssim["V"]))) < 0.001)
        #expect(abs(ours.ssim - (try #require(ssim["All"]))) < 0.001, "all \(ours.ssim) vs \(ssim)")
    }

    @Test func identicalPicturesGetThePSNRCapAndSSIMOne() throws {
        let clip = Self.clip(width: 64, height: 48, frames: 2, distortion: 0)
        let summary = try Self.measure(clip, clip, width: 64, height: 48)
        #expect(summary.psnr == QualityMeter.psnrCap && summary.psnrY == QualityMeter.psnrCap)
        #expect(abs(summary.ssim - 1) < 1e-12 && summary.ssimY == 1)
    }

    @Test func overallPSNRWeightsLumaFourTimesEachChromaPlane() throws {
        // Errors of 1 in Y, 2 in U and 4 in V: MSEs 1, 4 and 16; 4:2:0 with even sizes weighs
        // them (4·1 + 4 + 16) / 6 = 4, as FFmpeg weights planes by their sample counts.
        let (width, height) = (32, 32)
        let reference = [UInt8](repeating: 100, count: PlaneView.yuv420pByteCount(width: width, height: height))
        var distorted = reference
        let luma = width * height, chroma = luma / 4
        for i in 0..<luma { distorted[i] = 101 }
        for i in luma..<(luma + chroma) { distorted[i] = 102 }
        for i in (luma + chroma)..<(luma + 2 * chroma) { distorted[i] = 96 }
        let summary = try Self.measure(distorted, reference, width: width, height: height)
        #expect(abs(summary.psnr - 10 * log10(255.0 * 255 / 4)) < 1e-9)
        #expect(abs(try #require(summary.psnrY) - 10 * log10(255.0 * 255)) < 1e-9)
        #expect(abs(try #require(summary.psnrV) - 10 * log10(255.0 * 255 / 16)) < 1e-9)
    }

    @Test func mismatchedPlanesAreRefused() throws {
        let a = [UInt8](repeating: 1, count: PlaneView.yuv420pByteCount(width: 32, height: 32))
        let b = [UInt8](repeating: 1, count: PlaneView.yuv420pByteCount(width: 32, height: 16))
        var meter = QualityMeter()
        let refused: Bool = a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                (try? meter.add(PlaneView.yuv420p(pa, width: 32, height: 32), PlaneView.yuv420p(pb, width: 32, height: 16))) == nil
            }
        }
        #expect(refused)
        #expect(meter.frames == 0)
    }
}

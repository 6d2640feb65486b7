import Foundation
import Testing
import VATestSupport

/// Paths and helpers shared by the SoftVA tests.
enum Fixtures {
    static let directory: String = {
        let file = URL(fileURLWithPath: #filePath)
        return file.deletingLastPathComponent().appendingPathComponent("Fixtures").path
    }()

    static func path(_ name: String) -> String { directory + "/" + name }

    /// The first 10 frames (stream copy) of the shared Kodak camera AVI: MJPEG 4:2:2, 320x240.
    static let kodakAVI = path("kodak_10frames.avi")
    static let kodakAVIFrames = 10
    /// A real 1920x1080 picture (first frame of the shared pymediainfo sample), as a JPEG.
    static let picture1080p = path("frame_1080p.jpg")
    /// Real vainfo output of an Intel Tiger Lake iHD device.
    static let tigerLakeVainfo = path("intel-ihd-tigerlake.vainfo.txt")
}

enum Tools {
    static let ffmpeg = "/usr/bin/ffmpeg"
    static let ffprobe = "/usr/bin/ffprobe"
    static let vainfo = "/usr/bin/vainfo"
}

/// A temporary folder removed when the value goes away.
final class TemporaryDirectory {
    let path: String

    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("softva-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs a program without SoftVA's environment (oracles: software ffmpeg, ffprobe).
@discardableResult
func runChecked(_ executable: String, _ arguments: [String]) throws -> ProcessResult {
    let result = try ProcessResult.run(executable, arguments)
    if !result.succeeded {
        Issue.record("\(executable) \(arguments.joined(separator: " ")) failed with \(result.status): \(result.stderr.suffix(2000))")
    }
    return result
}

/// Per-sample comparison of two byte buffers.
struct SampleDifference: CustomStringConvertible {
    var maximum = 0
    var total = 0
    var count = 0
    var mean: Double { count == 0 ? 0 : Double(total) / Double(count) }

    init(_ a: [UInt8], _ b: [UInt8], range: Range<Int>? = nil, stride step: Int = 1) {
        let r = range ?? 0..<min(a.count, b.count)
        for i in Swift.stride(from: r.lowerBound, to: r.upperBound, by: step) {
            let d = abs(Int(a[i]) - Int(b[i]))
            maximum = max(maximum, d)
            total += d
            count += 1
        }
    }

    var description: String { "max \(maximum), mean \(String(format: "%.4f", mean)) over \(count) samples" }
}

/// PSNR in dB of b against a (8-bit samples).
func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
    precondition(a.count == b.count)
    var sum = 0.0
    for i in 0..<a.count {
        let d = Double(Int(a[i]) - Int(b[i]))
        sum += d * d
    }
    let mse = sum / Double(a.count)
    return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
}

func readBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Counts the video frames a file holds, decoding them with ffprobe (software).
func countFrames(_ path: String) throws -> Int? {
    let r = try runChecked(Tools.ffprobe, ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                           "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path])
    return Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
}

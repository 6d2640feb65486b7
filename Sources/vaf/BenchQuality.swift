import BenchKit
import ChildProcess
import Dispatch
import Foundation
import VAFoundation

/// Quality of a job's output against its source, computed by our own code (BenchKit's
/// QualityMeter) on frames decoded by our AssetReader as 8-bit yuv420p: the output at its own
/// size against a reference that ffmpeg scaled to that size (bicubic, losslessly stored as
/// FFV1), so our own scaler is never its own judge.
enum BenchQuality {
    /// Why quality could not be measured.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// PSNR and SSIM of `output` against `source`. Frames are paired by timestamp (each clip's
    /// first frame at 0): each output frame meets the source frame on screen at its time, so a
    /// 60 → 30 conversion is compared with the frames it kept.
    static func measure(output: URL, source original: URL, ffmpeg: String?, scratch: URL) async throws -> QualitySummary {
        guard let ffmpeg else { throw Failure(description: "quality needs ffmpeg to make an independent reference") }
        let outputTrack = try await primaryVideoTrack(output)
        let width = Int(outputTrack.naturalSize.width), height = Int(outputTrack.naturalSize.height)
        let source = scratch.appendingPathComponent("reference-\(UUID().uuidString).mkv")
        defer { try? FileManager.default.removeItem(at: source) }
        let made = try await ChildProcess.run(ffmpeg, ["-v", "error", "-y", "-i", original.path, "-map", "0:v:0",
                                                      "-vf", "scale=\(width):\(height):flags=bicubic,format=yuv420p",
                                                      "-fps_mode", "passthrough", "-c:v", "ffv1", source.path],
                                             scratchDirectory: scratch, timeLimit: 600)
        guard made.shellStatus == 0 else { throw Failure(description: "ffmpeg could not scale the reference: \(made.lastErrorLine ?? "status \(made.shellStatus)")") }
        let sourceTrack = try await primaryVideoTrack(source)
        let attributes = PixelBufferAttributes(pixelFormat: .yuv420p, width: width, height: height, scalingMode: .resize)
        let outputReader = AssetReader(asset: Asset(url: output))
        let outputFrames = try AssetReaderTrackOutput(track: outputTrack, outputSettings: .video(attributes))
        try outputReader.add(outputFrames)
        let sourceReader = AssetReader(asset: Asset(url: source))
        let sourceFrames = try AssetReaderTrackOutput(track: sourceTrack, outputSettings: .video(attributes))
        try sourceReader.add(sourceFrames)
        try outputReader.startReading()
        try sourceReader.startReading()
        // A quarter of a source frame absorbs timescale rounding between the two files.
        let tolerance = sourceTrack.minFrameDuration.isNumeric ? sourceTrack.minFrameDuration.seconds / 4 : 0.004
        return try await withLockedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .utility).async {
                continuation.resume(with: Result {
                    try compare(outputFrames, against: sourceFrames, width: width, height: height, tolerance: tolerance)
                })
            }
        }
    }

    /// The blocking pairing and comparison loop.
    private static func compare(_ outputFrames: AssetReaderOutput, against sourceFrames: AssetReaderOutput,
                                width: Int, height: Int, tolerance: Double) throws -> QualitySummary {
        var meter = QualityMeter()
        var outputStart: Double?, sourceStart: Double?
        var current: SampleBuffer?
        var pending = try sourceFrames.copyNextSampleBuffer()
        while let frame = try outputFrames.copyNextSampleBuffer() {
            let pts = frame.presentationTimeStamp.seconds
            if outputStart == nil { outputStart = pts }
            let t = pts - outputStart!
            // Advance the source to the last frame that starts at or before t.
            while let next = pending {
                let sourcePts = next.presentationTimeStamp.seconds
                if sourceStart == nil { sourceStart = sourcePts }
                guard sourcePts - sourceStart! <= t + tolerance else { break }
                current = next
                pending = try sourceFrames.copyNextSampleBuffer()
            }
            guard let reference = current, let a = frame.imageBuffer, let b = reference.imageBuffer else { break }
            try a.withUnsafePlanes { pa in
                try b.withUnsafePlanes { pb in
                    try meter.add(planeViews(pa, width: width), planeViews(pb, width: width))
                }
            }
        }
        guard let summary = meter.summary else { throw Failure(description: "no frame of the output could be paired with the source") }
        return summary
    }

    /// BenchKit's views of a yuv420p picture's planes.
    private static func planeViews(_ planes: [PixelBuffer.Plane], width: Int) -> [PlaneView] {
        planes.enumerated().map { i, plane in
            PlaneView(baseAddress: plane.baseAddress.assumingMemoryBound(to: UInt8.self), bytesPerRow: plane.bytesPerRow,
                      width: i == 0 ? width : (width + 1) / 2, height: plane.height)
        }
    }

    private static func primaryVideoTrack(_ url: URL) async throws -> AssetTrack {
        guard let track = ExportSession.primaryVideoTrack(try await Asset(url: url).load(.tracks)) else {
            throw Failure(description: "\(url.lastPathComponent) has no video track")
        }
        return track
    }
}

import Foundation
import VAFoundation

/// What one pass did, for the rate metrics.
struct PassCount: Sendable {
    var samples = 0
    var bytes = 0

    static func + (a: PassCount, b: PassCount) -> PassCount {
        PassCount(samples: a.samples + b.samples, bytes: a.bytes + b.bytes)
    }
}

/// One stage, or the whole pipeline, run once over a file through the public API only:
/// what an application built on VAFoundation would write.
enum PipelineStages {
    /// Every compressed sample of every track (reader outputs without settings), each track
    /// read by its own task as the reader expects.
    static func demux(_ url: URL) async throws -> PassCount {
        let asset = Asset(url: url)
        let reader = AssetReader(asset: asset)
        let outputs = try await asset.load(.tracks).map { try AssetReaderTrackOutput(track: $0, outputSettings: nil) }
        for output in outputs { try reader.add(output) }
        try reader.startReading()
        let count = try await withThrowingTaskGroup(of: PassCount.self) { group in
            for output in outputs {
                group.addTask {
                    var count = PassCount()
                    for try await sample in output.sampleBuffers {
                        count.samples += 1
                        count.bytes += sample.totalSampleSize
                    }
                    return count
                }
            }
            return try await group.reduce(PassCount(), +)
        }
        if let error = reader.error { throw error }
        return count
    }

    /// Every picture of the first video track, decoded into `attributes` (a size there means
    /// decode and scale).
    static func decode(_ url: URL, into attributes: PixelBufferAttributes) async throws -> PassCount {
        let asset = Asset(url: url)
        guard let track = try await asset.loadTracks(withMediaType: .video).first else {
            throw MediaError(.noTracks, "has no video track", path: url.path)
        }
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: .video(attributes))
        try reader.add(output)
        try reader.startReading()
        var count = PassCount()
        for try await sample in output.sampleBuffers {
            guard let picture = sample.imageBuffer else { continue }
            count.samples += 1
            count.bytes += picture.width * picture.height * 3 / 2
        }
        if let error = reader.error { throw error }
        return count
    }

    /// `pictures` appended `frameCount` times in turn at 30 fps through a pixel buffer adaptor,
    /// encoded with `settings` into `url`. The pictures are drawn beforehand, so this is the
    /// encoder and the muxer only.
    static func encode(_ pictures: [PixelBuffer], frameCount: Int, settings: VideoSettings, to url: URL) async throws -> PassCount {
        let writer = try AssetWriter(url: url, fileType: .mp4, overwritesExistingFile: true)
        let input = try AssetWriterInput(videoSettings: settings)
        let adaptor = try AssetWriterInputPixelBufferAdaptor(
            assetWriterInput: input,
            sourcePixelBufferAttributes: PixelBufferAttributes(pixelFormat: .yuv420p, width: settings.width, height: settings.height))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for index in 0..<frameCount {
            try await adaptor.append(pictures[index % pictures.count], withPresentationTime: MediaTime(value: Int64(index), timescale: 30))
        }
        input.markAsFinished()
        try await writer.finishWriting()
        return PassCount(samples: frameCount, bytes: Int(writer.bytesWritten))
    }

    /// Every track copied as it is (reader outputs and writer inputs without settings) into
    /// an mp4: demux and mux, no codec. Counts the compressed bytes read.
    static func remux(_ source: URL, to url: URL) async throws -> PassCount {
        let asset = Asset(url: source)
        let tracks = try await asset.load(.tracks)
        let reader = AssetReader(asset: asset)
        let writer = try AssetWriter(url: url, fileType: .mp4, overwritesExistingFile: true)
        var pairs: [(AssetReaderTrackOutput, AssetWriterInput)] = []
        for track in tracks where track.mediaType == .video || track.mediaType == .audio {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
            let input = try AssetWriterInput(mediaType: track.mediaType, outputSettings: nil, sourceFormatHint: track.formatDescription)
            try reader.add(output)
            try writer.add(input)
            pairs.append((output, input))
        }
        try reader.startReading()
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        let count = try await withThrowingTaskGroup(of: PassCount.self) { group in
            for (output, input) in pairs {
                group.addTask {
                    var count = PassCount()
                    for try await sample in output.sampleBuffers {
                        count.samples += 1
                        count.bytes += sample.totalSampleSize
                        try await input.append(sample)
                    }
                    input.markAsFinished()
                    return count
                }
            }
            return try await group.reduce(PassCount(), +)
        }
        if let error = reader.error { throw error }
        try await writer.finishWriting()
        return count
    }

    /// The whole export: `ExportSession` with the 1280x720 preset (decode, scale, encode
    /// H.264 and AAC, mux) into an mp4.
    static func export(_ source: URL, to url: URL) async throws -> ExportResult {
        let session = ExportSession(asset: Asset(url: source), preset: .preset1280x720)
        session.overwritesExistingFile = true
        return try await session.export(to: url, as: .mp4)
    }
}

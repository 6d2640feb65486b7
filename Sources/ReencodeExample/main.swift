// The guide's "Reencoding an Asset" on Linux: read the first video and audio track of a file
// with an AssetReader, encode them to H.264/AAC with an AssetWriter, one task per track, and
// cancel cleanly on Ctrl-C (the partial output is removed).
//
//     reencode-example INPUT OUTPUT.mp4
import Dispatch
import Foundation
import VAFoundation

@main
struct ReencodeExample {
    static func main() async {
        let arguments = CommandLine.arguments
        guard arguments.count == 3 else {
            FileHandle.standardError.write(Data("usage: reencode-example INPUT OUTPUT.mp4\n".utf8))
            exit(64)
        }
        let task = Task { try await reencode(URL(fileURLWithPath: arguments[1]), to: URL(fileURLWithPath: arguments[2])) }
        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
        interrupt.setEventHandler { task.cancel() }
        interrupt.resume()
        switch await task.result {
        case .success(let frames):
            print("\(arguments[2]): \(frames) video frames")
        case .failure(let error):
            FileHandle.standardError.write(Data("reencode-example: \(error)\n".utf8))
            exit(Task.isCancelled || (error as? MediaError)?.code == .cancelled ? 130 : 1)
        }
    }

    /// Re-encodes the first video and audio track; returns the number of video frames written.
    static func reencode(_ input: URL, to output: URL) async throws -> Int {
        let asset = Asset(url: input)
        let tracks = try await asset.load(.tracks)
        let video = tracks.first { $0.mediaType == .video && !$0.isAttachedPicture && $0.sampleCount > 0 }
        let audio = tracks.first { $0.mediaType == .audio && $0.sampleCount > 0 }
        guard video != nil || audio != nil else {
            throw MediaError(.noTracks, "has no video or audio track to re-encode", path: input.path)
        }
        let fileType = FileType(fileExtension: output.pathExtension) ?? .mp4
        let sourcePath = input.path

        let reader = AssetReader(asset: asset)
        let writer = try AssetWriter(url: output, fileType: fileType, overwritesExistingFile: true)
        var pairs: [(AssetReaderOutput, AssetWriterInput)] = []
        if let video, let format = video.formatDescription.video {
            let output = try AssetReaderTrackOutput(track: video, outputSettings: .video(PixelBufferAttributes(pixelFormat: .yuv420p)))
            let input = try AssetWriterInput(videoSettings: VideoSettings(
                codec: .h264, width: format.width & ~1, height: format.height & ~1, quality: 0.6,
                expectedSourceFrameRate: Double(video.nominalFrameRate)))
            input.transform = video.preferredTransform
            pairs.append((output, input))
        }
        if let audio, let format = audio.formatDescription.audio {
            let channels = min(format.channelCount, 2)
            let output = try AssetReaderTrackOutput(track: audio, outputSettings: .audio(LinearPCMSettings(
                channelCount: channels, bitDepth: 32, isFloat: true, isInterleaved: false)))
            pairs.append((output, try AssetWriterInput(audioSettings: AudioSettings(
                codec: .aac, sampleRate: format.sampleRate, channelCount: channels, bitRate: 64_000 * channels))))
        }
        for (output, input) in pairs {
            try reader.add(output)
            try writer.add(input)
        }
        try reader.startReading()
        try writer.startWriting()
        try writer.startSession(atSourceTime: try await asset.load(.tracks).map(\.timeRange.start).filter(\.isNumeric).min() ?? .zero)

        do {
            let frames = try await withThrowingTaskGroup(of: Int.self) { group in
                for (output, input) in pairs {
                    group.addTask {
                        var count = 0
                        var samples = 0
                        for try await sample in output.sampleBuffers {
                            try await input.append(sample)
                            samples += 1
                            count += input.mediaType == .video ? 1 : 0
                        }
                        guard samples > 0 else {
                            throw MediaError(.corruptOrTruncated, "no \(input.mediaType) samples could be read: the file is truncated or damaged", path: sourcePath)
                        }
                        input.markAsFinished()
                        return count
                    }
                }
                return try await group.reduce(0, +)
            }
            if let error = reader.error { throw error }
            try await writer.finishWriting()
            return frames
        } catch {
            reader.cancelReading()
            writer.cancelWriting()
            throw error
        }
    }
}

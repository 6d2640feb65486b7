import Foundation
import VAFoundation

guard CommandLine.arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: ExportExample INPUT OUTPUT.mp4\n".utf8))
    exit(64)
}
let session = ExportSession(asset: Asset(url: URL(fileURLWithPath: CommandLine.arguments[1])), preset: .preset1280x720)
do {
    let result = try await session.export(to: URL(fileURLWithPath: CommandLine.arguments[2]), as: .mp4)
    print("\(result.videoFrames) video frames, \(result.path) path: \(result.pathReason)")
} catch {
    FileHandle.standardError.write(Data("ExportExample: \(error)\n".utf8))
    exit(1)
}

import FFmpegSupport
import Foundation
import Testing

/// A file muxer replaces what is at its path, or, told not to truncate, writes over the file
/// from its start: what the writer does with the partial file it has just created empty, so
/// that ext4 does not start writing the whole file back at its close.
@Suite
struct MuxerOpeningTests {
    /// Copies the fixture's video packets into an MP4 at `path`; the muxer's bytes.
    static func copyVideo(to path: String, truncating: Bool) throws -> Int {
        let demuxer = try Demuxer(path: TestFiles.fixture("testsrc_320x240_30fps_3s.mp4").path)
        let video = try #require(demuxer.streams.first { $0.kind == .video })
        let muxer = try Muxer(formatName: "mp4", path: path, truncating: truncating)
        let output = try muxer.addStream(parameters: try demuxer.codecParameters(ofStream: video.index), timeBase: video.timeBase)
        try muxer.writeHeader()
        while true {
            // The muxer keeps each packet it is given until its turn: a new one for each read.
            let packet = Packet()
            guard try demuxer.readPacket(into: packet) == .packet else { break }
            guard packet.streamIndex == video.index else { continue }
            packet.streamIndex = output
            packet.rescaleTimestamps(from: video.timeBase, to: muxer.timeBase(ofStream: output))
            try muxer.write(packet)
        }
        try muxer.finish()
        return try Int(#require(FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).int64Value)
    }

    @Test func aMuxerReplacesTheFileAtItsPathOrWritesOverItFromItsStart() throws {
        let folder = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fresh = folder.appendingPathComponent("fresh.mp4").path
        let size = try Self.copyVideo(to: fresh, truncating: true)
        let written = try Data(contentsOf: URL(fileURLWithPath: fresh))

        let stale = Data(repeating: 0xA5, count: size + 4096)
        let replaced = folder.appendingPathComponent("replaced.mp4").path
        try stale.write(to: URL(fileURLWithPath: replaced))
        #expect(try Self.copyVideo(to: replaced, truncating: true) == size)
        #expect(try Data(contentsOf: URL(fileURLWithPath: replaced)) == written)

        let overwritten = folder.appendingPathComponent("overwritten.mp4").path
        try stale.write(to: URL(fileURLWithPath: overwritten))
        #expect(try Self.copyVideo(to: overwritten, truncating: false) == stale.count)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: overwritten))
        #expect(bytes.prefix(size) == written)
        #expect(bytes.dropFirst(size) == stale.dropFirst(size))
    }
}

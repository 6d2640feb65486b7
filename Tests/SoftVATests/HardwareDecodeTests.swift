import FFmpegSupport
import Foundation
import Testing
import VATestSupport

/// FFmpegSupport's decoder decodes into VA surfaces on SoftVA, and host transfers are counted.
@Suite struct HardwareDecodeTests {
    @Test func decoderOutputsSurfacesAndTransfersAreCounted() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let counters = FileManager.default.temporaryDirectory.appendingPathComponent("softva-\(UUID().uuidString).txt").path
        defer { try? FileManager.default.removeItem(atPath: counters) }
        let (surfaces, frames, transferred) = try env.withProcessEnvironment(SoftVAOptions(countersPath: counters)) {
            () throws -> (Int, Int, (count: Int, bytes: Int)) in
            let device = try HardwareDevice(openingVAAPIDevice: env.display.name)
            let demuxer = try Demuxer(path: Fixtures.kodakAVI)
            let stream = try #require(demuxer.streams.first { $0.kind == .video })
            let decoder = try Decoder(parameters: try demuxer.codecParameters(ofStream: stream.index), timeBase: stream.timeBase,
                                      hardware: device, extraHardwareFrames: 4)
            let before = HostTransferCounter.totals
            var surfaces = 0, frames = 0
            var firstOnHost: Frame?
            let packet = Packet()
            func drain() throws {
                while case .frame(let frame) = try decoder.receiveFrame() {
                    frames += 1
                    if frame.pixelFormat == .vaapi { surfaces += 1 }
                    if firstOnHost == nil, frame.pixelFormat == .vaapi { firstOnHost = try frame.transferToHost() }
                }
            }
            while try demuxer.readPacket(into: packet) == .packet {
                guard packet.streamIndex == stream.index else { continue }
                _ = try decoder.send(packet)
                try drain()
            }
            try decoder.sendEndOfStream()
            try drain()
            #expect(decoder.isDecodingToSurfaces)
            #expect(firstOnHost.map { $0.width == 320 && $0.height == 240 && !$0.pixelFormat.isHardware } == true)
            let after = HostTransferCounter.totals
            return (surfaces, frames, (after.count - before.count, after.bytes - before.bytes))
        }
        #expect(frames == Fixtures.kodakAVIFrames)
        #expect(surfaces == frames, "every frame stayed in a VA surface")
        #expect(transferred.count == 1, "only the one explicit transfer crossed to host memory")
        #expect(transferred.bytes >= 320 * 240, "\(transferred.bytes) bytes counted")
    }
}

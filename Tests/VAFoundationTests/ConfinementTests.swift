import FFmpegSupport
import Foundation
import Testing

/// Every FFmpeg context is used by one thread at a time, and that is checked: a call that
/// arrives while another call holds the context traps with the context's name, instead of
/// racing inside FFmpeg. Each exit test holds a wrapper's context as a second thread would,
/// then calls it.
@Suite struct ConfinementTests {
    static var movie: String { TestFiles.fixture("testsrc_320x240_30fps_3s.mp4").path }

    @Test func aContextIsTakenAndGivenBackByEachCall() throws {
        let demuxer = try Demuxer(path: Self.movie)
        let packet = Packet()
        for _ in 0..<10 { _ = try demuxer.readPacket(into: packet) }
        demuxer.use.begin()
        demuxer.use.end()
        #expect(try demuxer.readPacket(into: packet) == .packet, "the context was not given back after a call")
    }

    @Test func aDemuxerReadWhileAnotherCallHoldsItTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let demuxer = try Demuxer(path: ConfinementTests.movie)
            demuxer.use.begin()
            _ = try demuxer.readPacket(into: Packet())
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("Demuxer.readPacket(into:) was called while another call was using it"), "\(message)")
    }

    @Test func aDecoderFedWhileAnotherCallHoldsItTraps() async {
        await #expect(processExitsWith: .failure) {
            let demuxer = try Demuxer(path: ConfinementTests.movie)
            let stream = try #require(demuxer.streams.first { $0.kind == .video })
            let decoder = try Decoder(parameters: try demuxer.codecParameters(ofStream: stream.index), timeBase: stream.timeBase)
            let packet = Packet()
            _ = try demuxer.readPacket(into: packet)
            decoder.use.begin()
            _ = try decoder.send(packet)
        }
    }

    @Test func aDecoderDrainedWhileAnotherCallHoldsItTraps() async {
        await #expect(processExitsWith: .failure) {
            let demuxer = try Demuxer(path: ConfinementTests.movie)
            let stream = try #require(demuxer.streams.first { $0.kind == .video })
            let decoder = try Decoder(parameters: try demuxer.codecParameters(ofStream: stream.index), timeBase: stream.timeBase)
            decoder.use.begin()
            _ = try decoder.receiveFrame()
        }
    }

    @Test func aMuxerWrittenWhileAnotherCallHoldsItTraps() async {
        await #expect(processExitsWith: .failure) {
            let muxer = try Muxer(formatName: "mp4")
            muxer.use.begin()
            try muxer.write(Packet())
        }
    }

    @Test func anEncoderFedWhileAnotherCallHoldsItTraps() async {
        await #expect(processExitsWith: .failure) {
            var configuration = Encoder.Configuration()
            configuration.width = 64
            configuration.height = 64
            configuration.pixelFormat = .yuv420p
            configuration.timeBase = Rational(1, 30)
            let encoder = try Encoder(name: "mpeg4", configuration: configuration)
            encoder.use.begin()
            try encoder.sendEndOfStream()
        }
    }
}

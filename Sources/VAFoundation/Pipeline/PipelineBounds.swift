import Foundation

/// Every queue, window and pool size of the pipeline, in one place, each derived from what
/// needs it. A change here is a change of what an export holds in memory: measure it with
/// `Benchmarks/pipeline-vs-ffmpeg.sh` (peak RSS against ffmpeg's) and `vaf bench`.
enum PipelineBounds {
    // MARK: Writer inputs (the channel into the writer's thread)

    /// Pictures handed to the writer's thread and not yet encoded: the one being encoded. The
    /// edge holds the next one ready meanwhile, and the reader decodes the one after as soon as
    /// that is handed over, so decoding still overlaps encoding. Encoders take what they keep
    /// for reordering and look-ahead into their own buffers (x264, x265) or surfaces (VA-API)
    /// at `send`, so more queued here only holds more pictures (with 2, a 1080p→720p transcode
    /// peaked about 1.5 MB higher; its speed was within the run-to-run spread).
    static let writerQueuedPictures = 1
    /// Audio buffers and copied-packet batches handed to the writer's thread and not yet
    /// written: small, and cheap to run ahead by a few.
    static let writerQueuedSamples = 4
    /// Bytes an input may have queued on the writer's thread (pictures count their image
    /// size, packets their payload): the bound that holds when samples are large (4K pictures,
    /// batches of intra-only packets). One sample larger than this still goes through alone.
    static let writerQueuedBytes = 32 << 20

    /// The most samples input `mediaType` may have queued on the writer's thread.
    static func writerQueuedSamples(for mediaType: MediaType) -> Int {
        mediaType == .video ? writerQueuedPictures : writerQueuedSamples
    }

    /// How far an input may run ahead of the slowest unfinished input. Camera files store
    /// about a second of one track before the next (an iPhone movie opens with 1.02 s of
    /// audio), so a program copying such a file in file order must fit in the window.
    static let interleavingWindow = MediaTime(value: 2, timescale: 1)

    /// Audio packets this close to the newest one stay held by the writer, so that a later
    /// `endSession` can still trim them (the trim's reach).
    static let audioHoldback = MediaTime(value: 1, timescale: 1)

    // MARK: Export edges (reader output → writer input)

    /// How far (media time) one of an export's writer inputs may run ahead of another before
    /// its edge waits (the export's `AssetWriter.interleavingWindow`): what the
    /// demuxer queues for the track behind meanwhile is what an export holds in compressed packets.
    static let exportInterleavingWindow = MediaTime(value: 1, timescale: 2)
    /// Copied packets cross from the reader's thread to the writer's in batches of at most
    /// this many, spanning at most `packetBatchSpan`: one thread hop per batch, not per packet,
    /// with batches short enough (a quarter second) to stay well inside `exportInterleavingWindow`.
    static let packetBatch = 64
    static let packetBatchSpan = MediaTime(value: 1, timescale: 4)

    // MARK: Demuxer queues (a file's packets read for one track, waiting for another)

    /// Packets of one stream the shared demuxer may hold while reading ahead for another;
    /// past either bound the reading stream goes on on a demuxer of its own. Files interleave
    /// their tracks within a second or two (4 MB of a 1080p track at 16 Mbit/s, 94 AAC
    /// packets), far inside both; a track starting late, or a file storing one track after
    /// the other, reaches them.
    static let demuxerQueueBytes = 16 << 20
    static let demuxerQueuePackets = 2048

    // MARK: Fan-out (one decode feeding several exports)

    /// Decoded pictures a fan-out keeps for its slower branches: how far (in pictures) the
    /// fastest rendition of a ladder may run ahead of the slowest. Each is a source-size
    /// picture (3 MB at 1080p), and every branch's writer already holds the next one, so a
    /// few are enough to keep branches encoding side by side.
    static let fanOutPictures = 4
    /// Decoded audio blocks a fan-out keeps (AAC's are 1024 samples, 21 ms at 48 kHz): small,
    /// so the window spans more than the export's interleaving window (`exportInterleavingWindow`).
    static let fanOutAudioBlocks = 64

    /// Decoder surfaces a fan-out on a device needs beyond the decoder's references: its
    /// window, and for each branch the edge's picture, the writer's queued one and what a VA
    /// encoder of the source's size holds (it takes the decoder's surface as it is).
    static func fanOutDeviceSurfaces(branches: Int) -> Int {
        fanOutPictures + branches * (writerQueuedPictures + 1 + vaEncoderHeldSurfaces)
    }

    /// The samples a fan-out of `mediaType` keeps for its slower branches.
    static func fanOutWindow(for mediaType: MediaType) -> Int {
        mediaType == .video ? fanOutPictures : fanOutAudioBlocks
    }

    // MARK: Picture pools

    /// Host frames a reader converts pictures into: the writer's queued pictures, the edge's
    /// picture, a frame-rate converter's held picture and the one being converted. More in use
    /// at once are allocated and freed as before.
    static let readerHostFrames = writerQueuedPictures + 3
    /// Surfaces a reader's video processor renders into: the writer's queued pictures, the
    /// edge's, a frame-rate converter's held picture, and what a VA encoder keeps referenced
    /// while it reorders and looks ahead (`vaEncoderHeldSurfaces`).
    static let readerSurfaces = writerQueuedPictures + 2 + vaEncoderHeldSurfaces
    /// Surfaces a VA encoder may hold referenced at once (B-frame reordering, FFmpeg's async
    /// depth, the reference pictures).
    static let vaEncoderHeldSurfaces = 12
    /// Surfaces a VA encoder's own input pool holds: pictures uploaded or scaled for it while it
    /// looks ahead.
    static let vaEncoderInputSurfaces = vaEncoderHeldSurfaces
    /// Pictures a video composition renders into: as for a reader's surfaces.
    static let compositionRenderPictures = readerSurfaces
    /// Host frames the writer fits pictures into: the one being fitted, and what an FFmpeg
    /// encoder keeps referenced for B-frame reordering (x264 copies; FFmpeg's own encoders do
    /// not). More in use at once are allocated and freed as before.
    static let writerHostFrames = 8

    // MARK: Threads

    /// Decoder threads for a video track whose pictures go to a software encoder of `codec` on
    /// the same host (each decoder of a composition alike); 0 leaves FFmpeg's default.
    /// x264 and x265 alone keep the cores busy (1.5 threads per core and a look-ahead thread)
    /// and the decoder runs beside them on the reader's own thread, so FFmpeg's default (a frame
    /// thread per core, plus one) only adds a held picture and a codec context per thread: on 2
    /// cores a 1080p→720p transcode peaked 7 MB lower with 2 threads than with 3, at the same
    /// speed within the spread. Decoding is about a sixth of such a transcode's CPU, so a
    /// quarter of the cores, at least 2, keeps pace where there are more of them. Encoders that
    /// do not fill the cores keep FFmpeg's default.
    static func decoderThreads(besideHostEncoderOf codec: VideoCodec,
                               cores: Int = ProcessInfo.processInfo.activeProcessorCount) -> Int {
        codec == .h264 || codec == .hevc ? max(2, cores / 4) : 0
    }

    /// Pictures a pixel-buffer adaptor's pool may allocate: the writer's queued pictures, the
    /// encoder's, and the caller's own (drawing ahead, holding a previous picture).
    static let adaptorPictures = writerQueuedSamples + 6
}

internal import CFFmpeg
import MediaCore

/// One decoded bitmap subtitle (a PGS display set, a VobSub or DVB page): the pictures it
/// shows, placed on the subtitle canvas, and when. Times are microseconds on the packets' timeline.
public struct BitmapSubtitle: Sendable {
    /// When it appears.
    public var start: Int64
    /// When it goes, nil when the stream leaves that to the next subtitle (PGS says so by
    /// sending an empty one).
    public var end: Int64?
    /// The pictures, empty for a subtitle that clears the screen.
    public var rects: [BitmapSubtitleRect]
}

/// One picture of a bitmap subtitle: its place on the canvas and its pixels, 8-bit R, G, B and
/// straight (not premultiplied) alpha, row after row with no padding.
public struct BitmapSubtitleRect: Sendable {
    public var x: Int, y: Int, width: Int, height: Int
    public var rgba: [UInt8]
}

/// Decodes bitmap subtitle packets (HDMV PGS, DVD VobSub, DVB) into positioned RGBA pictures,
/// for drawing into video. Owns its codec context; one task at a time.
public final class BitmapSubtitleDecoder {
    /// Holds the context for each call: one thread at a time, checked.
    package let use = ExclusiveUse("BitmapSubtitleDecoder")
    private let decoder: UnsafeMutablePointer<AVCodecContext>

    /// Opens the decoder for `source`, whose packets are timed in `timeBase`. Throws for text
    /// subtitles and for a codec this libavcodec cannot decode. The corresponding C functions are
    /// `avcodec_parameters_to_context` and `avcodec_open2`.
    public init(source: CodecParameters, timeBase: Rational) throws(FFmpegError) {
        let codec = source.codec
        guard let descriptor = avcodec_descriptor_get(codec.avValue), descriptor.pointee.type == AVMEDIA_TYPE_SUBTITLE,
              !codec.isTextSubtitle else {
            throw FFmpegError(code: .invalidArgument, function: "avcodec_descriptor_get (not a bitmap subtitle codec)")
        }
        guard let decoderCodec = avcodec_find_decoder(codec.avValue) else { throw FFmpegError(code: .decoderNotFound, function: "avcodec_find_decoder") }
        guard let decoder = avcodec_alloc_context3(decoderCodec) else { throw FFmpegError(code: .outOfMemory, function: "avcodec_alloc_context3") }
        self.decoder = decoder
        try check(avcodec_parameters_to_context(decoder, source.pointer), "avcodec_parameters_to_context")
        decoder.pointee.pkt_timebase = timeBase.avRational
        try check(avcodec_open2(decoder, decoderCodec, nil), "avcodec_open2")
    }

    deinit {
        var d: UnsafeMutablePointer<AVCodecContext>? = decoder
        avcodec_free_context(&d)
    }

    /// True when this libavcodec decodes `codec` as bitmap subtitles.
    public static func canDecode(_ codec: CodecID) -> Bool {
        guard let descriptor = avcodec_descriptor_get(codec.avValue) else { return false }
        return descriptor.pointee.type == AVMEDIA_TYPE_SUBTITLE && !codec.isTextSubtitle && avcodec_find_decoder(codec.avValue) != nil
    }

    /// The size of the canvas the pictures are placed on (the video size PGS declares, the DVD
    /// frame VobSub's index gives), nil while the stream has not said it.
    public var canvasSize: Size? {
        let (w, h) = (Int(decoder.pointee.width), Int(decoder.pointee.height))
        return w > 0 && h > 0 ? Size(width: w, height: h) : nil
    }

    /// The subtitle `packet` completes, nil when it completes none (a PGS display set arrives
    /// in several packets) or carries no time. The corresponding C functions are
    /// `avcodec_decode_subtitle2` and `avsubtitle_free`.
    public func decode(_ packet: Packet) throws(FFmpegError) -> BitmapSubtitle? {
        use.begin(); defer { use.end() }
        var subtitle = AVSubtitle()
        var got: Int32 = 0
        try check(avcodec_decode_subtitle2(decoder, &subtitle, &got, packet.pointer), "avcodec_decode_subtitle2")
        guard got != 0 else { return nil }
        defer { avsubtitle_free(&subtitle) }
        guard subtitle.pts != cffmpeg_AV_NOPTS_VALUE() else { return nil }
        let start = subtitle.pts + Int64(subtitle.start_display_time) * 1000
        // UINT32_MAX (and a zero length) leave the end to the next subtitle, as ffmpeg reads them.
        let end = subtitle.end_display_time == UInt32.max || subtitle.end_display_time <= subtitle.start_display_time
            ? nil : subtitle.pts + Int64(subtitle.end_display_time) * 1000
        var rects: [BitmapSubtitleRect] = []
        for index in 0..<Int(subtitle.num_rects) {
            guard let rect = subtitle.rects[index]?.pointee, rect.type == SUBTITLE_BITMAP, rect.w > 0, rect.h > 0,
                  let indices = rect.data.0, let palette = rect.data.1 else { continue }
            let (width, height) = (Int(rect.w), Int(rect.h))
            let stride = Int(rect.linesize.0)
            let colours = UnsafeRawPointer(palette).assumingMemoryBound(to: UInt32.self)
            let colourCount = max(0, min(Int(rect.nb_colors), 256))
            var rgba = [UInt8](repeating: 0, count: width * height * 4)
            for y in 0..<height {
                for x in 0..<width {
                    let entry = Int(indices[y * stride + x])
                    // The palette holds native-endian 0xAARRGGBB; an index past it is transparent.
                    guard entry < colourCount else { continue }
                    let argb = colours[entry]
                    let o = (y * width + x) * 4
                    rgba[o] = UInt8(truncatingIfNeeded: argb >> 16)
                    rgba[o + 1] = UInt8(truncatingIfNeeded: argb >> 8)
                    rgba[o + 2] = UInt8(truncatingIfNeeded: argb)
                    rgba[o + 3] = UInt8(truncatingIfNeeded: argb >> 24)
                }
            }
            rects.append(BitmapSubtitleRect(x: Int(rect.x), y: Int(rect.y), width: width, height: height, rgba: rgba))
        }
        return BitmapSubtitle(start: start, end: end, rects: rects)
    }
}

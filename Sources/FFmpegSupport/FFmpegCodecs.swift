internal import CFFmpeg

/// The codecs the linked libavcodec was built with, by FFmpeg's codec names (`libx264`, `h264`, `hevc_vaapi`).
public enum FFmpegCodecs {
    /// Names of every encoder, in libavcodec's registration order.
    /// The corresponding C functions are `av_codec_iterate` and `av_codec_is_encoder`.
    public static func encoderNames() -> [String] {
        names { av_codec_is_encoder($0) != 0 }
    }

    /// Names of every decoder, in libavcodec's registration order.
    /// The corresponding C functions are `av_codec_iterate` and `av_codec_is_decoder`.
    public static func decoderNames() -> [String] {
        names { av_codec_is_decoder($0) != 0 }
    }

    private static func names(where include: (UnsafePointer<AVCodec>) -> Bool) -> [String] {
        var state: UnsafeMutableRawPointer?
        var names: [String] = []
        while let codec = av_codec_iterate(&state) {
            if include(codec), let name = codec.pointee.name { names.append(String(cString: name)) }
        }
        return names
    }
}

internal import CFFmpeg

/// Which encoders and decoders this process's libavcodec offers.
public enum CodecAvailability {
    /// True if libavcodec has an encoder named `name` ("libx264", "hevc_vaapi"). The
    /// corresponding C function is `avcodec_find_encoder_by_name`.
    public static func hasEncoder(named name: String) -> Bool { avcodec_find_encoder_by_name(name) != nil }

    /// True if libavcodec has a decoder named `name`. The corresponding C function is `avcodec_find_decoder_by_name`.
    public static func hasDecoder(named name: String) -> Bool { avcodec_find_decoder_by_name(name) != nil }
}

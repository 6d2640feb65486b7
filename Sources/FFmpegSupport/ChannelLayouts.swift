internal import CFFmpeg

/// Channel layouts as FFmpeg names them ("mono", "5.1(side)", "6 channels (FL+FR+FC+LFE+FLC+FRC)"),
/// and the choice of the layout an encoder can take for a source's.
public enum ChannelLayouts {
    /// Layouts of encoders that take only some but list none. FFmpeg 5.1's AAC encoder checks
    /// against its own table (`aac_normal_chan_layouts` in aacenc.h) without listing it; it also
    /// takes 5.1(side) and a few others through a PCE, which MP4 readers show as an unknown
    /// layout, so those are mapped to the table's. Opus and Vorbis take the Vorbis channel
    /// orders (`ff_vorbis_ch_layouts`) beyond stereo.
    private static let unlisted: [String: [String]] = [
        "aac": ["mono", "stereo", "3.0", "4.0", "5.0", "5.1", "7.1"],
        "libopus": ["mono", "stereo", "3.0", "quad", "5.0", "5.1", "6.1", "7.1"],
        "libvorbis": ["mono", "stereo", "3.0", "quad", "5.0", "5.1", "6.1", "7.1"],
    ]

    /// FFmpeg's default layout for `channelCount` channels by name ("mono", "stereo", "5.1").
    /// The corresponding C function is `av_channel_layout_default`.
    public static func defaultName(channelCount: Int) -> String {
        var layout = AVChannelLayout()
        defer { av_channel_layout_uninit(&layout) }
        av_channel_layout_default(&layout, Int32(max(channelCount, 1)))
        return describe(&layout) ?? "\(channelCount) channels"
    }

    /// The layouts `encoder` takes, by name; empty when it takes any.
    public static func supported(byEncoder encoder: String) -> [String] {
        if let known = unlisted[encoder] { return known }
        guard let codec = avcodec_find_encoder_by_name(encoder), var entry = codec.pointee.ch_layouts else { return [] }
        var names: [String] = []
        while entry.pointee.nb_channels > 0 {
            if let name = describe(entry) { names.append(name) }
            entry += 1
        }
        return names
    }

    /// The layout `encoder` should write for a source in `layout` (nil or an unordered
    /// "N channels": the default layout for `channelCount`, as ffmpeg assumes):
    /// - the source's own layout when the encoder takes it;
    /// - else the encoder's layout with as many channels (its default for that count first),
    ///   so 5.1(side) becomes 5.1 and an unusual 6-channel order becomes 5.1;
    /// - else the encoder's largest layout with fewer channels (a downmix), else its smallest.
    /// The corresponding C functions are `av_channel_layout_from_string`, `av_channel_layout_default`
    /// and `av_channel_layout_compare`.
    public static func closest(to layout: String?, channelCount: Int, forEncoder encoder: String) -> (name: String, channelCount: Int) {
        var source = AVChannelLayout()
        defer { av_channel_layout_uninit(&source) }
        if layout.map({ av_channel_layout_from_string(&source, $0) < 0 }) ?? true || source.order == AV_CHANNEL_ORDER_UNSPEC
            || (channelCount > 0 && Int(source.nb_channels) != channelCount) {
            av_channel_layout_uninit(&source)
            av_channel_layout_default(&source, Int32(max(channelCount, 1)))
        }
        let count = Int(source.nb_channels)
        var layouts = supported(byEncoder: encoder).map { name -> AVChannelLayout in
            var layout = AVChannelLayout()
            _ = av_channel_layout_from_string(&layout, name)
            return layout
        }
        defer { for i in layouts.indices { av_channel_layout_uninit(&layouts[i]) } }
        guard !layouts.isEmpty else {
            // Any layout goes where a channel mask says what each channel is; a custom order
            // becomes the default layout for its count.
            if source.order != AV_CHANNEL_ORDER_NATIVE {
                av_channel_layout_uninit(&source)
                av_channel_layout_default(&source, Int32(count))
            }
            return (describe(&source) ?? "\(count) channels", count)
        }
        if let same = layouts.indices.first(where: { av_channel_layout_compare(&layouts[$0], &source) == 0 }) {
            return (describe(&layouts[same]) ?? "", count)
        }
        let candidates = layouts.indices
        var fallback = AVChannelLayout()
        av_channel_layout_default(&fallback, Int32(count))
        defer { av_channel_layout_uninit(&fallback) }
        let channels = { (i: Int) in Int(layouts[i].nb_channels) }
        let sameCount = candidates.filter { channels($0) == count }
        let chosen = sameCount.first { av_channel_layout_compare(&layouts[$0], &fallback) == 0 } ?? sameCount.first
            ?? candidates.filter { channels($0) < count }.max { channels($0) < channels($1) }
            ?? candidates.min { channels($0) < channels($1) }!
        return (describe(&layouts[chosen]) ?? "", channels(chosen))
    }
}

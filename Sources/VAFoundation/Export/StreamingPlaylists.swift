import Foundation

/// What one rendition of a streaming package wrote, measured from its segments: what the
/// HLS playlists and the DASH manifest declare.
public struct StreamingRenditionReport: Sendable, Equatable {
    /// One media segment file.
    public struct Segment: Sendable, Equatable {
        public var file: String
        /// Where it starts on the package's timeline, and how long it lasts.
        public var start: MediaTime
        public var duration: MediaTime
        public var bytes: Int
        /// Its keyframes that a player can fetch alone, each with its fragment: what an I-frame
        /// playlist lists. Video only.
        public var keyframes: [Keyframe]
        public var sampleCount: Int
    }

    /// A keyframe of a segment and the bytes that show it alone.
    public struct Keyframe: Sendable, Equatable {
        /// When it is shown, after the segment's first keyframe.
        public var offset: MediaTime
        /// Where its fragment starts in the segment file, and how many bytes from there hold it.
        public var byteOffset: Int
        public var byteCount: Int
    }

    /// The rendition's folder in the package ("720p", "audio").
    public var folder: String
    public var mediaType: MediaType
    /// RFC 6381, read from the initialization segment ("avc1.64001f", "mp4a.40.2").
    public var codec: String
    /// The coded picture size, read from the initialization segment.
    public var width: Int?
    public var height: Int?
    /// ISO 639-2 language of an audio or subtitle rendition, and whether the source marked its track default.
    public var language: String?
    public var isDefault: Bool
    public var channelCount: Int?
    public var sampleRate: Int?
    public var segments: [Segment]

    public var duration: MediaTime { segments.reduce(MediaTime.zero) { $0 + $1.duration } }
    public var sampleCount: Int { segments.reduce(0) { $0 + $1.sampleCount } }

    /// The peak segment bit rate as RFC 8216bis defines it: the highest rate of any run of
    /// consecutive segments lasting 0.5 to 1.5 times the target duration (so a short last
    /// segment, nearly all keyframe, does not set it alone); the whole rendition's rate when no
    /// run is that long. Bits per second, rounded up.
    public var peakBitRate: Int { Self.peakRate(segments.map { ($0.bytes, $0.duration.seconds) }, target: targetDuration) }

    /// `#EXT-X-TARGETDURATION`: the longest segment rounded to the nearest second (RFC 8216
    /// 4.3.3.1), at least 1.
    public var targetDuration: Int { max(1, segments.map { Int($0.duration.seconds.rounded()) }.max() ?? 1) }

    static func peakRate(_ parts: [(bytes: Int, seconds: Double)], target: Int) -> Int {
        let (low, high) = (0.5 * Double(target), 1.5 * Double(target))
        var peak = 0.0
        for start in parts.indices {
            var (bits, seconds) = (0.0, 0.0)
            for part in parts[start...] {
                bits += Double(part.bytes * 8)
                seconds += part.seconds
                if seconds > high { break }
                if seconds >= low { peak = max(peak, bits / seconds) }
            }
        }
        if peak == 0 {
            let seconds = parts.reduce(0) { $0 + $1.seconds }
            peak = Double(parts.reduce(0) { $0 + $1.bytes } * 8) / max(seconds, 0.001)
        }
        return Int(peak.rounded(.up))
    }
    /// The rate of all segments together, bits per second.
    public var averageBitRate: Int {
        Int((Double(segments.reduce(0) { $0 + $1.bytes } * 8) / max(duration.seconds, 0.001)).rounded())
    }
    /// Pictures a second, from the samples and the duration written.
    public var frameRate: Double { Double(sampleCount) / max(duration.seconds, 0.001) }
}

/// The HLS playlists and DASH manifest of a package, written from its renditions' reports.
enum StreamingPlaylists {
    /// `#EXT-X-TARGETDURATION`: the longest segment rounded to the nearest second (RFC 8216
    /// 4.3.3.1), at least 1.
    static func targetDuration(_ r: StreamingRenditionReport) -> Int { r.targetDuration }

    private static func seconds(_ t: MediaTime) -> String { String(format: "%.6f", t.seconds) }

    /// A rendition's media playlist (`index.m3u8`). WebVTT segments stand alone: no initialization segment.
    static func mediaPlaylist(_ r: StreamingRenditionReport) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:\(targetDuration(r))", "#EXT-X-MEDIA-SEQUENCE:0",
                     "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-INDEPENDENT-SEGMENTS"]
        if r.mediaType != .subtitle { lines.append("#EXT-X-MAP:URI=\"init.mp4\"") }
        for segment in r.segments {
            lines.append("#EXTINF:\(seconds(segment.duration)),")
            lines.append(segment.file)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Each keyframe of a rendition with its segment, and how long it stands for: until the
    /// segment's next keyframe, or the segment's end.
    private static func keyframes(_ r: StreamingRenditionReport) -> [(segment: StreamingRenditionReport.Segment, keyframe: StreamingRenditionReport.Keyframe, duration: MediaTime)] {
        r.segments.flatMap { segment in
            segment.keyframes.indices.map { i in
                let next = i + 1 < segment.keyframes.count ? segment.keyframes[i + 1].offset : segment.duration
                return (segment, segment.keyframes[i], max(.zero, next - segment.keyframes[i].offset))
            }
        }
    }

    /// A video rendition's I-frame playlist (`iframes.m3u8`): every keyframe that opens a
    /// fragment, as the byte range of its segment from the fragment's start to the end of
    /// the keyframe, shown until the next one.
    static func iFramePlaylist(_ r: StreamingRenditionReport) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:\(targetDuration(r))", "#EXT-X-MEDIA-SEQUENCE:0",
                     "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-I-FRAMES-ONLY", "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-MAP:URI=\"init.mp4\""]
        for (segment, keyframe, duration) in keyframes(r) {
            lines.append("#EXTINF:\(seconds(duration)),")
            lines.append("#EXT-X-BYTERANGE:\(keyframe.byteCount)@\(keyframe.byteOffset)")
            lines.append(segment.file)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The I-frame playlist's peak rate: each keyframe's bytes over the time it stands for.
    static func iFramePeakBitRate(_ r: StreamingRenditionReport) -> Int {
        StreamingRenditionReport.peakRate(keyframes(r).map { ($0.keyframe.byteCount, $0.duration.seconds) }, target: r.targetDuration)
    }

    /// The master playlist: one variant per video rendition, each with the audio and subtitle
    /// groups; the audio and WebVTT subtitle renditions as `EXT-X-MEDIA`; the I-frame playlists.
    static func masterPlaylist(video: [StreamingRenditionReport], audio: [StreamingRenditionReport],
                               subtitles: [StreamingRenditionReport] = []) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-INDEPENDENT-SEGMENTS"]
        let hasDefault = audio.contains(where: \.isDefault)
        for (i, a) in audio.enumerated() {
            let isDefault = a.isDefault || (!hasDefault && i == 0)
            var attributes = ["TYPE=AUDIO", "GROUP-ID=\"audio\"", "NAME=\"\(renditionName(a, index: i, kind: "Audio"))\""]
            if let language = a.language.flatMap(languageTag) { attributes.append("LANGUAGE=\"\(language)\"") }
            attributes += ["DEFAULT=\(isDefault ? "YES" : "NO")", "AUTOSELECT=YES"]
            if let channels = a.channelCount { attributes.append("CHANNELS=\"\(channels)\"") }
            attributes.append("URI=\"\(a.folder)/index.m3u8\"")
            lines.append("#EXT-X-MEDIA:" + attributes.joined(separator: ","))
        }
        var subtitleNames: [String] = []
        for (i, t) in subtitles.enumerated() {
            // Names are unique in a group (RFC 8216 4.3.4.2): a second track of a language is numbered.
            let base = renditionName(t, index: i, kind: "Subtitles")
            let name = subtitleNames.contains(base) ? "\(base) \(subtitleNames.filter { $0.hasPrefix(base) }.count + 1)" : base
            subtitleNames.append(name)
            // Shown without being chosen only where the source marked the track default.
            var attributes = ["TYPE=SUBTITLES", "GROUP-ID=\"subtitles\"", "NAME=\"\(name)\""]
            if let language = t.language.flatMap(languageTag) { attributes.append("LANGUAGE=\"\(language)\"") }
            attributes += ["DEFAULT=\(t.isDefault ? "YES" : "NO")", "AUTOSELECT=YES", "FORCED=NO", "URI=\"\(t.folder)/index.m3u8\""]
            lines.append("#EXT-X-MEDIA:" + attributes.joined(separator: ","))
        }
        let subtitleGroup = subtitles.isEmpty ? "" : ",SUBTITLES=\"subtitles\""
        let audioPeak = audio.map(\.peakBitRate).max() ?? 0
        let audioAverage = audio.map(\.averageBitRate).max() ?? 0
        let audioCodecs = Array(Set(audio.map(\.codec))).sorted()
        for v in video {
            var attributes = ["BANDWIDTH=\(v.peakBitRate + audioPeak)", "AVERAGE-BANDWIDTH=\(v.averageBitRate + audioAverage)",
                              "CODECS=\"\(([v.codec] + audioCodecs).joined(separator: ","))\""]
            if let w = v.width, let h = v.height { attributes.append("RESOLUTION=\(w)x\(h)") }
            attributes.append(String(format: "FRAME-RATE=%.3f", v.frameRate))
            if !audio.isEmpty { attributes.append("AUDIO=\"audio\"") }
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ",") + subtitleGroup)
            lines.append("\(v.folder)/index.m3u8")
        }
        if video.isEmpty, let a = audio.first {
            // Audio alone: one variant, whose group offers every language.
            lines.append("#EXT-X-STREAM-INF:BANDWIDTH=\(audioPeak),AVERAGE-BANDWIDTH=\(audioAverage),CODECS=\"\(a.codec)\",AUDIO=\"audio\"\(subtitleGroup)")
            lines.append("\(a.folder)/index.m3u8")
        }
        for v in video {
            var attributes = ["BANDWIDTH=\(iFramePeakBitRate(v))", "CODECS=\"\(v.codec)\""]
            if let w = v.width, let h = v.height { attributes.append("RESOLUTION=\(w)x\(h)") }
            attributes.append("URI=\"\(v.folder)/iframes.m3u8\"")
            lines.append("#EXT-X-I-FRAME-STREAM-INF:" + attributes.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A rendition's `NAME`: its language in English, else `kind` and its place.
    private static func renditionName(_ r: StreamingRenditionReport, index: Int, kind: String) -> String {
        if let language = r.language, let name = Locale(identifier: "en").localizedString(forLanguageCode: languageTag(language) ?? language) {
            return name
        }
        return index == 0 ? kind : "\(kind) \(index + 1)"
    }

    /// ISO 639-2's bibliographic codes that differ from the terminology ones (the whole list).
    private static let terminologyCodes: [String: String] = [
        "alb": "sqi", "arm": "hye", "baq": "eus", "bur": "mya", "chi": "zho", "cze": "ces", "dut": "nld", "fre": "fra", "geo": "kat",
        "ger": "deu", "gre": "ell", "ice": "isl", "mac": "mkd", "mao": "mri", "may": "msa", "per": "fas", "rum": "ron", "slo": "slk",
        "tib": "bod", "wel": "cym",
    ]

    /// The BCP 47 tag for an ISO 639-2 code (HLS `LANGUAGE`, DASH `lang`): the ISO 639-1 code
    /// where there is one (BCP 47 requires the shortest), else the three letters; nil for
    /// undetermined, multiple or no language, and for what is no ISO 639 code.
    static func languageTag(_ code: String) -> String? {
        var lower = code.lowercased()
        guard !lower.isEmpty, !["und", "mul", "zxx", "mis"].contains(lower), lower.allSatisfy({ $0.isASCII && $0.isLetter }) else { return nil }
        lower = terminologyCodes[lower] ?? lower
        let language = Locale.LanguageCode(lower)
        guard language.isISOLanguage else { return nil }
        return language.identifier(.alpha2) ?? lower
    }

    /// A DASH `FrameRateType`: an integer or a ratio ("30", "30000/1001"), the measured rate
    /// snapped to the nearest of the usual NTSC ratios or whole numbers within 0.01.
    static func dashFrameRate(_ fps: Double) -> String {
        for ntsc in [24, 30, 60, 120] where abs(fps - Double(ntsc * 1000) / 1001) < 0.01 { return "\(ntsc * 1000)/1001" }
        if abs(fps - fps.rounded()) < 0.01 { return "\(Int(fps.rounded()))" }
        return "\(Int((fps * 1000).rounded()))/1000"
    }

    /// An ISO 8601 duration (`PT20.000S`).
    private static func isoDuration(_ t: MediaTime) -> String { String(format: "PT%.3fS", t.seconds) }

    /// The segments' timeline in milliseconds: start and duration of each, from rounded
    /// starts so that the durations add up without drift.
    private static func timeline(_ r: StreamingRenditionReport) -> String {
        var entries: [String] = []
        let starts = r.segments.map { Int64(($0.start.seconds * 1000).rounded()) }
        let end = r.segments.last.map { Int64((($0.start + $0.duration).seconds * 1000).rounded()) } ?? 0
        for (i, start) in starts.enumerated() {
            let next = i + 1 < starts.count ? starts[i + 1] : end
            entries.append(i == 0 ? "<S t=\"\(start)\" d=\"\(next - start)\"/>" : "<S d=\"\(next - start)\"/>")
        }
        return entries.joined()
    }

    private static func xml(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;")
    }

    /// The DASH manifest (`manifest.mpd`, static, ISO BMFF live profile): one adaptation set
    /// for the video renditions and one per audio rendition, each listing the same segment
    /// files as the HLS playlists through a numbered template and a segment timeline; one per
    /// subtitle rendition, its whole WebVTT file (`text/vtt`) as the representation's `BaseURL`.
    static func dashManifest(video: [StreamingRenditionReport], audio: [StreamingRenditionReport],
                             subtitles: [StreamingRenditionReport] = []) -> String {
        let duration = (video + audio).map(\.duration).max() ?? .zero
        let longest = (video + audio).flatMap(\.segments).map(\.duration).max() ?? .zero
        var lines = [
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\" profiles=\"urn:mpeg:dash:profile:isoff-live:2011\" type=\"static\""
                + " mediaPresentationDuration=\"\(isoDuration(duration))\" minBufferTime=\"\(isoDuration(longest))\">",
            "  <Period id=\"0\" start=\"PT0S\">",
        ]
        func template(_ r: StreamingRenditionReport) -> String {
            "        <SegmentTemplate timescale=\"1000\" initialization=\"\(xml(r.folder))/init.mp4\""
                + " media=\"\(xml(r.folder))/segment-$Number%05d$.m4s\" startNumber=\"1\">"
                + "<SegmentTimeline>\(timeline(r))</SegmentTimeline></SegmentTemplate>"
        }
        if !video.isEmpty {
            let maxWidth = video.compactMap(\.width).max() ?? 0, maxHeight = video.compactMap(\.height).max() ?? 0
            lines.append("    <AdaptationSet id=\"0\" contentType=\"video\" mimeType=\"video/mp4\" segmentAlignment=\"true\""
                         + " startWithSAP=\"1\" maxWidth=\"\(maxWidth)\" maxHeight=\"\(maxHeight)\">")
            for v in video {
                var attributes = "id=\"\(xml(v.folder))\" bandwidth=\"\(v.peakBitRate)\" codecs=\"\(v.codec)\""
                if let w = v.width, let h = v.height { attributes += " width=\"\(w)\" height=\"\(h)\"" }
                attributes += " frameRate=\"\(dashFrameRate(v.frameRate))\""
                lines.append("      <Representation \(attributes)>")
                lines.append(template(v))
                lines.append("      </Representation>")
            }
            lines.append("    </AdaptationSet>")
        }
        for (i, a) in audio.enumerated() {
            var set = "id=\"\(i + 1)\" contentType=\"audio\" mimeType=\"audio/mp4\" segmentAlignment=\"true\" startWithSAP=\"1\""
            if let language = a.language.flatMap(languageTag) { set += " lang=\"\(language)\"" }
            lines.append("    <AdaptationSet \(set)>")
            if a.isDefault || (i == 0 && !audio.contains(where: \.isDefault)) {
                lines.append("      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"main\"/>")
            }
            var attributes = "id=\"\(xml(a.folder))\" bandwidth=\"\(a.peakBitRate)\" codecs=\"\(a.codec)\""
            if let rate = a.sampleRate { attributes += " audioSamplingRate=\"\(rate)\"" }
            lines.append("      <Representation \(attributes)>")
            if let channels = a.channelCount {
                lines.append("        <AudioChannelConfiguration schemeIdUri=\"urn:mpeg:dash:23003:3:audio_channel_configuration:2011\" value=\"\(channels)\"/>")
            }
            lines.append(template(a))
            lines.append("      </Representation>")
            lines.append("    </AdaptationSet>")
        }
        for (i, t) in subtitles.enumerated() {
            var set = "id=\"\(audio.count + i + 1)\" contentType=\"text\" mimeType=\"text/vtt\""
            if let language = t.language.flatMap(languageTag) { set += " lang=\"\(language)\"" }
            lines.append("    <AdaptationSet \(set)>")
            lines.append("      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"subtitle\"/>")
            lines.append("      <Representation id=\"\(xml(t.folder))\" bandwidth=\"\(max(t.peakBitRate, 1))\">")
            lines.append("        <BaseURL>\(xml(t.folder))/\(StreamingSubtitles.wholeFileName)</BaseURL>")
            lines.append("      </Representation>")
            lines.append("    </AdaptationSet>")
        }
        lines += ["  </Period>", "</MPD>"]
        return lines.joined(separator: "\n") + "\n"
    }
}

import FFmpegSupport
import Foundation

/// One WebVTT cue: when it shows, on the package's timeline, and its text as the WebVTT encoder
/// writes it (line breaks, `<i>`, `<b>`, `<u>`).
struct WebVTTCue: Sendable, Equatable {
    var start: MediaTime
    var end: MediaTime
    var text: String
    /// Cue settings (line, position, align) after the timing; empty for bottom centre.
    var settings = ""
}

/// A text subtitle track of a streaming package, as WebVTT (RFC 8216 3.5, and DASH's `text/vtt`):
/// its cues read from the source and converted cue for cue as ffmpeg converts them (SubRip, ASS,
/// mov_text and WebVTT itself), trimmed to the package's range, written whole (`subtitles.vtt`,
/// the DASH representation) and cut on the media's segment grid for HLS (`segment-NNNNN.vtt`,
/// each holding every cue that shows during it, so a cue spanning a boundary is in both).
enum StreamingSubtitles {
    /// `track`'s cues from `asset`, moved to a package starting at `range.start`, cut to the
    /// range and to `end` (where the package's picture and sound end), and how many cues could
    /// not be converted (passed over, as ffmpeg does). A cue that lasts "until the next one"
    /// (Matroska's 2³²−1 ms, or no duration known) ends where the next starts, or at that end;
    /// a cue of zero duration never shows and is left out (ffmpeg writes it with its end at its
    /// start). Reading a track may read the whole file: `isCancelled` is asked
    /// at every cue, and a cancel ends it with a `.cancelled` error.
    static func cues(of track: AssetTrack, in asset: Asset, range: MediaTimeRange, end: MediaTime,
                     isCancelled: () -> Bool = { Task.isCancelled }) throws(MediaError) -> (cues: [WebVTTCue], refused: Int) {
        let reader = AssetReader(asset: asset)
        var timed: [(start: MediaTime, duration: MediaTime, text: String, settings: String)] = []
        var refused = 0
        do {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
            try reader.add(output)
            try reader.startReading()
            var converter: SubtitleConverter?
            /// The cue settings of a source packet's text, for ASS and SubRip tracks.
            var placement: ((String) -> String)?
            while let sample = try output.copyNextSampleBuffer() {
                if isCancelled() { throw MediaError(.cancelled, "packaging cancelled while reading subtitle track \(track.trackID)", path: asset.displayPath) }
                guard let packet = sample.packet, let parameters = sample.codecParameters, sample.presentationTimeStamp.isNumeric else { continue }
                if converter == nil {
                    converter = try SubtitleConverter(source: parameters, target: "webvtt")
                    if ["ass", "ssa"].contains(parameters.codec.name) {
                        let script = ASSPlacement.script(header: String(decoding: parameters.extradata, as: UTF8.self))
                        placement = { ASSPlacement.cueSettings(event: $0, script: script) }
                    } else if ["subrip", "srt"].contains(parameters.codec.name) {
                        placement = { ASSPlacement.cueSettings(style: nil, text: Substring($0), script: ASSPlacement.subRip) }
                    }
                }
                let settings = placement?(packet.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
                let converted: Packet?
                do { converted = try converter?.convert(packet) } catch {
                    refused += 1
                    continue
                }
                guard let converted else { continue }
                let text = converted.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                guard !text.isEmpty else { continue }
                timed.append((sample.presentationTimeStamp, sample.duration, text, settings ?? ""))
            }
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.unsupported, "cannot read subtitle track \(track.trackID) as WebVTT", path: asset.displayPath, underlying: error)
        }
        // Stable: cues starting together keep their order.
        timed = timed.enumerated().sorted { ($0.element.start, $0.offset) < ($1.element.start, $1.offset) }.map(\.element)
        let rangeEnd = range.duration.isNumeric ? min(range.start + range.duration, range.start + end) : range.start + end
        var cues: [WebVTTCue] = []
        for (i, cue) in timed.enumerated() {
            let next = i + 1 < timed.count ? timed[i + 1].start : rangeEnd
            let openEnded = !cue.duration.isNumeric || cue.duration >= AssetInspector.StreamTiming.openEndedCue
            let last = openEnded ? next : cue.start + cue.duration
            let start = max(cue.start, range.start), stop = min(last, rangeEnd)
            guard stop > start else { continue }
            cues.append(WebVTTCue(start: start - range.start, end: stop - range.start, text: cue.text, settings: cue.settings))
        }
        return (cues, refused)
    }

    /// Cue text as WebVTT reads it: `&` and a `<` that opens none of the tags the WebVTT
    /// encoder writes (`i`, `b`, `u`, `c`, `v`, `lang`, `ruby`, `rt` and timestamps) as
    /// character references, so that "a < b" is not taken for a tag.
    static func escaped(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let i = rest.firstIndex(where: { $0 == "&" || $0 == "<" }) {
            out += rest[..<i]
            let tail = rest[i...]
            if tail.first == "&" {
                let entity = tail.prefix { $0 != ";" && $0 != " " && $0 != "<" }
                let isReference = tail.dropFirst(entity.count).first == ";" && entity.count > 1 && entity.dropFirst().allSatisfy { $0.isLetter || $0.isNumber || $0 == "#" }
                out += isReference ? "&" : "&amp;"
            } else if let close = tail.firstIndex(of: ">"), isTag(tail[tail.index(after: tail.startIndex)..<close]) {
                out += tail[...close]
                rest = tail[tail.index(after: close)...]
                continue
            } else {
                out += "&lt;"
            }
            rest = tail.dropFirst()
        }
        return out + rest
    }

    private static func isTag(_ inside: Substring) -> Bool {
        let name = (inside.hasPrefix("/") ? inside.dropFirst() : inside).prefix { $0 != "." && $0 != " " }
        return ["i", "b", "u", "c", "v", "lang", "ruby", "rt"].contains(String(name)) || (name.first?.isNumber == true && name.contains(":"))
    }

    /// A WebVTT document of `cues`. An HLS segment says that its cue times are the media's own
    /// (`X-TIMESTAMP-MAP`: time 0 is the fragments' time 0, in 90 kHz MPEG-2 ticks).
    static func document(_ cues: [WebVTTCue], forHLSSegment: Bool) -> String {
        var text = "WEBVTT\n"
        if forHLSSegment { text += "X-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n" }
        for cue in cues {
            // "-->" may not appear in a cue's text; an empty line would end it early.
            let body = escaped(cue.text).replacingOccurrences(of: "-->", with: "->")
                .split(separator: "\n", omittingEmptySubsequences: true).joined(separator: "\n")
            let settings = cue.settings.isEmpty ? "" : " " + cue.settings
            text += "\n\(timestamp(cue.start)) --> \(timestamp(cue.end))\(settings)\n\(body)\n"
        }
        return text
    }

    /// A WebVTT timestamp, `HH:MM:SS.mmm`, rounded to the millisecond.
    static func timestamp(_ time: MediaTime) -> String {
        let milliseconds = max(0, time.convertScale(1000, rounding: .roundHalfAwayFromZero).value)
        return String(format: "%02lld:%02lld:%02lld.%03lld", milliseconds / 3_600_000, milliseconds / 60_000 % 60,
                      milliseconds / 1000 % 60, milliseconds % 1000)
    }

    /// Writes `cues` into `folder` as one whole file and, for HLS, as segments on `grid` (each
    /// segment's start and duration); returns the rendition's report.
    static func write(_ cues: [WebVTTCue], to folder: URL, name: String, grid: [(start: MediaTime, duration: MediaTime)],
                      language: String?, isDefault: Bool, segmented: Bool) throws(MediaError) -> StreamingRenditionReport {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        } catch {
            throw MediaError(.ioError, "cannot create the rendition folder: \(error)", path: folder.path)
        }
        try OutputFile.write(Data(document(cues, forHLSSegment: false).utf8), to: folder.appendingPathComponent(wholeFileName))
        var segments: [StreamingRenditionReport.Segment] = []
        for (i, slot) in grid.enumerated() where segmented {
            let end = slot.start + slot.duration
            let shown = cues.filter { $0.start < end && $0.end > slot.start }
            let data = Data(document(shown, forHLSSegment: true).utf8)
            let file = String(format: "segment-%05d.vtt", i + 1)
            try OutputFile.write(data, to: folder.appendingPathComponent(file))
            segments.append(.init(file: file, start: slot.start, duration: slot.duration, bytes: data.count, keyframes: [],
                                  sampleCount: shown.count))
        }
        if !segmented {
            // The whole file is the one "segment" a DASH-only package lists.
            let bytes = document(cues, forHLSSegment: false).utf8.count
            let duration = grid.reduce(MediaTime.zero) { $0 + $1.duration }
            segments = [.init(file: wholeFileName, start: .zero, duration: duration, bytes: bytes, keyframes: [], sampleCount: cues.count)]
        }
        return StreamingRenditionReport(folder: name, mediaType: .subtitle, codec: "wvtt", width: nil, height: nil, language: language,
                                        isDefault: isDefault, channelCount: nil, sampleRate: nil, segments: segments)
    }

    /// The whole track's file in its rendition folder.
    static let wholeFileName = "subtitles.vtt"
}

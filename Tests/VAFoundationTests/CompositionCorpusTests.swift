import ChildProcess
import Foundation
import Testing
@testable import VAFoundation

/// Every file of the shared corpus (phone, camera and broadcast clips of many codecs and
/// containers) joined with itself in a composition: a piece from its middle, then one as long
/// from its start (each a third of the file, at most 1 s). Every file but those listed in
/// `cannotExportAlone` must export on its own, and then the composition must export too and last
/// the two pieces on every stream (ffprobe).
@Suite(.disabled(if: which("ffprobe") == nil, "ffprobe is not installed (Hardware/setup.sh installs it)"))
struct CompositionCorpusTests {
    /// Files whose video comes out shorter than the pieces, each with why (not yet fixed).
    static let shortVideoExceptions: [String: String] = [
        // The writer extends the last packet to the last picture's end on the decode timeline
        // less the reorder delay; on this variable-rate clip it still ends 0.2 s short of 2 s.
        "h264_aac_vfr_iphone_flir_gps.mp4": "the last picture's hold is cut short by the encoder's reorder delay",
        // No index: seeking to 0.18 s in this 0.42 s clip lands past its only keyframe, and
        // nothing decodes until the end of the range.
        "h264_1080i50_ac3_pgs_sony_a7m3_avchd.mts": "an MPEG-TS seek lands past the only keyframe",
    ]

    /// Files that cannot export on their own, each with why: they have nothing to join.
    static let cannotExportAlone: [String: String] = [
        "aac_audiobook_chapters_truncated.m4b": "a truncated download whose header claims 169,022.694 s; no audio sample is readable, so its duration is 0",
        "broken_mkv_fixed_lacing_bad_lace_size.mkv": "damaged lacing: no packet is readable, so it has no playable track",
        "wav_header_only_zero_samples.wav": "a WAV header with zero samples",
        "broken_vp9_invalid_bitstream.webm": "every VP9 packet is damaged: nothing decodes",
        "broken_zero_empty_stsc_partial.mp4": "sample tables describe 41.6 s but only 48 KB exist: no H.264 packet decodes",
    ]

    @Test(arguments: TestFiles.sharedMediaFiles)
    func eachCorpusFileJoinsWithItself(_ name: String) async throws {
        let media = try TestFiles.requireSharedMedia()
        let asset = Asset(url: media.appendingPathComponent(name))
        let (duration, tracks) = try await asset.load(.duration, .tracks)
        let playable = tracks.filter { ($0.mediaType == .video && !$0.isAttachedPicture || $0.mediaType == .audio) && $0.sampleCount > 0 }
        let hasVideo = tracks.contains { $0.mediaType == .video && !$0.isAttachedPicture && $0.sampleCount > 0 }
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (preset, type): (ExportPreset, FileType) = hasVideo ? (.preset640x480, .mp4) : (.appleM4A, .m4a)
        let alone = dir.appendingPathComponent("alone.\(type.fileExtension)")
        if let reason = Self.cannotExportAlone[name] {
            // A file that cannot export on its own proves nothing joined with itself; it stays
            // listed only while it really cannot, so a fix shows up here as a stale entry.
            var exports = false
            if !playable.isEmpty, duration > .zero {
                exports = (try? await ExportSession(asset: asset, preset: preset).export(to: alone, as: type)) != nil
            }
            #expect(!exports, "\(name) now exports on its own; remove it from cannotExportAlone (\(reason))")
            return
        }
        try #require(!playable.isEmpty, "\(name): no video or audio track with samples")
        try #require(duration > .zero, "\(name): the asset has no duration")
        // The reference export: its failure is the product's failure, not a reason to skip.
        _ = try await ExportSession(asset: asset, preset: preset).export(to: alone, as: type)
        let piece = min(MediaTime(value: 1, timescale: 1), duration.multiplied(by: 1, dividedBy: 3))
        let composition = MutableComposition()
        let middle = duration.multiplied(by: 1, dividedBy: 2) - piece.multiplied(by: 1, dividedBy: 2)
        try await composition.insertTimeRange(MediaTimeRange(start: middle, duration: piece), of: asset, at: .zero)
        try await composition.insertTimeRange(MediaTimeRange(start: .zero, duration: piece), of: asset, at: piece)
        let output = dir.appendingPathComponent("joined.\(type.fileExtension)")
        _ = try await ExportSession(asset: composition, preset: preset).export(to: output, as: type)
        let probe = try await ChildProcess.run(which("ffprobe")!, ["-v", "error", "-show_entries", "stream=codec_type,duration", "-of", "csv=p=0", output.path],
                                               timeLimit: 60)
        let streams = probe.stdout.split(separator: "\n").map { $0.split(separator: ",") }
        #expect(!streams.isEmpty, "\(name): ffprobe found no stream")
        for stream in streams where stream.count == 2 && !(stream[0] == "video" && Self.shortVideoExceptions[name] != nil) {
            let seconds = Double(stream[1]) ?? -1
            // Within a frame at 24 fps or an AAC block of slack, whatever the source's rates.
            #expect(abs(seconds - 2 * piece.seconds) <= 0.1, "\(name): \(stream[0]) lasts \(seconds) s, not \(2 * piece.seconds) s (\(probe.stdout.split(separator: "\n").joined(separator: "; ")))")
        }
    }
}

import Foundation

/// The flavour of fragmented MPEG-4 a segmenting `AssetWriter` writes (`AVFileTypeProfile`).
public enum FileTypeProfile: String, Sendable, CaseIterable {
    /// Segments for HLS: an initialization segment (`ftyp`, `moov`), then media segments of
    /// one `moof` and its `mdat` each.
    case mpeg4AppleHLS
    /// CMAF segments (ISO/IEC 23000-19), for HLS and DASH alike: each media segment opens
    /// with `styp` (brands `cmfs`, `msdh`, `msix`) and a `sidx` before its `moof` and `mdat`.
    case mpeg4CMAFCompliant
}

/// What a segment a segmenting writer hands out holds (`AVAssetSegmentType`).
public enum SegmentType: String, Sendable {
    /// The initialization segment: the file type and the movie header, with no samples.
    case initialization
    /// A media segment that a player can fetch and decode on its own after the
    /// initialization segment: it starts with a sync sample of every video track.
    case separable
}

/// The first video sample of a segment (`AVAssetSegmentReportSampleInformation`).
public struct SegmentSampleInformation: Sendable, Equatable {
    /// When the sample is shown, on the output's timeline.
    public var presentationTimeStamp: MediaTime
    /// Where its data starts in the segment, and its length, in bytes.
    public var offset: Int
    public var length: Int
    public var isSyncSample: Bool
}

/// A keyframe that opens a fragment of a segment, and the bytes that show it alone: from its
/// fragment's first box to the end of its data (an HLS I-frame playlist's byte range).
/// Not in AVFoundation.
public struct SegmentKeyframeInformation: Sendable, Equatable {
    /// When the keyframe is shown, on the output's timeline.
    public var presentationTimeStamp: MediaTime
    /// Where its fragment starts in the segment (0 for the segment's first), and where its data ends.
    public var fragmentOffset: Int
    public var endOffset: Int
}

/// One track's part of a segment (`AVAssetSegmentTrackReport`).
public struct SegmentTrackReport: Sendable, Equatable {
    /// The track's ID in the output (1 for the first input's track).
    public var trackID: Int
    public var mediaType: MediaType
    /// The earliest presentation time of the track's samples in the segment, on the output's
    /// timeline (the session's start is zero).
    public var earliestPresentationTimeStamp: MediaTime
    /// How long the track's samples in the segment last.
    public var duration: MediaTime
    /// The segment's first video sample; nil for other media.
    public var firstVideoSampleInformation: SegmentSampleInformation?
    /// Each keyframe of a video track that opens a fragment of the segment, in order: the
    /// segment's first, and with `fragmentsAtEveryKeyframe` every one. Not in AVFoundation.
    public var keyframes: [SegmentKeyframeInformation]
    /// How many samples of the track the segment holds.
    public var sampleCount: Int
}

/// What a media segment holds (`AVAssetSegmentReport`).
public struct SegmentReport: Sendable, Equatable {
    public var segmentType: SegmentType
    /// The media segment's number, from 1.
    public var sequenceNumber: Int
    public var trackReports: [SegmentTrackReport]
}

/// Receives a segmenting writer's output (`AVAssetWriterDelegate`), on the writer's thread,
/// in order: the initialization segment first, then every media segment as it is completed.
/// Keep the work short: the writer waits for it.
public protocol AssetWriterDelegate: AnyObject, Sendable {
    /// `report` is nil for the initialization segment.
    func assetWriter(_ writer: AssetWriter, didOutputSegmentData segmentData: Data, segmentType: SegmentType,
                     segmentReport report: SegmentReport?)
}

/// What a segmenting writer does with a segment: the delegate's method, or (inside the
/// library) a handler whose error fails the writer.
typealias SegmentHandler = @Sendable (_ data: Data, _ type: SegmentType, _ report: SegmentReport?) throws -> Void

/// How a writer cuts its output into fragments, decided when writing starts.
struct WriterSegmentation: Sendable {
    /// The segments' flavour; nil for a plain fragmented file (`movieFragmentInterval`).
    var profile: FileTypeProfile?
    /// A fragment ends at the first sync sample of the leading track at or after each
    /// multiple of this past `origin`; `.indefinite` ends one only at `flushSegment()`.
    var interval: MediaTime
    /// Where the multiples are counted from, on the appended samples' timeline; invalid for
    /// the session's start.
    var origin: MediaTime
    /// Where the segments go; nil writes them into the writer's file.
    var handler: SegmentHandler?
    /// A video lead's every keyframe starts a fragment within its segment.
    var fragmentsAtEveryKeyframe = false
}

/// The few ISO BMFF boxes a segmenting writer writes or reads itself.
enum SegmentBoxes {
    /// The `styp` box a CMAF media segment opens with: CMAF segment (`cmfs`), DASH media
    /// segment (`msdh`) with an index (`msix`).
    static let segmentType: [UInt8] = {
        var box: [UInt8] = []
        func word(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { box.append(contentsOf: $0) } }
        func fourCC(_ s: String) { box.append(contentsOf: Array(s.utf8)) }
        word(28)
        fourCC("styp")
        fourCC("cmfs")
        word(0)
        for brand in ["cmfs", "msdh", "msix"] { fourCC(brand) }
        return box
    }()

    /// Where the first sample of track `trackID` starts in a media segment (its `moof`'s offset
    /// plus the track's `trun` data offset: the writer sets default-base-is-moof) and its size
    /// as stored (the `trun`'s, else the `tfhd`'s default), in the first `moof` at or after
    /// `start`. Nil when the segment has no such run.
    static func firstSample(ofTrack trackID: Int, in data: Data, from start: Int = 0) -> (offset: Int, length: Int)? {
        data.withUnsafeBytes { firstSample(ofTrack: trackID, in: $0, from: start) }
    }

    private static func firstSample(ofTrack trackID: Int, in bytes: UnsafeRawBufferPointer, from start: Int) -> (offset: Int, length: Int)? {
        func word(_ at: Int) -> UInt32? {
            guard at >= 0, at + 4 <= bytes.count else { return nil }
            return bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
        func type(_ at: Int) -> String { String(decoding: bytes[(at + 4)..<min(at + 8, bytes.count)], as: UTF8.self) }
        /// The children of the box whose contents run from `start` to `end`: (offset, size, type).
        func boxes(_ start: Int, _ end: Int) -> [(Int, Int, String)] {
            var found: [(Int, Int, String)] = []
            var at = start
            while at + 8 <= end, let size = word(at), size >= 8, at + Int(size) <= end {
                found.append((at, Int(size), type(at)))
                at += Int(size)
            }
            return found
        }
        for (moof, moofSize, name) in boxes(start, bytes.count) where name == "moof" {
            for (traf, trafSize, child) in boxes(moof + 8, moof + moofSize) where child == "traf" {
                let parts = boxes(traf + 8, traf + trafSize)
                guard let tfhd = parts.first(where: { $0.2 == "tfhd" }), word(tfhd.0 + 12).map(Int.init) == trackID,
                      let trun = parts.first(where: { $0.2 == "trun" }), let flags = word(trun.0 + 8),
                      flags & 1 != 0, let offset = word(trun.0 + 16) else { continue }
                var length: UInt32?
                if flags & 0x200 != 0 {
                    // sample_count, data_offset, [first_sample_flags], then the first sample's [duration], size.
                    let size = trun.0 + 20 + (flags & 0x4 != 0 ? 4 : 0) + (flags & 0x100 != 0 ? 4 : 0)
                    length = word(size)
                } else if let tfhdFlags = word(tfhd.0 + 8), tfhdFlags & 0x10 != 0 {
                    // track_ID, then [base_data_offset], [sample_description_index], [default_duration], default_size.
                    let size = tfhd.0 + 16 + (tfhdFlags & 0x1 != 0 ? 8 : 0) + (tfhdFlags & 0x2 != 0 ? 4 : 0) + (tfhdFlags & 0x8 != 0 ? 4 : 0)
                    length = word(size)
                }
                return (moof + Int(Int32(bitPattern: offset)), Int(length ?? 0))
            }
        }
        return nil
    }
}

extension SegmentBoxes {
    /// The contents (after the header) of the first box reached by `path` from the top
    /// level, as (offset, end) in `bytes`: `["moov", "trak", "mdia", "mdhd"]`. Sample
    /// descriptions and sample entries are stepped into past their fixed fields.
    static func find(_ path: [String], in bytes: [UInt8]) -> (start: Int, end: Int)? {
        func word(_ at: Int) -> Int? {
            guard at >= 0, at + 4 <= bytes.count else { return nil }
            return Int(bytes[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        }
        /// How many bytes of fixed fields precede a box's children.
        func childOffset(_ type: String) -> Int {
            switch type {
            case "stsd": 8
            case "avc1", "avc3", "hvc1", "hev1", "encv": 78
            case "mp4a", "enca": 28
            default: 0
            }
        }
        var range = (start: 0, end: bytes.count)
        var parent = ""
        for name in path {
            var at = range.start + childOffset(parent)
            var found: (Int, Int)?
            while at + 8 <= range.end, let size = word(at), size >= 8, at + size <= range.end {
                if String(decoding: bytes[(at + 4)..<(at + 8)], as: UTF8.self) == name {
                    found = (at + 8, at + size)
                    break
                }
                at += size
            }
            guard let found else { return nil }
            range = (found.0, found.1)
            parent = name
        }
        return range
    }

    /// The RFC 6381 codec string of the first track of an initialization segment, read from
    /// its sample entry: `avc1.64001f`, `hvc1.1.6.L93.B0`, `mp4a.40.2`; nil for other codecs.
    static func codecString(initialization data: Data) -> String? {
        let bytes = [UInt8](data)
        let stsd = ["moov", "trak", "mdia", "minf", "stbl", "stsd"]
        if let avcC = find(stsd + ["avc1", "avcC"], in: bytes) ?? find(stsd + ["avc3", "avcC"], in: bytes), avcC.end - avcC.start >= 4 {
            let entry = find(stsd + ["avc1"], in: bytes) == nil ? "avc3" : "avc1"
            return entry + "." + bytes[(avcC.start + 1)...(avcC.start + 3)].map { String(format: "%02x", $0) }.joined()
        }
        for entry in ["hvc1", "hev1"] {
            guard let hvcC = find(stsd + [entry, "hvcC"], in: bytes), hvcC.end - hvcC.start >= 13 else { continue }
            let b = Array(bytes[hvcC.start..<hvcC.end])
            let space = ["", "A", "B", "C"][Int(b[1] >> 6)]
            let tier = b[1] & 0x20 != 0 ? "H" : "L"
            let profile = Int(b[1] & 0x1f)
            let compatibility = b[2...5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            var reversed: UInt32 = 0
            for bit in 0..<32 where compatibility & (1 << bit) != 0 { reversed |= 1 << (31 - bit) }
            var constraints = Array(b[6...11])
            while constraints.last == 0 { constraints.removeLast() }
            var parts = [entry, "\(space)\(profile)", String(reversed, radix: 16, uppercase: true), "\(tier)\(b[12])"]
            parts += constraints.map { String($0, radix: 16, uppercase: true) }
            return parts.joined(separator: ".")
        }
        if let esds = find(stsd + ["mp4a", "esds"], in: bytes) {
            // The decoder-specific info (tag 5) starts with the audio object type's 5 bits.
            var at = esds.start + 4
            while at < esds.end {
                let tag = bytes[at]
                at += 1
                var length = 0
                for _ in 0..<4 where at < esds.end {
                    let byte = bytes[at]
                    at += 1
                    length = length << 7 | Int(byte & 0x7f)
                    if byte & 0x80 == 0 { break }
                }
                switch tag {
                case 0x03: at += 3  // ES descriptor: ID, flags; its children follow.
                case 0x04: at += 13 // Decoder config: object type, stream type, buffer, rates.
                case 0x05 where at < esds.end: return "mp4a.40.\(bytes[at] >> 3)"
                default: at += length
                }
            }
            return nil
        }
        return nil
    }

    /// The coded width and height of the first track's visual sample entry.
    static func pictureSize(initialization data: Data) -> Size? {
        let bytes = [UInt8](data)
        guard let stsd = find(["moov", "trak", "mdia", "minf", "stbl", "stsd"], in: bytes) else { return nil }
        // The first sample entry: 8 bytes of header, 6 reserved, 2 index, 16 pre-defined, then size.
        let entry = stsd.start + 8
        guard entry + 36 <= stsd.end else { return nil }
        let width = Int(bytes[entry + 32]) << 8 | Int(bytes[entry + 33])
        let height = Int(bytes[entry + 34]) << 8 | Int(bytes[entry + 35])
        return width > 0 && height > 0 ? Size(width: width, height: height) : nil
    }
}

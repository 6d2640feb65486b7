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
}

/// The few ISO BMFF boxes a segmenting writer writes or reads itself.
enum SegmentBoxes {
    /// The `styp` box a CMAF media segment opens with: CMAF segment (`cmfs`), DASH media
    /// segment (`msdh`) with an index (`msix`).
    static let segmentType: Data = {
        var box = Data()
        func word(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { box.append(contentsOf: $0) } }
        func fourCC(_ s: String) { box.append(contentsOf: Array(s.utf8)) }
        word(28)
        fourCC("styp")
        fourCC("cmfs")
        word(0)
        for brand in ["cmfs", "msdh", "msix"] { fourCC(brand) }
        return box
    }()

    /// Where the first sample of track `trackID` starts in a media segment: its `moof`'s
    /// offset plus the track's `trun` data offset (the writer sets default-base-is-moof).
    /// Nil when the segment has no such run.
    static func firstSampleOffset(ofTrack trackID: Int, in data: Data) -> Int? {
        let bytes = [UInt8](data)
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
        for (moof, moofSize, name) in boxes(0, bytes.count) where name == "moof" {
            for (traf, trafSize, child) in boxes(moof + 8, moof + moofSize) where child == "traf" {
                let parts = boxes(traf + 8, traf + trafSize)
                guard let tfhd = parts.first(where: { $0.2 == "tfhd" }), word(tfhd.0 + 12).map(Int.init) == trackID,
                      let trun = parts.first(where: { $0.2 == "trun" }), let flags = word(trun.0 + 8),
                      flags & 1 != 0, let offset = word(trun.0 + 16) else { continue }
                return moof + Int(Int32(bitPattern: offset))
            }
        }
        return nil
    }
}

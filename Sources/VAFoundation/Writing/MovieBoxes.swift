import Foundation
import MediaCore

/// The clean aperture (`clap`) of QuickTime and MP4 video sample descriptions, read from and
/// written into a file's index (`moov`) directly: FFmpeg 5.1's demuxer does not read `clap`, and
/// its muxer writes one only for uncompressed video, and then as the whole picture.
enum MovieBoxes {
    /// A box inside a byte buffer: where it starts, its header's length and its whole length.
    struct Box {
        let type: String
        let offset: Int
        let headerSize: Int
        let size: Int
        var payload: Int { offset + headerSize }
        var end: Int { offset + size }
    }

    /// The bytes of a `clap` box: 8-byte header and eight 32-bit big-endian numbers.
    static let cleanApertureBoxSize = 40
    /// The fields of a visual sample entry before its child boxes (ISO/IEC 14496-12 `VisualSampleEntry`).
    static let visualSampleEntryFields = 78
    /// An index larger than this is not read into memory.
    static let largestIndex = 256 << 20

    // MARK: Reading

    /// The clean aperture of each video track of the QuickTime/MP4 file at `path` that has one,
    /// by track ID (`tkhd`). Empty for a file without an index or without apertures.
    static func cleanApertures(path: String) -> [Int: CleanAperture] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [:] }
        defer { try? handle.close() }
        guard let (moov, box) = try? index(of: handle) else { return [:] }
        var apertures: [Int: CleanAperture] = [:]
        for trak in children(of: moov, in: box.headerSize..<moov.count) where trak.type == "trak" {
            guard let trackID = trackID(moov, trak), let entry = videoSampleEntry(moov, trak),
                  let clap = children(of: moov, in: (entry.payload + visualSampleEntryFields)..<entry.end).first(where: { $0.type == "clap" }),
                  clap.size >= clap.headerSize + 32 else { continue }
            let values = (0..<8).map { Int32(bitPattern: readUInt32(moov, clap.payload + 4 * $0)) }
            func ratio(_ n: Int32, _ d: Int32) -> Int? { d > 0 ? Int((Double(n) / Double(d)).rounded()) : nil }
            guard let width = ratio(values[0], values[1]), let height = ratio(values[2], values[3]), width > 0, height > 0 else { continue }
            apertures[trackID] = CleanAperture(width: width, height: height, horizontalOffset: ratio(values[4], values[5]) ?? 0,
                                               verticalOffset: ratio(values[6], values[7]) ?? 0)
        }
        return apertures
    }

    // MARK: Writing

    /// Gives the video sample description of each track `apertures` names by track ID (`tkhd`,
    /// which FFmpeg 5.1 numbers stream index + 1) a `clap` box, replacing one already there. The index is rewritten where it lies: at the end of the
    /// file it grows in place; before the media it takes room from the `free` box reserved
    /// after it, or, with none to spare, the media after it moves and every chunk offset with it.
    ///
    /// `movingIndexFirst` puts an index written at the end before the media afterwards, as
    /// FFmpeg's faststart would have: the writer skips faststart when an aperture is due, so
    /// the media moves once, not twice.
    static func setCleanApertures(_ apertures: [Int: CleanAperture], path: String, movingIndexFirst: Bool = false) throws(MediaError) {
        guard !apertures.isEmpty else { return }
        do {
            try rewrite(path: path, apertures: apertures, movingIndexFirst: movingIndexFirst)
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.writeFailed, "cannot write the clean aperture into the index: \(error.localizedDescription)", path: path)
        }
    }

    private static func rewrite(path: String, apertures: [Int: CleanAperture], movingIndexFirst: Bool) throws {
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw MediaError(.writeFailed, "cannot open the file to write its clean aperture", path: path)
        }
        defer { try? handle.close() }
        guard let (old, moov) = try index(of: handle) else {
            throw MediaError(.writeFailed, "the file has no index (moov) to write a clean aperture into", path: path)
        }
        var bytes = old
        var added = 0
        let traks = children(of: bytes, in: moov.headerSize..<bytes.count).filter { $0.type == "trak" }
        // From the last track back, so the offsets of the ones before stay valid.
        for trak in traks.reversed() {
            guard let id = trackID(bytes, trak), let aperture = apertures[id] else { continue }
            guard let entry = videoSampleEntry(bytes, trak), let chain = ancestors(bytes, of: entry) else {
                throw MediaError(.unsupported, "track \(id) has no video sample description to hold a clean aperture", path: path)
            }
            let box = cleanApertureBox(aperture)
            let childRange = (entry.payload + visualSampleEntryFields)..<entry.end
            if let existing = children(of: bytes, in: childRange).first(where: { $0.type == "clap" }) {
                // FFmpeg writes one (the whole picture) for uncompressed video, always 40 bytes.
                guard existing.size == box.count else {
                    throw MediaError(.unsupported, "track \(id) has a clean aperture box of an unusual size to replace", path: path)
                }
                bytes.replaceSubrange(existing.offset..<existing.end, with: box)
            } else {
                bytes.insert(contentsOf: box, at: entry.end)
                grow(&bytes, chain + [entry], by: box.count)
                added += box.count
            }
        }
        let fileSize = Int(try handle.seekToEnd())
        let moovEnd = moov.offset + moov.size
        if moovEnd == fileSize, movingIndexFirst, let first = try firstBoxAfterFileType(in: handle), first < moov.offset {
            // Before the media, right after the file type: the media and its offsets move on by the index's length.
            try shiftChunkOffsets(in: &bytes, after: Int64(first) - 1, by: Int64(bytes.count), path: path)
            try handle.truncate(atOffset: UInt64(moov.offset))
            try moveTail(of: handle, from: first, size: moov.offset, by: bytes.count)
            try write(bytes, at: first, to: handle)
            return
        }
        if moovEnd == fileSize || added == 0 {
            try write(bytes, at: moov.offset, to: handle)
            return
        }
        // The room FFmpeg reserved after an index written first (`moov_size`) takes the growth.
        if let free = try box(at: moovEnd, in: handle), free.type == "free" || free.type == "skip",
           free.size == added || free.size - added >= 8 {
            var spare: [UInt8] = []
            if free.size > added { spare = header("free", size: free.size - added) }
            try write(bytes + spare, at: moov.offset, to: handle)
            return
        }
        // The media after the index moves along: so must every chunk offset pointing past it.
        try shiftChunkOffsets(in: &bytes, after: Int64(moov.offset), by: Int64(added), path: path)
        try moveTail(of: handle, from: moovEnd, size: fileSize, by: added)
        try write(bytes, at: moov.offset, to: handle)
    }

    /// Moves the bytes from `start` to `size` of the file `distance` bytes on, a block at a time
    /// from the end, so the media never has to fit in memory.
    private static func moveTail(of handle: FileHandle, from start: Int, size: Int, by distance: Int) throws {
        let block = 4 << 20
        var end = size
        while end > start {
            let from = max(start, end - block)
            try handle.seek(toOffset: UInt64(from))
            guard let data = try handle.read(upToCount: end - from), data.count == end - from else {
                throw MediaError(.writeFailed, "the file ended while its media was being moved")
            }
            try handle.seek(toOffset: UInt64(from + distance))
            try handle.write(contentsOf: data)
            end = from
        }
    }

    // MARK: Boxes

    /// Where the first top-level box after the file type (`ftyp`, and a `wide` after it) starts.
    private static func firstBoxAfterFileType(in handle: FileHandle) throws -> Int? {
        var offset = 0
        while let box = try box(at: offset, in: handle), box.size >= box.headerSize {
            guard box.type == "ftyp" || box.type == "wide" else { return offset }
            offset = box.end
        }
        return nil
    }

    /// The top-level index (`moov`) of the file, read whole, and where it lies; nil when there is none.
    private static func index(of handle: FileHandle) throws -> ([UInt8], Box)? {
        let fileSize = Int(try handle.seekToEnd())
        var offset = 0
        while offset + 8 <= fileSize {
            guard let box = try box(at: offset, in: handle), box.size >= box.headerSize, box.end <= fileSize else { return nil }
            if box.type == "moov" {
                guard box.size <= largestIndex else { return nil }
                try handle.seek(toOffset: UInt64(offset))
                guard let data = try handle.read(upToCount: box.size), data.count == box.size else { return nil }
                return ([UInt8](data), box)
            }
            offset = box.end
        }
        return nil
    }

    /// The header of the box at `offset` of the file, nil past its end.
    private static func box(at offset: Int, in handle: FileHandle) throws -> Box? {
        try handle.seek(toOffset: UInt64(offset))
        guard let head = try handle.read(upToCount: 16), head.count >= 8 else { return nil }
        let bytes = [UInt8](head)
        let fileSize = Int(try handle.seekToEnd())
        return parseHeader(bytes, at: 0, limit: fileSize - offset).map { Box(type: $0.type, offset: offset, headerSize: $0.headerSize, size: $0.size) }
    }

    /// The boxes directly inside `range` of `bytes`, in order; a malformed one ends the list.
    static func children(of bytes: [UInt8], in range: Range<Int>) -> [Box] {
        var boxes: [Box] = []
        var offset = range.lowerBound
        let upper = min(range.upperBound, bytes.count)
        while offset >= 0, offset + 8 <= upper {
            guard let header = parseHeader(bytes, at: offset, limit: upper - offset),
                  header.size >= header.headerSize else { break }
            let box = Box(type: header.type, offset: offset, headerSize: header.headerSize, size: header.size)
            boxes.append(box)
            offset = box.end
        }
        return boxes
    }

    /// A box header at `offset`: 32-bit size and type, a 64-bit size after them when the first is
    /// 1, and 0 meaning "to the end" (`limit` bytes).
    private static func parseHeader(_ bytes: [UInt8], at offset: Int, limit: Int) -> (type: String, headerSize: Int, size: Int)? {
        guard offset + 8 <= bytes.count else { return nil }
        let size32 = Int(readUInt32(bytes, offset))
        let type = fourCC(bytes, offset + 4)
        switch size32 {
        case 0: return (type, 8, limit)
        case 1:
            guard offset + 16 <= bytes.count else { return nil }
            let size = (UInt64(readUInt32(bytes, offset + 8)) << 32) | UInt64(readUInt32(bytes, offset + 12))
            guard size <= UInt64(limit) else { return nil }
            return (type, 16, Int(size))
        default:
            guard size32 <= limit else { return nil }
            return (type, 8, size32)
        }
    }

    /// The first sample entry of `trak` when its handler is video (`vide`).
    private static func videoSampleEntry(_ bytes: [UInt8], _ trak: Box) -> Box? {
        guard let mdia = child(bytes, trak, "mdia"), let hdlr = child(bytes, mdia, "hdlr"), hdlr.size >= hdlr.headerSize + 12,
              fourCC(bytes, hdlr.payload + 8) == "vide",
              let minf = child(bytes, mdia, "minf"), let stbl = child(bytes, minf, "stbl"), let stsd = child(bytes, stbl, "stsd") else { return nil }
        // Version and flags, then the entry count, then the entries.
        guard stsd.end >= stsd.payload + 8, let entry = children(of: bytes, in: (stsd.payload + 8)..<stsd.end).first,
              entry.size >= entry.headerSize + visualSampleEntryFields else { return nil }
        return entry
    }

    /// The boxes from `moov` down to the sample description holding `entry`, outermost first.
    private static func ancestors(_ bytes: [UInt8], of entry: Box) -> [Box]? {
        var chain: [Box] = []
        var range = 0..<bytes.count
        for type in ["moov", "trak", "mdia", "minf", "stbl", "stsd"] {
            guard let box = children(of: bytes, in: range)
                .first(where: { $0.type == type && $0.offset <= entry.offset && entry.end <= $0.end }) else { return nil }
            chain.append(box)
            range = type == "stsd" ? (box.payload + 8)..<box.end : box.payload..<box.end
        }
        return chain
    }

    private static func child(_ bytes: [UInt8], _ parent: Box, _ type: String) -> Box? {
        children(of: bytes, in: parent.payload..<parent.end).first { $0.type == type }
    }

    /// The `tkhd` track ID of `trak`.
    private static func trackID(_ bytes: [UInt8], _ trak: Box) -> Int? {
        guard let tkhd = child(bytes, trak, "tkhd"), tkhd.size >= tkhd.headerSize + 24, tkhd.end <= bytes.count else { return nil }
        // Version 1 has 64-bit creation and modification times before the ID.
        let offset = bytes[tkhd.payload] == 1 ? tkhd.payload + 20 : tkhd.payload + 12
        return Int(readUInt32(bytes, offset))
    }

    /// Adds `delta` to the size of each box of `chain`.
    private static func grow(_ bytes: inout [UInt8], _ chain: [Box], by delta: Int) {
        for box in chain {
            if box.headerSize == 16 {
                writeUInt64(&bytes, box.offset + 8, UInt64(box.size + delta))
            } else {
                writeUInt32(&bytes, box.offset, UInt32(box.size + delta))
            }
        }
    }

    /// Adds `delta` to every `stco` and `co64` chunk offset past `threshold`.
    private static func shiftChunkOffsets(in bytes: inout [UInt8], after threshold: Int64, by delta: Int64, path: String) throws {
        guard let moov = children(of: bytes, in: 0..<bytes.count).first else { return }
        for trak in children(of: bytes, in: moov.payload..<moov.end) where trak.type == "trak" {
            guard let mdia = child(bytes, trak, "mdia"), let minf = child(bytes, mdia, "minf"), let stbl = child(bytes, minf, "stbl") else { continue }
            for table in children(of: bytes, in: stbl.payload..<stbl.end) where table.type == "stco" || table.type == "co64" {
                guard table.size >= table.headerSize + 8 else {
                    throw MediaError(.writeFailed, "a chunk offset table of the index is malformed", path: path)
                }
                let count = Int(readUInt32(bytes, table.payload + 4))
                let width = table.type == "stco" ? 4 : 8
                guard table.payload + 8 + count * width <= table.end else {
                    throw MediaError(.writeFailed, "a chunk offset table of the index is malformed", path: path)
                }
                for i in 0..<count {
                    let at = table.payload + 8 + i * width
                    if width == 4 {
                        let value = Int64(readUInt32(bytes, at))
                        guard value > threshold else { continue }
                        guard value + delta <= Int64(UInt32.max) else {
                            throw MediaError(.unsupported, "moving the media for the clean aperture would take a 32-bit chunk offset past 4 GiB", path: path)
                        }
                        writeUInt32(&bytes, at, UInt32(value + delta))
                    } else {
                        let value = Int64(bitPattern: (UInt64(readUInt32(bytes, at)) << 32) | UInt64(readUInt32(bytes, at + 4)))
                        guard value > threshold else { continue }
                        writeUInt64(&bytes, at, UInt64(value + delta))
                    }
                }
            }
        }
    }

    /// A `clap` box for `aperture`: every value a whole number over 1.
    static func cleanApertureBox(_ aperture: CleanAperture) -> [UInt8] {
        var box = header("clap", size: cleanApertureBoxSize)
        for value in [aperture.width, 1, aperture.height, 1, aperture.horizontalOffset, 1, aperture.verticalOffset, 1] {
            let bits = UInt32(bitPattern: Int32(clamping: value))
            box += [UInt8(bits >> 24), UInt8((bits >> 16) & 0xFF), UInt8((bits >> 8) & 0xFF), UInt8(bits & 0xFF)]
        }
        return box
    }

    private static func header(_ type: String, size: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 4)
        writeUInt32(&bytes, 0, UInt32(size))
        return bytes + Array(type.utf8)
    }

    private static func write(_ bytes: [UInt8], at offset: Int, to handle: FileHandle) throws {
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(bytes))
    }

    /// The big-endian number at `offset`; 0 where the bytes end first (a damaged index).
    private static func readUInt32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        guard offset >= 0, offset + 4 <= bytes.count else { return 0 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// The four characters at `offset`, empty where the bytes end first.
    private static func fourCC(_ bytes: [UInt8], _ offset: Int) -> String {
        guard offset >= 0, offset + 4 <= bytes.count else { return "" }
        return String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self)
    }

    private static func writeUInt32(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt32) {
        bytes[offset] = UInt8(value >> 24)
        bytes[offset + 1] = UInt8((value >> 16) & 0xFF)
        bytes[offset + 2] = UInt8((value >> 8) & 0xFF)
        bytes[offset + 3] = UInt8(value & 0xFF)
    }

    private static func writeUInt64(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt64) {
        writeUInt32(&bytes, offset, UInt32(value >> 32))
        writeUInt32(&bytes, offset + 4, UInt32(value & 0xFFFF_FFFF))
    }
}

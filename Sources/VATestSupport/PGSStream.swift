import Foundation

/// A PGS subtitle stream (`.sup`, HDMV presentation graphics) of solid rectangles, written
/// segment by segment as a Blu-ray authoring tool would: each cue a display set drawing one
/// object, ended by an empty display set.
public struct PGSStream {
    public struct Cue {
        public var start: Double, end: Double?
        public var x: Int, y: Int, width: Int, height: Int
        /// The palette entry: Y, Cr, Cb, alpha.
        public var colour: (UInt8, UInt8, UInt8, UInt8)

        public init(start: Double, end: Double?, x: Int, y: Int, width: Int, height: Int, colour: (UInt8, UInt8, UInt8, UInt8)) {
            (self.start, self.end, self.x, self.y, self.width, self.height, self.colour) = (start, end, x, y, width, height, colour)
        }
    }

    public static func data(_ cues: [Cue], width: Int, height: Int) -> Data {
        var out = Data()
        var number = 0
        func be(_ value: Int, _ bytes: Int) -> [UInt8] { (0..<bytes).reversed().map { UInt8((value >> (8 * $0)) & 0xFF) } }
        func segment(_ time: Double, _ type: UInt8, _ payload: [UInt8]) {
            out += [0x50, 0x47] + be(Int((time * 90000).rounded()) & 0xFFFF_FFFF, 4) + be(0, 4) + [type] + be(payload.count, 2) + payload
        }
        func composition(_ time: Double, _ cue: Cue, shows: Bool) {
            var pcs = be(width, 2) + be(height, 2) + [0x10] + be(number, 2) + [shows ? 0x80 : 0x00, 0, 0, shows ? 1 : 0]
            if shows { pcs += be(0, 2) + [0, 0] + be(cue.x, 2) + be(cue.y, 2) }
            segment(time, 0x16, pcs)
            segment(time, 0x17, [1, 0] + be(cue.x, 2) + be(cue.y, 2) + be(cue.width, 2) + be(cue.height, 2))
            number += 1
        }
        for cue in cues {
            composition(cue.start, cue, shows: true)
            segment(cue.start, 0x14, [0, 0, 1, cue.colour.0, cue.colour.1, cue.colour.2, cue.colour.3])
            // Every row one run of palette entry 1, then the end of the line.
            var rows: [UInt8] = []
            for _ in 0..<cue.height {
                var left = cue.width
                while left > 0 {
                    let run = min(left, 16383)
                    rows += run < 64 ? [0, 0x80 | UInt8(run), 1] : [0, 0xC0 | UInt8(run >> 8), UInt8(run & 0xFF), 1]
                    left -= run
                }
                rows += [0, 0]
            }
            let object = be(cue.width, 2) + be(cue.height, 2) + rows
            segment(cue.start, 0x15, be(0, 2) + [0, 0xC0] + be(object.count, 3) + object)
            segment(cue.start, 0x80, [])
            if let end = cue.end {
                composition(end, cue, shows: false)
                segment(end, 0x80, [])
            }
        }
        return out
    }
}

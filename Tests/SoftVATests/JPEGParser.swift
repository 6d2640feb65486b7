/// The parts of a baseline JPEG that VA-API's JPEG decode buffers carry, parsed from the file so
/// that a test can drive libva directly (without FFmpeg filling the buffers).
struct BaselineJPEG {
    struct Component { var id: UInt8; var h: UInt8; var v: UInt8; var tq: UInt8 }
    struct ScanComponent { var selector: UInt8; var dc: UInt8; var ac: UInt8 }

    var width = 0, height = 0
    var components: [Component] = []
    var quantTables: [Int: [UInt8]] = [:]                   // zigzag order, as in DQT
    var huffman: [Int: (counts: [UInt8], values: [UInt8])] = [:] // key: class * 2 + id (DC 0, AC 1)
    var restartInterval = 0
    var scan: [ScanComponent] = []
    var scanData: [UInt8] = []                              // entropy-coded data after the SOS header

    enum ParseError: Error { case truncated, unsupported(UInt8) }

    init(_ d: [UInt8]) throws {
        guard d.count > 4, d[0] == 0xFF, d[1] == 0xD8 else { throw ParseError.truncated }
        var i = 2
        while i + 4 <= d.count {
            guard d[i] == 0xFF else { throw ParseError.truncated }
            let marker = d[i + 1]
            let length = Int(d[i + 2]) << 8 | Int(d[i + 3])
            let body = i + 4, end = i + 2 + length
            guard end <= d.count else { throw ParseError.truncated }
            switch marker {
            case 0xDB:
                var p = body
                while p < end {
                    guard d[p] >> 4 == 0 else { throw ParseError.unsupported(marker) } // 8-bit tables only
                    quantTables[Int(d[p] & 15)] = Array(d[(p + 1)..<(p + 65)])
                    p += 65
                }
            case 0xC0:
                height = Int(d[body + 1]) << 8 | Int(d[body + 2])
                width = Int(d[body + 3]) << 8 | Int(d[body + 4])
                for c in 0..<Int(d[body + 5]) {
                    let o = body + 6 + 3 * c
                    components.append(Component(id: d[o], h: d[o + 1] >> 4, v: d[o + 1] & 15, tq: d[o + 2]))
                }
            case 0xC1...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
                throw ParseError.unsupported(marker)
            case 0xC4:
                var p = body
                while p < end {
                    let key = Int(d[p] >> 4) + 2 * Int(d[p] & 15)
                    let counts = Array(d[(p + 1)..<(p + 17)])
                    let n = counts.reduce(0) { $0 + Int($1) }
                    huffman[key] = (counts, Array(d[(p + 17)..<(p + 17 + n)]))
                    p += 17 + n
                }
            case 0xDD:
                restartInterval = Int(d[body]) << 8 | Int(d[body + 1])
            case 0xDA:
                for c in 0..<Int(d[body]) {
                    let o = body + 1 + 2 * c
                    scan.append(ScanComponent(selector: d[o], dc: d[o + 1] >> 4, ac: d[o + 1] & 15))
                }
                // entropy-coded data runs to the EOI marker (FF D9); RST markers stay in it
                var e = end
                while e + 1 < d.count, !(d[e] == 0xFF && d[e + 1] == 0xD9) { e += 1 }
                scanData = Array(d[end..<e])
                return
            default:
                break // APPn, COM
            }
            i = end
        }
        throw ParseError.truncated
    }

    /// The Huffman table of class (0 DC, 1 AC) and id.
    func table(class tableClass: Int, id: Int) -> (counts: [UInt8], values: [UInt8])? {
        huffman[tableClass + 2 * id]
    }
}

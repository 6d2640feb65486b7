/// A read-only view of one 8-bit picture plane (Y, U or V of a yuv420p picture), valid only
/// inside the scoped accessor that produced its pointer.
public struct PlaneView {
    public let baseAddress: UnsafePointer<UInt8>
    public let bytesPerRow: Int
    /// Samples per row that belong to the picture (`bytesPerRow` may add padding).
    public let width: Int
    public let height: Int

    public init(baseAddress: UnsafePointer<UInt8>, bytesPerRow: Int, width: Int, height: Int) {
        precondition(width > 0 && height > 0 && bytesPerRow >= width, "plane \(width)x\(height) with \(bytesPerRow) bytes per row")
        self.baseAddress = baseAddress
        self.bytesPerRow = bytesPerRow
        self.width = width
        self.height = height
    }

    /// The planes of a yuv420p picture of `width`×`height` stored contiguously in `bytes`
    /// (Y, then U, then V, no padding: FFmpeg's `-f rawvideo -pix_fmt yuv420p` layout).
    public static func yuv420p(_ bytes: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> [PlaneView] {
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        precondition(bytes.count >= width * height + 2 * chromaWidth * chromaHeight, "too few bytes for a \(width)x\(height) yuv420p picture")
        let base = bytes.baseAddress!
        let u = base + width * height
        let v = u + chromaWidth * chromaHeight
        return [PlaneView(baseAddress: base, bytesPerRow: width, width: width, height: height),
                PlaneView(baseAddress: u, bytesPerRow: chromaWidth, width: chromaWidth, height: chromaHeight),
                PlaneView(baseAddress: v, bytesPerRow: chromaWidth, width: chromaWidth, height: chromaHeight)]
    }

    /// Bytes of a contiguous yuv420p picture of `width`×`height`.
    public static func yuv420pByteCount(width: Int, height: Int) -> Int {
        width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)
    }
}

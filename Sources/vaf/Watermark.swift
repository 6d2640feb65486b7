import Foundation
import VAFoundation

/// `vaf transcode --watermark PNG[:x,y[,opacity]]`: an image drawn over every exported picture
/// at its own size, its top-left corner at (x, y) in the source's upright picture (default 16, 16).
struct Watermark: Sendable, Hashable {
    var url: URL
    var origin: Point
    var opacity: Double

    /// Parses the option's argument; nil when the position or opacity is malformed. A path
    /// holding a colon is taken whole when what follows its last colon is not a position.
    init?(argument: String) {
        var path = argument
        var numbers: [Double] = []
        if let colon = argument.lastIndex(of: ":") {
            let tail = argument[argument.index(after: colon)...].split(separator: ",", omittingEmptySubsequences: false).map { Double($0) }
            if !tail.isEmpty, tail.allSatisfy({ $0 != nil }) {
                numbers = tail.compactMap { $0 }
                path = String(argument[..<colon])
            }
        }
        guard !path.isEmpty, numbers.isEmpty || numbers.count == 2 || numbers.count == 3 else { return nil }
        url = URL(fileURLWithPath: path)
        origin = numbers.count >= 2 ? Point(x: numbers[0], y: numbers[1]) : Point(x: 16, y: 16)
        opacity = numbers.count == 3 ? numbers[2] : 1
        guard (0...1).contains(opacity), origin.x.isFinite, origin.y.isFinite else { return nil }
    }

    /// Gives `session` a video composition showing `asset` as a player would, with the watermark over it.
    func apply(to session: ExportSession, asset: Asset) async throws {
        var video = try await VideoComposition.videoComposition(withPropertiesOf: asset)
        video.animationTool = VideoCompositionOverlayTool(layers: [try OverlayLayer(image: url, origin: origin, opacity: opacity)])
        session.videoComposition = video
    }
}

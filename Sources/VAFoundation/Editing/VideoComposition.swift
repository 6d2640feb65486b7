/// How to render a composition's video tracks into one picture per output frame
/// (`AVVideoComposition`): the picture size, the frame rate, and a timeline of instructions that
/// say how the source tracks are layered.
///
/// A value type with `var` properties, so `AVMutableVideoComposition` is simply this struct held
/// in a `var`: build it, then hand a copy to the reader or the export session.
public struct VideoComposition: Sendable, Hashable {
    /// The size of the rendered pictures, in pixels.
    public var renderSize: Size
    /// The interval between output frames; must be positive for export.
    public var frameDuration: MediaTime
    /// The track whose frame timing the output follows; 0 (`kCMPersistentTrackID_Invalid`) to
    /// use `frameDuration`.
    public var sourceTrackIDForFrameTiming: Int
    /// The instructions, in time order, which together must cover the timeline without gaps or overlaps.
    public var instructions: [VideoCompositionInstruction]
    /// The scale applied to the rendered picture (1 renders at `renderSize`).
    public var renderScale: Double
    /// The output's colour primaries (`AVVideoColorPrimaries_…` as FFmpeg names them, e.g. "bt709"); nil keeps the sources'.
    public var colorPrimaries: String?
    /// The output's transfer function, e.g. "bt709"; nil keeps the sources'.
    public var colorTransferFunction: String?
    /// The output's Y'CbCr matrix, e.g. "bt709"; nil keeps the sources'.
    public var colorYCbCrMatrix: String?
    /// Layers drawn over every rendered picture (`animationTool`); nil draws none. See
    /// `VideoCompositionOverlayTool` for how it stands in for Core Animation.
    public var animationTool: VideoCompositionOverlayTool?

    /// A video composition; the defaults are Apple's for a new `AVMutableVideoComposition`
    /// (no size, no frame duration, no instructions), which is not yet valid.
    public init(renderSize: Size = .zero, frameDuration: MediaTime = .invalid, sourceTrackIDForFrameTiming: Int = 0,
                instructions: [VideoCompositionInstruction] = [], renderScale: Double = 1,
                colorPrimaries: String? = nil, colorTransferFunction: String? = nil, colorYCbCrMatrix: String? = nil) {
        self.renderSize = renderSize
        self.frameDuration = frameDuration
        self.sourceTrackIDForFrameTiming = sourceTrackIDForFrameTiming
        self.instructions = instructions
        self.renderScale = renderScale
        self.colorPrimaries = colorPrimaries
        self.colorTransferFunction = colorTransferFunction
        self.colorYCbCrMatrix = colorYCbCrMatrix
    }

    /// The frame duration used when no source track gives one: 1/30 s.
    public static let defaultFrameDuration = MediaTime(value: 1, timescale: 30)

    /// A composition that shows `tracks` as a player would (`videoComposition(withPropertiesOf:)`):
    /// the render size is the largest of the tracks' natural sizes after their preferred
    /// transforms; the frame duration is the smallest `minFrameDuration` (1/30 s when none is
    /// known); one instruction covers `0 ..< duration` with one layer instruction per track, in
    /// order (the first on top), each starting with its track's preferred transform. With a single
    /// track, the output follows that track's own frame timing, as Apple's does.
    public static func videoComposition(withPropertiesOf tracks: [VideoCompositionSourceTrack], duration: MediaTime) -> VideoComposition {
        var size = Size.zero
        for track in tracks {
            let shown = track.naturalSize.applying(track.preferredTransform)
            size.width = max(size.width, shown.width)
            size.height = max(size.height, shown.height)
        }
        let frameDuration = tracks.map(\.minFrameDuration).filter { $0.isNumeric && $0 > .zero }.min() ?? defaultFrameDuration
        var instruction = VideoCompositionInstruction(timeRange: MediaTimeRange(start: .zero, duration: duration))
        instruction.layerInstructions = tracks.map(VideoCompositionLayerInstruction.init(track:))
        return VideoComposition(renderSize: size, frameDuration: frameDuration,
                                sourceTrackIDForFrameTiming: tracks.count == 1 ? tracks[0].trackID : 0,
                                instructions: [instruction])
    }

    /// The instruction in effect at `time`, nil when none covers it.
    public func instruction(at time: MediaTime) -> VideoCompositionInstruction? {
        instructions.first { $0.timeRange.contains(time) }
    }

    /// Checks that the composition can render `timeRange` of a composition whose video tracks are
    /// `trackIDs` (`isValid(for:timeRange:validationDelegate:)`), throwing the first problem found:
    /// size, then frame duration, then each instruction in order, then coverage.
    public func validate(forTrackIDs trackIDs: Set<Int>, timeRange: MediaTimeRange) throws(VideoCompositionError) {
        guard renderSize.width > 0, renderSize.height > 0, renderSize.width.isFinite, renderSize.height.isFinite else {
            throw .emptyRenderSize(renderSize)
        }
        guard frameDuration.isNumeric, frameDuration > .zero else { throw .invalidFrameDuration(frameDuration) }
        guard let first = instructions.first, let last = instructions.last else { throw .noInstructions }
        for (index, instruction) in instructions.enumerated() {
            let range = instruction.timeRange
            guard range.isValid, range.start.isNumeric, range.duration.isNumeric, !range.isEmpty else {
                throw .invalidInstructionTimeRange(index: index, range)
            }
            var seen = Set<Int>()
            for layer in instruction.layerInstructions {
                guard trackIDs.contains(layer.trackID) else { throw .unknownTrackID(layer.trackID, instructionIndex: index) }
                guard seen.insert(layer.trackID).inserted else {
                    throw .duplicateLayerInstruction(trackID: layer.trackID, instructionIndex: index)
                }
            }
            if index > 0 {
                let previousEnd = instructions[index - 1].timeRange.end
                if range.start > previousEnd { throw .gapBetweenInstructions(at: previousEnd) }
                if range.start < previousEnd { throw .overlappingInstructions(at: range.start) }
            }
        }
        if first.timeRange.start > timeRange.start { throw .startNotCovered(at: timeRange.start) }
        if last.timeRange.end < timeRange.end { throw .endNotCovered(at: last.timeRange.end) }
    }

    /// True when `validate(forTrackIDs:timeRange:)` finds no problem.
    public func isValid(forTrackIDs trackIDs: Set<Int>, timeRange: MediaTimeRange) -> Bool {
        do {
            try validate(forTrackIDs: trackIDs, timeRange: timeRange)
            return true
        } catch {
            return false
        }
    }
}

/// What `VideoComposition.videoComposition(withPropertiesOf:duration:)` needs to know of a video
/// track, so that it works from composition and asset tracks alike without reading files.
public struct VideoCompositionSourceTrack: Sendable, Hashable {
    public var trackID: Int
    /// The picture size before the preferred transform.
    public var naturalSize: Size
    /// The transform a player applies to show the track upright.
    public var preferredTransform: VideoTransform
    /// The shortest interval between two of the track's frames; invalid when unknown.
    public var minFrameDuration: MediaTime
    /// The track's average frame rate; 0 when unknown.
    public var nominalFrameRate: Float

    /// A source track; an unknown frame duration or rate stays invalid or 0.
    public init(trackID: Int, naturalSize: Size, preferredTransform: VideoTransform = .identity,
                minFrameDuration: MediaTime = .invalid, nominalFrameRate: Float = 0) {
        self.trackID = trackID
        self.naturalSize = naturalSize
        self.preferredTransform = preferredTransform
        self.minFrameDuration = minFrameDuration
        self.nominalFrameRate = nominalFrameRate
    }
}

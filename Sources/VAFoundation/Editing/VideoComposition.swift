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

/// A colour with red, green, blue and alpha components from 0 to 1 (the `CGColor` of an
/// instruction's background), in the output's (BT.709) primaries, gamma-encoded.
public struct RGBAColor: Sendable, Hashable, Codable {
    public var red: Double, green: Double, blue: Double, alpha: Double

    /// A colour from its components, opaque unless `alpha` says otherwise.
    public init(red: Double, green: Double, blue: Double, alpha: Double = 1) {
        (self.red, self.green, self.blue, self.alpha) = (red, green, blue, alpha)
    }

    public static let black = RGBAColor(red: 0, green: 0, blue: 0)
    public static let white = RGBAColor(red: 1, green: 1, blue: 1)
}

/// How the composition is drawn over one time range (`AVMutableVideoCompositionInstruction`):
/// a background colour and the source tracks layered on it.
public struct VideoCompositionInstruction: Sendable, Hashable {
    /// The time range the instruction applies to.
    public var timeRange: MediaTimeRange
    /// The colour shown where no layer covers the picture; opaque black by default.
    public var backgroundColor: RGBAColor
    /// The layers, the first on top, as Apple orders them.
    public var layerInstructions: [VideoCompositionLayerInstruction]
    /// Whether post-processing (Apple's animation tool) runs on this instruction's frames.
    public var enablePostProcessing: Bool

    /// An instruction over `timeRange`; by default opaque black with no layers.
    public init(timeRange: MediaTimeRange, backgroundColor: RGBAColor = .black,
                layerInstructions: [VideoCompositionLayerInstruction] = [], enablePostProcessing: Bool = true) {
        self.timeRange = timeRange
        self.backgroundColor = backgroundColor
        self.layerInstructions = layerInstructions
        self.enablePostProcessing = enablePostProcessing
    }

    /// The tracks whose frames the compositor needs for this instruction: those of its layers.
    public var requiredSourceTrackIDs: [Int] { layerInstructions.map(\.trackID) }

    /// True when a layer's transform, opacity or crop changes during the instruction.
    public var containsTweening: Bool { layerInstructions.contains { $0.containsTweening(in: timeRange) } }
}

/// A problem that makes a video composition unable to render (what Apple reports through
/// `AVVideoCompositionValidationHandling`).
public enum VideoCompositionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The render size has no area.
    case emptyRenderSize(Size)
    /// The frame duration is not a positive number.
    case invalidFrameDuration(MediaTime)
    /// The composition has no instructions.
    case noInstructions
    /// The instruction at `index` has an invalid, empty or non-numeric time range.
    case invalidInstructionTimeRange(index: Int, MediaTimeRange)
    /// No instruction covers the time after one instruction ends and before the next starts.
    case gapBetweenInstructions(at: MediaTime)
    /// An instruction starts before the previous one ends.
    case overlappingInstructions(at: MediaTime)
    /// The first instruction starts after the start of the range to render.
    case startNotCovered(at: MediaTime)
    /// The last instruction ends before the end of the range to render.
    case endNotCovered(at: MediaTime)
    /// A layer instruction names a track the composition does not have.
    case unknownTrackID(Int, instructionIndex: Int)
    /// One instruction has two layer instructions for the same track.
    case duplicateLayerInstruction(trackID: Int, instructionIndex: Int)

    public var description: String {
        switch self {
        case .emptyRenderSize(let size):
            "the render size \(size.width)x\(size.height) has no area"
        case .invalidFrameDuration(let duration):
            "the frame duration \(duration) is not a positive time"
        case .noInstructions:
            "the video composition has no instructions"
        case .invalidInstructionTimeRange(let index, let range):
            "instruction \(index) has an invalid or empty time range \(range)"
        case .gapBetweenInstructions(let time):
            "no instruction covers the time from \(Self.seconds(time)), where one instruction ends and the next has not started"
        case .overlappingInstructions(let time):
            "an instruction starts at \(Self.seconds(time)), before the previous one ends"
        case .startNotCovered(let time):
            "no instruction covers the start of the range at \(Self.seconds(time))"
        case .endNotCovered(let time):
            "the instructions end at \(Self.seconds(time)), before the end of the range"
        case .unknownTrackID(let trackID, let index):
            "instruction \(index) has a layer for track \(trackID), which the composition does not have"
        case .duplicateLayerInstruction(let trackID, let index):
            "instruction \(index) has more than one layer for track \(trackID)"
        }
    }

    private static func seconds(_ time: MediaTime) -> String { "\(time.seconds) s" }
}

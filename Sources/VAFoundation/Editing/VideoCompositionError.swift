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

/// How the audio tracks of an asset are mixed (`AVAudioMix`): volume per track over time.
public struct AudioMix: Sendable, Hashable {
    public var inputParameters: [AudioMixInputParameters]
    public init(inputParameters: [AudioMixInputParameters] = []) {
        self.inputParameters = inputParameters
    }

    /// This mix with every volume of `trackIDs` multiplied by `gain`, tracks without
    /// parameters included (a loudness normalisation's linear gain on top of the mix).
    func scaled(by gain: Float, trackIDs: [Int]) -> AudioMix {
        var scaled = self
        for trackID in trackIDs where !scaled.inputParameters.contains(where: { $0.trackID == trackID }) {
            scaled.inputParameters.append(AudioMixInputParameters(trackID: trackID))
        }
        scaled.inputParameters = scaled.inputParameters.map { trackIDs.contains($0.trackID) ? $0.scaled(by: gain) : $0 }
        return scaled
    }

    /// The volume of `trackID` all through `range`, when it does not change there; nil when it does.
    func constantVolume(trackID: Int, over range: MediaTimeRange) -> Float? {
        inputParameters.first { $0.trackID == trackID }.map { $0.constantVolume(over: range) } ?? 1
    }

    /// The volume of `trackID` at `time`; 1 for tracks without parameters.
    public func volume(trackID: Int, at time: MediaTime) -> Float {
        inputParameters.first { $0.trackID == trackID }?.volume(at: time) ?? 1
    }
}

/// One track's volume over time (`AVMutableAudioMixInputParameters`): steps set with
/// `setVolume(_:at:)` and linear ramps set with `setVolumeRamp`.
public struct AudioMixInputParameters: Sendable, Hashable {
    public var trackID: Int
    private var steps: [Step] = []

    private struct Step: Sendable, Hashable {
        var range: MediaTimeRange
        var from: Float
        var to: Float
    }

    public init(trackID: Int) {
        self.trackID = trackID
    }

    /// Parameters for `track` (`audioMixInputParametersWithTrack:`).
    public init(track: AssetTrack) { self.init(trackID: track.trackID) }

    /// Parameters for a composition's `track`.
    public init(track: MutableCompositionTrack) { self.init(trackID: track.trackID) }

    /// The ramp in effect at `time`, as set: its start and end volumes and its range; a
    /// `setVolume` step reads as a ramp of zero length (`getVolumeRampForTime:`). Nil before any.
    public func getVolumeRamp(for time: MediaTime) -> (startVolume: Float, endVolume: Float, timeRange: MediaTimeRange)? {
        guard let step = steps.last(where: { $0.range.start <= time }) else { return nil }
        return (step.from, step.to, step.range)
    }

    /// From `time` on, the track plays at `volume` (0 silent, 1 unchanged).
    public mutating func setVolume(_ volume: Float, at time: MediaTime) {
        steps.append(Step(range: MediaTimeRange(start: time, duration: .zero), from: volume, to: volume))
        steps.sort { $0.range.start < $1.range.start }
    }

    /// Over `timeRange` the volume moves linearly from `startVolume` to `endVolume`, and stays at
    /// `endVolume` after it.
    public mutating func setVolumeRamp(fromStartVolume startVolume: Float, toEndVolume endVolume: Float, timeRange: MediaTimeRange) {
        steps.append(Step(range: timeRange, from: startVolume, to: endVolume))
        steps.sort { $0.range.start < $1.range.start }
    }

    /// These parameters with every volume multiplied by `gain` (1 before any step becomes `gain`).
    func scaled(by gain: Float) -> AudioMixInputParameters {
        var scaled = self
        scaled.steps = steps.map { Step(range: $0.range, from: $0.from * gain, to: $0.to * gain) }
        if steps.first.map({ $0.range.start > .zero }) ?? true {
            scaled.steps.insert(Step(range: MediaTimeRange(start: .negativeInfinity, duration: .zero), from: gain, to: gain), at: 0)
        }
        return scaled
    }

    /// The volume all through `range` when no step or ramp starts or runs inside it; nil otherwise.
    func constantVolume(over range: MediaTimeRange) -> Float? {
        if steps.contains(where: { $0.range.start > range.start && $0.range.start < range.end }) { return nil }
        guard let step = steps.last(where: { $0.range.start <= range.start }) else { return 1 }
        if step.from == step.to || step.range.end <= range.start { return step.to }
        return nil
    }

    /// The volume at `time`: the last step or ramp starting at or before it (1 before any).
    public func volume(at time: MediaTime) -> Float {
        guard let step = steps.last(where: { $0.range.start <= time }) else { return 1 }
        let length = step.range.duration.seconds
        guard length > 0 else { return step.to }
        let progress = min(max((time - step.range.start).seconds / length, 0), 1)
        return step.from + (step.to - step.from) * Float(progress)
    }
}

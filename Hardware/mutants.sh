#!/usr/bin/env bash
# Mutation testing of user-visible behaviour: each mutation below is a bug a user would notice,
# put into a scratch copy of the tree; the tests named beside it must fail on it. For each one
# the script applies it, builds incrementally, runs that filter (with a time limit: a hang is a
# failure too), restores the file, and at the end prints a table of caught and missed. Each
# test filter is first run on the unmutated copy: one that fails there counts for nothing.
#
#     bash Hardware/mutants.sh                 # every mutation
#     bash Hardware/mutants.sh export reader   # the mutations of these subsystems (or these mutations' ids)
#     bash Hardware/mutants.sh --check         # only check that every mutation still applies
#
# Not part of CI (it builds once per mutation): run it before resolving an issue, for the
# subsystems it touched, and put the table in the closing note. The scratch copy lives in
# ${VAF_MUTANTS_DIR:-/tmp/vaf-mutants} (the files git lists, copied where they differ) and keeps
# its build between runs. Exit status: 0 when
# every mutation run was caught, 1 when one was missed or no longer applies.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"
exec python3 - "$PWD" "$@" <<'PY'
import filecmp, os, shutil, signal, subprocess, sys, time

# Each mutation: id, subsystem, test filter, file, the text to find (exactly once), its replacement.
MUTATIONS = [
    ("time-ticks-truncate", "time", "TimeBaseTests|ExactTrimTests", "Sources/MediaCore/TimeBase.swift",
     "let method = rounding == .quickTime ? .roundHalfAwayFromZero : rounding",
     "let method: MediaTime.RoundingMethod = .roundTowardZero"),
    ("reader-range-whole-ticks", "reader", "ExactTrimTests", "Sources/VAFoundation/Reading/ReaderPipelines.swift",
     "self.end = end.isNumeric ? timeBase.clock?.clampedTicks(of: end, rounding: .roundTowardPositiveInfinity) : nil",
     "self.end = end.isNumeric ? Int64(end.seconds * Double(timeBase.denominator / max(timeBase.numerator, 1))) : nil"),
    ("reader-drops-frame-on-screen", "reader", "ExactTrimTests",
     "Sources/VAFoundation/Reading/ReaderPipelines.swift",
     "                shownBeforeStart = current\n                continue",
     "                continue"),
    ("reader-counts-no-damage", "reader", "DecodeDamageTests", "Sources/VAFoundation/Reading/ReaderPipelines.swift",
     "        damagedPackets.append(time)", "        _ = time"),
    ("reader-ogg-seek-no-fallback", "reader", "ExactTrimTests", "Sources/VAFoundation/Export/ExportSession+Running.swift",
     "if s.timeRange.start > .zero, run", "if Bool(false), run"),
    ("writer-drops-chapters", "writer", "ChapterTests", "Sources/VAFoundation/Writing/WriterEngine.swift",
     "for (id, chapter) in configuration.chapters.enumerated() {", "for (id, chapter) in [Chapter]().enumerated() {"),
    ("writer-partial-lock-not-held", "writer", "PartialFileLockTests", "Sources/VAFoundation/Writing/PartialFileLock.swift",
     "repeat { locked = flock(fd, LOCK_EX) } while locked != 0 && errno == EINTR", "locked = 0"),
    ("writer-opus-keeps-44k", "writer", "OpusSampleRateTests", "Sources/VAFoundation/Writing/WriterCodecs.swift",
     "        guard !rates.contains(rate) else { return rate }\n", "        return rate\n"),
    ("export-chapters-not-moved", "export", "ChapterTests", "Sources/VAFoundation/Asset/Asset.swift",
     "MediaTimeRange(start: first - start, end: last - start)", "MediaTimeRange(start: first, end: last)"),
    ("export-no-shared-decode", "export", "FanOutExportTests", "Sources/VAFoundation/Export/ExportSession+Outputs.swift",
     "        let shared = order.filter { wanted[$0]!.count > 1 }", "        let shared = [SharedDecodeRequest]()"),
    ("export-fanout-hands-wrong-picture", "export", "FanOutExportTests|FanOutWindowTests", "Sources/VAFoundation/Pipeline/FanOut.swift",
     "return .take(s.window[cursor - s.firstIndex])", "return .take(s.window[s.window.count - 1])"),
    ("export-writer-window-loose", "export", "PipelineSeamTests", "Sources/VAFoundation/Export/ExportSession+Running.swift",
     "        writer.interleavingWindow = PipelineBounds.exportInterleavingWindow\n", ""),
    ("export-limit-ends-at-fastest-track", "export", "theEdgesArriveTogetherWhereTheSlowestTrackIs|aReencodeStoppedByItsLengthLimit", "Sources/VAFoundation/Export/ExportSession+Edges.swift",
     ".map { ends[$0] ?? start }.min() } ?? start", ".map { ends[$0] ?? start }.max() } ?? start"),
    ("export-subtitles-alone-exported", "export", "subtitlesAloneAreNoExportOfAFileWhosePicturesAreUnreadable", "Sources/VAFoundation/Export/ExportSession+Graph.swift",
     "!sourceTracks.contains(where: { $0.mediaType == .video || $0.mediaType == .audio })", "!tracks.contains(where: { $0.mediaType == .video || $0.mediaType == .audio })"),
    ("batch-starts-after-signal", "batch", "BatchRunnerTests|sigtermStopsTheBatchCleanlyWith143", "Sources/vaf/BatchRunner.swift",
     "                if !Task.isCancelled { startNext() }", "                startNext()"),
    ("confinement-never-checked", "confinement", "ConfinementTests", "Sources/FFmpegSupport/ExclusiveUse.swift",
     "ordering: .acquiring).exchanged else {", "ordering: .acquiring).exchanged || true else {"),
    ("confinement-never-given-back", "confinement", "ConfinementTests", "Sources/FFmpegSupport/ExclusiveUse.swift",
     "package func end() { held.store(false, ordering: .releasing) }", "package func end() {}"),
    ("confinement-demuxer-read-unchecked", "confinement", "ConfinementTests", "Sources/FFmpegSupport/Demuxer.swift",
     "-> ReadResult {\n        use.begin(); defer { use.end() }\n", "-> ReadResult {\n"),
    ("package-zero-length-cue-shown", "package", "PackageSubtitleTests", "Sources/VAFoundation/Export/StreamingSubtitles.swift",
     "let last = openEnded ? next : cue.start + cue.duration", "let last = cue.duration > .zero ? cue.start + cue.duration : next"),
    ("composition-segments-not-opened-ahead", "composition", "SegmentOpenAheadTests", "Sources/VAFoundation/Editing/CompositionPipelines.swift",
     "        current = opened\n        openAhead()\n", "        current = opened\n"),
    ("composition-opens-the-wrong-segment-ahead", "composition", "SegmentOpenAheadTests", "Sources/VAFoundation/Editing/CompositionPipelines.swift",
     "segments.indices.first(where: { $0 > index && segments[$0].sourceTrack != nil })", "segments.indices.first(where: { $0 >= index && segments[$0].sourceTrack != nil })"),
    ("muxer-truncates-regardless", "writer", "MuxerOpeningTests", "Sources/FFmpegSupport/Muxer.swift",
     "if !truncating { av_dict_set(&options, \"truncate\", \"0\", 0) }", "_ = truncating"),
    ("muxer-waits-for-sparse-streams", "writer", "MuxerQueueTests", "Sources/FFmpegSupport/Muxer.swift",
     "awaited: (type == AVMEDIA_TYPE_VIDEO || type == AVMEDIA_TYPE_AUDIO) && !isCoverPicture)", "awaited: type != AVMEDIA_TYPE_ATTACHMENT)"),
    ("muxer-waits-for-ended-streams", "writer", "MuxerQueueTests", "Sources/FFmpegSupport/PacketInterleaver.swift",
     "        streams[index].ended = true", "        _ = index"),
    ("export-keeps-finished-audio-held", "writer", "MuxerQueueTests", "Sources/VAFoundation/Export/ExportSession+Running.swift",
     "        writer.keepsFinishedAudioTrimmable = false\n", ""),
    ("muxer-error-counted-as-encoder", "writer", "aFullDiskExits75WithNothingLeft", "Sources/VAFoundation/Writing/WriterEngine.swift",
     '["av_interleaved", "av_write", "avformat", "avio"]', '["av_interleaved", "avformat", "avio"]'),
    ("muxer-ignores-promises", "writer", "MuxerQueueTests", "Sources/FFmpegSupport/PacketInterleaver.swift",
     "        streams[index].noPacketBefore = (ticks, timeBase)", "        _ = (ticks, timeBase)"),
    ("muxer-writes-latest-first", "writer", "MuxerQueueTests", "Sources/FFmpegSupport/PacketInterleaver.swift",
     "av_compare_ts(dts, stream.timeBase, bestTime, streams[b].timeBase) >= 0 { continue }",
     "av_compare_ts(dts, stream.timeBase, bestTime, streams[b].timeBase) <= 0 { continue }"),
    ("remux-header-waits-for-late-track", "writer", "MuxerQueueTests", "Sources/VAFoundation/Export/ExportSession+Edges.swift",
     "if let sample { try s.sink.prepareCopy(from: sample, input: inputs[i]) }", "_ = sample"),
    ("writer-no-audio-priming-promise", "writer", "MuxerQueueTests", "Sources/VAFoundation/Writing/WriterStages.swift",
     "var earliestPacketTime: Int64? { chunkStart.map { $0 - Int64(encoder.initialPadding) - 1 } }", "var earliestPacketTime: Int64? { nil }"),
    ("writer-vpp-failure-not-resumed", "hardware", "aLadderRenditionWhoseVideoProcessorFailsGoesOnInSoftware", "Sources/VAFoundation/Writing/WriterEngine.swift",
     "            if pipeline.configuration.resumable && pipeline.configuration.hardwareDevice != nil { pipeline.deviceFailed = true }\n            throw MediaError(.hardwareFailed, \"\\(subject(i)): the video processor failed",
     "            throw MediaError(.hardwareFailed, \"\\(subject(i)): the video processor failed"),
    ("writer-audio-held-too-long", "writer", "theWriterHoldsBackAtMostTheHoldbacksWorthOfEncodedAudio", "Sources/VAFoundation/Writing/WriterEngine.swift",
     "let pts = first.pts, newest - pts > window {", "let pts = first.pts, newest - pts > 4 * window {"),
    ("package-cue-settings-dropped", "package", "placedCuesKeepTheirPlace", "Sources/VAFoundation/Export/StreamingSubtitles.swift",
     'let settings = cue.settings.isEmpty ? "" : " " + cue.settings', 'let settings = ""'),
    ("package-ass-style-alignment-ignored", "package", "ASSPlacementTests|placedCuesKeepTheirPlace", "Sources/VAFoundation/Export/ASSPlacement.swift",
     'var alignment = style.flatMap { script.alignments[$0] } ?? script.alignments["Default"] ?? 2', "var alignment = 2"),
    ("package-ass-last-override-wins", "package", "ASSPlacementTests", "Sources/VAFoundation/Export/ASSPlacement.swift",
     "                    alignmentOverridden = true\n                } else if !alignmentOverridden, tag.hasPrefix(\"a\")",
     "                } else if !alignmentOverridden, tag.hasPrefix(\"a\")"),
    ("package-ass-move-placed-at-its-end", "package", "ASSPlacementTests", "Sources/VAFoundation/Export/ASSPlacement.swift",
     "where it first shows.\n                    point = (numbers[0], numbers[1])",
     "where it first shows.\n                    point = (numbers[2], numbers[3])"),
    ("package-ass-later-placement-wins", "package", "ASSPlacementTests", "Sources/VAFoundation/Export/ASSPlacement.swift",
     "} else if point == nil, let numbers = arguments(of: \"move\"", "} else if let numbers = arguments(of: \"move\""),
    ("package-subrip-placement-ignored", "package", "placedCuesKeepTheirPlace", "Sources/VAFoundation/Export/StreamingSubtitles.swift",
     '} else if ["subrip", "srt"].contains(parameters.codec.name) {', '} else if Bool(false) {'),
    ("package-upright-ends-at-container-duration", "package", "aRotatedPhoneClipKeepsItsFrameTiming", "Sources/VAFoundation/Export/StreamingPackager.swift",
     "duration: max(duration, pictureEnd))", "duration: duration)"),
    ("package-unreadable-rendition-fails-all", "package", "aPackageLeavesOutTheRenditionOfATrackWithoutReadablePackets",
     "Sources/VAFoundation/Export/ExportSession+Outputs.swift",
     "                      !branches[i].run.withLock({ $0.readsNothing }) else { continue }", "                      true else { continue }"),
    ("composition-ignores-timing-track", "compositions", "theTimingTracksPicturesTimeTheOutput|aRotatedPhoneClipKeepsItsFrameTiming",
     "Sources/VAFoundation/Editing/AssetReaderVideoCompositionOutput.swift",
     "timingInput = composition.sourceTrackIDForFrameTiming == 0 ? nil", "timingInput = Bool(true) ? nil"),
    ("composition-fills-a-sliver", "compositions", "theTimingTracksPicturesTimeTheOutput",
     "Sources/VAFoundation/Editing/AssetReaderVideoCompositionOutput.swift",
     "guard (end - filled) * Int32(2) >= step else", "guard Bool(true) else"),
    ("thumbnails-no-seek-back", "thumbnails", "stillsOfAStreamWithOneKeyframeAreThePicturesAtTheirTimes",
     "Sources/VAFoundation/Images/AssetImageGenerator.swift",
     "guard shown == nil, let last = from, last > first, keyframes.isEmpty else { break }", "guard Bool(false), let last = from else { break }"),
    ("thumbnails-stream-start-searched", "thumbnails", "stillsOfAStreamWithOneKeyframeAreThePicturesAtTheirTimes",
     "Sources/VAFoundation/Images/AssetImageGenerator.swift",
     "let rewound = keyframes.isEmpty && time", "let rewound = Bool(false) && time"),
    ("export-reports-the-span-not-what-was-written", "export", "aFileCutShortReportsTheSecondsItWrote",
     "Sources/VAFoundation/Export/ExportSession+Report.swift",
     "result.duration = Self.writtenLength(span, ends: tally.ends.withLock { $0 }, sparse: tally.sparse)", "result.duration = span.length"),
    ("package-older-layout-skipped", "package", "aPackageOfAnOlderLayoutIsMadeAgain", "Sources/vaf/Package.swift",
     " + \" layout=\\(Self.layout)\"", ""),
    ("demux-queue-unbounded", "reader", "DemuxerQueueTests", "Sources/VAFoundation/Reading/AssetReader.swift",
     "                let passesBound = packet.streamIndex != stream\n", "                let passesBound = Bool(false)\n"),
    ("demux-separate-skips-one-too-few", "reader", "DemuxerQueueTests", "Sources/VAFoundation/Reading/AssetReader.swift",
     "        while passed < taken {", "        while passed + 1 < taken {"),
    ("demux-separate-ignores-seek", "reader", "DemuxerQueueTests", "Sources/VAFoundation/Reading/AssetReader.swift",
     "        if let startingSeek {\n            let (queues, _)", "        if let startingSeek, Bool(false) {\n            let (queues, _)"),
    ("demux-separate-hands-out-other-streams", "reader", "DemuxerQueueTests", "Sources/VAFoundation/Reading/AssetReader.swift",
     "        } while packet.streamIndex != stream", "        } while Bool(false)"),
    ("fanout-parked-branch-never-woken", "export", "FanOutWindowTests", "Sources/VAFoundation/Pipeline/FanOut.swift",
     "        for wake in wakes { wake() }\n", ""),
    ("fanout-two-branches-read-at-once", "export", "FanOutWindowTests", "Sources/VAFoundation/Pipeline/FanOut.swift",
     "            guard let cursor = cursors[branch], cursor >= firstIndex + window.count, !ended, failure == nil,\n                  !reading, reserved == nil,",
     "            guard let cursor = cursors[branch], cursor >= firstIndex + window.count, !ended, failure == nil,\n                  !reading,"),
    ("graph-one-output-failure-stops-all", "export", "GraphSchedulerTests", "Sources/VAFoundation/Pipeline/GraphScheduler.swift",
     "func isStopped(group: Int) -> Bool { groups[group]?.failure != nil }", "func isStopped(group: Int) -> Bool { groups.values.contains { $0.failure != nil } }"),
    ("fanout-edge-blocks-its-thread", "export", "aLadderIsDecodedOnceAndEachRenditionMatchesFFmpegsScale", "Sources/VAFoundation/Export/ExportSession+Edges.swift",
     "                    if let waiting = output.waitToRead() { return .blocked(whenReady: waiting) }\n", ""),
    ("graph-parked-edges-left-waiting", "export", "GraphSchedulerTests|PipelineSeamTests", "Sources/VAFoundation/Pipeline/GraphScheduler.swift",
     "                ending += g.blocked\n", ""),
    ("graph-every-wake-steps", "export", "GraphSchedulerTests", "Sources/VAFoundation/Pipeline/GraphScheduler.swift",
     "guard state.withLock({ $0.groups[group]?.blocked.remove(i) != nil }) else { return }", "state.withLock { _ = $0.groups[group]?.blocked.remove(i) }"),
    ("export-edge-device-failure-not-resumed", "hardware", "aDeviceFailingMidStreamGoesOnInSoftwareFromTheLastKeyframe", "Sources/VAFoundation/Export/ExportSession+Edges.swift",
     "            if resumable && deviceFailed {", "            if Bool(false) {"),
    ("export-edge-damaged-track-fails-export", "reader", "DecodeDamageTests", "Sources/VAFoundation/Export/ExportSession+Edges.swift",
     "            if failure.underlying is DecodeTally && handedCount > 0 {", "            if Bool(false) {"),
    ("export-retry-rereads-settings", "export", "aSettingChangedWhileExportingLeavesTheRetryAlone", "Sources/VAFoundation/Export/ExportSession+Running.swift",
     "        let (allTracks, duration) = try await asset.load(.tracks, .duration)\n", "        let (allTracks, duration) = try await asset.load(.tracks, .duration)\n        let s = settings.withLock { $0 }\n"),
    ("fanout-audio-encoded-per-output", "export", "audioWrittenAlikeIsEncodedOnceForEveryOutput", "Sources/VAFoundation/Export/ExportSession+Outputs.swift",
     "            let source: AssetReaderOutput = if let encoding = request.encoding {", "            let source: AssetReaderOutput = if let encoding = request.encoding, Bool(false) {"),
    ("fanout-audio-shared-under-length-limit", "export", "underAFileLengthLimitEachOutputEncodesAndEndsItsOwnAudio", "Sources/VAFoundation/Export/ExportSession+Outputs.swift",
     "            let encoding = s.fileLengthLimit != nil ? nil", "            let encoding = Bool(false) ? nil"),
    ("fanout-audio-session-start-ignored", "export", "audioWrittenAlikeIsEncodedOnceForEveryOutput", "Sources/VAFoundation/Pipeline/SharedAudioEncoding.swift",
     "            let start = timeBase.ticks(of: sample.presentationTimeStamp - sessionStart) ?? 0", "            let start = timeBase.ticks(of: sample.presentationTimeStamp) ?? 0"),
    ("export-failed-ladder-keeps-outputs", "export", "FanOutExportTests", "Sources/VAFoundation/Export/ExportSession+Outputs.swift",
     "                if case .success = result { unlink(outputs[i].url.path) }", "                _ = result"),
    ("export-dv-loss-silent", "export", "LossWarningTests", "Sources/VAFoundation/Export/ExportSession+Planning.swift",
     "        if let dolbyVision = video?.dolbyVision, dolbyVision.hasRPU {", "        if let dolbyVision = video?.dolbyVision, dolbyVision.hasRPU, false {"),
    ("assistant-portrait-box-not-turned", "assistant", "portraitStaysPortrait|ExportPresetTests", "Sources/VAFoundation/Export/OutputSettingsAssistant.swift",
     "let portrait = turn && sourceHeight > sourceWidth", "let portrait = false"),
    ("hardware-size-limit-ignored", "hardware", "sizeLimitsDecideTheVerdictWhenReported", "Sources/MediaCore/Geometry.swift",
     "public func fits(_ other: Size) -> Bool { other.width <= width && other.height <= height }", "public func fits(_ other: Size) -> Bool { true }"),
    ("assistant-table-not-interpolated", "assistant", "ExportPresetTests", "Sources/VAFoundation/Export/ExportBitRate.swift",
     "let t = (mb - lo.macroblocks) / (hi.macroblocks - lo.macroblocks)", "let t = 0.0"),
    ("aspect-bitstream-wins", "reader", "PixelAspectTests", "Sources/FFmpegSupport/Decoder.swift",
     "if let containerSampleAspectRatio { frame.pointer.pointee.sample_aspect_ratio = containerSampleAspectRatio.avRational }",
     "_ = containerSampleAspectRatio"),
    ("compositions-ramp-reversed", "compositions", "CompositionTests|OverlayTests", "Sources/VAFoundation/Editing/Internal/RampTimeline.swift",
     "return Value.interpolate(from: change.start, to: change.end, fraction: fraction)",
     "return Value.interpolate(from: change.start, to: change.end, fraction: 1 - fraction)"),
    ("verify-concealment-ignored", "verify", "VerifyCommandTests", "Sources/VAFoundation/Reading/AssetVerifier.swift",
     "if frame.isConcealed { concealed.append(at) }", "_ = frame.isConcealed"),
    ("verify-cut-file-whole", "verify", "VerifyCommandTests", "Sources/VAFoundation/Reading/AssetVerifier.swift",
     "return declaredEnd - decodedEnd > AssetVerification.missingTolerance ? declaredEnd - decodedEnd : nil", "return nil"),
    ("verify-jumps-ignored", "verify", "VerifyCommandTests", "Sources/VAFoundation/Reading/AssetVerifier.swift",
     "public static let gapTolerance = MediaTime(value: 10, timescale: 1)", "public static let gapTolerance = MediaTime(value: 100, timescale: 1)"),
    ("verify-unread-samples-ignored", "verify", "VerifyCommandTests", "Sources/VAFoundation/Reading/AssetVerifier.swift",
     "return declared > 0 && unread > 2 && Double(read) < 0.95 * Double(declared) ? unread : nil", "return nil"),
    ("export-track-ending-early-silent", "export", "VerifyCommandTests", "Sources/VAFoundation/Export/ExportSession+Report.swift",
     "guard declared.isNumeric, declared - end > AssetVerification.missingTolerance else { return nil }", "return nil"),
    ("export-cut-sample-copied", "export", "VerifyCommandTests", "Sources/VAFoundation/Reading/ReaderPipelines.swift",
     "let listed = session.indexedSampleSize(stream: track.streamIndex, at: position), packet.size < listed {",
     "let listed = session.indexedSampleSize(stream: track.streamIndex, at: position), packet.size < 0 && listed > 0 {"),
    ("package-escapes-through-link", "package", "PackageCommandTests", "Sources/vaf/Package.swift",
     "if let escape = BatchJob.escapeThroughLink(of: folder, from: outputDirectory) { return report.failing(escape) }", ""),
    ("compositions-mix-ramp-not-linear", "compositions", "CompositionAudioMixTests", "Sources/VAFoundation/Reading/AudioMix.swift",
     "return step.from + (step.to - step.from) * Float(progress)", "return step.from + (step.to - step.from) * Float(progress * progress)"),
    ("compositions-mix-one-volume-for-all", "compositions", "CompositionAudioMixTests", "Sources/VAFoundation/Reading/AudioMix.swift",
     "inputParameters.first { $0.trackID == trackID }?.volume(at: time) ?? 1", "inputParameters.first?.volume(at: time) ?? 1"),
    ("render-audio-crossfade-dropped", "render", "RenderCommandTests", "Sources/VAFoundation/Editing/OpenTimelineIO.swift",
     "report.audioMix = audioMix(of: composition, dissolves: layout.dissolves)", "report.audioMix = nil"),
    ("thumbnails-cue-wrong-tile", "thumbnails", "ThumbnailsCommandTests", "Sources/vaf/Thumbnails.swift",
     "cues.append(\"\\(Self.vttTime(start)) --> \\(Self.vttTime(end))\\n\\(name)#xywh=\\(x),\\(y),",
     "cues.append(\"\\(Self.vttTime(start)) --> \\(Self.vttTime(end))\\n\\(name)#xywh=\\((x + tileWidth) % (grid.columns * tileWidth)),\\(y),"),
    ("thumbnails-killed-partials-left", "thumbnails", "SignalCommandTests", "Sources/vaf/Thumbnails.swift",
     "where: { $0.hasPrefix(base + \"-\") || $0 == base + \".vtt\" })", "where: { _ in false })"),
    ("thumbnails-no-index-first-picture", "thumbnails", "ThumbnailsCommandTests", "Sources/VAFoundation/Images/AssetImageGenerator.swift",
     "let goal = before.isPositiveInfinity ? target : earliest", "let goal = earliest"),
    ("thumbnails-cue-half-tile-late", "thumbnails", "ThumbnailsCommandTests", "Sources/vaf/Thumbnails.swift",
     "let start = n == 0 ? MediaTime.zero : Self.midpoint(times[n - 1], times[n])",
     "let start = times[n]"),
    ("batch-resume-ignores-quality", "batch", "ResumeCommandTests", "Sources/vaf/ResumeJournal.swift",
     "\"quality=\\(quality.map(String.init) ?? \"none\")\", ", ""),
    ("batch-slurm-step-ignored", "batch", "BatchPlanTests|ShardCommandTests|SlurmClusterTests", "Sources/vaf/ShardAssignment.swift",
     "return ShardAssignment(shard: Shard(index: (id - min) / step, count: count), sources: sources)",
     "return ShardAssignment(shard: Shard(index: Swift.min(id - min, count - 1), count: count), sources: sources)"),
    ("batch-made-meanwhile-fails", "batch", "ResumeCommandTests", "Sources/vaf/BatchRunner.swift",
     "guard (error as? MediaError)?.code == .outputExists, let journal, journal.madeByAnotherRun(output, plan: planFingerprint) else { return nil }",
     "guard (error as? MediaError)?.code == .outputExists, let journal, journal.madeByAnotherRun(output, plan: planFingerprint), Bool(false) else { return nil }"),
    ("batch-temporary-exit-65", "batch", "ExitCodeCommandTests", "Sources/vaf/BatchRunner.swift",
     "? exitTemporaryFailure : exitBadInput", "? exitBadInput : exitBadInput"),
    ("batch-ladder-shares-no-name", "batch", "LadderCommandTests", "Sources/vaf/Transcode.swift",
     "presets.count > 1 && name == OutputNamer.defaultTemplate ? \"{dir}/{name}-{preset}.{ext}\" : name",
     "name"),
    ("hardware-ladder-decodes-per-output", "hardware", "HardwareExportTests|HardwarePackageTests", "Sources/VAFoundation/Export/ExportSession+Outputs.swift",
     "let onDevice = plan.device != nil && plan.hardware?.scalesOnDevice == true", "let onDevice = false"),
    ("hardware-session-limit-ignored", "hardware", "HardwareExportTests", "Sources/HardwareAcceleration/VADevice.swift",
     "sessions = ExportSlots(limit: max(1, maximumConcurrentSessions))", "sessions = ExportSlots(limit: 1000)"),
    ("hardware-display-never-terminated", "hardware", "DeviceLifetimeTests", "Sources/FFmpegSupport/HardwareDeviceContext.swift",
     "            Unmanaged<AnyObject>.fromOpaque(opaque).release()", "            _ = opaque"),
    ("hardware-display-kept-by-the-wrong-owner", "hardware", "DeviceLifetimeTests", "Sources/HardwareAcceleration/VADevice.swift",
     "HardwareDeviceContext(vaapiKeepingAlive: opened)", "HardwareDeviceContext(vaapiKeepingAlive: opened.log)"),
    ("hardware-plain-composition-on-host", "hardware", "aPlainCompositionIsDecodedScaledAndJoinedOnTheDevice", "Sources/VAFoundation/Export/ExportSession+Planning.swift",
     "decisions.allSatisfy({ $0.path == .hardware && $0.scalesOnDevice })", "decisions.allSatisfy({ _ in false })"),
    ("hardware-composition-gap-uploaded", "hardware", "aPlainCompositionIsDecodedScaledAndJoinedOnTheDevice", "Sources/VAFoundation/Editing/CompositionPipelines.swift",
     "            let canvas = SurfaceLayer(", "            throw FFmpegError(code: .invalidArgument, function: \"mutant\")\n            let canvas = SurfaceLayer("),
    ("softva-global-alpha-ignored", "softva", "VPPCompositionTests|DeviceCompositionTests", "Hardware/SoftVA/softva_driver.c",
     "blend.global_alpha = layer->blend_state.global_alpha;", "blend.global_alpha = 1.0f;"),
    ("softva-jpeg-decodes-uncounted", "softva", "HardwareExportTests", "Hardware/SoftVA/softva_driver.c",
     "            drv->counters.decodes++;\n            drv->counters.codec_decodes[SVA_CODEC_JPEG]++;",
     "            drv->counters.codec_decodes[SVA_CODEC_JPEG]++;"),
    ("asset-inspects-twice", "asset", "AssetTests", "Sources/VAFoundation/Asset/Asset.swift",
     "            if let task { return try await task.value }", "            if let task, Bool(false) { return try await task.value }"),
    ("segments-no-forced-keyframe", "segments", "SegmentedWriterTests", "Sources/VAFoundation/Writing/WriterEngine.swift",
     "let keyframe = keyframeIsDue(at: start, pipeline) || flushed", "let keyframe = flushed"),
    ("segments-audio-held-to-the-end", "segments", "SegmentedWriterTests|FragmentCutterTests", "Sources/VAFoundation/Writing/FragmentCutter.swift",
     "cut.map { first.time < $0.time } ?? final", "cut.map { _ in false } ?? final"),
    ("segments-cutter-holds-the-fragment", "segments", "FragmentCutterTests|SegmentedWriterTests", "Sources/VAFoundation/Writing/FragmentCutter.swift",
     "cut.map { $0.leadEnd > leadHandedOn } ?? true", "cut.map { $0.leadEnd > leadHandedOn } ?? final"),
    ("segments-cutter-compacts-the-wrong-samples", "segments", "FragmentCutterTests", "Sources/VAFoundation/Writing/FragmentCutter.swift",
     "                items.removeFirst(head)\n", "                items.removeFirst(head - 1)\n"),
    ("segments-every-fragment-ends-a-segment", "segments", "FragmentCutterTests|theIFramePlaylistFetchesEveryKeyframeAlone", "Sources/VAFoundation/Writing/FragmentCutter.swift",
     "            endsSegment = cut.endsSegment\n", "            endsSegment = true\n"),
    ("package-iframes-at-segment-starts-only", "package", "theIFramePlaylistFetchesEveryKeyframeAlone", "Sources/VAFoundation/Export/ExportSession+Running.swift",
     "            writer.fragmentsAtEveryKeyframe = true\n", ""),
    ("package-iframe-range-from-segment-start", "package", "theIFramePlaylistFetchesEveryKeyframeAlone", "Sources/VAFoundation/Writing/WriterEngine.swift",
     "fragmentOffset: fragment.start,", "fragmentOffset: 0,"),
    ("segments-cut-before-keyframe", "segments", "SegmentedWriterTests|FragmentCutterTests", "Sources/VAFoundation/Writing/FragmentCutter.swift",
     "if item.track == leadTrack && item.isSync {", "if item.track == leadTrack {"),
    ("segments-held-audio-late", "segments", "SegmentedWriterTests", "Sources/VAFoundation/Writing/WriterEngine.swift",
     "                    pipeline.held = []\n                    for packet in held { try write(packet, pipeline) }\n",
     "                    _ = held\n"),
    ("segments-requests-overwritten", "segments", "FragmentCutterTests", "Sources/VAFoundation/Writing/FragmentCutter.swift",
     "mutating func requestCut(at time: MediaTime) { requestedCuts.append(time) }", "mutating func requestCut(at time: MediaTime) { requestedCuts = [time] }"),
    ("package-bandwidth-is-average", "package", "PackageCommandTests|StreamingPackageTests", "Sources/VAFoundation/Export/StreamingPlaylists.swift",
     "\"BANDWIDTH=\\(v.peakBitRate + audioPeak)\"", "\"BANDWIDTH=\\(v.averageBitRate + audioAverage)\""),
    ("package-codecs-from-settings", "package", "PackageCommandTests|StreamingPackageTests", "Sources/VAFoundation/Writing/AssetWriter+Segments.swift",
     "return entry + \".\" + bytes[(avcC.start + 1)...(avcC.start + 3)]", "return entry + \".640028\" + bytes[(avcC.start + 1)..<(avcC.start + 1)]"),
    ("package-half-built-left", "package", "PackageCommandTests", "Sources/VAFoundation/Export/StreamingPackager.swift",
     "            try? FileManager.default.removeItem(at: building)\n            // The hidden folder is gone",
     "            _ = building\n            // The hidden folder is gone"),
    ("package-renditions-misaligned", "package", "PackageCommandTests", "Sources/VAFoundation/Export/StreamingPackager.swift",
     ".init(profile: .mpeg4CMAFCompliant, interval: o.segmentDuration, keyframeInterval: keyframeInterval,",
     ".init(profile: .mpeg4CMAFCompliant, interval: o.segmentDuration + MediaTime(value: Int64(recorders.count), timescale: 3), keyframeInterval: keyframeInterval,"),
    ("tracks-subtitles-not-converted", "tracks", "SubtitleAndAudioTrackTests", "Sources/VAFoundation/Writing/WriterEngine.swift",
     "if case .subtitle(let settings) = pipeline.configuration.settings, parameters.codec.name != settings.codec.rawValue {",
     "if case .subtitle(let settings) = pipeline.configuration.settings, parameters.codec.name != settings.codec.rawValue, Bool(false) {"),
    ("tracks-bitmaps-fail-the-export", "tracks", "SubtitleAndAudioTrackTests", "Sources/VAFoundation/Export/ExportSession+Planning.swift",
     "            if WriterCodecs.incompatibility(of: codec, in: fileType, mediaType: .subtitle) == nil {",
     "            if WriterCodecs.incompatibility(of: codec, in: fileType, mediaType: .subtitle) == nil || !codec.isTextSubtitle {"),
    ("tracks-cue-across-start-dropped", "tracks", "SubtitleAndAudioTrackTests", "Sources/VAFoundation/Writing/WriterEngine.swift",
     "                guard duration.isNumeric, end > sessionStart else { return }", "                return"),
    ("tracks-sparse-holds-the-writer", "tracks", "TrackOptionsCommandTests|aSubtitleInputHoldsNoOtherInputBack", "Sources/VAFoundation/Writing/WriterCore.swift",
     "where j != i && !other.finished && other.mediaType != .subtitle {", "where j != i && !other.finished {"),
    ("tracks-every-track-default", "tracks", "SubtitleAndAudioTrackTests", "Sources/VAFoundation/Export/ExportSession+Graph.swift",
     "for edge in kept { edge.input.marksOutputTrackAsEnabled = edge.input === chosen?.input }",
     "for edge in kept { edge.input.marksOutputTrackAsEnabled = true }"),
    ("tracks-audio-selection-ignored", "tracks", "SubtitleAndAudioTrackTests|TrackOptionsCommandTests", "Sources/VAFoundation/Export/ExportSession+Planning.swift",
     "selection.select(tracks.filter { $0.mediaType == .audio && $0.sampleCount > 0 }).map { [$0] }",
     "[Self.primaryAudioTrack(tracks)].compactMap { $0 }.map { [$0] }"),
    ("tracks-selected-track-in-default-format", "tracks", "SubtitleAndAudioTrackTests", "Sources/VAFoundation/Export/ExportSession+Planning.swift",
     "let own = group[0] === primary || selection == nil ? assistant", "let own = Bool(true) ? assistant"),
    ("tracks-burn-in-not-drawn", "tracks", "SubtitleAndAudioTrackTests", "Sources/VAFoundation/Reading/PictureFilters.swift",
     "        if let subtitles {\n", "        if let subtitles, Bool(false) {\n"),
    ("tracks-bitmap-burn-not-drawn", "tracks", "bitmapSubtitlesAreBurntIn", "Sources/VAFoundation/Reading/BitmapSubtitleBurner.swift",
     "        for layer in rasters?.layers ?? [] {\n", "        for layer in rasters?.layers ?? [] where Bool(false) {\n"),
    ("tracks-bitmap-open-cue-never-shown", "tracks", "bitmapSubtitlesAreBurntIn", "Sources/VAFoundation/Reading/BitmapSubtitleBurner.swift",
     "shown.end.map({ time < $0 }) ?? true", "shown.end.map({ time < $0 }) ?? false"),
    ("reader-open-ended-cue-stretches-file", "reader", "vobSubIsBurntIn", "Sources/VAFoundation/Asset/AssetInspector.swift",
     "                openEndedCues += 1\n                duration = 0\n", "                openEndedCues += 0\n"),
    ("writer-clean-aperture-not-written", "writer", "CleanApertureTests", "Sources/VAFoundation/Writing/WriterEngine.swift",
     "if let stream = pipeline.streamIndex, let aperture = pipeline.configuration.cleanAperture { apertures[stream + 1] = aperture }",
     "_ = pipeline"),
    ("writer-clean-aperture-media-not-moved", "writer", "CleanApertureTests", "Sources/VAFoundation/Writing/MovieBoxes.swift",
     "        try shiftChunkOffsets(in: &bytes, after: Int64(moov.offset), by: Int64(added), path: path)\n", ""),
    ("reader-clean-aperture-unread", "reader", "CleanApertureTests", "Sources/VAFoundation/Asset/AssetInspector.swift",
     "? MovieBoxes.cleanApertures(path: path) : [:]", "? [Int: CleanAperture]() : [:]"),
    ("reader-subtitle-gaps-mended-as-jumps", "reader", "BitmapSubtitleBurnInTests", "Sources/FFmpegSupport/Demuxer.swift",
     "kind == AVMEDIA_TYPE_VIDEO || kind == AVMEDIA_TYPE_AUDIO else { return }", "kind == kind else { return }"),
    ("tracks-bitmap-cue-long-before-trim-lost", "tracks", "BitmapSubtitleBurnInTests", "Sources/VAFoundation/Reading/BitmapSubtitleBurner.swift",
     "            if first.start <= firstPicture { return }\n", "            if first.start <= firstPicture || Bool(true) { return }\n"),
    ("package-rotated-source-sideways", "segments", "aRotatedClipIsPackagedUpright", "Sources/VAFoundation/Export/StreamingPackager.swift",
     "video.preferredTransform != .identity else { return nil }", "video.preferredTransform != .identity, Bool(false) else { return nil }"),
    ("writer-index-moved-first-offsets-stale", "writer", "CleanApertureTests", "Sources/VAFoundation/Writing/MovieBoxes.swift",
     "            try shiftChunkOffsets(in: &bytes, after: Int64(first) - 1, by: Int64(bytes.count), path: path)\n", ""),
    ("tracks-loudness-peak-unbounded", "tracks", "LoudnessTests", "Sources/VAFoundation/Export/ExportSession+Graph.swift",
     "let gain = min(wanted, target.truePeak - measured.truePeak)", "let gain = wanted"),
    ("tracks-loudness-gain-not-applied", "tracks", "LoudnessTests", "Sources/VAFoundation/Export/ExportSession+Graph.swift",
     "mix.audioMix = gain.map { (s.audioMix ?? AudioMix()).scaled(by: $0, trackIDs: ids) } ?? s.audioMix", "mix.audioMix = s.audioMix"),
    ("reader-raw-stream-untimed", "reader", "RawStreamCommandTests", "Sources/FFmpegSupport/Demuxer.swift",
     "            packet.pointee.dts = followingDTS[index] ?? -delay * max(packet.pointee.duration, 0)\n",
     "            packet.pointee.dts = 0\n"),
    ("reader-raw-stream-no-rewind", "reader", "RawStreamCommandTests", "Sources/FFmpegSupport/Demuxer.swift",
     "        if untimed {\n            try check(av_seek_frame(context, -1, 0, AVSEEK_FLAG_BYTE), \"av_seek_frame\")",
     "        if untimed && Bool(false) {\n            try check(av_seek_frame(context, -1, 0, AVSEEK_FLAG_BYTE), \"av_seek_frame\")"),
    ("reader-late-seek-kept", "reader", "TransportStreamTrimCommandTests", "Sources/VAFoundation/Reading/AssetReader.swift",
     "                if time <= target || fromStart { return (queues, count) }", "                _ = time; return (queues, count)"),
    ("package-subtitle-cue-not-repeated", "package", "PackageSubtitleTests", "Sources/VAFoundation/Export/StreamingSubtitles.swift",
     "let shown = cues.filter { $0.start < end && $0.end > slot.start }", "let shown = cues.filter { $0.start >= slot.start && $0.start < end }"),
    ("package-subtitles-not-in-variants", "package", "PackageSubtitleTests", "Sources/VAFoundation/Export/StreamingPlaylists.swift",
     "let subtitleGroup = subtitles.isEmpty ? \"\" : \",SUBTITLES=\\\"subtitles\\\"\"", "let subtitleGroup = \"\""),
    ("package-subtitle-default-ignored", "package", "PackageSubtitleTests", "Sources/VAFoundation/Export/StreamingPackager.swift",
     "let defaultSubtitles = subtitleTracks.first(where: \\.isMarkedDefault)?.trackID", "let defaultSubtitles: Int? = nil"),
    ("package-subtitle-segment-unmapped", "package", "PackageSubtitleTests", "Sources/VAFoundation/Export/StreamingSubtitles.swift",
     "let data = Data(document(shown, forHLSSegment: true).utf8)", "let data = Data(document(shown, forHLSSegment: false).utf8)"),
    ("package-rotated-source-decoded-per-rung", "package", "aRotatedSourceIsDrawnUprightOnce|aRotatedClipIsPackagedUpright", "Sources/VAFoundation/Export/ExportSession+Outputs.swift",
     "if s.videoComposition != nil, plan.device == nil, let video = plan.videoTrack,", "if s.videoComposition != nil, plan.device == nil, Bool(false), let video = plan.videoTrack,"),
    ("package-anamorphic-rotated-squeezed", "package", "anAnamorphicRotatedClipIsPackagedAsShown", "Sources/VAFoundation/Export/StreamingPackager.swift",
     "            if abs(widening - 1) > 0.001 {", "            if abs(widening - 1) > 0.001, Bool(false) {"),
    ("tracks-burn-in-lost-in-composition", "tracks", "aVideoCompositionRefusesBurntInSubtitles", "Sources/VAFoundation/Export/ExportSession+Planning.swift",
     "        if s.videoComposition != nil {", "        if s.videoComposition != nil, Bool(false) {"),
    ("package-subtitles-read-past-cancel", "package", "aCancelledPackageStopsReadingSubtitles", "Sources/VAFoundation/Export/StreamingSubtitles.swift",
     "                if isCancelled() { throw", "                if Bool(false) { throw"),
    ("package-dry-run-hides-subtitles", "package", "aDryRunListsTheSubtitleAndAudioRenditions", "Sources/VAFoundation/Export/StreamingPackager.swift",
     "        for (track, name) in zip(subtitles, Self.folderNames(subtitles, kind: \"subtitles\")) {\n            planned.append(", "        for (track, name) in zip(subtitles, Self.folderNames(subtitles, kind: \"subtitles\")) where Bool(false) {\n            planned.append("),
    ("package-subtitle-defaults-not-unique", "package", "PackageSubtitleTests", "Sources/VAFoundation/Export/StreamingPackager.swift",
     "isDefault: track.trackID == defaultSubtitles,", "isDefault: track.isMarkedDefault,"),
    ("package-subtitle-text-unescaped", "package", "webVTTCueTextEscapesWhatIsNoTag", "Sources/VAFoundation/Export/StreamingSubtitles.swift",
     "let body = escaped(cue.text).replacingOccurrences", "let body = cue.text.replacingOccurrences"),
    ("hardware-subtitle-layer-below-minimum", "hardware", "subtitleLayersAreGrownToThePipelinesMinimum", "Sources/VAFoundation/Reading/BitmapSubtitleBurner.swift",
     "let width = min(minimum?.pixelWidth ?? 1, pictureWidth), height = min(minimum?.pixelHeight ?? 1, pictureHeight)", "let width = 1, height = 1"),
    ("hardware-subtitles-always-downloaded", "hardware", "SubtitlesOnDevice|bitmapSubtitlesAreDrawnByTheVideoProcessor", "Sources/VAFoundation/Reading/ReaderPipelines.swift",
     "                                          wantsSurfaces && HardwareJob.drawsSubtitlesOnVPP(device.capabilities)", "                                          wantsSurfaces && false"),
    ("hardware-subtitle-layer-replaces", "hardware", "bitmapSubtitlesAreDrawnByTheVideoProcessor", "Sources/VAFoundation/Reading/BitmapSubtitleBurner.swift",
     "                             blendsByPremultipliedAlpha: true),", "                             blendsByPremultipliedAlpha: false),"),
    ("hardware-subtitle-colours-not-premultiplied", "hardware", "bitmapSubtitlesAreDrawnByTheVideoProcessor", "Sources/VAFoundation/Reading/BitmapSubtitleBurner.swift",
     "line[x * 4 + c] = UInt8((UInt32(rect.rgba[i + c]) * alpha + 127) / 255)", "line[x * 4 + c] = rect.rgba[i + c]"),
    ("hardware-subtitle-layer-misplaced", "hardware", "bitmapSubtitlesAreDrawnByTheVideoProcessor", "Sources/VAFoundation/Reading/BitmapSubtitleBurner.swift",
     "Rect(x: x0, y: y0, width: x1 - x0, height: y1 - y0))\n", "Rect(x: 0, y: 0, width: x1 - x0, height: y1 - y0))\n"),
    ("hardware-probe-reads-own-vpp-list", "hardware", "theVideoProcessorsFormatsAreTheDriversOwnList|bitmapSubtitlesAreDrawnByTheVideoProcessor", "Sources/HardwareAcceleration/VADevice+Capabilities.swift",
     "let listed = list == ours.baseAddress ? min(Int(count), ours.count) : Int(count)\n                            return UnsafeBufferPointer(start: list, count: listed)",
     "return UnsafeBufferPointer(start: ours.baseAddress!, count: min(Int(count), ours.count))"),
    ("hardware-subtitle-plan-ignores-vpp", "hardware", "HardwareDecisionTests", "Sources/VAFoundation/Hardware/HardwareDecision.swift",
     "if subtitlesAreBitmaps && Self.drawsSubtitlesOnVPP(capabilities) {", "if subtitlesAreBitmaps {"),
]

root = sys.argv[1]
args = sys.argv[2:]
check_only = "--check" in args
wanted = [a for a in args if not a.startswith("--")]
scratch = os.environ.get("VAF_MUTANTS_DIR", "/tmp/vaf-mutants")
selected = [m for m in MUTATIONS if m[4] is not None and (not wanted or m[1] in wanted or m[0] in wanted)]
incomplete = [m[0] for m in MUTATIONS if m[4] is None]

def occurrences(base, m):
    with open(os.path.join(base, m[3])) as f:
        return f.read().count(m[4])

stale = [m[0] for m in selected if occurrences(root, m) != 1]
if stale:
    print("mutants: these no longer apply (their text is not found exactly once): " + ", ".join(stale), file=sys.stderr)
if check_only:
    print(f"mutants: {len(selected) - len(stale)} of {len(selected)} apply" + (f"; not yet written: {', '.join(incomplete)}" if incomplete else ""))
    sys.exit(1 if stale else 0)

# The scratch copy: the files git tracks and the untracked ones it does not ignore, copied only
# where they differ, so the scratch build stays incremental.
os.makedirs(scratch, exist_ok=True)
listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root, check=True,
                        capture_output=True).stdout.decode().split("\0")
for name in filter(None, listed):
    source, copy = os.path.join(root, name), os.path.join(scratch, name)
    if not os.path.isfile(source) or (os.path.exists(copy) and filecmp.cmp(source, copy, shallow=False)):
        continue
    os.makedirs(os.path.dirname(copy), exist_ok=True)
    shutil.copy2(source, copy)
# A source file the checkout no longer has is removed from the copy, or it would still build.
kept = set(filter(None, listed))
for folder in ("Sources", "Tests"):
    for directory, _, files in os.walk(os.path.join(scratch, folder)):
        for file in files:
            path = os.path.join(directory, file)
            if os.path.relpath(path, scratch) not in kept:
                os.remove(path)
# Tests read the shared corpus beside the checkout (../shared): the scratch copy gets it too.
shared = os.path.join(os.path.dirname(os.path.abspath(root)), "shared")
beside_scratch = os.path.join(os.path.dirname(os.path.abspath(scratch)), "shared")
if os.path.isdir(shared) and not os.path.exists(beside_scratch):
    os.symlink(shared, beside_scratch)
print(f"mutants: building the scratch copy in {scratch} …", file=sys.stderr)
subprocess.run(["swift", "build", "--build-tests"], cwd=scratch, check=True, stdout=subprocess.DEVNULL)

def run_tests(filt):
    """The filter's test run: its return code, or None when it ran past the time limit. On a
    timeout the run's process group is killed, and so is every process running from the scratch
    build: `swift test` starts the test binary outside its own group, and a hung one outlived
    the run before."""
    run = subprocess.Popen(["swift", "test", "--skip-build", "--filter", filt], cwd=scratch,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        return run.wait(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        subprocess.run(["pkill", "-KILL", "-f", os.path.join(scratch, ".build") + "/"])
        return None

# Each filter must pass on the unmutated tree first: a test that fails anyway catches nothing.
baseline = {}
for filt in dict.fromkeys(m[2] for m in selected if m[0] not in stale):
    baseline[filt] = run_tests(filt) == 0
    if not baseline[filt]:
        print(f"mutants: `{filt}` fails without a mutation: its mutations are not counted", file=sys.stderr)

rows = []
for m in selected:
    ident, subsystem, filt, path, old, new = m
    if ident in stale:
        rows.append((ident, subsystem, filt, "STALE", 0))
        continue
    if not baseline.get(filt, False):
        rows.append((ident, subsystem, filt, "TESTS FAIL UNMUTATED", 0))
        continue
    target = os.path.join(scratch, path)
    original = open(target).read()
    started = time.time()
    try:
        with open(target, "w") as f:
            f.write(original.replace(old, new, 1))
        built = subprocess.run(["swift", "build", "--build-tests"], cwd=scratch, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if built.returncode != 0:
            outcome = "BUILD FAILS"
        else:
            code = run_tests(filt)
            outcome = "caught (hang)" if code is None else ("caught" if code != 0 else "MISSED")
    finally:
        with open(target, "w") as f:
            f.write(original)
    rows.append((ident, subsystem, filt, outcome, time.time() - started))
    print(f"mutants: {ident}: {outcome}", file=sys.stderr)

print(f"| mutation | subsystem | tests | outcome | seconds |")
print(f"| --- | --- | --- | --- | --- |")
for ident, subsystem, filt, outcome, seconds in rows:
    print(f"| {ident} | {subsystem} | `{filt}` | {outcome} | {seconds:.0f} |")
caught = sum(1 for r in rows if r[3].startswith("caught"))
print(f"\n{caught} of {len(rows)} caught" + (f"; not yet written: {', '.join(incomplete)}" if incomplete else ""))
sys.exit(0 if caught == len(rows) else 1)
PY

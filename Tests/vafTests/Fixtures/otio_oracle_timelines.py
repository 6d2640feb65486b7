"""Writes the OpenTimelineIO oracle tests' timelines with the opentimelineio package itself.

Usage: python3 otio_oracle_timelines.py DIR

DIR holds the clips the test made (see OTIOOracleTests.swift). Each timeline is built with
the OTIO API, written with otio.adapters.write_to_file, and read back; what OTIO itself says
about it (duration, where each item starts, the transitions) is printed as one JSON object,
so the test compares the render with OTIO's answers rather than with its own arithmetic.
"""
import json
import os
import sys

import opentimelineio as otio

RT = otio.opentime.RationalTime
TR = otio.opentime.TimeRange


def clip(name, target, start, duration, rate):
    return otio.schema.Clip(
        name=name,
        media_reference=otio.schema.ExternalReference(target_url=target),
        source_range=TR(RT(start, rate), RT(duration, rate)),
    )


def gap(duration, rate):
    return otio.schema.Gap(source_range=TR(RT(0, rate), RT(duration, rate)))


def timeline(name, items):
    """A timeline with one video track holding `items`."""
    made = otio.schema.Timeline(name=name)
    track = otio.schema.Track(name="V1", kind=otio.schema.TrackKind.Video)
    for item in items:
        track.append(item)
    made.tracks.append(track)
    return made


def facts(made, path):
    """What OTIO reads back from the file it wrote: seconds, cut times, transitions."""
    read = otio.adapters.read_from_file(path)
    track = read.tracks[0]
    cuts, transitions = [], []
    for index, child in enumerate(track):
        if isinstance(child, otio.schema.Transition):
            # A transition takes no track time: it straddles the start of the item after it.
            cut = track.range_of_child_at_index(index + 1).start_time
            transitions.append({
                "cutSeconds": cut.to_seconds(),
                "startSeconds": (cut - child.in_offset).to_seconds(),
                "frames": (child.in_offset + child.out_offset).to_frames(),
            })
        elif index > 0 and not isinstance(track[index - 1], otio.schema.Transition):
            cuts.append(track.range_of_child_at_index(index).start_time.to_seconds())
    duration = read.duration()
    return {
        "path": path,
        "durationSeconds": duration.to_seconds(),
        "rate": duration.rate,
        "frames": duration.to_frames(),
        "cutSeconds": cuts,
        "transitions": transitions,
    }


def main(folder):
    ntsc = 30000 / 1001
    made = {}

    # (a) Three trimmed clips cut together with a gap, at 29.97 fps.
    made["cuts"] = timeline("cuts", [
        clip("pattern", "pattern.mp4", 10, 40, ntsc),
        clip("bars", "bars.mp4", 5, 30, ntsc),
        gap(15, ntsc),
        clip("fractal", "fractal.mp4", 20, 45, ntsc),
    ])

    # (b) Two clips joined by a 12-frame SMPTE_Dissolve, 6 frames each side of the cut, at 25 fps.
    made["dissolve"] = timeline("dissolve", [
        clip("bars", "bars25.mp4", 0, 50, 25),
        otio.schema.Transition(name="dissolve", transition_type=otio.schema.TransitionTypes.SMPTE_Dissolve,
                               in_offset=RT(6, 25), out_offset=RT(6, 25)),
        clip("plate", "plate25.mp4", 25, 50, 25),
    ])

    # (c) A clip at double speed (LinearTimeWarp 2.0), then a cut to another, at 25 fps.
    fast = clip("counter", "counter25.mp4", 0, 50, 25)
    fast.effects.append(otio.schema.LinearTimeWarp(name="fast", time_scalar=2.0))
    made["speed"] = timeline("speed", [fast, clip("bars", "bars25.mp4", 0, 25, 25)])

    # (d) What vaf render refuses: an effect it cannot draw, a freeze frame, a nested Stack.
    blurred = clip("blurred", "bars25.mp4", 0, 25, 25)
    blurred.effects.append(otio.schema.Effect(name="soften", effect_name="GaussianBlur"))
    made["effect"] = timeline("effect", [blurred])
    frozen = clip("frozen", "bars25.mp4", 0, 25, 25)
    frozen.effects.append(otio.schema.FreezeFrame(name="hold"))
    made["freeze"] = timeline("freeze", [frozen])
    nested = otio.schema.Stack(name="inner")
    inner = otio.schema.Track(name="inner V", kind=otio.schema.TrackKind.Video)
    inner.append(clip("nested", "bars25.mp4", 0, 25, 25))
    nested.append(inner)
    made["nested"] = timeline("nested", [clip("bars", "bars25.mp4", 0, 25, 25), nested])

    report = {"otioVersion": otio.__version__}
    for name, value in made.items():
        path = os.path.join(folder, name + ".otio")
        otio.adapters.write_to_file(value, path)
        report[name] = facts(value, path)
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])

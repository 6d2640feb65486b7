#!/usr/bin/env bash
# Issue 15's composition targets, side by side with ffmpeg in one script (release build), both
# encoding with libx264 CRF 23 (vaf --quality 55), x264's default preset, and AAC:
#  1. concatenation with a cut: three 1080p30 clips (the middle one trimmed to 2-8 s) through
#     `vaf render` of an OpenTimelineIO timeline, against `ffmpeg -f concat` with inpoint/outpoint
#     (target: vaf fps >= 1.0x ffmpeg's);
#  2. a 1 s crossfade between two 1080p30 clips: an OTIO SMPTE_Dissolve (a 2-layer video
#     composition over that second) against ffmpeg's `xfade` + `acrossfade` (target: >= 0.9x);
#  3. the compositor's share of encode time for two layers (target: < 10%), measured with perf
#     on one crossfade render: the CPU samples under the compositor (SoftwareCompositor.render and
#     what it calls) per composited picture, over libx264's samples per encoded picture. The
#     crossfade run's extra wall time over a plain cut is printed too; it also holds the second
#     decoder and the encoder's extra work on blended pictures, so it bounds the share from above.
# ffmpeg is given vaf's x264 GOP and VBV cap, read from vaf's first output (Benchmarks/lib/x264.sh).
# RUNS interleaved repetitions; medians of wall time, spread, and speed ratios ffmpeg/vaf.
#
#     bash Benchmarks/compositions-vs-ffmpeg.sh [SECONDS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/lib/x264.sh
seconds=${1:-10}
runs=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bash Hardware/build-release.sh
vaf=$PWD/.build/release/vaf

echo "# $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r), $(ffmpeg -version | head -1 | cut -d' ' -f1-3)"
for name in a b c; do
  pattern=$([ "$name" = b ] && echo "mandelbrot=size=1920x1080:rate=30" || echo "testsrc2=size=1920x1080:rate=30")
  ffmpeg -v error -f lavfi -i "$pattern" -f lavfi -i "sine=f=440:sample_rate=48000" -t "$seconds" \
    -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p -c:a aac "$work/$name.mp4"
done
echo "# sources: three ${seconds} s 1080p30 H.264/AAC clips"

rt() { echo "{\"OTIO_SCHEMA\": \"RationalTime.1\", \"value\": $1, \"rate\": 30}"; }
range() { echo "{\"OTIO_SCHEMA\": \"TimeRange.1\", \"start_time\": $(rt "$1"), \"duration\": $(rt "$2")}"; }
clip() { echo "{\"OTIO_SCHEMA\": \"Clip.1\", \"name\": \"$1\", \"source_range\": $(range "$2" "$3"), \"media_reference\": {\"OTIO_SCHEMA\": \"ExternalReference.1\", \"target_url\": \"$1.mp4\"}}"; }
timeline() { # video children, audio children
  echo "{\"OTIO_SCHEMA\": \"Timeline.1\", \"tracks\": {\"OTIO_SCHEMA\": \"Stack.1\", \"children\": [
    {\"OTIO_SCHEMA\": \"Track.1\", \"kind\": \"Video\", \"children\": [$1]},
    {\"OTIO_SCHEMA\": \"Track.1\", \"kind\": \"Audio\", \"children\": [$2]}]}}"
}
frames=$((seconds * 30))
dissolve="{\"OTIO_SCHEMA\": \"Transition.1\", \"transition_type\": \"SMPTE_Dissolve\", \"in_offset\": $(rt 15), \"out_offset\": $(rt 15)}"
# 1. a whole, b from 2 s to 8 s of a 10 s clip (scaled to SECONDS), c whole.
cut_in=$((frames / 5)); cut_len=$((frames * 3 / 5))
concat="$(clip a 0 $frames), $(clip b $cut_in $cut_len), $(clip c 0 $frames)"
timeline "$concat" "$concat" > "$work/concat.otio"
printf "file '%s'\nfile '%s'\ninpoint %.6f\noutpoint %.6f\nfile '%s'\n" "$work/a.mp4" "$work/b.mp4" \
  "$(echo "$cut_in / 30" | bc -l)" "$(echo "($cut_in + $cut_len) / 30" | bc -l)" "$work/c.mp4" > "$work/list.txt"
# 2. a up to 0.5 s before its end, a 1 s dissolve, b from 0.5 s: the same 2 x SECONDS - 1 s as xfade's.
half=$((frames - 15))
fade="$(clip a 0 $half), $dissolve, $(clip b 15 $half)"
timeline "$fade" "$fade" > "$work/fade.otio"
plain="$(clip a 0 $half), $(clip b 15 $half)"
timeline "$plain" "$plain" > "$work/plain.otio"
offset=$((seconds - 1))

wall() { # prints the wall seconds of "$@"
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
# A first render, untimed: the encoder settings ffmpeg is then given.
"$vaf" render "$work/plain.otio" -o "$work/settings.mp4" --quality 55 --preset 1920x1080 >/dev/null 2>&1
x264=(-c:v libx264 -crf 23 -x264-params "$(x264_params_of "$work/settings.mp4")" -pix_fmt yuv420p -c:a aac)
ffmpeg -v error -y -i "$work/a.mp4" -t 1 "${x264[@]}" "$work/settings-ffmpeg.mp4"
echo "# ffmpeg given vaf's x264 settings: ${x264[*]}; options that still differ: $(x264_differences "$work/settings.mp4" "$work/settings-ffmpeg.mp4" | tr '\n' ' ')"
for i in $(seq "$runs"); do
  rm -f "$work"/out-*
  echo "vaf-concat $(wall "$vaf" render "$work/concat.otio" -o "$work/out-concat.mp4" --quality 55 --preset 1920x1080)"
  echo "ffmpeg-concat $(wall ffmpeg -v error -y -f concat -safe 0 -i "$work/list.txt" "${x264[@]}" "$work/out-ffconcat.mp4")"
  echo "vaf-xfade $(wall "$vaf" render "$work/fade.otio" -o "$work/out-fade.mp4" --quality 55 --preset 1920x1080)"
  echo "ffmpeg-xfade $(wall ffmpeg -v error -y -i "$work/a.mp4" -i "$work/b.mp4" -filter_complex \
    "[0:v][1:v]xfade=transition=fade:duration=1:offset=$offset,format=yuv420p[v];[0:a][1:a]acrossfade=d=1[a]" -map "[v]" -map "[a]" "${x264[@]}" "$work/out-ffxfade.mp4")"
  echo "vaf-plain $(wall "$vaf" render "$work/plain.otio" -o "$work/out-plain.mp4" --quality 55 --preset 1920x1080)"
done | tee "$work/times"
for f in concat ffconcat fade ffxfade plain; do
  echo "# out-$f: $(ffprobe -v error -select_streams v -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$work/out-$f.mp4") frames"
done
# The compositor's share, from CPU samples of one crossfade render.
if command -v perf >/dev/null && perf record -q -g -o "$work/perf.data" -- "$vaf" render "$work/fade.otio" -o "$work/out-perf.mp4" \
     --quality 55 --preset 1920x1080 >/dev/null 2>&1; then
  perf report -i "$work/perf.data" --children --stdio --sort sym 2>/dev/null | grep -E '^ +[0-9.]+%' > "$work/perf.txt" || true
  perf report -i "$work/perf.data" --no-children --stdio --sort dso 2>/dev/null | grep -E '^ +[0-9.]+%' > "$work/perf-dso.txt" || true
  compositor=$(grep -E 'SoftwareCompositor.*render' "$work/perf.txt" | awk '{gsub("%","",$1); if ($1 > m) m = $1} END {print m + 0}')
  encoder=$(grep -E 'libx264' "$work/perf-dso.txt" | awk '{gsub("%","",$1); s += $1} END {print s + 0}')
  composited=30
  encoded=$(ffprobe -v error -select_streams v -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$work/out-perf.mp4")
  echo "# perf: the compositor's samples $compositor% of the run over $composited two-layer pictures; libx264's $encoder% over $encoded pictures"
  echo "perf-share $(echo "scale=6; ($compositor / $composited) / ($encoder / $encoded)" | bc)" >> "$work/times"
else
  echo "# perf: not available here, the compositor's share is not measured"
fi
python3 - "$work/times" "$frames" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    label, value = line.split()
    by.setdefault(label, []).append(float(value))
for k, v in by.items():
    if k != "perf-share":
        print(f"{k:14s} median {statistics.median(v):7.2f} s [{min(v):.2f}-{max(v):.2f}]")
def ratio(base, ours, target):
    r = sorted(b / o for b, o in zip(by[base], by[ours]))
    print(f"{ours} speed vs {base}: {statistics.median(r):.3f}x [{r[0]:.3f}-{r[-1]:.3f}] (target >= {target}x)")
ratio("ffmpeg-concat", "vaf-concat", 1.0)
ratio("ffmpeg-xfade", "vaf-xfade", 0.9)
share = sorted((f - p) / p for f, p in zip(by["vaf-xfade"], by["vaf-plain"]))
print(f"upper bound: a 1 s two-layer dissolve adds {100 * statistics.median(share):.1f}% [{100 * share[0]:.1f}-{100 * share[-1]:.1f}] "
      f"to the plain cut's wall time (second decoder, compositor, and the encoder's work on blended pictures)")
if "perf-share" in by:
    print(f"compositor share of encode time per two-layer picture (perf): {100 * by['perf-share'][0]:.1f}% (target < 10%)")
PY

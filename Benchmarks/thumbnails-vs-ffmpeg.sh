#!/usr/bin/env bash
# Issue 16's image targets, side by side with ffmpeg in one script (release build):
#  1. posters: one image per 10 s of a MINUTES-minute 1080p30 H.264 file (x264's default GOP of
#     250 pictures), nearest keyframe: `vaf thumbnails --every 10s` against running
#     `ffmpeg -ss T -i FILE -frames:v 1` once per time (target: vaf >= 2x as fast);
#  2. exact pictures at the same times: `vaf thumbnails --every 10s --exact` against the same
#     ffmpeg loop, which decodes from the keyframe to T too (target: >= 1.0x);
#  3. a sprite sheet of 100 tiles: `vaf thumbnails --count 100 --sprite 10x10 --size 160x90`
#     against `ffmpeg -vf fps=100/D,scale=160:90,tile=10x10` (target: >= 1.0x).
# RUNS interleaved repetitions; medians of wall time, spread, and ratios ffmpeg/vaf (speed-ups).
#
#     bash Benchmarks/thumbnails-vs-ffmpeg.sh [MINUTES] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
runs=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bash Hardware/build-release.sh
vaf=$PWD/.build/release/vaf

echo "# $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r), $(ffmpeg -version | head -1 | cut -d' ' -f1-3)"
src="$work/long1080.mp4"
seconds=$((minutes * 60))
ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30" -t "$seconds" -c:v libx264 -preset ultrafast -pix_fmt yuv420p "$src"
echo "# source: ${minutes} min 1080p30 H.264, $(($(stat -c %s "$src") / 1000000)) MB; label seconds"

wall() { # prints the wall seconds of "$@"
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
ffmpeg_loop() {
  local t=0
  while [ "$t" -lt "$seconds" ]; do
    ffmpeg -v error -y -ss "$t" -i "$src" -frames:v 1 "$work/ff-$t.jpg"
    t=$((t + 10))
  done
}
for i in $(seq "$runs"); do
  rm -rf "$work"/v* "$work"/ff-*
  echo "vaf-posters $(wall "$vaf" thumbnails "$src" --every 10s --output-dir "$work/v1")"
  echo "ffmpeg-loop $(wall ffmpeg_loop)"
  echo "vaf-exact $(wall "$vaf" thumbnails "$src" --every 10s --exact --output-dir "$work/v2")"
  echo "vaf-sprite $(wall "$vaf" thumbnails "$src" --count 100 --sprite 10x10 --size 160x90 --output-dir "$work/v3")"
  echo "ffmpeg-sprite $(wall ffmpeg -v error -y -i "$src" -vf "fps=100/$seconds,scale=160:90,tile=10x10" -frames:v 1 "$work/ff-sprite.jpg")"
done | tee "$work/times"
echo "# images: $(ls "$work"/v1 | wc -l) posters, $(ls "$work"/v2 | wc -l) exact, $(ls "$work"/ff-[0-9]*.jpg | wc -l) from the ffmpeg loop"
python3 - "$work/times" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    label, value = line.split()
    by.setdefault(label, []).append(float(value))
for k, v in by.items():
    print(f"{k:14s} median {statistics.median(v):7.2f} s [{min(v):.2f}-{max(v):.2f}]")
def ratio(base, ours, target):
    r = sorted(a / b for a, b in zip(by[base], by[ours]))
    print(f"{ours} speed-up over {base}: {statistics.median(r):.2f}x [{r[0]:.2f}-{r[-1]:.2f}] (target >= {target}x)")
ratio("ffmpeg-loop", "vaf-posters", 2.0)
ratio("ffmpeg-loop", "vaf-exact", 1.0)
ratio("ffmpeg-sprite", "vaf-sprite", 1.0)
PY

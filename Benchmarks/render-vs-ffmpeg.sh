#!/usr/bin/env bash
# Issue 16's render target, side by side with ffmpeg (release build): `vaf render` of a 3-clip
# OpenTimelineIO timeline with one dissolve (clip 1, a 1 s SMPTE_Dissolve into clip 2, a cut to
# clip 3; audio crossfaded the same way) against the equivalent ffmpeg filtergraph
# (trim, xfade over the dissolve's second, concat; acrossfade) and encode. Target: vaf's speed
# >= 1.0x ffmpeg's.
#
# Same encoder settings on both sides: vaf --preset 1920x1080 --quality 55 is libx264 preset
# medium, CRF 23, High profile, a 2 s GOP and a VBV ceiling at the sources' rate
# (capsBitRatesAtSource), AAC at 64 kb/s a channel. An untimed first vaf render is read back
# (x264's settings SEI through Benchmarks/lib/x264.sh, ffprobe) and ffmpeg is given its GOP, VBV
# and audio rate; the x264 options that still differ are printed. RUNS interleaved pairs; medians of wall and CPU
# time, and the speed ratio ffmpeg wall / vaf wall per pair: median [min-max].
#
#     bash Benchmarks/render-vs-ffmpeg.sh [SECONDS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/lib/x264.sh
seconds=${1:-4}
runs=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bash Hardware/build-release.sh
vaf=$PWD/.build/release/vaf

echo "# $(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r), $(ffmpeg -version | head -1 | cut -d' ' -f1-3), load $(cut -d' ' -f1-3 /proc/loadavg)"
# Three clips whose pictures and tones differ: a moving test pattern, a fractal zoom, testsrc.
i=0
for pattern in testsrc2 mandelbrot testsrc; do
  i=$((i + 1))
  ffmpeg -v error -f lavfi -i "$pattern=size=1920x1080:rate=30" -f lavfi -i "sine=f=$((330 + 110 * i)):sample_rate=48000" -t "$seconds" \
    -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p -c:a aac "$work/clip$i.mp4"
done
echo "# sources: three ${seconds} s 1080p30 H.264/AAC clips (testsrc2, mandelbrot, testsrc)"

rt() { echo "{\"OTIO_SCHEMA\": \"RationalTime.1\", \"value\": $1, \"rate\": 30}"; }
range() { echo "{\"OTIO_SCHEMA\": \"TimeRange.1\", \"start_time\": $(rt "$1"), \"duration\": $(rt "$2")}"; }
clip() { echo "{\"OTIO_SCHEMA\": \"Clip.1\", \"name\": \"$1\", \"source_range\": $(range "$2" "$3"), \"media_reference\": {\"OTIO_SCHEMA\": \"ExternalReference.1\", \"target_url\": \"$1.mp4\"}}"; }
frames=$((seconds * 30))
# clip1 up to 0.5 s before its end; a 1 s dissolve centred there (clip1's last second under
# clip2's first); clip2 from 0.5 s to its end; then clip3 whole: 3 x SECONDS - 1 s, as xfade's.
dissolve="{\"OTIO_SCHEMA\": \"Transition.1\", \"transition_type\": \"SMPTE_Dissolve\", \"in_offset\": $(rt 15), \"out_offset\": $(rt 15)}"
items="$(clip clip1 0 $((frames - 15))), $dissolve, $(clip clip2 15 $((frames - 15))), $(clip clip3 0 $frames)"
cat > "$work/edit.otio" <<EOF
{"OTIO_SCHEMA": "Timeline.1", "name": "edit", "tracks": {"OTIO_SCHEMA": "Stack.1", "children": [
  {"OTIO_SCHEMA": "Track.1", "name": "V1", "kind": "Video", "children": [$items]},
  {"OTIO_SCHEMA": "Track.1", "name": "A1", "kind": "Audio", "children": [$items]}]}}
EOF
# ffmpeg's xfade works in 4:4:4 (yuv444p; swscale converts to it and back), so only the dissolve's
# second goes through it: clip1's last second and clip2's first are cut out with trim, faded,
# and concatenated with the untouched rest, as vaf passes untouched pictures through. (xfade on
# whole clips converted every picture of clip1 and clip2, which came out 2.6 dB PSNR off the source.)
graph="[0:v]split[a0][a1];[a0]trim=end=$((seconds - 1)),setpts=PTS-STARTPTS[ahead];[a1]trim=start=$((seconds - 1)),setpts=PTS-STARTPTS[atail];"
graph+="[1:v]split[b0][b1];[b0]trim=end=1,setpts=PTS-STARTPTS[bhead];[b1]trim=start=1,setpts=PTS-STARTPTS[brest];"
graph+="[atail][bhead]xfade=transition=fade:duration=1:offset=0,format=yuv420p[fade];[ahead][fade][brest][2:v]concat=n=4:v=1:a=0[v];"
graph+="[0:a][1:a]acrossfade=d=1[xa];[xa][2:a]concat=n=2:v=0:a=1[a]"

# vaf's encoder settings, read from an untimed first render.
"$vaf" render "$work/edit.otio" -o "$work/warmup.mp4" --preset 1920x1080 --quality 55 >/dev/null 2>&1
channels=$(ffprobe -v error -select_streams a:0 -show_entries stream=channels -of csv=p=0 "$work/warmup.mp4")
x264=(-c:v libx264 -preset medium -crf 23 -profile:v high -pix_fmt yuv420p -x264-params "$(x264_params_of "$work/warmup.mp4")")
aac=(-c:a aac -b:a $((64000 * channels)) -ac "$channels")
ffmpeg -v error -y -i "$work/clip1.mp4" -i "$work/clip2.mp4" -i "$work/clip3.mp4" -filter_complex "$graph" -map "[v]" -map "[a]" \
  "${x264[@]}" "${aac[@]}" "$work/warmup-ffmpeg.mp4"
echo "# x264 options that still differ between vaf and ffmpeg: $(x264_differences "$work/warmup.mp4" "$work/warmup-ffmpeg.mp4" | tr '\n' ' ')"
echo "# ffmpeg: ${x264[*]} ${aac[*]} -filter_complex \"$graph\""

measure() { # label command...: prints label, wall s, CPU s (user + system)
  local label=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
  read -r wall user sys < "$work/time"
  echo "$label $wall $(echo "$user + $sys" | bc)"
}
for i in $(seq "$runs"); do
  measure vaf "$vaf" render "$work/edit.otio" -o "$work/out-vaf.mp4" --preset 1920x1080 --quality 55 --overwrite
  measure ffmpeg ffmpeg -v error -y -i "$work/clip1.mp4" -i "$work/clip2.mp4" -i "$work/clip3.mp4" -filter_complex "$graph" \
    -map "[v]" -map "[a]" "${x264[@]}" "${aac[@]}" "$work/out-ffmpeg.mp4"
done | tee "$work/times"
for f in vaf ffmpeg; do
  echo "# out-$f: $(ffprobe -v error -select_streams v -count_frames -show_entries stream=nb_read_frames,duration -of csv=p=0 "$work/out-$f.mp4" | tr ',' ' ') (duration s, frames), $(stat -c %s "$work/out-$f.mp4") bytes"
done
python3 - "$work/times" <<'PY'
import statistics, sys
wall, cpu = {}, {}
for line in open(sys.argv[1]):
    label, w, c = line.split()
    wall.setdefault(label, []).append(float(w))
    cpu.setdefault(label, []).append(float(c))
for k in wall:
    print(f"{k:7s} wall median {statistics.median(wall[k]):7.2f} s [{min(wall[k]):.2f}-{max(wall[k]):.2f}]   "
          f"CPU median {statistics.median(cpu[k]):7.2f} s [{min(cpu[k]):.2f}-{max(cpu[k]):.2f}]")
speed = sorted(f / v for f, v in zip(wall["ffmpeg"], wall["vaf"]))
cpu_ratio = sorted(v / f for f, v in zip(cpu["ffmpeg"], cpu["vaf"]))
median = statistics.median(speed)
print(f"vaf speed vs ffmpeg (ffmpeg wall / vaf wall, per pair): {median:.3f}x [{speed[0]:.3f}-{speed[-1]:.3f}] (target >= 1.0x): "
      + ("met" if median >= 1.0 else "NOT met"))
print(f"vaf CPU / ffmpeg CPU: {statistics.median(cpu_ratio):.3f}x [{cpu_ratio[0]:.3f}-{cpu_ratio[-1]:.3f}]")
PY

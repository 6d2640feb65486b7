#!/usr/bin/env bash
# The issue-15 overlay benchmark: burn a half-opaque RGBA PNG watermark into a 1080p30 H.264 clip
# with `vaf transcode --watermark` (VideoComposition.animationTool through the software
# compositor) and with ffmpeg's overlay filter (`colorchannelmixer=aa=0.5` for the opacity), both
# encoding libx264 preset medium CRF 23 yuv420p (vaf: --quality 55 --speed medium), ffmpeg with
# vaf's GOP and VBV cap read from vaf's first output (Benchmarks/lib/x264.sh). The source has
# no audio, so only the video path is timed. Runs interleaved A B A B so drift hits both alike.
# Prints frames/s, CPU seconds and peak RSS per run, the medians with their spread, and the ratio.
#
#     bash Benchmarks/overlay-vs-ffmpeg.sh [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/lib/x264.sh
runs=${1:-3}
seconds=${2:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bash Hardware/build-release.sh
ours=$PWD/.build/release/vaf
source="$work/source_1080p30.mp4"
watermark="$work/wm.png"
x=64 y=64
ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t" -t "$seconds" \
  -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p "$source"
# 256x128, RGBA: an opaque white left half, a transparent right half.
ffmpeg -v error -f lavfi -i "color=c=white:s=256x128,format=rgba,geq=r=255:g=255:b=255:a='if(lt(X,128),255,0)'" \
  -frames:v 1 "$watermark"
frames=$(ffprobe -v error -count_packets -select_streams v -show_entries stream=nb_read_packets -of csv=p=0 "$source")

measure() { # label command...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
  read -r wall user sys rss < "$work/time"
  printf "%s %s %s %s %s\n" "$label" "$wall" "$(echo "$user + $sys" | bc)" "$rss" "$(echo "scale=2; $frames / $wall" | bc)"
}

vaf_job=(transcode "$source" --preset HighestQuality --quality 55 --speed medium --hw off
         --watermark "$watermark:$x,$y,0.5" --output-dir "$work/ours" --overwrite)
# A first run, untimed: the encoder settings ffmpeg is then given.
"$ours" "${vaf_job[@]}" >/dev/null
x264_params=$(x264_params_of "$work/ours/source_1080p30.mp4")
ffmpeg_job=(-v error -y -i "$source" -i "$watermark" -filter_complex "[1]format=rgba,colorchannelmixer=aa=0.5[w];[0][w]overlay=$x:$y"
            -c:v libx264 -preset medium -crf 23 -x264-params "$x264_params" -pix_fmt yuv420p "$work/ffmpeg.mp4")
ffmpeg "${ffmpeg_job[@]}"
echo "# ffmpeg given vaf's x264 settings: -x264-params $x264_params; options that still differ: $(x264_differences "$work/ours/source_1080p30.mp4" "$work/ffmpeg.mp4" | tr '\n' ' ')"
echo "# $frames frames of 1920x1080 at 30 fps, a 256x128 watermark at 0.5 opacity, $runs runs each, $(nproc) cores"
echo "# path wall_s cpu_s peak_rss_kib frames_per_s"
for i in $(seq "$runs"); do
  measure vafoundation "$ours" "${vaf_job[@]}"
  measure ffmpeg ffmpeg "${ffmpeg_job[@]}"
done | tee "$work/results"

python3 - "$work/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
by = {}
for label, wall, cpu, rss, fps in rows:
    by.setdefault(label, []).append((float(wall), float(cpu), int(rss), float(fps)))
med = {k: [statistics.median(x[i] for x in v) for i in range(4)] for k, v in by.items()}
for k, (wall, cpu, rss, fps) in med.items():
    spread = max(x[3] for x in by[k]) - min(x[3] for x in by[k])
    print(f"{k:13s} median {fps:6.2f} fps (spread {spread:.2f})  wall {wall:6.2f} s  cpu {cpu:6.2f} s  peak RSS {rss/1024:7.1f} MiB")
o, f = med["vafoundation"], med["ffmpeg"]
lo = min(x[3] for x in by["vafoundation"]) / max(x[3] for x in by["ffmpeg"])
hi = max(x[3] for x in by["vafoundation"]) / min(x[3] for x in by["ffmpeg"])
print(f"ratio ours/ffmpeg: frames/s {o[3]/f[3]:.3f} (range {lo:.3f}-{hi:.3f}), peak RSS {o[2]/f[2]:.3f}, CPU {o[1]/f[1]:.3f}")
PY

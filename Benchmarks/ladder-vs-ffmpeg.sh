#!/usr/bin/env bash
# The export graph's ladder benchmark (issue 28): one 1080p30 H.264/AAC source made into four
# H.264/AAC renditions (1920x1080, 1280x720, 960x540, 640x360) by one `vaf transcode` with four
# --preset options (one decode, fanned out), against ffmpeg's best single command (one input,
# split=4, four scales, four outputs) with the same x264 settings: constant quality (vaf's
# --quality 55 is CRF 23), and each rendition's GOP and VBV cap read back from vaf's own output
# (Benchmarks/lib/x264.sh), the same AAC rate. Runs interleave A B A B so drift hits both alike.
# Prints wall, CPU and peak RSS per run, the medians with their spread, and the ratios. A third
# command measures the floor: the four encoders alone, fed generated pictures (no decode, split
# or scale), whose peak RSS neither tool can go below with these settings.
#
#     bash Benchmarks/ladder-vs-ffmpeg.sh [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/lib/x264.sh
runs=${1:-5}
seconds=${2:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bash Hardware/build-release.sh
vaf=.build/release/vaf
source="$work/source.mp4"
ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$seconds" \
  -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p -c:a aac -b:a 192k -ac 2 "$source"
frames=$(ffprobe -v error -count_packets -select_streams v -show_entries stream=nb_read_packets -of csv=p=0 "$source")

presets=(1920x1080 1280x720 960x540 640x480)
ladder=(transcode "$source" --quality 55 --overwrite --quiet)
for p in "${presets[@]}"; do ladder+=(--preset "$p"); done

# One run of vaf first, to read back each rendition's size, x264 settings and audio rate.
"$vaf" "${ladder[@]}" --output-dir "$work/probe"
split_outputs=()
filter="[0:v]split=${#presets[@]}"
for i in "${!presets[@]}"; do filter+="[s$i]"; done
filter+=";"
for i in "${!presets[@]}"; do
  out="$work/probe/source-${presets[$i]}.mp4"
  size=$(ffprobe -v error -select_streams v -show_entries stream=width,height -of csv=s=x:p=0 "$out")
  audio=$(ffprobe -v error -select_streams a -show_entries stream=bit_rate -of csv=p=0 "$out")
  filter+="[s$i]scale=size=${size}[v$i];"
  split_outputs+=(-map "[v$i]" -map 0:a -c:v libx264 -crf 23 -pix_fmt yuv420p -x264-params "$(x264_params_of "$out")"
                  -c:a aac -b:a "$audio" "$work/ffmpeg-$i.mp4")
done
filter=${filter%;}

# The floor: the same four x264 encoders in one ffmpeg process, fed generated pictures of each
# rendition's size (no decode, no split, no scale, no audio). Whatever either tool holds
# beyond this peak is its pipeline's; below it, neither can go with these encoder settings.
encoders_only=()
for i in "${!presets[@]}"; do
  out="$work/probe/source-${presets[$i]}.mp4"
  size=$(ffprobe -v error -select_streams v -show_entries stream=width,height -of csv=s=x:p=0 "$out")
  encoders_only+=(-f lavfi -t "$seconds" -i "testsrc2=size=$size:rate=30")
done
for i in "${!presets[@]}"; do
  out="$work/probe/source-${presets[$i]}.mp4"
  encoders_only+=(-map "$i:v" -c:v libx264 -crf 23 -pix_fmt yuv420p -x264-params "$(x264_params_of "$out")" "$work/encoders-$i.mp4")
done

measure() { # label command...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
  read -r wall user sys rss < "$work/time"
  printf "%s %s %s %s\n" "$label" "$wall" "$(echo "$user + $sys" | bc)" "$rss"
}

echo "# $frames frames of 1920x1080 at 30 fps into ${#presets[@]} renditions, $runs runs each, $(nproc) cores"
echo "# path wall_s cpu_s peak_rss_kib"
for _ in $(seq "$runs"); do
  measure vaf "$vaf" "${ladder[@]}" --output-dir "$work/vaf"
  measure ffmpeg ffmpeg -v error -y -i "$source" -filter_complex "$filter" "${split_outputs[@]}"
  measure encoders ffmpeg -v error -y "${encoders_only[@]}"
done | tee "$work/results"

for i in "${!presets[@]}"; do
  differences=$(x264_differences "$work/vaf/source-${presets[$i]}.mp4" "$work/ffmpeg-$i.mp4" | grep -v -E '^[<>] (crf|rc|vbv_)' || true)
  [ -z "$differences" ] || echo "# ${presets[$i]}: x264 settings differ: $(echo "$differences" | tr '\n' ' ')"
done

python3 - "$work/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
by = {}
for label, wall, cpu, rss in rows:
    by.setdefault(label, []).append((float(wall), float(cpu), int(rss)))
med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in by.items()}
for k, (wall, cpu, rss) in med.items():
    walls = [x[0] for x in by[k]]
    print(f"{k:7s} median wall {wall:6.2f} s [{min(walls):.2f}-{max(walls):.2f}]  cpu {cpu:6.2f} s  peak RSS {rss/1024:7.1f} MiB")
pairs = list(zip(by["vaf"], by["ffmpeg"]))
ratios = sorted(o[0] / f[0] for o, f in pairs)
floor = med["encoders"][2]
print(f"the four encoders alone peak at {floor/1024:.1f} MiB: {floor/med['ffmpeg'][2]:.3f}x ffmpeg's command; "
      f"beyond them vaf holds {(med['vaf'][2]-floor)/1024:.1f} MiB, ffmpeg {(med['ffmpeg'][2]-floor)/1024:.1f} MiB")
print(f"ratio vaf/ffmpeg: wall {med['vaf'][0]/med['ffmpeg'][0]:.3f} (pairwise {statistics.median(ratios):.3f} [{ratios[0]:.3f}-{ratios[-1]:.3f}]), "
      f"CPU {med['vaf'][1]/med['ffmpeg'][1]:.3f}, peak RSS {med['vaf'][2]/med['ffmpeg'][2]:.3f}")
PY

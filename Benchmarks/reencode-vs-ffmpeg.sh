#!/usr/bin/env bash
# The issue-3 benchmark: re-encode a 1080p30 H.264/AAC clip to H.264/AAC with our reader +
# writer (ReencodeExample) and with the ffmpeg program at the same settings (libx264 preset
# medium, CRF 20, B-frames and GOP at x264's defaults, AAC 128 kbit/s), runs interleaved
# A B A B so drift hits both alike. Prints frames/s, CPU seconds and peak RSS per run, the
# medians and their ratio.
#
#     bash Benchmarks/reencode-vs-ffmpeg.sh [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
seconds=${2:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

swift build -c release --product ReencodeExample >&2
ours=.build/release/ReencodeExample
source="$work/source_1080p30.mp4"
ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$seconds" \
  -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p -c:a aac -b:a 192k -ac 2 "$source"
frames=$(ffprobe -v error -count_packets -select_streams v -show_entries stream=nb_read_packets -of csv=p=0 "$source")

measure() { # label command...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
  read -r wall user sys rss < "$work/time"
  printf "%s %s %s %s %s\n" "$label" "$wall" "$(echo "$user + $sys" | bc)" "$rss" "$(echo "scale=2; $frames / $wall" | bc)"
}

echo "# $frames frames of 1920x1080 at 30 fps, $runs runs each, $(nproc) cores"
echo "# path wall_s cpu_s peak_rss_kib frames_per_s"
for i in $(seq "$runs"); do
  measure vafoundation "$ours" "$source" "$work/ours.mp4"
  measure ffmpeg ffmpeg -v error -y -i "$source" -map 0:v:0 -map 0:a:0 -c:v libx264 -preset medium -crf 20 -pix_fmt yuv420p \
    -c:a aac -b:a 128k "$work/ffmpeg.mp4"
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
print(f"ratio ours/ffmpeg: frames/s {o[3]/f[3]:.3f}, peak RSS {o[2]/f[2]:.3f}, CPU {o[1]/f[1]:.3f}")
PY

#!/usr/bin/env bash
# Issue 17's targets, measured side by side with ffmpeg in one script (release build):
#  1. remux: a 200 MB 1080p30 H.264/AAC MP4 copied to MP4 (vaf --preset Passthrough against
#     ffmpeg -c copy -movflags +faststart), RUNS interleaved pairs: wall and CPU medians, spread, ratios;
#  2. memory over a batch: peak RSS of one 1080p→720p export, of BATCH of them in one
#     `--jobs 1` process and of the same in one `--jobs 2` process, and the ratios to one.
# The transcode target (fps and RSS at equal settings) is `vaf bench`'s (see BENCH.md).
#
#     bash Benchmarks/pipeline-vs-ffmpeg.sh [RUNS] [BATCH]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
batch=${2:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bash Hardware/build-release.sh
vaf=$PWD/.build/release/vaf

echo "# $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r), $(ffmpeg -version | head -1 | cut -d' ' -f1-3)"

# 1. Remux.
big="$work/big1080.mp4"
ffmpeg -v error -f lavfi -i testsrc2=size=1920x1080:rate=30 -f lavfi -i sine=f=440:sample_rate=48000 -t 64 \
  -c:v libx264 -preset ultrafast -b:v 25M -maxrate 25M -bufsize 10M -g 60 -c:a aac -b:a 128k "$big"
echo "# remux of $(($(stat -c %s "$big") / 1000000)) MB, $runs interleaved pairs; label wall_s cpu_s peak_rss_kib"
for i in $(seq "$runs"); do
  rm -rf "$work/o" "$work/f.mp4"
  /usr/bin/time -f "vaf %e %U %S %M" -o "$work/t" "$vaf" transcode "$big" --preset Passthrough --output-dir "$work/o" >/dev/null 2>&1
  read -r l w u s m < "$work/t"; echo "$l $w $(echo "$u + $s" | bc) $m"
  /usr/bin/time -f "ffmpeg %e %U %S %M" -o "$work/t" ffmpeg -v error -y -i "$big" -map 0 -c copy -movflags +faststart "$work/f.mp4"
  read -r l w u s m < "$work/t"; echo "$l $w $(echo "$u + $s" | bc) $m"
done | tee "$work/remux"
python3 - "$work/remux" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for label, wall, cpu, rss in rows: by.setdefault(label, []).append((float(wall), float(cpu)))
for k, v in by.items():
    w = [x[0] for x in v]; c = [x[1] for x in v]
    print(f"{k:7s} wall median {statistics.median(w):.3f} s [{min(w):.3f}-{max(w):.3f}]  cpu median {statistics.median(c):.3f} s [{min(c):.3f}-{max(c):.3f}]")
pairs = list(zip(by["vaf"], by["ffmpeg"]))
rw = sorted(a[0] / b[0] for a, b in pairs); rc = sorted(a[1] / b[1] for a, b in pairs)
print(f"remux ratio vaf/ffmpeg: wall {statistics.median(rw):.3f} [{rw[0]:.3f}-{rw[-1]:.3f}], cpu {statistics.median(rc):.3f} [{rc[0]:.3f}-{rc[-1]:.3f}] (target: wall <= 1, cpu <= 1.2)")
PY

# 2. Memory over a batch.
clip="$work/clip1080.mp4"
ffmpeg -v error -f lavfi -i testsrc2=size=1920x1080:rate=30 -f lavfi -i sine=f=440:sample_rate=48000 -t 2 \
  -c:v libx264 -preset veryfast -b:v 20M -c:a aac "$clip"
mkdir -p "$work/in"
for i in $(seq -w 1 "$batch"); do ln -s "$clip" "$work/in/c$i.mp4"; done
peak() { # label args...
  local label=$1; shift
  rm -rf "$work/out"
  /usr/bin/time -f "%M %e" -o "$work/t" "$vaf" transcode "$@" --preset 1280x720 --output-dir "$work/out" >/dev/null 2>&1
  read -r m e < "$work/t"; echo "$label $m $e"
}
{
  peak single "$clip"
  peak "jobs1x$batch" "$work/in" --jobs 1
  peak "jobs2x$batch" "$work/in" --jobs 2
} | tee "$work/memory"
awk 'NR == 1 {one = $2} {printf "%-10s peak RSS %7.1f MiB  %.2fx one export  (%s s)\n", $1, $2 / 1024, $2 / one, $3}' "$work/memory"
echo "# targets: jobs1 <= 1.10x, jobs2 <= 2.1x"

#!/usr/bin/env bash
# The issue-4 benchmark: a batch of short 720p30 clips through `vaf transcode --preset 1280x720
# --jobs 2` against the same clips through `ffmpeg` runs with equivalent settings, two at a time
# (`xargs -P2`, the same parallelism as --jobs 2)
# (libx264 preset medium, profile high, 10.5 Mbit/s (Apple's 720p30 table rate), keyframe every
# 2 s, AAC 128 kbit/s 48 kHz, moov first), in one script on one machine. Reports files/s and total
# CPU seconds for both, repeated and interleaved A B A B.
#
#     bash Benchmarks/batch-vs-ffmpeg.sh [CLIPS] [SECONDS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
clips=${1:-20}
seconds=${2:-3}
runs=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bash Hardware/build-release.sh
vaf=.build/release/vaf
mkdir -p "$work/in"
for i in $(seq -w 1 "$clips"); do
  ffmpeg -v error -f lavfi -i "testsrc2=size=1280x720:rate=30,noise=alls=8:allf=t,hue=h=$((10#$i * 17))" \
    -f lavfi -i "sine=frequency=$((300 + 10#$i * 20)):sample_rate=48000" -t "$seconds" -ac 2 \
    -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -c:a aac -b:a 192k "$work/in/clip$i.mp4"
done

timed() { # label command... → "label wall cpu"
  local label=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { tail -5 "$work/stderr" >&2; exit 1; }
  read -r wall user sys < "$work/time"
  echo "$label $wall $(echo "$user + $sys" | bc)"
}

ffmpeg_one() { # input output
  ffmpeg -nostdin -v error -y -i "$1" -c:v libx264 -preset medium -profile:v high -b:v 10500000 -g 60 -pix_fmt yuv420p \
    -c:a aac -b:a 128k -ar 48000 -movflags +faststart "$2"
}

ffmpeg_batch() { # two ffmpeg processes at a time, as vaf runs two exports at a time; any failure fails the batch
  export -f ffmpeg_one; export work
  printf '%s\0' "$work"/in/*.mp4 | xargs -0 -n1 -P2 bash -c 'ffmpeg_one "$1" "$work/ffmpeg-out/$(basename "$1")"' _
}

echo "# $clips clips of ${seconds} s 1280x720 at 30 fps, $(nproc) cores; label wall_s cpu_s"
for r in $(seq "$runs"); do
  rm -rf "$work/vaf-out" "$work/ffmpeg-out"; mkdir -p "$work/ffmpeg-out"
  timed vaf "$vaf" transcode "$work/in" --preset 1280x720 --jobs 2 --output-dir "$work/vaf-out"
  timed ffmpeg bash -c "$(declare -f ffmpeg_one ffmpeg_batch); work='$work'; ffmpeg_batch"
  # Every clip must have come out of both, or the timing compares unequal work.
  [ "$(ls "$work/ffmpeg-out" | wc -l)" -eq "$clips" ] || { echo "ffmpeg wrote $(ls "$work/ffmpeg-out" | wc -l) of $clips files" >&2; exit 1; }
  [ "$(ls "$work/vaf-out" | wc -l)" -eq "$clips" ] || { echo "vaf wrote $(ls "$work/vaf-out" | wc -l) of $clips files" >&2; exit 1; }
done | tee "$work/results"

python3 - "$work/results" "$clips" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
clips = int(sys.argv[2])
by = {}
for label, wall, cpu in rows: by.setdefault(label, []).append((float(wall), float(cpu)))
for k, v in by.items():
    walls = [w for w, _ in v]
    print(f"{k:7s} median {clips / statistics.median(walls):5.2f} files/s (wall {statistics.median(walls):6.2f} s, spread {max(walls) - min(walls):.2f} s)"
          f"  CPU {statistics.median(c for _, c in v):7.2f} s")
o, f = by["vaf"], by["ffmpeg"]
pairs = [fw / ow for (ow, _), (fw, _) in zip(o, f)]
print(f"files/s ratio vaf --jobs 2 / ffmpeg two at a time, pair by pair: {', '.join(f'{p:.2f}' for p in pairs)}; median {statistics.median(pairs):.2f}")
print(f"CPU ratio: {statistics.median(c for _, c in o) / statistics.median(c for _, c in f):.2f}")
PY

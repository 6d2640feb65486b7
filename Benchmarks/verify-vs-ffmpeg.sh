#!/usr/bin/env bash
# The health-check benchmark (issue 30, item 6): `vaf verify` against the command media
# libraries run for it, `ffmpeg -v error -i F -f null -`, on
#  - the shared corpus (../shared/media: 40 real and damaged files, mostly short): one
#    `vaf verify --jobs 1 DIR` against one ffmpeg per file, one after another;
#  - one 1080p30 H.264/AAC file of SECONDS seconds, the decode-bound case.
# Both decode every packet of every audio and video track with FFmpeg's decoders, each with
# its default threads. Runs interleave A B A B so drift hits both alike. Prints wall, CPU and
# peak RSS per run, the medians with their spread, and the ratios.
#
#     bash Benchmarks/verify-vs-ffmpeg.sh [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
seconds=${2:-20}
corpus=$(cd ../shared/media && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bash Hardware/build-release.sh
vaf=.build/release/vaf
long="$work/long.mp4"
ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$seconds" \
  -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p -c:a aac -b:a 192k -ac 2 "$long"
files=()
while IFS= read -r f; do files+=("$f"); done < <("$vaf" verify "$corpus" --json 2>/dev/null | python3 -c 'import json,sys; [print(json.loads(l)["input"]) for l in sys.stdin]')

ffmpeg_each() { for f in "$@"; do ffmpeg -nostdin -v error -i "$f" -f null - || true; done; }
export -f ffmpeg_each

measure() { # label command...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>/dev/null || true
  # GNU time puts "Command exited with non-zero status N" first: a damaged file exits 65.
  read -r wall user sys rss < <(tail -n 1 "$work/time")
  printf "%s %s %s %s\n" "$label" "$wall" "$(echo "$user + $sys" | bc)" "$rss"
}

summarize() { # results file, title
  python3 - "$1" "$2" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
by = {}
for label, wall, cpu, rss in rows:
    by.setdefault(label, []).append((float(wall), float(cpu), int(rss)))
print(f"## {sys.argv[2]}")
med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in by.items()}
for k, (wall, cpu, rss) in med.items():
    walls = [x[0] for x in by[k]]
    print(f"{k:7s} median wall {wall:6.2f} s [{min(walls):.2f}-{max(walls):.2f}]  cpu {cpu:6.2f} s  peak RSS {rss/1024:7.1f} MiB")
ratios = sorted(o[0] / f[0] for o, f in zip(by["vaf"], by["ffmpeg"]))
print(f"ratio vaf/ffmpeg: wall {med['vaf'][0]/med['ffmpeg'][0]:.3f} (pairwise {statistics.median(ratios):.3f} [{ratios[0]:.3f}-{ratios[-1]:.3f}]), "
      f"CPU {med['vaf'][1]/med['ffmpeg'][1]:.3f}, peak RSS {med['vaf'][2]/med['ffmpeg'][2]:.3f}")
PY
}

echo "# ${#files[@]} corpus files, $runs runs each, $(nproc) cores; path wall_s cpu_s peak_rss_kib"
for _ in $(seq "$runs"); do
  measure vaf "$vaf" verify --jobs 1 --quiet "$corpus"
  measure ffmpeg bash -c 'ffmpeg_each "$@"' _ "${files[@]}"
done | tee "$work/corpus"
echo "# one 1920x1080 30 fps file of $seconds s, $runs runs each"
for _ in $(seq "$runs"); do
  measure vaf "$vaf" verify --quiet "$long"
  measure ffmpeg ffmpeg -nostdin -v error -i "$long" -f null -
done | tee "$work/long"
summarize "$work/corpus" "the shared corpus, ${#files[@]} files"
summarize "$work/long" "one 1080p30 H.264/AAC file of $seconds s"

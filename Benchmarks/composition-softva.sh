#!/usr/bin/env bash
# Issue 15's "GPU composition on SoftVA: 0 host bytes per frame": `vaf render` of a two-clip
# OpenTimelineIO timeline with a 1 s dissolve (a two-layer video composition over that second),
# with --hw require on SoftVA (the CPU-backed VA-API driver, on an Xvfb display): decode,
# composition and encode on the device. The driver's own counters are the witness: bytes it
# moved between surfaces and host memory (images read, written or mapped), VPP pictures and
# layers drawn. Timings on SoftVA are CPU emulation and say nothing about a GPU; they are not
# reported.
#
#     bash Benchmarks/composition-softva.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-4}
work=$(mktemp -d)
xvfb=
trap '[ -n "$xvfb" ] && kill "$xvfb" 2>/dev/null; rm -rf "$work"' EXIT

bash Hardware/build-release.sh
swift build -c release --product softva_drv_video >&2
vaf=$PWD/.build/release/vaf
display=:$((90 + RANDOM % 400))
Xvfb "$display" -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
for _ in $(seq 50); do xdpyinfo -display "$display" >/dev/null 2>&1 && break; sleep 0.1; done

echo "# $(nproc) cores, $(uname -r), $(ffmpeg -version | head -1 | cut -d' ' -f1-3), SoftVA (CPU-emulated VA-API)"
for name in a b; do
  pattern=$([ "$name" = b ] && echo "mandelbrot=size=640x360:rate=30" || echo "testsrc2=size=640x360:rate=30")
  ffmpeg -v error -f lavfi -i "$pattern" -t "$seconds" -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p "$work/$name.mp4"
done
rt() { echo "{\"OTIO_SCHEMA\": \"RationalTime.1\", \"value\": $1, \"rate\": 30}"; }
clip() { echo "{\"OTIO_SCHEMA\": \"Clip.1\", \"name\": \"$1\", \"source_range\": {\"OTIO_SCHEMA\": \"TimeRange.1\", \"start_time\": $(rt "$2"), \"duration\": $(rt "$3")}, \"media_reference\": {\"OTIO_SCHEMA\": \"ExternalReference.1\", \"target_url\": \"$1.mp4\"}}"; }
frames=$((seconds * 30)); half=$((frames - 15))
dissolve="{\"OTIO_SCHEMA\": \"Transition.1\", \"transition_type\": \"SMPTE_Dissolve\", \"in_offset\": $(rt 15), \"out_offset\": $(rt 15)}"
echo "{\"OTIO_SCHEMA\": \"Timeline.1\", \"tracks\": {\"OTIO_SCHEMA\": \"Stack.1\", \"children\": [
  {\"OTIO_SCHEMA\": \"Track.1\", \"kind\": \"Video\", \"children\": [$(clip a 0 $half), $dissolve, $(clip b 15 $half)]}]}}" > "$work/fade.otio"

DISPLAY=$display LIBVA_DRIVER_NAME=libsoftva LIBVA_DRIVERS_PATH=$PWD/.build/release SOFTVA_COUNTERS="$work/counters" \
  "$vaf" render "$work/fade.otio" -o "$work/out.mp4" --preset 640x480 --hw require --device "$display" --json > "$work/report.json"
written=$(ffprobe -v error -select_streams v -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$work/out.mp4")
python3 - "$work/report.json" "$work/counters" "$written" <<'PY'
import json, sys
report = json.loads(open(sys.argv[1]).read().splitlines()[-1])
job = report.get("job", report)
counters = dict(line.strip().split("=", 1) for line in open(sys.argv[2]) if "=" in line)
frames = int(sys.argv[3])
print(f"path: {job.get('path')} ({job.get('pathReason')})")
print(f"frames written: {frames}; the export's own count of host copies: {job.get('hostTransfers')} ({job.get('hostTransferBytes')} bytes)")
for key in ("h264_decodes", "vpp_ops", "vpp_layers", "h264_encodes", "get_image_bytes", "put_image_bytes", "derived_map_bytes", "host_transfer_bytes"):
    print(f"softva {key}: {counters.get(key)}")
bytes_per_frame = int(counters.get("host_transfer_bytes", "-1")) / max(frames, 1)
print(f"host bytes per frame (SoftVA's count): {bytes_per_frame:g} (target: 0)")
PY

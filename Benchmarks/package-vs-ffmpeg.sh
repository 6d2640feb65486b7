#!/usr/bin/env bash
# The streaming package benchmark (issue 29): one 1080p30 H.264/AAC source packaged as a 4-rung
# H.264 ladder (1920x1080@6M, 1280x720@3M, 960x540@2M, 640x360@730k) plus an AAC stereo
# rendition, in 6 s CMAF segments, HLS and DASH, by one `vaf package`, against ffmpeg's best
# single command: split=4, four scales, four libx264 outputs with the same settings (each
# rung's bit rate, keyframe interval and VBV cap read back from vaf's segments, keyframes
# forced every 2 s as vaf forces them) and the hls muxer with var_stream_map and
# -hls_segment_type fmp4 (HLS only: ffmpeg's one command cannot also write DASH from the same
# segments). Runs interleave A B A B so drift hits both alike. Prints wall, CPU and peak RSS
# per run, the medians with their spread, and the ratios. A third command measures the floor:
# the four encodes alone, fed generated pictures, whose peak RSS neither tool can go below.
#
#     bash Benchmarks/package-vs-ffmpeg.sh [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/lib/x264.sh
runs=${1:-3}
seconds=${2:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bash Hardware/build-release.sh
vaf=.build/release/vaf
source="$work/source.mp4"
ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$seconds" \
  -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p -c:a aac -b:a 192k -ac 2 "$source"
frames=$(ffprobe -v error -count_packets -select_streams v -show_entries stream=nb_read_packets -of csv=p=0 "$source")

rungs=(1920x1080@6M 1280x720@3M 960x540@2M 640x360@730k)
ladder=$(IFS=,; echo "${rungs[*]}")
package=(package "$source" --ladder "$ladder" --segment-duration 6 --format both --overwrite --quiet)

# One run of vaf first, to read back each rendition's x264 settings and the audio rate.
"$vaf" "${package[@]}" --output-dir "$work/probe"
folders=(1080p 720p 540p 360p)
filter="[0:v]split=${#rungs[@]}"
for i in "${!rungs[@]}"; do filter+="[s$i]"; done
filter+=";"
maps=()
encodes=()
streams=""
for i in "${!rungs[@]}"; do
  size=${rungs[$i]%@*}
  segment="$work/probe/source/${folders[$i]}/segment-00001.m4s"
  bitrate=$(strings "$segment" | grep -o 'x264 - core.*' | head -1 | tr ' ' '\n' | awk -F= '$1 == "bitrate" { print $2 }')
  filter+="[s$i]scale=size=${size}[v$i];"
  maps+=(-map "[v$i]")
  encodes+=(-b:v:$i "${bitrate}k" -x264-params:v:$i "$(x264_params_of "$segment")")
  streams+="v:$i,agroup:audio "
done
filter=${filter%;}
audio_rate=$(ffprobe -v error -select_streams a -show_entries stream=bit_rate -of csv=p=0 "$work/probe/source/audio/index.m3u8" | head -1)
[ -n "$audio_rate" ] && [ "$audio_rate" != "N/A" ] || audio_rate=128000

# The floor: the same four x264 encodes in one ffmpeg process, fed generated pictures of each
# rung's size (no decode, split, scale, audio or muxing into segments). Neither tool can hold
# less than this peak with these encoder settings.
encoders_only=()
for i in "${!rungs[@]}"; do
  encoders_only+=(-f lavfi -t "$seconds" -i "testsrc2=size=${rungs[$i]%@*}:rate=30")
done
for i in "${!rungs[@]}"; do
  segment="$work/probe/source/${folders[$i]}/segment-00001.m4s"
  bitrate=$(strings "$segment" | grep -o 'x264 - core.*' | head -1 | tr ' ' '\n' | awk -F= '$1 == "bitrate" { print $2 }')
  encoders_only+=(-map "$i:v" -c:v libx264 -pix_fmt yuv420p -force_key_frames "expr:gte(t,n_forced*2)" -b:v "${bitrate}k"
                  -x264-params "$(x264_params_of "$segment")" "$work/encoders-$i.mp4")
done

measure() { # label command...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
  read -r wall user sys rss < "$work/time"
  printf "%s %s %s %s\n" "$label" "$wall" "$(echo "$user + $sys" | bc)" "$rss"
}

echo "# $frames frames of 1920x1080 at 30 fps into ${#rungs[@]} renditions + audio, $runs runs each, $(nproc) cores"
echo "# path wall_s cpu_s peak_rss_kib"
for _ in $(seq "$runs"); do
  measure vaf "$vaf" "${package[@]}" --output-dir "$work/vaf"
  rm -rf "$work/ffmpeg"; mkdir -p "$work/ffmpeg"
  measure ffmpeg ffmpeg -v error -y -i "$source" -filter_complex "$filter" "${maps[@]}" -map 0:a \
    -c:v libx264 -pix_fmt yuv420p -force_key_frames "expr:gte(t,n_forced*2)" "${encodes[@]}" \
    -c:a aac -b:a "$audio_rate" -ac 2 \
    -f hls -hls_time 6 -hls_playlist_type vod -hls_segment_type fmp4 \
    -hls_segment_filename "$work/ffmpeg/%v/segment-%05d.m4s" -master_pl_name master.m3u8 \
    -var_stream_map "${streams}a:0,agroup:audio" "$work/ffmpeg/%v/index.m3u8"
  measure encoders ffmpeg -v error -y "${encoders_only[@]}"
done | tee "$work/results"

for i in "${!rungs[@]}"; do
  # ffmpeg's hls muxer numbers segments from 0.
  first=$(ls "$work/ffmpeg/$i"/segment-*.m4s | head -1)
  differences=$(x264_differences "$work/vaf/source/${folders[$i]}/segment-00001.m4s" "$first" || true)
  [ -z "$differences" ] || echo "# ${rungs[$i]}: x264 settings differ: $(echo "$differences" | tr '\n' ' ')"
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
floor = med["encoders"][2]
print(f"the four encoders alone peak at {floor/1024:.1f} MiB: {floor/med['ffmpeg'][2]:.3f}x ffmpeg's command; "
      f"beyond them vaf holds {(med['vaf'][2]-floor)/1024:.1f} MiB, ffmpeg {(med['ffmpeg'][2]-floor)/1024:.1f} MiB")
pairs = list(zip(by["vaf"], by["ffmpeg"]))
ratios = sorted(o[0] / f[0] for o, f in pairs)
print(f"ratio vaf/ffmpeg: wall {med['vaf'][0]/med['ffmpeg'][0]:.3f} (pairwise {statistics.median(ratios):.3f} [{ratios[0]:.3f}-{ratios[-1]:.3f}]), "
      f"CPU {med['vaf'][1]/med['ffmpeg'][1]:.3f}, peak RSS {med['vaf'][2]/med['ffmpeg'][2]:.3f}")
PY

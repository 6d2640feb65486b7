#!/usr/bin/env bash
# Remakes the generated half of the real-world corpus (issue 14) from FFmpeg's lavfi sources.
# Made with Debian bookworm's ffmpeg 5.1 (libx264, libx265, libvpx, libopus); another FFmpeg
# makes equivalent files, not byte-identical ones. The real files beside these are copies
# (MANIFEST.md says where each comes from); this script never touches them.
#
#   bash Tests/vafTests/Corpus/make-corpus.sh
#
# Every file is short (1 s or so) and small, so the sweep (CorpusSweepTests) stays quick.
set -euo pipefail
cd "$(dirname "$0")"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ff() { ffmpeg -nostdin -hide_banner -v error -y "$@"; }
# Moving test pattern and a tone; each file takes what it needs.
video() { echo "testsrc2=size=$1:rate=$2"; }
tone() { echo "sine=frequency=440:sample_rate=$1:duration=${2:-1}"; }
X264=(-c:v libx264 -preset veryfast -crf 36 -pix_fmt yuv420p)

# --- Class 1: PCM audio without a declared channel layout -------------------------------
# WAV with a plain WAVEFORMATEX header (16-bit, <= 2 channels) declares no channel mask, so
# FFmpeg reads the layout as unspecified ("2 channels", not "stereo").
ff -f lavfi -i "aevalsrc=sin(440*2*PI*t)|sin(660*2*PI*t):s=22050:d=1" -c:a pcm_s16le pcm_s16le_22050_2ch.wav
ff -f lavfi -i "aevalsrc=sin(440*2*PI*t)|sin(660*2*PI*t):s=44100:d=0.5" -c:a pcm_s16le pcm_s16le_44100_2ch.wav
ff -f lavfi -i "$(tone 48000)" -c:a pcm_s16le pcm_s16le_48000_1ch.wav
# AVI from a digital camera: MJPEG with 8-bit PCM mono at 22.05 kHz (a WAVEFORMATEX header again).
ff -f lavfi -i "$(video 320x240 15)" -f lavfi -i "$(tone 22050)" -t 1 -c:v mjpeg -q:v 24 -pix_fmt yuvj422p \
   -c:a pcm_u8 avi_mjpeg_pcm_u8_22050_1ch.avi
# QuickTime 'sowt' (16-bit little-endian PCM) at 48 kHz and 44.1 kHz.
ff -f lavfi -i "$(video 320x240 30)" -f lavfi -i "aevalsrc=sin(440*2*PI*t)|sin(660*2*PI*t):s=48000:d=0.5" -t 0.5 \
   "${X264[@]}" -c:a pcm_s16le mov_h264_sowt_48000_2ch.mov
ff -f lavfi -i "$(tone 44100)" -c:a pcm_s16le mov_sowt_44100_1ch_audio_only.mov
# QuickTime 'lpcm' (sound description version 2), as high-rate recorders write it. FFmpeg's MOV
# muxer writes 'lpcm' only where the rate does not fit 16 bits, so this one is 96 kHz (0.5 s).
ff -f lavfi -i "$(video 320x240 25)" -f lavfi -i "$(tone 96000 0.5)" -t 0.5 \
   "${X264[@]}" -c:a pcm_s16le mov_h264_lpcm_96000_1ch.mov
# FFmpeg's MOV muxer adds a 'chan' box; cameras and older QuickTime writers leave it out, so
# rename it to 'free' (same size) and the layout is undeclared again.
for f in mov_h264_sowt_48000_2ch.mov mov_sowt_44100_1ch_audio_only.mov mov_h264_lpcm_96000_1ch.mov; do
    python3 -c 'import sys; p = sys.argv[1]; d = open(p, "rb").read(); assert d.count(b"chan") == 1, p; open(p, "wb").write(d.replace(b"chan", b"free"))' "$f"
done
# Camera-style MXF (OP1a): MPEG-2 video with two mono PCM tracks at 48 kHz.
ff -f lavfi -i "$(video 720x576 25)" -f lavfi -i "$(tone 48000)" -f lavfi -i "sine=frequency=880:sample_rate=48000:duration=1" \
   -map 0:v -map 1:a -map 2:a -t 0.5 -c:v mpeg2video -q:v 24 -pix_fmt yuv420p -c:a pcm_s16le mxf_mpeg2_two_mono_pcm.mxf

# --- Class 2: non-square pixels -----------------------------------------------------------
# HDV: 1440x1080 stored, 4:3 pixels, shown as 1920x1080 (MPEG-2 in TS, and H.264 in MP4).
ff -f lavfi -i "$(video 1440x1080 25),setsar=4/3" -f lavfi -i "$(tone 48000)" -t 0.5 \
   -c:v mpeg2video -q:v 31 -pix_fmt yuv420p -c:a mp2 -b:a 128k anamorphic_1440x1080_sar4x3_mpeg2.ts
ff -f lavfi -i "$(video 1440x1080 25),setsar=4/3" -f lavfi -i "$(tone 48000)" -t 1 \
   "${X264[@]}" -c:a aac -b:a 64k anamorphic_1440x1080_sar4x3_h264.mp4
# PAL DV 4:3 (720x576 at 16:15) and PAL DVB/DVD 16:9 (720x576 at 64:45).
ff -f lavfi -i "$(video 720x576 25),setsar=16/15" -f lavfi -i "$(tone 48000)" -t 1 \
   "${X264[@]}" -c:a aac -b:a 64k pal_720x576_sar16x15_h264.mp4
ff -f lavfi -i "$(video 720x576 25),setsar=64/45" -f lavfi -i "$(tone 48000)" -t 1 \
   -c:v mpeg2video -q:v 24 -pix_fmt yuv420p -c:a mp2 -b:a 128k pal_720x576_sar64x45_mpeg2.mpg

# --- Class 3: the same content at common frame rates in four containers ------------------
# Matroska and WebM store 1 ms timestamps, so 59.94 and 60 fps come out as 16/17 ms steps.
for rate in 24 25 30 50 60000/1001 60 120; do
    # 256x144 keeps the 28 files small.
    name=$(echo "$rate" | sed 's#60000/1001#59.94#')
    ff -f lavfi -i "$(video 256x144 "$rate")" -f lavfi -i "$(tone 48000)" -t 1 "${X264[@]}" -c:a aac -b:a 64k "fps_${name}_h264_aac.mkv"
    ff -f lavfi -i "$(video 256x144 "$rate")" -f lavfi -i "$(tone 48000)" -t 1 -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -b:v 150k \
       -c:a libopus -b:a 48k "fps_${name}_vp9_opus.webm"
    ff -f lavfi -i "$(video 256x144 "$rate")" -f lavfi -i "$(tone 48000)" -t 1 "${X264[@]}" -c:a aac -b:a 64k "fps_${name}_h264_aac.mp4"
    ff -f lavfi -i "$(video 256x144 "$rate")" -f lavfi -i "$(tone 48000)" -t 1 "${X264[@]}" -c:a aac -b:a 64k "fps_${name}_h264_aac.ts"
done

# --- Class 4: damaged packets -------------------------------------------------------------
# 2 s of H.264 in four slices per picture; 3 non-key packets get 24 bytes overwritten in their
# middle (a fixed pattern, so the damage is the same every time). ffmpeg conceals and converts it.
ff -f lavfi -i "$(video 320x240 30)" -f lavfi -i "$(tone 48000 2)" -t 2 "${X264[@]}" -x264-params slices=4 -g 30 \
   -c:a aac -b:a 64k "$TMP/clean.mp4"
cp "$TMP/clean.mp4" h264_damaged_slices.mp4
ffprobe -v error -select_streams v -show_entries packet=pos,size,flags -of csv=p=0 "$TMP/clean.mp4" > "$TMP/packets.csv"
python3 - h264_damaged_slices.mp4 "$TMP/packets.csv" <<'EOF'
import sys
path, table = sys.argv[1], sys.argv[2]
packets = [line.strip().split(",") for line in open(table) if line.strip()]
# (pos, size) of non-key packets big enough to damage; hit the 10th, 25th and 40th of them.
candidates = [(int(p[1]), int(p[0])) for p in packets if "K" not in p[2] and int(p[0]) > 200]
with open(path, "r+b") as f:
    for index in (10, 25, 40):
        pos, size = candidates[index]
        f.seek(pos + size // 2)
        f.write(bytes((0x5A ^ i * 37) & 0xFF for i in range(24)))
EOF

# --- Class 5: interlaced ------------------------------------------------------------------
# Real field motion: 50p content woven into 25 interlaced frames, flagged top field first
# (1080i50 H.264) and bottom field first (576i PAL MPEG-2 at 16:15 pixels, as DV is).
ff -f lavfi -i "$(video 1920x1080 50),tinterlace=mode=interleave_top,setfield=tff" -f lavfi -i "$(tone 48000)" -t 1 \
   "${X264[@]}" -crf 44 -flags +ildct+ilme -c:a aac -b:a 64k interlaced_1080i50_tff_h264.mp4
ff -f lavfi -i "$(video 720x576 50),tinterlace=mode=interleave_bottom,setfield=bff,setsar=16/15" -f lavfi -i "$(tone 48000)" -t 1 \
   -c:v mpeg2video -q:v 24 -pix_fmt yuv420p -flags +ildct+ilme -c:a mp2 -b:a 128k interlaced_576i50_bff_mpeg2.ts

# --- Class 6: 10-bit HDR HEVC with mastering-display and content-light metadata (SEI) -------
MASTER="master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50):max-cll=1000,400"
ff -f lavfi -i "$(video 640x360 25),format=yuv420p10le" -f lavfi -i "$(tone 48000)" -t 1 -c:v libx265 -preset ultrafast -tag:v hvc1 \
   -x265-params "log-level=error:colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc:$MASTER" \
   -color_primaries bt2020 -color_trc arib-std-b67 -colorspace bt2020nc -c:a aac -b:a 64k hdr_hevc_main10_hlg.mp4
ff -f lavfi -i "$(video 640x360 25),format=yuv420p10le" -f lavfi -i "$(tone 48000)" -t 1 -c:v libx265 -preset ultrafast \
   -x265-params "log-level=error:hdr10=1:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc:$MASTER" \
   -color_primaries bt2020 -color_trc smpte2084 -colorspace bt2020nc -c:a libopus -b:a 48k hdr_hevc_main10_pq_hdr10.mkv

# --- Class 7: metadata --------------------------------------------------------------------
# QuickTime udta items (©xyz location, ©mak, ©mod) and creation_time in a MOV; the same as
# mdta keys (com.apple.quicktime.*), as iPhones write them, in an MP4.
ff -f lavfi -i "$(video 320x240 30)" -f lavfi -i "$(tone 48000)" -t 1 "${X264[@]}" -c:a aac -b:a 64k \
   -metadata creation_time=2024-06-01T12:34:56Z -metadata location=+48.8584+002.2945+035.000/ \
   -metadata make=Canon -metadata model="EOS R6" metadata_udta_location_make_model.mov
ff -f lavfi -i "$(video 320x240 30)" -f lavfi -i "$(tone 48000)" -t 1 "${X264[@]}" -c:a aac -b:a 64k -movflags use_metadata_tags \
   -metadata creation_time=2024-06-01T12:34:56Z -metadata com.apple.quicktime.location.ISO6709=+48.8584+002.2945+035.000/ \
   -metadata com.apple.quicktime.make=Apple -metadata com.apple.quicktime.model="iPhone 15" \
   -metadata com.apple.quicktime.creationdate=2024-06-01T14:34:56+0200 metadata_mdta_keys.mp4

# --- Class 8: Matroska H.264 with B-frames (no decode timestamps in the container) --------
ff -f lavfi -i "$(video 640x360 30)" -f lavfi -i "$(tone 48000)" -t 1 "${X264[@]}" -bf 3 -b_strategy 2 -c:a aac -b:a 64k \
   mkv_h264_bframes_pyramid.mkv

# --- Class 9: variable frame rate -----------------------------------------------------------
# 15 frames at 30 fps, then 15 fps: a phone that slowed down in the dark.
ff -f lavfi -i "$(video 320x240 30),setpts='if(lt(N,15),N/30,0.5+(N-15)/15)/TB'" -f lavfi -i "$(tone 48000 2)" \
   -fps_mode vfr -frames:v 38 -t 2 "${X264[@]}" -c:a aac -b:a 64k vfr_30_then_15fps_h264_aac.mp4

# --- Class 10: headers that lie about the duration ------------------------------------------
# A WAV whose data chunk says 10 s, cut after 1 s of samples.
ff -f lavfi -i "$(tone 22050 10)" -c:a pcm_s16le "$TMP/long.wav"
head -c $((44 + 22050 * 2)) "$TMP/long.wav" > wav_truncated_header_says_10s.wav
# An M4A whose index (at the front) describes 20 s, cut after about 2.5 s of audio data.
ff -f lavfi -i "$(tone 44100 20)" -c:a aac -b:a 64k -movflags +faststart "$TMP/long.m4a"
head -c 24000 "$TMP/long.m4a" > m4a_truncated_index_says_20s.m4a

# --- Transport-stream timing ----------------------------------------------------------------
# Timestamps starting 10 hours in (a broadcast capture), and a discontinuity: two
# independently made streams concatenated, so the clock jumps back to their common start.
ff -f lavfi -i "$(video 320x240 25)" -f lavfi -i "$(tone 48000)" -t 1 "${X264[@]}" -c:a aac -b:a 64k \
   -output_ts_offset 36000 ts_start_at_10_hours.ts
ff -f lavfi -i "$(video 320x240 25)" -f lavfi -i "$(tone 48000)" -t 1 "${X264[@]}" -c:a aac -b:a 64k "$TMP/a.ts"
ff -f lavfi -i "smptebars=size=320x240:rate=25" -f lavfi -i "sine=frequency=880:sample_rate=48000:duration=1" -t 1 \
   "${X264[@]}" -c:a aac -b:a 64k "$TMP/b.ts"
cat "$TMP/a.ts" "$TMP/b.ts" > ts_discontinuity_two_concatenated.ts

ls -l

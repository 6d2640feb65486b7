#!/usr/bin/env bash
# Installs the Debian packages VAFoundation builds and tests against, only those missing.
# Quiet when everything is present. Needs root (or sudo) only when something must be installed.
set -euo pipefail

packages=(
  # Build: FFmpeg 5.1's libraries, libva 2.17 with its DRM and X11 back ends, libdrm.
  pkg-config libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev
  libva-dev libdrm-dev libx11-dev
  # libavfilter for deinterlacing (bwdif) and HDR-to-SDR tone mapping (zscale, tonemap).
  libavfilter-dev
  # SoftVA, the CPU-backed VA driver used by tests, encodes and decodes JPEG with libjpeg
  # (H.264 decode uses libavcodec, from the FFmpeg packages above).
  libjpeg62-turbo-dev
  # Tests: ffmpeg/ffprobe as an independent oracle, Xvfb to give libva an X11 display,
  # vainfo as an independent VA client.
  ffmpeg xvfb xauth vainfo
  # A real VA driver with no GPU behind it: the forced-driver test (ProbeCommandTests) loads it
  # and checks that vaInitialize fails the way it does on a machine without the Intel GPU.
  i965-va-driver
  # Overlay text layers default to DejaVu Sans (drawn with libavfilter's drawtext).
  fonts-dejavu-core
  # Benchmarks/*.sh compute their ratios with bc.
  bc
  # Hardware/watchdog.sh prints the stacks of a hung test run with gdb.
  gdb
  # TerminalDisplayTests runs vaf transcode in detached tmux sessions of 80 and 120 columns.
  tmux
  # Streaming packages are played to the end by GStreamer, an independent client: playbin with
  # hlsdemux and dashdemux (plugins-bad), qtdemux (good) and its libav decoders.
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav
  # ExifTool reads the clean aperture (QuickTime/MP4 `clap`) the writer puts in, which
  # FFmpeg 5.1 does not read: an independent oracle for CleanApertureTests.
  libimage-exiftool-perl
  # SlurmClusterTests runs a one-node Slurm cluster on localhost (munged, slurmctld, slurmd)
  # and the README's job array on it.
  slurm-wlm munge
  # The OpenTimelineIO oracle tests install the opentimelineio package from PyPI into a venv
  # (Hardware/otio-venv.sh), which needs the venv module.
  python3-venv
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

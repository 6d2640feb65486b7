#!/usr/bin/env bash
# README command (a): set up a fresh Debian machine, build in release, and run the main job:
# transcode the bundled sample clip (or the files and folders given as arguments) with the
# default preset (1280x720 H.264/AAC) into ./vaf-out, printing the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Hardware/setup.sh
export PATH="$PATH:/opt/swift/usr/bin"
bash Hardware/build-release.sh
if [ $# -eq 0 ]; then
  set -- Tests/VAFoundationTests/Fixtures/h264_aac_iphone6_rot90_gps_metadata.mov
fi
exec .build/release/vaf transcode "$@" --output-dir vaf-out --overwrite

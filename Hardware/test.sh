#!/usr/bin/env bash
# README command (b): set up a fresh Debian machine and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Hardware/setup.sh
# opentimelineio (PyPI) in .build/otio-venv, for the OpenTimelineIO oracle tests. A refused install
# stops here; only an unreachable index lets it go on, and then those tests skip.
bash Hardware/otio-venv.sh
export VAF_OTIO_PYTHON="$PWD/.build/otio-venv/bin/python3"
export PATH="$PATH:/opt/swift/usr/bin"
swift build --build-tests
# The DocC catalog builds with no warning (every symbol link resolves).
bash Hardware/docs.sh
# A normal run takes minutes; a hung one is stopped after 30 with every thread's stack printed.
bash Hardware/watchdog.sh 1800 swift test --skip-build
# The engine's and the SoftVA device paths' suites again under AddressSanitizer and
# ThreadSanitizer, each in its own build folder (about 25 minutes on 2 cores).
bash Hardware/sanitizers.sh both
# Two minutes of libFuzzer over asset inspection and track reading, under AddressSanitizer.
bash Fuzz/run.sh 120

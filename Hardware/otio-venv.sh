#!/usr/bin/env bash
# Puts the `opentimelineio` package from PyPI into a Python virtual environment,
# .build/otio-venv, for the OpenTimelineIO oracle tests (Tests/vafTests/OTIOOracleTests.swift),
# only when it is not there yet. A venv leaves Debian's system Python (externally managed) alone.
# Without PyPI (no network) it says so and exits 0: those tests then skip, naming this script.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=.build/otio-venv
if "$venv/bin/python3" -c "import opentimelineio" 2>/dev/null; then exit 0; fi
mkdir -p .build
if ! python3 -m venv --clear "$venv" >/dev/null; then
  echo "otio-venv: cannot make $venv (is python3-venv installed? Hardware/setup.sh installs it); the OpenTimelineIO oracle tests will skip" >&2
  exit 0
fi
# 0.17 is the first release with Clip.2 (several media references), which the tests read back.
if ! "$venv/bin/pip" install --quiet --disable-pip-version-check "opentimelineio>=0.17,<1"; then
  echo "otio-venv: cannot install opentimelineio from PyPI (no network?); the OpenTimelineIO oracle tests will skip" >&2
fi
exit 0

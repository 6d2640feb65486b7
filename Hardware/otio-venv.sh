#!/usr/bin/env bash
# Puts the `opentimelineio` package from PyPI into a Python virtual environment,
# .build/otio-venv, for the OpenTimelineIO oracle tests (Tests/vafTests/OTIOOracleTests.swift),
# only when it is not there yet. A venv leaves Debian's system Python (externally managed) alone.
# A failed set-up exits 1 and says why: a venv that cannot be made, or an install the package
# index refused (no such version, no wheel for this Python, a broken download...). Only an index
# that cannot be reached at all (no network) exits 0, saying so on stderr: those tests then skip,
# naming this script.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=.build/otio-venv
# 0.17 is the first release with Clip.2 (several media references), which the tests read back.
requirement="opentimelineio>=0.17,<1"
if "$venv/bin/python3" -c "import opentimelineio" 2>/dev/null; then exit 0; fi
mkdir -p .build
if ! python3 -m venv --clear "$venv" >/dev/null; then
  echo "otio-venv: cannot make $venv (is python3-venv installed? Hardware/setup.sh installs it)" >&2
  exit 1
fi
if "$venv/bin/pip" install --quiet --disable-pip-version-check "$requirement"; then
  if "$venv/bin/python3" -c "import opentimelineio"; then exit 0; fi
  echo "otio-venv: pip installed $requirement into $venv but Python cannot import opentimelineio" >&2
  exit 1
fi
# pip failed: ask the index pip uses (PIP_INDEX_URL, else pip's configuration, else PyPI) whether
# it answers at all. Any HTTP answer, even an error status, means pip's failure was a refusal.
index=${PIP_INDEX_URL:-$("$venv/bin/pip" config get global.index-url 2>/dev/null || echo https://pypi.org/simple)}
if "$venv/bin/python3" - "${index%/}/opentimelineio/" <<'PYTHON'
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=30)
except urllib.error.HTTPError:
    pass
except (urllib.error.URLError, OSError) as error:
    print(f"otio-venv: {sys.argv[1]}: {error}", file=sys.stderr)
    sys.exit(1)
PYTHON
then
  echo "otio-venv: pip could not install $requirement although the package index $index answers (see pip's message above); the set-up failed" >&2
  exit 1
fi
echo "otio-venv: the package index $index cannot be reached (no network?); the OpenTimelineIO oracle tests will skip" >&2
exit 0

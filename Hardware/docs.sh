#!/usr/bin/env bash
# Builds VAFoundation's DocC documentation (Sources/VAFoundation/VAFoundation.docc) into
# .build/docs, failing on any warning (a broken symbol link, an unknown topic). It reads the
# symbols from the debug build's modules with the toolchain's swift-symbolgraph-extract and runs
# the toolchain's docc: what swift-docc-plugin does, without a package to fetch.
#
#     bash Hardware/docs.sh          (after `swift build`; test.sh runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"
bin=$(dirname "$(command -v swift)")
modules=.build/debug/Modules
[ -d "$modules" ] || { echo "docs.sh: no debug build in .build/debug (run swift build first)" >&2; exit 1; }
graphs=.build/symbol-graphs
rm -rf "$graphs" .build/docs
mkdir -p "$graphs"
"$bin/swift-symbolgraph-extract" -module-name VAFoundation -I "$modules" -I Sources/CFFmpeg -I Sources/CVA -I Sources/CDRM \
  -target "$(uname -m)-unknown-linux-gnu" -minimum-access-level public -output-dir "$graphs"
"$bin/docc" convert Sources/VAFoundation/VAFoundation.docc --additional-symbol-graph-dir "$graphs" \
  --fallback-display-name VAFoundation --fallback-bundle-identifier org.vafoundation.VAFoundation \
  --output-path .build/docs --warnings-as-errors
echo "docs.sh: documentation in .build/docs"

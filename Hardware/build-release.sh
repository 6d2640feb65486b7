#!/usr/bin/env bash
# Builds release `vaf` as it is deployed and measured: README command (a), `vaf bench` and every
# script in Benchmarks/ build it here, so that they cannot drift apart. The Swift runtime is
# linked in (--static-swift-stdlib): the binary runs on a server without a Swift toolchain, and
# maps about 5 MB fewer resident pages than with the runtime's shared libraries (BENCH.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"
swift build -c release --product vaf --static-swift-stdlib >&2

#!/usr/bin/env bash
# Builds release `vaf` as it is deployed and measured (Swift runtime linked in; why: Benchmarks/BENCH.md).
# README command (a), `vaf bench` and every script in Benchmarks/ build it here, so they cannot drift apart.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"
swift build -c release --product vaf --static-swift-stdlib >&2

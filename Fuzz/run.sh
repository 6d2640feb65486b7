#!/usr/bin/env bash
# Builds the libFuzzer target (Fuzz/Sources/VAFFuzz) with AddressSanitizer and coverage, and runs
# it for SECONDS (default 120) over asset inspection and a short read of every track, seeded with
# the test fixtures and the real-world corpus. A crash, a sanitizer report, an input taking over 10 s or 3 GB fails the run:
# the input is kept in Fuzz/findings/ (make it a regression file under Tests/ with a test).
# The mutation seed is fixed (FUZZ_SEED, default 1) so that a CI failure can be replayed.
#
#     bash Fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-120}
export PATH="$PATH:/opt/swift/usr/bin"
runtime=$(ls -d "$(dirname "$(command -v swift)")"/../lib/swift/clang/lib/linux)/libclang_rt.fuzzer_no_main-x86_64.a
[ -f "$runtime" ] || { echo "Fuzz/run.sh: this toolchain has no libFuzzer runtime ($runtime)" >&2; exit 1; }
# -sanitize=fuzzer would link libFuzzer's own main; SwiftPM's executables have theirs, which calls
# LLVMFuzzerRunDriver. So: the instrumentation -sanitize=fuzzer adds, and the runtime without main.
swift build -c debug -Xswiftc -parse-as-library -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp \
  -Xlinker "$runtime" -Xlinker -lstdc++ --product VAFFuzz >&2
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
# Seeds: the fixtures, the real-world corpus and, where the checkout has them, the shared real clips and the inputs
# that once crashed or hung vaf; the fuzzer's own finds go to the throwaway corpus.
seeds=(../Tests/VAFoundationTests/Fixtures ../Tests/vafTests/Corpus)
for shared in ../../shared/media ../../shared/regressions; do [ -d "$shared" ] && seeds+=("$shared"); done
mkdir -p findings
# Leak reports are off: FFmpeg's and the Swift runtime's process-lifetime allocations are not findings.
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 .build/debug/VAFFuzz "$corpus" "${seeds[@]}" \
  -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 -max_len=1048576 -artifact_prefix=findings/ -print_final_stats=1 2>&1 \
  | grep -v '^#[0-9].*\(NEW\|REDUCE\|pulse\)' || status=$?
if ls findings/* >/dev/null 2>&1; then
  echo "Fuzz/run.sh: findings in Fuzz/findings: $(ls findings | tr '\n' ' ')" >&2
  exit 1
fi
exit "${status:-0}"

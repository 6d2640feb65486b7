#!/usr/bin/env bash
# The engine's tests under the sanitizers, since valgrind cannot run Swift binaries:
#  - address (the default): AddressSanitizer over every VAFoundationTests suite (the engine,
#    reader, writer, export, compositions, images) and the SoftVA device paths;
#  - thread: ThreadSanitizer over the suites that run the pipeline's threads and queues. With
#    Swift 6.3.1 on Linux it reports accesses serialised by Synchronization.Mutex as races (its
#    futex lock is invisible to TSan: a 15-line program incrementing a Mutex-guarded counter from
#    two queues is reported too, and counts right), so its reports are not findings until the
#    toolchain or the engine's locks are annotated.
# Each builds in its own folder (.build-asan, .build-tsan). Any sanitizer report fails the run.
#
#     bash Hardware/sanitizers.sh [address|thread|both]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"
which=${1:-address}
# Leak reports are off: FFmpeg's and the Swift runtime's process-lifetime allocations are not findings.
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
engine='AssetReaderTests|AssetWriter|ExportSessionTests|PipelineSeamTests|CompositionExportTests|VideoCompositionExportTests|DecodeDamageTests|SourceClockTests'
if [ "$which" = address ] || [ "$which" = both ]; then
  swift build --build-tests --sanitize=address --scratch-path .build-asan
  bash Hardware/watchdog.sh 1800 swift test --skip-build --sanitize=address --scratch-path .build-asan \
    --filter 'VAFoundationTests|HardwareExportTests|DeviceCompositionTests'
fi
if [ "$which" = thread ] || [ "$which" = both ]; then
  swift build --build-tests --sanitize=thread --scratch-path .build-tsan
  bash Hardware/watchdog.sh 1800 swift test --skip-build --sanitize=thread --scratch-path .build-tsan --filter "$engine"
fi

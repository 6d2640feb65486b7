#!/usr/bin/env bash
# The engine's tests under the sanitizers, since valgrind cannot run Swift binaries:
#  - address (the default): AddressSanitizer over the VAFoundationTests suites (the engine,
#    reader, writer, export, compositions, images), the SoftVA device paths and MediaCore's locks.
#    The corpus and preset matrices are left to the normal run: they repeat the same engine
#    paths over many files and presets, and add time, not coverage;
#  - thread: ThreadSanitizer over the same suites, which run the pipeline's threads, queues
#    and tasks. TSan sees the engine's synchronisation because it locks with MediaCore's
#    Locked (a pthread mutex, which TSan intercepts; Synchronization.Mutex's futex it cannot
#    see) and hands continuation results over through LockedContinuation (the concurrency
#    runtime does not tell TSan of a resume that beats the await). No report is suppressed;
#  - both: address, then thread (Hardware/test.sh runs this after the normal suite).
# Each builds in its own folder (.build-asan, .build-tsan). Run it after `swift build`: some
# tests run .build/debug/vaf. Any sanitizer report fails the run.
#
#     bash Hardware/sanitizers.sh [address|thread|both]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"
which=${1:-address}
# Leak reports are off: FFmpeg's and the Swift runtime's process-lifetime allocations are not findings.
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1
# Tests that load the SoftVA driver into the stock ffmpeg skip under it: a sanitizer-built driver
# needs its runtime, which ffmpeg does not have (dlopen fails on undefined __asan_*/__tsan_* symbols).
export VAF_SANITIZED_BUILD=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
suites='VAFoundationTests|HardwareExportTests|HardwarePackageTests|DeviceCompositionTests|LockedTests'
matrices='ExportPresetTests|CompositionCorpusTests|FFprobeOracleTests|ContentOracleTests'
if [ "$which" = address ] || [ "$which" = both ]; then
  swift build --build-tests --sanitize=address --scratch-path .build-asan
  bash Hardware/watchdog.sh 1800 swift test --skip-build --sanitize=address --scratch-path .build-asan \
    --filter "$suites" --skip "$matrices"
fi
if [ "$which" = thread ] || [ "$which" = both ]; then
  swift build --build-tests --sanitize=thread --scratch-path .build-tsan
  bash Hardware/watchdog.sh 1800 swift test --skip-build --sanitize=thread --scratch-path .build-tsan --filter "$suites" --skip "$matrices"
fi

#!/bin/sh
# Builds the fuzzers and runs each for SECONDS (default 180) on one core.
#   tests/fuzz/run_fuzz.sh [SECONDS] [BUILD_DIR]
set -eu
secs=${1:-180}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build-fuzz}
CC=clang cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DTRANSCRIBE_FUZZ=ON >/dev/null
cmake --build "$build" --target fuzz_gguf fuzz_ggml_bin fuzz_seeds -j2 >/dev/null
mkdir -p "$build/fuzz/seed_gguf" "$build/fuzz/seed_bin" "$build/fuzz/corpus_gguf" \
    "$build/fuzz/corpus_bin"
"$build/bin/fuzz_seeds" "$build/fuzz/seed_gguf" "$build/fuzz/seed_bin"
for f in gguf bin; do
    exe=$build/bin/fuzz_$f
    [ "$f" = bin ] && exe=$build/bin/fuzz_ggml_bin
    "$exe" -max_total_time="$secs" -jobs=1 -workers=1 -print_final_stats=1 \
        -artifact_prefix="$build/fuzz/crash_$f-" "$build/fuzz/corpus_$f" "$build/fuzz/seed_$f"
done

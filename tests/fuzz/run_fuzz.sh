#!/bin/sh
# Builds the fuzzers and runs each for SECONDS (default 180), one process each,
# one after the other; corpora and crash artifacts go under BUILD_DIR/fuzz.
#   tests/fuzz/run_fuzz.sh [SECONDS] [BUILD_DIR]
set -eu
secs=${1:-180}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build-fuzz}
CC=clang cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DTRANSCRIBE_FUZZ=ON >/dev/null
cmake --build "$build" --target fuzz_gguf fuzz_ggml_bin fuzz_wav fuzz_seeds -j2 >/dev/null
mkdir -p "$build/fuzz/seed_gguf" "$build/fuzz/seed_bin" "$build/fuzz/corpus_gguf" \
    "$build/fuzz/corpus_bin" "$build/fuzz/seed_wav" "$build/fuzz/corpus_wav"
cp "$root"/tests/data/bundled/*.wav "$build/fuzz/seed_wav/"
"$build/bin/fuzz_seeds" "$build/fuzz/seed_gguf" "$build/fuzz/seed_bin"
for f in gguf bin wav; do
    exe=$build/bin/fuzz_$f flags=-dict=$root/tests/fuzz/gguf.dict
    if [ "$f" = bin ]; then exe=$build/bin/fuzz_ggml_bin flags=-dict=$root/tests/fuzz/ggml_bin.dict; fi
    if [ "$f" = wav ]; then flags=-max_len=65536; fi
    "$exe" -max_total_time="$secs" -print_final_stats=1 "$flags" \
        -artifact_prefix="$build/fuzz/crash_$f-" "$build/fuzz/corpus_$f" "$build/fuzz/seed_$f"
done

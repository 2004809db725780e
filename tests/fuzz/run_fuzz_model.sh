#!/bin/sh
# Builds the whole-library model fuzzer (clang, ASan+UBSan, coverage from
# every module) and runs it for SECONDS (default 300) from the tiny reference
# Parakeet and Canary models (Whisper's 30 s window makes each run too slow here;
# its parsers have their own harnesses); corpus and crashes go under BUILD_DIR/fuzz.
#   tests/fuzz/run_fuzz_model.sh [SECONDS] [BUILD_DIR]
set -eu
secs=${1:-300}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build-fuzz-model}
CC=clang cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DTRANSCRIBE_FUZZ=ON \
    -DTRANSCRIBE_SANITIZE=ON -DTRANSCRIBE_BUILD_TESTS=ON >/dev/null
cmake --build "$build" --target fuzz_model -j2 >/dev/null
mkdir -p "$build/fuzz/seed_model" "$build/fuzz/corpus_model"
for f in "$root"/tests/data/parakeet/*/*.gguf "$root"/tests/data/canary/*/*.gguf; do
    cp "$f" "$build/fuzz/seed_model/"
done
"$build/bin/fuzz_model" -max_total_time="$secs" -print_final_stats=1 -max_len=1000000 \
    -rss_limit_mb=4096 -timeout=20 -dict="$root/tests/fuzz/gguf.dict" \
    -artifact_prefix="$build/fuzz/crash_model-" "$build/fuzz/corpus_model" "$build/fuzz/seed_model"

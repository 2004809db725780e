#!/bin/sh
# ctest's short run of one fuzz harness, so that every harness keeps building
# and running (the long runs are run_fuzz.sh and run_fuzz_model.sh):
#   smoke.sh WORKDIR SECONDS FUZZER [SEED_FILE_OR_DIR...] [-- LIBFUZZER_FLAGS...]
# Seeds are copied into WORKDIR/seed; new inputs go to WORKDIR/corpus.
set -eu
work=$1 secs=$2 fuzzer=$3
shift 3
rm -rf "$work"
mkdir -p "$work/seed" "$work/corpus"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    if [ -d "$1" ]; then cp "$1"/* "$work/seed/"; else cp "$1" "$work/seed/"; fi
    shift
done
[ $# -gt 0 ] && shift
exec "$fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 \
    -artifact_prefix="$work/crash-" "$@" "$work/corpus" "$work/seed"

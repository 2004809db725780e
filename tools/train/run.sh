#!/usr/bin/env bash
# Whole pipeline, seeded: corpus -> held-out sets -> synthesis + features ->
# training -> GGUF export -> torch and C-CLI evaluation.
#
#   tools/train/run.sh [WORK_DIR] [TRAIN_MINUTES]
#
# WORK_DIR defaults to build-train/ in the repository (git-ignored). Needs
# the Debian packages listed in tools/train/README.md and a built
# build/bin/transcribe for the last step (skipped when absent).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${1:-$root/build-train}"
minutes="${2:-90}"
py=/usr/bin/python3
seed=1234
mkdir -p "$work"
cd "$here"

$py corpus.py "$work" "$seed"
# test: 150 in-domain fortune + 150 number sentences; test_open: 100 fortune
# sentences outside the vocabulary; dev (checkpoint choice): 150 more held-out
# sentences, none of them in test
$py synth.py test "$work" --n 300 --seed "$seed"
$py synth.py test "$work" --n 100 --sources open --name test_open --seed "$seed"
$py synth.py test "$work" --n 150 --name dev --seed 4321 --exclude "$work/test/test.tsv"
# every training sentence spoken three times, each with a new random voice;
# the fortune sentences three times more (their own shards, new voices)
$py synth.py train "$work" --jobs 2 --seed "$seed" --repeat 3
$py synth.py train "$work" --jobs 2 --seed "$seed" --repeat 3 --sources fortune --tag x_
# number readings are easy (under 1 % WER): a third of them per epoch is enough
$py train.py "$work" "$work/run" --minutes "$minutes" --vocab 512 --seed "$seed" \
    --source-weight number=0.34
$py export.py "$work/run/best.pt" "$work/run/spm.model" "$work/run/model.gguf"
for t in test test_open; do
    $py torch_eval.py "$work/run/best.pt" "$work/run/spm.model" "$work/$t" --f16 \
        --out "$work/run/torch_$t.tsv"
    if [ -x "$root/build/bin/transcribe" ]; then
        $py eval_wer.py "$root/build/bin/transcribe" "$work/run/model.gguf" "$work/$t" \
            --torch "$work/run/torch_$t.tsv" --out "$work/run/c_$t.tsv"
    fi
done

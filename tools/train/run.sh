#!/usr/bin/env bash
# Whole pipeline, seeded: corpus -> synthesis + features -> held-out set ->
# training -> GGUF export -> torch and C-CLI evaluation.
#
#   tools/train/run.sh [WORK_DIR] [TRAIN_MINUTES]
#
# WORK_DIR defaults to build-train/ in the repository (git-ignored). Needs
# the Debian packages listed in tools/train/README.md and a built
# build-train/bin/transcribe for the last step (skipped when absent).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${1:-$root/build-train}"
minutes="${2:-56}"
py=/usr/bin/python3
seed=1234
mkdir -p "$work"
cd "$here"

$py corpus.py "$work" "$seed"
$py synth.py test "$work" --n 300 --seed "$seed"
# synthesis runs until stopped or done; the trainer takes the shards present at
# each epoch start, so on a busy machine start training once a few hours exist
$py synth.py train "$work" --jobs 2 --seed "$seed"
$py train.py "$work" "$work/run1" --minutes "$minutes" --seed "$seed"
# second leg (the shipped model: 57 + 30 min): continue from the first leg's
# last checkpoint at a lower peak lr, SpecAugment throughout
mkdir -p "$work/run2"
cp "$work/run1/spm.model" "$work/run1/spm.vocab" "$work/run2/"
$py train.py "$work" "$work/run2" --minutes 30 --lr 6e-4 --warmup 100 --sortagrad 0 \
    --specaug-from 0 --init "$work/run1/last.pt" --seed "$seed"
$py export.py "$work/run2/best.pt" "$work/run2/spm.model" "$work/run2/model.gguf"
$py torch_eval.py "$work/run2/best.pt" "$work/run2/spm.model" "$work/test" --f16 \
    --out "$work/run2/torch_hyps.tsv"
if [ -x "$root/build-train/bin/transcribe" ]; then
    $py eval_wer.py "$root/build-train/bin/transcribe" "$work/run2/model.gguf" "$work/test" \
        --torch "$work/run2/torch_hyps.tsv" --out "$work/run2/c_hyps.tsv"
fi

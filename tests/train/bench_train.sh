#!/bin/sh
# Training speed: tokens/s of full training steps (forward, backward, gradient clipping,
# AdamW) of a GPT with 4 layers, hidden 256, 4 heads, sequence 256, micro-batch 4 and the full
# GPT-2 vocabulary (50257, padded to 50304), gpt3d's CPU backend against PyTorch doing the same
# steps with the same number of threads.  Prints TAP (it is in LONG_TESTS: make check-long).
#
#   tests/train/bench_train.sh [THREADS [STEPS [ROUNDS]]]
#
# Each round runs gpt3d, then PyTorch (alternating, so a busy spell of the machine hits both);
# each reports the median step of STEPS timed steps after 2 warm-up steps, and the best round
# of each counts.  Defaults: all CPUs, 10 steps, 3 rounds.  The goal is a ratio >= 1.0.
# From a build directory: top_builddir=. top_srcdir=.. sh ../tests/train/bench_train.sh
. "${top_srcdir:-.}/tests/lib.sh"
set -e
threads=${1:-$(nproc)}
steps=${2:-10}
rounds=${3:-3}
py=${PYTHON_REF:-/usr/bin/python3}
bench="${top_builddir:-.}/tests/train/bench_train"
shape="--layers 4 --hidden 256 --heads 4 --seq 256 --batch 4 --vocab 50257 --steps $steps"

[ -x "$bench" ] || skip_all "$bench is not built (make tests/train/bench_train)"
"$py" -c 'import torch' >/dev/null 2>&1 || skip_all "$py has no torch (Debian's python3-torch)"

diag "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $threads threads; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; load: $(cut -d' ' -f1-3 /proc/loadavg)"
# gpt3d, PyTorch: the tokens/s of each ($shape: the bench flags, split into words on purpose)
gpt3d() {
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=$threads "$bench" $shape | sed -n 's/^tokens\/s: //p'
}
PyTorch() {
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=$threads "$py" "$top_srcdir/tests/train/bench_torch.py" $shape \
        --threads "$threads" | sed -n 's/^tokens\/s: //p'
}
g3_best_of_rounds "$rounds" max tokens/s gpt3d PyTorch
echo "gpt3d: $best_a tokens/s  PyTorch: $best_b tokens/s  ratio: $ratio"
tap_result "$(g3_between "$ratio" 1.0)" "gpt3d trains at $ratio x PyTorch's tokens/s with $threads threads (goal >= 1.0, aim 1.5)"
done_testing

#!/bin/sh
# gpt3d plan's time per iteration against a measurement: the CPU bench model of
# tests/train/bench_train (4 layers, hidden 256, 4 heads, sequence 256, micro-batch 4, GPT-2's
# vocabulary) planned with a calibration of this machine (gpt3d plan --calibrate), next to
# bench_train's median step.  A benchmark (make check-long), not a test in make check: on a
# shared machine both sides swing by several times from run to run (docs/plan.md "The CPU
# check"), so each round calibrates, plans and measures back to back and the best round of
# each counts.  Passes when the plan is within 25% of the measurement.
#
#   tests/cli/bench_plan.sh [ROUNDS [STEPS]]
#
# From a build directory: top_builddir=. top_srcdir=.. sh ../tests/cli/bench_plan.sh
. "${top_srcdir:-.}/tests/lib.sh"
set -eu
rounds=${1:-3}
steps=${2:-6}
bench="${top_builddir:-.}/tests/train/bench_train"
[ -x "$bench" ] || skip_all "$bench is not built (make tests/train/bench_train)"
g3_tmpdir

shape="--layers 4 --hidden 256 --heads 4 --seq 256 --batch 4 --vocab 50257"
plan="--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 256 --max-position-embeddings 256 --micro-batch-size 4 --global-batch-size 4"
diag "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
# gpt3d_plan: gpt3d plan's seconds per iteration with a calibration made just before
gpt3d_plan() {
    "$GPT3D" plan --calibrate "$TMPD/cpu.cal" >/dev/null
    # shellcheck disable=SC2086
    "$GPT3D" plan $plan --machine "$TMPD/cpu.cal" --json |
        sed -n 's/.*"seconds_per_iteration":\([0-9.e+-]*\),.*/\1/p'
}
# bench_train: its median step in seconds
bench_train() {
    # shellcheck disable=SC2086
    "$bench" $shape --steps "$steps" | sed -n 's/^median step: \([0-9.]*\) ms/\1/p' |
        awk '{ print $1 / 1000 }'
}
g3_best_of_rounds "$rounds" min "s per iteration" gpt3d_plan bench_train
echo "plan: $best_a s  bench_train: $best_b s  ratio: $ratio"
tap_result "$(g3_between "$ratio" 0.75 1.25)" "gpt3d plan predicts the CPU bench model at $ratio x bench_train's time (goal: within 25%)"
done_testing

#!/bin/sh
# Interleaved 1F1B (--virtual-pipeline-model-parallel-size V, or
# --num-layers-per-virtual-pipeline-stage N) trains the one-rank model: TP 2 x PP 2 x V 2,
# PP 2 x V 2 x DP 2 with ZeRO-1 and the overlapped reduction in several buckets, PP 2 x V 2
# with recomputation follow the one-rank loss curve, gradients and Adam state within the
# tolerances of test_parallel_equiv.sh; V = 1 is bitwise today's 1F1B; a checkpoint saved
# under PP 2 x V 2 resumes under V 1, TP 2 and PP 4 on the one-rank curve; every invalid
# combination exits 2 naming the flag.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/parallel/par_lib.sh
. "$top_srcdir/tests/parallel/par_lib.sh"
set -eu

g3_need_mpirun
par_setup

# 4 layers: PP 2 x V 2 gives chunks of one layer (stage 0: layers 0 and 2, stage 1: 1 and 3).
# Global batch 16, micro-batch 2: 8 or 4 micro-batches per replica, multiples of PP.
par_flags 4 --global-batch-size 16 --train-iters 20 --eval-iters 2
V=--virtual-pipeline-model-parallel-size

par_train ref 0
is "$rc" 0 "the one-rank reference run exits 0"

par_train tp2pp2v2 4 "$T" 2 "$P" 2 "$V" 2
is "$rc" 0 "TP 2 x PP 2 x V 2: 4 ranks exit 0"
par_compare tp2pp2v2 ref
like "$out" 'pipeline 2 stages: 0:\[0,1\)\[2,3\) 1:\[1,2\)\[3,4\)' \
    "the layout line shows each stage's chunks (Megatron's assignment)"
like "$out" 'pipeline idle fraction of stage 0: measured [0-9.]+; 1F1B \(p - 1\) / \(m \+ p - 1\) = 0\.1111; interleaved \(p - 1\) / \(V m \+ p - 1\) = 0\.0588 \(V = 2\)' \
    "the idle fraction is printed next to both formulas (m 8, PP 2, V 2)"

par_train pp2v2dp2 4 "$P" 2 --num-layers-per-virtual-pipeline-stage 1 \
    --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
    --ddp-bucket-size 3000
is "$rc" 0 "PP 2 x V 2 (as --num-layers-per-virtual-pipeline-stage 1) x DP 2, ZeRO-1, overlapped buckets: exit 0"
like "$out" 'data-parallel reduction: [2-9] gradient buckets' "... in several buckets over the chunks' layers"
par_compare pp2v2dp2 ref

par_train pp2v2rc 2 "$P" 2 "$V" 2 --recompute-activations
is "$rc" 0 "PP 2 x V 2 with recomputed activations: exit 0"
par_compare pp2v2rc ref

# ---- V = 1 is the 1F1B of today, bit for bit
par_train pp2 2 "$P" 2
is "$rc" 0 "PP 2: exit 0"
par_train pp2v1 2 "$P" 2 "$V" 1
is "$rc" 0 "PP 2 with V 1: exit 0"
# shellcheck disable=SC2046
set -- $(par_maxdiff "$TMPD/pp2.jsonl" "$TMPD/pp2v1.jsonl" loss train abs)
is "$*" "0 20" "V 1: the loss curve is bitwise the one of PP 2 without the flag"
# shellcheck disable=SC2046
set -- $(par_maxdiff "$TMPD/pp2.jsonl" "$TMPD/pp2v1.jsonl" grad_norm train abs)
is "$*" "0 20" "V 1: the gradient norms are bitwise the same"
same=0
for f in "$TMPD"/pp2/*; do
    cmp -s "$f" "$TMPD/pp2v1/${f##*/}" || same=1
done
is "$same" 0 "V 1: gradients, parameters and Adam moments dumped are bitwise the same"

# ---- a checkpoint saved under PP 2 x V 2 resumes under another V, TP, PP
# after_ref NAME: the largest relative difference of the loss over iterations 11-20 between
# the reference and NAME's metrics, and the number compared
after_ref() {
    awk 'FNR == 1 { f++ }
         /"event":"train"/ {
             i = index($0, "\"iteration\":"); it = substr($0, i + 12) + 0
             j = index($0, "\"loss\":"); v = substr($0, j + 7) + 0
             if (f == 1) ref[it] = v
             else if (it > 10) { n++; d = (v - ref[it]) / ref[it]; if (d < 0) d = -d; if (d > w) w = d }
         }
         END { printf "%.3g %d\n", w, n }' "$TMPD/ref.jsonl" "$TMPD/$1.jsonl"
}
flags_save=$flags
flags=$(printf '%s\n' "$flags" | sed 's/--train-iters 20/--train-iters 10 --lr-decay-iters 20/')
par_train save_v2 2 "$P" 2 "$V" 2 --save "$TMPD/ck"
is "$rc" 0 "PP 2 x V 2: 10 iterations saved to a checkpoint"
flags=$flags_save
for layout in "v1 2 $P 2" "tp2 2 $T 2" "pp4 4 $P 4" "pp2v2tp2 4 $P 2 $V 2 $T 2"; do
    # shellcheck disable=SC2086
    set -- $layout
    name=$1 np=$2
    shift 2
    par_train "resume_$name" "$np" "$@" --load "$TMPD/ck"
    is "$rc" 0 "the PP 2 x V 2 checkpoint resumes under $name"
    like "$out" 'resumed from the checkpoint of iteration 10' "... from iteration 10"
    # shellcheck disable=SC2046
    set -- $(after_ref "resume_$name")
    if [ "$2" -eq 10 ] && par_within "$1" 1e-5; then
        tap_result 0 "... iterations 11-20 on the one-rank curve within 1e-5 (max $1)"
    else
        tap_result 1 "... iterations 11-20 on the one-rank curve within 1e-5 ($*)"
    fi
done

# ---- refusals, each exit 2 naming the flag
# shellcheck disable=SC2086
run "$GPT3D" train $flags "$V" 2
is "$rc" 2 "V 2 without pipeline parallelism: exit 2"
like "$out" 'virtual-pipeline-model-parallel-size 2.*needs --pipeline-model-parallel-size above 1' "... saying PP must be above 1"
# shellcheck disable=SC2086
run g3_mpirun -np 2 "$GPT3D" train $flags "$P" 2 "$V" 4
is "$rc" 2 "4 layers over PP 2 x V 4: exit 2"
like "$out" 'num-layers 4 is not divisible by --pipeline-model-parallel-size 2 x --virtual-pipeline-model-parallel-size 4' "... naming both flags"
# shellcheck disable=SC2086
run "$GPT3D" train $flags "$P" 2 "$V" 2 --num-layers-per-virtual-pipeline-stage 2
is "$rc" 2 "V 2 and N 2 (which give V 1 with 4 layers over PP 2): exit 2"
like "$out" 'num-layers-per-virtual-pipeline-stage 2 gives 1 model chunks.*give only one of them' "... naming the conflict"
# shellcheck disable=SC2086
run "$GPT3D" train $flags "$P" 2 --num-layers-per-virtual-pipeline-stage 3
is "$rc" 2 "N 3 with 4 layers over PP 2: exit 2"
like "$out" 'num-layers-per-virtual-pipeline-stage 3: --num-layers 4 is not a multiple' "... naming the flag"
# shellcheck disable=SC2086
run g3_mpirun -np 2 "$GPT3D" train $flags "$P" 2 "$V" 2 --global-batch-size 6
is "$rc" 2 "3 micro-batches with PP 2 x V 2: exit 2"
like "$out" 'micro-batches per data-parallel rank \(3 = .*multiple of --pipeline-model-parallel-size 2' "... naming the batch flags"

done_testing

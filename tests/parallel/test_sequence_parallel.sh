#!/bin/sh
# Sequence parallelism (--sequence-parallel) trains the one-rank model: TP 2 alone, with
# PP 2, with DP 2 and ZeRO-1 (with and without the overlapped reduction), with recomputation
# and with the interleaved pipeline follow the one-rank loss curve, gradients and Adam
# state within the tolerances of test_parallel_equiv.sh (the LayerNorm gradients, summed
# over TP, bitwise equal on both TP ranks); the activation memory per rank drops; the greedy
# sample through TP 2 x PP 2 is the one-rank sample (prompt lengths TP does not divide);
# without TP > 1 it exits 2 naming the flag.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/parallel/par_lib.sh
. "$top_srcdir/tests/parallel/par_lib.sh"
set -eu

g3_need_mpirun
par_setup

par_flags 4 --global-batch-size 16 --train-iters 20 --eval-iters 2
S=--sequence-parallel

# acts OUT: the MiB of activations stage 0 holds, from the memory lines
acts() {
    printf '%s\n' "$1" | sed -n 's/.*stage 0: .* \([0-9.]*\) MiB activations for.*/\1/p' | head -n 1
}
# sample OUT: the greedy sample's text
sample() {
    printf '%s\n' "$1" | sed -n '/sample (greedy/,$p' | sed -n '2p'
}

par_train ref 0 --sample-tokens 7 --prompt "And God"
is "$rc" 0 "the one-rank reference run exits 0"
ref_sample=$(sample "$out")

par_train tp2 2 "$T" 2
is "$rc" 0 "TP 2 without sequence parallelism: exit 0"
acts_tp=$(acts "$out")

par_train tp2sp 2 "$T" 2 "$S"
is "$rc" 0 "TP 2 with --sequence-parallel: exit 0"
par_compare tp2sp ref
acts_sp=$(acts "$out")
if [ -n "$acts_sp" ] && [ -n "$acts_tp" ] && par_within "$acts_sp" "$acts_tp" &&
   [ "$acts_sp" != "$acts_tp" ]; then
    tap_result 0 "the memory line shows less activation memory per rank: $acts_sp MiB with SP, $acts_tp MiB without"
else
    tap_result 1 "the memory line shows less activation memory per rank: '$acts_sp' MiB with SP, '$acts_tp' MiB without"
fi

par_train tp2pp2sp 4 "$T" 2 "$P" 2 "$S" --sample-tokens 7 --prompt "And God"
is "$rc" 0 "TP 2 x PP 2 with --sequence-parallel: exit 0"
par_compare tp2pp2sp ref
is "$(sample "$out")" "$ref_sample" "the greedy sample through TP 2 x PP 2 with SP is the one-rank sample"

par_train tp2dp2sp 4 "$T" 2 "$S" --use-distributed-optimizer
is "$rc" 0 "TP 2 x DP 2, ZeRO-1, with --sequence-parallel: exit 0"
par_compare tp2dp2sp ref

par_train tp2dp2spov 4 "$T" 2 "$S" --use-distributed-optimizer --overlap-grad-reduce \
    --overlap-param-gather --ddp-bucket-size 3000
is "$rc" 0 "... with the overlapped reduction in buckets: exit 0"
par_compare tp2dp2spov ref

par_train tp2sprc 2 "$T" 2 "$S" --recompute-activations
is "$rc" 0 "TP 2 with --sequence-parallel and recomputed activations: exit 0"
par_compare tp2sprc ref

par_train tp2pp2v2sp 4 "$T" 2 "$P" 2 --virtual-pipeline-model-parallel-size 2 "$S"
is "$rc" 0 "TP 2 x PP 2 x V 2 with --sequence-parallel: exit 0"
par_compare tp2pp2v2sp ref

# a one-token prompt: fewer tokens than TP ranks, the second rank's shard is padding only
flags_save=$flags
flags=$(printf '%s\n' "$flags" | sed 's/--train-iters 20/--train-iters 3/')
par_train ref1 0 --sample-tokens 4 --prompt "A"
ref1_sample=$(sample "$out")
if [ "$rc" -eq 0 ] && [ -n "$ref1_sample" ]; then
    tap_result 0 "one rank, a one-token prompt: a sample"
else
    tap_result 1 "one rank, a one-token prompt: a sample (exit $rc)"
fi
par_train tp2sp1 2 "$T" 2 "$S" --sample-tokens 4 --prompt "A"
is "$rc" 0 "TP 2 with SP, a one-token prompt: exit 0"
is "$(sample "$out")" "$ref1_sample" "... the greedy sample is the one-rank sample"
flags=$flags_save

# shellcheck disable=SC2086
run "$GPT3D" train $flags "$S"
is "$rc" 2 "--sequence-parallel without tensor parallelism: exit 2"
like "$out" 'sequence-parallel .*needs --tensor-model-parallel-size above 1' "... naming the flag and the fix"

done_testing

#!/bin/sh
# Layouts that cannot divide the model or the batch get ONE clear error, from rank 0, before
# any work, and every rank exits with the same code: the world not a multiple of TP x PP,
# layers by PP (even and uneven splits), heads, hidden and MLP sizes by TP, the global batch
# and the ramp-up by micro-batch x DP.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

g3_need_mpirun
g3_tmpdir
D="$TMPD/data"
g3_byte_corpus "$D" short 100
data=$g3_data
model="--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 16"
export OMP_NUM_THREADS=1

# expect NP CODE REGEX WHAT FLAGS...: NP ranks under mpirun
expect() {
    np=$1 code=$2 re=$3 what=$4
    shift 4
    run g3_mpirun -x OMP_NUM_THREADS -np "$np" "$GPT3D" train --run-dir "$TMPD/run" "$@"
    is "$rc" "$code" "$what: exit $code"
    like "$out" "\\[rank 0/$np\\] error: $re" "$what: rank 0 says what to fix"
    is "$(printf '%s\n' "$out" | grep -c 'error:')" 1 "$what: exactly one error in the job"
}
T=--tensor-model-parallel-size
P=--pipeline-model-parallel-size

# shellcheck disable=SC2086
{
expect 3 2 "impossible layout: the job's 3 ranks cannot be split into $T 2 x $P 1 = 2 ranks per model replica" \
    "3 ranks with TP 2" $data $model --train-iters 2 $T 2
expect 4 2 "impossible layout: the job's 4 ranks cannot be split into $T 1 x $P 8 = 8" \
    "4 ranks with PP 8" $data $model --train-iters 2 $P 8
expect 2 2 "--num-layers 3 is not divisible by $P 2" "layers by PP" \
    $data --num-layers 3 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --train-iters 2 $P 2
expect 4 2 "--num-layers 2 is not divisible by $P 4: every stage gets the same" "fewer layers than stages" \
    $data --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --train-iters 2 $P 4
expect 3 2 "--num-layers 4 cannot be split over 3 pipeline stages with --decoder-first-pipeline-num-layers 3" \
    "an uneven split that leaves a stage empty" $data $model --train-iters 2 $P 3 --decoder-first-pipeline-num-layers 3
expect 2 2 "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers split the layers between pipeline stages" \
    "an uneven split without pipeline" $data $model --train-iters 2 --decoder-last-pipeline-num-layers 2
expect 2 2 "--num-attention-heads 3 is not divisible by $T 2" "heads by TP" \
    $data --num-layers 2 --hidden-size 48 --num-attention-heads 3 --seq-length 16 --train-iters 2 $T 2
expect 2 2 "--ffn-hidden-size 129 is not divisible by $T 2" "MLP by TP" \
    $data $model --ffn-hidden-size 129 --train-iters 2 $T 2
expect 4 2 "--global-batch-size 6 is not divisible by --micro-batch-size 2 x data-parallel size 4 = 8" \
    "global batch by micro x DP" $data $model --micro-batch-size 2 --global-batch-size 6 --train-iters 2
expect 2 2 "--rampup-batch-size 2 2 32: the start and the increment must be multiples of --micro-batch-size x data-parallel size = 4" "a ramp-up step not a multiple of micro x DP" \
    $data $model --micro-batch-size 2 --global-batch-size 16 --train-samples 64 --rampup-batch-size 2 2 32
}
if [ ! -e "$TMPD/run/metrics.jsonl" ]; then
    tap_result 0 "nothing was written for the refused runs"
else
    tap_result 1 "nothing was written for the refused runs"
fi
done_testing

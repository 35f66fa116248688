#!/bin/sh
# The pipeline bubble, measured: PP 4 with 8 micro-batches, 1F1B (V 1) and interleaved
# (V 2).  Prints the idle fraction of stage 0 measured inside the engine (time in the
# schedule not spent computing: waiting for and passing activations and gradients) next to
# (PP - 1) / (m + PP - 1) and (PP - 1) / (V m + PP - 1).  The timings depend on the load of
# the machine, so the assertions are structural: the formulas' values, a measured fraction
# in [0, 1), and stage 0's compute order under V 2 is Megatron's interleaved order
# (2 (PP - 1) + (V - 1) PP = 10 warm-up forwards, chunk 0 then chunk 1 by groups of PP
# micro-batches, backwards in reverse chunk order).
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/parallel/par_lib.sh
. "$top_srcdir/tests/parallel/par_lib.sh"
set -eu

g3_need_mpirun
par_setup

flags="--data-path $D/verses --vocab-file $D/vocab.json --merge-file $D/merges.txt --split 90,5,5
 --num-layers 8 --hidden-size 32 --num-attention-heads 4 --seq-length 32
 --make-vocab-size-divisible-by 6 --micro-batch-size 2 --global-batch-size 16 --train-iters 3
 --lr 3e-3 --log-interval 1 --eval-iters 0 --distributed-timeout-minutes 2
 --pipeline-model-parallel-size 4 --run-dir $TMPD/run"

# idle OUT: the measured fraction in the trainer's line
idle() {
    printf '%s\n' "$1" | sed -n 's/.*pipeline idle fraction of stage 0: measured \([0-9.]*\);.*/\1/p'
}

# bubble V FRACTION M: the results of a run with V virtual stages ($out, $rc): exit 0, the
# trainer's formula line (interleaved FRACTION = 3 / M), a measured idle fraction in [0, 1);
# sets measured to the measured fraction
bubble() {
    is "$rc" 0 "PP 4, V $1: exit 0"
    _re=$(printf '%s' "$2" | sed 's/\./\\./')
    like "$out" "1F1B \\(p - 1\\) / \\(m \\+ p - 1\\) = 0\\.2727; interleaved \\(p - 1\\) / \\(V m \\+ p - 1\\) = $_re \\(V = $1\\)" \
        "V $1: 3 / $3 = $2 by the formula"
    measured=$(idle "$out")
    if par_within "${measured:-1}" 0.9999; then
        tap_result 0 "V $1: a measured idle fraction in [0, 1): $measured"
    else
        tap_result 1 "V $1: a measured idle fraction in [0, 1): '$measured'"
    fi
}

# shellcheck disable=SC2086
run g3_mpirun -np 4 "$GPT3D" train $flags
bubble 1 0.2727 11
v1=$measured

# shellcheck disable=SC2086
GPT3D_LOG_LEVEL=debug run g3_mpirun -x GPT3D_LOG_LEVEL -np 4 "$GPT3D" train $flags \
    --virtual-pipeline-model-parallel-size 2
bubble 2 0.1579 19
v2=$measured
diag "stage 0 idle: V 1 measured $v1 (formula 0.2727), V 2 measured $v2 (formula 0.1579)"

# Megatron's order for stage 0 of PP 4, V 2, m 8, written out independently
want=$(awk 'BEGIN {
    pp = 4; V = 2; m = 8; total = V * m; w = 2 * (pp - 1) + (V - 1) * pp
    for (i = 0; i < w; i++) s = s " " op("F", i)
    for (i = 0; i < total - w; i++) s = s " " op("F", w + i) " " op("B", i)
    for (i = total - w; i < total; i++) s = s " " op("B", i)
    print substr(s, 2)
}
function op(kind, j,   c, k) {
    c = int((j % (pp * V)) / pp); if (kind == "B") c = V - 1 - c
    k = int(j / (pp * V)) * pp + j % pp
    return kind c "." k
}')
got=$(printf '%s\n' "$out" | sed -n 's/.*pipeline schedule of stage 0: \([FB0-9. ]*\).*/\1/p' |
      head -n 1 | sed 's/ *$//')
is "$got" "$want" "V 2: stage 0 runs Megatron's interleaved order (10 warm-up forwards, then 1F1B over (chunk, micro-batch))"

done_testing

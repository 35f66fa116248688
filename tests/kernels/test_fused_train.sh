#!/bin/sh
# The optional fused ops (backend.h) through gpt3d train, on the CPU: GPT3D_FUSED_OPS=1 makes
# the CPU backend fill them with its plain ops' code, so every run must log the same losses
# and gradient norms, bit for bit, as without it.  This covers the optimizers' device-side
# norm and clipping path (sumsq_acc, clip_scale, adamw_scaled) on one rank
# (src/train/optim.c) and under 3D parallelism (src/parallel/optim.c: the norm's terms per
# rank, its world sum, ZeRO-1 shards), with clipping active (--clip-grad 0.05), and the
# model's fused residual + LayerNorm and GELU GEMMs under tensor and pipeline parallelism.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

g3_tmpdir
D="$TMPD/data"
g3_byte_corpus "$D" mixed3 200

flags="--data-path $D/verses --vocab-file $D/vocab.json --merge-file $D/merges.txt --split 90,5,5
 --num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 32
 --make-vocab-size-divisible-by 6 --micro-batch-size 2 --global-batch-size 8 --train-iters 6
 --lr 3e-3 --lr-warmup-iters 2 --clip-grad 0.05 --log-interval 1 --eval-iters 1
 --eval-interval 100 --distributed-timeout-minutes 2"
export OMP_NUM_THREADS=1

# train NAME NP FUSED [FLAGS...]: one run (mpirun unless NP is 0) writing $TMPD/NAME.jsonl
train() {
    tn=$1 tnp=$2 fused=$3
    shift 3
    # shellcheck disable=SC2086
    if [ "$tnp" = 0 ]; then
        run env GPT3D_FUSED_OPS="$fused" "$GPT3D" train $flags \
            --metrics-file "$TMPD/$tn.jsonl" "$@"
    else
        run g3_mpirun -x OMP_NUM_THREADS -x GPT3D_FUSED_OPS="$fused" -np "$tnp" "$GPT3D" train \
            $flags --metrics-file "$TMPD/$tn.jsonl" "$@"
    fi
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | grep -v '^ *$' | tail -15 | sed 's/^/#   /'
}

# curve FILE: the loss and grad_norm of every training record, one line each, as written
curve() {
    grep '"event":"train"' "$1" | sed 's/.*\("loss":[^,}]*\).*\("grad_norm":[^,}]*\).*/\1 \2/'
}

# pair NAME NP [FLAGS...]: the plain and the fused run must log identical curves
pair() {
    name=$1 np=$2
    shift 2
    train "$name-plain" "$np" 0 "$@"
    is "$rc" 0 "$name: the plain run exits 0"
    train "$name-fused" "$np" 1 "$@"
    is "$rc" 0 "$name: the run with GPT3D_FUSED_OPS=1 exits 0"
    a=$(curve "$TMPD/$name-plain.jsonl")
    b=$(curve "$TMPD/$name-fused.jsonl")
    n=$(printf '%s\n' "$a" | grep -c '"loss"' || true)
    is "$n" 6 "$name: 6 training records"
    clipped=$(printf '%s\n' "$a" | awk '{ split($2, g, ":"); if (g[2] + 0 > 0.05) c++ } END { print c + 0 }')
    is "$([ "$clipped" -gt 0 ] && echo yes || echo no)" yes "$name: the norm exceeds --clip-grad (clipping active)"
    is "$b" "$a" "$name: the same losses and gradient norms, bit for bit"
}

T=--tensor-model-parallel-size
P=--pipeline-model-parallel-size

pair one 0
if g3_have_mpirun; then
    pair tp2pp2 4 "$T" 2 "$P" 2
    pair zero_tp2dp2 4 "$T" 2 --use-distributed-optimizer
else
    skip "mpirun not found: the 3D-parallel pairs"
fi
done_testing

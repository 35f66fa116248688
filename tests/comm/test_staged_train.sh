#!/bin/sh
# The staged backend (--distributed-backend ucx) inside the parallel engine, on the CPU.
# GPT3D_STAGED_HOST=1 gives the CPU backend staged groups for its buffers (every TP sum,
# pipeline send/receive, DP all-reduce, ZeRO-1 reduce-scatter/all-gather, the embedding sum
# and the non-blocking collectives of --overlap-grad-reduce / --overlap-param-gather copy
# through host staging buffers with the backend's download/upload, then run the host
# collective).  The staged collectives run the host algorithms on the same bytes, so each
# layout's 4 losses, step-1 gradients and final parameters must be bitwise those of the same
# run on the host groups.  Also: the flag's refusals on the CPU.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
# shellcheck source=tests/parallel/par_lib.sh
. "$top_srcdir/tests/parallel/par_lib.sh"
set -e

g3_need_mpirun
g3_tmpdir
check="$top_builddir/tests/parallel/grad_check"
D="$TMPD/data"
par_corpus "$D"
flags="--data-path $D/verses --vocab-file $D/vocab.json --merge-file $D/merges.txt --split 90,5,5
 --num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 32
 --make-vocab-size-divisible-by 6 --micro-batch-size 2 --train-iters 4
 --lr 3e-3 --lr-warmup-iters 2 --lr-decay-style cosine --min-lr 3e-4 --log-interval 1
 --eval-iters 1 --eval-interval 100 --distributed-timeout-minutes 2"
export OMP_NUM_THREADS=1
P=--pipeline-model-parallel-size
T=--tensor-model-parallel-size
Z=--use-distributed-optimizer
OV="--overlap-grad-reduce --ddp-bucket-size 3000"

# train NAME NP FLAGS...: par_train, then its training losses (NAME.losses)
train() {
    _n=$1
    par_train "$@"
    grep '"event":"train"' "$TMPD/$_n.jsonl" | grep -o '"loss":[^,}]*' > "$TMPD/$_n.losses" || :
}

for layout in "tp2 2 4 $T 2" "pp2 2 4 $P 2" "dp2_zero_overlap 2 8 $Z $OV --overlap-param-gather" \
              "tp2dp2_bf16 4 8 $T 2 --grad-reduce-in-bf16 $OV" \
              "tp2pp2dp2_zero 8 8 $T 2 $P 2 $Z $OV"; do
    # shellcheck disable=SC2086
    set -- $layout
    name=$1 np=$2 gbs=$3
    shift 3
    train "host_$name" "$np" --global-batch-size "$gbs" "$@"
    is "$rc" 0 "$name: host groups exit 0"
    GPT3D_STAGED_HOST=1 GPT3D_LOG_LEVEL=debug
    export GPT3D_STAGED_HOST GPT3D_LOG_LEVEL
    train "staged_$name" "$np" --global-batch-size "$gbs" "$@"
    unset GPT3D_STAGED_HOST GPT3D_LOG_LEVEL
    is "$rc" 0 "$name: staged groups exit 0"
    like "$out" "group tp \(staged\) \(host, context" "$name: the buffers' groups are staged"
    if cmp -s "$TMPD/host_$name.losses" "$TMPD/staged_$name.losses" && \
       [ "$(wc -l < "$TMPD/host_$name.losses")" -eq 4 ]; then
        tap_result 0 "$name: the 4 losses bitwise equal, staged vs host"
    else
        tap_result 1 "$name: the 4 losses bitwise equal, staged vs host"
        diff "$TMPD/host_$name.losses" "$TMPD/staged_$name.losses" | head -4 | sed 's/^/#   /'
    fi
    for w in grads params; do
        gout=$("$check" --what $w --tol 0 "$TMPD/host_$name" "$TMPD/staged_$name" 2>&1) && grc=0 || grc=$?
        is "$grc" 0 "$name: $w bitwise equal, staged vs host ($(printf '%s\n' "$gout" | tail -n 1))"
        [ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -6 | sed 's/^/#   /'
    done
done

# refusals on the CPU, before any work
# shellcheck disable=SC2086
run "$GPT3D" train $flags --distributed-backend nccl
is "$rc" 2 "--distributed-backend nccl with --device cpu: usage error"
like "$out" "distributed-backend nccl moves GPU tensors, and --device cpu keeps them in host memory" \
    "... saying why and what to do"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --distributed-backend gloo
is "$rc" 2 "--distributed-backend gloo: usage error"
like "$out" "--distributed-backend: .gloo. is not one of nccl[|]ucx" "... naming the choices"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --distributed-backend ucx --metrics-file "$TMPD/u.jsonl"
is "$rc" 0 "--distributed-backend ucx with --device cpu: accepted (host memory moves over UCX)"

done_testing

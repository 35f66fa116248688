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
# shellcheck source=tests/parallel/par_lib.sh
. "$top_srcdir/tests/parallel/par_lib.sh"
set -e

g3_need_mpirun
par_setup
par_flags 4 --train-iters 4 --eval-iters 1
OV="--overlap-grad-reduce --ddp-bucket-size 3000"

for layout in "tp2 2 4 $T 2" "pp2 2 4 $P 2" "dp2_zero_overlap 2 8 $Z $OV --overlap-param-gather" \
              "tp2dp2_bf16 4 8 $T 2 --grad-reduce-in-bf16 $OV" \
              "tp2pp2dp2_zero 8 8 $T 2 $P 2 $Z $OV"; do
    # shellcheck disable=SC2086
    set -- $layout
    name=$1 np=$2 gbs=$3
    shift 3
    par_train_losses "host_$name" "$np" --global-batch-size "$gbs" "$@"
    is "$rc" 0 "$name: host groups exit 0"
    GPT3D_STAGED_HOST=1 GPT3D_LOG_LEVEL=debug
    export GPT3D_STAGED_HOST GPT3D_LOG_LEVEL
    par_train_losses "staged_$name" "$np" --global-batch-size "$gbs" "$@"
    unset GPT3D_STAGED_HOST GPT3D_LOG_LEVEL
    is "$rc" 0 "$name: staged groups exit 0"
    # the staged groups' host buffers come from the backend: the trainer must free the groups
    # before it closes the backend (on CUDA the late free crashed every multi-rank run at exit)
    is "$(printf '%s\n' "$out" | grep -c 'bug: the CPU backend is closed while' || true)" 0 \
        "$name: the staged groups are freed before the backend is closed"
    like "$out" "group tp \(staged\) \(host, context" "$name: the buffers' groups are staged"
    par_same "host_$name" "staged_$name" "$name" 4 ", staged vs host"
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

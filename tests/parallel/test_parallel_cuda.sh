#!/bin/sh
# 3D parallelism on GPUs: gpt3d train --device cuda under mpirun, one rank per GPU, the
# tensor-, pipeline- and data-parallel groups over NCCL on device buffers (bf16 activations
# and activation gradients, fp32 gradients and master weights; docs/parallelism.md, "On
# GPUs").
#
# Everywhere: two ranks with --device cuda on a machine that cannot run them give one error
# and the right exit code (a build without CUDA: 2; without NCCL: 2; no usable GPU: 1).
# With >= 2 GPUs (nvidia-smi) and a +cuda +nccl build, a 4-layer GPT (hidden 128, 4 heads of
# 32, sequence 64, a byte-level vocabulary padded to 272 under TP 1 and 2) trains 20
# iterations on the CPU (the reference), on one GPU, and as TP 2, PP 2, DP 2, DP 2 with
# ZeRO-1, DP 2 with --grad-reduce-in-bf16, DP 2 with buckets with and without
# --overlap-grad-reduce, ZeRO-1 DP 2 with --overlap-param-gather (2 GPUs), TP 2 x PP 2 x
# DP 2 with and without ZeRO-1 (8 GPUs).  Each layout:
#   * loss of every iteration within 0.05 nats of the one-GPU run and 0.1 of the CPU run
#     (bf16 activations: TP sums partial products rounded to bf16 and sums them in bf16;
#     the one-GPU run rounds the whole product once; test_cuda_train.sh allows the CPU 0.1);
#   * gradients of step 1 (assembled from every rank's dump) within 5e-2 of max|grad| per
#     tensor of the one-GPU run, every element present, replicated copies bitwise equal
#     (NCCL gives every member the same sum; the kernels are deterministic);
#   * parameters after 20 steps: replicated copies bitwise equal, within 0.1 of one GPU.
# These tolerances are estimates written without a GPU (docs/cuda.md, Status).
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
# 136: 261 -> 272 rows under TP 1 (a multiple of 136) and TP 2 (of 272), 136 per TP rank,
# a multiple of 8 as the CUDA backend needs
flags="--data-path $D/verses --vocab-file $D/vocab.json --merge-file $D/merges.txt --split 90,5,5
 --num-layers 4 --hidden-size 128 --num-attention-heads 4 --seq-length 64
 --make-vocab-size-divisible-by 136 --micro-batch-size 2 --global-batch-size 16
 --train-iters 20 --lr 3e-3 --lr-warmup-iters 2 --lr-decay-style cosine --min-lr 3e-4
 --log-interval 1 --eval-iters 1 --eval-interval 100 --distributed-timeout-minutes 3"
export OMP_NUM_THREADS=1
T=--tensor-model-parallel-size
P=--pipeline-model-parallel-size

features=$("$GPT3D" --version | sed -n 's/^features: //p')
ngpu=0
if command -v nvidia-smi >/dev/null 2>&1; then
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi

# ---- two ranks where they cannot run ----------------------------------------------------------
case "$features" in
*-cuda*) want=2 why="built without CUDA; reconfigure with --with-cuda" ;;
*-nccl*) want=2 why="needs NCCL .*reconfigure with --with-nccl" ;;
*) want=1 why="no usable CUDA device: .+--device cpu" ;;
esac
if [ "$want" -eq 1 ] && [ "$ngpu" -gt 0 ]; then
    skip "a GPU is present: the refusal of two ranks without one is not reachable here"
    skip "a GPU is present: the refusal of two ranks without one is not reachable here"
    skip "a GPU is present: the refusal of two ranks without one is not reachable here"
else
    # shellcheck disable=SC2086
    run g3_mpirun -np 2 "$GPT3D" train $flags --run-dir "$TMPD/refuse" --device cuda
    is "$rc" "$want" "two ranks with --device cuda here exit $want ($features)"
    like "$out" "$why" "... saying why and what to do"
    is "$(printf '%s\n' "$out" | grep -c 'error:')" 1 "... in exactly one error for the job"
fi

ntests=55   # 3 + 8 layouts x 5 + 2 overlap comparisons + 2 layouts x 5
case "$features" in *+cuda*+nccl*) ;; *) ngpu=0 ;; esac
if [ "$ngpu" -lt 2 ]; then
    i=0
    while [ $i -lt $ntests ]; do
        skip "needs 2 GPUs and a +cuda +nccl build (nvidia-smi lists $ngpu; features: $features)"
        i=$((i + 1))
    done
    done_testing
    exit
fi

par_train cpu 0 --device cpu
is "$rc" 0 "the CPU reference run exits 0"
par_train gpu1 0 --device cuda
is "$rc" 0 "the one-GPU run exits 0"
# shellcheck disable=SC2046
set -- $(par_maxdiff "$TMPD/cpu.jsonl" "$TMPD/gpu1.jsonl" loss train abs)
if [ "$#" -eq 2 ] && [ "$2" -eq 20 ] && par_within "$1" 0.1; then
    tap_result 0 "one GPU: loss curve within 0.1 nats of the CPU (max $1)"
else
    tap_result 1 "one GPU: loss curve within 0.1 nats of the CPU ($*)"
fi

# compare NAME: the layout against the one-GPU run and the CPU run
compare() {
    # shellcheck disable=SC2046
    set -- $(par_maxdiff "$TMPD/gpu1.jsonl" "$TMPD/$1.jsonl" loss train abs) "$1"
    if [ "$#" -eq 3 ] && [ "$2" -eq 20 ] && par_within "$1" 0.05; then
        tap_result 0 "$3: loss curve within 0.05 nats of one GPU (max $1)"
    else
        tap_result 1 "$3: loss curve within 0.05 nats of one GPU ($*)"
    fi
    _n=$3
    # shellcheck disable=SC2046
    set -- $(par_maxdiff "$TMPD/cpu.jsonl" "$TMPD/$_n.jsonl" loss train abs)
    if [ "$#" -eq 2 ] && [ "$2" -eq 20 ] && par_within "$1" 0.1; then
        tap_result 0 "$_n: loss curve within 0.1 nats of the CPU (max $1)"
    else
        tap_result 1 "$_n: loss curve within 0.1 nats of the CPU ($*)"
    fi
    gout=$("$check" --tol 5e-2 "$TMPD/gpu1" "$TMPD/$_n" 2>&1) && grc=0 || grc=$?
    is "$grc" 0 "$_n: gradients of step 1 within 5e-2 of one GPU, every element, copies bitwise equal ($(printf '%s\n' "$gout" | tail -n 1))"
    [ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -8 | sed 's/^/#   /'
    gout=$("$check" --what params --tol 0.1 "$TMPD/gpu1" "$TMPD/$_n" 2>&1) && grc=0 || grc=$?
    is "$grc" 0 "$_n: parameters after 20 steps: replicated copies bitwise equal, within 0.1 of one GPU"
    [ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -8 | sed 's/^/#   /'
}

# 2 GPUs: 5 layouts x 5 checks
# (and the bucketed reduction without overlap, with --overlap-grad-reduce, and ZeRO-1 with
# --overlap-param-gather: the NCCL collectives on the dp stream behind an event of the compute
# stream; overlap on and off bitwise equal)
OV="--ddp-bucket-size 50000"
for layout in "tp2 2 $T 2" "pp2 2 $P 2" "dp2 2" "zero_dp2 2 --use-distributed-optimizer" \
              "bf16_dp2 2 --grad-reduce-in-bf16" "bkt_dp2 2 $OV" "ovl_dp2 2 $OV --overlap-grad-reduce" \
              "ovl_zero_dp2 2 $OV --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"; do
    # shellcheck disable=SC2086
    set -- $layout
    name=$1 np=$2
    shift 2
    par_train "$name" "$np" --device cuda "$@"
    is "$rc" 0 "$name: $np ranks on $np GPUs exit 0"
    compare "$name"
done
for w in grads params; do
    gout=$("$check" --what $w --tol 0 "$TMPD/bkt_dp2" "$TMPD/ovl_dp2" 2>&1) && grc=0 || grc=$?
    is "$grc" 0 "ovl_dp2: $w bitwise those of the same buckets without overlap ($(printf '%s\n' "$gout" | tail -n 1))"
done

# 8 GPUs: TP 2 x PP 2 x DP 2, with and without ZeRO-1 (2 layouts x 5 checks)
if [ "$ngpu" -lt 8 ]; then
    i=0
    while [ $i -lt 10 ]; do
        skip "TP 2 x PP 2 x DP 2 needs 8 GPUs (nvidia-smi lists $ngpu)"
        i=$((i + 1))
    done
else
    for name in tp2pp2dp2 zero_tp2pp2dp2; do
        zero=
        [ "$name" = tp2pp2dp2 ] || zero=--use-distributed-optimizer
        # shellcheck disable=SC2086
        par_train "$name" 8 --device cuda "$T" 2 "$P" 2 $zero
        is "$rc" 0 "$name: 8 ranks on 8 GPUs exit 0"
        compare "$name"
    done
fi

done_testing

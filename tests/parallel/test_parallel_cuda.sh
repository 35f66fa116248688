#!/bin/sh
# 3D parallelism on GPUs: gpt3d train --device cuda under mpirun, the tensor-, pipeline- and
# data-parallel groups on device buffers (bf16 activations and activation gradients, fp32
# gradients and master weights; docs/parallelism.md, "On GPUs"), moved either by NCCL (one
# rank per GPU) or, with --distributed-backend ucx, through page-locked host buffers and the
# UCX host collectives (several ranks on one GPU; docs/comm.md, "Staged collectives").
#
# Everywhere: two ranks with --device cuda on a machine that cannot run them give one error
# and the right exit code (a build without CUDA: 2; without NCCL: 2; no usable GPU: 1).
# Without a GPU (or a +cuda build) the rest skips, saying why.
#
# With one GPU or more (nvidia-smi) and a +cuda build, a 4-layer GPT (hidden 128, 4 heads of
# 32, sequence 64, a byte-level vocabulary padded to 272 under TP 1 and 2) trains 20
# iterations on the CPU (the reference) and on one GPU, then, ALL RANKS ON GPU 0 with
# --distributed-backend ucx: TP 2, PP 2, DP 2, DP 2 with ZeRO-1, DP 2 with
# --grad-reduce-in-bf16, DP 2 with buckets with and without --overlap-grad-reduce, ZeRO-1
# DP 2 with --overlap-param-gather (2 ranks), TP 2 x PP 2 x DP 2 with and without ZeRO-1
# (8 ranks), and the 8-rank run stopped at iteration 10 resumed as TP 1 x PP 1 (one rank).
# With a +nccl build, two ranks on one GPU under the default --distributed-backend nccl are
# refused before training, naming --distributed-backend ucx.  With >= 2 GPUs the 2-rank
# layouts run again over NCCL (one rank per GPU), with 8 GPUs the 8-rank ones.
#
# Tolerances (each layout against the one-GPU run; the reasoning, docs/comm.md):
#   * loss of every iteration within 0.05 nats of one GPU, and against the CPU: iterations
#     1-3 within 0.002 nats, 4-5 within 0.035.  Against the CPU only the warm-up is compared:
#     at lr 3e-3 this tiny model is at the edge of stability, and rounding decides how high a
#     loss spike goes.  tests/parallel/bf16_gap.py trains this test's run (its flags, corpus,
#     initial weights and samples, taken from gpt3d's CPU run, whose first five losses its
#     fp32 replica reproduces to 1e-6) in PyTorch with the CUDA backend's bf16 roundings emulated; over 8
#     seeds the gap was <= 0.0005 over iterations 1-3 (1 and 2 share the initial weights: lr
#     0 at iteration 1) and up to 0.023 at 4-5, where the first spike comes (this seed: CPU
#     4.65 -> 5.67 at iteration 5, gap 0.019-0.023; mostly the bf16 working copy of the
#     LayerNorm gains, as 1 + lr rounds to 1).  The H100 of 2026-11-26 measured 0.017-0.021
#     over iterations 1-5 in every layout.  Limits: 4 x and 1.5 x the emulated worst
#     (docs/cuda.md, "bf16 against the CPU").  The line lists the five differences.  What differs
#     from the one-GPU run: (a) TP sums two bf16 partial products in bf16 (one extra rounding,
#     <= 2^-9 relative, per element of the row-parallel outputs of each layer, forward and
#     backward), where one GPU rounds the whole product once; (b) DP, PP's tied embedding and
#     ZeRO-1 add fp32 gradients in another order (<= 2 x 2^-24 relative per element) and the
#     bf16 working copy of a weight near a rounding boundary may round the other way.  The
#     CPU-vs-one-GPU gap (fp32 vs bf16 activations: all of (a) on every op) was 0.0023 nats
#     over 50 iterations on an H100 (issue 17), so 0.05 bounds (a)+(b) with a margin of 20;
#   * gradients of step 1 (assembled from every rank's dump) within 5e-2 of max|grad| per
#     tensor of the one-GPU run (bf16 activation gradients: 2^-8 relative per element, summed
#     over B x T rows), every element present, replicated copies bitwise equal (every member
#     of a group gets the same sum: the host reduces each block on one rank and copies it);
#   * parameters after 20 steps: replicated copies bitwise equal, within 0.1 of one GPU, but
#     for the key third of each attention.qkv.bias: adding a constant to every score of a
#     softmax row changes nothing, so its gradient is rounding noise that AdamW turns into
#     steps of up to about lr (relative errors 0.24-0.87 on 2026-11-26, in every layout, DP 2
#     too); it is held to twice the sum of the learning rates, grad_check --key-bias-abs;
#   * overlap on vs off (the same buckets): gradients and parameters bitwise equal (the
#     non-blocking collectives reduce in rank order whenever they start).
# These tolerances still have to be confirmed on a GPU (docs/cuda.md, Status).
#
# Launcher: make check passes MPIRUN (configure's); run by hand on the GPU machine (e.g.
# `bash .gpu/on-device.sh sh ../src/tests/parallel/test_parallel_cuda.sh`, see
# ../shared/gpu/README.md) MPIRUN defaults to the mpirun on PATH (Ubuntu's /usr/bin/mpirun
# there).  The bundled gpt3d is a PMIx client: the launcher's PMIx server must speak to it
# (Open MPI 4 and 5 do); a 2-rank comm_check probe checks that first and skips the GPU cases,
# with its error, when it does not.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/parallel/par_lib.sh
. "$top_srcdir/tests/parallel/par_lib.sh"
set -e

MPIRUN=${MPIRUN:-$(command -v mpirun || true)}
g3_need_mpirun
par_setup
# 136: 261 -> 272 rows under TP 1 (a multiple of 136) and TP 2 (of 272), 136 per TP rank,
# a multiple of 8 as the CUDA backend needs
flags="--data-path $D/verses --vocab-file $D/vocab.json --merge-file $D/merges.txt --split 90,5,5
 --num-layers 4 --hidden-size 128 --num-attention-heads 4 --seq-length 64
 --make-vocab-size-divisible-by 136 --micro-batch-size 2 --global-batch-size 16
 --train-iters 20 --lr 3e-3 --lr-warmup-iters 2 --lr-decay-style cosine --min-lr 3e-4
 --log-interval 1 --eval-iters 1 --eval-interval 100 --distributed-timeout-minutes 3"
OV="--ddp-bucket-size 50000"
UCX="--distributed-backend ucx"

features=$("$GPT3D" --version | sed -n 's/^features: //p')
ngpu=0
if command -v nvidia-smi >/dev/null 2>&1; then
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi

# ---- two ranks where they cannot run ----------------------------------------------------------
case "$features" in
*-cuda*) want=2 why="built without CUDA; reconfigure with --with-cuda" ;;
*-nccl*) want=2 why="needs NCCL .*reconfigure with --with-nccl.*--distributed-backend ucx" ;;
*) want=1 why="no usable CUDA device: .+--device cpu" ;;
esac
if [ "$want" -eq 1 ] && [ "$ngpu" -gt 0 ]; then
    skip "a GPU is present: the refusal of two ranks without one is not reachable here"
else
    # shellcheck disable=SC2086
    run g3_mpirun -np 2 "$GPT3D" train $flags --run-dir "$TMPD/refuse" --device cuda
    is "$rc" "$want" "two ranks with --device cuda here exit $want ($features)"
    like "$out" "$why" "... saying why and what to do"
    is "$(printf '%s\n' "$out" | grep -c 'error:')" 1 "... in exactly one error for the job"
fi

case "$features" in *+cuda*) ;; *) ngpu=0 ;; esac
if [ "$ngpu" -lt 1 ]; then
    skip "the GPU layouts need a GPU and a +cuda build (nvidia-smi lists $ngpu; features: $features)"
    done_testing
    exit
fi
run g3_mpirun -np 2 "$top_builddir/tests/comm/comm_check" info
if [ "$rc" -ne 0 ]; then
    skip "$MPIRUN cannot start gpt3d's PMIx clients here (exit $rc: $(printf '%s\n' "$out" | grep -v '^ *$' | head -n 3 | tr '\n' ' ')); give MPIRUN a launcher whose PMIx server they can reach"
    done_testing
    exit
fi

par_train cpu 0 --device cpu
is "$rc" 0 "the CPU reference run exits 0"
par_train gpu1 0 --device cuda
is "$rc" 0 "the one-GPU run exits 0"
# first5 NAME: the first 5 training records of NAME's metrics, as $TMPD/NAME.first5.jsonl
first5() {
    awk '/"event":"train"/ && n++ < 5' "$TMPD/$1.jsonl" > "$TMPD/$1.first5.jsonl"
}
# against_cpu NAME: iterations 1-3 of NAME within 0.002 nats of the CPU's, 4-5 within 0.035
# (see the top); the line lists the five differences NAME - CPU
against_cpu() {
    _an=$1
    first5 "$_an"
    # "N MAX|D1..D3| MAX|D4,D5| D1 ... D5" from the two runs' first five losses
    _d=$(awk 'FNR == 1 { f++ }
        { i = index($0, "\"loss\":"); if (!i) next; v = substr($0, i + 7) + 0
          if (f == 1) ref[++n] = v; else { m++; d[m] = v - ref[m] } }
        END { for (k = 1; k <= m; k++) { a = d[k] < 0 ? -d[k] : d[k]; if (k <= 3 && a > w1) w1 = a; if (k > 3 && a > w2) w2 = a }
              printf "%d %.4f %.4f", (m == n ? m : -1), w1, w2
              for (k = 1; k <= m; k++) printf " %+.4f", d[k]; print "" }' \
        "$TMPD/cpu.first5.jsonl" "$TMPD/$_an.first5.jsonl")
    # shellcheck disable=SC2086
    set -- $_d
    _what="$_an: iterations 1-3 within 0.002 nats of the CPU, 4-5 within 0.035"
    if [ "$#" -eq 8 ] && [ "$1" -eq 5 ] && par_within "$2" 0.002 && par_within "$3" 0.035; then
        tap_result 0 "$_what ($_an - CPU: $4 $5 $6 $7 $8)"
    else
        tap_result 1 "$_what ($_d)"
    fi
}
first5 cpu
against_cpu gpu1

# The key third of each qkv bias: two runs may differ by up to the sum of the learning rates
# each (AdamW's steps on the rounding noise of a zero gradient, grad_check.c), so twice that
keyb=$(awk -F'"lr":' '/"event":"train"/ { split($2, a, /[,}]/); s += a[1] } END { printf "%.4g", 2 * s }' "$TMPD/gpu1.jsonl")

# compare NAME: the layout against the one-GPU run and the CPU run (4 checks)
compare() {
    # shellcheck disable=SC2046
    set -- $(par_maxdiff "$TMPD/gpu1.jsonl" "$TMPD/$1.jsonl" loss train abs) "$1"
    if [ "$#" -eq 3 ] && [ "$2" -eq 20 ] && par_within "$1" 0.05; then
        tap_result 0 "$3: loss curve within 0.05 nats of one GPU (max $1)"
    else
        tap_result 1 "$3: loss curve within 0.05 nats of one GPU ($*)"
    fi
    _n=$3
    against_cpu "$_n"
    gout=$("$check" --tol 5e-2 "$TMPD/gpu1" "$TMPD/$_n" 2>&1) && grc=0 || grc=$?
    is "$grc" 0 "$_n: gradients of step 1 within 5e-2 of one GPU, every element, copies bitwise equal ($(printf '%s\n' "$gout" | tail -n 1))"
    [ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -8 | sed 's/^/#   /'
    gout=$("$check" --what params --tol 0.1 --key-bias-abs "$keyb" "$TMPD/gpu1" "$TMPD/$_n" 2>&1) && grc=0 || grc=$?
    is "$grc" 0 "$_n: parameters after 20 steps: replicated copies bitwise equal, within 0.1 of one GPU (key biases within $keyb)"
    [ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -8 | sed 's/^/#   /'
}

# bitwise A B WHAT: step-1 gradients and final parameters of two runs bitwise equal
bitwise() {
    for w in grads params; do
        gout=$("$check" --what $w --tol 0 "$TMPD/$1" "$TMPD/$2" 2>&1) && grc=0 || grc=$?
        is "$grc" 0 "$3: $w bitwise equal ($(printf '%s\n' "$gout" | tail -n 1))"
    done
}

# layouts2 PREFIX WHERE [FLAGS...]: every two-rank layout of $LAYOUTS2 on CUDA with FLAGS, as
# run PREFIX_<layout>, exit 0 ("2 ranks WHERE") and against the CPU
layouts2() {
    _pre=$1 _where=$2
    shift 2
    _rest="$LAYOUTS2|"
    while [ -n "$_rest" ]; do
        _layout=${_rest%%|*} _rest=${_rest#*|}
        name=${_pre}_${_layout%%:*}
        # shellcheck disable=SC2086
        par_train "$name" 2 --device cuda "$@" ${_layout#*:}
        is "$rc" 0 "$name: 2 ranks $_where exit 0"
        compare "$name"
    done
}

LAYOUTS2="tp2:$T 2|pp2:$P 2|dp2:|zero_dp2:$Z|bf16_dp2:--grad-reduce-in-bf16|bkt_dp2:$OV|ovl_dp2:$OV --overlap-grad-reduce|ovl_zero_dp2:$OV $Z --overlap-grad-reduce --overlap-param-gather"

# ---- every rank on GPU 0 ---------------------------------------------------------------------
CUDA_VISIBLE_DEVICES=0
export CUDA_VISIBLE_DEVICES
case "$features" in
*+nccl*)
    # shellcheck disable=SC2086
    run g3_mpirun -np 2 "$GPT3D" train $flags --run-dir "$TMPD/share" --device cuda
    is "$rc" 2 "two ranks on one GPU with --distributed-backend nccl: refused (usage error)"
    like "$out" "share the GPU .*pass --distributed-backend ucx" "... naming --distributed-backend ucx"
    is "$(printf '%s\n' "$out" | grep -c 'error:')" 1 "... in exactly one error for the job"
    ;;
*) skip "a build without NCCL: no NCCL refusal to check" ;;
esac

# shellcheck disable=SC2086
layouts2 u "on one GPU (--distributed-backend ucx)" $UCX
bitwise u_bkt_dp2 u_ovl_dp2 "u_ovl_dp2 vs u_bkt_dp2 (overlap on vs off, ucx)"
for name in u_tp2pp2dp2 u_zero_tp2pp2dp2; do
    zero=
    [ "$name" = u_tp2pp2dp2 ] || zero=$Z
    # shellcheck disable=SC2086
    par_train "$name" 8 --device cuda $UCX "$T" 2 "$P" 2 $zero
    is "$rc" 0 "$name: 8 ranks on one GPU (--distributed-backend ucx) exit 0"
    compare "$name"
done

# interleaved 1F1B (TP 2 x PP 2 x V 2, 4 ranks) and sequence parallelism (TP 2 x PP 2 x DP 2,
# 8 ranks), every rank on GPU 0
# shellcheck disable=SC2086
par_train u_tp2pp2v2 4 --device cuda $UCX "$T" 2 "$P" 2 --virtual-pipeline-model-parallel-size 2
is "$rc" 0 "u_tp2pp2v2: interleaved 1F1B, 4 ranks on one GPU (--distributed-backend ucx) exit 0"
compare u_tp2pp2v2
# shellcheck disable=SC2086
par_train u_sp_tp2pp2dp2 8 --device cuda $UCX "$T" 2 "$P" 2 --sequence-parallel
is "$rc" 0 "u_sp_tp2pp2dp2: --sequence-parallel, 8 ranks on one GPU (--distributed-backend ucx) exit 0"
compare u_sp_tp2pp2dp2

# the TP 2 x PP 2 x DP 2 run stopped at iteration 10, resumed as one rank (TP 1 x PP 1)
# shellcheck disable=SC2086
par_train u_stop 8 --device cuda $UCX "$T" 2 "$P" 2 --save "$TMPD/ck" --exit-interval 10
is "$rc" 75 "TP 2 x PP 2 x DP 2 on one GPU: --exit-interval 10 saves and exits 75"
par_train u_resume 0 --device cuda --load "$TMPD/ck"
is "$rc" 0 "its checkpoint resumes as TP 1 x PP 1 on one GPU"
grep '"event":"train"' "$TMPD/u_tp2pp2dp2.jsonl" | tail -n 10 > "$TMPD/straight_tail.jsonl"
# shellcheck disable=SC2046
set -- $(par_maxdiff "$TMPD/straight_tail.jsonl" "$TMPD/u_resume.jsonl" loss train abs)
if [ "$#" -eq 2 ] && [ "$2" -eq 10 ] && par_within "$1" 0.05; then
    tap_result 0 "... iterations 11-20 within 0.05 nats of the uninterrupted 8-rank run (max $1)"
else
    tap_result 1 "... iterations 11-20 within 0.05 nats of the uninterrupted 8-rank run ($*)"
fi
unset CUDA_VISIBLE_DEVICES

# ---- NCCL, one rank per GPU ---------------------------------------------------------------------
case "$features" in *+nccl*) ;; *) ngpu=0 ;; esac
if [ "$ngpu" -lt 2 ]; then
    skip "the NCCL layouts need 2 GPUs and a +nccl build (nvidia-smi lists $ngpu; features: $features)"
    done_testing
    exit
fi
layouts2 n "on 2 GPUs (NCCL)"
bitwise n_bkt_dp2 n_ovl_dp2 "n_ovl_dp2 vs n_bkt_dp2 (overlap on vs off, NCCL)"
if [ "$ngpu" -lt 8 ]; then
    skip "TP 2 x PP 2 x DP 2 over NCCL needs 8 GPUs (nvidia-smi lists $ngpu)"
else
    for name in n_tp2pp2dp2 n_zero_tp2pp2dp2; do
        zero=
        [ "$name" = n_tp2pp2dp2 ] || zero=$Z
        # shellcheck disable=SC2086
        par_train "$name" 8 --device cuda "$T" 2 "$P" 2 $zero
        is "$rc" 0 "$name: 8 ranks on 8 GPUs exit 0"
        compare "$name"
    done
fi

done_testing

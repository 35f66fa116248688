#!/bin/sh
# --overlap-grad-reduce, --ddp-bucket-size and --overlap-param-gather (Megatron-LM's flags) on
# the CPU backend (host groups; the NCCL path of --device cuda is the same engine code with
# ncclAllReduce / ncclReduceScatter / ncclAllGather on the dp group's stream).
# The data-parallel reduction runs per bucket of layers, last layers first, on non-blocking
# collectives (g3_comm_i*, a fixed rank-order algorithm); with --overlap-grad-reduce each
# bucket starts inside the last micro-batch's backward, without it after the backward.  So
# for the same buckets the two must give the same bits.  For DP 2, DP 2 with ZeRO-1 (and
# --overlap-param-gather), PP 2 x DP 2 (the tied embedding a bucket of its own), TP 2 x DP 2
# with --grad-reduce-in-bf16, and DP 3 (a group that is not a power of two), each with two
# micro-batches per iteration (global batch = 2 x micro x DP):
#   * the losses of 6 iterations and the reduced gradients of step 1 (--debug-grad-dump) are
#     bitwise equal with and without overlap, and so are the parameters after 6 steps;
#   * the overlapped run really started the buckets during the backward (its debug log);
#   * the bucketed reduction stays within 1e-6 of today's unbucketed one (DP 3: another
#     summation order).
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/parallel/par_lib.sh
. "$top_srcdir/tests/parallel/par_lib.sh"
set -e

g3_need_mpirun
par_setup
par_flags 4 --train-iters 6 --eval-iters 1
B="--ddp-bucket-size 3000"

for layout in "dp2 2 8" "zero_dp2 2 8 $Z" "pp2dp2 4 8 $P 2" "tp2dp2_bf16 4 8 $T 2 --grad-reduce-in-bf16" \
              "pp2dp2_zero 4 8 $P 2 $Z" "dp3 3 12"; do
    # shellcheck disable=SC2086
    set -- $layout
    name=$1 np=$2 gbs=$3
    shift 3
    extra=
    case $name in *zero*) extra=--overlap-param-gather ;; esac
    # shellcheck disable=SC2086
    par_train_losses "off_$name" "$np" --global-batch-size "$gbs" $B "$@"
    is "$rc" 0 "$name: buckets without overlap exit 0"
    GPT3D_LOG_LEVEL=debug
    export GPT3D_LOG_LEVEL
    # shellcheck disable=SC2086
    par_train_losses "on_$name" "$np" --global-batch-size "$gbs" $B "$@" --overlap-grad-reduce $extra
    unset GPT3D_LOG_LEVEL
    is "$rc" 0 "$name: --overlap-grad-reduce $extra exits 0"
    like "$out" "reduction started during the backward, after layer" \
        "$name: buckets started during the last micro-batch's backward"
    if [ -n "$extra" ]; then
        like "$out" "parameter bucket [0-9]* of [0-9]*: all-gather waited for at its first use in the forward" \
            "$name: parameter all-gathers waited for in the next forward"
    fi
    par_same "off_$name" "on_$name" "$name: overlap on vs off" 6
    case $name in
    dp2|pp2dp2|dp3)
        par_train_losses "plain_$name" "$np" --global-batch-size "$gbs" "$@"
        gout=$("$check" --tol 1e-6 "$TMPD/plain_$name" "$TMPD/off_$name" 2>&1) && grc=0 || grc=$?
        is "$grc" 0 "$name: bucketed gradients within 1e-6 of the unbucketed reduction ($(printf '%s\n' "$gout" | tail -n 1))"
        ;;
    esac
done

# checkpoints: ZeRO-1 with overlapped all-gathers saves after iteration 3 (the all-gathers of
# step 3 still in flight when the save starts) and resumes bitwise; the same checkpoint
# resumes without buckets (other ZeRO-1 shards: the state is found by global index)
zb="--global-batch-size 8 $B $Z --overlap-grad-reduce --overlap-param-gather"
# shellcheck disable=SC2086
par_train_losses ck_stop 2 $zb --save "$TMPD/ck" --exit-interval 3
is "$rc" 75 "zero_dp2 + overlap: --exit-interval 3 saves and exits 75"
# shellcheck disable=SC2086
par_train_losses ck_resume 2 $zb --load "$TMPD/ck"
is "$rc" 0 "zero_dp2 + overlap: resumed from iteration 3"
cat "$TMPD/ck_stop.losses" "$TMPD/ck_resume.losses" > "$TMPD/ck_both.losses"
mkdir -p "$TMPD/ck_both"
cp "$TMPD/ck_resume/params-"* "$TMPD/ck_both/"
cp "$TMPD/on_zero_dp2/grads-"* "$TMPD/ck_both/"   # step 1 is not part of the resumed run
par_same on_zero_dp2 ck_both "zero_dp2 + overlap: stopped at 3 and resumed vs uninterrupted" 6
# shellcheck disable=SC2086
par_train_losses ck_plain 2 --global-batch-size 8 $Z --load "$TMPD/ck"
is "$rc" 0 "the checkpoint of the bucketed ZeRO-1 run resumes without buckets"
# shellcheck disable=SC2046
set -- $(par_maxdiff "$TMPD/on_zero_dp2.jsonl" "$TMPD/ck_plain.jsonl" loss train rel)
is "$*" "mismatch 6 3" "... (3 iterations logged)"
tail -n 3 "$TMPD/on_zero_dp2.losses" > "$TMPD/tail3.losses"
if cmp -s "$TMPD/tail3.losses" "$TMPD/ck_plain.losses"; then
    tap_result 0 "... with the losses of iterations 4-6 of the uninterrupted run, bitwise (DP 2 sums a + b either way)"
else
    tap_result 1 "... with the losses of iterations 4-6 of the uninterrupted run, bitwise (DP 2 sums a + b either way)"
fi

# refused before any work
# shellcheck disable=SC2086
run "$GPT3D" train $flags --global-batch-size 4 --overlap-param-gather
is "$rc" 2 "--overlap-param-gather without ZeRO-1: usage error"
like "$out" "overlap-param-gather needs --use-distributed-optimizer" "... and says what it needs"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --global-batch-size 4 --ddp-bucket-size 0
is "$rc" 2 "--ddp-bucket-size 0: usage error"

done_testing

#!/bin/sh
# --grad-reduce-in-bf16 (Megatron-LM's flag): the data-parallel gradient reductions move bf16
# copies of the fp32 gradients (cast, all-reduce or ZeRO-1 reduce-scatter in bf16, cast
# back).  On the CPU backend (host groups; the NCCL path of --device cuda is the same code
# with ncclBfloat16), for DP 2, DP 2 with ZeRO-1 and PP 2 x DP 2:
#   * the reduced gradients of step 1 are bf16 values: against the fp32 run they differ
#     (grad_check with 1e-7 fails) but stay within 1e-2 of max|grad| per tensor (three
#     roundings of 2^-9 relative each: each rank's gradient, the sum, the cast back is exact);
#   * replicated copies (the tied embedding on the first and last stage) stay bitwise equal;
#   * the loss curve over 20 iterations stays within 1e-3 relative of the fp32 run.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/parallel/par_lib.sh
. "$top_srcdir/tests/parallel/par_lib.sh"
set -e

g3_need_mpirun
par_setup
par_flags 2 --global-batch-size 8 --train-iters 20 --eval-iters 1

for layout in "dp2 2" "zero_dp2 2 --use-distributed-optimizer" "pp2dp2 4 $P 2"; do
    # shellcheck disable=SC2086
    set -- $layout
    name=$1 np=$2
    shift 2
    par_train "fp32_$name" "$np" "$@"
    is "$rc" 0 "$name: the fp32 reduction exits 0"
    par_train "bf16_$name" "$np" "$@" --grad-reduce-in-bf16
    is "$rc" 0 "$name: --grad-reduce-in-bf16 exits 0"
    gout=$("$check" --tol 1e-2 "$TMPD/fp32_$name" "$TMPD/bf16_$name" 2>&1) && grc=0 || grc=$?
    is "$grc" 0 "$name: bf16-reduced gradients of step 1 within 1e-2 of fp32, every element, copies bitwise equal ($(printf '%s\n' "$gout" | tail -n 1))"
    [ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -8 | sed 's/^/#   /'
    "$check" --tol 1e-7 "$TMPD/fp32_$name" "$TMPD/bf16_$name" >/dev/null 2>&1 && grc=0 || grc=$?
    is "$grc" 1 "$name: ... and not within 1e-7: the reduction really ran in bf16"
    # shellcheck disable=SC2046
    set -- $(par_maxdiff "$TMPD/fp32_$name.jsonl" "$TMPD/bf16_$name.jsonl" loss train rel)
    if [ "$#" -eq 2 ] && [ "$2" -eq 20 ] && par_within "$1" 1e-3; then
        tap_result 0 "$name: loss curve within 1e-3 of the fp32 reduction over 20 iterations (max $1)"
    else
        tap_result 1 "$name: loss curve within 1e-3 of the fp32 reduction over 20 iterations ($*)"
    fi
done
gout=$("$check" --what params --tol 0.1 "$TMPD/fp32_pp2dp2" "$TMPD/bf16_pp2dp2" 2>&1) && grc=0 || grc=$?
is "$grc" 0 "pp2dp2: parameters after 20 steps: the tied embedding's copies and the DP replicas bitwise equal (values within 0.1 of fp32: AdamW normalises tiny steps)"
[ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -8 | sed 's/^/#   /'

done_testing

#!/bin/sh
# --timing-log-level (Megatron-LM's per-operation timers) on the CPU backend.
#   * level 0 (the default) prints and writes nothing new, and the losses, gradient norms and
#     final parameters are bitwise those of a run without the flag;
#   * level 1, one rank and TP 2 x PP 2 (4 ranks, ZeRO-free): after each progress line a
#     "(min, max) time across ranks" block with forward-backward, optimizer, batch-generator
#     and the communication groups, the same as {"event":"timers"} records in the metrics
#     file (one per progress line), nothing of level 2; the numbers are bitwise unchanged;
#   * level 2 adds forward-compute, backward-compute and comm per operation;
#   * a checkpoint save shows up as save-checkpoint in the next report;
#   * a level outside 0..2 is a usage error.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/parallel/par_lib.sh
. "$top_srcdir/tests/parallel/par_lib.sh"
set -e

par_setup
flags="--data-path $D/verses --vocab-file $D/vocab.json --merge-file $D/merges.txt --split 90,5,5
 --num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 32
 --make-vocab-size-divisible-by 6 --micro-batch-size 2 --global-batch-size 4 --train-iters 6
 --lr 3e-3 --log-interval 2 --eval-iters 1 --eval-interval 100"

# numbers NAME: the train records without their timing fields (loss, grad norm, lr, ...)
numbers() {
    "$GPT3D" metrics "$TMPD/$1.jsonl" --event train \
        --fields iteration,train_iters,consumed_samples,lr,global_batch_size,loss,grad_norm
}
# same A B WHAT: the numbers and the final parameters bitwise equal
same() {
    if [ "$(numbers "$1")" = "$(numbers "$2")" ] && [ -n "$(numbers "$1")" ]; then
        tap_result 0 "$3: losses, gradient norms and learning rates bitwise equal"
    else
        tap_result 1 "$3: losses, gradient norms and learning rates bitwise equal"
    fi
    gout=$("$check" --what params --tol 0 "$TMPD/$1" "$TMPD/$2" 2>&1) && grc=0 || grc=$?
    is "$grc" 0 "$3: final parameters bitwise equal ($(printf '%s\n' "$gout" | tail -n 1))"
}

par_train plain 0
is "$rc" 0 "one rank without the flag exits 0"
plain_out=$out
par_train lvl0 0 --timing-log-level 0
is "$rc" 0 "--timing-log-level 0 exits 0"
same plain lvl0 "level 0 vs no flag"
ok=1
case "$out$plain_out" in *"time across ranks"*) ok=0 ;; esac
grep -q '"event":"timers"' "$TMPD/lvl0.jsonl" && ok=0
is "$ok" 1 "level 0 prints no timers and writes no timers record"

par_train lvl1 0 --timing-log-level 1 --save "$TMPD/ck1" --save-interval 2
is "$rc" 0 "one rank, --timing-log-level 1 exits 0"
is "$(printf '%s\n' "$out" | grep -c '^(min, max) time across ranks (ms), per iteration over the last 2:')" 3 \
    "level 1: one timer block per progress line (3)"
like "$out" "    batch-generator \.+: \([0-9.]+, [0-9.]+\)" "level 1: batch-generator in Megatron's layout"
like "$out" "    save-checkpoint \.+: \([0-9.]+, [0-9.]+\)" "level 1: the --save-interval saves are timed"
ok=1
case "$out" in *forward-compute*|*backward-compute*) ok=0 ;; esac
is "$ok" 1 "level 1: no level-2 timers"
is "$(grep -c '"event":"timers","iteration":[246],"iterations":2,"level":1,"ms_per_iter":{.*"batch-generator":\[' "$TMPD/lvl1.jsonl")" 3 \
    "level 1: three timers records in the metrics file"

if g3_have_mpirun; then
    T=--tensor-model-parallel-size
    P=--pipeline-model-parallel-size
    par_train par0 4 "$T" 2 "$P" 2
    is "$rc" 0 "TP 2 x PP 2 without the flag exits 0"
    par_train par1 4 "$T" 2 "$P" 2 --timing-log-level 1
    is "$rc" 0 "TP 2 x PP 2, --timing-log-level 1 exits 0"
    same par0 par1 "TP 2 x PP 2, level 1 vs no flag"
    for t in forward-backward optimizer comm-tp comm-pp comm-emb; do
        like "$out" "    $t \.+: \([0-9.]+, [0-9.]+\)" "TP 2 x PP 2, level 1: $t (min, max)"
    done
    par_train par2 4 "$T" 2 "$P" 2 --timing-log-level 2
    is "$rc" 0 "TP 2 x PP 2, --timing-log-level 2 exits 0"
    same par0 par2 "TP 2 x PP 2, level 2 vs no flag"
    for t in forward-compute backward-compute comm-tp-all-reduce comm-pp-send comm-pp-recv; do
        like "$out" "    $t \.+: \([0-9.]+, [0-9.]+\)" "TP 2 x PP 2, level 2: $t (min, max)"
    done
    like "$(grep '"event":"timers"' "$TMPD/par2.jsonl" | head -n 1)" '"forward-compute":\[[0-9.e-]+,[0-9.e-]+\]' \
        "TP 2 x PP 2, level 2: forward-compute in the metrics file"
else
    skip "mpirun not found: the 4-rank timers are not checked"
fi

# shellcheck disable=SC2086
run "$GPT3D" train $flags --timing-log-level 3
is "$rc" 2 "--timing-log-level 3: usage error"
like "$out" "timing-log-level: .3. is not one of 0[|]1[|]2" "... naming the levels"

done_testing

#!/bin/sh
# gpt3d eval and gpt3d generate choose and open their compute backend as gpt3d train does
# (src/cli/cmd_infer.c through train/flags.c: --device, --attention-backend, --deterministic,
# the trainer's probe and size checks): a --device this build or machine cannot run is
# refused before any work with the trainer's message and exit code; --device cpu computes
# exactly what the default does (the losses, the greedy and sampled text, the task scores,
# bit for bit; with GPT3D_OLD naming a gpt3d from before the flag, what that one computed).
# And the task kinds' lists in --task's help and messages come from the table of kinds
# (src/infer/tasks_kinds.c).  (top_srcdir, top_builddir, GPT3D come from make check; run
# sets rc and out; $flags is split into words on purpose: SC2086.)
# shellcheck disable=SC2154,SC2086
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -eu

g3_small_setup 2 --global-batch-size 4 --train-iters 6 --eval-iters 1
run "$GPT3D" train $flags --save "$TMPD/ck" --run-dir "$TMPD/run"
is "$rc" 0 "a small GPT trains on the CPU and saves a checkpoint"
CK="$TMPD/ck"

# ---- the flags, in help
run "$GPT3D" eval --help
like "$out" "--device cpu\|cuda" "eval --help lists --device cpu|cuda"
like "$out" "--attention-backend auto\|native\|cudnn" "... and --attention-backend"
like "$out" "lambada, wikitext103, hellaswag, piqa, winogrande, mc \(docs/evaluation.md\)" \
    "--task's help lists the task kinds of the table"
run "$GPT3D" generate --help
like "$out" "--device cpu\|cuda" "generate --help lists --device cpu|cuda"

# ---- a --device that cannot run here: the trainer's message and exit code
# err OUTPUT: its error lines
err() { printf '%s\n' "$1" | grep 'error:' || true; }
run "$GPT3D" train $flags --run-dir "$TMPD/cuda" --device cuda
train_rc=$rc
train_err=$(err "$out")
if [ "$train_rc" -ne 0 ]; then r=0; else r=1; fi
tap_result "$r" "train --device cuda refuses to run here (no GPU, or sizes its kernels do not run): exit $train_rc"
diag "train says: $train_err"
run "$GPT3D" eval --load "$CK" --device cuda
is "$rc" "$train_rc" "eval --device cuda: train's exit code"
is "$(err "$out")" "$train_err" "... and train's message"
unlike "$out" "validation loss" "... before any work"
run "$GPT3D" generate --load "$CK" --prompt "And God" --device cuda
is "$rc" "$train_rc" "generate --device cuda: train's exit code"
is "$(err "$out")" "$train_err" "... and train's message"
run "$GPT3D" eval --load "$CK" --attention-backend cudnn
is "$rc" 2 "eval --attention-backend cudnn on the CPU: a usage error, as in train"
like "$out" "--attention-backend cudnn needs --device cuda" "... with the trainer's message"

# ---- --device cpu: what the default computes, bit for bit
printf '%s\n' '{"context": "And God said", "choices": [" light", " darkness"], "label": 0}' \
    '{"context": "In the beginning", "choices": [" God", " the"], "label": 0}' \
    '{"context": "And the earth was", "choices": [" without form", " light"], "label": 0}' \
    > "$TMPD/mc.jsonl"
# outputs BINARY NAME [FLAGS...]: eval's and generate's outputs (standard output: the first run
# also says on standard error that it built the test split's index; the tasks' metrics, not
# their speed) in $TMPD/NAME.*
outputs() {
    _bin=$1
    _name=$2
    shift 2
    "$_bin" eval --load "$CK" --eval-split valid,test "$@" > "$TMPD/$_name.eval" 2>/dev/null
    "$_bin" eval --load "$CK" --task mc lambada --task-data "$TMPD/mc.jsonl" "$TMPD/lam.jsonl" \
        --metrics-file "$TMPD/$_name.tm" "$@" > /dev/null 2>&1
    sed 's/"tokens_per_s":[0-9.]*,//' "$TMPD/$_name.tm" > "$TMPD/$_name.tasks"
    "$_bin" generate --load "$CK" --prompt "And God" --max-new-tokens 20 --greedy "$@" \
        > "$TMPD/$_name.greedy" 2>/dev/null
    "$_bin" generate --load "$CK" --prompt "And God" --max-new-tokens 20 --seed 3 --top-k 5 \
        --temperature 1.2 --output-file "$TMPD/$_name.json" "$@" > "$TMPD/$_name.sampled" 2>/dev/null
}
printf '%s\n' '{"text": "And God said let there be light"}' '{"text": "In the beginning God"}' \
    > "$TMPD/lam.jsonl"
outputs "$GPT3D" default
outputs "$GPT3D" cpu --device cpu
like "$(cat "$TMPD/default.eval")" ' test loss at iteration 6 \| lm loss value: ' "eval reports the losses"
like "$(cat "$TMPD/default.tasks")" '"task":"mc:mc".*"acc":' "eval --task reports the scores"
for f in eval tasks greedy sampled json; do
    if cmp -s "$TMPD/default.$f" "$TMPD/cpu.$f"; then r=0; else r=1; fi
    tap_result "$r" "--device cpu: the same $f as the default, byte for byte"
done
if [ -n "${GPT3D_OLD:-}" ] && [ -x "$GPT3D_OLD" ]; then
    outputs "$GPT3D_OLD" old
    for f in eval tasks greedy sampled json; do
        if cmp -s "$TMPD/old.$f" "$TMPD/cpu.$f"; then r=0; else r=1; fi
        tap_result "$r" "--device cpu: the same $f as $GPT3D_OLD, byte for byte"
    done
else
    for f in eval tasks greedy sampled json; do
        skip "GPT3D_OLD (a gpt3d from before --device) not set: $f"
    done
fi

# ---- the task kinds' lists in the messages come from the table
run "$GPT3D" eval --load "$CK" --task nope --task-data "$TMPD/mc.jsonl"
is "$rc" 2 "--task nope: a usage error"
like "$out" "--task 'nope' is not a task: use lambada, wikitext103, hellaswag, piqa, winogrande or mc \(gpt3d's multiple-choice JSONL\)" \
    "... listing the kinds"
run "$GPT3D" eval --task nope --task-data "$TMPD/mc.jsonl" --convert-to "$TMPD/x.jsonl"
like "$out" "--convert-to FILE converts one file: pass --task hellaswag, piqa, winogrande or mc and its --task-data FILE" \
    "--convert-to lists the multiple-choice kinds"
run "$GPT3D" eval --task lambada --task-data "$TMPD/lam.jsonl" --convert-to "$TMPD/x.jsonl"
like "$out" "--convert-to writes multiple-choice items: lambada is not a multiple-choice task" \
    "... and refuses a kind without choices"
run "$GPT3D" train $flags --run-dir "$TMPD/et" --eval-tasks "nope:$TMPD/mc.jsonl"
is "$rc" 2 "train --eval-tasks nope:FILE: a usage error"
like "$out" "is not NAME:FILE\[:K\] with NAME lambada, wikitext103, hellaswag, piqa, winogrande or mc and K" \
    "... listing the kinds"
done_testing

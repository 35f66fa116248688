#!/bin/sh
# gpt3d eval --task: zero- and few-shot tasks (src/infer/tasks*.c, src/cli/eval_tasks.c,
# g3_gpt_score, g3_par_score).  A tiny GPT trained on one rank; synthetic task files in the
# published formats (tasks_ref.py make: >= 200 items each of lambada, wikitext103, mc with
# full and partial items, hellaswag, piqa with its labels file, winogrande):
#   * the PyTorch reference (tasks_ref.py check) rebuilds every row on its own (GPT-2 BPE,
#     the harness's request encoding, Megatron's LAMBADA split, detokenizer and windows),
#     finds the token ids gpt3d scored, the same per-row log-probabilities within 1e-4
#     relative and argmax flags, and every metric (accuracies exactly);
#   * TP 2 x PP 2 x DP 2 under mpirun gives the one-rank scores (accuracies exactly, the rest
#     within 1e-6 relative), rank 0 alone reporting;
#   * few-shot: the same log-probabilities, prompts of K solved examples of other items
#     joined by blank lines, --show-prompt, --seed;
#   * --convert-to writes the published formats as gpt3d's JSONL, which scores the same;
#   * train --eval-tasks: the tasks at each --eval-interval and at the end, in metrics.jsonl;
#     gpt3d-submit --summary shows each run's last task scores;
#   * bad task files and flags: exit 2, one message naming the file and line (or the flag);
#     a context longer than the sequence: cut on the left, warned with its line, counted.
# (top_srcdir, top_builddir, GPT3D, MPIRUN, PYTHON_REF come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

g3_tmpdir
D="$TMPD/data"
g3_byte_corpus "$D" mixed5 400
export OMP_NUM_THREADS=1
py=${PYTHON_REF:-/usr/bin/python3}
ref="$top_srcdir/tests/infer/tasks_ref.py"
if ! "$py" -c 'import torch, h5py, numpy' >/dev/null 2>&1; then
    echo "Bail out! $py has no torch/h5py/numpy (install Debian's python3-torch and python3-h5py)"
    exit 1
fi

R="$TMPD/run"
run "$GPT3D" train --data-path "$D/verses" --vocab-file "$D/vocab.json" --merge-file "$D/merges.txt" \
    --split 90,5,5 --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 64 \
    --max-position-embeddings 256 --micro-batch-size 4 --global-batch-size 8 --lr 1e-2 \
    --lr-warmup-iters 5 --train-iters 150 --log-interval 50 --eval-iters 1 --eval-interval 1000 \
    --save "$R/ck" --run-dir "$R"
is "$rc" 0 "a tiny GPT trains on one rank"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -12 | sed 's/^/#   /'
T="$TMPD/t"
mkdir -p "$T"
"$py" "$ref" make "$T"
INDEX="$R/ck/iter_0000150/index.h5"

kinds="lambada wikitext103 mc hellaswag piqa winogrande"
files="$T/lambada.jsonl $T/wiki.test.tokens $T/mc.jsonl $T/hellaswag.jsonl $T/valid.jsonl $T/winogrande.jsonl"
specs="lambada:$T/lambada.jsonl wikitext103:$T/wiki.test.tokens mc:$T/mc.jsonl hellaswag:$T/hellaswag.jsonl piqa:$T/valid.jsonl winogrande:$T/winogrande.jsonl"

# ---- one rank, against the PyTorch reference
M1="$TMPD/one.jsonl"
# shellcheck disable=SC2086
run "$GPT3D" eval --load "$R/ck" --task $kinds --task-data $files --overlapping-eval 16 \
    --metrics-file "$M1" --debug-task-rows "$TMPD/rows"
is "$rc" 0 "eval --task with six tasks on one rank: exit 0"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -12 | sed 's/^/#   /'
like "$out" ' task lambada at iteration 150 \| 0-shot \| n 220 \| acc_strict: [0-9.]+ \+- [0-9.e+-]+ \| acc_nonstrict: [0-9.]+ \+- [0-9.e+-]+ \| ppl: [0-9.e+]+' \
    "lambada: strict and non-strict accuracy and the targets' perplexity, with standard errors"
like "$out" ' task wikitext103 at iteration 150 \| 0-shot \| n [0-9]+ \| loss: [0-9.]+ \+- [0-9.e+-]+ \| ppl: [0-9.e+]+ \+- [0-9.e+-]+ \| adjusted_ppl: [0-9.e+]+ \+- [0-9.e+-]+ \| token_ratio: [0-9.]+' \
    "wikitext103: loss, ppl, adjusted ppl and the token ratio"
like "$out" ' task mc:mc at iteration 150 \| 0-shot \| n 210 \| acc: [0-9.]+ \+- [0-9.e+-]+ \| acc_norm: [0-9.]+' "mc: acc and acc_norm"
like "$out" ' mc:mc: [0-9]+/[0-9]+ micro-batches \(100%\) \| [0-9.]+ tokens/s \| elapsed [0-9]+ s \| ETA 0 s' "progress lines with tokens/s and an ETA"
like "$out" 'warn: .*/lambada.jsonl: [0-9]+ rows are longer than --seq-length 64 \+ 1 tokens, cut on the left \(the first at line [0-9]+\)' \
    "contexts longer than the sequence: cut on the left, warned with the file and line"
is "$(grep -c '"event":"task"' "$M1")" 6 "--metrics-file: one JSON line per task"
like "$(sed -n 1p "$M1")" '^\{"event":"task","task":"lambada","iteration":150,"n":220,"num_fewshot":0,"truncated":[1-9][0-9]*,"metrics":\{"acc_strict":[0-9.e-]+,"acc_nonstrict":[0-9.e-]+,"ppl":[0-9.e+]+\},"stderr":\{"acc_strict":[0-9.e-]+,"acc_nonstrict":[0-9.e-]+,"ppl":[0-9.e+-]+\},"tokens_per_s":[0-9.]+,"file":".*lambada.jsonl","checkpoint":".*iter_0000150"\}$' \
    "the task line: n, the metrics and their standard errors, the truncated rows, the checkpoint"
# shellcheck disable=SC2086
run "$py" "$ref" check "$INDEX" "$D/vocab.json" "$D/merges.txt" "$M1" "$TMPD/rows" 16 $specs
is "$rc" 0 "PyTorch reference: $(printf '%s\n' "$out" | grep -c '^ok') of $(printf '%s\n' "$out" | grep -c -E '^(not )?ok') checks (rows, log-probabilities within 1e-4, argmax flags, every metric)"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | grep -E '^not ok' | head -10 | sed 's/^/#   /'

# same MA RA MB RB: the runs of metrics MA (rows RA, --debug-task-rows) and MB (rows RB) score
# every row within 1e-4 relative, give the same n and truncation and the other metrics within
# 1e-6, and accuracies that differ only on near-ties (tasks_ref.py same)
same() {
    # shellcheck disable=SC2086
    "$py" "$ref" same "$D/vocab.json" "$D/merges.txt" 64 16 "$1" "$2" "$3" "$4" $specs
}

# ---- TP 2 x PP 2 x DP 2 gives the one-rank scores
if g3_have_mpirun; then
    M8="$TMPD/eight.jsonl"
    # shellcheck disable=SC2086
    run g3_mpirun -np 8 -x OMP_NUM_THREADS "$GPT3D" eval --load "$R/ck" --task $kinds --task-data $files \
        --overlapping-eval 16 --metrics-file "$M8" --tensor-model-parallel-size 2 \
        --pipeline-model-parallel-size 2 --distributed-timeout-minutes 5 --debug-task-rows "$TMPD/rows8"
    is "$rc" 0 "eval --task under TP 2 x PP 2 x DP 2 (8 ranks): exit 0"
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -12 | sed 's/^/#   /'
    like "$out" 'micro-batches of 4 x 64 tokens \(more rows when shorter\) per replica' "the rows are shared over the data-parallel replicas"
    is "$(printf '%s\n' "$out" | grep -c ' task hellaswag at iteration')" 1 "rank 0 alone reports"
    is "$(same "$M1" "$TMPD/rows" "$M8" "$TMPD/rows8")" same "TP 2 x PP 2 x DP 2: every task's scores are the one-rank scores"
    run g3_mpirun -np 2 -x OMP_NUM_THREADS "$GPT3D" eval --load "$R/ck" --task mc --task-data "$T/bad_label.jsonl"
    is "$rc" 2 "a bad task file under mpirun: exit 2"
    is "$(printf '%s\n' "$out" | grep -c 'bad_label.jsonl:3: label 2 is out of range')" 1 "and one message, rank 0's"
else
    skip "mpirun not found: TP 2 x PP 2 x DP 2"
    skip "mpirun not found"
    skip "mpirun not found"
    skip "mpirun not found"
    skip "mpirun not found"
    skip "mpirun not found"
fi

# ---- --convert-to: the published formats into gpt3d's JSONL, scored the same
run "$GPT3D" eval --task hellaswag --task-data "$T/hellaswag.jsonl" --convert-to "$TMPD/hs.jsonl"
is "$rc" 0 "--convert-to: HellaSwag into gpt3d's multiple-choice JSONL, no checkpoint needed"
run "$GPT3D" eval --task winogrande --task-data "$T/winogrande.jsonl" --convert-to "$TMPD/wg.jsonl"
like "$(head -n 1 "$TMPD/wg.jsonl")" '^\{"contexts":\[".*",".*"\],"continuation":".*","label":[01]\}$' "WinoGrande: the partial form"
MC="$TMPD/conv.jsonl"
run "$GPT3D" eval --load "$R/ck" --task hellaswag winogrande mc mc --task-data "$T/hellaswag.jsonl" \
    "$T/winogrande.jsonl" "$TMPD/hs.jsonl" "$TMPD/wg.jsonl" --metrics-file "$MC"
acc_of() { grep "\"task\":\"$1\"" "$MC" | sed 's/.*"metrics":\({[^}]*}\).*/\1/'; }
is "$(acc_of mc:hs)" "$(acc_of hellaswag)" "the converted HellaSwag scores as the published file"
is "$(acc_of mc:wg)" "$(acc_of winogrande)" "the converted WinoGrande scores as the published file"

# ---- few-shot
MF="$TMPD/fewshot.jsonl"
run "$GPT3D" eval --load "$R/ck" --seq-length 256 --task lambada mc hellaswag \
    --task-data "$T/lambada.jsonl" "$T/mc.jsonl" "$T/hellaswag.jsonl" --num-fewshot 2 --seed 3 \
    --show-prompt --metrics-file "$MF" --debug-task-rows "$TMPD/fs"
is "$rc" 0 "--num-fewshot 2 --seed 3: exit 0"
like "$out" '"num_fewshot":2|2-shot \| n 220' "it reports 2-shot scores"
like "$out" 'mc:mc: the prompt of item 0 \([0-9]+ tokens(, cut on the left)?\), then \[the scored continuation\]:' \
    "--show-prompt prints each task's first prompt"
run "$py" "$ref" fewshot "$INDEX" "$D/vocab.json" "$D/merges.txt" "$MF" "$TMPD/fs" 2 \
    "lambada:$T/lambada.jsonl" "mc:$T/mc.jsonl" "hellaswag:$T/hellaswag.jsonl"
is "$rc" 0 "few-shot reference: $(printf '%s\n' "$out" | grep -c '^ok') of $(printf '%s\n' "$out" | grep -c -E '^(not )?ok') checks (log-probabilities; K solved examples of other items, blank-line separated)"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | grep -E '^not ok' | head -6 | sed 's/^/#   /'
p3=$("$GPT3D" eval --load "$R/ck" --seq-length 256 --task mc --task-data "$T/mc.jsonl" --num-fewshot 2 --seed 3 --show-prompt 2>/dev/null | sed -n '/the prompt of item 0/,/\]$/p')
p4=$("$GPT3D" eval --load "$R/ck" --seq-length 256 --task mc --task-data "$T/mc.jsonl" --num-fewshot 2 --seed 4 --show-prompt 2>/dev/null | sed -n '/the prompt of item 0/,/\]$/p')
p3b=$("$GPT3D" eval --load "$R/ck" --seq-length 256 --task mc --task-data "$T/mc.jsonl" --num-fewshot 2 --seed 3 --show-prompt 2>/dev/null | sed -n '/the prompt of item 0/,/\]$/p')
if [ -n "$p3" ] && [ "$p3" = "$p3b" ] && [ "$p3" != "$p4" ]; then r=0; else r=1; fi
is "$r" 0 "--seed: the same seed draws the same examples, another seed others"
run "$GPT3D" eval --load "$R/ck" --seq-length 256 --task mc --task-data "$T/mc.jsonl" --num-fewshot 1 --fewshot-data "$T/long.jsonl" --show-prompt
like "$out" 'light light light' "--fewshot-data: the examples come from that file"

# ---- inside training: --eval-tasks at each --eval-interval and at the end; gpt3d-submit --summary
R2="$TMPD/run2"
run "$GPT3D" train --data-path "$D/verses" --vocab-file "$D/vocab.json" --merge-file "$D/merges.txt" \
    --split 90,5,5 --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 64 \
    --micro-batch-size 4 --global-batch-size 8 --lr 1e-2 --train-iters 20 --log-interval 10 \
    --eval-iters 1 --eval-interval 10 --run-dir "$R2" --eval-tasks "mc:$T/mc.jsonl,piqa:$T/valid.jsonl:1"
is "$rc" 0 "train --eval-tasks mc:FILE,piqa:FILE:1: exit 0"
like "$out" ' task mc:mc at iteration 10 \| 0-shot \| n 210 \| acc: ' "the tasks run at --eval-interval, logged like the validation loss"
like "$out" ' task piqa at iteration 20 \| 1-shot \| n 200 \| acc: ' "and at the end, few-shot as asked"
is "$(grep -c '"event":"task"' "$R2/metrics.jsonl")" 4 "each run of each task is a line of metrics.jsonl"
echo "name=demo" > "$R2/run.conf"
echo "--lr 1e-2" > "$R2/train.args"
touch "$R2/COMPLETE"
run "$top_builddir/sbatch/gpt3d-submit" --summary "$R2"
like "$out" 'variant +state +iteration +loss +valid_loss +tokens_per_s +flags +tasks' "gpt3d-submit --summary has a tasks column"
like "$out" 'demo +complete +20 .*mc:mc acc=[0-9.]+ acc_norm=[0-9.]+; piqa acc=[0-9.]+ acc_norm=[0-9.]+$' "with each task's last scores"
run "$GPT3D" train --data-path "$D/verses" --vocab-file "$D/vocab.json" --merge-file "$D/merges.txt" \
    --split 90,5,5 --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 64 \
    --train-iters 2 --run-dir "$TMPD/run3" --eval-tasks "mc:$T/bad_label.jsonl"
is "$rc" 2 "train --eval-tasks with a bad file: exit 2 before training"
like "$out" "bad_label.jsonl:3: label 2 is out of range" "naming the file and line"
run "$GPT3D" train --data-path "$D/verses" --vocab-file "$D/vocab.json" --merge-file "$D/merges.txt" \
    --split 90,5,5 --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 64 \
    --train-iters 2 --run-dir "$TMPD/run3" --eval-tasks "mc"
like "$out" "--eval-tasks 'mc': 'mc' is not NAME:FILE\[:K\]" "a malformed SPEC is refused"

# ---- bad task files and flags
# bad KIND FILE REGEX WHAT: eval exits 2 with one message matching REGEX
bad() {
    run "$GPT3D" eval --load "$R/ck" --task "$1" --task-data "$T/$2"
    is "$rc" 2 "$4: exit 2"
    like "$out" "$3" "$4: the message names the file and line"
    is "$(printf '%s\n' "$out" | grep -c 'error:')" 1 "$4: one message"
}
bad mc bad_json.jsonl "error: .*bad_json.jsonl:2: expected ',' or '\}' in an object; a multiple-choice task file holds one JSON object a line" "malformed JSON"
bad mc bad_label.jsonl "error: .*bad_label.jsonl:3: label 2 is out of range: the item has 2 choices, labels 0 .. 1" "a label out of range"
bad mc bad_empty.jsonl "error: .*bad_empty.jsonl:1: choice 1 is empty" "an empty choice"
bad mc bad_fields.jsonl "error: .*bad_fields.jsonl:1: a multiple-choice item has either \"context\" and \"choices\"" "the wrong format"
bad mc bad_type.jsonl "error: .*bad_type.jsonl:1: a field that must be an array of strings is not" "choices not an array"
bad lambada bad_lambada.jsonl "error: .*bad_lambada.jsonl:2: not a JSON object; a lambada file holds one \{\"text\": ...\} object a line" "a lambada line not an object"
bad winogrande bad_wino.jsonl "error: .*bad_wino.jsonl:1: the sentence has no '_' blank" "a WinoGrande sentence without a blank"
bad mc nope.jsonl "cannot open the task file '.*nope.jsonl': No such file or directory" "a missing task file"
mkdir -p "$TMPD/p"
cp "$T/valid.jsonl" "$TMPD/p/valid.jsonl"
run "$GPT3D" eval --load "$R/ck" --task piqa --task-data "$TMPD/p/valid.jsonl"
is "$rc" 2 "PiQA without its labels file: exit 2"
like "$out" 'valid-labels.lst cannot be read' "and the message names the labels file"
run "$GPT3D" eval --load "$R/ck" --task foo --task-data "$T/mc.jsonl"
is "$rc" 2 "an unknown --task: exit 2"
run "$GPT3D" eval --load "$R/ck" --task mc lambada --task-data "$T/mc.jsonl"
like "$out" "--task names 2 tasks but --task-data gives 1 file" "--task and --task-data counts must agree"
run "$GPT3D" eval --load "$R/ck" --task wikitext103 --task-data "$T/wiki.test.tokens" --num-fewshot 1
is "$rc" 2 "wikitext103 with --num-fewshot: exit 2"
ML="$TMPD/long.jsonl"
run "$GPT3D" eval --load "$R/ck" --task mc --task-data "$T/long.jsonl" --metrics-file "$ML"
is "$rc" 0 "a context longer than the sequence is not an error"
like "$out" "warn: .*long.jsonl: 2 rows are longer than --seq-length 64 \+ 1 tokens, cut on the left \(the first at line 1\)" "it is warned, naming the file and line"
like "$(cat "$ML")" '"n":2,"num_fewshot":0,"truncated":2,' "and counted in the report"
done_testing

#!/bin/bash
# gpt3d metrics (src/metrics/query.c) reads a run's metrics.jsonl through the schema
# (src/metrics/events.h):
#   * on a trained run (with timers, validation and a resume), the values gpt3d-submit's
#     readers take with grep and sed (json_num, training_line, run_row) come out the same
#     from the commands that replace them; every line of the file is a schema event whose
#     fields are all the schema's, in its order;
#   * on a written file: task scores (the replacement of task_scores), null values, a member
#     of an object, a last line cut short (skipped), --where on several fields;
#   * errors: an unknown event or field (exit 2, the schema's names listed), an event of
#     TensorBoard only, a malformed --where, a missing file and a malformed line (exit 1,
#     file and line named);
#   * docs/training.md holds the schema table exactly as gpt3d metrics --schema prints it.
# (top_srcdir, top_builddir, GPT3D come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -euo pipefail

g3_small_setup 2 --global-batch-size 4 --train-iters 8 --eval-iters 1 --eval-interval 4 \
    --log-interval 3 --timing-log-level 1
R="$TMPD/run"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$R" --save "$R/ck" --save-interval 4 --exit-interval 5
is "$rc" 75 "a run stopped at iteration 5: exit 75"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$R" --save "$R/ck" --load "$R/ck" --save-interval 4
is "$rc" 0 "... resumed to the end: exit 0"
m="$R/metrics.jsonl"

# ---- gpt3d-submit's readers (sbatch/gpt3d-submit.in), as they are, and their replacements
json_num() { sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p"; }
last=$(grep '"event":"train"' "$m" | tail -n 1)
old=""
for k in iteration train_iters consumed_samples ms_per_iter loss; do
    old="$old$(json_num "$k" <<<"$last")	"
done
new=$("$GPT3D" metrics "$R" --event train --last \
    --fields iteration,train_iters,consumed_samples,ms_per_iter,loss)
is "$new	" "$old" "training_line: the last train record's five values ($new)"
is "$("$GPT3D" metrics "$R" --event start --last --fields seq_length)" \
    "$(grep '"event":"start"' "$m" | tail -n 1 | json_num seq_length)" "training_line: seq_length"
old="$(json_num iteration <<<"$last")	$(json_num loss <<<"$last")	$(json_num tokens_per_s <<<"$last")"
is "$("$GPT3D" metrics "$R" --event train --last --fields iteration,loss,tokens_per_s)" "$old" \
    "run_row: iteration, loss, tokens_per_s"
ev=$(grep '"event":"eval"' "$m" | grep '"split":"valid"' | tail -n 1)
is "$("$GPT3D" metrics "$R" --event eval --where split=valid --last --fields loss)" \
    "$(json_num loss <<<"$ev")" "run_row: the last validation loss"
is "$("$GPT3D" metrics "$m" --event eval --fields iteration | paste -sd' ' -)" "4 8" \
    "the validation records, by iteration (a metrics file named directly)"
is "$("$GPT3D" metrics "$R" --fields event | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')" \
    "end:1 eval:2 exit:1 load:1 save:3 start:2 timers:3 train:3 " \
    "every record's event: two starts (a resume), three saves, one exit, load and end"
is "$("$GPT3D" metrics "$R" --event save --fields iteration,reason | paste -sd' ' -)" \
    "4	save interval 5	exit interval 8	end of training" "the saves' iterations and reasons"
is "$("$GPT3D" metrics "$R" --event timers --last --fields ms_per_iter.optimizer | tr -c '\n' x)" \
    "$(grep '"event":"timers"' "$m" | tail -n 1 | sed 's/.*"optimizer":\[\([^]]*\)\].*/\1/' | tr -c '\n' x)" \
    "a member of an object: the last timers' optimizer (min,max)"
is "$("$GPT3D" metrics "$R" --event end)" "$(grep '"event":"end"' "$m")" \
    "without --fields: the records' lines whole"

# every record as the schema says: its event's fields, all of them the schema's, in order
schema=$("$GPT3D" metrics --schema | awk -F' [|] ' 'NR > 2 && $5 !~ /TensorBoard only/ {
    gsub(/[`| ]/, "", $1); gsub(/`/, "", $2); print $1, $2 }')
bad=$(awk -v schema="$schema" 'BEGIN { n = split(schema, l, "\n")
        for (i = 1; i <= n; i++) { split(l[i], w, " "); order[w[1]] = order[w[1]] " " w[2] } }
    { line = $0; sub(/^\{"event":"/, "", line); ev = line; sub(/".*/, "", ev); keys = ""
      while (match(line, /,"[a-z_]+":/)) { k = substr(line, RSTART + 2, RLENGTH - 4)
          keys = keys " " k; line = substr(line, RSTART + RLENGTH)
          if (substr(line, 1, 1) == "{") sub(/^\{[^}]*\}/, "", line) }
      o = " " order[ev] " "; p = 0
      nk = split(keys, ks, " ")
      for (i = 1; i <= nk; i++) { q = index(o, " " ks[i] " "); if (q <= p) { print NR ": " ev " " ks[i]; next } p = q } }' "$m")
is "${bad:-none}" none "every record's fields are its event's in the schema, in the schema's order"

# ---- a written file: task scores, nulls, a cut last line
W="$TMPD/w"
mkdir -p "$W"
{
    printf '%s\n' '{"event":"task","task":"mc","iteration":10,"n":20,"num_fewshot":0,"truncated":0,"metrics":{"acc":0.25,"acc_norm":null},"stderr":{"acc":0.1,"acc_norm":null},"tokens_per_s":100.0,"file":"a\tb.jsonl"}'
    printf '%s\n' '{"event":"task","task":"piqa","iteration":10,"n":20,"num_fewshot":1,"truncated":0,"metrics":{"acc":0.5},"stderr":{"acc":0.1},"tokens_per_s":100.0,"file":"p.jsonl"}'
    printf '%s\n' '{"event":"task","task":"mc","iteration":20,"n":20,"num_fewshot":0,"truncated":0,"metrics":{"acc":0.75,"acc_norm":0.5},"stderr":{"acc":0.1,"acc_norm":0.1},"tokens_per_s":100.0,"file":"m.jsonl"}'
    printf '%s\n' '{"event":"end","iteration":20,"consumed_samples":80,"loss":null,"valid_loss":null}'
    printf '%s' '{"event":"train","iteration":21,"loss":'
} >"$W/metrics.jsonl"
task_scores() {   # gpt3d-submit's
    grep '"event":"task"' "$1/metrics.jsonl" 2>/dev/null | awk '
        { t = $0; sub(/.*"task":"/, "", t); sub(/".*/, "", t)
          m = $0; sub(/.*"metrics":\{/, "", m); sub(/\}.*/, "", m)
          gsub(/"/, "", m); gsub(/:/, "=", m); gsub(/,/, " ", m)
          if (!(t in s)) order[n++] = t; s[t] = m }
        END { for (i = 0; i < n; i++) printf "%s%s %s", (i ? "; " : ""), order[i], s[order[i]] }'
}
task_scores_new() {   # its replacement
    "$GPT3D" metrics "$1" --event task --fields task,metrics | awk -F'\t' '
        { if (!($1 in s)) order[n++] = $1; s[$1] = $2 }
        END { for (i = 0; i < n; i++) printf "%s%s %s", (i ? "; " : ""), order[i], s[order[i]] }'
}
is "$(task_scores_new "$W")" "$(task_scores "$W")" "task_scores: the last scores of each task ($(task_scores "$W"))"
is "$("$GPT3D" metrics "$W" --event task --where task=mc iteration=10 --fields metrics.acc,metrics.acc_norm,file)" \
    "0.25		a\\tb.jsonl" "--where on two fields; a null member prints nothing; a string decoded, its tab as \\t"
is "$("$GPT3D" metrics "$W" --event end --fields iteration,loss,valid_loss)" "20		" \
    "null values print nothing"
is "$("$GPT3D" metrics "$W" --event train | wc -l | tr -d ' ')" 0 \
    "a last line without its newline (a run killed while writing it) is skipped"
is "$("$GPT3D" metrics "$W" --event task --where task=none)" "" "no match: nothing"

# ---- errors
run "$GPT3D" metrics "$R" --event trian
is "$rc" 2 "an unknown event: exit 2"
like "$out" "--event trian: no such event; the events are: start, train, eval" "... listing the events"
run "$GPT3D" metrics "$R" --event eval --fields iteration,los
is "$rc" 2 "an unknown field: exit 2"
like "$out" "the eval event has no field los; its fields are: event, split, iteration, loss, ppl" \
    "... listing the event's fields"
run "$GPT3D" metrics "$R" --fields nofield
is "$rc" 2 "a field of no event: exit 2"
like "$out" "no event has a field nofield; the fields are: event, num_layers" "... listing them all"
run "$GPT3D" metrics "$R" --event train --fields loss.x
is "$rc" 2 "a member of a number: exit 2"
run "$GPT3D" metrics "$R" --event iteration
is "$rc" 2 "the TensorBoard-only event: exit 2"
like "$out" "written to TensorBoard only" "... saying so"
run "$GPT3D" metrics "$R" --where split
is "$rc" 2 "--where without =: exit 2"
run "$GPT3D" metrics
is "$rc" 2 "no file: exit 2"
run "$GPT3D" metrics "$TMPD/missing"
is "$rc" 1 "a missing file: exit 1"
like "$out" "missing'?: No such file" "... naming it"
printf '{"event":"start","seq_length":32}\n{"event":"train",\n' >"$TMPD/bad.jsonl"
run "$GPT3D" metrics "$TMPD/bad.jsonl" --event start --fields seq_length
is "$rc" 1 "a malformed line: exit 1"
like "$out" "bad.jsonl, line 2: not a JSON object" "... naming the file and line"
printf '{"seq_length":32}\n' >"$TMPD/noev.jsonl"
run "$GPT3D" metrics "$TMPD/noev.jsonl"
is "$rc" 1 "a record without an event: exit 1"

# ---- the documentation's table is the schema's
doc=$(sed -n '/^| event | field | type | unit | TensorBoard | meaning |$/,/^$/p' \
    "$top_srcdir/docs/training.md" | sed '/^$/d')
is "$doc" "$("$GPT3D" metrics --schema)" \
    "docs/training.md's table is gpt3d metrics --schema's (regenerate it with that command)"
done_testing

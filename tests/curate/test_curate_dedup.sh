#!/bin/sh
# Fuzzy and exact deduplication (gpt3d curate minhash -> lsh -> dedup) on a synthetic corpus of
# 3000 documents in 8 shards with planted near-duplicates (tests/curate/ref.py): against the
# exact Jaccard over all pairs (recall >= 0.95 of the pairs above 0.85, <= 5 % of the removed
# documents below 0.7, at the defaults), the MinHash estimate within its standard error, the
# same bits from 1 array task and from 8 (SLURM_ARRAY_TASK_* too) and from 1 lsh rank and 4
# (mpirun), and resumption (done shards skipped, a changed parameter redone); lsh --verify exact
# (no removed document below the threshold by exact Jaccard, 1 rank = 4 ranks, changed shards
# refused).
# (top_srcdir, GPT3D, PYTHON_REF, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
PY="$PYTHON_REF"
REF="$top_srcdir/tests/curate/ref.py"
D="$TMPD/c"
"$PY" "$REF" gen-dedup "$D" --docs 3000 --shards 8
L="$D/list.txt"

run "$GPT3D" curate minhash --shard-list "$L" --output-dir "$D/mh1"
is "$rc" 0 "minhash, 1 task"
like "$out" "8 shards done, 0 skipped.*3000 documents in" "minhash: 8 shards, 3000 documents"
for t in 0 1 2 3 4 5 6 7; do
    run "$GPT3D" curate minhash --shard-list "$L" --output-dir "$D/mh8" --task-id "$t" --num-tasks 8
    [ "$rc" -eq 0 ] || break
done
is "$rc" 0 "minhash, 8 tasks"
run diff -r "$D/mh1" "$D/mh8"
is "$rc" 0 "minhash: 1 task and 8 tasks write the same bits (signatures and reports)"

# lsh_4ranks NAME WHAT [FLAGS...]: lsh FLAGS with 4 ranks under mpirun into $D/NAME4 writes
# the same bits as the run of 1 rank in $D/NAME1 (two results; two skips without mpirun)
lsh_4ranks() {
    _n=$1 _w=$2
    shift 2
    if g3_have_mpirun; then
        run g3_mpirun -np 4 "$GPT3D" curate lsh --shard-list "$L" --minhash-dir "$D/mh1" --output-dir "$D/${_n}4" "$@"
        is "$rc" 0 "$_w, 4 ranks under mpirun"
        [ "$rc" -eq 0 ] || diag "$out"
        run diff -r "$D/${_n}1" "$D/${_n}4"
        is "$rc" 0 "$_w: 1 rank and 4 ranks write the same bits (duplicates.tsv, report.json)"
    else
        skip "mpirun not found: $_w with 4 ranks"
        skip "mpirun not found: $_w with 4 ranks"
    fi
}

run "$GPT3D" curate lsh --shard-list "$L" --minhash-dir "$D/mh1" --output-dir "$D/lsh1"
is "$rc" 0 "lsh, 1 rank"
like "$out" "3000 documents in 8 shards: [1-9][0-9]* exact and [1-9][0-9]* fuzzy duplicates" "lsh found exact and fuzzy duplicates"
run "$PY" "$REF" check-dedup "$D" "$D/mh1" "$D/lsh1/duplicates.tsv"
is "$rc" 0 "against exact Jaccard over all pairs: recall, removed below 0.7, MinHash error"
printf '%s\n' "$out" | grep '^#' || true
[ "$rc" -eq 0 ] || diag "$out"

lsh_4ranks lsh "lsh"

# --verify exact: candidate pairs verified by the exact Jaccard of their shingle sets (the
# documents re-read from the shards): no removed document below the threshold, by the exact
# Jaccard over all pairs; the same bits from 1 rank and 4.
run "$GPT3D" curate lsh --shard-list "$L" --minhash-dir "$D/mh1" --output-dir "$D/lshe1" --verify exact
is "$rc" 0 "lsh --verify exact, 1 rank"
[ "$rc" -eq 0 ] || diag "$out"
run "$PY" "$REF" check-verified "$D" "$D/lshe1/duplicates.tsv" 0.8
is "$rc" 0 "--verify exact: every removed document has exact Jaccard >= 0.8 in its component; recall"
printf '%s\n' "$out" | grep '^#' || true
[ "$rc" -eq 0 ] || diag "$out"
run "$PY" "$REF" check-verified "$D" "$D/lsh1/duplicates.tsv" 0.8
like "$out" "[1-9][0-9]* of them with best exact Jaccard in their component < 0.8 " "the same check finds estimate-verified removals below 0.8 (the check can fail)"
printf '%s\n' "$out" | grep '^# removed' | sed 's/^# /# --verify estimate: /' || true
like "$(cat "$D/lshe1/report.json")" '"params": "[^"]*verify=exact' "the report records --verify exact"
differ=0; cmp -s "$D/lshe1/duplicates.tsv" "$D/lsh1/duplicates.tsv" || differ=1
is "$differ" 1 "--verify exact and estimate decide differently on this corpus"
lsh_4ranks lshe "lsh --verify exact" --verify exact
# A shard changed after minhash is refused, naming the line, not silently misread: a removed
# document's text changed (its pair is verified, so it is re-read), or the shard cut short.
C="$TMPD/chg"
mkdir -p "$C"
sed "s|^$D/|$C/|" "$L" > "$C/list.txt"
cp "$D"/in-*.jsonl "$C/"
fz=$(awk -F'\t' '$3 == "fuzzy" {print $1, $2; exit}' "$D/lshe1/duplicates.tsv")
"$PY" - "$C/in-${fz% *}.jsonl" "${fz#* }" <<'PYEOF'
import json, sys
lines = open(sys.argv[1]).read().split("\n")
d = json.loads(lines[int(sys.argv[2]) - 1])
d["text"] = "changed " + d["text"]
lines[int(sys.argv[2]) - 1] = json.dumps(d)
open(sys.argv[1], "w").write("\n".join(lines))
PYEOF
run "$GPT3D" curate lsh --shard-list "$C/list.txt" --minhash-dir "$D/mh1" --output-dir "$C/lsh" --verify exact
like "$out" "in-${fz% *}.jsonl line ${fz#* } is not the document that .*shard-0000${fz% *}.mh' signed \(the shard changed after minhash: rerun minhash\)" "--verify exact: a document changed after minhash is an error naming the file and line"
is "$rc" 1 "... exit 1"
cp "$D"/in-*.jsonl "$C/"
head -n 100 "$D/in-3.jsonl" > "$C/in-3.jsonl"
run "$GPT3D" curate lsh --shard-list "$C/list.txt" --minhash-dir "$D/mh1" --output-dir "$C/lsh" --verify exact
like "$out" "the shard '$C/in-3.jsonl' has no line 101, which its signatures .* sign" "--verify exact: a shard cut short after minhash is an error"
is "$rc" 1 "... exit 1"
left=0; [ ! -e "$C/lsh/duplicates.tsv" ] || left=1
is "$left" 0 "no duplicate list after the errors"
run "$GPT3D" curate dedup --shard-list "$L" --lsh-dir "$D/lsh1" --output-dir "$D/dd1"
is "$rc" 0 "dedup, 1 task"
for t in 1 2 3 4 5 6 7 8; do
    run env SLURM_ARRAY_TASK_ID="$t" SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=8 \
        "$GPT3D" curate dedup --shard-list "$L" --lsh-dir "$D/lsh1" --output-dir "$D/dd8"
    [ "$rc" -eq 0 ] || break
done
is "$rc" 0 "dedup, 8 tasks from SLURM_ARRAY_TASK_ID 1..8"
run diff -r "$D/dd1" "$D/dd8"
is "$rc" 0 "dedup: 1 task and 8 tasks write the same bits"
removed=$(grep -vc '^#' "$D/lsh1/duplicates.tsv")
kept=$(cat "$D"/dd1/shard-*.jsonl | wc -l)
is "$kept" "$((3000 - removed))" "dedup kept every document but the $removed listed"
like "$(cat "$D/dd1/shard-00000.report.json")" '"removed_fuzzy": [0-9]+' "dedup's report counts fuzzy removals"
is "$("$PY" -c 'import json,sys; [json.loads(l)["id"] for l in open(sys.argv[1])]; print("ok")' "$D/dd1/shard-00003.jsonl")" ok \
    "dedup keeps the other JSON fields"

# Resumption: everything verifies, so a second run skips every shard and changes nothing.
cp -p "$D/mh1/shard-00002.mh" "$TMPD/before.mh"
cp "$D/lsh1/duplicates.tsv" "$TMPD/duplicates.before"
run "$GPT3D" curate minhash --shard-list "$L" --output-dir "$D/mh1"
like "$out" "0 shards done, 8 skipped" "minhash again: all 8 shards done already, skipped"
run cmp "$TMPD/before.mh" "$D/mh1/shard-00002.mh"
is "$rc" 0 "a skipped shard's output is untouched"
run "$GPT3D" curate lsh --shard-list "$L" --minhash-dir "$D/mh1" --output-dir "$D/lsh1"
like "$out" "is done already" "lsh again: done already, skipped"
rm "$D/mh1/shard-00005.report.json"
run "$GPT3D" curate minhash --shard-list "$L" --output-dir "$D/mh1"
like "$out" "1 shards done, 7 skipped" "a shard without its report is redone, the others skipped"
run "$GPT3D" curate lsh --shard-list "$L" --minhash-dir "$D/mh1" --output-dir "$D/lsh1"
like "$out" "candidate pairs checked" "lsh after new signatures: redone, not skipped"
run cmp "$D/lsh1/duplicates.tsv" "$TMPD/duplicates.before"
is "$rc" 0 "... to the same duplicates (the shard's signatures are the same bits)"
run "$GPT3D" curate minhash --shard-list "$L" --output-dir "$D/mh1" --ngram 3 --task-id 0 --num-tasks 8
like "$out" "1 shards done, 0 skipped" "a changed parameter (--ngram) redoes the task's shard"
run "$GPT3D" curate lsh --shard-list "$L" --minhash-dir "$D/mh1" --output-dir "$D/lshx"
like "$out" "shard-00001.mh' was made with --num-perm 128 --ngram 5 --seed 1; shard 0's with --num-perm 128 --ngram 3" "lsh refuses signatures made with different settings, naming the file"
is "$rc" 2 "... with the usage exit code"

# Settable parameters: --keep first keeps the first of each component; a stricter threshold
# removes fewer.
run "$GPT3D" curate lsh --shard-list "$L" --minhash-dir "$D/mh8" --output-dir "$D/lshf" --keep first --threshold 0.95
is "$rc" 0 "lsh --keep first --threshold 0.95"
nf=$(grep -c 'fuzzy' "$D/lshf/duplicates.tsv" || true)
n1=$(grep -c 'fuzzy' "$D/lsh1/duplicates.tsv" || true)
ok_lt=1; [ "$nf" -lt "$n1" ] && ok_lt=0
is "$ok_lt" 0 "a threshold of 0.95 removes fewer fuzzy duplicates ($nf) than 0.8 ($n1)"
bad2=$(awk -F'\t' '$3 == "fuzzy" && ($4 > $1 || ($4 == $1 && $5 > $2)) {n++} END {print n + 0}' "$D/lshf/duplicates.tsv")
is "$bad2" 0 "--keep first: every removed document comes after the one kept for it"
done_testing

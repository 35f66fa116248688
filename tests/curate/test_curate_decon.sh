#!/bin/sh
# Decontamination (gpt3d curate contam-count -> decontaminate) against the rules in
# docs/curation.md, as a Python reference applies them (tests/curate/ref.py decon), on a corpus
# with task 13-grams planted in the middle, near the start (the short first piece dropped),
# overlapping, 10 and 11 times (split into pieces; dropped), upper-cased with punctuation, and
# in 12 documents (frequent: not contamination); every rare task 13-gram is gone and every
# piece is a part of its input; the report names the task items and where they were found;
# the thresholds are settable; 1 task and 2 tasks write the same bits.
# (top_srcdir, GPT3D, PYTHON_REF come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
PY="$PYTHON_REF"
REF="$top_srcdir/tests/curate/ref.py"
D="$TMPD/d"
"$PY" "$REF" gen-decon "$D"
L="$D/list.txt"
T="$D/tasks.jsonl"

run "$GPT3D" curate contam-count --shard-list "$L" --output-dir "$D/cnt" --task-files "$T"
is "$rc" 0 "contam-count"
like "$out" "6 task items \(0 shorter than 13 words not indexed\), 54 distinct 13-grams" "the task index: 6 items, 54 distinct 13-grams"
run "$GPT3D" curate decontaminate --shard-list "$L" --output-dir "$D/out" --task-files "$T" --counts-dir "$D/cnt"
is "$rc" 0 "decontaminate"
"$PY" "$REF" decon "$D" "$D"
for s in 0 1; do
    run cmp "$D/expected-$s.jsonl" "$D/out/shard-0000$s.jsonl"
    is "$rc" 0 "shard $s: exactly the reference's cuts, splits and drops"
done
run "$PY" "$REF" check-decon "$D" "$D/out"
is "$rc" 0 "no rare task 13-gram is left, and every piece is a part of its input document"
[ "$rc" -eq 0 ] || diag "$out"
r0=$(cat "$D/out/shard-00000.report.json")
r1=$(cat "$D/out/shard-00001.report.json")
like "$r0$r1" '"docs_dropped_too_many_splits": 1' "a document split 11 times is dropped"
like "$r0$r1" '"pieces_dropped_short": 1' "a piece under 200 characters is dropped"
like "$r0$r1" '"matches_ignored_frequent": [1-9]' "n-grams in 10 or more documents are not contamination"
like "$r0$r1" '"item": "[^"]*tasks.jsonl:1", "docs": 1, "example": "[^"]*in-1.jsonl:1"' "the report names a task item and the document it was found in"
like "$r0$r1" '"item": "[^"]*tasks.jsonl:5", "docs": 1' "... also in its upper-cased, punctuated form"

# Settable thresholds: with --frequent 20 the 13-gram of 12 documents is contamination too.
run "$GPT3D" curate decontaminate --shard-list "$L" --output-dir "$D/out20" --task-files "$T" --counts-dir "$D/cnt" --frequent 20
is "$rc" 0 "decontaminate --frequent 20"
like "$(cat "$D"/out20/shard-*.report.json)" '"item": "[^"]*tasks.jsonl:6", "docs": [56]' "--frequent 20: the 12-document 13-gram is cut"
run "$GPT3D" curate decontaminate --shard-list "$L" --output-dir "$D/out11" --task-files "$T" --counts-dir "$D/cnt" --max-splits 11 --margin 50 --min-piece 100
is "$rc" 0 "decontaminate --max-splits 11 --margin 50 --min-piece 100"
is "$(cat "$D"/out11/shard-*.report.json | grep -c '"docs_dropped_too_many_splits": 0,')" 2 "--max-splits 11: no document dropped for its splits"

# Two tasks, same bits.
for t in 0 1; do
    "$GPT3D" curate contam-count --shard-list "$L" --output-dir "$D/cnt2" --task-files "$T" --task-id "$t" --num-tasks 2 2>/dev/null
done
for t in 0 1; do
    run "$GPT3D" curate decontaminate --shard-list "$L" --output-dir "$D/out2" --task-files "$T" --counts-dir "$D/cnt" --task-id "$t" --num-tasks 2
done
run diff -r "$D/cnt" "$D/cnt2"
is "$rc" 0 "contam-count: 1 task and 2 tasks write the same bits"
run diff -r "$D/out" "$D/out2"
is "$rc" 0 "decontaminate: 1 task and 2 tasks write the same bits"

run "$GPT3D" curate decontaminate --shard-list "$L" --output-dir "$D/x" --task-files "$T"
is "$rc" 2 "decontaminate without --counts-dir: a usage error"
like "$out" "--counts-dir is required" "... saying what is missing"
done_testing

#!/bin/sh
# gpt3d curate's text normalisation (src/curate/norm.c) against Python's unicodedata: NFC
# (decomposition, canonical order, composition, Hangul, exclusions, singletons), white space
# collapsed, simple lower-casing, on 5000 random lines; and the exact-duplicate hash seeing an
# NFD and an NFC spelling of one text as the same document.
# (top_srcdir, top_builddir, GPT3D, PYTHON_REF come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
NORM="$top_builddir/tests/curate/curate_norm"
PY="$PYTHON_REF"
"$PY" "$top_srcdir/tests/curate/norm.py" gen 5000 "$TMPD/in.txt"

for mode in nfc lower; do
    flag=""; [ "$mode" = lower ] && flag=--lower
    "$NORM" $flag < "$TMPD/in.txt" > "$TMPD/got.all"
    sed '$d' "$TMPD/got.all" > "$TMPD/got"
    "$PY" "$top_srcdir/tests/curate/norm.py" expect "$TMPD/in.txt" $flag > "$TMPD/want"
    run cmp "$TMPD/got" "$TMPD/want"
    is "$rc" 0 "$mode: 5000 random lines normalised as Python's unicodedata does"
    [ "$rc" -eq 0 ] || diag "$out"
done
like "$(tail -n 1 "$TMPD/got.all")" '^1[5-9]\.[0-9]+\.[0-9]+$' "the tables name their Unicode version"

# NFD and NFC spellings (and white space) of one text are exact duplicates; case matters
# unless --lower.
"$PY" - "$TMPD" <<'PYEOF'
import json, sys, unicodedata
t = "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e and \ud55c\uad6d\uc5b4 text, " * 4
with open(sys.argv[1] + "/s.jsonl", "w") as f:
    f.write(json.dumps({"text": t}) + "\n")
    f.write(json.dumps({"text": unicodedata.normalize("NFD", t) + "  \n"}) + "\n")
    f.write(json.dumps({"text": t.upper()}) + "\n")
PYEOF
echo "$TMPD/s.jsonl" > "$TMPD/list"
for lower in 0 1; do
    flag=""; [ "$lower" = 1 ] && flag=--lower
    run "$GPT3D" curate minhash --shard-list "$TMPD/list" --output-dir "$TMPD/mh$lower" $flag
    is "$rc" 0 "minhash ${flag:-without --lower}"
    run "$GPT3D" curate lsh --shard-list "$TMPD/list" --minhash-dir "$TMPD/mh$lower" --output-dir "$TMPD/lsh$lower" --exact-only
    is "$rc" 0 "lsh --exact-only ${flag:-without --lower}"
    want="0	2	exact	0	1"
    [ "$lower" = 1 ] && want="0	2	exact	0	1
0	3	exact	0	1"
    is "$(grep -v '^#' "$TMPD/lsh$lower/duplicates.tsv")" "$want" "exact duplicates ${flag:-without --lower}: the NFD copy${flag:+ and the upper-case copy}, the first kept"
done

# Words are taken in NFC: a task passage with accents is found in a document that spells it
# decomposed (NFD) and in capitals.
"$PY" - "$TMPD" <<'PYEOF'
import json, sys, unicodedata
item = "Le caf\u00e9 cr\u00e8me br\u00fbl\u00e9e \u00e9tait tr\u00e8s appr\u00e9ci\u00e9 \u00e0 Gen\u00e8ve o\u00f9 les \u00e9l\u00e8ves \u00e9tudiaient la th\u00e9orie des f\u00eates"
d = sys.argv[1]
with open(d + "/tasks.jsonl", "w") as f:
    f.write(json.dumps({"text": item}) + "\n")
pad = " ".join(["the river and the field of stone"] * 40)
with open(d + "/d.jsonl", "w") as f:
    f.write(json.dumps({"text": pad + " " + unicodedata.normalize("NFD", item.upper()) + " " + pad}) + "\n")
    f.write(json.dumps({"text": pad + " nothing here " + pad}) + "\n")
PYEOF
echo "$TMPD/d.jsonl" > "$TMPD/dl"
run "$GPT3D" curate contam-count --shard-list "$TMPD/dl" --output-dir "$TMPD/cnt" --task-files "$TMPD/tasks.jsonl"
is "$rc" 0 "contam-count on an NFD document"
run "$GPT3D" curate decontaminate --shard-list "$TMPD/dl" --output-dir "$TMPD/dec" --task-files "$TMPD/tasks.jsonl" --counts-dir "$TMPD/cnt"
is "$rc" 0 "decontaminate on an NFD document"
like "$(cat "$TMPD/dec/shard-00000.report.json")" '"item": "[^"]*tasks.jsonl:1", "docs": 1, "example": "[^"]*d.jsonl:1"' \
    "the accented passage is found in its decomposed, upper-cased spelling"
done_testing

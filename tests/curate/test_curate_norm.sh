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
done_testing

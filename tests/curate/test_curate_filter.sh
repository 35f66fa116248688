#!/bin/sh
# gpt3d curate filter: one document made to fail each Gopher/C4 rule (and only through that
# rule's measure) beside clean ones: each is dropped and named among its rule's examples, the
# clean ones kept with their other fields; the thresholds are settable; the KJV corpus mostly
# passes at the defaults (the chapters that repeat whole passages, as Numbers 7, do not).
# (top_srcdir, GPT3D, PYTHON_REF, GPT3D_TEST_DATA come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
g3_need_kjv encoder.json kjv.jsonl
PY="$PYTHON_REF"
"$PY" - "$TMPD/f.jsonl" <<'PYEOF'
import json, random, sys
rng = random.Random(5)
voc = ["".join(rng.choice("bcdfghjklmnprstvw") + rng.choice("aeiou") for _ in range(rng.randint(2, 3))) for _ in range(3000)]
stop = ["the", "of", "and", "to", "with", "that"]
def text(n, per_line=20, stops=True):
    w = [rng.choice(voc) if not stops or rng.random() > 0.2 else rng.choice(stop) for _ in range(n)]
    return "\n".join(" ".join(w[i:i + per_line]) for i in range(0, n, per_line))
docs = {
    "good1": text(200), "good2": text(300),
    "words": text(30),
    "mean_word": " ".join(rng.choice(["a", "i", "o", "the", "of"]) for _ in range(120)),
    "symbols": text(200) + " " + " ".join(["#"] * 30),
    "bullets": "\n".join("- " + " ".join(rng.choice(voc) for _ in range(8)) + " the and" for _ in range(12)),
    "ellipsis": "\n".join(" ".join(rng.choice(voc) for _ in range(10)) + " of the" + ("..." if k % 2 else ".") for k in range(12)),
    "dup_lines": "\n".join([text(20)] * 4 + [text(20) for _ in range(4)]),
    "top_ngram": text(200) + " " + " ".join(["zorblax quenth"] * 40),
    "dup_ngram": (lambda p: text(100) + "\n" + p + "\n" + text(100) + "\n" + p)(text(60, stops=True)),
    "stop_words": text(200, stops=False),
    "alpha_words": text(150) + " " + " ".join(str(rng.randint(10, 999)) for _ in range(60)),
}
with open(sys.argv[1], "w") as f:
    for k, t in docs.items():
        f.write(json.dumps({"id": k, "text": t, "src": "synthetic"}) + "\n")
PYEOF
echo "$TMPD/f.jsonl" > "$TMPD/list"
run "$GPT3D" curate filter --shard-list "$TMPD/list" --output-dir "$TMPD/out"
is "$rc" 0 "filter"
is "$("$PY" -c 'import json,sys; print(" ".join(json.loads(l)["id"] for l in open(sys.argv[1])))' "$TMPD/out/shard-00000.jsonl")" "good1 good2" \
    "only the clean documents are kept, with their fields"
rep="$TMPD/out/shard-00000.report.json"
for rule in words mean_word symbols bullets ellipsis dup_lines top_ngram dup_ngram stop_words alpha_words; do
    line=$(awk -v r="$rule" '$1 == r {print $2}' <<EOF2
words 3
mean_word 4
symbols 5
bullets 6
ellipsis 7
dup_lines 8
top_ngram 9
dup_ngram 10
stop_words 11
alpha_words 12
EOF2
)
    got=$("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["rules"][sys.argv[2]]; print(r["failed"] >= 1 and any(e.endswith(":" + sys.argv[3]) for e in r["examples"]))' "$rep" "$rule" "$line")
    is "$got" True "rule $rule: its document (line $line) fails it and is named among its examples"
done
is "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["docs_out"])' "$rep")" 2 "the report counts 2 documents out"

# Thresholds are settable: with a lower word minimum and the stop-word test off, 'words' and
# 'stop_words' pass.
run "$GPT3D" curate filter --shard-list "$TMPD/list" --output-dir "$TMPD/out2" --min-words 10 --min-stop-words 0
is "$rc" 0 "filter --min-words 10 --min-stop-words 0"
is "$("$PY" -c 'import json,sys; print(" ".join(json.loads(l)["id"] for l in open(sys.argv[1])))' "$TMPD/out2/shard-00000.jsonl")" "good1 good2 words stop_words" \
    "the two relaxed rules let their documents through"
run "$GPT3D" curate filter --shard-list "$TMPD/list" --output-dir "$TMPD/out3" --max-top-ngram 0.2 0.18
is "$rc" 2 "--max-top-ngram takes three values"

# The KJV: most chapters pass.
echo "$K/kjv.jsonl" > "$TMPD/kjv.list"
run "$GPT3D" curate filter --shard-list "$TMPD/kjv.list" --output-dir "$TMPD/kjv"
is "$rc" 0 "filter on the KJV"
kept=$(wc -l < "$TMPD/kjv/shard-00000.jsonl")
ok_k=1; [ "$kept" -gt 1000 ] && ok_k=0
is "$ok_k" 0 "the KJV: $kept of 1189 chapters pass the default filters"
like "$(cat "$TMPD/kjv/shard-00000.report.json")" 'kjv.jsonl:[0-9]+' "the report names example chapters"
done_testing

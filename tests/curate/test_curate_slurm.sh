#!/bin/bash
# sbatch/gpt3d-curate.sbatch on a private Slurm cluster of 2 nodes (tests/slurm/cluster.sh):
# the KJV corpus in 4 shards with planted exact and near duplicates and a task file goes
# through minhash (array of 2) -> lsh (2 ranks, srun --mpi=pmix) -> dedup -> contam-count ->
# decontaminate -> filter (arrays) -> preprocess, chained by dependencies; the outputs are
# bitwise those of the stages run here one by one; --status says complete; a second submission
# submits nothing; a stage whose outputs are gone is submitted again with the stages after it,
# and only those.
# (top_srcdir, GPT3D, PYTHON_REF, GPT3D_TEST_DATA come from make check.)
# shellcheck disable=SC2154
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
# shellcheck source=tests/slurm/cluster.sh
. "$top_srcdir/tests/slurm/cluster.sh"
set -eo pipefail
g3_need_kjv encoder.json vocab.bpe kjv.jsonl
CUR="$top_srcdir/sbatch/gpt3d-curate.sbatch"
G3C_SLURMD_TIMEOUT=3
g3c_need 2
W=$G3C_WORK
cd "$W"

# The corpus: 4 shards of KJV chapters; 20 exact copies and 20 copies with a few words changed
# in the last shard; a task file holding a passage of John 3.
"$PYTHON_REF" - "$K/kjv.jsonl" "$W" <<'PYEOF'
import json, random, sys
rng = random.Random(3)
docs = [json.loads(l) for l in open(sys.argv[1])]
extra = []
for d in rng.sample(docs, 20):
    extra.append(dict(d))
for d in rng.sample(docs, 20):
    w = d["text"].split(" ")
    for _ in range(3):
        w[rng.randrange(len(w))] = "changed"
    extra.append(dict(d, text=" ".join(w)))
allx = docs + extra
with open(sys.argv[2] + "/list.txt", "w") as lst:
    for s in range(4):
        p = "%s/in-%d.jsonl" % (sys.argv[2], s)
        lst.write(p + "\n")
        with open(p, "w") as f:
            for d in allx[s * len(allx) // 4:(s + 1) * len(allx) // 4]:
                f.write(json.dumps(d) + "\n")
with open(sys.argv[2] + "/tasks.jsonl", "w") as f:
    f.write(json.dumps({"text": "For God so loved the world, that he gave his only begotten Son, that whosoever believeth in him should not perish"}) + "\n")
PYEOF

sub() { "$CUR" --gpt3d "$GPT3D" "$@"; }
run sub --shard-list "$W/list.txt" --tasks 2 --lsh-ranks 2 --task-files "$W/tasks.jsonl" \
    --vocab-file "$K/encoder.json" --merge-file "$K/vocab.bpe" "$W/cur"
is "$rc" 0 "gpt3d-curate.sbatch submits"
like "$out" "preprocess: submitted job [0-9]+ \(after [0-9]+\)" "... the last stage, preprocess, after the one before"
is "$(cut -d' ' -f1 "$W/cur/jobs" | tr '\n' ' ')" "minhash lsh dedup contam-count decontaminate filter preprocess " \
    "seven jobs, one per stage, in order"
last=$(tail -n 1 "$W/cur/jobs" | cut -d' ' -f2)
g3c_wait_job "$last" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' 600 || true
is "$(g3c_job_field "$last" JobState)" COMPLETED "the chain runs to its end (preprocess COMPLETED)"
if [ "$(g3c_job_field "$last" JobState)" != COMPLETED ]; then
    "$CUR" --status "$W/cur" 2>&1 | sed 's/^/#   /' || true
    tail -n 5 "$W"/cur/logs/* 2>&1 | sed 's/^/#   /' || true
fi
run sub --status "$W/cur"
like "$out" "^complete$" "--status: complete"
like "$out" "lsh +1/1 done \(job [0-9]+: (COMPLETED|gone)\)" "--status names each stage's job and its state"
like "$(cat "$W"/cur/logs/lsh-*)" "\[rank 0/2\] curate lsh: " "lsh ran as 2 ranks"
ok_idx=1; [ -s "$W/cur/data/curated_text_document.idx" ] && ok_idx=0
is "$ok_idx" 0 "preprocess wrote the indexed dataset of the curated shards"

# The same stages here, one task and one rank: the same bits.
L="$W/local"
mkdir -p "$L"
"$GPT3D" curate minhash --shard-list "$W/list.txt" --output-dir "$L/mh" 2>/dev/null
"$GPT3D" curate lsh --shard-list "$W/list.txt" --minhash-dir "$L/mh" --output-dir "$L/lsh" 2>/dev/null
"$GPT3D" curate dedup --shard-list "$W/list.txt" --lsh-dir "$L/lsh" --output-dir "$L/dedup" 2>/dev/null
run cmp "$L/lsh/duplicates.tsv" "$W/cur/lsh/duplicates.tsv"
is "$rc" 0 "duplicates.tsv from 2 array tasks and 2 lsh ranks is bitwise the local one"
like "$(cat "$L/lsh/report.json")" '"removed_exact": 20' "the 20 planted exact copies are found"
like "$(cat "$L/lsh/report.json")" '"removed_fuzzy": (19|20|21)' "... and the 20 changed copies"
for i in 0 1 2 3; do echo "$L/dedup/shard-0000$i.jsonl"; done > "$L/dedup.txt"
"$GPT3D" curate contam-count --shard-list "$L/dedup.txt" --output-dir "$L/cnt" --task-files "$W/tasks.jsonl" 2>/dev/null
"$GPT3D" curate decontaminate --shard-list "$L/dedup.txt" --output-dir "$L/dec" --task-files "$W/tasks.jsonl" --counts-dir "$L/cnt" 2>/dev/null
for i in 0 1 2 3; do echo "$L/dec/shard-0000$i.jsonl"; done > "$L/dec.txt"
"$GPT3D" curate filter --shard-list "$L/dec.txt" --output-dir "$L/filter" 2>/dev/null
same=0
for i in 0 1 2 3; do cmp -s "$L/filter/shard-0000$i.jsonl" "$W/cur/filter/shard-0000$i.jsonl" || same=1; done
is "$same" 0 "the filtered shards are bitwise those of the stages run here"
like "$(cat "$W"/cur/decontaminate/shard-*.report.json)" '"item": "[^"]*tasks.jsonl:1", "docs": 1' "the task passage was found and cut"

run sub "$W/cur"
like "$out" "every stage is done: nothing to submit" "a second submission submits nothing"
rm "$W/cur/decontaminate/shard-00002.report.json"
run sub "$W/cur"
like "$out" "decontaminate: submitted" "a stage whose outputs are gone is submitted again"
is "$(tail -n 3 "$W/cur/jobs" | cut -d' ' -f1 | tr '\n' ' ')" "decontaminate filter preprocess " "... with the stages after it, and only those"
last=$(tail -n 1 "$W/cur/jobs" | cut -d' ' -f2)
g3c_wait_job "$last" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' 300 || true
is "$(g3c_job_field "$last" JobState)" COMPLETED "the resumed chain completes"
like "$(cat "$W"/cur/logs/decontaminate-*)" "1 shards done, 1 skipped" "the resumed stage redoes only the missing shard"
run sub --status "$W/cur"
like "$out" "^complete$" "--status: complete again"
run sub "$W/new"
is "$rc" 2 "a new work directory without --shard-list is a usage error"
done_testing

#!/bin/bash
# Benchmark of gpt3d curate (not a test; results go to docs/benchmarks.md with the command and
# the date).  From the build directory:
#   bash ../tests/curate/bench_curate.sh [MB...]      (default: 10 40 160)
# For each corpus size (synthetic, tests/curate/bench_corpus.py gen): wall and CPU (user)
# seconds of every stage, one task, one thread; the slope of the pipeline's CPU time against
# the size (log-log); minhash MB/s per core; the pure-Python MinHash reference on 2 MB (the
# per-document approach of Megatron-LM's find_duplicates.py); lsh memory at 1 million short
# documents, alone and with 4 ranks (peak RSS less the binary's own at start-up).
# Needs /usr/bin/time, python3 and, for 4 ranks, mpirun.  Scratch in $TMPDIR (removed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
G=${GPT3D:-$PWD/src/gpt3d}
PY=${PYTHON_REF:-/usr/bin/python3}
sizes=("$@")
[ "${#sizes[@]}" -gt 0 ] || sizes=(10 40 160)
T=$(mktemp -d "${TMPDIR:-/tmp}/bench-curate.XXXXXX")
trap 'rm -rf "$T"' EXIT
[ -x "$G" ] || { echo "no gpt3d at $G (run from the build directory or set GPT3D)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# t OUT CMD...: run CMD, append "wall user rss_kb" to OUT.
t() { local out=$1; shift; /usr/bin/time -f "%e %U %M" -a -o "$out" "$@" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; exit 1; }; }
base_rss=$(/usr/bin/time -f "%M" "$G" --version 2>&1 >/dev/null | tail -n 1)

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), gpt3d $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
printf 'task file: one passage of 40 words taken from the corpus\n'
printf '%8s %8s | %-21s %-21s %-21s %-21s %-21s %-21s | %s\n' MB docs minhash lsh dedup contam-count decontaminate filter "total wall/user s"
for mb in "${sizes[@]}"; do
    d=$T/c$mb
    shards=$(( mb / 10 )); [ "$shards" -ge 4 ] || shards=4
    docs=$("$PY" "$here/bench_corpus.py" gen "$d" "$mb" "$shards" | cut -d' ' -f1)
    "$PY" - "$d" <<'PYEOF'
import json, sys
line = open(sys.argv[1] + "/bench-000.jsonl").readline()
w = json.loads(line)["text"].split()
open(sys.argv[1] + "/tasks.txt", "w").write(" ".join(w[10:50]) + "\n")
PYEOF
    L=$d/list.txt
    rm -f "$T/times"
    t "$T/times" "$G" curate minhash --shard-list "$L" --output-dir "$d/mh"
    t "$T/times" "$G" curate lsh --shard-list "$L" --minhash-dir "$d/mh" --output-dir "$d/lsh"
    t "$T/times" "$G" curate dedup --shard-list "$L" --lsh-dir "$d/lsh" --output-dir "$d/dd"
    ls "$d"/dd/shard-*.jsonl > "$d/dd.txt"
    t "$T/times" "$G" curate contam-count --shard-list "$d/dd.txt" --output-dir "$d/cnt" --task-files "$d/tasks.txt"
    t "$T/times" "$G" curate decontaminate --shard-list "$d/dd.txt" --output-dir "$d/dec" --task-files "$d/tasks.txt" --counts-dir "$d/cnt"
    ls "$d"/dec/shard-*.jsonl > "$d/dec.txt"
    t "$T/times" "$G" curate filter --shard-list "$d/dec.txt" --output-dir "$d/flt" --allow-empty
    row=$(awk '{printf "%6.2f/%-6.2f %6d MB  ", $1, $2, $3 / 1024; w += $1; u += $2} END {printf "| %.2f/%.2f", w, u}' "$T/times")
    printf '%8s %8s | %s\n' "$mb" "$docs" "$row"
    awk -v mb="$mb" '{u += $2} NR == 1 {mu = $2} END {print mb, u, mu}' "$T/times" >> "$T/scaling"
    rm -rf "$d"
done
"$PY" - "$T/scaling" <<'PYEOF'
import math, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
for mb, u, mu in rows:
    print("%6.0f MB: pipeline %.2f s CPU = %.1f MB/s; minhash %.1f MB/s per core" % (mb, u, mb / u, mb / mu))
if len(rows) > 1:
    xs = [math.log(r[0]) for r in rows]; ys = [math.log(r[1]) for r in rows]
    n = len(rows); mx = sum(xs) / n; my = sum(ys) / n
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print("log-log slope of pipeline CPU time against size: %.3f (1 = linear); %.3f s per 100 MB at the largest size" % (slope, 100 * rows[-1][1] / rows[-1][0]))
PYEOF

# The Python reference on 2 MB, against minhash on the same 2 MB.
d=$T/py
"$PY" "$here/bench_corpus.py" gen "$d" 2 1 >/dev/null
echo "$d/bench-000.jsonl" > "$d/one.txt"
rm -f "$T/times"
t "$T/times" "$G" curate minhash --shard-list "$d/one.txt" --output-dir "$d/mh"
py=$("$PY" "$here/bench_corpus.py" pyminhash "$d/bench-000.jsonl")
awk -v py="$py" '{split(py, p, " "); printf "minhash on %s MB: %.3f s CPU (%.1f MB/s); pure-Python MinHash: %s s CPU (%s MB/s): %.0fx\n", p[1], $2, p[1] / $2, p[3], p[5], (p[1] / $2) / p[5]}' "$T/times"

# lsh memory at 1 million short documents.
d=$T/tiny
"$PY" "$here/bench_corpus.py" gen-tiny "$d" 1000000
"$G" curate minhash --shard-list "$d/list.txt" --output-dir "$d/mh" 2>/dev/null
rm -f "$T/times"
t "$T/times" "$G" curate lsh --shard-list "$d/list.txt" --minhash-dir "$d/mh" --output-dir "$d/lsh1"
awk -v b="$base_rss" '{printf "lsh, 1 rank, 1000000 documents: %.1f s wall, %.1f s CPU, peak RSS %.0f MB (%.0f MB above the binary at start-up, %.0f MB)\n", $1, $2, $3 / 1024, ($3 - b) / 1024, b / 1024}' "$T/times"
if command -v mpirun >/dev/null 2>&1; then
    rm -f "$T/times"
    mpirun --oversubscribe -np 4 /usr/bin/time -f "%e %U %M" -a -o "$T/times" "$G" curate lsh --shard-list "$d/list.txt" --minhash-dir "$d/mh" --output-dir "$d/lsh4" >/dev/null 2>&1
    cmp "$d/lsh1/duplicates.tsv" "$d/lsh4/duplicates.tsv" && echo "lsh, 4 ranks: the same duplicates.tsv"
    awk -v b="$base_rss" '{if ($3 > m) m = $3; if ($1 > w) w = $1} END {printf "lsh, 4 ranks, 1000000 documents: %.1f s wall, largest rank peak RSS %.0f MB (%.0f MB above start-up)\n", w, m / 1024, (m - b) / 1024}' "$T/times"
fi

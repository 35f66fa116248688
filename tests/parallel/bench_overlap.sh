#!/bin/sh
# DP 2 time per iteration with and without --overlap-grad-reduce and --overlap-param-gather
# (docs/benchmarks.md, "Overlapped data-parallel reduction"): five configurations run in turn,
# ROUNDS times (default 5); each line is one run's median ms per iteration over iterations
# 3-20, and the summary the best and the median of the rounds per configuration.
# Run from a build directory: sh ../tests/parallel/bench_overlap.sh (needs
# tests/train/mkdata: make check builds it).
set -eu
B=${BUILD:-.}
W=${TMPDIR:-/tmp}/gpt3d-overlap-bench
mkdir -p "$W"
rm -f "$W/all.txt"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
export top_builddir="$B" OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ ! -f "$W/data/verses.bin" ]; then
    top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)   # par_lib.sh sources tests/lib.sh there
    # shellcheck source=tests/parallel/par_lib.sh
    . "$top_srcdir/tests/parallel/par_lib.sh"
    par_corpus "$W/data"
fi
D=$W/data
flags="--data-path $D/verses --vocab-file $D/vocab.json --merge-file $D/merges.txt --split 90,5,5
 --num-layers 4 --hidden-size 192 --num-attention-heads 8 --seq-length 128
 --make-vocab-size-divisible-by 128 --micro-batch-size 4 --global-batch-size 16 --train-iters 20
 --lr 3e-4 --log-interval 5 --eval-iters 1 --eval-interval 1000"
for round in $(seq "${ROUNDS:-5}"); do
    for cfg in "plain" "buckets --ddp-bucket-size 500000" \
               "overlap --ddp-bucket-size 500000 --overlap-grad-reduce" \
               "zero_buckets --use-distributed-optimizer --ddp-bucket-size 500000" \
               "zero_overlap --use-distributed-optimizer --ddp-bucket-size 500000 --overlap-grad-reduce --overlap-param-gather"; do
        # shellcheck disable=SC2086
        set -- $cfg
        name=$1
        shift
        # shellcheck disable=SC2086
        mpirun --oversubscribe --bind-to none -x OMP_NUM_THREADS -np 2 "$B/src/gpt3d" train $flags \
            --metrics-file "$W/$name.$round.jsonl" "$@" >/dev/null 2>&1
        # median ms per iteration over iterations 3..20
        ms=$(grep '"event":"train"' "$W/$name.$round.jsonl" | awk -F'"ms_per_iter":' 'NR > 2 { split($2, a, ","); print a[1] }' |
             sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
        echo "round $round $name $ms ms/iter"
        echo "$name $ms" >> "$W/all.txt"
        rm -f "$W/$name.$round.jsonl"
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
for name in plain buckets overlap zero_buckets zero_overlap; do
    awk -v n="$name" '$1 == n { print $2 }' "$W/all.txt" | sort -n |
        awk -v n="$name" '{ v[NR] = $1 } END { printf "%-13s best %8.1f  median %8.1f ms/iter (%d rounds)\n", n, v[1], v[int((NR + 1) / 2)], NR }'
done

#!/bin/sh
# Training speed of the parallel layouts on this machine: tokens/s of a fixed small GPT on
# 1 rank and on 2 and 4 ranks in each pure layout (TP, PP, DP), and the pipeline bubble
# measured against 1F1B's (p - 1) / m for several micro-batch counts.  Prints a Markdown
# table (docs/benchmarks.md, "Parallel layouts").  Runs under make check-long, or by hand:
#   top_srcdir=. top_builddir=build GPT3D=build/src/gpt3d MPIRUN=mpirun \
#       sh tests/parallel/bench_parallel.sh
# Environment: BENCH_ITERS (6; the speed is the mean of the second half), BENCH_LAYERS (4),
# BENCH_HIDDEN (192), BENCH_SEQ (128), BENCH_ROUNDS (2: each configuration keeps its best).
# shellcheck disable=SC2154,SC2086
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

g3_need_mpirun
g3_tmpdir
mk="$top_builddir/tests/train/mkdata"
[ -x "$mk" ] || skip_all "$mk is not built (make tests/train/mkdata)"
iters=${BENCH_ITERS:-6}
half=$((iters / 2))
L=${BENCH_LAYERS:-4}
H=${BENCH_HIDDEN:-192}
S=${BENCH_SEQ:-128}
D="$TMPD/data"
g3_byte_corpus "$D" chapter 3000
flags="--data-path $D/verses --vocab-file $D/vocab.json --merge-file $D/merges.txt --split 98,2,0
 --num-layers $L --hidden-size $H --num-attention-heads 8 --seq-length $S
 --make-vocab-size-divisible-by 128 --micro-batch-size 4 --train-iters $iters --lr 1e-3
 --log-interval $half --eval-iters 0"
ncpu=$(nproc)

# bench NAME NP THREADS GBS [FLAGS...]: sets $res to "tokens/s bubble% formula%"
bench() {
    name=$1 np=$2 th=$3 gbs=$4
    shift 4
    # shellcheck disable=SC2086
    if [ "$np" = 1 ]; then
        run env OMP_NUM_THREADS="$th" "$GPT3D" train $flags --global-batch-size "$gbs" \
            --metrics-file "$TMPD/$name.jsonl" "$@"
    else
        OMP_NUM_THREADS="$th" run g3_mpirun --bind-to none -x OMP_NUM_THREADS \
            -np "$np" "$GPT3D" train $flags --global-batch-size "$gbs" \
            --metrics-file "$TMPD/$name.jsonl" "$@"
    fi
    if [ "$rc" -ne 0 ]; then
        tap_result 1 "$name runs"
        printf '%s\n' "$out" | tail -5 | sed 's/^/#   /'
        res="- - -"
        return
    fi
    tap_result 0 "$name runs"
    tps=$(grep '"event":"train"' "$TMPD/$name.jsonl" | tail -n 1 | sed 's/.*"tokens_per_s":\([0-9.]*\).*/\1/')
    bub=$(printf '%s\n' "$out" | sed -n 's/.*pipeline bubble on rank 0 (stage 0): \([0-9.]*\)% .* = \([0-9.]*\)%.*/\1 \2/p')
    res="$tps ${bub:-- -}"
}

T=--tensor-model-parallel-size
P=--pipeline-model-parallel-size
rounds=${BENCH_ROUNDS:-2}
# the configurations: NAME NP THREADS GBS FLAGS... | LABEL
configs="r1t1 1 1 32 | 1 rank, 1 thread
r1tn 1 $ncpu 32 | 1 rank, $ncpu threads"
for n in 2 4; do
    th=$((ncpu / n)); [ "$th" -ge 1 ] || th=1
    configs="$configs
dp$n $n $th 32 | DP $n
tp$n $n $th 32 $T $n | TP $n
pp$n $n $th 32 $P $n | PP $n (m = 8)"
done
for m in 2 4 16; do
    configs="$configs
pp2m$m 2 1 $((4 * m)) $P 2 | PP 2 (m = $m)"
done
configs="$configs
pp4m16 4 1 64 $P 4 | PP 4 (m = 16)"

# Every round runs every configuration once, in turn, so that a change in the machine's
# load hits all of them; each keeps its best round.
r=1
while [ $r -le "$rounds" ]; do
    echo "# round $r: $(uptime | sed 's/.*load/load/')"
    while IFS='|' read -r cmd label; do
        bench $cmd </dev/null
        echo "$res" >> "$TMPD/$(echo $cmd | cut -d' ' -f1).all"
    done <<EOF
$configs
EOF
    r=$((r + 1))
done

echo "# model: $L layers, hidden $H, 8 heads, sequence $S, byte vocabulary (261 -> 384), micro-batch 4; $ncpu CPUs; best of $rounds rounds"
echo "#"
echo "# | layout | ranks | global batch | tokens/s | bubble measured vs (p-1)/m |"
echo "# |---|---|---|---|---|"
while IFS='|' read -r cmd label; do
    set -- $cmd
    best=$(sort -k1,1 -g -r "$TMPD/$1.all" | head -n 1)
    set -- $1 $2 $4 $best
    if [ "$5" = "-" ] || [ -z "$5" ]; then bub=""; else bub="$5% vs $6%"; fi
    echo "# |${label} | $2 | $3 | ${4%.*} | $bub |"
done <<EOF
$configs
EOF
done_testing

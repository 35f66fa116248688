#!/bin/bash
# gpt3d train under srun --mpi=pmix on the private Slurm cluster of tests/slurm/cluster.sh
# (4 nodes of 2 CPUs, 2 nodes per leaf switch): TP 2 x PP 2 x DP 2 over 4 nodes x 2 ranks
# trains the one-rank model (loss curve and gradients of step 1 within 1e-5), with the
# tensor-parallel groups inside the nodes and the ranks placed from SLURM_TOPOLOGY_ADDR; and
# a layout that does not divide gets one error from rank 0.  Skips where no cluster starts.
# (top_srcdir and friends come from make check.)
# shellcheck disable=SC2154,SC2034
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
# shellcheck source=tests/slurm/cluster.sh
. "$top_srcdir/tests/slurm/cluster.sh"
set -eo pipefail
mk="$top_builddir/tests/train/mkdata"
check="$top_builddir/tests/parallel/grad_check"

G3C_SLURMD_TIMEOUT=3
g3c_need 4
tap_result 0 "a private cluster of 4 nodes starts"
W="$G3C_WORK"
cd "$W"

g3_byte_corpus "$W" day 300
flags=(--data-path "$W/verses" --vocab-file "$W/vocab.json" --merge-file "$W/merges.txt"
       --split "90,5,5" --num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 32
       --make-vocab-size-divisible-by 6 --micro-batch-size 2 --global-batch-size 16
       --train-iters 10 --lr 3e-3 --log-interval 1 --eval-iters 1 --eval-interval 100
       --distributed-timeout-minutes 2)
export OMP_NUM_THREADS=1

run "$GPT3D" train "${flags[@]}" --metrics-file "$W/ref.jsonl" --debug-grad-dump "$W/ref"
is "$rc" 0 "the one-rank reference exits 0"

run srun --mpi=pmix -N 4 --ntasks-per-node 2 "$GPT3D" train "${flags[@]}" \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
    --metrics-file "$W/run.jsonl" --debug-grad-dump "$W/run"
is "$rc" 0 "srun --mpi=pmix, 4 nodes x 2: TP 2 x PP 2 x DP 2 exits 0"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -15 | sed 's/^/#   /'
like "$out" 'layout: TP 2 x PP 2 x DP 2 = 8 ranks on 4 nodes x 2 \(n\[1-4\]' "the layout spans the 4 nodes"
worst=$(awk -F'"loss":' 'FNR == 1 { f++ } /"event":"train"/ { split($2, a, ","); v = a[1] + 0;
        if (f == 1) r[++n] = v; else { m++; d = v - r[m]; if (d < 0) d = -d; d /= r[m]; if (d > w) w = d } }
        END { if (m != 10 || n != 10) print "mismatch"; else printf "%.3g", w }' "$W/ref.jsonl" "$W/run.jsonl")
ok=1; awk -v w="$worst" 'BEGIN { exit !(w + 0 <= 1e-5) }' || ok=0
[ "$worst" != mismatch ] || ok=0
is "$ok" 1 "the loss curve of one rank within 1e-5 over 10 iterations (max $worst)"
gout=$("$check" "$W/ref" "$W/run" 2>&1) && grc=0 || grc=$?
is "$grc" 0 "gradients of step 1 within 1e-5 ($(printf '%s\n' "$gout" | tail -n 1))"

run srun --mpi=pmix -N 3 --ntasks-per-node 1 "$GPT3D" train "${flags[@]}" \
    --tensor-model-parallel-size 2 --metrics-file "$W/bad.jsonl"
is "$rc" 2 "3 ranks with TP 2: exit 2"
is "$(printf '%s\n' "$out" | grep -c '^\[rank [0-9]*/[0-9]*\] error:')" 1 \
    "... and one gpt3d error in the whole job (srun adds its own lines per task)"
like "$out" "impossible layout: the job's 3 ranks cannot be split" "... saying what to change"

g3c_stop
done_testing

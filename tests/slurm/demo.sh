#!/bin/bash
# tests/slurm/demo.sh: watch a chained, requeued gpt3d run on a private Slurm
# cluster started on this machine -- no real cluster needed (root, Debian's
# slurmctld, slurmd, slurm-client and munge; see docs/slurm.md).
#
#   tests/slurm/demo.sh [BUILD_DIR]     # BUILD_DIR: a built gpt3d tree (default: ./build)
#
# It starts a 4-node cluster (tests/slurm/cluster.sh), submits a run as a
# chain of 2 jobs with gpt3d-submit, sends the first job the warning signal
# that Slurm sends before a time limit (the job saves a checkpoint and the
# next job of the chain resumes from it), then requeues the running job with
# "scontrol requeue" (Slurm does the same after a node failure: the job starts
# again and resumes from the last checkpoint), and prints gpt3d-submit
# --status after each step.  The cluster is stopped at the end (G3C_KEEP=1
# leaves it running to look around).
#
# The trainer is the real "gpt3d train" of BUILD_DIR: a tiny GPT (2 layers,
# hidden size 32) on the test corpus that "make check" builds into
# BUILD_DIR/tests/_data/kjv (or $GPT3D_TEST_DATA/kjv), one rank per node, DP 2
# with ZeRO-1 (--use-distributed-optimizer).
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
top_srcdir=$(cd "$here/../.." && pwd -P)
build=${1:-$top_srcdir/build}
build=$(cd "$build" 2>/dev/null && pwd -P) || { echo "demo: build directory '${1:-$top_srcdir/build}' does not exist; build gpt3d first (or name its build directory)" >&2; exit 2; }
SUBMIT=$build/sbatch/gpt3d-submit
[ -x "$SUBMIT" ] || { echo "demo: $SUBMIT is missing; run make in $build first" >&2; exit 2; }
export GPT3D_SBATCH_DIR=$top_srcdir/sbatch   # gpt3d-submit's library (sbatch/lib), not installed
GPT3D=$build/src/gpt3d
[ -x "$GPT3D" ] || { echo "demo: $GPT3D is missing; run make in $build first" >&2; exit 2; }
K=${GPT3D_TEST_DATA:-$build/tests/_data}/kjv
[ -f "$K/kjv_text_document.idx" ] || { echo "demo: the test corpus $K is missing; run 'make check' in $build once (it builds it), or set GPT3D_TEST_DATA" >&2; exit 2; }
export OMP_NUM_THREADS=1

# shellcheck source=cluster.sh
. "$here/cluster.sh"
if ! g3c_check; then echo "demo: cannot start a private Slurm cluster here: $g3c_why" >&2; exit 1; fi
# The health check's communication test runs this build's gpt3d.
if [ -x "$build/src/gpt3d" ]; then PATH=$build/src:$PATH; fi

step() { printf '\n==== %s\n' "$*"; }
status() { "$SUBMIT" --status "$RUN" | sed 's/^/    /'; }
# iters: the last iteration in the run's metrics.jsonl
iters() { { grep '"event":"train"' "$RUN/metrics.jsonl" 2>/dev/null || true; } | tail -n 1 | sed -n 's/.*"iteration":\([0-9]*\),.*/\1/p' | grep . || echo 0; }

cat <<'EOF'
The trainer is the real "gpt3d train" (a tiny GPT on the test corpus, CPU,
one rank per node).  On a real cluster only the model, the data and the
node counts change.
EOF

step "Starting a private Slurm cluster of 4 nodes"
g3c_start 4 || { echo "demo: the cluster did not start: $g3c_why" >&2; exit 1; }
echo "    directory $G3C_DIR (removed at the end); SLURM_CONF=$SLURM_CONF"
sinfo | sed 's/^/    /'

RUN=$G3C_WORK/demo-run
step "gpt3d-submit --chain 2 -N 2 $RUN -- --train-iters 200 --save-interval 10 ..."
"$SUBMIT" --job-script "$top_srcdir/sbatch/gpt3d-train.sbatch" --train-command "$GPT3D train" \
    --chain 2 -N 2 "$RUN" -- --data-path "$K/kjv_text_document" --vocab-file "$K/encoder.json" \
    --merge-file "$K/vocab.bpe" --split "90,5,5" --num-layers 2 --hidden-size 32 --num-attention-heads 4 \
    --seq-length 32 --micro-batch-size 2 --global-batch-size 8 --train-iters 200 --lr 3e-3 \
    --lr-warmup-iters 10 --lr-decay-style cosine --log-interval 1 --eval-iters 2 --eval-interval 100 \
    --use-distributed-optimizer --save-interval 10 | sed 's/^/    /'
squeue | sed 's/^/    /'

g3c_wait 60 sh -c "grep -q '\"iteration\":30,' '$RUN/metrics.jsonl'" || true
first=$(sed -n 1p "$RUN/chain")
step "The first job ($first) is training ($(iters) iterations so far)"
status

step "Sending job $first the warning signal (scancel --batch --signal=USR2)"
echo "    On a real cluster Slurm sends it itself, --signal=B:USR2@300 seconds before the time limit."
scancel --batch --signal=USR2 "$first"
g3c_wait 30 sh -c "grep -q checkpointed '$RUN/attempts.tsv' 2>/dev/null" || true
g3c_wait 30 sh -c "[ -s '$RUN/current-attempt' ]" || true
g3c_wait 30 sh -c "grep -q '\"iteration\":$(($(iters) + 30)),' '$RUN/metrics.jsonl'" || true
second=$(sed -n 2p "$RUN/chain")
step "Job $first saved a checkpoint and ended (exit 75); job $second resumed from it"
status

step "Requeueing the running job $second (scontrol requeue), as Slurm does after a node failure"
scontrol requeue "$second"
g3c_wait 60 sh -c "[ \$(cut -f3 '$RUN/current-attempt' 2>/dev/null || echo 0) = 1 ]" || true
step "Job $second runs again (restart 1) from the last checkpoint"
status

g3c_wait 120 sh -c "[ -e '$RUN/COMPLETE' ] || [ -e '$RUN/FAILED' ]" || true
step "The run's end"
status
echo
echo "    $RUN/summary.txt:"
sed 's/^/    /' "$RUN/summary.txt" 2>/dev/null || echo "    (no summary: the run did not end in time)"
echo
if [ -n "${G3C_KEEP:-}" ]; then
    echo "The cluster keeps running (G3C_KEEP): export SLURM_CONF=$SLURM_CONF; stop it with: $here/cluster.sh stop $G3C_DIR"
fi

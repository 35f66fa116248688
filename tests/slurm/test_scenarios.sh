#!/bin/bash
# The REAL trainer ("$GPT3D train": a tiny model, a few iterations, the test
# corpus $GPT3D_TEST_DATA/kjv) through gpt3d-submit on a private Slurm
# cluster, one rank per node, compared with an uninterrupted single
# "gpt3d train" run outside Slurm:
# (1) the warning signal arrives during training -> the trainer saves a
#     checkpoint and exits 75 -> the next job of the chain resumes -> the run
#     completes with the uninterrupted run's losses (bitwise: one rank, CPU);
# (3) elastic, with ZeRO-1: the first job runs on 2 nodes (DP 2, 2 micro-batches
#     accumulated), the warning signal ends it, the next job gets 4 nodes
#     (DP 4, no accumulation): the global batch is kept and the losses continue
#     within 1e-5 of the uninterrupted run.
# (top_srcdir, top_builddir, GPT3D and GPT3D_TEST_DATA come from make check.)
# shellcheck disable=SC2154
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
# shellcheck source=tests/slurm/cluster.sh
. "$top_srcdir/tests/slurm/cluster.sh"
set -e

K=${GPT3D_TEST_DATA:-$top_builddir/tests/_data}/kjv
[ -f "$K/kjv_text_document.idx" ] || skip_all "the test corpus $K is missing (make check builds it: check_DATA)"
G3C_SLURMD_TIMEOUT=3
g3c_check || skip_all "$g3c_why"
if ! g3c_start 4; then
    tap_result 1 "a private cluster of 4 nodes starts"
    diag "$g3c_why"
    done_testing
    exit 1
fi
W=$G3C_WORK
SUBMIT=$top_builddir/sbatch/gpt3d-submit
cd "$W"
export OMP_NUM_THREADS=1

# A tiny model on the KJV corpus: 12 iterations of a few hundred ms each on
# this machine, long enough to be signalled during training.
flags=(--data-path "$K/kjv_text_document" --vocab-file "$K/encoder.json" --merge-file "$K/vocab.bpe"
    --split "90,5,5" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32
    --micro-batch-size 2 --global-batch-size 8 --train-iters 12 --lr 3e-3 --lr-warmup-iters 2
    --lr-decay-style cosine --log-interval 1 --eval-iters 0 --eval-interval 1000
    --distributed-timeout-minutes 1)

submit() {  # submit GPT3D-SUBMIT-ARGS... RUN [-- MORE-TRAIN-FLAGS...]: with the real trainer
    local a=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do a+=("$1"); shift; done
    [ $# -eq 0 ] || shift
    "$SUBMIT" --job-script "$top_srcdir/sbatch/gpt3d-train.sbatch" --train-command "$GPT3D train" \
        "${a[@]}" -- "${flags[@]}" "$@"
}
wait_end() { g3c_wait "$2" sh -c "[ -e '$1/COMPLETE' ] || [ -e '$1/FAILED' ]" || true; }
outcomes() { tail -n +2 "$1/attempts.tsv" 2>/dev/null | cut -f10 | tr '\n' ' '; }
# losses RUN: the training losses of RUN's metrics.jsonl, one line
losses() {
    grep '"event":"train"' "$1/metrics.jsonl" 2>/dev/null | sed 's/.*"loss":\([^,]*\),.*/\1/' | tr '\n' ' '
}
# iters RUN: the iterations of RUN's train events, one line
iters() {
    grep '"event":"train"' "$1/metrics.jsonl" 2>/dev/null | sed 's/.*"iteration":\([0-9]*\),.*/\1/' | tr '\n' ' '
}
# maxrel A B: the largest relative difference between two loss lines
maxrel() {
    printf '%s\n%s\n' "$1" "$2" | awk 'NR == 1 { n = split($0, a, " ") } NR == 2 { m = split($0, b, " ") }
        END { if (n != m || n == 0) { print "mismatch"; exit } w = 0
              for (i = 1; i <= n; i++) { d = a[i] - b[i]; if (d < 0) d = -d; d /= (a[i] < 0 ? -a[i] : a[i]); if (d > w) w = d }
              printf "%.3g\n", w }'
}
within() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "mismatch" && a + 0 <= b + 0) }'; }
show_run() {  # on failure: what happened
    diag "--- $1"
    "$SUBMIT" --status "$1" 2>&1 | sed 's/^/#   /' || true
    cat "$1"/logs/* 2>/dev/null | grep -v '^ *$' | tail -n 25 | sed 's/^/#   /' || true
}
check() {  # check DESCRIPTION RUN CMD...: a TAP result; the run's state on failure
    local what=$1 run=$2
    shift 2
    if "$@"; then tap_result 0 "$what"; else tap_result 1 "$what"; show_run "$run"; fi
}
# signal_during_training RUN JOB: once RUN's metrics show iteration 3, send
# JOB's batch script the warning signal (as Slurm does before the time limit)
signal_during_training() {
    g3c_wait 90 sh -c "grep -q '\"iteration\":3,' '$1/metrics.jsonl'" || true
    scancel --batch --signal=USR2 "$2" || true
}

# The uninterrupted reference: one "gpt3d train" outside Slurm.
ref=$W/reference
run "$GPT3D" train "${flags[@]}" --run-dir "$ref"
is "$rc" 0 "the uninterrupted reference run (gpt3d train, one rank, no Slurm) completes"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -n 12 | sed 's/^/#   /'
want=$(seq 1 12 | tr '\n' ' ')

# (1) The warning signal during training, then the next job resumes.
run_sig=$W/signal
submit --chain 1 -N 1 "$run_sig" >"$W/signal.submit" 2>&1
sig_first=$(head -n 1 "$run_sig/chain" 2>/dev/null || true)
signal_during_training "$run_sig" "$sig_first"
wait_end "$run_sig" 120
check "(1) after the warning signal during training the run completes" "$run_sig" test -e "$run_sig/COMPLETE"
is "$(outcomes "$run_sig")" "checkpointed complete " "(1) attempts: checkpointed (exit 75), then complete"
is "$(tail -n +2 "$run_sig/attempts.tsv" | cut -f9 | tr '\n' ' ')" "75 0 " "(1) the trainer exited 75, then 0"
saved=$(sed -n 2p "$run_sig/attempts.tsv" | cut -f8)
check "(1) the first job saved mid-run (iteration $saved, between 3 and 11)" "$run_sig" \
    sh -c "[ '${saved:-0}' -ge 3 ] && [ '${saved:-0}' -lt 12 ]"
like "$(cat "$run_sig"/logs/*)" "resumed from the checkpoint of iteration $saved" "(1) the second job resumed from that checkpoint"
is "$(iters "$run_sig")" "$want" "(1) metrics.jsonl holds iterations 1..12, each once"
is "$(losses "$run_sig")" "$(losses "$ref")" "(1) the 12 losses are bitwise those of the uninterrupted run"
is "$(cat "$run_sig/checkpoints/latest" 2>/dev/null)" iter_0000012 "(1) checkpoints/latest names the final iteration"

# (3) Elastic: 2 nodes (DP 2), then 4 (DP 4), the global batch (8) kept.  Two
# nodes are kept busy by a placeholder job, so the first job of --sizes 2,4
# (--nodes=2-4) gets the other two.
g3c_wait 30 sh -c "[ \$(sinfo -h -N -t idle -o %N | sort -u | wc -l) -eq 4 ]" || true
hold=$(sbatch --parsable -N 2 -o /dev/null --wrap 'sleep 600')
g3c_wait 30 g3c_job_state_is "$hold" RUNNING || true
run_el=$W/elastic
# (--use-distributed-optimizer: the ZeRO-1 optimizer shards saved at DP 2 are
# re-sharded to DP 4 on load, the MT-NLG 280 -> 350 -> 420-node case.)
submit --chain 1 --sizes 2,4 "$run_el" -- --use-distributed-optimizer >"$W/elastic.submit" 2>&1
el_first=$(head -n 1 "$run_el/chain" 2>/dev/null || true)
signal_during_training "$run_el" "$el_first"
is "$(g3c_job_field "$el_first" NumNodes)" 2 "(3) the first job (--nodes=2-4, 2 nodes free) runs on 2 nodes"
scancel "$hold"
wait_end "$run_el" 150
check "(3) the elastic run completes" "$run_el" test -e "$run_el/COMPLETE"
is "$(outcomes "$run_el")" "checkpointed complete " "(3) attempts: checkpointed on 2 nodes, complete on the next job"
el_saved=$(sed -n 2p "$run_el/attempts.tsv" | cut -f8)
check "(3) the 2-node job saved mid-run (iteration $el_saved, between 3 and 11)" "$run_el" \
    sh -c "[ '${el_saved:-0}' -ge 3 ] && [ '${el_saved:-0}' -lt 12 ]"
el_nodes=$(tail -n 1 "$run_el/attempts.tsv" | cut -f6)
is "$(scontrol show hostnames "$el_nodes" 2>/dev/null | wc -l)" 4 "(3) the second job ran on 4 nodes ($el_nodes)"
logs=$(cat "$run_el"/logs/* 2>/dev/null)
like "$logs" "layout: TP 1 x PP 1 x DP 2 = 2 ranks on 2 nodes" "(3) the first job trained with DP 2"
like "$logs" "layout: TP 1 x PP 1 x DP 4 = 4 ranks on 4 nodes" "(3) the second job trained with DP 4"
is "$(iters "$run_el")" "$want" "(3) metrics.jsonl holds iterations 1..12, each once"
d=$(maxrel "$(losses "$ref")" "$(losses "$run_el")")
if within "$d" 1e-5; then
    tap_result 0 "(3) the losses across DP 2 -> DP 4 are within 1e-5 of the uninterrupted run ($d)"
else
    tap_result 1 "(3) the losses across DP 2 -> DP 4 are within 1e-5 of the uninterrupted run ($d)"
    diag "uninterrupted: $(losses "$ref")"; diag "elastic: $(losses "$run_el")"
    show_run "$run_el"
fi

done_testing

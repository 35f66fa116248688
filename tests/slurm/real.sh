#!/bin/bash
# tests/slurm/real.sh: helpers for the scenarios that run the REAL trainer
# ("$GPT3D train": a tiny model on the test corpus $GPT3D_TEST_DATA/kjv)
# through gpt3d-submit on a private Slurm cluster (tests/slurm/cluster.sh).
# Sourcing it sources runs.sh, and with it tests/lib.sh and cluster.sh (SUBMIT, sub_wait_end,
# sub_outcomes, sub_check, ...); real_start begins the test.
#
#   real_start N               K, a cluster of N nodes, W (the current directory), real_setup
#   real_setup                 the common training flags (real_flags) on $K
#   real_submit ARGS... RUN [-- MORE-TRAIN-FLAGS...]
#   real_losses RUN            the training losses of RUN's metrics.jsonl, one line
#   real_iters RUN             the iterations of those train events, one line
#   real_last_losses RUN       per iteration the LAST loss recorded (a re-run
#                              iteration after a failure counts once), one line
#   real_signal_during_training RUN JOB RANKS
#   real_train_events RUN      the train events of RUN's metrics.jsonl (nothing where none)
#   real_first_attempt_events RUN   those the first attempt logged
# Sourced only, by tests that set -e and pipefail: these functions are written for both
# (a run without train events yet gives an empty line, not a failure).
# (top_srcdir, top_builddir, GPT3D and GPT3D_TEST_DATA come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/slurm/runs.sh
. "$top_srcdir/tests/slurm/runs.sh"

# real_start N: how these tests begin: K, the test corpus (the whole test skips where it is
# missing); a private cluster of N nodes with a 3 s SlurmdTimeout (g3c_need: skips where
# none can start here, fails where one does not start); W, its shared work directory, as
# the current directory; real_setup.
real_start() {
    K=${GPT3D_TEST_DATA:-$top_builddir/tests/_data}/kjv
    [ -f "$K/kjv_text_document.idx" ] || skip_all "the test corpus $K is missing (make check builds it: check_DATA)"
    # shellcheck disable=SC2034  # g3c_start (cluster.sh) reads it
    G3C_SLURMD_TIMEOUT=3
    g3c_need "$1"
    W=$G3C_WORK
    cd "$W" || return 1
    real_setup
}

real_setup() {
    export OMP_NUM_THREADS=1
    # A tiny model on the KJV corpus: iterations of 80-300 ms on this machine.
    real_flags=(--data-path "$K/kjv_text_document" --vocab-file "$K/encoder.json" --merge-file "$K/vocab.bpe"
        --split "90,5,5" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32
        --micro-batch-size 2 --global-batch-size 8 --train-iters 12 --lr 3e-3 --lr-warmup-iters 2
        --lr-decay-style cosine --log-interval 1 --eval-iters 0 --eval-interval 1000
        --distributed-timeout-minutes 1)
}

real_submit() {
    local a=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do a+=("$1"); shift; done
    [ $# -eq 0 ] || shift
    "$SUBMIT" --job-script "$top_srcdir/sbatch/gpt3d-train.sbatch" --train-command "$GPT3D train" \
        "${a[@]}" -- "${real_flags[@]}" "$@"
}


# real_train_events RUN: the train events of RUN's metrics.jsonl, in the order written;
# nothing (status 0) where there are none or no file yet.
real_train_events() {
    grep '"event":"train"' "$1/metrics.jsonl" 2>/dev/null || true
}
# real_first_attempt_events RUN: the train events the first attempt logged (those before the
# second "start" event: each attempt's trainer appends one to metrics.jsonl when it starts).
real_first_attempt_events() {
    awk '/"event":"start"/ { n++ } n == 1 && /"event":"train"/' "$1/metrics.jsonl" 2>/dev/null || true
}
real_losses() {
    real_train_events "$1" | sed 's/.*"loss":\([^,]*\),.*/\1/' | tr '\n' ' '
}
real_iters() {
    real_train_events "$1" | sed 's/.*"iteration":\([0-9]*\),.*/\1/' | tr '\n' ' '
}
real_last_losses() {
    real_train_events "$1" |
        sed 's/.*"iteration":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/' |
        awk '{ l[$1] = $2; if ($1 > n) n = $1 } END { for (i = 1; i <= n; i++) printf "%s ", (i in l ? l[i] : "missing") }'
}

# real_within_check WHAT RUN A B LIMIT: a TAP result for loss lines A and B
# within LIMIT; both lines and the run's state on failure.
real_within_check() {
    local d
    d=$(g3_maxrel "$3" "$4")
    if g3_within "$d" "$5"; then
        tap_result 0 "$1 ($d)"
    else
        tap_result 1 "$1 ($d)"
        diag "expected: $3"; diag "got:      $4"
        sub_show "$2"
    fi
}

# real_signal_during_training RUN JOB RANKS: JOB was submitted with
# GPT3D_DEBUG_STOP_AFTER_ITERATION=3 in its environment, so each of its RANKS trainer
# processes stops itself (SIGSTOP) after iteration 3.  Once all are stopped, JOB's batch
# script gets the warning signal (as Slurm sends it before the time limit); once the signal
# it forwards is pending in every rank, they are continued: the signal lands at iteration 3
# however fast or slow the machine trains (each wait is for a state; its limit only ends a
# failed test).
real_signal_during_training() {
    g3c_wait 300 g3c_procs_stopped gpt3d "${3:-1}" || true
    scancel --batch --signal=USR2 "$2" || true
    g3c_wait 120 g3c_procs_have_pending gpt3d 12 || true
    g3c_signal_procs CONT gpt3d
}

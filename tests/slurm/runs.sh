#!/bin/bash
# tests/slurm/runs.sh: what the tests that drive gpt3d-submit on the private cluster
# (tests/slurm/cluster.sh) ask of a run and its directory.  Sourcing it sources tests/lib.sh
# and cluster.sh.
#
#   SUBMIT                     the gpt3d-submit being tested (the build's)
#   sub_fake ARGS...           gpt3d-submit ARGS with tests/slurm/fake-train.sh, the TEST
#                              DOUBLE for "gpt3d train", as --train-command
#   sub_wait_end RUN SECONDS   until RUN has COMPLETE or FAILED
#   sub_outcomes RUN           the attempts' outcomes, one line
#   sub_show RUN               RUN's --status and the tail of its logs, as TAP comments
#   sub_check WHAT RUN CMD...  a TAP result for CMD; the run's state on failure
# Sourced only, by tests that set -e and pipefail: these functions are written for both
# (a file a run has not written yet gives an empty answer, not a failure).  In those tests a
# value read from a file that a failed run may lack ends in "|| true": the results that
# follow report the failure; a missing file must not end the test.
# (top_srcdir and top_builddir come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
# shellcheck source=tests/slurm/cluster.sh
. "$top_srcdir/tests/slurm/cluster.sh"

SUBMIT=$top_builddir/sbatch/gpt3d-submit
# gpt3d-submit's library (sbatch/lib) is the source tree's: the build's gpt3d-submit is not
# installed yet.
export GPT3D_SBATCH_DIR=$top_srcdir/sbatch

sub_fake() {
    "$SUBMIT" --job-script "$top_srcdir/sbatch/gpt3d-train.sbatch" \
        --train-command "$top_srcdir/tests/slurm/fake-train.sh" "$@"
}

sub_wait_end() { g3c_wait "$2" sh -c "[ -e '$1/COMPLETE' ] || [ -e '$1/FAILED' ]" || true; }

sub_outcomes() { [ ! -e "$1/attempts.tsv" ] || tail -n +2 "$1/attempts.tsv" | cut -f10 | tr '\n' ' '; }

sub_show() {
    diag "--- $1"
    "$SUBMIT" --status "$1" 2>&1 | sed 's/^/#   /' || true
    cat "$1"/logs/* 2>/dev/null | grep -v '^ *$' | tail -n 25 | sed 's/^/#   /' || true
}

sub_check() {
    local what=$1 run=$2
    shift 2
    if "$@"; then tap_result 0 "$what"; else tap_result 1 "$what"; sub_show "$run"; fi
}

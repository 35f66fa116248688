#!/bin/bash
# What the tests of gpt3d-submit without a cluster share (sourcing it sources tests/lib.sh):
#   SUBMIT           the gpt3d-submit being tested (the build's)
#   JOB              the job script it submits (the source's gpt3d-train.sbatch)
#   TMPD             a scratch directory, removed on exit (g3_tmpdir)
#   submit ARGS...   gpt3d-submit ARGS with JOB and a train command that does nothing
# (top_srcdir and top_builddir come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"

SUBMIT=$top_builddir/sbatch/gpt3d-submit
# gpt3d-submit's library (sbatch/lib) is the source tree's: the build's gpt3d-submit is not
# installed yet.
export GPT3D_SBATCH_DIR=$top_srcdir/sbatch
JOB=$top_srcdir/sbatch/gpt3d-train.sbatch
g3_tmpdir
submit() { "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" "$@"; }

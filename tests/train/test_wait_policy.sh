#!/bin/sh
# OpenMP's wait policy (#32.9): the commands that compute (train, eval, generate, plan) run
# with libgomp's threads spinning GOMP_SPINCOUNT=10000 rounds before they sleep, not libgomp's
# 300000 (7.5 ms of CPU time each wait on the 2-core build VM), or 0 when the job's threads
# outnumber the CPUs, unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set; gpt3d re-executes itself to set it, since libgomp reads its
# environment only when the program is loaded (src/backend/cpu_env.c).  Seen through
# libgomp's own report (OMP_DISPLAY_ENV=verbose, printed by every process that loads it) and
# the trainer's debug log.  Speed is docs/benchmarks.md's business, not this test's.
# (top_srcdir, GPT3D come from make check; run sets rc and out; $g3_flags is split on purpose.)
# shellcheck disable=SC2154,SC2086
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
spin() {  # the spin count of the last libgomp report in $1
    printf '%s\n' "$1" | sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p" | tail -n 1
}
reports() { printf '%s\n' "$1" | grep -c 'OPENMP DISPLAY ENVIRONMENT BEGIN' || true; }
bare() { env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose "$@"; }

run bare "$GPT3D" tokenize --help
[ -n "$(spin "$out")" ] || skip_all "the OpenMP runtime is not libgomp (its report has no GOMP_SPINCOUNT)"
is "$(spin "$out")" 300000 "gpt3d tokenize (no training) keeps libgomp's default spin count"
for c in train eval generate plan; do
    run bare "$GPT3D" $c --help
    is "$rc:$(spin "$out"):$(reports "$out")" "0:10000:2" \
        "gpt3d $c: re-executed once, its OpenMP threads spin 10000 rounds before they sleep"
done
# The job's threads outnumbering the CPUs (mpirun's count of ranks on the node x
# OMP_NUM_THREADS): no spinning at all; fitting: the short spin.
cpus=$(nproc)
run bare env OMPI_COMM_WORLD_LOCAL_SIZE="$cpus" OMP_NUM_THREADS=2 "$GPT3D" train --help
is "$(spin "$out")" 0 "$cpus ranks x 2 threads on $cpus CPUs: the threads sleep at once (GOMP_SPINCOUNT 0)"
run bare env OMPI_COMM_WORLD_LOCAL_SIZE=1 OMP_NUM_THREADS="$cpus" "$GPT3D" train --help
is "$(spin "$out")" 10000 "1 rank x $cpus threads on $cpus CPUs: the short spin"
run env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive OMP_DISPLAY_ENV=verbose "$GPT3D" train --help
is "$(spin "$out"):$(reports "$out")" "0:1" "OMP_WAIT_POLICY=passive is kept (no re-execution)"
run env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=123 OMP_DISPLAY_ENV=verbose "$GPT3D" train --help
is "$(spin "$out"):$(reports "$out")" "123:1" "a GOMP_SPINCOUNT of the user's is kept"

# A run, re-executed: it trains, and its debug log says how the threads wait.
g3_byte_corpus "$TMPD/d"
g3_small_flags 1 --global-batch-size 2 --train-iters 4
run env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_NUM_THREADS=2 "$GPT3D" train $g3_flags \
    --log-level debug --run-dir "$TMPD/run"
is "$rc" 0 "a re-executed training run exits 0"
like "$out" "OpenMP threads wait: GOMP_SPINCOUNT=10000 \(gpt3d's default\)" "... and says how its threads wait"
like "$out" "iteration +4/ +4 " "... after its iterations"
run env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active OMP_NUM_THREADS=2 "$GPT3D" train $g3_flags \
    --log-level debug --run-dir "$TMPD/run2"
like "$out" "OpenMP threads wait: as OMP_WAIT_POLICY / GOMP_SPINCOUNT ask" "with OMP_WAIT_POLICY set, the log says so"
done_testing

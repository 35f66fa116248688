#!/bin/sh
# src/comm without a launcher: a singleton world, its collectives, the
# refusal of a multi-task launch without PMIx, and the NCCL backend on one
# GPU (skipped without one).
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
CHECK="$top_builddir/tests/comm/comm_check"

# Drop any PMIx/launcher variables this test itself may run under.
for v in $(env | sed -n 's/^\(PMIX_[A-Za-z0-9_]*\|OMPI_COMM_WORLD[A-Z_]*\|SLURM_STEP_NUM_TASKS\|PMI_SIZE\)=.*/\1/p'); do
    unset "$v"
done

run "$CHECK" info
is "$rc" 0 "singleton: info exits 0"
like "$out" "^rank 0 size 1 local_rank 0 local_size 1 node 0/1 singleton 1 host [^ ]+ next says 'hello from 0'" \
    "singleton: rank 0 of 1 and the exchange returns its own blob"

run "$CHECK" collectives
is "$rc" 0 "singleton: every collective on groups of one"
like "$out" "collectives: 1 ranks, backend host, 2 shapes, [1-9][0-9]* checks .*ALL OK" "singleton: checks ran"

run env SLURM_STEP_NUM_TASKS=4 "$CHECK" info
is "$rc" 1 "four tasks without PMIx are refused"
like "$out" "SLURM_STEP_NUM_TASKS=4 .*no PMIx server.*srun --mpi=pmix" "refusal says how to launch"

run env PMIX_NAMESPACE=gpt3d-test PMIX_SERVER_URI41=tcp4://127.0.0.1:1 "$CHECK" info
is "$rc" 1 "an unreachable PMIx server is an error, not a singleton"
like "$out" "PMIx_Init failed" "the error names PMIx_Init"

run "$CHECK" collectives nccl
if [ "$rc" -eq 77 ]; then
    skip "NCCL on one GPU: $(printf '%s' "$out" | sed -n 's/^SKIP: //p')"
else
    is "$rc" 0 "NCCL backend on one GPU: every collective vs the serial reference"
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | head -20 | sed 's/^/#   /'
fi
done_testing

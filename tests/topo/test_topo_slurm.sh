#!/bin/bash
# comm and topo under Slurm, on the private cluster of tests/slurm/cluster.sh
# (4 nodes, 2 per leaf switch, one top switch): PMIx bootstrap through
# srun --mpi=pmix, collectives across nodes, the timeout exit code through
# srun, and gpt3d topo reading SLURM_TOPOLOGY_ADDR over PMIx, a
# topology.conf, and an allocation seen from outside srun.
# (top_srcdir and friends come from make check.)
# shellcheck disable=SC2154,SC2034
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
# shellcheck source=tests/slurm/cluster.sh
. "$top_srcdir/tests/slurm/cluster.sh"
set -eo pipefail
# (A grep over a command's output that may lack the lines ends in "|| true": the results
# that follow report it; finding nothing must not end the test.)
CHECK="$top_builddir/tests/comm/comm_check"

G3C_SLURMD_TIMEOUT=3
g3c_need 4
tap_result 0 "a private cluster of 4 nodes starts"
cd "$G3C_WORK"

run srun --mpi=pmix -N 4 --ntasks-per-node 2 "$CHECK" info
is "$rc" 0 "srun --mpi=pmix: 8 ranks bootstrap over PMIx"
is "$(printf '%s\n' "$out" | sed -n 's/^rank \([0-9]*\) size 8 local_rank [01] local_size 2 node [0-3]\/4 singleton 0 host n[1-4] .*/\1/p' | sort -n | tr '\n' ' ')" \
    "0 1 2 3 4 5 6 7 " "every rank knows its rank, local rank, node and host"

run srun --mpi=pmix -N 4 --ntasks-per-node 2 "$CHECK" collectives
is "$rc" 0 "srun, 4 nodes x 2: every collective vs the serial reference"
like "$out" "collectives: 8 ranks, backend host, [0-9]+ shapes, [1-9][0-9]* checks on rank 0, 0 failures in all: ALL OK" \
    "checks ran across nodes"

start=$SECONDS
run srun --mpi=pmix -N 2 --ntasks-per-node 2 "$CHECK" hang 3 abort
is "$rc" 76 "srun: a rank that stops responding ends the step with exit code 76"
like "$out" "timed out after 3 s waiting for group rank [0-9] \(world rank [0-9]\)" "the timeout names the peer"
# the claim: the step ends instead of hanging; the bound leaves room for srun's start on a
# machine at load 10 (the step itself waits 3 s)
ok=1; [ $((SECONDS - start)) -le 120 ] || ok=0
is "$ok" 1 "the step ends, not hangs ($((SECONDS - start)) s, bound 120 s)"

run srun --mpi=pmix -N 4 --ntasks-per-node 2 "$GPT3D" topo --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
is "$rc" 0 "gpt3d topo in a 4-node step"
like "$out" "^gpt3d topo: 4 nodes x 2 ranks = 8 ranks; TP 2 x PP 2 x DP 2" "the job's shape, gathered over PMIx"
like "$out" "with SLURM_TOPOLOGY_ADDR" "the switches come from SLURM_TOPOLOGY_ADDR"
like "$out" "2 leaf switches in use" "two leaf switches"
like "$out" "pp group tp=0 dp=0: ranks [0-9],[0-9]; hosts n\[1-2\]; leaf" "replica 0's pipeline stays under leaf1"
like "$out" "dp group tp=0 pp=0: ranks [0-9],[0-9]; hosts n\[1,3\]; level 2" "data parallelism across the top switch"
ranks_addr=$(printf '%s\n' "$out" | grep -E '^ +[0-9]+  n[1-4] ') || true

run srun --mpi=pmix -N 4 --ntasks-per-node 2 "$GPT3D" topo --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 2 --topology-file "$G3C_DIR/etc/topology.conf"
is "$rc" 0 "gpt3d topo with the cluster's topology.conf"
is "$(printf '%s\n' "$out" | grep -E '^ +[0-9]+  n[1-4] ')" "$ranks_addr" \
    "the same plan as from SLURM_TOPOLOGY_ADDR"

run salloc -N 4 --ntasks-per-node 2 "$GPT3D" topo --pipeline-model-parallel-size 4
is "$rc" 0 "gpt3d topo in an allocation, outside srun"
like "$out" "gpt3d topo: 4 nodes x 2 ranks = 8 ranks; TP 1 x PP 4 x DP 2" "its nodes and tasks per node"
like "$out" "from SLURM_JOB_NODELIST" "read from SLURM_JOB_NODELIST"

g3c_stop
done_testing

#!/bin/bash
# The private Slurm cluster (tests/slurm/cluster.sh) and the Slurm mechanisms
# the batch suite relies on: PMIx steps across nodes, the warning signal in
# the batch shell, requeue, shrinking a running job, a failed node and
# --exclude, and a clean stop.
# (top_srcdir comes from make check; the single-quoted $VARS are for the jobs.)
# shellcheck disable=SC2154,SC2016
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
# shellcheck source=tests/slurm/cluster.sh
. "$top_srcdir/tests/slurm/cluster.sh"
set -eo pipefail

G3C_SLURMD_TIMEOUT=3
g3c_need 4
tap_result 0 "a private cluster of 4 nodes starts"
W=$G3C_WORK
cd "$W"

# 1. The nodes, the topology.
run sinfo -h -N -o '%N %t'
is "$(printf '%s\n' "$out" | sort -u | tr '\n' ' ')" "n1 idle n2 idle n3 idle n4 idle " "sinfo lists 4 nodes, all idle"
run scontrol show topology
like "$out" "SwitchName=leaf1 .*Nodes=n1,n2" "topology/tree: leaf1 holds n1,n2"
like "$out" "SwitchName=top .*Switches=leaf1,leaf2" "topology/tree: a top switch above the leaves"

# (Submitted after the idle check above, which it would disturb.)
# The warning signal takes up to 30 s to come (slurmctld looks at time limits
# every 30 s), so its job runs while the other checks do.
cat >"$W/warn.sh" <<'EOF'
#!/bin/bash
trap 'echo "USR2 received by the batch shell"; exit 0' USR2
echo "started"
for _ in $(seq 1 240); do sleep 0.25; done
echo "no signal came"
EOF
warn_job=$(sbatch --parsable -N 1 -n 1 --time=1 --signal=B:USR2@50 -o "$W/warn.out" "$W/warn.sh")

# 2. srun --mpi=pmix across two nodes.
run srun --mpi=pmix -N 2 -n 4 bash -c 'echo "rank=${PMIX_RANK:-none} node=$SLURMD_NODENAME tmp=$(stat -c %d:%i /tmp)"'
is "$rc" 0 "srun --mpi=pmix -N 2 -n 4 succeeds"
is "$(printf '%s\n' "$out" | sed -n 's/.*rank=\([0-9]*\).*/\1/p' | sort | tr '\n' ' ')" "0 1 2 3 " \
    "every task sees its PMIX_RANK (0..3)"
is "$(printf '%s\n' "$out" | sed -n 's/.*node=\([^ ]*\).*/\1/p' | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')" "2 2 " \
    "the tasks ran on two nodes, two on each"
is "$(printf '%s\n' "$out" | sed -n 's/.*tmp=\([^ ]*\).*/\1/p' | sort -u | grep -vc "^$(stat -c %d:%i /tmp)\$")" 2 \
    "each node has its own /tmp, not the host's"

# 3. Requeue: the job requeues itself on its first run and runs again.
cat >"$W/requeue.sh" <<'EOF'
#!/bin/bash
echo "run restart_count=${SLURM_RESTART_COUNT:-0}"
if [ "${SLURM_RESTART_COUNT:-0}" -eq 0 ]; then
    scontrol requeue "$SLURM_JOB_ID"
    sleep 60
fi
EOF
rq_job=$(sbatch --parsable -N 1 --requeue --open-mode=append -o "$W/requeue.out" "$W/requeue.sh")

# 4. Shrink a running job from 3 nodes to 2 (scontrol update NumNodes, then
# the resize script resets the job's environment).
cat >"$W/resize.sh" <<'EOF'
#!/bin/bash
set -eu
echo "before=$SLURM_JOB_NUM_NODES nodelist=$SLURM_JOB_NODELIST"
scontrol update JobId="$SLURM_JOB_ID" NumNodes=2
. "./slurm_job_${SLURM_JOB_ID}_resize.sh"
echo "after=$SLURM_JOB_NUM_NODES nodelist=$SLURM_JOB_NODELIST"
echo "hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | tr '\n' ' ')"
echo "step=$(srun -N 2 -n 2 bash -c 'echo $SLURMD_NODENAME' | sort | tr '\n' ' ')"
EOF
rs_job=$(sbatch --parsable -N 3 -D "$W" -o "$W/resize.out" "$W/resize.sh")
g3c_wait_job "$rs_job" 'COMPLETED|FAILED|CANCELLED' 30 || true
is "$(g3c_job_field "$rs_job" JobState)" COMPLETED "the resizing job completes"
run cat "$W/resize.out"
like "$out" "before=3 " "the job started on 3 nodes"
like "$out" "after=2 " "after scontrol update NumNodes=2 the job holds 2 nodes"
hosts=$(printf '%s\n' "$out" | sed -n 's/^hosts=//p')
like "$out" "step=$hosts\$" "a step after the resize runs on the 2 remaining nodes ($hosts)"
is "$(g3c_job_field "$rs_job" NumNodes)" 2 "scontrol shows the job with 2 nodes"

g3c_wait_job "$rq_job" 'COMPLETED|FAILED|CANCELLED' 40 || true
is "$(g3c_job_field "$rq_job" JobState)" COMPLETED "the requeued job completes"
is "$(g3c_job_field "$rq_job" Restarts)" 1 "scontrol counts one restart"
run cat "$W/requeue.out"
like "$out" "run restart_count=0" "the first run wrote to the log"
like "$out" "run restart_count=1" "the second run appended to the same log (--open-mode=append)"

# 5. A failed node: kill n4's slurmd; it goes NOT_RESPONDING then DOWN; a job
# that excludes it runs, one that needs all 4 nodes waits until it returns.
g3c_kill_node n4
if g3c_wait 40 sh -c "scontrol show node n4 | grep -q 'State=DOWN'"; then
    tap_result 0 "a node whose slurmd died goes DOWN"
else
    tap_result 1 "a node whose slurmd died goes DOWN"
    diag "n4 state: $(g3c_node_state n4)"
fi
run srun -N 3 --exclude=n4 bash -c 'echo $SLURMD_NODENAME'
is "$rc" 0 "srun -N 3 --exclude=n4 runs while n4 is down"
is "$(printf '%s\n' "$out" | sort | tr '\n' ' ')" "n1 n2 n3 " "it ran on the three healthy nodes"
all_job=$(sbatch --parsable -N 4 -o "$W/all.out" --wrap 'srun hostname >/dev/null; echo ok')
sleep 2
like "$(g3c_job_field "$all_job" JobState)" PENDING "a 4-node job waits while n4 is down"
g3c_start_node n4
g3c_wait_job "$all_job" 'COMPLETED|FAILED|CANCELLED' 40 || true
is "$(g3c_job_field "$all_job" JobState)" COMPLETED "n4 returns to service when its slurmd restarts (ReturnToService=2) and the 4-node job runs"

# 6. The warning signal.
g3c_wait_job "$warn_job" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' 60 || true
run cat "$W/warn.out"
like "$out" "USR2 received by the batch shell" "--signal=B:USR2@50 reaches the batch shell before the time limit"
is "$(g3c_job_field "$warn_job" JobState)" COMPLETED "the job exits cleanly from its USR2 trap"

# 6b. gpt3d topo as one process inside an allocation (salloc, a batch
# script; no srun, so no SLURM_TOPOLOGY_ADDR): it reads the switch tree Slurm
# reports (scontrol show topology), else the topology.conf beside slurm.conf,
# else says it plans on one flat switch and how to get the tree (#14.9).
G=$top_builddir/src/gpt3d
if [ -x "$G" ]; then
    g3c_wait 60 g3c_all_idle || true
    run salloc -N 4 "$G" topo --pipeline-model-parallel-size 2 --summary
    is "$rc" 0 "gpt3d topo as one process in a 4-node allocation (salloc) exits 0"
    like "$out" "from SLURM_JOB_NODELIST" "... reads the nodes from SLURM_JOB_NODELIST"
    like "$out" "topology: scontrol show topology: 3 switches, 2 levels, 2 leaf switches in use" \
        "... and the switch tree from scontrol show topology (two leaves under a top switch)"
    topo_job=$(sbatch --parsable -N 4 -o "$W/topo.out" --wrap "'$G' topo --summary")
    g3c_wait_job "$topo_job" 'COMPLETED|FAILED|CANCELLED' 120 || true
    like "$(cat "$W/topo.out" 2>/dev/null)" "topology: scontrol show topology: 3 switches, 2 levels, 2 leaf switches in use" \
        "... also from a batch script"
    mkdir -p "$W/noscontrol"
    printf '#!/bin/sh\nexit 1\n' >"$W/noscontrol/scontrol"
    chmod +x "$W/noscontrol/scontrol"
    run salloc -N 4 env PATH="$W/noscontrol:$PATH" "$G" topo --summary
    like "$out" "topology: $G3C_DIR/etc/topology.conf: 3 switches, 2 levels, 2 leaf switches in use" \
        "without scontrol it reads the topology.conf beside slurm.conf"
    run salloc -N 2 env PATH="$W/noscontrol:$PATH" SLURM_CONF=/nonexistent/slurm.conf "$G" topo --summary
    is "$rc" 0 "with neither, it still plans"
    like "$out" "no switch tree found .*: planning as if all nodes were under one switch; run it under srun --mpi=pmix" \
        "... and says it assumes one switch and that srun (or --topology-file) gives the tree"
else
    skip "$G is not built: gpt3d topo in an allocation is not checked"
fi

# 7. A second cluster beside this one: its own ports, directory and nodes.
second=$(
    G3C_NO_TRAP=1
    trap 'g3c_stop >/dev/null 2>&1' EXIT
    if g3c_start 1; then
        echo "dir=$G3C_DIR port=$(sed -n 's/^SlurmctldPort=//p' "$SLURM_CONF") nodes=$(sinfo -h -o %D) run=$(srun -N 1 bash -c 'echo $SLURMD_NODENAME')"
    else
        echo "failed: $g3c_why"
    fi
)
first_port=$(sed -n 's/^SlurmctldPort=//p' "$SLURM_CONF")
like "$second" "nodes=1 run=n1" "a second private cluster runs beside the first"
if [[ "$second" != *"port=$first_port "* && "$second" != *"dir=$G3C_DIR "* ]]; then
    tap_result 0 "the second cluster uses its own port and directory"
else
    tap_result 1 "the second cluster uses its own port and directory"; diag "$second"
fi
second_dir=$(printf '%s' "$second" | sed -n 's/^dir=\([^ ]*\).*/\1/p')
is "$( [ -n "$second_dir" ] && [ ! -e "$second_dir" ] && echo gone)" gone "the second cluster's directory is removed when it stops"
is "$(sinfo -h -o %D)" 4 "the first cluster still has its 4 nodes"

# 8. Stop: every daemon and job process gone, the directory removed.
dir=$G3C_DIR
daemon_pids=$(cat "$dir"/pids/munged "$dir"/pids/slurmctld "$dir"/pids/slurmd-* | tr '\n' ' ')
cd /
g3c_stop
left=""
for p in $daemon_pids; do
    if [ -d "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; then left="$left $p"; fi
done
is "$left" "" "g3c_stop ends every daemon it started"
is "$( [ -e "$dir" ] && echo "still there" || echo removed)" removed "g3c_stop removes the cluster directory"

done_testing

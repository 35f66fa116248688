#!/bin/sh
# gpt3d topo: described jobs (--nodelist, --topology-file), MT-NLG's work growing
# linearly with the nodes, impossible layouts, bad files, the current job alone, inside a
# Slurm allocation's environment, and under mpirun.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
for v in $(env | sed -n 's/^\(PMIX_[A-Za-z0-9_]*\|OMPI_[A-Z_]*\|SLURM_[A-Z_]*\|PMI_SIZE\)=.*/\1/p'); do
    unset "$v"
done

cat >"$TMPD/two.conf" <<'CONF'
# two leaves under one top switch
SwitchName=s0 Nodes=n[0-3]
SwitchName=s1 Nodes=n[4-7]
SwitchName=top Switches=s[0-1]
CONF

run "$GPT3D" topo --nodelist 'n[0-7]' --topology-file "$TMPD/two.conf" --ranks-per-node 4 \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4
is "$rc" 0 "a described job: 8 nodes x 4 ranks, TP 2 x PP 4"
like "$out" "^gpt3d topo: 8 nodes x 4 ranks = 32 ranks; TP 2 x PP 4 x DP 4" "DP is derived"
is "$(printf '%s\n' "$out" | grep -cE '^ +[0-9]+  n[0-7] ')" 32 "one line per rank"
like "$out" "
 +5  n1 +1 +1 +2 +0  s0
" "rank 5: host n1, local rank 1, tp 1, pp 2, dp 0, leaf s0"
like "$out" "pp group tp=0 dp=2: ranks 16,18,20,22; hosts n\[4-5\]; leaf
" "a pipeline stays under its leaf switch"
like "$out" "dp group tp=0 pp=0: ranks 0,8,16,24; hosts n\[0,2,4,6\]; level 2" \
    "data-parallel groups cross the top switch"
is "$(printf '%s\n' "$out" | grep -c '^  tp group')" 16 "16 tensor-parallel groups, all listed"
like "$out" "pipeline crossing leaf switches +0 B" "no pipeline byte crosses a leaf switch"

# The work done, not the time taken (that is tests/topo/bench_topo.sh, a benchmark: a timed
# check fails on a busy machine): the two candidate layouts are scored, and the slots
# visited grow linearly with the nodes (the same count per node at every size, at most 20).
per_node=""
for n in 280 350 420; do
    dp=$((n / 35))
    run "$GPT3D" topo --nodelist "dgx[0000-$(printf %04d $((n - 1)))]" --ranks-per-node 8 \
        --topology-file "$top_srcdir/docs/examples/mtnlg-topology.conf" \
        --tensor-model-parallel-size 8 --pipeline-model-parallel-size 35 --summary
    is "$rc" 0 "MT-NLG on $n nodes: TP 8 x PP 35 x DP $dp"
    like "$out" "= $((n * 8)) ranks; TP 8 x PP 35 x DP $dp " "MT-NLG on $n nodes: DP $dp derived"
    like "$out" "tp: $((n)) groups of 8; $n within node;" "MT-NLG on $n nodes: every TP group inside a node"
    steps=$(printf '%s\n' "$out" | sed -n "s/^search: 2 candidate layouts scored, \([0-9]*\) slot visits for $n slots of TP ranks\$/\1/p")
    ok=0; [ -n "$steps" ] && [ $((steps % n)) -eq 0 ] && [ $((steps / n)) -le 20 ] && ok=1
    is "$ok" 1 "MT-NLG on $n nodes: 2 candidate layouts scored, ${steps:-no} slot visits (at most 20 per node)"
    per_node="$per_node ${steps:+$((steps / n))}"
done
is "$(echo "$per_node" | tr ' ' '\n' | grep . | sort -u | wc -l)" 1 "the work grows linearly with the nodes (slot visits per node at 280, 350, 420:$per_node)"
is "$(printf '%s\n' "$out" | grep -c '^  dp=')" 12 "--summary prints one line per replica, not 3360 ranks"

run "$GPT3D" topo --nodelist 'n[0-3]' --ranks-per-node 8 --tensor-model-parallel-size 16
is "$rc" 2 "TP larger than a node: usage error"
like "$out" "impossible layout: TP 16 does not fit in the 8 ranks of a node.*TP can be 1, 2, 4 or 8" \
    "the error says what would fit"
run "$GPT3D" topo --nodelist 'n[0-3]' --ranks-per-node 8 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 3
is "$rc" 2 "world not a multiple of TP x PP: usage error"
like "$out" "PP can be 1, 2 or 4" "the error lists the pipeline sizes that fit"
run "$GPT3D" topo --nodelist 'n[0-3]' --topology-file "$TMPD/none.conf"
is "$rc" 1 "a missing topology file fails"
like "$out" "cannot open topology file .*none.conf" "and says which"
run "$GPT3D" topo --nodelist 'n[0-8]' --topology-file "$TMPD/two.conf"
is "$rc" 2 "a node missing from the topology file is a usage error"
like "$out" "node n8 of --nodelist is not in .*two.conf" "the error names the node"
printf 'SwitchName=s0 Nodes=n[0-1]\nSwitchName=s1 Nodes=n1\n' >"$TMPD/bad.conf"
run "$GPT3D" topo --nodelist 'n[0-1]' --topology-file "$TMPD/bad.conf"
is "$rc" 2 "a malformed topology file is a usage error"
like "$out" "bad.conf:2: node n1 is under both s0 and s1" "the error names the file, the line and the node"

run "$GPT3D" topo --ranks-per-node 4 --tensor-model-parallel-size 2
is "$rc" 0 "the current job, alone: one node"
like "$out" "^gpt3d topo: 1 node x 4 ranks = 4 ranks; TP 2 x PP 1 x DP 2" "this host with --ranks-per-node"
like "$out" "from this host \(no Slurm allocation, no launcher\)" "and says where the allocation came from"

run env SLURM_JOB_NODELIST='gpu[1-4]' SLURM_TASKS_PER_NODE='2(x4)' "$GPT3D" topo --pipeline-model-parallel-size 4
is "$rc" 0 "inside a Slurm allocation (a batch script): its nodes"
like "$out" "^gpt3d topo: 4 nodes x 2 ranks = 8 ranks; TP 1 x PP 4 x DP 2" "SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE"

if g3_have_mpirun; then
    run g3_mpirun -np 4 "$GPT3D" topo --tensor-model-parallel-size 2
    is "$rc" 0 "under mpirun -np 4: the running job"
    is "$(printf '%s\n' "$out" | grep -c '^gpt3d topo:')" 1 "only rank 0 prints"
    like "$out" "1 node x 4 ranks = 4 ranks; TP 2 x PP 1 x DP 2" "the job's 4 ranks on this host, gathered over PMIx"
    like "$out" "current job \(4 ranks over PMIx\)" "the allocation came from PMIx"
    run g3_mpirun -np 4 "$GPT3D" topo --ranks-per-node 2
    is "$rc" 2 "--ranks-per-node that contradicts the running job is refused"
else
    for _ in 1 2 3 4 5; do skip "mpirun not found"; done
fi
# the layout flags are train's, one definition (train/flags.h G3_TRAIN_LAYOUT_SPECS)
topo_help=$("$GPT3D" topo --help 2>&1 || true)
train_help=$("$GPT3D" train --help 2>&1 || true)
for f in tensor-model-parallel-size pipeline-model-parallel-size topology-file distributed-timeout-minutes; do
    is "$(printf '%s\n' "$topo_help" | grep -c -- "--$f ")" 1 "gpt3d topo declares --$f once"
    is "$(printf '%s\n' "$topo_help" | grep -- "--$f ")" "$(printf '%s\n' "$train_help" | grep -- "--$f ")" \
        "gpt3d topo's --$f is gpt3d train's"
done
done_testing

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
# shellcheck source=tests/slurm/real.sh
. "$top_srcdir/tests/slurm/real.sh"
set -eo pipefail

real_start 4

# The uninterrupted reference: one "gpt3d train" outside Slurm.
ref=$W/reference
run "$GPT3D" train "${real_flags[@]}" --run-dir "$ref"
is "$rc" 0 "the uninterrupted reference run (gpt3d train, one rank, no Slurm) completes"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -n 12 | sed 's/^/#   /'
want=$(seq 1 12 | tr '\n' ' ')

# (1) The warning signal during training, then the next job resumes.
run_sig=$W/signal
GPT3D_DEBUG_STOP_AFTER_ITERATION=3 real_submit --chain 1 -N 1 "$run_sig" >"$W/signal.submit" 2>&1
sig_first=$(head -n 1 "$run_sig/chain" 2>/dev/null || true)
real_signal_during_training "$run_sig" "$sig_first" 1
sub_wait_end "$run_sig" 120
sub_check "(1) after the warning signal during training the run completes" "$run_sig" test -e "$run_sig/COMPLETE"
is "$(sub_outcomes "$run_sig")" "checkpointed complete " "(1) attempts: checkpointed (exit 75), then complete"
is "$(tail -n +2 "$run_sig/attempts.tsv" | cut -f9 | tr '\n' ' ')" "75 0 " "(1) the trainer exited 75, then 0"
saved=$(sed -n 2p "$run_sig/attempts.tsv" | cut -f8) || true
sub_check "(1) the first job saved mid-run (iteration $saved, between 3 and 11)" "$run_sig" \
    sh -c "[ '${saved:-0}' -ge 3 ] && [ '${saved:-0}' -lt 12 ]"
like "$(cat "$run_sig"/logs/*)" "resumed from the checkpoint of iteration $saved" "(1) the second job resumed from that checkpoint"
is "$(real_iters "$run_sig")" "$want" "(1) metrics.jsonl holds iterations 1..12, each once"
is "$(real_losses "$run_sig")" "$(real_losses "$ref")" "(1) the 12 losses are bitwise those of the uninterrupted run"
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
GPT3D_DEBUG_STOP_AFTER_ITERATION=3 real_submit --chain 2 --sizes 2,4 "$run_el" -- --use-distributed-optimizer >"$W/elastic.submit" 2>&1
el_first=$(head -n 1 "$run_el/chain" 2>/dev/null || true)
el_second=$(sed -n 2p "$run_el/chain" 2>/dev/null || true)
# The second job is held until all four nodes are idle: with --nodes=2-4 it
# would otherwise start on whatever is free at that moment (the first job's
# nodes may still be completing) and train with DP 2.
scontrol hold "$el_second" || true
real_signal_during_training "$run_el" "$el_first" 2
is "$(g3c_job_field "$el_first" NumNodes)" 2 "(3) the first job (--nodes=2-4, 2 nodes free) runs on 2 nodes"
scancel "$hold"
g3c_wait 150 g3c_job_state_is "$el_first" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' || true
g3c_wait 150 g3c_all_idle || true
scontrol release "$el_second" || true
sub_wait_end "$run_el" 150
sub_check "(3) the elastic run completes" "$run_el" test -e "$run_el/COMPLETE"
is "$(sub_outcomes "$run_el")" "checkpointed complete " "(3) attempts: checkpointed on 2 nodes, complete on the next job"
el_saved=$(sed -n 2p "$run_el/attempts.tsv" | cut -f8) || true
sub_check "(3) the 2-node job saved mid-run (iteration $el_saved, between 3 and 11)" "$run_el" \
    sh -c "[ '${el_saved:-0}' -ge 3 ] && [ '${el_saved:-0}' -lt 12 ]"
el_nodes=$(tail -n 1 "$run_el/attempts.tsv" | cut -f6) || true
is "$(scontrol show hostnames "$el_nodes" 2>/dev/null | wc -l)" 4 "(3) the second job ran on 4 nodes ($el_nodes)"
logs=$(cat "$run_el"/logs/* 2>/dev/null) || true
like "$logs" "layout: TP 1 x PP 1 x DP 2 = 2 ranks on 2 nodes" "(3) the first job trained with DP 2"
like "$logs" "layout: TP 1 x PP 1 x DP 4 = 4 ranks on 4 nodes" "(3) the second job trained with DP 4"
is "$(real_iters "$run_el")" "$want" "(3) metrics.jsonl holds iterations 1..12, each once"
real_within_check "(3) the losses across DP 2 -> DP 4 are within 1e-5 of the uninterrupted run" "$run_el" \
    "$(real_losses "$ref")" "$(real_losses "$run_el")" 1e-5

done_testing

#!/bin/bash
# The batch suite (gpt3d-submit, gpt3d-train.sbatch) on a private Slurm
# cluster, with tests/slurm/fake-train.sh -- a TEST DOUBLE that stands in for
# "gpt3d train" (saves on SIGUSR2 and exits 75, counts iterations) -- given
# through gpt3d-submit --train-command.  Scenarios: a run completes and the
# rest of its chain is cancelled; the warning signal makes a checkpoint and the
# next job continues; a failure after progress is retried; failures without
# progress stop the chain, --retry resumes it; a usage error stops at once;
# re-running gpt3d-submit never starts a second chain and mends a broken one;
# a node crash: the job is requeued, the node excluded, the run completes;
# elastic sizes: a job shrinks to an allowed size, the next one grows;
# a job that checkpoints with two successors queued ends COMPLETED (no
# SIGPIPE); two gpt3d-submit at once on a new run make one run and one chain;
# a run on node-local storage is refused, checked on every node, and a job
# that dies before its log is named by --status.  Every wait is for a state
# (a file, a job state), never for a time: the test double pauses
# (--pause-at) where a test looks at a running job.
# (top_srcdir and top_builddir come from make check.)
# shellcheck disable=SC2154
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/slurm/runs.sh
. "$top_srcdir/tests/slurm/runs.sh"
set -eo pipefail

G3C_SLURMD_TIMEOUT=3
g3c_need 4
W=$G3C_WORK
loc=""
trap 'g3_rc=$?; if [ -n "$loc" ]; then rm -rf "$loc"; fi; (exit "$g3_rc"); g3c_stop' EXIT
cd "$W"

# each_iteration_once RUN N: iterations.log holds 1..N, each exactly once.
each_iteration_once() {
    [ "$(awk '{print $2}' "$1/iterations.log" | sort -n | uniq | tr '\n' ' ')" = "$(seq 1 "$2" | tr '\n' ' ')" ] &&
    [ "$(wc -l <"$1/iterations.log")" -eq "$2" ]
}

# Start the scenarios that can run side by side (one or two nodes each).
run_ok=$W/complete
sub_fake --chain 2 -N 2 "$run_ok" -- --train-iters 20 --seconds-per-iter 0.05 >"$W/complete.submit" 2>&1
run_sig=$W/signal
sub_fake --chain 1 -N 1 "$run_sig" -- --train-iters 120 --seconds-per-iter 0.05 --pause-at 10 >"$W/signal.submit" 2>&1
run_retry=$W/retry
sub_fake --chain 1 -N 1 "$run_retry" -- --train-iters 30 --seconds-per-iter 0.02 --save-interval 5 \
    --fail-at 13 --fail-times 1 >/dev/null 2>&1
run_stop=$W/stop
sub_fake --chain 3 -N 1 --max-failures 2 "$run_stop" -- --train-iters 30 --seconds-per-iter 0.02 --fail-at 3 >/dev/null 2>&1
run_usage=$W/usage
sub_fake --chain 2 -N 1 "$run_usage" -- --train-iters 30 --fail-at 2 --exit-code 2 >/dev/null 2>&1

# 1. A run that completes in its first job; its successor is cancelled.
like "$(cat "$W/complete.submit")" "submitted a chain of 2 jobs" "gpt3d-submit submits a chain of 2 jobs"
sub_wait_end "$run_ok" 60
sub_check "the run completes (COMPLETE written)" "$run_ok" test -e "$run_ok/COMPLETE"
is "$(sub_outcomes "$run_ok")" "complete " "one attempt, complete"
sub_check "every iteration ran exactly once" "$run_ok" each_iteration_once "$run_ok" 20
second=$(sed -n 2p "$run_ok/chain")
g3c_wait 20 g3c_job_state_is "$second" CANCELLED || true
is "$(g3c_job_field "$second" JobState)" CANCELLED "the chain's queued successor is cancelled"
is "$(cat "$run_ok/checkpoints/latest")" iter_0000020 "checkpoints/latest names the final iteration"
like "$(grep -c . "$run_ok/fake-starts.log") $(cat "$run_ok/fake-starts.log")" "^1 .*nodes n\[[0-9]-[0-9]\] ranks 2" \
    "the trainer ran once, as 2 ranks on 2 nodes (srun --mpi=pmix)"

# Re-running gpt3d-submit on a complete run submits nothing.
run "$SUBMIT" "$run_ok"
is "$rc" 0 "gpt3d-submit on a complete run exits 0"
like "$out" "is complete" "... and says the run is complete"
is "$(wc -l <"$run_ok/chain")" 2 "... and submits no job"

# 2. The warning signal: the trainer saves and exits 75, the chain (of one
# job) extends itself, the next job resumes from the checkpoint.
# The trainer pauses after iteration 10 until the signal: the job is surely
# still running when gpt3d-submit looks at it, however fast the machine.
g3c_wait 120 test -e "$run_sig/fake-paused" || true
first=$(head -n 1 "$run_sig/chain")
# Re-running gpt3d-submit while the chain runs submits nothing.
run "$SUBMIT" "$run_sig"
like "$out" "already has a chain queued or running \(jobs $first\)" "gpt3d-submit leaves a running chain alone"
is "$(wc -l <"$run_sig/chain")" 1 "... and submits no second chain"
scancel --batch --signal=USR2 "$first"
sub_wait_end "$run_sig" 60
sub_check "after the warning signal the run completes" "$run_sig" test -e "$run_sig/COMPLETE"
is "$(sub_outcomes "$run_sig")" "checkpointed complete " "attempts: checkpointed (75), then complete"
is "$(tail -n +2 "$run_sig/attempts.tsv" | cut -f9 | tr '\n' ' ')" "75 0 " "the history keeps the trainer's exit codes"
is "$(wc -l <"$run_sig/chain")" 2 "the job extended the chain by one job"
resumed=$(sed -n 2p "$run_sig/fake-starts.log" | awk '{print $3}') || true
is "$resumed" "$(sed -n 2p "$run_sig/attempts.tsv" | cut -f8)" "the second job resumed from the checkpoint the first saved"
sub_check "every iteration ran exactly once across the two jobs (as in an uninterrupted run)" "$run_sig" \
    each_iteration_once "$run_sig" 120
like "$(cat "$run_sig"/logs/*)" "warning signal USR2" "the job log records the warning signal"
run "$SUBMIT" --status "$run_sig"
like "$out" "training: +iteration 120 of 120, loss 0.082645, 50.0 ms/iteration, 7680 tokens, about 0h00m" \
    "gpt3d-submit --status reads progress from the trainer's metrics.jsonl"
like "$out" "checkpointed +checkpoint saved on request" "gpt3d-submit --status lists the attempts with their reasons"

# 3. A failure after progress is retried and the run completes.
sub_wait_end "$run_retry" 60
sub_check "a run that failed once after progress completes" "$run_retry" test -e "$run_retry/COMPLETE"
is "$(sub_outcomes "$run_retry")" "failed complete " "attempts: failed, complete"
is "$(sed -n 2p "$run_retry/attempts.tsv" | cut -f8,9 | tr '\t' ' ')" "10 1" \
    "the failed attempt reached the checkpoint of iteration 10 and exited 1"
sub_check "iterations 11 and 12 ran twice, all others once" "$run_retry" sh -c \
    "[ \"\$(awk '{print \$2}' '$run_retry/iterations.log' | sort -n | uniq -d | tr '\n' ' ')\" = '11 12 ' ]"

# 4. Failures without progress stop the chain; --retry resumes it.
sub_wait_end "$run_stop" 60
sub_check "two failures without progress stop the run (FAILED written)" "$run_stop" test -e "$run_stop/FAILED"
is "$(sub_outcomes "$run_stop")" "failed failed " "attempts: failed, failed"
like "$(cat "$run_stop/FAILED")" "2 failed attempts in a row without progress \(limit 2\)" "FAILED says why"
third=$(sed -n 3p "$run_stop/chain")
g3c_wait 20 g3c_job_state_is "$third" CANCELLED || true
is "$(g3c_job_field "$third" JobState)" CANCELLED "the rest of the chain is cancelled"
run "$SUBMIT" "$run_stop"
is "$rc" 1 "gpt3d-submit on a stopped run exits 1"
like "$out" "resume with: gpt3d-submit --retry" "... and tells how to resume"
run "$SUBMIT" --retry "$run_stop"
is "$rc" 0 "gpt3d-submit --retry resubmits"
like "$out" "submitted a chain of 3 jobs" "... a new chain"
g3c_wait 60 sh -c "[ \$(tail -n +2 '$run_stop/attempts.tsv' | grep -c failed) -ge 4 ] && [ -e '$run_stop/FAILED' ]" || true
is "$(sub_outcomes "$run_stop")" "failed failed retry failed failed " \
    "failures before --retry do not count: two more attempts, then it stops again"

# 5. A usage error (exit 2) stops the chain at once.
sub_wait_end "$run_usage" 60
sub_check "a usage error stops the run after one attempt" "$run_usage" test -e "$run_usage/FAILED"
is "$(sub_outcomes "$run_usage")" "failed " "one attempt"
like "$(cat "$run_usage/FAILED")" "usage error \(exit 2\)" "FAILED names the usage error"

# 6. A broken chain (its jobs cancelled) is mended by re-running gpt3d-submit.
run_broken=$W/broken
sub_fake --chain 2 -N 1 "$run_broken" -- --train-iters 150 --seconds-per-iter 0.05 --save-interval 5 >/dev/null 2>&1
g3c_wait 30 sh -c "[ \$(wc -l <'$run_broken/iterations.log' 2>/dev/null || echo 0) -ge 20 ]" || true
# shellcheck disable=SC2046
scancel $(cat "$run_broken/chain")
g3c_wait 30 sh -c "! squeue -h -o %i | grep -qxF -f '$run_broken/chain'" || true
run "$SUBMIT" "$run_broken"
is "$rc" 0 "gpt3d-submit on a run whose chain was cancelled exits 0"
like "$out" "resuming .* from iteration [1-9][0-9]* with a new chain" "... and resumes it from its checkpoint"
is "$(wc -l <"$run_broken/chain")" 4 "... with a new chain of 2 jobs"
sub_wait_end "$run_broken" 60
sub_check "the mended run completes" "$run_broken" test -e "$run_broken/COMPLETE"
run "$SUBMIT" --nodes 2 "$run_broken"
is "$rc" 1 "re-running with other settings is refused"
like "$out" "created with other settings" "... with a message saying so"

# 7. A node crashes during a 2-node job: Slurm requeues the job, the node is
# excluded, the run resumes on other nodes from its checkpoint and completes.
run_node=$W/node
sub_fake --chain 1 -N 2 "$run_node" -- --train-iters 400 --seconds-per-iter 0.05 --save-interval 5 >/dev/null 2>&1
g3c_wait 30 sh -c "[ \$(wc -l <'$run_node/iterations.log' 2>/dev/null || echo 0) -ge 20 ]" || true
job=$(head -n 1 "$run_node/chain")
victim=$(scontrol show hostnames "$(g3c_job_field "$job" NodeList)" | sed -n 2p) || true
g3c_kill_node "$victim" --crash
sub_wait_end "$run_node" 90
sub_check "after a node crash the run completes" "$run_node" test -e "$run_node/COMPLETE"
is "$(sort -u "$run_node/excluded-nodes" 2>/dev/null | tr '\n' ' ')" "$victim " "the crashed node ($victim) is excluded from the run"
last_nodes=$(tail -n 1 "$run_node/attempts.tsv" | cut -f6) || true
sub_check "the last attempt ran without $victim (on $last_nodes)" "$run_node" \
    sh -c "! scontrol show hostnames '$last_nodes' | grep -qx '$victim'"
is "$(tail -n 1 "$run_node/attempts.tsv" | cut -f3)" 1 "the job was requeued by Slurm (restart 1)"
sub_check "iterations continue from the checkpoint (no iteration lost)" "$run_node" sh -c \
    "[ \"\$(awk '{print \$2}' '$run_node/iterations.log' | sort -un | wc -l)\" -eq 400 ]"
run "$SUBMIT" --status "$run_node"
like "$out" "excluded: +$victim" "gpt3d-submit --status lists the excluded node"
like "$out" "  $victim: Slurm reports it [A-Z_+*]*DOWN[^ ]* after attempt 1 of job $job " \
    "... with the attempt after which Slurm reported it down (#14.7)"
like "$out" "state: +complete" "gpt3d-submit --status says complete"

# 8. Elastic sizes: --sizes 2,4 makes each job ask for --nodes=2-4.  With the
# crashed node still down the first job gets 3 nodes and shrinks to 2; once the
# node is back and the warning signal has ended that job, the next one gets 4:
# DP doubles, the global batch stays (gradient accumulation halves).
idle_count() { sinfo -h -N -t idle -o %N | sort -u | wc -l; }
g3c_wait 30 sh -c "[ \$(sinfo -h -N -t idle -o %N | sort -u | wc -l) -eq 3 ]" || true
is "$(idle_count)" 3 "3 nodes are idle while $victim is down"
run_el=$W/elastic
sub_fake --chain 2 --sizes 2,4 "$run_el" -- --train-iters 300 --seconds-per-iter 0.05 --save-interval 5 \
    --global-batch-size 8 --micro-batch-size 2 --pause-at 10 >/dev/null 2>&1
el_first=$(head -n 1 "$run_el/chain")
el_second=$(sed -n 2p "$run_el/chain")
# The second job is held until all four nodes are idle again: with
# --nodes=2-4 it would otherwise start on the nodes free at that moment (the
# first job's may still be completing) and train with DP 2.
scontrol hold "$el_second"
g3c_wait 120 test -e "$run_el/fake-paused" || true
is "$(g3c_job_field "$el_first" NumNodes)" 2 "the first job (given 3 of --nodes=2-4) shrank to 2 nodes"
like "$(cat "$run_el"/logs/*)" "the job got 3 nodes; shrinking to 2" "its log says so"
g3c_start_node "$victim"
g3c_wait 30 sh -c "scontrol show node '$victim' | grep -q 'State=IDLE '" || true
g3c_wait 30 sh -c "[ \$(sinfo -h -N -t idle -o %N | sort -u | wc -l) -eq 2 ]" || true
scancel --batch --signal=USR2 "$el_first"
g3c_wait 120 g3c_job_state_is "$el_first" 'COMPLETED|FAILED|CANCELLED' || true
g3c_wait 120 g3c_all_idle || true
scontrol release "$el_second"
sub_wait_end "$run_el" 120
sub_check "the elastic run completes" "$run_el" test -e "$run_el/COMPLETE"
sub_check "attempts: checkpointed on 2 nodes, complete on 4" "$run_el" [ "$(sub_outcomes "$run_el")" = "checkpointed complete " ]
like "$(sed -n 1p "$run_el/fake-starts.log")" "ranks 2 dp 2 accum 2\$" "the first job trained with DP 2, accumulating 2 micro-batches"
like "$(sed -n 2p "$run_el/fake-starts.log")" "ranks 4 dp 4 accum 1\$" "the second job trained with DP 4 and the same global batch"
sub_check "every iteration ran exactly once across the sizes" "$run_el" each_iteration_once "$run_el" 300

# 9. A job that checkpoints with two jobs of its chain queued behind it ends
# COMPLETED, exit 0: no SIGPIPE (141) from reading the list of successors.
run_pipe=$W/pipe
sub_fake --chain 3 -N 1 --no-health-check "$run_pipe" -- --train-iters 6 --seconds-per-iter 0.02 --pause-at 3 >/dev/null 2>&1
g3c_wait 120 test -e "$run_pipe/fake-paused" || true
p_first=$(sed -n 1p "$run_pipe/chain")
p_second=$(sed -n 2p "$run_pipe/chain")
scancel --batch --signal=USR2 "$p_first"
g3c_wait 120 g3c_job_state_is "$p_first" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' || true
is "$(g3c_job_field "$p_first" JobState) $(g3c_job_field "$p_first" ExitCode)" "COMPLETED 0:0" \
    "a job that checkpointed with two successors queued ends COMPLETED, exit 0 (#14.1)"
like "$(cat "$run_pipe"/logs/*)" "the chain continues with job $p_second" "... and hands the run to the next job of its chain"
sub_wait_end "$run_pipe" 120
sub_check "... which completes the run" "$run_pipe" test -e "$run_pipe/COMPLETE"

# 10. Two gpt3d-submit at the same moment on one new run directory: one run,
# one chain; the other submission finds it (#14.2).
for i in 1 2; do
    sub_fake --chain 2 -N 1 --no-health-check "$W/race$i" -- --train-iters 5 --seconds-per-iter 0.02 >"$W/race$i.a" 2>&1 &
    pa=$!
    sub_fake --chain 2 -N 1 --no-health-check "$W/race$i" -- --train-iters 5 --seconds-per-iter 0.02 >"$W/race$i.b" 2>&1 &
    pb=$!
    wait "$pa" || true
    wait "$pb" || true
    is "$(wc -l <"$W/race$i/chain") $(cat "$W/race$i.a" "$W/race$i.b" | grep -c 'submitted a chain of 2 jobs')" "2 1" \
        "two gpt3d-submit at once on a new run directory (try $i) submit one chain of 2 jobs"
    sub_wait_end "$W/race$i" 120
    is "$(sub_outcomes "$W/race$i")" "complete " "... whose run trains once and completes"
done

# 11. Node-local storage (#14.8).  The cluster's TmpFS is /tmp, private to each
# node: gpt3d-submit refuses a run there and creates nothing.
loc=/tmp/gpt3d-local-$$
run sub_fake -N 1 "$loc/run" -- --train-iters 5
is "$rc" 1 "a run directory under the node-local TmpFS (/tmp) is refused"
like "$out" "node-local temporary storage of this cluster \(TmpFS in slurm.conf\)" "... saying why"
is "$( [ -e "$loc" ] && echo exists || echo absent)" absent "... and nothing is created"
# A run that only its first node sees (a copy in n1's own /tmp, submitted with
# sbatch as a site without TmpFS set would): the job's check finds that n2
# does not see it and excludes n2 with the reason.
sub_fake --create-only -N 2 --no-health-check --max-failures 1 "$W/localsrc" -- --train-iters 5 --seconds-per-iter 0.02 >/dev/null
cp -a "$W/localsrc" "$loc"
cp -a "$W/localsrc" "$G3C_DIR/nodes/n1/tmp/${loc#/tmp/}"
vis=$(sbatch --parsable -N 2 -w n1,n2 --chdir=/ --output="$loc/logs/vis-%j.out" "$loc/gpt3d-train.sbatch" "$loc")
g3c_wait 120 g3c_job_state_is "$vis" 'COMPLETED|FAILED|CANCELLED' || true
n1copy=$G3C_DIR/nodes/n1/tmp/${loc#/tmp/}
like "$(cat "$n1copy/exclusions.tsv" 2>/dev/null)" "	n2	the run directory $loc is not visible there \(not mounted on it, or on node-local storage\)" \
    "the job finds that n2 does not see the run directory and excludes it, saying why"
is "$(tail -n +2 "$n1copy/attempts.tsv" 2>/dev/null | cut -f10)" unhealthy "... and does not start the trainer"
# A job whose first node does not see the run at all dies before writing its
# log: gpt3d-submit --status names it.
nolog=$(sbatch --parsable -N 1 -w n2 --chdir="$loc" --output="$loc/logs/nolog-%j.out" "$loc/gpt3d-train.sbatch" "$loc")
echo "$nolog" >>"$loc/chain"
g3c_wait 120 g3c_job_state_is "$nolog" 'FAILED|COMPLETED|CANCELLED|NODE_FAIL' || true
run "$SUBMIT" --status "$loc"
like "$out" "job $nolog ended [A-Z_]+ \([^)]*\) without writing its log $loc/logs/nolog-$nolog.out" \
    "--status names the job that died before writing its log"
like "$out" "is $loc on storage that every compute node sees" "... and asks whether the run is on shared storage"
rm -rf "$loc"

done_testing

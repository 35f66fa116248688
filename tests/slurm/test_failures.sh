#!/bin/bash
# When a job fails (docs/slurm.md, "When a job fails"), on a private Slurm cluster with
# tests/slurm/fake-train.sh -- a TEST DOUBLE standing in for "gpt3d train", given through
# gpt3d-submit --train-command.  Scenarios: (1) a job that Slurm gives a node the run has
# excluded (as a requeued job keeps the exclusions it was submitted with) does not train
# on it, and the next job of the chain runs without it; (2) a failed step's history names
# its node and what srun said; (3) a fixed-size run whose exclusions leave too few nodes
# stops with FAILED naming them and --clear-exclusions, instead of queueing a job that can
# never start; (4) a damaged newest checkpoint (the trainer exits 78) stops the run after
# one attempt, naming the file and the check, and "gpt3d-submit --retry --load-fallback"
# resumes from the newest checkpoint that loads; (5) a variant of a study fixed by editing
# its train.args: --summary shows the edit and re-running the study keeps it.  Every wait
# is for a state (a file, a job state), never for a time.
# (top_srcdir and top_builddir come from make check.)
# shellcheck disable=SC2154,SC2016
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/slurm/runs.sh
. "$top_srcdir/tests/slurm/runs.sh"
set -eo pipefail

# No node is killed here: a long SlurmdTimeout keeps a busy machine's slow slurmd from
# being declared dead.
G3C_SLURMD_TIMEOUT=60
g3c_need 4
W=$G3C_WORK
cd "$W"

# 1. Slurm gives a job a node the run excludes (a requeued job keeps the --exclude it was
# submitted with; here the job is submitted by hand onto n1,n2 after n2 was excluded).
run_ex=$W/excluded
sub_fake --create-only --chain 1 -N 2 --no-health-check "$run_ex" -- --train-iters 10 --seconds-per-iter 0.02 >/dev/null
echo n2 >"$run_ex/excluded-nodes"
printf '2026-01-01T00:00:00\t1\tn2\tSlurm reports it DOWN after attempt 1 of job 1\n' >"$run_ex/exclusions.tsv"
mapfile -t ex_args <"$run_ex/sbatch.args"
ex_job=$(sbatch --parsable "${ex_args[@]}" -w n1,n2 "$run_ex/gpt3d-train.sbatch" "$run_ex")
echo "$ex_job" >>"$run_ex/chain"

# 2. A step that fails: the history names its node and what srun said.
run_fail=$W/fail
sub_fake --chain 1 -N 1 --no-health-check --max-failures 1 "$run_fail" -- --train-iters 10 --seconds-per-iter 0.02 \
    --fail-at 2 --exit-code 3 >/dev/null

sub_wait_end "$run_ex" 120
sub_check "a run whose job got an excluded node completes" "$run_ex" test -e "$run_ex/COMPLETE"
is "$(sub_outcomes "$run_ex")" "unhealthy complete " "attempts: the job on the excluded node does not train, the next one completes"
like "$(sed -n 2p "$run_ex/attempts.tsv" | cut -f11)" "nodes the run excludes, or failing the health check: n2" \
    "the first attempt names the excluded node it got"
like "$(cat "$run_ex"/logs/*)" "this job got n2, which the run excludes \(Slurm reports it DOWN after attempt 1 of job 1\)" \
    "the job log says so, with the reason of the exclusion"
# started_on RUN: every node the test double started on, one per line.
started_on() { awk '{print $7}' "$1/fake-starts.log" 2>/dev/null | while read -r l; do scontrol show hostnames "$l"; done; }
ran_on=$(started_on "$run_ex" | sort -u | tr '\n' ' ') || true
sub_check "the trainer never ran on n2 (it ran on: $ran_on)" "$run_ex" sh -c "[ -n '$ran_on' ] && ! echo '$ran_on' | grep -qw n2"

sub_wait_end "$run_fail" 120
like "$(sed -n 2p "$run_fail/attempts.tsv" | cut -f11)" "the trainer exited with status 3 on n[0-9] \(srun: n[0-9]: task 0: Exited with exit code 3\)" \
    "a failed attempt names its node and what srun said about it"

# 3. A fixed-size run of 3 nodes whose health check fails on n3 and n4: once both are
# excluded only 2 of the 4 nodes are left; the run stops saying so (before: a job queued
# with an exclusion list Slurm can never satisfy, PENDING BadConstraints, "in progress").
run_few=$W/few
g3c_wait 60 g3c_all_idle || true
sub_fake --chain 2 -N 3 --max-failures 5 --node-check '[ "$SLURMD_NODENAME" != n3 ] && [ "$SLURMD_NODENAME" != n4 ]' \
    "$run_few" -- --train-iters 10 --seconds-per-iter 0.02 >/dev/null
sub_wait_end "$run_few" 180
sub_check "a fixed-size run left with too few nodes is stopped (FAILED)" "$run_few" test -e "$run_few/FAILED"
like "$(head -n 1 "$run_few/FAILED" 2>/dev/null)" "too few nodes left: a job of this run needs 3 node\(s\), and the run excludes n3,n4 of the 4 nodes of its partition, leaving 2" \
    "FAILED names the excluded nodes and the count"
like "$(cat "$run_few/FAILED" 2>/dev/null)" "gpt3d-submit --retry --clear-exclusions $run_few" "... and how to go on once they are repaired"
run "$SUBMIT" --status "$run_few"
like "$out" "state: +stopped \(run stopped .*too few nodes left" "--status says the run is stopped, and why"
g3c_wait 60 sh -c "[ -z \"\$(squeue -h -o %i | grep -xF -f '$run_few/chain')\" ]" || true
is "$(squeue -h -o %i | grep -cxF -f "$run_few/chain" || true)" 0 "no job of the chain is left in the queue"
run "$SUBMIT" --retry --clear-exclusions --dry-run "$run_few"
like "$out" "would forget the excluded nodes n3,n4" "--retry --clear-exclusions would forget the exclusions"
run "$SUBMIT" --clear-exclusions "$run_few"
is "$rc" 1 "--clear-exclusions alone does not resume a stopped run"

# 4. A damaged newest checkpoint.  The run is made with checkpoints of iterations 5 and 10,
# the newest marked damaged (the test double then fails its load as gpt3d does: the
# checksum error, exit 78).
run_ck=$W/damaged
sub_fake --create-only --chain 2 -N 1 --no-health-check "$run_ck" -- --train-iters 20 --seconds-per-iter 0.02 >/dev/null
for i in 5 10; do mkdir -p "$run_ck/checkpoints/iter_00000$(printf %02d $i)"; echo "$i" >"$run_ck/checkpoints/iter_00000$(printf %02d $i)/iteration"; done
echo iter_0000010 >"$run_ck/checkpoints/latest"
touch "$run_ck/checkpoints/iter_0000010/damaged"
"$SUBMIT" "$run_ck" >/dev/null
sub_wait_end "$run_ck" 120
sub_check "a run whose newest checkpoint is damaged is stopped" "$run_ck" test -e "$run_ck/FAILED"
is "$(sub_outcomes "$run_ck")" "failed " "... after one attempt: no attempt is spent on a damage that cannot change"
like "$(head -n 1 "$run_ck/FAILED" 2>/dev/null)" "the checkpoint to resume from \(iter_0000010\) cannot be loaded \(exit 78\): checksum mismatch in $run_ck/checkpoints/iter_0000010/model_tp00_pp000.h5" \
    "FAILED names the checkpoint, the file and the check"
like "$(cat "$run_ck/FAILED" 2>/dev/null)" "resume from the newest checkpoint that loads with: gpt3d-submit --retry --load-fallback $run_ck" \
    "... and the recovery"
like "$(cat "$run_ck/summary.txt" 2>/dev/null)" "state: +stopped: the checkpoint to resume from \(iter_0000010\) cannot be loaded" "summary.txt says the same"
run "$SUBMIT" "$run_ck" -- --train-iters 20 --seconds-per-iter 0.02 --load-fallback
is "$rc" 1 "giving --load-fallback among the train flags of the run is refused"
like "$out" "give --retry --load-fallback instead" "... pointing to --retry --load-fallback"
run "$SUBMIT" --load-fallback "$run_ck"
is "$rc" 2 "--load-fallback without --retry is a usage error"
run "$SUBMIT" --retry --load-fallback "$run_ck"
is "$rc" 0 "gpt3d-submit --retry --load-fallback resumes"
like "$out" "the next job skips iter_0000010 if it does not load" "... saying which checkpoint it may skip"
sub_wait_end "$run_ck" 120
sub_check "... and the run completes from the checkpoint before the damaged one" "$run_ck" test -e "$run_ck/COMPLETE"
like "$(tail -n 1 "$run_ck/attempts.tsv" 2>/dev/null | cut -f11)" "--load-fallback: skipped iter_0000010, which does not load, and resumed from iteration 5" \
    "the history names the skipped checkpoint and where the run resumed"
is "$(awk '{print $2}' "$run_ck/iterations.log" 2>/dev/null | tr '\n' ' ')" "$(seq 6 20 | tr '\n' ' ')" "iterations 6 to 20 ran, once each"
is "$( [ -e "$run_ck/load-fallback" ] && echo left || echo gone)" gone "the fallback is not kept once a newer checkpoint is saved"

# 5. A study whose variant stops on a usage error; the variant is fixed by editing its
# train.args (as its stop message advises) and resumed with --retry.
printf 'good\nbad --fail-at 1 --exit-code 2\n' >"$W/abl.txt"
sub_fake --ablations "$W/abl.txt" -N 1 --no-health-check "$W/abl" -- --train-iters 5 --seconds-per-iter 0.02 >/dev/null
g3c_wait 120 sh -c "[ -e '$W/abl/good/COMPLETE' ] && [ -e '$W/abl/bad/FAILED' ]" || true
like "$(cat "$W/abl/bad/FAILED" 2>/dev/null)" "fix the trainer flags in $W/abl/bad/train.args" "the stopped variant says to fix its train.args"
grep -v -e '^--fail-at$' -e '^1$' -e '^--exit-code$' -e '^2$' "$W/abl/bad/train.args" >"$W/args.new" || true
printf -- '--lr\n0.5\n' >>"$W/args.new"
cp "$W/args.new" "$W/abl/bad/train.args"
run "$SUBMIT" --retry "$W/abl/bad"
is "$rc" 0 "the fixed variant is resumed with --retry"
g3c_wait 120 test -e "$W/abl/bad/COMPLETE" || true
run "$SUBMIT" --summary "$W/abl"
like "$out" "bad +complete +5 +[0-9.]+ +[0-9.]+ +[0-9.]+ +--lr 0.5 \(edited in train.args\)" "--summary shows the variant's flags as edited"
run sub_fake --ablations "$W/abl.txt" -N 1 --no-health-check "$W/abl" -- --train-iters 5 --seconds-per-iter 0.02
is "$rc" 0 "re-running the study command after the fix is not refused"
like "$out" "variant bad: its train.args was edited by hand; keeping the edit \(--lr 0.5 \(edited in train.args\)\)" "... it keeps the edit and says so"
like "$out" "no variant of .* needs a job" "... and submits nothing"
run "$SUBMIT" --status "$W/abl"
is "$rc" 1 "--status on a study directory exits 1"
like "$out" "is an ablation study, one run per variant \(good bad\): see them all with 'gpt3d-submit --summary $W/abl', or one with 'gpt3d-submit --status $W/abl/VARIANT'" \
    "... and points to --summary and --status DIR/VARIANT"

# 6. The whole chain cancelled: --status says the run is not running and how to resume.
run_c=$W/cancelled
sub_fake --chain 2 -N 1 --no-health-check "$run_c" -- --train-iters 400 --seconds-per-iter 0.05 --pause-at 2 >/dev/null
g3c_wait 120 test -e "$run_c/fake-paused" || true
# shellcheck disable=SC2046
scancel $(cat "$run_c/chain")
g3c_wait 60 sh -c "[ -z \"\$(squeue -h -o %i | grep -xF -f '$run_c/chain')\" ]" || true
run "$SUBMIT" --status "$run_c"
like "$out" "state: +not running: no job of its chain is queued or running .*resume it from the last checkpoint with: gpt3d-submit $run_c" \
    "after scancel of the whole chain --status says the run is not running and how to resume"

done_testing

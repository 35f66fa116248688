#!/bin/bash
# Finding bad nodes, and ablation arrays, on a private Slurm cluster with
# tests/slurm/fake-train.sh -- a TEST DOUBLE standing in for "gpt3d train"
# (given through gpt3d-submit --train-command) -- and the real gpt3d binary for
# the health check's communication test ("gpt3d topo" over PMIx).
# Scenarios: (1) the health check fails on a node of a fixed-size job: the
# attempt is "unhealthy" and the next job runs without the node; (2) the
# health check fails on a node of an elastic job: the job gives it back and
# trains on an allowed size without it; (3) the trainer exits 76 with gpt3d's
# timeout message naming a peer: its node is excluded and the next job
# resumes without it at a smaller allowed size; summary.txt tells the story;
# (4) an
# ablation table of three variants runs as one throttled job array and
# gpt3d-submit --summary lists all three.
# (top_srcdir and top_builddir come from make check.)
# shellcheck disable=SC2154,SC2016
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/slurm/runs.sh
. "$top_srcdir/tests/slurm/runs.sh"
set -eo pipefail

# No node is killed here: a long SlurmdTimeout keeps a busy machine's slow
# slurmd from being declared dead (a node "failure" that requeued a job and
# made its attempt "lost" on a loaded machine).
G3C_SLURMD_TIMEOUT=60
[ -x "$top_builddir/src/gpt3d" ] || skip_all "$top_builddir/src/gpt3d is not built (run make first)"
g3c_need 4
W=$G3C_WORK
# The health check's communication test runs the gpt3d that gpt3d-submit
# finds: the one just built.
PATH=$top_builddir/src:$PATH
cd "$W"

hosts() { scontrol show hostnames "$1" | tr '\n' ' '; }

# 1. Fixed-size job (2 nodes), health check fails on n2: this attempt does not
# train ("unhealthy"), the next job runs without n2.
run_hf=$W/health-fixed
sub_fake --chain 1 -N 2 --node-check '[ "$SLURMD_NODENAME" != n2 ]' "$run_hf" -- \
    --train-iters 20 --seconds-per-iter 0.05 >/dev/null

sub_wait_end "$run_hf" 60
sub_check "fixed-size run with a bad node completes" "$run_hf" test -e "$run_hf/COMPLETE"
is "$(sub_outcomes "$run_hf")" "unhealthy complete " "attempts: unhealthy, complete"
like "$(sed -n 2p "$run_hf/attempts.tsv" | cut -f11)" "health check failed on n2" "the unhealthy attempt names n2"
sub_check "the second attempt ran without n2" "$run_hf" sh -c \
    "! scontrol show hostnames '$(tail -n 1 "$run_hf/attempts.tsv" | cut -f6)' | grep -qx n2"
is "$(tail -n +2 "$run_hf/attempts.tsv" | cut -f8 | tr '\n' ' ')" "0 20 " "the unhealthy attempt did not train"

# 2. Elastic job, health check fails on n3 (the site's --node-check): the job
# got all 4 nodes, gives n3 back with the others it does not need, and trains
# on 2 (the largest allowed size among the 3 healthy nodes).
run_hc=$W/health-elastic
g3c_wait 20 g3c_all_idle || true
sub_fake --chain 1 --sizes 2,4 --node-check '[ "$SLURMD_NODENAME" != n3 ]' "$run_hc" -- \
    --train-iters 20 --seconds-per-iter 0.05 --global-batch-size 8 --micro-batch-size 2 >/dev/null
sub_wait_end "$run_hc" 40
sub_check "elastic run: completes after its health check failed on one node" "$run_hc" test -e "$run_hc/COMPLETE"
is "$(sub_outcomes "$run_hc")" "complete " "... in one attempt"
job=$(head -n 1 "$run_hc/chain")
is "$(cat "$run_hc/health/$job.0/n3.local")" "bad: the node check '[ \"\$SLURMD_NODENAME\" != n3 ]' exited 1" \
    "the health check records why n3 is bad"
is "$(cat "$run_hc/health/$job.0/n1.local" "$run_hc/health/$job.0/n2.local" "$run_hc/health/$job.0/n4.local" | tr '\n' ' ')" "ok ok ok " \
    "the other three nodes passed"
is "$(cat "$run_hc"/health/"$job".0/n*.comm | sort -u | tr '\n' ' ')" "ok " \
    "the communication test (gpt3d topo over PMIx, one task per node) passed on all four"
like "$(cat "$run_hc"/logs/*)" "the job got 4 nodes \(bad: n3\); shrinking to 2, the largest of the allowed sizes 2,4: n1,n2" \
    "the job gives n3 back and keeps 2 healthy nodes"
is "$(hosts "$(tail -n 1 "$run_hc/attempts.tsv" | cut -f6)")" "n1 n2 " "the attempt trained on n1 and n2"
like "$(cat "$run_hc/fake-starts.log")" "ranks 2 dp 2 accum 2\$" "... as 2 ranks, DP 2, the global batch kept by accumulation"
like "$(cat "$run_hc/exclusions.tsv")" "	n3	health check: the node check" "exclusions.tsv names n3 and the reason"

# 3. The trainer times out waiting for the rank on n3 and exits 76 (the test
# double prints gpt3d's timeout line for the rank Slurm placed on n3): the job
# reads the peer from the log, excludes n3, and the next job resumes on an
# allowed size without it.
run_to=$W/timeout
g3c_wait 20 g3c_all_idle || true
sub_fake --chain 1 --sizes 2,4 "$run_to" -- --train-iters 40 --seconds-per-iter 0.05 --save-interval 5 \
    --fail-at 8 --timeout-node n3 --global-batch-size 8 --micro-batch-size 2 >/dev/null
g3c_wait 30 sh -c "[ -s '$run_to/attempts.tsv' ]" || true

# 4. An ablation study: three variants, at most two at a time.
cat >"$W/ablations.txt" <<'EOF'
# variant   flags added to (or overriding) the common ones
base
lr-high     --lr 0.5        # the fake loss grows with --lr
short       --train-iters 10
EOF
run sub_fake \
    --ablations "$W/ablations.txt" --array-throttle 2 -N 1 --no-health-check "$W/abl" -- \
    --train-iters 20 --seconds-per-iter 0.05
is "$rc" 0 "gpt3d-submit --ablations submits"
like "$out" "submitted job array [0-9]+: variants 0,1,2 of 3, at most 2 at a time" "... one job array of the three variants"
array=$(head -n 1 "$W/abl/array-jobs")
like "$(scontrol -o show job "$array" 2>/dev/null | head -n 1)" "ArrayTaskThrottle=2" "Slurm holds the array to 2 tasks at a time"

# 5. The warning signal comes during the health check (a --node-check that
# waits until the test has sent the signal): the job does not start the
# trainer and the next job continues.
run_early=$W/early-warning
sub_fake --chain 1 -N 1 --node-check "while ! [ -e '$W/early-go' ]; do sleep 0.1; done" "$run_early" -- \
    --train-iters 10 --seconds-per-iter 0.05 >/dev/null
g3c_wait 120 sh -c "ls '$run_early'/health/*/step.out" || true
scancel --batch --signal=USR2 "$(head -n 1 "$run_early/chain")"
touch "$W/early-go"

sub_wait_end "$run_to" 60
sub_check "run with a timeout (exit 76) completes" "$run_to" test -e "$run_to/COMPLETE"
is "$(sub_outcomes "$run_to")" "failed complete " "attempts: failed (76), complete"
is "$(sed -n 2p "$run_to/attempts.tsv" | cut -f9)" 76 "the failed attempt exited 76"
like "$(sed -n 2p "$run_to/attempts.tsv" | cut -f11)" "distributed timeout \(exit 76\): the trainer waited for rank 2 on n3" \
    "the history names the rank waited for and its node"
is "$(sort -u "$run_to/excluded-nodes" | tr '\n' ' ')" "n3 " "n3 is excluded"
sub_check "the next job trained on 2 nodes without n3" "$run_to" sh -c \
    "[ \"\$(scontrol show hostnames '$(tail -n 1 "$run_to/attempts.tsv" | cut -f6)' | grep -vx n3 | wc -l)\" -eq 2 ]"
sub_check "iterations continue from the last checkpoint (iteration 5): 6 and 7 ran twice, every other once" "$run_to" sh -c \
    "[ \"\$(awk '{print \$2}' '$run_to/iterations.log' | sort -n | uniq -d | tr '\n' ' ')\" = '6 7 ' ] && [ \"\$(awk '{print \$2}' '$run_to/iterations.log' | sort -un | wc -l)\" -eq 40 ]"
run "$SUBMIT" --status "$run_to"
like "$out" "excluded: +n3" "gpt3d-submit --status lists the excluded node"
like "$out" "  n3: world rank 2 on it did not answer: the trainer timed out waiting for it \(exit 76\) in attempt 1 \(job [0-9]+," \
    "... and why it was excluded"
like "$out" "summary: +$run_to/summary.txt" "... and where the summary is"
run cat "$run_to/summary.txt"
like "$out" "^gpt3d run summary \(format gpt3d-run-summary 1\)" "summary.txt: written when the run ends, with its format"
like "$out" "state: +complete" "summary.txt: the end state"
like "$out" "checkpoint: +iteration 40" "summary.txt: the final iteration"
like "$out" "validation: +loss 0.268293 at iteration 40" "summary.txt: the final validation loss"
like "$out" "attempts: +2 \(" "summary.txt: the number of attempts"
like "$out" "node lists: +n\[1-4\] n\[[0-9,-]+\]" "summary.txt: the node lists"
like "$out" "n3 +world rank 2 on it did not answer" "summary.txt: the excluded node and why"

g3c_wait 60 sh -c "[ -e '$W/abl/base/COMPLETE' ] && [ -e '$W/abl/lr-high/COMPLETE' ] && [ -e '$W/abl/short/COMPLETE' ]" || true
run "$SUBMIT" --summary "$W/abl"
is "$rc" 0 "gpt3d-submit --summary exits 0"
like "$out" "variant +state +iteration +loss +valid_loss +tokens_per_s +flags" "the summary has a header"
like "$out" "base +complete +20 +0.476190 +0.523810 +1280.000 +-" "base: complete at 20, its losses and tokens/s"
like "$out" "lr-high +complete +20 +0.714286 +0.785714 +1280.000 +--lr 0.5" "lr-high: its own losses and flags"
like "$out" "short +complete +10 +0.909091 +1.000000 +1280.000 +--train-iters 10" "short: the overriding --train-iters 10"
is "$(tail -n +2 "$W/abl/summary.tsv" | cut -f1,2 | tr '\t\n' ': ')" "base:complete lr-high:complete short:complete " \
    "the table is also written to summary.tsv"
is "$(grep -c . "$W/abl/lr-high/iterations.log")" 20 "each variant trained in its own run directory"
run sub_fake \
    --ablations "$W/ablations.txt" --array-throttle 2 -N 1 --no-health-check "$W/abl"
like "$out" "no variant of .* needs a job" "re-running gpt3d-submit --ablations on a finished study submits nothing"

# 6. A variant whose array task is held back by the throttle is a job of its
# chain (#14.3): with a throttle of 1 and the first variant paused, the second
# is pending in the array, not "no job", and is not submitted again.
printf 'first\nsecond\n' >"$W/abl2.txt"
run sub_fake \
    --ablations "$W/abl2.txt" --array-throttle 1 -N 1 --no-health-check "$W/abl2" -- \
    --train-iters 4 --seconds-per-iter 0.02 --pause-at 2
array2=$(head -n 1 "$W/abl2/array-jobs" 2>/dev/null || echo none)
g3c_wait 120 sh -c "[ -e '$W/abl2/first/fake-paused' ] || [ -e '$W/abl2/second/fake-paused' ]" || true
if [ -e "$W/abl2/first/fake-paused" ]; then running=first waiting=second wk=1; else running=second waiting=first wk=0; fi
run "$SUBMIT" --summary "$W/abl2"
like "$out" "$waiting +queued " "--summary: the variant held back by the throttle is queued"
like "$out" "$running +running " "... and the paused one running"
run "$SUBMIT" --status "$W/abl2/$waiting"
like "$out" "chain:
  ${array2}_$wk PENDING " "--status: the pending array task is the variant's chain"
run sub_fake \
    --ablations "$W/abl2.txt" --array-throttle 1 -N 1 --no-health-check "$W/abl2" -- \
    --train-iters 4 --seconds-per-iter 0.02 --pause-at 2
like "$out" "variant $waiting has jobs queued or running; not submitting it again" \
    "re-running the study does not submit the pending variant a second time"
is "$(wc -l <"$W/abl2/array-jobs")" 1 "... no second array"
touch "$W/abl2/first/fake-go" "$W/abl2/second/fake-go"
g3c_wait 120 sh -c "[ -e '$W/abl2/first/COMPLETE' ] && [ -e '$W/abl2/second/COMPLETE' ]" || true
is "$(cat "$W/abl2/first/fake-starts.log" "$W/abl2/second/fake-starts.log" 2>/dev/null | grep -c .)" 2 \
    "each variant's trainer started once"

sub_wait_end "$run_early" 40
sub_check "a run warned during its health check completes" "$run_early" test -e "$run_early/COMPLETE"
is "$(sub_outcomes "$run_early")" "checkpointed complete " "attempts: the warned one (trainer not started), then complete"
like "$(sed -n 2p "$run_early/attempts.tsv" | cut -f11)" "came before the trainer started" "the history says the trainer was not started"
is "$(head -n 1 "$run_early/fake-starts.log" | awk '{print $3}') $(grep -c . "$run_early/fake-starts.log")" "0 1" \
    "the trainer started once, in the second job, from iteration 0"

done_testing

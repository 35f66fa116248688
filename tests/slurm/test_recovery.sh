#!/bin/bash
# The REAL trainer ("$GPT3D train": a tiny model on the test corpus
# $GPT3D_TEST_DATA/kjv) through gpt3d-submit on a private Slurm cluster of 4
# nodes, one rank per node, compared with uninterrupted "gpt3d train" runs
# outside Slurm:
# (2) a node fails during training (its slurmd and every process on it
#     killed): Slurm requeues the job, the run excludes the node, and the next
#     attempt shrinks to the largest allowed size without it (--sizes 2,4: 3
#     nodes left -> 2), resumes from the last checkpoint with DP 2 instead of
#     DP 4 and the same global batch, and completes; every iteration's last
#     loss is within 1e-5 of the uninterrupted run, and the iterations trained
#     twice (after the checkpoint, before the crash) agree with their re-runs.
# (4) an ablation table of three variants runs as one throttled job array,
#     each variant in its own run directory, and gpt3d-submit --summary lists
#     all three with the final metrics their trainers wrote; the base variant's
#     losses are bitwise those of a plain "gpt3d train" with the same flags.
# (top_srcdir, top_builddir, GPT3D and GPT3D_TEST_DATA come from make check.)
# shellcheck disable=SC2154,SC2001
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/slurm/real.sh
. "$top_srcdir/tests/slurm/real.sh"
set -eo pipefail

real_start 4
hosts() { scontrol show hostnames "$1" 2>/dev/null | tr '\n' ' '; }

# ---- (2) A node fails during training --------------------------------------
N2=40
run "$GPT3D" train "${real_flags[@]}" --train-iters $N2 --run-dir "$W/reference-40"
is "$rc" 0 "the uninterrupted $N2-iteration reference run (gpt3d train, one rank, no Slurm) completes"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -n 12 | sed 's/^/#   /'

g3c_wait 30 g3c_all_idle || true
run_nf=$W/node-failure
real_submit --chain 1 --sizes 2,4 "$run_nf" -- --train-iters $N2 --save-interval 5 >"$W/node-failure.submit" 2>&1
first=$(head -n 1 "$run_nf/chain" 2>/dev/null || true)
g3c_wait 120 g3c_job_state_is "$first" RUNNING || true
first_nodes=$(g3c_job_field "$first" NodeList)
victim=$(scontrol show hostnames "$first_nodes" | sed -n 2p) || true
# From iteration 8 on, the ranks are held still (SIGSTOP) while the node is
# crashed, then let go: the crash happens during training, however fast the
# machine trains the remaining iterations.
g3c_wait 120 sh -c "grep -q '\"iteration\":8,' '$run_nf/metrics.jsonl'" || true
g3c_signal_procs STOP gpt3d
g3c_kill_node "$victim" --crash
g3c_signal_procs CONT gpt3d
is "$(hosts "$first_nodes" | wc -w)" 4 "(2) the first job (--nodes=2-4, 4 nodes free) runs on 4 nodes ($first_nodes)"
sub_wait_end "$run_nf" 180
# The last iteration the first attempt logged (before the second attempt's start event): the
# crash came after it.
crash_iter=$(real_first_attempt_events "$run_nf" |
    sed 's/.*"iteration":\([0-9]*\),.*/\1/' | awk '{ last = $1 } END { print last + 0 }')
ok=1; [ "$crash_iter" -ge 8 ] || ok=0
is "$ok" 1 "(2) the first attempt trained to iteration 8 or beyond before the crash ($crash_iter)"
sub_check "(2) after $victim failed (at iteration $crash_iter) the run completes" "$run_nf" test -e "$run_nf/COMPLETE"
# (Whether the batch script on the first node records the attempt itself,
# after Slurm's SIGTERM, or is killed first and the requeued job records it,
# the attempt is "failed" with the node failure named: the suite classifies
# both the same way.)
is "$(sub_outcomes "$run_nf")" "failed complete " "(2) attempts: the one hit by the failure, then complete"
is "$(tail -n +2 "$run_nf/attempts.tsv" | cut -f2,3 | tr '\t\n' ': ')" "$first:0 $first:1 " \
    "(2) Slurm requeued the job after the failure (the same job, restart 1)"
like "$(sed -n 2p "$run_nf/attempts.tsv" | cut -f11)" "node failure \($victim [A-Z_+*]*DOWN" \
    "(2) the history names the failed node"
is "$(sort -u "$run_nf/excluded-nodes" 2>/dev/null | tr '\n' ' ')" "$victim " "(2) the failed node ($victim) is excluded from the run"
last_nodes=$(tail -n 1 "$run_nf/attempts.tsv" | cut -f6) || true
sub_check "(2) the last attempt ran on 2 nodes without $victim ($last_nodes)" "$run_nf" sh -c \
    "[ \"\$(scontrol show hostnames '$last_nodes' | grep -vx '$victim' | wc -l)\" -eq 2 ] && [ \"\$(scontrol show hostnames '$last_nodes' | wc -l)\" -eq 2 ]"
logs=$(cat "$run_nf"/logs/* 2>/dev/null) || true
like "$logs" "the job got 3 nodes.*; shrinking to 2" "(2) the requeued job got the 3 nodes left and shrank to 2, the largest allowed size"
like "$logs" "layout: TP 1 x PP 1 x DP 4 = 4 ranks on 4 nodes" "(2) before the failure the trainer ran with DP 4"
like "$logs" "layout: TP 1 x PP 1 x DP 2 = 2 ranks on 2 nodes" "(2) after it, with DP 2"
resumed=$(printf '%s\n' "$logs" | sed -n 's/.*resumed from the checkpoint of iteration \([0-9]*\).*/\1/p' | tail -n 1)
ok_resume=1
if [ -n "$resumed" ] && [ "$resumed" -ge 5 ] && [ $((resumed % 5)) -eq 0 ] && [ "$resumed" -le "$crash_iter" ]; then ok_resume=0; fi
sub_check "(2) the second attempt resumed from a checkpoint saved before the failure (iteration ${resumed:-none} <= $crash_iter)" "$run_nf" \
    test "$ok_resume" -eq 0
run "$SUBMIT" --status "$run_nf"
like "$out" "  $victim: Slurm reports it DOWN" "(2) gpt3d-submit --status says why $victim was excluded"
is "$(real_iters "$run_nf" | tr ' ' '\n' | sort -un | grep -c .)" $N2 "(2) every iteration 1..$N2 was trained"
real_within_check "(2) each iteration's last loss is within 1e-5 of the uninterrupted run" "$run_nf" \
    "$(real_losses "$W/reference-40")" "$(real_last_losses "$run_nf")" 1e-5
# The iterations the first attempt trained before the failure against the uninterrupted run's
# first ones.
before=$(real_first_attempt_events "$run_nf" | sed 's/.*"loss":\([^,]*\),.*/\1/' | tr '\n' ' ')
n_before=$(printf '%s' "$before" | wc -w)
real_within_check "(2) the $n_before iterations of the first attempt (DP 4) are within 1e-5 of the uninterrupted run" "$run_nf" \
    "$(real_losses "$W/reference-40" | cut -d' ' -f1-"$((n_before > 0 ? n_before : 1))") " "$before" 1e-5
is "$(cat "$run_nf/checkpoints/latest" 2>/dev/null)" iter_00000$N2 "(2) checkpoints/latest names the final iteration"

# ---- (4) An ablation array of three variants --------------------------------
run "$GPT3D" train "${real_flags[@]}" --eval-iters 2 --eval-interval 6 --run-dir "$W/reference-12"
is "$rc" 0 "the 12-iteration reference run (gpt3d train, one rank, no Slurm) completes"
cat >"$W/ablations.txt" <<'TABLE'
# variant   flags added to (or overriding) the common ones
base
lr-low      --lr 1e-3       # a tenth of the common learning rate
short       --train-iters 6
TABLE
g3c_wait 60 g3c_all_idle || true
run real_submit --ablations "$W/ablations.txt" --array-throttle 2 -N 1 --no-health-check "$W/abl" -- \
    --eval-iters 2 --eval-interval 6
is "$rc" 0 "(4) gpt3d-submit --ablations submits the study"
like "$out" "submitted job array [0-9]+: variants 0,1,2 of 3, at most 2 at a time" "(4) ... as one job array of the three variants"
array=$(head -n 1 "$W/abl/array-jobs" 2>/dev/null || true)
like "$(scontrol -o show job "$array" 2>/dev/null | head -n 1)" "ArrayTaskThrottle=2" "(4) Slurm holds the array to 2 tasks at a time"
g3c_wait 150 sh -c "for v in base lr-low short; do [ -e '$W/abl/'\$v/COMPLETE ] || [ -e '$W/abl/'\$v/FAILED ] || exit 1; done" || true
for v in base lr-low short; do
    sub_check "(4) variant $v completes in its own run directory" "$W/abl/$v" test -e "$W/abl/$v/COMPLETE"
done
is "$(real_losses "$W/abl/base")" "$(real_losses "$W/reference-12")" "(4) base: the 12 losses are bitwise those of gpt3d train with the same flags"
sub_check "(4) lr-low: its own losses (trained with --lr 1e-3, not those of base)" "$W/abl/lr-low" \
    sh -c "[ \"\$(printf '%s' '$(real_losses "$W/abl/lr-low")' | wc -w)\" -eq 12 ] && [ '$(real_losses "$W/abl/lr-low")' != '$(real_losses "$W/abl/base")' ]"
is "$(real_iters "$W/abl/short")" "1 2 3 4 5 6 " "(4) short: the overriding --train-iters 6 trained 6 iterations"
run "$SUBMIT" --summary "$W/abl"
is "$rc" 0 "(4) gpt3d-submit --summary exits 0"
summary=$out
like "$summary" "variant +state +iteration +loss +valid_loss +tokens_per_s +flags" "(4) the summary has a header"
# row VARIANT: what the summary must say, from the variant's own metrics.jsonl
row() {
    local m=$W/abl/$1/metrics.jsonl last ev
    last=$(grep '"event":"train"' "$m" | tail -n 1)
    ev=$(grep '"event":"eval"' "$m" | grep '"split":"valid"' | tail -n 1)
    printf '%s complete %s %s %s' "$1" "$(sed 's/.*"iteration":\([0-9]*\),.*/\1/' <<<"$last")" \
        "$(sed 's/.*"loss":\([^,]*\),.*/\1/' <<<"$last")" "$(sed 's/.*"loss":\([^,}]*\).*/\1/' <<<"$ev")"
}
for v in base lr-low short; do
    want=$(row "$v")
    got=$(printf '%s\n' "$summary" | awk -v v="$v" '$1 == v { print $1, $2, $3, $4, $5 }')
    is "$got" "$want" "(4) the summary's row for $v: state, final iteration, loss and validation loss from its metrics"
done
like "$summary" "lr-low .*--lr 1e-3" "(4) the summary shows each variant's flags"
is "$(tail -n +2 "$W/abl/summary.tsv" 2>/dev/null | cut -f1,2 | tr '\t\n' ': ')" "base:complete lr-low:complete short:complete " \
    "(4) the table is also written to summary.tsv"

done_testing

#!/bin/bash
# The batch library's decision (sbatch/lib/job.sh, g3_job_decide) without Slurm: every exit
# code of gpt3d (src/core/status.h, docs/exit-codes.md), and a status no code names, fed to it
# with and without Slurm's SIGTERM, failures below and at the limit, and too few nodes left;
# every outcome, action, reason and FAILED advice checked.
# (top_srcdir comes from make check.)
# shellcheck disable=SC2154
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -eo pipefail

# The library reads the job script's site settings; none of them matters to the decision.
# shellcheck source=sbatch/lib/common.sh
. "$top_srcdir/sbatch/lib/common.sh"
# shellcheck source=sbatch/lib/job.sh
. "$top_srcdir/sbatch/lib/job.sh"
g3_tmpdir
RUN=$TMPD/run
nodes="n[1-2]"
mkdir -p "$RUN/checkpoints"
echo iter_0000010 >"$RUN/checkpoints/latest"
retry_advice="after fixing the cause, resume with: gpt3d-submit --retry $RUN"
few_advice="once the excluded nodes are repaired, resume with: gpt3d-submit --retry --clear-exclusions $RUN (the run forgets its exclusions); or start a new run that fits the nodes left (a smaller --nodes, or --sizes)"
few="too few nodes left: a job of this run needs 2 node(s)"

# decide ARGS...: g3_job_decide ARGS, its results on one line: OUTCOME|ACTION|STOP_REASON|ADVICE
decide() {
    g3_job_decide "$@"
    echo "$g3_outcome|$g3_action|$g3_stop_reason|$g3_advice"
}

# The exit codes the test knows what to expect of: each of status.h's must be among them (a
# new code needs a decision and a line here).
declare -A kind=([OK]=complete [REQUEUE]=checkpoint [USAGE]=stop [NONFINITE]=stop
                 [CKPT_LOAD]=stop [FAILURE]=retry [COMM_TIMEOUT]=retry)
codes=$(sed -n 's/^ *G3_EXIT_\([A-Z_]*\) *= *\([0-9]*\).*/\1 \2/p' "$top_srcdir/src/core/status.h")
if [ -z "$codes" ]; then tap_result 1 "src/core/status.h has G3_EXIT_ codes"; fi
while read -r name code; do
    is "$(sed -n "s/^| $code | .*/$code/p" "$top_srcdir/docs/exit-codes.md")" "$code" \
        "exit code $code ($name) has its row in docs/exit-codes.md"
    var=G3_EXIT_$name
    is "${!var:-}" "$code" "lib/job.sh's G3_EXIT_$name is $code, as in src/core/status.h"
    detail="what the job found ($name)"
    case "${kind[$name]:-}" in
        complete)
            for args in "0 0 0" "1 3 3" "0 0 3"; do
                # shellcheck disable=SC2086  # TERMINATED FAILURES MAX_FAILURES
                is "$(decide "$code" $args "$few" "$detail")" "complete|complete||" \
                    "exit $code (terminated, failures, limit: $args; too few nodes): complete, whatever else"
            done
            is "$(decide "$code" 0; echo "$g3_reason")" "complete|complete||
the trainer finished the run" "exit $code: the reason says the run is finished" ;;
        checkpoint)
            for args in "0 0 0" "1 3 3"; do
                # shellcheck disable=SC2086
                is "$(decide "$code" $args "$few" "$detail")" "checkpointed|continue||" \
                    "exit $code (terminated, failures, limit: $args; too few nodes): checkpointed, the chain continues"
            done
            is "$(decide "$code" 1; echo "$g3_reason")" "checkpointed|continue||
checkpoint saved on request; the next job continues" "exit $code: the reason says a checkpoint was saved" ;;
        stop)
            advice=$retry_advice
            if [ "$name" = CKPT_LOAD ]; then
                advice="the checkpoint stays damaged, so the run was stopped at once; resume from the newest checkpoint that loads with: gpt3d-submit --retry --load-fallback $RUN (the trainer skips the damaged ones and the job log names them), or restore the damaged file and run gpt3d-submit --retry $RUN"
            fi
            for args in "0 1 3" "1 1 3" "0 5 3"; do
                # shellcheck disable=SC2086
                is "$(decide "$code" $args "" "$detail")" "failed|stop|$detail|$advice" \
                    "exit $code (terminated, failures, limit: $args): stop at once, FAILED with its advice"
            done
            is "$(decide "$code" 0 1 3 "$few" "$detail")" "failed|stop|$detail|$advice" \
                "exit $code with too few nodes left: stopped for the exit code, not the nodes" ;;
        retry)
            is "$(decide "$code" 0 1 3 "" "$detail")" "failed|retry||" "exit $code, failure 1 of 3: the next job retries"
            is "$(decide "$code" 0 2 3 "" "$detail")" "failed|retry||" "exit $code, failure 2 of 3: the next job retries"
            is "$(decide "$code" 1 1 3 "" "$detail")" "failed|slurm||" \
                "exit $code after Slurm's SIGTERM: left to Slurm (its requeue, or the chain's next job)"
            is "$(decide "$code" 0 3 3 "" "$detail")" \
                "failed|stop|3 failed attempts in a row without progress (limit 3); last: $detail|$retry_advice" \
                "exit $code, failure 3 of 3: stop, FAILED names the limit and the last failure"
            is "$(decide "$code" 1 4 3 "" "$detail")" \
                "failed|stop|4 failed attempts in a row without progress (limit 3); last: $detail|$retry_advice" \
                "exit $code past the limit after SIGTERM: stop all the same"
            is "$(decide "$code" 0 5 3 "$few" "$detail")" "failed|stop|$few|$few_advice" \
                "exit $code with too few nodes left: stop, FAILED says to repair or clear the exclusions" ;;
        *) tap_result 1 "exit code $code ($name) is one the test knows the decision of: add it here" ;;
    esac
done <<<"$codes"

# What each exit code's reason (the start of the attempt's detail) says.
reason() { g3_job_decide "$1" 0; echo "$g3_reason"; }
is "$(reason "$G3_EXIT_USAGE")" "usage error (exit 2): fix the trainer flags in $RUN/train.args" \
    "exit 2: fix the flags in train.args"
is "$(reason "$G3_EXIT_NONFINITE")" \
    "non-finite loss (exit 79): lower the learning rate or resume from an earlier checkpoint" \
    "exit 79: lower the learning rate or resume from an earlier checkpoint"
is "$(reason "$G3_EXIT_CKPT_LOAD")" "the checkpoint to resume from (iter_0000010) cannot be loaded (exit 78)" \
    "exit 78: names the checkpoint that does not load"
rm "$RUN/checkpoints/latest"
is "$(reason "$G3_EXIT_CKPT_LOAD")" "the checkpoint to resume from (none named) cannot be loaded (exit 78)" \
    "... or says that none is named"
is "$(reason "$G3_EXIT_COMM_TIMEOUT")" "distributed timeout (exit 76)" "exit 76: a distributed timeout"
is "$(reason "$G3_EXIT_FAILURE")" "the trainer exited with status 1 on n[1-2]" "exit 1: the status and the nodes"

# A status that no code names (a rank killed: 137, SIGTERM's 143) is a failure like 1.
for code in 137 143 255; do
    is "$(decide "$code" 0 1 3 "" x; echo "$g3_reason")" "failed|retry||
the trainer exited with status $code on n[1-2]" "status $code: a failure, retried"
    is "$(decide "$code" 0 3 3 "" x)" \
        "failed|stop|3 failed attempts in a row without progress (limit 3); last: x|$retry_advice" \
        "status $code, failure 3 of 3: stop"
done

# A job that did not train (its nodes unhealthy, too few after exclusions): RC "-".
is "$(decide - 0 1 3 "" "bad nodes"; echo "[$g3_reason]")" "unhealthy|retry||
[]" "a job that did not train, failure 1 of 3: unhealthy, the next job tries again"
is "$(decide - 0 3 3 "" "bad nodes")" \
    "unhealthy|stop|3 failed attempts in a row without progress (limit 3); last: bad nodes|$retry_advice" \
    "... failure 3 of 3: stop"
is "$(decide - 0 1 3 "$few" "bad nodes")" "unhealthy|stop|$few|$few_advice" "... too few nodes left: stop"

done_testing

# shellcheck shell=bash disable=SC2034,SC2154
# (SC2034, SC2154: the library's globals are set in one of its files and read in another.)
# sbatch/lib/job.sh: the body of gpt3d-train.sbatch, one job of a training run (see that
# script's header and docs/slurm.md): its helpers, g3_job_decide (what to do once the
# trainer's step has ended) and the job's steps (g3_job_main).  Sourced, never run: by the job
# script, which reads it from RUN/lib (gpt3d-submit copies it there), and by
# tests/slurm/test_decide.sh.  Uses the site settings of the job script (G3_*).

g3_me="gpt3d-train.sbatch"
# gpt3d's exit codes (src/core/status.h, g3_exit_code_t; docs/exit-codes.md):
# test_submit_cli.sh checks these against the enum, as a table is kept in step
# with its enum.
G3_EXIT_OK=0 G3_EXIT_FAILURE=1 G3_EXIT_USAGE=2 G3_EXIT_REQUEUE=75 G3_EXIT_COMM_TIMEOUT=76 G3_EXIT_CKPT_LOAD=78 G3_EXIT_NONFINITE=79
g3_log() { printf '%s %s: %s\n' "$(date '+%Y-%m-%dT%H:%M:%S')" "$g3_me" "$*" >&2; }
g3_die() { g3_log "error: $*"; exit "$G3_EXIT_FAILURE"; }
g3_now() { date '+%Y-%m-%dT%H:%M:%S'; }

# g3_conf KEY: a value from run.conf ("key=value" lines; never sourced).
g3_conf() { sed -n "s/^$1=//p" "$RUN/run.conf" | tail -n 1; }

# g3_latest_iter: the iteration of the newest committed checkpoint (0 if none).
g3_latest_iter() {
    local name
    [ -f "$RUN/checkpoints/latest" ] || { echo 0; return; }
    name=$(head -n 1 "$RUN/checkpoints/latest")
    if [[ "$name" =~ ^iter_([0-9]{7,})$ ]]; then
        echo $((10#${BASH_REMATCH[1]}))
    else
        g3_log "warning: $RUN/checkpoints/latest holds '$name', not iter_NNNNNNN; counting progress from 0"
        echo 0
    fi
}

# The run's lock (gpt3d-submit takes it too) guards the chain and the history (fd 9,
# opened by g3_job_start).
g3_lock() { flock -w 60 9 || g3_log "warning: could not lock $RUN/.lock in 60 s; going on without it"; }
g3_unlock() { flock -u 9; }

g3_job_state() {  # g3_job_state JOBID: PENDING, RUNNING, ... or nothing if Slurm forgot it
    squeue -h -j "$1" -o '%T' 2>/dev/null | sed -n 1p || true
}

# g3_successors: the live jobs of the chain other than this one.
g3_successors() {
    local id state
    [ -f "$RUN/chain" ] || return 0
    while read -r id; do
        if [ -z "$id" ] || [ "$id" = "$SLURM_JOB_ID" ]; then continue; fi
        state=$(g3_job_state "$id")
        if [ -n "$state" ] && g3_live_state "$state"; then echo "$id"; fi
    done <"$RUN/chain"
}

g3_cancel_successors() {
    local ids
    ids=$(g3_successors | tr '\n' ' ')
    if [ -n "${ids// /}" ]; then
        g3_log "cancelling the rest of the chain: $ids"
        # shellcheck disable=SC2086  # a list of job ids
        scancel $ids || g3_log "warning: scancel $ids failed; cancel them by hand"
    fi
}

# g3_excluded: the run's excluded nodes, comma-separated.
g3_excluded() {
    [ -s "$RUN/excluded-nodes" ] || return 0
    sort -u "$RUN/excluded-nodes" | paste -sd, -
}

# g3_ensure_successor: make sure a job of the chain waits to carry on after
# this one; submit one if none does.  (The list of successors is read whole:
# "g3_successors | head -n 1" would die of SIGPIPE under pipefail when two or
# more jobs wait, and the job would end FAILED with exit 141.)
g3_ensure_successor() {
    local next sbatch_args exc successors=()
    mapfile -t successors < <(g3_successors)
    next=${successors[0]:-}
    if [ -n "$next" ]; then
        g3_log "the chain continues with job $next"
        return 0
    fi
    sbatch_args=()
    if [ -f "$RUN/sbatch.args" ]; then mapfile -t sbatch_args <"$RUN/sbatch.args"; fi
    exc=$(g3_excluded)
    if next=$(sbatch --parsable "${sbatch_args[@]}" ${exc:+"--exclude=$exc"} \
                     --dependency="afterany:$SLURM_JOB_ID" "$RUN/gpt3d-train.sbatch" "$RUN"); then
        next=${next%%;*}
        echo "$next" >>"$RUN/chain"
        g3_log "extended the chain with job $next"
    else
        g3_log "error: could not submit the next job of the chain; resume with: gpt3d-submit $RUN"
    fi
}

# g3_exclude_nodes "NODE..." REASON: add the nodes to excluded-nodes (one per
# line) and to exclusions.tsv (time, job, node, reason), and tell the queued
# jobs of the chain to avoid them.
g3_exclude_nodes() {
    local node id exc new=""
    [ -n "${1// /}" ] || return 0
    for node in $1; do
        # A node already excluded (by the job that recorded the attempt, or
        # by the next job settling it) is not listed twice.  The two records
        # are checked apart: a job killed between the two appends (Slurm's
        # SIGKILL after KillWait, on a busy node) left one of them, and the
        # job settling its attempt writes the other.
        local listed=0 recorded=0
        if [ -f "$RUN/excluded-nodes" ] && grep -qxF -- "$node" "$RUN/excluded-nodes"; then listed=1; fi
        if [ -f "$RUN/exclusions.tsv" ] && cut -f3 "$RUN/exclusions.tsv" | grep -qxF -- "$node"; then recorded=1; fi
        if [ "$listed" -eq 1 ] && [ "$recorded" -eq 1 ]; then continue; fi
        [ "$recorded" -eq 1 ] ||
            printf '%s\t%s\t%s\t%s\n' "$(date '+%Y-%m-%dT%H:%M:%S')" "$SLURM_JOB_ID" "$node" "$2" >>"$RUN/exclusions.tsv"
        [ "$listed" -eq 1 ] || echo "$node" >>"$RUN/excluded-nodes"
        new="$new $node"
    done
    [ -n "$new" ] || return 0
    exc=$(g3_excluded)
    g3_log "excluding${new}: $2 (excluded now: $exc)"
    for id in $(g3_successors); do
        [ "$(g3_job_state "$id")" = PENDING ] || continue
        scontrol update JobId="$id" ExcNodeList="$exc" ||
            g3_log "warning: could not exclude $exc from job $id"
    done
}

# g3_exclude_bad_nodes NODELIST ATTEMPT JOB [nowait]: nodes of NODELIST that
# Slurm reports bad (g3_bad_nodes) after attempt ATTEMPT of job JOB are excluded.
g3_exclude_bad_nodes() {
    local node state
    while IFS=$'\t' read -r node state; do
        g3_exclude_nodes "$node" "Slurm reports it $state after attempt $2 of job $3"
    done < <(g3_bad_nodes "$1" "${4:-}")
}

g3_node_state() {  # g3_node_state NODE: its state as scontrol prints it (IDLE, DOWN+NOT_RESPONDING, ...)
    scontrol show node "$1" 2>/dev/null | sed -n 's/.*[[:space:]]State=\([^[:space:]]*\).*/\1/p' | sed -n 1p
}

# g3_bad_nodes NODELIST [nowait]: the nodes of NODELIST that Slurm reports
# DOWN, DRAIN, FAIL (or no longer knows), one "NODE<TAB>STATE" per line.  A
# node that is only NOT_RESPONDING is undecided: Slurm marks it DOWN after
# SlurmdTimeout, or it answers again (a busy node).  Wait for one or the other
# (up to twice SlurmdTimeout plus 10 s; then it counts as bad), so that a node
# that died is named and one that was only slow is not; "nowait" (a job being
# killed has no time) decides at once.
g3_bad_nodes() {
    local node state hosts undecided deadline timeout
    [ -n "$1" ] || return 0
    mapfile -t hosts < <(scontrol show hostnames "$1" 2>/dev/null)
    timeout=$(scontrol show config 2>/dev/null | sed -n 's/^SlurmdTimeout *= *\([0-9]*\).*/\1/p' | sed -n 1p)
    deadline=$((SECONDS + 2 * ${timeout:-300} + 10))
    while :; do
        undecided=0
        for node in ${hosts[@]+"${hosts[@]}"}; do
            state=$(g3_node_state "$node")
            case "$state" in
                *DOWN*|*DRAIN*|*FAIL*|"") ;;
                *NOT_RESPONDING*) undecided=1 ;;
            esac
        done
        if [ "$undecided" -eq 0 ] || [ "${2:-}" = nowait ] || [ "$SECONDS" -ge "$deadline" ]; then break; fi
        sleep 1
    done
    for node in ${hosts[@]+"${hosts[@]}"}; do
        state=$(g3_node_state "$node")
        case "$state" in
            *DOWN*|*DRAIN*|*FAIL*|*NOT_RESPONDING*|"") printf '%s\t%s\n' "$node" "${state:-unknown to Slurm}" ;;
        esac
    done
}

# g3_timeout_suspects LOGFILE OFFSET NODELIST RANKS_PER_NODE: the nodes of the
# ranks that gpt3d's timeout messages (exit 76; docs/comm.md) name as the peer
# waited for, from the part of LOGFILE after byte OFFSET:
#   [rank R/N] error: OP on group G (...) timed out after T s waiting for
#   group rank P (world rank W) to VERB; ...
# A named rank that itself reported a timeout was alive and waiting: it is not
# a suspect.  Ranks are placed in blocks of RANKS_PER_NODE (srun
# --distribution=block) on the nodes in NODELIST order.
g3_timeout_suspects() {
    local log=$1 offset=$2 rpn=$4 hosts
    [ -r "$log" ] || return 0
    mapfile -t hosts < <(scontrol show hostnames "$3" 2>/dev/null)
    tail -c +"$((offset + 1))" "$log" | awk -v rpn="$rpn" -v hosts="${hosts[*]}" '
        /timed out after .* waiting for group rank [0-9]+ \(world rank [0-9]+\)/ {
            if (match($0, /^\[rank [0-9]+\//)) waiting[substr($0, 7, RLENGTH - 7)] = 1
            if (match($0, /\(world rank [0-9]+\)/)) named[substr($0, RSTART + 12, RLENGTH - 13)] = 1
        }
        END {
            n = split(hosts, h, " ")
            for (w in named) if (!(w in waiting)) {
                k = int(w / rpn) + 1
                if (k <= n) print h[k] "\t" w
            }
        }' | sort -u
}

# g3_health_check NODELIST: run gpt3d-healthcheck on every node of NODELIST
# (one task per node); print the bad nodes, one "NODE<TAB>REASON" per line.
g3_health_check() {
    local dir="$RUN/health/$SLURM_JOB_ID.${SLURM_RESTART_COUNT:-0}" args=() node f comm_ok=0 comm_failed=0 rc=0 gpus check gpt3d
    gpus=$(g3_conf gpus_per_node)
    check=$(g3_conf node_check)
    gpt3d=$(g3_conf health_gpt3d)
    [ -n "$gpus" ] && args+=(--gpus "$gpus")
    [ -n "$check" ] && args+=(--node-check "$check")
    [ -n "$gpt3d" ] && args+=(--gpt3d "$gpt3d" --timeout-minutes "$G3_HEALTH_TIMEOUT_MINUTES")
    rm -rf "$dir"
    mkdir -p "$dir"
    timeout $((${G3_HEALTH_TIMEOUT_MINUTES%.*} * 60 + 120)) \
        srun --mpi=pmix --kill-on-bad-exit=0 --wait=60 --nodelist="$1" --nodes="$(scontrol show hostnames "$1" | wc -l)" \
             --ntasks-per-node=1 --job-name=healthcheck --output="$dir/step.out" \
             "$RUN/gpt3d-healthcheck" ${args[@]+"${args[@]}"} "$dir" 9>&- || rc=$?
    # A step that started nowhere says nothing about the nodes: exclude none.
    if ! compgen -G "$dir/*.local" >/dev/null; then
        g3_log "warning: the health check step started on no node (srun exited $rc; see $dir/step.out); going on without it"
        return 0
    fi
    for node in $(scontrol show hostnames "$1"); do
        f="$dir/$node"
        if ! [ -s "$f.local" ]; then
            printf '%s\tthe health check did not run on it (srun exited %s)\n' "$node" "$rc"
        elif [ "$(head -c 3 "$f.local")" = "bad" ]; then
            printf '%s\thealth check: %s\n' "$node" "$(sed 's/^bad: //' "$f.local")"
        fi
        if [ -n "$gpt3d" ] && [ -s "$f.comm" ]; then
            if [ "$(cat "$f.comm")" = ok ]; then comm_ok=$((comm_ok + 1)); else comm_failed=$((comm_failed + 1)); fi
        fi
    done
    if [ "$comm_failed" -gt 0 ]; then
        g3_log "warning: the communication test (gpt3d topo over PMIx) failed on $comm_failed node(s) and passed on $comm_ok; see $dir/*.comm.out (nodes that did not answer are excluded; otherwise training goes on and a timeout will name the peer)"
    fi
}

# attempts.tsv: one line per finished attempt (tab-separated).
g3_attempts_header="attempt	job	restart	start	end	nodes	iter_start	iter_end	exit	outcome	detail"

g3_record_attempt() {  # g3_record_attempt FIELDS... (the columns of the header)
    [ -s "$RUN/attempts.tsv" ] || echo "$g3_attempts_header" >"$RUN/attempts.tsv"
    (IFS=$'\t'; echo "$*") >>"$RUN/attempts.tsv"
}

# g3_settle_lost_attempt: an attempt that started but never recorded its end
# (its job script was killed: node failure, time limit without a checkpoint,
# scancel, requeue) goes into the history, and its nodes are checked.  Whether
# the job script of a job that Slurm kills for a node failure records the
# attempt itself depends on how fast it runs before SIGKILL (KillWait), so this
# classifies the attempt the same way it would have: a node of the attempt
# that Slurm reports DOWN (or DRAIN, FAIL) makes it "failed" with a node
# failure named, and the node is excluded; otherwise it is "lost".  An
# attempt already in attempts.tsv (its job script was killed after recording
# it, before it had excluded the nodes and removed current-attempt) is not
# recorded twice, but its bad nodes are excluded now.
g3_settle_lost_attempt() {
    local f="$RUN/current-attempt" line fields detail state bad outcome=lost
    [ -s "$f" ] || return 0
    line=$(sed -n 1p "$f")
    IFS=$'\t' read -r -a fields <<<"$line"
    if [ -s "$RUN/attempts.tsv" ] &&
       tail -n +2 "$RUN/attempts.tsv" | awk -F'\t' -v a="${fields[0]}" -v j="${fields[1]}" -v r="${fields[2]}" \
           '$1 == a && $2 == j && $3 == r { found = 1 } END { exit !found }'; then
        g3_exclude_bad_nodes "${fields[5]}" "${fields[0]}" "${fields[1]}" nowait
        rm -f "$f"
        return 0
    fi
    if [ "${fields[1]}" = "$SLURM_JOB_ID" ]; then
        detail="job $SLURM_JOB_ID was requeued (restart ${SLURM_RESTART_COUNT:-0}) before its job script recorded the end of the attempt"
    else
        state=$(scontrol -o show job "${fields[1]}" 2>/dev/null | tr ' ' '\n' | sed -n 's/^JobState=//p' | sed -n 1p || true)
        detail="job ${fields[1]} ended ${state:-with a state Slurm no longer knows} before the trainer returned"
    fi
    bad=$(g3_bad_nodes "${fields[5]}" | awk -F'\t' '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')
    if [ -n "$bad" ]; then
        outcome=failed
        detail="$detail: node failure ($bad)"
    fi
    g3_record_attempt "${fields[0]}" "${fields[1]}" "${fields[2]}" "${fields[3]}" "$(g3_now)" \
        "${fields[5]}" "${fields[6]}" "$(g3_latest_iter)" "-" "$outcome" "$detail"
    rm -f "$f"
    g3_log "attempt ${fields[0]} was $outcome: $detail"
    g3_exclude_bad_nodes "${fields[5]}" "${fields[0]}" "${fields[1]}" nowait
}

# g3_failures_without_progress: how many of the latest attempts in a row failed
# or were lost without the checkpoint iteration advancing.
g3_failures_without_progress() {
    [ -s "$RUN/attempts.tsv" ] || { echo 0; return; }
    tail -n +2 "$RUN/attempts.tsv" | tac | awk -F'\t' '
        ($10 == "failed" || $10 == "lost" || $10 == "unhealthy") && $8 <= $7 { n++; next }
        { exit }
        END { print n + 0 }'
}

# g3_write_summary STATE: RUN/summary.txt, what happened in the run: its end
# state, the final iteration and metrics, the attempts (with their nodes and
# exit reasons) and the excluded nodes with the reasons.
g3_write_summary() {
    local last valid
    mapfile -t last < <(g3_metrics_get "$RUN" train iteration loss)
    mapfile -t valid < <(g3_metrics_get "$RUN" eval/valid iteration loss)
    {
        echo "gpt3d run summary (format gpt3d-run-summary 1)"
        echo "run:            $RUN"
        echo "state:          $1"
        echo "written:        $(g3_now) by job $SLURM_JOB_ID"
        echo "checkpoint:     iteration $(g3_latest_iter) ($RUN/checkpoints)"
        if [ "${#last[@]}" -eq 2 ]; then echo "training:       iteration ${last[0]}, last loss ${last[1]}"; fi
        if [ "${#valid[@]}" -eq 2 ]; then echo "validation:     loss ${valid[1]} at iteration ${valid[0]}"; fi
        if [ -s "$RUN/attempts.tsv" ]; then
            tail -n +2 "$RUN/attempts.tsv" | awk -F'\t' '
                $10 != "retry" { n++; c[$10]++; if (!seen[$6]++) nl = nl (nl == "" ? "" : " ") $6 }
                END {
                    printf "attempts:       %d (", n
                    sep = ""
                    for (k in c) { printf "%s%d %s", sep, c[k], k; sep = ", " }
                    printf ")\nnode lists:     %s\n", nl
                }'
        else
            echo "attempts:       none"
        fi
        if [ -s "$RUN/exclusions.tsv" ]; then
            echo "excluded nodes:"
            awk -F'\t' '{printf "  %-12s %s (job %s, %s)\n", $3, $4, $2, $1}' "$RUN/exclusions.tsv"
        else
            echo "excluded nodes: none"
        fi
        if [ -s "$RUN/attempts.tsv" ]; then
            echo "attempt history ($RUN/attempts.tsv):"
            g3_table <"$RUN/attempts.tsv" | sed 's/^/  /'
        fi
    } >"$RUN/summary.txt.tmp"
    mv "$RUN/summary.txt.tmp" "$RUN/summary.txt"
}

# g3_stop_chain REASON ADVICE: the run cannot go on: write FAILED, cancel the
# chain.  ADVICE (from g3_job_decide) is FAILED's last line: how to go on.  summary.txt is written first and FAILED
# appears whole (renamed into place): whoever waits for the end marker finds
# both complete.
g3_stop_chain() {
    g3_write_summary "stopped: $1"
    {
        echo "run stopped at $(g3_now) by job $SLURM_JOB_ID: $1"
        echo "last checkpoint: iteration $(g3_latest_iter)"
        echo "attempt history: $RUN/attempts.tsv"
        echo "$2"
    } >"$RUN/FAILED.tmp"
    mv "$RUN/FAILED.tmp" "$RUN/FAILED"
    g3_log "the run is stopped: $1 (see $RUN/FAILED and $RUN/summary.txt)"
    g3_cancel_successors
}

# g3_partition_nodes: the nodes of the partition this job runs in, one per line.
g3_partition_nodes() {
    local part
    part=$(scontrol -o show job "$SLURM_JOB_ID" 2>/dev/null | tr ' ' '\n' | sed -n 's/^Partition=//p' | sed -n 1p || true)
    [ -n "$part" ] || return 0
    sinfo -h -N -p "$part" -o %N 2>/dev/null | sort -u || true
}

# g3_too_few_nodes: where the run's excluded nodes leave fewer nodes in the
# partition than a job of the run needs (--nodes N, or the smallest of
# --sizes), Slurm can never start the next job (a queued job waits forever,
# BadConstraints; sbatch refuses a new one): print why, with what to do;
# print nothing otherwise.
g3_too_few_nodes() {
    local sizes need all left excluded nodes_arg
    [ -s "$RUN/excluded-nodes" ] || return 0
    sizes=$(g3_conf sizes)
    if [ -n "$sizes" ]; then
        need=${sizes%%,*}
    else
        nodes_arg=$(sed -n 's/^--nodes=//p' "$RUN/sbatch.args" 2>/dev/null | tail -n 1)
        need=${nodes_arg%%-*}
        need=${need:-${SLURM_JOB_NUM_NODES:-1}}
    fi
    mapfile -t all < <(g3_partition_nodes)
    [ "${#all[@]}" -gt 0 ] || return 0
    left=$(printf '%s\n' "${all[@]}" | grep -vxF -f "$RUN/excluded-nodes" | grep -c . || true)
    [ "$left" -lt "$need" ] || return 0
    excluded=$(awk -F'\t' '{printf "%s%s (%s)", (NR > 1 ? "; " : ""), $3, $4}' "$RUN/exclusions.tsv" 2>/dev/null || true)
    printf 'too few nodes left: a job of this run needs %s node(s)%s, and the run excludes %s of the %s nodes of its partition, leaving %s: %s\n' \
        "$need" "${sizes:+ (the smallest of --sizes $sizes)}" "$(g3_excluded)" "${#all[@]}" "$left" "${excluded:-$(g3_excluded)}"
}


# g3_step_nodes LOGFILE OFFSET: what srun said about the step's nodes in the
# part of LOGFILE after byte OFFSET ("srun: error: NODE: task N: Killed",
# "Task launch for StepId=... failed on node NODE: ..."), at most three lines,
# joined by "; ".
g3_step_nodes() {
    [ -r "$1" ] || return 0
    tail -c +"$(($2 + 1))" "$1" | sed -n 's/^srun: error: //p' | grep -v '^Timed out waiting' | sed -n 1,3p | paste -sd';' - | sed 's/;/; /g'
}

# g3_first_error LOGFILE OFFSET: the trainer's first error line (without its
# "[rank R/N] error: " prefix) in the part of LOGFILE after byte OFFSET.
g3_first_error() {
    [ -r "$1" ] || return 0
    tail -c +"$(($2 + 1))" "$1" | sed -n 's/^\(\[rank [0-9]*\/[0-9]*\] \)\{0,1\}error: //p' | sed -n 1p
}

# ---- What to do when the attempt has ended ---------------------------------------
# g3_job_decide RC TERMINATED [FAILURES MAX_FAILURES TOO_FEW DETAIL]: what the job does once
# its attempt has ended: the one place that decides it (docs/exit-codes.md, "what a batch
# script does"; tests/slurm/test_decide.sh feeds it every exit code).  Inputs:
#   RC            the trainer's exit code, or "-": the job did not train (bad nodes, too few)
#   TERMINATED    1: Slurm sent SIGTERM (scancel, the time limit, a node failure); else 0
#   FAILURES      failed attempts in a row without progress, this one included
#   MAX_FAILURES  the run's limit on them (--max-failures)
#   TOO_FEW       why the run's excluded nodes leave too few for a job (g3_too_few_nodes), or ""
#   DETAIL        what the job found out about the attempt (its detail in attempts.tsv)
# Sets:
#   g3_outcome    the attempt's outcome in attempts.tsv: complete, checkpointed, failed
#                 (unhealthy for RC "-")
#   g3_reason     what RC means: the start of the attempt's detail
#   g3_action     complete: write COMPLETE and cancel the queued jobs of the chain;
#                 continue: a checkpoint was saved, a job of the chain carries on;
#                 retry: a failure within the limit, a job of the chain tries again;
#                 slurm: Slurm stopped the job, its requeue (or the chain's next job) goes on;
#                 stop: write FAILED (g3_stop_reason, then g3_advice: how to go on)
# The job calls it twice: for the outcome and reason that the record of the attempt needs,
# then, with the failures and the nodes left once it is recorded, for the action.  Reads RUN
# and nodes (named in the texts).
g3_job_decide() {
    local rc=$1 terminated=$2 failures=${3:-0} max=${4:-1} few=${5:-} detail=${6:-}
    g3_outcome=failed g3_action="" g3_stop_reason="" g3_advice=""
    case "$rc" in
        -) g3_outcome=unhealthy; g3_reason="" ;;
        "$G3_EXIT_OK") g3_outcome=complete; g3_reason="the trainer finished the run" ;;
        "$G3_EXIT_REQUEUE") g3_outcome=checkpointed; g3_reason="checkpoint saved on request; the next job continues" ;;
        "$G3_EXIT_USAGE") g3_reason="usage error (exit $rc): fix the trainer flags in $RUN/train.args" ;;
        "$G3_EXIT_NONFINITE") g3_reason="non-finite loss (exit $rc): lower the learning rate or resume from an earlier checkpoint" ;;
        "$G3_EXIT_COMM_TIMEOUT") g3_reason="distributed timeout (exit $rc)" ;;
        "$G3_EXIT_CKPT_LOAD")
            g3_reason="the checkpoint to resume from ($(head -n 1 "$RUN/checkpoints/latest" 2>/dev/null || echo "none named")) cannot be loaded (exit $rc)" ;;
        *) g3_reason="the trainer exited with status $rc on $nodes" ;;
    esac
    case "$g3_outcome" in
        complete|checkpointed) g3_action=${g3_outcome/checkpointed/continue}; return 0 ;;
    esac
    g3_action=stop g3_stop_reason=$detail
    g3_advice="after fixing the cause, resume with: gpt3d-submit --retry $RUN"
    if [ "$rc" = "$G3_EXIT_USAGE" ] || [ "$rc" = "$G3_EXIT_NONFINITE" ]; then
        :
    elif [ "$rc" = "$G3_EXIT_CKPT_LOAD" ]; then
        g3_advice="the checkpoint stays damaged, so the run was stopped at once; resume from the newest checkpoint that loads with: gpt3d-submit --retry --load-fallback $RUN (the trainer skips the damaged ones and the job log names them), or restore the damaged file and run gpt3d-submit --retry $RUN"
    elif [ -n "$few" ]; then
        g3_stop_reason=$few
        g3_advice="once the excluded nodes are repaired, resume with: gpt3d-submit --retry --clear-exclusions $RUN (the run forgets its exclusions); or start a new run that fits the nodes left (a smaller --nodes, or --sizes)"
    elif [ "$failures" -ge "$max" ]; then
        g3_stop_reason="$failures failed attempts in a row without progress (limit $max); last: $detail"
    elif [ "$terminated" -eq 1 ]; then
        g3_action=slurm g3_stop_reason="" g3_advice=""
    else
        g3_action=retry g3_stop_reason="" g3_advice=""
    fi
}

# ---- The job: g3_job_main RUN_DIR runs these steps in turn --------------------------
# Their state is global (RUN, attempt, nodes, rc, ...): the signal handlers read it too.

# g3_job_start RUN_DIR: the run directory, its lock, the attempt left unsettled by a job
# that was killed, the run's end markers, the trainer's command and the signal handlers.
g3_job_start() {
    [ $# -eq 1 ] || g3_die "usage: sbatch [OPTIONS] gpt3d-train.sbatch RUN_DIR (make RUN_DIR with gpt3d-submit)"
    RUN=$(cd "$1" 2>/dev/null && pwd -P) || g3_die "run directory '$1' does not exist; create the run with gpt3d-submit"
    # An ablation study (gpt3d-submit --ablations) is one job array over its
    # variants: array task K runs the run directory of the variant on line K+1.
    if [ -f "$RUN/ablation.conf" ]; then
        [ -n "${SLURM_ARRAY_TASK_ID:-}" ] || g3_die "$RUN is an ablation directory: submit it as a job array with gpt3d-submit --ablations"
        variant=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$RUN/variants" | cut -f1)
        [ -n "$variant" ] || g3_die "array task $SLURM_ARRAY_TASK_ID has no line in $RUN/variants"
        RUN=$RUN/$variant
    fi
    [ -f "$RUN/run.conf" ] || g3_die "$RUN has no run.conf: it is not a gpt3d run directory; create the run with gpt3d-submit"
    [ -n "${SLURM_JOB_ID:-}" ] || g3_die "SLURM_JOB_ID is not set: submit this script with sbatch (or use gpt3d-submit)"
    format=$(g3_conf format)
    [ "$format" = "gpt3d-run 1" ] || g3_die "$RUN/run.conf has format '$format'; this job script reads 'gpt3d-run 1' (use the gpt3d-submit that created the run)"
    exec 9>>"$RUN/.lock"
    mkdir -p "$RUN/checkpoints" "$RUN/logs"
    g3_lock
    # An array task is a job of its variant's chain.
    if [ -n "${SLURM_ARRAY_TASK_ID:-}" ] && ! grep -qxF "$SLURM_JOB_ID" "$RUN/chain" 2>/dev/null; then
        echo "$SLURM_JOB_ID" >>"$RUN/chain"
    fi
    g3_settle_lost_attempt
    if [ -e "$RUN/COMPLETE" ]; then
        g3_log "the run is already complete ($(head -n 1 "$RUN/COMPLETE")); nothing to do"
        g3_cancel_successors
        exit 0
    fi
    if [ -e "$RUN/FAILED" ]; then
        g3_log "the run was stopped ($(head -n 1 "$RUN/FAILED")); resume it with: gpt3d-submit --retry $RUN"
        g3_cancel_successors
        exit "$G3_EXIT_FAILURE"
    fi

    train_cmd=()
    train_args=()
    if [ -f "$RUN/train.cmd" ]; then mapfile -t train_cmd <"$RUN/train.cmd"; fi
    if [ -f "$RUN/train.args" ]; then mapfile -t train_args <"$RUN/train.args"; fi
    [ "${#train_cmd[@]}" -gt 0 ] || g3_die "$RUN/train.cmd is empty: it should name the trainer (for example: gpt3d, train)"
    ranks_per_node=$(g3_conf ranks_per_node)
    ranks_per_node=${ranks_per_node:-$G3_RANKS_PER_NODE}
    max_failures=$(g3_conf max_failures)
    max_failures=${max_failures:-$G3_MAX_FAILURES_DEFAULT}

    warned=0
    terminated=0
    step_pid=""
    # shellcheck disable=SC2317  # trap handlers
    g3_on_warning() {
        warned=1
        g3_log "warning signal $G3_WARN_SIGNAL: the time limit is near; asking the trainer to save a checkpoint and exit"
        if [ -n "$step_pid" ]; then kill -s "$G3_STEP_SIGNAL" "$step_pid" 2>/dev/null || true; fi
    }
    # shellcheck disable=SC2317  # trap handlers
    g3_on_term() {
        terminated=1
        g3_log "SIGTERM from Slurm (scancel, the time limit or a node failure): the trainer is being stopped"
    }
    trap g3_on_warning "$G3_WARN_SIGNAL"
    trap g3_on_term TERM

    # Attempts are numbered from 1; "retry" lines (gpt3d-submit --retry) are not attempts.
    attempt=1
    if [ -s "$RUN/attempts.tsv" ]; then
        attempt=$(tail -n +2 "$RUN/attempts.tsv" | awk -F'\t' '$10 != "retry" {n++} END {print n + 1}')
    fi
    got_nodes=${SLURM_JOB_NODELIST:-unknown}
    iter_start=$(g3_latest_iter)
    start=$(g3_now)
    g3_unlock
}

# g3_job_bad_nodes: the nodes of this job that must not train, one "NODE<TAB>WHY" a line in
# bad_lines: those the run excludes, those failing the health check, those that do not see
# the run directory.
g3_job_bad_nodes() {
    # Nodes the run has excluded that Slurm gave this job anyway: a job that Slurm
    # requeued keeps the exclusions it was submitted with, and later ones reach
    # only the queued jobs (scontrol cannot change a running job's).  They count
    # as bad nodes, like those of the health check below.
    bad_lines=""
    if [ -s "$RUN/excluded-nodes" ]; then
        for node in $(scontrol show hostnames "$got_nodes" 2>/dev/null); do
            grep -qxF -- "$node" "$RUN/excluded-nodes" || continue
            why=$(awk -F'\t' -v n="$node" '$3 == n {w = $4} END {print w}' "$RUN/exclusions.tsv" 2>/dev/null || true)
            g3_log "this job got $node, which the run excludes (${why:-reason not recorded}); not training on it"
            bad_lines="$bad_lines${bad_lines:+$'\n'}$node	excluded from the run earlier (${why:-reason not recorded}), yet given to job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}): a requeued job keeps the exclusions it was submitted with"
        done
    fi

    # The health check: one task per node; failing nodes are excluded from this
    # job (an elastic run shrinks to an allowed size without them) and from the
    # rest of the chain.
    if [ "$G3_HEALTH_CHECK" = 1 ] && [ "$(g3_conf health_check)" != no ]; then
        if [ -x "$RUN/gpt3d-healthcheck" ]; then
            g3_log "health check on $got_nodes"
            hc_lines=$(g3_health_check "$got_nodes")
            if [ -n "$hc_lines" ]; then bad_lines="$bad_lines${bad_lines:+$'\n'}$hc_lines"; fi
        else
            g3_log "warning: $RUN/gpt3d-healthcheck is missing (a run made by an older gpt3d-submit): no health check"
        fi
    fi
    # The run directory must be the same directory on every node (a shared file
    # system): a node where it is missing (not mounted there, or node-local
    # storage such as a private /tmp) cannot run its ranks, which would fail
    # without a log.  One task per node looks for run.conf; nodes that do not see
    # it are bad nodes like those of the health check.
    if [ "$(scontrol show hostnames "$got_nodes" 2>/dev/null | wc -l)" -gt 1 ]; then
        # shellcheck disable=SC2016  # $1 belongs to the inner sh
        seen=$(srun --kill-on-bad-exit=0 --nodelist="$got_nodes" --nodes="$(scontrol show hostnames "$got_nodes" | wc -l)" \
                    --ntasks-per-node=1 --job-name=visibility \
                    /bin/sh -c 'if [ -e "$1" ]; then echo "$SLURMD_NODENAME"; fi' sh "$RUN/run.conf" 9>&- 2>/dev/null || true)
        if [ -n "$seen" ]; then
            for node in $(scontrol show hostnames "$got_nodes"); do
                if printf '%s\n' "$bad_lines" | cut -f1 | grep -qxF -- "$node"; then continue; fi
                if ! printf '%s\n' "$seen" | grep -qxF -- "$node"; then
                    bad_lines="$bad_lines${bad_lines:+$'\n'}$node	the run directory $RUN is not visible there (not mounted on it, or on node-local storage): keep runs on a file system every node mounts"
                fi
            done
        else
            g3_log "warning: could not check that every node sees $RUN (the srun step started nowhere); going on"
        fi
    fi
}

# g3_job_size: exclude the bad nodes; an elastic run shrinks to the largest allowed size
# among the healthy nodes; a job that cannot train records the attempt and ends here.
g3_job_size() {
    healthy=()
    bad_nodes=""
    for node in $(scontrol show hostnames "$got_nodes"); do
        if printf '%s\n' "$bad_lines" | cut -f1 | grep -qxF -- "$node"; then bad_nodes="$bad_nodes $node"; else healthy+=("$node"); fi
    done
    g3_lock
    if [ -n "$bad_lines" ]; then
        while IFS=$'\t' read -r node why; do g3_exclude_nodes "$node" "$why"; done <<<"$bad_lines"
    fi

    # The size: elastic runs (gpt3d-submit --sizes) ask for --nodes=MIN-MAX and
    # keep the largest allowed size among the healthy nodes they got; a fixed-size
    # run with a bad node leaves the run to the next job (without that node).
    sizes=$(g3_conf sizes)
    target=${#healthy[@]}
    if [ -n "$sizes" ]; then
        target=0
        for s in ${sizes//,/ }; do
            if [ "$s" -le "${#healthy[@]}" ] && [ "$s" -gt "$target" ]; then target=$s; fi
        done
    fi
    unhealthy=""
    batch_host=${SLURMD_NODENAME:-$(hostname -s)}
    bad_why=$(printf '%s\n' "$bad_lines" | grep -q $'\texcluded from the run earlier' && echo "nodes the run excludes, or failing the health check:" || echo "health check failed on")
    if [ -n "$bad_nodes" ] && [ -z "$sizes" ]; then
        unhealthy="$bad_why$bad_nodes; this ${SLURM_JOB_NUM_NODES}-node job cannot train without them, the next job of the chain runs without them"
    elif [ -n "$bad_nodes" ] && [[ " $bad_nodes " == *" $batch_host "* ]]; then
        # Slurm cannot take the node running the batch script out of the job.
        unhealthy="$bad_why$bad_nodes, among them $batch_host, which runs this job script and cannot be given back; the next job of the chain runs without them"
    elif [ "$target" -eq 0 ]; then
        unhealthy="the job got ${#healthy[@]} healthy nodes ($got_nodes${bad_nodes:+, bad:$bad_nodes}), fewer than the smallest size in --sizes ($sizes)"
    elif [ "$target" -lt "${SLURM_JOB_NUM_NODES:-0}" ]; then
        keep=$(IFS=,; echo "${healthy[*]:0:target}")
        g3_log "the job got ${SLURM_JOB_NUM_NODES} nodes${bad_nodes:+ (bad:$bad_nodes)}; shrinking to $target, the largest of the allowed sizes $sizes: $keep"
        # scontrol writes slurm_job_ID_resize.sh (the job's new environment)
        # into its working directory.
        if (cd "$RUN" && scontrol update JobId="$SLURM_JOB_ID" NodeList="$keep" >&2); then
            # shellcheck source=/dev/null
            . "$RUN/slurm_job_${SLURM_JOB_ID}_resize.sh"
            rm -f "$RUN/slurm_job_${SLURM_JOB_ID}_resize.sh" "$RUN/slurm_job_${SLURM_JOB_ID}_resize.csh"
            g3_log "now on $SLURM_JOB_NUM_NODES nodes: $SLURM_JOB_NODELIST"
        else
            unhealthy="scontrol update JobId=$SLURM_JOB_ID NodeList=$keep failed: could not shrink the job to an allowed size; the next job of the chain tries again"
        fi
    fi
    if [ -n "$unhealthy" ]; then
        g3_record_attempt "$attempt" "$SLURM_JOB_ID" "${SLURM_RESTART_COUNT:-0}" "$start" "$(g3_now)" \
            "$got_nodes" "$iter_start" "$iter_start" "-" unhealthy "$unhealthy"
        g3_log "attempt $attempt: $unhealthy"
        g3_job_decide - 0 "$(g3_failures_without_progress)" "$max_failures" "$(g3_too_few_nodes)" "$unhealthy"
        if [ "$g3_action" = stop ]; then g3_stop_chain "$g3_stop_reason" "$g3_advice"; else g3_ensure_successor; fi
        g3_unlock
        exit "$G3_EXIT_FAILURE"
    fi
}

# g3_job_train: start the trainer's step and wait for its end (rc: its exit code).
g3_job_train() {
    nodes=${SLURM_JOB_NODELIST:-unknown}
    # The warning came before the trainer started (during the health check): a
    # trainer signalled while it starts up may die before its handler is set, and
    # there is nothing new to save.  Leave the run to the next job.
    if [ "$warned" -eq 1 ]; then
        g3_record_attempt "$attempt" "$SLURM_JOB_ID" "${SLURM_RESTART_COUNT:-0}" "$start" "$(g3_now)" \
            "$nodes" "$iter_start" "$iter_start" "-" checkpointed "the warning signal came before the trainer started: nothing new to save; the next job continues"
        g3_log "the warning signal came before the trainer started; not starting it, the next job continues"
        g3_ensure_successor
        g3_unlock
        exit 0
    fi
    printf '%s\t%s\t%s\t%s\t-\t%s\t%s\n' "$attempt" "$SLURM_JOB_ID" "${SLURM_RESTART_COUNT:-0}" \
        "$start" "$nodes" "$iter_start" >"$RUN/current-attempt"
    g3_unlock
    g3_log "attempt $attempt of run $RUN: job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}) on $nodes, from iteration $iter_start"

    # The trainer's messages go to the job's log; remember where this step's part
    # starts, to read its timeout messages afterwards.
    job_log=$(scontrol -o show job "$SLURM_JOB_ID" 2>/dev/null | tr ' ' '\n' | sed -n 's/^StdOut=//p' | head -n 1 || true)
    log_offset=$(stat -c %s "$job_log" 2>/dev/null || echo 0)

    # gpt3d-submit --retry --load-fallback left RUN/load-fallback naming the
    # checkpoint that could not be loaded: while checkpoints/latest still names it,
    # the trainer loads the newest checkpoint that verifies instead (its log says
    # which it skipped); the file goes once a newer checkpoint is saved.
    fallback=()
    fallback_from=""
    if [ -s "$RUN/load-fallback" ]; then
        fallback_from=$(head -n 1 "$RUN/load-fallback")
        if [ "$fallback_from" = "$(head -n 1 "$RUN/checkpoints/latest" 2>/dev/null)" ]; then
            fallback=(--load-fallback)
            g3_log "--load-fallback: $fallback_from could not be loaded before; the trainer loads the newest checkpoint that verifies"
        fi
    fi
    srun "${G3_SRUN_FLAGS[@]}" --nodes="$SLURM_JOB_NUM_NODES" --ntasks-per-node="$ranks_per_node" --distribution=block "${train_cmd[@]}" \
        --save "$RUN/checkpoints" --load "$RUN/checkpoints" --run-dir "$RUN" \
        ${train_args[@]+"${train_args[@]}"} ${fallback[@]+"${fallback[@]}"} 9>&- &
    step_pid=$!
    if [ "$warned" -eq 1 ]; then kill -s "$G3_STEP_SIGNAL" "$step_pid" 2>/dev/null || true; fi
    # wait returns early (status > 128) when a trapped signal arrives; wait again
    # until the step itself has ended.
    rc=0
    wait "$step_pid" || rc=$?
    while kill -0 "$step_pid" 2>/dev/null; do
        rc=0
        wait "$step_pid" || rc=$?
    done
    trap - "$G3_WARN_SIGNAL" TERM
}

# g3_job_detail: what the attempt's record says (detail), from the trainer's exit code, its
# log and Slurm's view of the job and its nodes.
g3_job_detail() {
    iter_end=$(g3_latest_iter)
    end=$(g3_now)
    # Slurm may be ending this job (scancel, time limit, node failure) without its
    # SIGTERM having reached this shell yet: ask for the job's state.
    own_state=$(scontrol -o show job "$SLURM_JOB_ID" 2>/dev/null | tr ' ' '\n' | sed -n 's/^JobState=//p' | head -n 1 || true)
    case "$own_state" in
        ""|RUNNING) ;;
        *) terminated=1 ;;
    esac
    g3_job_decide "$rc" "$terminated"
    outcome=$g3_outcome
    detail=$g3_reason
    if [ "$rc" -eq "$G3_EXIT_CKPT_LOAD" ]; then
        ckpt_error=$(g3_first_error "$job_log" "$log_offset")
        detail="$detail: ${ckpt_error:-no error line found in $job_log}"
    fi
    # What --load-fallback skipped.
    if [ "${#fallback[@]}" -gt 0 ]; then
        resumed=$(tail -c +"$((log_offset + 1))" "$job_log" 2>/dev/null | sed -n 's/^ *resumed from the checkpoint of iteration \([0-9]*\).*/\1/p' | sed -n 1p || true)
        skipped="--load-fallback: skipped $fallback_from, which does not load${resumed:+, and resumed from iteration $resumed}"
        g3_log "$skipped"
        detail="$detail; $skipped"
    fi
    if [ -n "$fallback_from" ] && [ "$fallback_from" != "$(head -n 1 "$RUN/checkpoints/latest" 2>/dev/null)" ]; then
        rm -f "$RUN/load-fallback"
    fi
    suspects=""
    if [ "$rc" -eq "$G3_EXIT_COMM_TIMEOUT" ]; then
        suspects=$(g3_timeout_suspects "$job_log" "$log_offset" "$nodes" "$ranks_per_node")
        if [ -n "$suspects" ]; then
            detail="$detail: the trainer waited for $(printf '%s\n' "$suspects" | awk -F'\t' '{printf "%srank %s on %s", (NR > 1 ? ", " : ""), $2, $1}')"
        else
            detail="$detail: no timeout message in $job_log names a peer that did not itself time out"
        fi
    fi
    if [ "$terminated" -eq 1 ] && [ "$rc" -ne "$G3_EXIT_OK" ] && [ "$rc" -ne "$G3_EXIT_REQUEUE" ]; then
        failed_nodes=$(g3_bad_nodes "$nodes" nowait | awk -F'\t' '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')
        if [ -n "$failed_nodes" ]; then
            detail="$detail after SIGTERM from Slurm: node failure ($failed_nodes)"
        else
            detail="$detail after SIGTERM from Slurm (scancel, the time limit or a node failure)"
        fi
    fi
    if [ "$warned" -eq 1 ] && [ "$rc" -ne "$G3_EXIT_REQUEUE" ] && [ "$rc" -ne "$G3_EXIT_OK" ]; then
        detail="$detail; the warning signal came but the trainer did not exit $G3_EXIT_REQUEUE"
    fi
    # What srun said about the step's nodes (a task killed, a launch that failed).
    step_said=""
    if [ "$rc" -ne "$G3_EXIT_OK" ] && [ "$rc" -ne "$G3_EXIT_REQUEUE" ]; then step_said=$(g3_step_nodes "$job_log" "$log_offset"); fi
    if [ -n "$step_said" ]; then detail="$detail (srun: $step_said)"; fi
}

# g3_job_end: record the attempt, then do what g3_job_decide says; exit with the job's status.
g3_job_end() {
    g3_lock
    g3_record_attempt "$attempt" "$SLURM_JOB_ID" "${SLURM_RESTART_COUNT:-0}" "$start" "$end" \
        "$nodes" "$iter_start" "$iter_end" "$rc" "$outcome" "$detail"
    # current-attempt stays until the nodes are excluded: a job script that Slurm
    # kills (SIGKILL, KillWait after SIGTERM) before that leaves it for the next
    # job, which excludes them (g3_settle_lost_attempt).
    case "$outcome" in
        complete)
            g3_write_summary "complete: the trainer finished the run in attempt $attempt"
            echo "complete at $end: job $SLURM_JOB_ID, iteration $iter_end, attempt $attempt" >"$RUN/COMPLETE.tmp"
            mv "$RUN/COMPLETE.tmp" "$RUN/COMPLETE"   # the end marker last, whole (as FAILED)
            g3_log "the run is complete (iteration $iter_end; see $RUN/summary.txt)"
            g3_cancel_successors
            ;;
        checkpointed)
            g3_log "checkpoint at iteration $iter_end; the run continues in the next job"
            g3_ensure_successor
            ;;
        failed)
            g3_log "attempt $attempt failed: $detail"
            if [ "$terminated" -eq 1 ]; then
                g3_exclude_bad_nodes "$nodes" "$attempt" "$SLURM_JOB_ID" nowait
            else
                g3_exclude_bad_nodes "$nodes" "$attempt" "$SLURM_JOB_ID"
            fi
            while IFS=$'\t' read -r node w; do
                [ -n "$node" ] || continue
                g3_exclude_nodes "$node" "world rank $w on it did not answer: the trainer timed out waiting for it (exit $G3_EXIT_COMM_TIMEOUT) in attempt $attempt"
            done <<<"$suspects"
            n=$(g3_failures_without_progress)
            g3_job_decide "$rc" "$terminated" "$n" "$max_failures" "$(g3_too_few_nodes)" "$detail"
            case "$g3_action" in
                stop) g3_stop_chain "$g3_stop_reason" "$g3_advice" ;;
                slurm) g3_log "stopped by Slurm: Slurm requeues the job after a node failure; otherwise the chain's next job (if any) continues" ;;
                *)  g3_log "failure $n of $max_failures without progress; the next job retries"
                    g3_ensure_successor ;;
            esac
            ;;
    esac
    rm -f "$RUN/current-attempt"
    g3_unlock

    case "$outcome" in
        complete|checkpointed) exit 0 ;;
        *) exit "$rc" ;;
    esac
}

g3_job_main() {
    g3_job_start "$@"
    g3_job_bad_nodes
    g3_job_size
    g3_job_train
    g3_job_detail
    g3_job_end
}

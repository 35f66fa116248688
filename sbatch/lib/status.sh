# shellcheck shell=bash disable=SC2034,SC2154
# (SC2034, SC2154: the library's globals are set in one of its files and read in another.)
# sbatch/lib/status.sh: gpt3d-submit --status RUN_DIR: the state of a run, its chain, its
# attempts and excluded nodes.  Sourced by gpt3d-submit, never run (docs/slurm.md).

latest_iter() {
    local name
    [ -f "$1/checkpoints/latest" ] || { echo 0; return; }
    name=$(head -n 1 "$1/checkpoints/latest")
    if [[ "$name" =~ ^iter_([0-9]{7,})$ ]]; then echo $((10#${BASH_REMATCH[1]})); else echo "? (latest holds '$name')"; fi
}

# live_jobs RUN: "jobid state reason" for every job of the chain Slurm still
# has queued or running: the jobs listed in RUN/chain and, for a variant of an
# ablation study, its task of the study's job arrays (a task still held back
# by the array's throttle is pending there before it ever runs).
live_jobs() {
    local id line parent k arr
    {
        if [ -s "$1/chain" ]; then
            while read -r id; do
                [ -n "$id" ] || continue
                squeue -h -j "$id" -o '%i %T %r' 2>/dev/null | sed -n 1p || true
            done <"$1/chain"
        fi
        parent=$(dirname "$1")
        if [ -f "$parent/ablation.conf" ] && [ -s "$parent/array-jobs" ] && [ -s "$parent/variants" ]; then
            k=$(cut -f1 "$parent/variants" | awk -v v="$(basename "$1")" '$0 == v { print NR - 1 }')
            if [ -n "$k" ]; then
                while read -r arr; do
                    [ -n "$arr" ] || continue
                    squeue -h -r -j "$arr" -o '%i %T %r' 2>/dev/null | awk -v t="${arr}_$k" '$1 == t' || true
                done <"$parent/array-jobs"
            fi
        fi
    } | while read -r line; do
        read -r _ state _ <<<"$line"
        if g3_live_state "$state"; then echo "$line"; fi
    done | awk '!seen[$1]++'
}

# job_field JOBID FIELD: one field of "scontrol show job" (JobState, Reason, StdOut, ...).
job_field() {
    scontrol -o show job "$1" 2>/dev/null | sed -n 1p | tr ' ' '\n' | sed -n "s/^$2=//p" | sed -n 1p || true
}

# ended_without_log RUN: a line for every job of the chain that Slurm still
# knows, that has ended, and whose log file does not exist: it died before its
# job script could write a line (typically a node that cannot open RUN/logs).
ended_without_log() {
    local id state out reason
    [ -s "$1/chain" ] || return 0
    while read -r id; do
        [ -n "$id" ] || continue
        state=$(job_field "$id" JobState)
        case " $G3_LIVE_STATES COMPLETING CANCELLED " in
            *" ${state:-none} "*) continue ;;
        esac
        [ -n "$state" ] || continue
        out=$(job_field "$id" StdOut)
        if [ -z "$out" ] || [ -e "$out" ]; then continue; fi
        reason=$(job_field "$id" Reason)
        printf '  job %s ended %s (%s) without writing its log %s: its node could not open it; is %s on storage that every compute node sees (not node-local /tmp)?\n' \
            "$id" "$state" "${reason:-no reason given}" "$out" "$1"
    done <"$1/chain"
}

# table: align the tab-separated lines on stdin in columns (two spaces
# between them), as "column -t -s TAB" would; column(1) is not installed
# everywhere (Debian's minimal systems lack bsdextrautils).
# training_line RUN: progress from the trainer's RUN/metrics.jsonl (gpt3d
# train --run-dir RUN): its last "train" event and the "start" event's
# sequence length.
training_line() {
    local last seq
    mapfile -t last < <(g3_metrics_get "$1" train iteration train_iters consumed_samples ms_per_iter loss)
    [ "${#last[@]}" -gt 0 ] || return 0
    last=("${last[@]%%[!-0-9.eE+]*}")   # the number each starts with
    seq=$(g3_metrics_get "$1" start seq_length)
    awk -v it="${last[0]}" -v total="${last[1]}" -v samples="${last[2]}" -v ms="${last[3]}" -v loss="${last[4]}" \
        -v seq="${seq%%[!-0-9.eE+]*}" 'BEGIN {
        printf "training:   iteration %d of %d, loss %s, %.1f ms/iteration", it, total, loss, ms
        if (seq != "") printf ", %d tokens", samples * seq
        left = (total - it) * ms / 1000
        printf ", about %dh%02dm of training left\n", int(left / 3600), int(left % 3600 / 60)
    }'
}

print_status() {
    local run=$1 jobs nolog stuck
    echo "run:        $run"
    jobs=$(live_jobs "$run")
    stuck=$(printf '%s\n' "$jobs" | awk 'NF && $3 !~ /DependencyNeverSatisfied|BadConstraints/ {live = 1} NF {n++; r = r (r == "" ? "" : ", ") $1 " " $3} END {if (n && !live) print r}')
    if [ -e "$run/COMPLETE" ]; then echo "state:      complete ($(head -n 1 "$run/COMPLETE"))"
    elif [ -e "$run/FAILED" ]; then
        echo "state:      stopped ($(head -n 1 "$run/FAILED"))"
        echo "            $(tail -n 1 "$run/FAILED")"
    elif [ -z "$jobs" ]; then
        echo "state:      not running: no job of its chain is queued or running (the chain was cancelled, or its jobs ended without handing the run on: see the logs in $run/logs); resume it from the last checkpoint with: $me $run"
    elif [ -n "$stuck" ]; then
        echo "state:      stuck: the chain's jobs can never start ($stuck$(if [[ "$stuck" == *BadConstraints* ]] && [ -s "$run/excluded-nodes" ]; then echo ": the run excludes $(sort -u "$run/excluded-nodes" | paste -sd, -), leaving too few nodes"; fi)); $(if [ -s "$run/excluded-nodes" ]; then echo "once the nodes are repaired, resume with: $me --clear-exclusions $run"; else echo "resume with: $me $run (it cancels them and submits a new chain)"; fi)"
    else echo "state:      in progress"; fi
    echo "checkpoint: iteration $(latest_iter "$run")"
    training_line "$run"
    if [ -n "$jobs" ]; then
        echo "chain:"
        printf '%s\n' "$jobs" | sed 's/^/  /'
    else
        echo "chain:      no job queued or running"
    fi
    if [ -s "$run/current-attempt" ]; then
        local a j n t st
        IFS=$'\t' read -r a j _ t _ n _ <"$run/current-attempt"
        st=$(squeue -h -j "$j" -o '%T %r' 2>/dev/null | sed -n 1p || true)
        case "$st" in
            RUNNING*|CONFIGURING*|COMPLETING*) echo "running:    attempt $a: job $j on $n since $t" ;;
            "") echo "interrupted: attempt $a (job $j on $n since $t) ended without recording its end (Slurm no longer lists job $j as queued or running); the next job of the run records it" ;;
            *) echo "interrupted: attempt $a (job $j on $n since $t) ended without recording its end; job $j is ${st%% *} (${st#* }), requeued by Slurm: it records the attempt when it starts again" ;;
        esac
    fi
    nolog=$(ended_without_log "$run")
    if [ -n "$nolog" ]; then
        echo "no log:"
        printf '%s\n' "$nolog"
    fi
    echo "excluded:   $(if [ -s "$run/excluded-nodes" ]; then sort -u "$run/excluded-nodes" | paste -sd, -; else echo none; fi)"
    if [ -s "$run/exclusions.tsv" ]; then
        awk -F'\t' '{printf "  %s: %s (job %s, %s)\n", $3, $4, $2, $1}' "$run/exclusions.tsv"
    fi
    if [ -s "$run/summary.txt" ]; then echo "summary:    $run/summary.txt"; fi
    if [ -s "$run/attempts.tsv" ]; then
        echo "attempts:"
        g3_table <"$run/attempts.tsv" | sed 's/^/  /'
    else
        echo "attempts:   none finished yet"
    fi
}


# g3_submit_status: --status (not for an ablation study: --summary shows it).
g3_submit_status() {
        if [ -f "$run_dir/ablation.conf" ] && [ -s "$run_dir/variants" ]; then
            die "$run_dir is an ablation study, one run per variant ($(cut -f1 "$run_dir/variants" | paste -sd' ' -)): see them all with '$me --summary $run_dir', or one with '$me --status $run_dir/VARIANT'"
        fi
        [ -f "$run_dir/run.conf" ] || die "$run_dir is not a gpt3d run directory (no run.conf); create one with: $me $run_dir -- FLAGS"
        print_status "$(cd "$run_dir" && pwd -P)"
        exit 0
}

# shellcheck shell=bash disable=SC2034,SC2154
# (SC2034, SC2154: the library's globals are set in one of its files and read in another.)
# sbatch/lib/summary.sh: gpt3d-submit --summary DIR: one line per variant of an ablation
# study (or for one run), with its loss curves drawn by gpt3d plot.  Sourced by gpt3d-submit,
# never run (docs/slurm.md).

# run_row NAME RUN: one tab-separated summary line for a run: its final metrics
# from RUN/metrics.jsonl (the last "train" event: iteration, loss, tokens/s;
# the last validation "eval" event: loss) and its state.
run_row() {
    local name=$1 run=$2 state it="-" loss="-" valid="-" tps="-" last
    if [ -e "$run/COMPLETE" ]; then state=complete
    elif [ -e "$run/FAILED" ]; then state=stopped
    elif [ -n "$(live_jobs "$run")" ]; then
        if [ -s "$run/current-attempt" ]; then state=running; else state=queued; fi
    else state="no job"; fi
    mapfile -t last < <(g3_metrics_get "$run" train iteration loss tokens_per_s)
    if [ "${#last[@]}" -gt 0 ]; then
        last=("${last[@]%%[!-0-9.eE+]*}")   # the number each starts with
        it=${last[0]} loss=${last[1]} tps=${last[2]}
    fi
    valid=$(g3_metrics_get "$run" eval/valid loss)
    valid=${valid%%[!-0-9.eE+]*}
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$state" "${it:--}" "${loss:--}" "${valid:--}" "${tps:--}"
}

# variant_flags RUN FLAGS: the flags column of a variant: FLAGS (its row of the
# table) while its train.args is as the study created it (train.args.created);
# after an edit of train.args, the flags that now follow the common ones,
# marked "(edited in train.args)".
variant_flags() {
    local run=$1 flags=$2 n k rest
    if ! [ -f "$run/train.args.created" ] || cmp -s "$run/train.args" "$run/train.args.created"; then
        echo "${flags:--}"
        return 0
    fi
    read -r -a words <<<"$flags"
    k=${#words[@]}
    n=$(grep -c '' "$run/train.args.created" || true)
    if [ "$(head -n $((n - k)) "$run/train.args.created")" = "$(head -n $((n - k)) "$run/train.args")" ]; then
        rest=$(tail -n +$((n - k + 1)) "$run/train.args" | paste -sd' ' -)
    else
        rest=$(paste -sd' ' "$run/train.args")
    fi
    echo "${rest:--} (edited in train.args)"
}

# task_scores RUN: the last scores of each --eval-tasks task in RUN/metrics.jsonl
# ("event":"task" lines), "NAME METRIC=V ...; NAME ...", or "-".
task_scores() {
    local t
    t=$(g3_metrics_get "$1" tasks | awk -F'\t' '{ printf "%s%s %s", (NR > 1 ? "; " : ""), $1, $2 }')
    printf '%s' "${t:--}"
}

# print_summary DIR: a table of every variant of an ablation directory (or of
# one run); also written to DIR/summary.tsv.
print_summary() {
    local dir=$1 name flags rows
    rows=$(
        printf 'variant\tstate\titeration\tloss\tvalid_loss\ttokens_per_s\tflags\ttasks\n'
        if [ -f "$dir/ablation.conf" ]; then
            while IFS=$'\t' read -r name flags; do
                [ -n "$name" ] || continue
                printf '%s\t%s\t%s\n' "$(run_row "$name" "$dir/$name")" "$(variant_flags "$dir/$name" "$flags")" "$(task_scores "$dir/$name")"
            done <"$dir/variants"
        else
            printf '%s\t%s\t%s\n' "$(run_row "$(sed -n 's/^name=//p' "$dir/run.conf")" "$dir")" "$(paste -sd' ' "$dir/train.args")" "$(task_scores "$dir")"
        fi
    )
    if printf '%s\n' "$rows" >"$dir/summary.tsv.tmp" 2>/dev/null; then mv "$dir/summary.tsv.tmp" "$dir/summary.tsv"; fi
    printf '%s\n' "$rows" | g3_table
}


# g3_submit_summary: --summary.
g3_submit_summary() {
        [ -f "$run_dir/ablation.conf" ] || [ -f "$run_dir/run.conf" ] ||
            die "$run_dir is neither an ablation directory (no ablation.conf) nor a run directory (no run.conf)"
        print_summary "$(cd "$run_dir" && pwd -P)"
        # the loss curves of every variant (or of the run) beside the table: gpt3d plot
        g3=$(g3_gpt3d_bin)
        if [ -n "$g3" ] && "$g3" plot --output "$run_dir/loss.svg" "$run_dir" >/dev/null 2>&1; then
            echo "loss curves: $(cd "$run_dir" && pwd -P)/loss.svg"
        fi
        exit 0
}

# shellcheck shell=bash disable=SC2034,SC2154
# (SC2034, SC2154: the library's globals are set in one of its files and read in another.)
# sbatch/lib/common.sh: what the job script (lib/job.sh) and gpt3d-submit (lib/submit-*.sh)
# share: the job states of a live chain, the one reader of a run's metrics.jsonl, and the
# table printer.  Sourced, never run (docs/slurm.md, "The batch library").

# The job states in which a job of the chain is still queued or running: the one list.
G3_LIVE_STATES="PENDING RUNNING CONFIGURING REQUEUED REQUEUE_HOLD REQUEUE_FED SUSPENDED RESIZING"
g3_live_state() { [[ " $G3_LIVE_STATES " == *" $1 "* ]]; }

# g3_table: align the tab-separated lines on stdin in columns (two spaces
# between them), as "column -t -s TAB" would; column(1) is not installed
# everywhere (Debian's minimal systems lack bsdextrautils).
g3_table() {
    awk -F'\t' '{ row[NR] = $0; for (i = 1; i <= NF; i++) if (length($i) > w[i]) w[i] = length($i) }
        END {
            for (r = 1; r <= NR; r++) {
                n = split(row[r], f, "\t"); line = ""
                for (i = 1; i <= n; i++) line = line (i < n ? sprintf("%-" w[i] "s  ", f[i]) : f[i])
                print line
            }
        }'
}

# g3_gpt3d_bin: the gpt3d binary on stdout: the installation's (G3_BINDIR, set by gpt3d-submit),
# else the first on PATH; nothing when there is none.
g3_gpt3d_bin() {
    if [ -x "${G3_BINDIR:-/nonexistent}/gpt3d" ]; then
        printf '%s\n' "$G3_BINDIR/gpt3d"
    else
        command -v gpt3d || true
    fi
}

# g3_metrics_get RUN EVENT[/SPLIT] FIELD...: the trainer's metrics of a run (RUN/metrics.jsonl,
# "gpt3d train --run-dir RUN"), the only place that reads them. From the last record of event
# EVENT (and of split SPLIT, for "eval/valid"), the value of each FIELD, one line a field, an
# empty line for a field it lacks or a null; nothing at all when the run has no such record.
#   g3_metrics_get RUN tasks: the last metrics of each --eval-tasks task ("task" records),
# "NAME<TAB>METRIC=V METRIC=V..." a line, in the order the tasks first appear.
# It asks "gpt3d metrics", which reads the file through the schema of its records
# (docs/training.md, "Reading the metrics"); only where no gpt3d binary is found (a job whose
# trainer command is another program) it falls back to g3_metrics_plain.
g3_metrics_get() {
    local m="$1/metrics.jsonl" ev=${2%%/*} split="" g3="" out
    if [[ "$2" == */* ]]; then split=${2#*/}; fi
    [ -s "$m" ] || return 0
    g3=$(g3_gpt3d_bin)
    if [ -z "$g3" ]; then
        g3_metrics_plain "$@"
        return 0
    fi
    if [ "$ev" = tasks ]; then
        "$g3" metrics "$m" --event task --fields task,metrics 2>/dev/null | awk -F'\t' '
            { if (!($1 in s)) order[n++] = $1; s[$1] = $2 }
            END { for (i = 0; i < n; i++) printf "%s\t%s\n", order[i], s[order[i]] }'
        return 0
    fi
    shift 2
    local fields where=()
    fields=$(IFS=,; printf '%s' "$*")
    if [ -n "$split" ]; then where=(--where "split=$split"); fi
    out=$("$g3" metrics "$m" --event "$ev" "${where[@]}" --last --fields "$fields" 2>/dev/null || true)
    [ -n "$out" ] || return 0
    printf '%s\n' "$out" | tr '\t' '\n'
}

# g3_metrics_plain: g3_metrics_get's answer without a gpt3d binary, from the text of the file.
g3_metrics_plain() {
    local m="$1/metrics.jsonl" ev=${2%%/*} split="" line f
    if [[ "$2" == */* ]]; then split=${2#*/}; fi
    shift 2
    if [ "$ev" = tasks ]; then
        grep '"event":"task"' "$m" 2>/dev/null | awk '
            { t = $0; sub(/.*"task":"/, "", t); sub(/".*/, "", t)
              v = $0; sub(/.*"metrics":\{/, "", v); sub(/\}.*/, "", v)
              gsub(/"/, "", v); gsub(/:null/, ":", v); gsub(/:/, "=", v); gsub(/,/, " ", v)
              if (!(t in s)) order[n++] = t; s[t] = v }
            END { for (i = 0; i < n; i++) printf "%s\t%s\n", order[i], s[order[i]] }'
        return 0
    fi
    line=$(grep "\"event\":\"$ev\"" "$m" | grep -F "${split:+\"split\":\"$split\"}" | tail -n 1 || true)
    [ -n "$line" ] || return 0
    for f in "$@"; do
        printf '%s\n' "$(sed -n "s/.*\"$f\":\([^,}]*\).*/\1/p" <<<"$line" | sed 's/^null$//')"
    done
}

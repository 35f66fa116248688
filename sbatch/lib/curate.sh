# shellcheck shell=bash disable=SC2034,SC2154
# (SC2034, SC2154: the library's globals are set in one of its files and read in another.)
# sbatch/lib/curate.sh: the body of gpt3d-curate.sbatch, the submitter and the job script of
# data curation (see that script's header and docs/curation.md).  Sourced, never run: by
# gpt3d-curate.sbatch, from lib/ beside it when run by hand, and from WORK_DIR/lib (where the
# submitter copies it) in a job, which Slurm runs from a copy of the script in its spool
# directory.  Uses the site settings of the script (G3_*) and g3_curate_script, its path.

me='gpt3d-curate.sbatch'
g3_log() { printf '%s %s: %s\n' "$(date '+%Y-%m-%dT%H:%M:%S')" "$me" "$*" >&2; }
g3_die() { g3_log "error: $*"; exit 1; }
g3_usage_die() { g3_log "error: $*"; exit 2; }

usage() {
    cat <<EOF
Usage: $me --shard-list FILE [OPTIONS] WORK_DIR
       $me --status WORK_DIR

Submit the curation stages of the JSON-lines shards in FILE (one path a line) as Slurm jobs
chained by dependencies; outputs, reports, logs and the job list go to WORK_DIR.  Run it
again to resume: stages done are skipped, a queued or running chain is left alone.

Options:
      --shard-list FILE    the input shards (first run; kept in WORK_DIR/lists/input.txt)
      --tasks T            array tasks per stage (default: the shard count, at most $G3_DEFAULT_TASKS)
      --lsh-ranks R        ranks of the lsh job, sharing its buckets (default $G3_DEFAULT_LSH_RANKS)
      --task-files FILE    an evaluation task file to decontaminate against (repeatable)
      --vocab-file FILE    GPT-2 vocabulary: with --merge-file, a last job runs gpt3d
      --merge-file FILE    preprocess on the curated shards (WORK_DIR/data/curated_text_document)
      --curate-flag FLAG   one more flag for every 'gpt3d curate' stage (repeatable), e.g.
                           --curate-flag=--text-key=body
      --gpt3d PATH         the gpt3d binary the jobs run (default: gpt3d on PATH)
  -p, --partition NAME     partition
  -A, --account NAME       account
  -t, --time TIME          time limit per job
      --sbatch-arg ARG     one more sbatch option for every job (repeatable)
      --dry-run            print the sbatch commands, submit nothing
      --status             print what is done, queued and failed; submit nothing
  -h, --help               this help
EOF
}

# ---- helpers shared by both modes ----------------------------------------------------------

# g3_conf KEY: a value from WORK_DIR/curate.conf ("key=value" lines; never sourced).
g3_conf() { sed -n "s/^$1=//p" "$WORK/curate.conf" | tail -n 1; }

# The stages in order, those this work directory runs.
g3_stages() {
    local s=(minhash lsh dedup)
    if [ -s "$WORK/lists/tasks.txt" ]; then s+=(contam-count decontaminate); fi
    s+=(filter)
    if [ -n "$(g3_conf vocab)" ]; then s+=(preprocess); fi
    printf '%s\n' "${s[@]}"
}

# g3_input STAGE: the shard list a stage reads.
g3_input() {
    case $1 in
        minhash|lsh|dedup) echo "$WORK/lists/input.txt" ;;
        contam-count|decontaminate) echo "$WORK/lists/dedup.txt" ;;
        filter) if [ -s "$WORK/lists/tasks.txt" ]; then echo "$WORK/lists/decontaminate.txt"; else echo "$WORK/lists/dedup.txt"; fi ;;
        preprocess) echo "$WORK/lists/filter.txt" ;;
    esac
}

# g3_done_count STAGE: how many of its outputs are complete (shards; 1 for lsh and preprocess).
g3_done_count() {
    local n=0 i
    case $1 in
        lsh) [ -f "$WORK/lsh/report.json" ] && n=1 ;;
        preprocess) [ -f "$WORK/data/DONE" ] && n=1 ;;
        *) for ((i = 0; i < NSHARDS; i++)); do
               if [ -f "$(printf '%s/%s/shard-%05d.report.json' "$WORK" "$1" "$i")" ]; then n=$((n + 1)); fi
           done ;;
    esac
    echo "$n"
}

g3_done_want() { case $1 in lsh|preprocess) echo 1 ;; *) echo "$NSHARDS" ;; esac; }

# g3_job_state ID: the job's state (squeue or scontrol while Slurm remembers the job, else
# sacct, else "gone": ended and forgotten; the stage's reports then say how it went).
g3_job_state() {
    local s
    s=$(squeue -h -j "$1" -o %T 2>/dev/null | sort -u | tr '\n' ' ' || true)
    if [ -z "$s" ]; then
        s=$(scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n 's/^JobState=//p' | sort -u | tr '\n' ' ' || true)
    fi
    if [ -z "$s" ]; then s=$(sacct -n -X -j "$1" -o State 2>/dev/null | awk 'NF {print $1}' | sort -u | tr '\n' ' ' || true); fi
    s=${s% }
    echo "${s:-gone}"
}

# ---- job mode: run one stage -----------------------------------------------------------------

g3_run_stage() {
    local stage=$1 gpt3d out list
    gpt3d=$(g3_conf gpt3d)
    list=$(g3_input "$stage")
    out=$WORK/$stage
    local extra=()
    mapfile -t extra < <(sed -n 's/^curate_flag=//p' "$WORK/curate.conf")
    local task_files=()
    mapfile -t task_files < "$WORK/lists/tasks.txt"
    g3_log "job $SLURM_JOB_ID${SLURM_ARRAY_TASK_ID:+ array task $SLURM_ARRAY_TASK_ID}: stage $stage"
    case $stage in
        minhash)
            exec "$gpt3d" curate minhash --shard-list "$list" --output-dir "$out" "${extra[@]}" ;;
        lsh)
            if [ "${SLURM_NTASKS:-1}" -gt 1 ]; then
                exec srun "${G3_SRUN_FLAGS[@]}" -n "$SLURM_NTASKS" "$gpt3d" curate lsh --shard-list "$list" \
                    --minhash-dir "$WORK/minhash" --output-dir "$out" "${extra[@]}"
            fi
            exec "$gpt3d" curate lsh --shard-list "$list" --minhash-dir "$WORK/minhash" --output-dir "$out" "${extra[@]}" ;;
        dedup)
            exec "$gpt3d" curate dedup --shard-list "$list" --lsh-dir "$WORK/lsh" --output-dir "$out" "${extra[@]}" ;;
        contam-count)
            exec "$gpt3d" curate contam-count --shard-list "$list" --output-dir "$out" --allow-empty \
                --task-files "${task_files[@]}" "${extra[@]}" ;;
        decontaminate)
            exec "$gpt3d" curate decontaminate --shard-list "$list" --output-dir "$out" --allow-empty \
                --counts-dir "$WORK/contam-count" --task-files "${task_files[@]}" "${extra[@]}" ;;
        filter)
            exec "$gpt3d" curate filter --shard-list "$list" --output-dir "$out" --allow-empty "${extra[@]}" ;;
        preprocess)
            mkdir -p "$WORK/data"
            rm -f "$WORK/data/DONE"
            # One input file: the curated shards in order, written whole before it is used.
            xargs cat < "$list" > "$WORK/data/curated.jsonl.tmp"
            mv -f "$WORK/data/curated.jsonl.tmp" "$WORK/data/curated.jsonl"
            "$gpt3d" preprocess --input "$WORK/data/curated.jsonl" --output-prefix "$WORK/data/curated" \
                --vocab-file "$(g3_conf vocab)" --merge-file "$(g3_conf merge)" --append-eod --workers 1
            touch "$WORK/data/DONE" ;;
        *) g3_die "unknown stage '$stage'" ;;
    esac
}

# g3_curate_job STAGE WORK_DIR: job mode, one stage.
g3_curate_job() {
    [ $# -eq 2 ] || g3_die "usage: sbatch ... $me --job STAGE WORK_DIR (the submitter makes these jobs)"
    [ -n "${SLURM_JOB_ID:-}" ] || g3_die "--job runs inside a Slurm job; run '$me --shard-list FILE WORK_DIR' to submit"
    WORK=$(cd "$2" && pwd -P) || g3_die "work directory '$2' does not exist"
    [ "$(g3_conf format)" = "gpt3d-curate 1" ] || g3_die "$WORK/curate.conf is not a 'gpt3d-curate 1' configuration"
    g3_run_stage "$1"
}

# ---- submit mode ---------------------------------------------------------------------------

# g3_curate_parse ARGS...: the command line, into the settings (globals) the rest reads.
g3_curate_parse() {
    shard_list="" tasks="" lsh_ranks="" gpt3d="" vocab="" merge="" status=0 dry=0
    task_files=() curate_flags=() sbatch_args=()
    while [ $# -gt 0 ]; do
        case $1 in
            --shard-list) shard_list=${2:?}; shift 2 ;;
            --shard-list=*) shard_list=${1#*=}; shift ;;
            --tasks) tasks=${2:?}; shift 2 ;;
            --tasks=*) tasks=${1#*=}; shift ;;
            --lsh-ranks) lsh_ranks=${2:?}; shift 2 ;;
            --lsh-ranks=*) lsh_ranks=${1#*=}; shift ;;
            --task-files) task_files+=("${2:?}"); shift 2 ;;
            --task-files=*) task_files+=("${1#*=}"); shift ;;
            --vocab-file) vocab=${2:?}; shift 2 ;;
            --vocab-file=*) vocab=${1#*=}; shift ;;
            --merge-file) merge=${2:?}; shift 2 ;;
            --merge-file=*) merge=${1#*=}; shift ;;
            --curate-flag) curate_flags+=("${2:?}"); shift 2 ;;
            --curate-flag=*) curate_flags+=("${1#*=}"); shift ;;
            --gpt3d) gpt3d=${2:?}; shift 2 ;;
            --gpt3d=*) gpt3d=${1#*=}; shift ;;
            -p|--partition) sbatch_args+=("--partition=${2:?}"); shift 2 ;;
            --partition=*) sbatch_args+=("$1"); shift ;;
            -A|--account) sbatch_args+=("--account=${2:?}"); shift 2 ;;
            --account=*) sbatch_args+=("$1"); shift ;;
            -t|--time) sbatch_args+=("--time=${2:?}"); shift 2 ;;
            --time=*) sbatch_args+=("$1"); shift ;;
            --sbatch-arg) sbatch_args+=("${2:?}"); shift 2 ;;
            --sbatch-arg=*) sbatch_args+=("${1#*=}"); shift ;;
            --dry-run) dry=1; shift ;;
            --status) status=1; shift ;;
            -h|--help) usage; exit 0 ;;
            -*) g3_usage_die "unknown option '$1' (see --help)" ;;
            *) break ;;
        esac
    done
    [ $# -eq 1 ] || g3_usage_die "give one WORK_DIR (see --help)"
    WORK=$1
}

# g3_curate_create: a new work directory (lists/input.txt, curate.conf) from the settings.
g3_curate_create() {
    [ "$status" -eq 0 ] || g3_die "$WORK is not a curation work directory (no curate.conf)"
    [ -n "$shard_list" ] || g3_usage_die "a new work directory needs --shard-list FILE"
    [ -f "$shard_list" ] || g3_usage_die "--shard-list '$shard_list' does not exist"
    if [ -n "$vocab$merge" ] && { [ ! -f "$vocab" ] || [ ! -f "$merge" ]; }; then
        g3_usage_die "--vocab-file and --merge-file must both name existing files"
    fi
    for f in "${task_files[@]}"; do [ -f "$f" ] || g3_usage_die "--task-files '$f' does not exist"; done
    if [ -z "$gpt3d" ]; then gpt3d=$(command -v gpt3d || true); fi
    [ -x "$gpt3d" ] || g3_usage_die "no gpt3d binary: put gpt3d on PATH or give --gpt3d PATH"
    case $lsh_ranks in ''|*[!0-9]*|0) [ -z "$lsh_ranks" ] || g3_usage_die "--lsh-ranks '$lsh_ranks' is not a positive number" ;; esac
    [ "$dry" -eq 0 ] || { g3_log "dry run: would create $WORK"; exit 0; }
    mkdir -p "$WORK/lists" "$WORK/logs"
    WORK=$(cd "$WORK" && pwd -P)
    # The input list with absolute paths, comments and blank lines dropped.
    list_dir=$(cd "$(dirname "$shard_list")" && pwd -P)
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%$'\r'}
        case $line in ''|'#'*) continue ;; /*) echo "$line" ;; *) echo "$list_dir/$line" ;; esac
    done < "$shard_list" > "$WORK/lists/input.txt"
    [ -s "$WORK/lists/input.txt" ] || g3_die "--shard-list '$shard_list' names no shard"
    for f in "${task_files[@]}"; do (cd "$(dirname "$f")" && echo "$(pwd -P)/$(basename "$f")"); done > "$WORK/lists/tasks.txt"
    {
        echo "format=gpt3d-curate 1"
        echo "gpt3d=$(cd "$(dirname "$gpt3d")" && pwd -P)/$(basename "$gpt3d")"
        echo "tasks=$tasks"
        echo "lsh_ranks=${lsh_ranks:-$G3_DEFAULT_LSH_RANKS}"
        if [ -n "$vocab" ]; then
            echo "vocab=$(cd "$(dirname "$vocab")" && pwd -P)/$(basename "$vocab")"
            echo "merge=$(cd "$(dirname "$merge")" && pwd -P)/$(basename "$merge")"
        fi
        for f in "${curate_flags[@]}"; do echo "curate_flag=$f"; done
    } > "$WORK/curate.conf.tmp"
    mv -f "$WORK/curate.conf.tmp" "$WORK/curate.conf"
    g3_log "created the work directory $WORK"
}

# g3_curate_prepare: the work directory's stage lists and what of it is queued or running
# (active).
g3_curate_prepare() {
    WORK=$(cd "$WORK" && pwd -P)
    [ "$(g3_conf format)" = "gpt3d-curate 1" ] || g3_die "$WORK/curate.conf is not a 'gpt3d-curate 1' configuration"
    NSHARDS=$(wc -l < "$WORK/lists/input.txt")
    # The lists of the later stages name their shards by position (gpt3d curate's output names).
    for s in dedup decontaminate filter; do
        for ((i = 0; i < NSHARDS; i++)); do printf '%s/%s/shard-%05d.jsonl\n' "$WORK" "$s" "$i"; done > "$WORK/lists/$s.txt"
    done
    touch "$WORK/jobs"

    # What is queued or running now.
    active=()
    while read -r stage id; do
        [ -n "${id:-}" ] || continue
        st=$(g3_job_state "$id")
        case $st in *PENDING*|*RUNNING*|*CONFIGURING*|*COMPLETING*|*REQUEUED*|*SUSPENDED*) active+=("$stage:$id") ;; esac
    done < "$WORK/jobs"
}

# g3_curate_status: --status: each stage's shards done, and its job.
g3_curate_status() {
    all=1
    while read -r stage; do
        n=$(g3_done_count "$stage"); want=$(g3_done_want "$stage")
        id=$(awk -v s="$stage" '$1 == s {id = $2} END {print id}' "$WORK/jobs")
        state=""; [ -z "$id" ] || state=" (job $id: $(g3_job_state "$id"))"
        [ "$n" -eq "$want" ] || all=0
        printf '%-14s %s/%s done%s\n' "$stage" "$n" "$want" "$state"
    done < <(g3_stages)
    if [ "$all" -eq 1 ]; then echo "complete"
    elif [ "${#active[@]}" -gt 0 ]; then echo "queued or running: ${active[*]}"
    else echo "incomplete: run '$me $WORK' to submit the rest"; fi
    exit 0
}

# g3_curate_submit: every stage from the first that is not done (the later ones depend on
# it), with the library copied into WORK_DIR/lib for the jobs.
g3_curate_submit() {
    if [ "${#active[@]}" -gt 0 ]; then
        g3_log "a chain is queued or running (${active[*]}); nothing submitted (see --status)"
        exit 0
    fi

    # Submit every stage from the first that is not done; the later ones depend on it.
    ntasks=$(g3_conf tasks)
    [ -n "$ntasks" ] || ntasks=$G3_DEFAULT_TASKS
    [ "$ntasks" -le "$NSHARDS" ] || ntasks=$NSHARDS
    script=$g3_curate_script
    if [ "$dry" -eq 0 ] && ! [ "$WORK/lib/curate.sh" -ef "$g3_lib/curate.sh" ]; then
        mkdir -p "$WORK/lib"
        cp "$g3_lib/curate.sh" "$WORK/lib/curate.sh.tmp"
        mv -f "$WORK/lib/curate.sh.tmp" "$WORK/lib/curate.sh"
    fi
    prev="" redo=0 submitted=0
    while read -r stage; do
        if [ "$redo" -eq 0 ] && [ "$(g3_done_count "$stage")" -eq "$(g3_done_want "$stage")" ]; then
            g3_log "$stage: done"
            continue
        fi
        redo=1
        args=(--parsable --job-name="gpt3d-curate-$stage" --kill-on-invalid-dep=yes
              --output="$WORK/logs/$stage-%A_%a.out" "${sbatch_args[@]}")
        case $stage in
            lsh) args+=(--ntasks="$(g3_conf lsh_ranks)") ;;
            preprocess) ;;
            *) args+=(--array="0-$((ntasks - 1))") ;;
        esac
        [ -z "$prev" ] || args+=(--dependency="afterok:$prev")
        if [ "$dry" -eq 1 ]; then
            echo "sbatch ${args[*]} $script --job $stage $WORK"
            prev="DRY-$stage"
            continue
        fi
        id=$(sbatch "${args[@]}" "$script" --job "$stage" "$WORK") || g3_die "sbatch refused the $stage job"
        id=${id%%;*}
        echo "$stage $id" >> "$WORK/jobs"
        g3_log "$stage: submitted job $id${prev:+ (after $prev)}"
        prev=$id
        submitted=$((submitted + 1))
    done < <(g3_stages)
    if [ "$redo" -eq 0 ]; then g3_log "every stage is done: nothing to submit"; fi
    [ "$dry" -eq 1 ] || [ "$redo" -eq 0 ] || g3_log "submitted $submitted jobs; follow them with '$me --status $WORK'"
}

# g3_curate_main ARGS...: job mode (--job STAGE WORK_DIR) or submit mode.
g3_curate_main() {
    if [ "${1:-}" = "--job" ]; then
        shift
        g3_curate_job "$@"
        exit 0
    fi
    g3_curate_parse "$@"
    if [ ! -f "$WORK/curate.conf" ]; then g3_curate_create; fi
    g3_curate_prepare
    if [ "$status" -eq 1 ]; then g3_curate_status; fi
    g3_curate_submit
}

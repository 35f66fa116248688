# shellcheck shell=bash disable=SC2034,SC2154
# (SC2034, SC2154: the library's globals are set in one of its files and read in another.)
# sbatch/lib/submit.sh: gpt3d-submit's usage, its checks of the command line, and the
# creation, resumption and submission of one run (the chain of gpt3d-train.sbatch jobs).
# Sourced by gpt3d-submit, never run (docs/slurm.md, "The batch library"); the other parts
# are lib/status.sh, lib/summary.sh and lib/ablation.sh.

usage() {
    cat <<EOF
Usage: $me [OPTIONS] RUN_DIR [-- GPT3D_TRAIN_FLAGS...]
       $me --status RUN_DIR
       $me --ablations TABLE [OPTIONS] ABLATION_DIR -- COMMON_TRAIN_FLAGS...
       $me --summary ABLATION_DIR|RUN_DIR

Create the run directory RUN_DIR (configuration, checkpoints, logs, attempt
history) and submit a chain of jobs that trains until "gpt3d train" finishes:
each job saves a checkpoint when Slurm's warning signal comes and the next
job of the chain goes on from it.  Safe to re-run: a run whose chain is queued
or running is left alone, a run whose chain broke (jobs cancelled or lost)
gets a new chain that resumes from the last checkpoint, a complete run is
reported as such.  RUN_DIR must be on a file system that every compute node
mounts (not node-local storage such as /tmp: a run under the cluster's TmpFS
is refused).

Options (the job script's #SBATCH lines give the defaults):
  -N, --nodes N            nodes per job (N, or MIN-MAX)
      --sizes LIST         elastic: the node counts the run may use, e.g.
                           280,350,420; each job asks for --nodes=MIN-MAX
                           --exclusive and shrinks to the largest listed count
                           it got.  Needs
                           --global-batch-size among the train flags; sizes
                           that cannot keep that global batch are refused
      --plan-machine NAME|FILE  the machine gpt3d plan times each size on
                           (dgx-a100, dgx-h100 or a --calibrate file; default:
                           the plan's own, dgx-h100 for --device cuda)
      --ntasks-per-node N  ranks per node, one per GPU (given to srun; the job
                           script's G3_RANKS_PER_NODE by default)
      --gpus-per-node N    GPUs per node
  -p, --partition NAME     partition
  -A, --account NAME       account
  -t, --time TIME          time limit per job (sbatch --time format)
      --signal-seconds S   send the warning signal S seconds before the time limit
      --chain N            jobs queued ahead of need (default 3, or what the
                           run was created with); the chain extends itself
                           while the run goes on
      --max-failures N     stop after N failed attempts in a row without
                           progress (default $G3_MAX_FAILURES_DEFAULT)
      --exclude NODES      never run on these nodes (Slurm node list)
      --sbatch-arg ARG     one more sbatch option for every job (repeatable),
                           e.g. --sbatch-arg=--qos=high
      --no-health-check    do not check the nodes at the start of each job
      --node-check CMD     one more per-node health check (run with bash -c on
                           every node at the start of each job; a non-zero
                           status excludes the node), e.g. "test -d /scratch"
      --train-command CMD  the command that trains, as words separated by
                           spaces (default: "gpt3d train" from this installation);
                           use it to run gpt3d through a wrapper (a container
                           runtime, a profiler)
      --job-script FILE    the job script to copy into a new run (default:
                           $G3_PKGDATADIR/sbatch/gpt3d-train.sbatch)
      --retry              resume a run that was stopped after failures
      --load-fallback      with --retry: the next job loads the newest checkpoint
                           that verifies, skipping a damaged newest one (the
                           trainer's --load-fallback; the job log names what
                           it skipped)
      --clear-exclusions   with --retry or a resume: forget the run's excluded
                           nodes (once they are repaired); the record is kept
                           as exclusions.tsv.cleared-TIME
      --dry-run            create nothing, submit nothing: print what would be done
      --create-only        create the run directory, submit nothing
      --status             print the state of RUN_DIR and submit nothing
      --ablations TABLE    an ablation study: one run directory per row of
                           TABLE ("NAME FLAG..." lines: the variant's name and
                           the gpt3d train flags it adds to or overrides in
                           COMMON_TRAIN_FLAGS; # starts a comment), all
                           submitted as one job array
      --array-throttle N   at most N variants run at once (sbatch --array=...%N;
                           default 2)
      --summary            print one line per variant of ABLATION_DIR (or for
                           RUN_DIR): state, iteration, last loss, validation
                           loss, tokens/s, the last --eval-tasks scores;
                           draw their loss curves in DIR/loss.svg
                           (gpt3d plot); submit nothing
  -h, --help               this help
      --version            the version

GPT3D_TRAIN_FLAGS after "--" go to "gpt3d train" (--save and --load are set
to RUN_DIR/checkpoints, --run-dir to RUN_DIR).  A "--config FILE" among them is copied into
RUN_DIR/config.  Re-running with different settings for an existing run is
an error: start a new run directory instead.
EOF
}

err() { printf '%s: error: %s\n' "$me" "$*" >&2; }
usage_error() { err "$*"; echo "Try '$me --help'." >&2; exit "$G3_EXIT_USAGE"; }
die() { err "$*"; exit "$G3_EXIT_FAILURE"; }
say() { printf '%s: %s\n' "$me" "$*"; }

# abs_path PATH: PATH made absolute, symbolic links of its existing part
# resolved, whether or not it exists yet (a dry run names what it would create).
abs_path() { realpath -m -- "$1"; }

# lock_creation DIR: hold a lock on the nearest existing directory above DIR
# (on the directory itself: nothing is left behind) for the rest of this
# process, so that two gpt3d-submit creating DIR at the same moment do it one
# after the other: the second finds the run the first created.
lock_creation() {
    local d
    d=$(dirname "$1")
    while ! [ -d "$d" ]; do d=$(dirname "$d"); done
    exec 8<"$d"
    flock -w 60 8 || die "another $me is creating a run in $d (it holds a lock on the directory for 60 s); try again"
}

# Directories this process created for a run it then refused: removed on exit
# (a refused submission leaves nothing behind).
created_top=""
cleanup_created() {
    if [ -n "$created_top" ]; then rm -rf -- "$created_top"; fi
}

# make_dir DIR: mkdir -p DIR, remembering the topmost directory it created
# (for cleanup_created until commit_created).
make_dir() {
    local top="" d
    d=$1
    while ! [ -e "$d" ]; do top=$d; d=$(dirname "$d"); done
    mkdir -p -- "$1" || return 1
    if [ -n "$top" ] && [ -z "$created_top" ]; then created_top=$top; fi
}
commit_created() { created_top=""; }

# check_shared DIR: refuse a run directory under Slurm's TmpFS (node-local
# temporary storage: each compute node has its own, so jobs would not see the
# run and would die without a log).
check_shared() {
    local tmpfs
    command -v scontrol >/dev/null || return 0
    tmpfs=$(scontrol show config 2>/dev/null | sed -n 's/^TmpFS *= *\([^ ]*\).*/\1/p' | sed -n 1p || true)
    [ -n "$tmpfs" ] || return 0
    tmpfs=$(abs_path "$tmpfs")
    case "$1/" in
        "$tmpfs"/*) die "'$1' is under $tmpfs, the node-local temporary storage of this cluster (TmpFS in slurm.conf): each compute node has its own, so the jobs would not find the run and would die without a log; put the run on a file system every node mounts (your home or project directory)" ;;
    esac
}

# need VALUE OPTION: an option's value must be there.
need() { if [ -z "$1" ]; then usage_error "option $2 needs a value"; fi; }
is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
# count_in VALUE OPTION MAX: VALUE must be a whole number from 1 to MAX (compared as text
# first: a 20-digit number would overflow bash's arithmetic).
count_in() {
    if ! is_count "$1" || [ "${#1}" -gt "${#3}" ] || { [ "${#1}" -eq "${#3}" ] && [[ "$1" > "$3" ]]; }; then
        usage_error "$2 '$1' is not a whole number from 1 to $3"
    fi
}
# Bounds: more nodes than any cluster has, more jobs queued ahead than a chain needs.
max_nodes=100000
max_chain=100
# check_time VALUE: sbatch --time's formats (minutes, minutes:seconds, hours:minutes:seconds,
# days-hours, days-hours:minutes, days-hours:minutes:seconds, or UNLIMITED / INFINITE),
# checked here so that sbatch cannot refuse it after the run directory exists.
check_time() {
    if ! [[ "$1" =~ ^([0-9]+|[0-9]+:[0-9]+|[0-9]+:[0-9]+:[0-9]+|[0-9]+-[0-9]+|[0-9]+-[0-9]+:[0-9]+|[0-9]+-[0-9]+:[0-9]+:[0-9]+|UNLIMITED|INFINITE|unlimited|infinite)$ ]] || [ "${#1}" -gt 16 ]; then
        usage_error "--time '$1' is not a Slurm time limit (MINUTES, HOURS:MINUTES:SECONDS, DAYS-HOURS[:MINUTES[:SECONDS]] or UNLIMITED)"
    fi
}
# check_nodes VALUE: N or MIN-MAX with MIN <= MAX, each at most max_nodes.
check_nodes() {
    [[ "$1" =~ ^([1-9][0-9]*)(-([1-9][0-9]*))?$ ]] || usage_error "--nodes '$1' is not a node count (N or MIN-MAX)"
    local lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}
    count_in "$lo" --nodes "$max_nodes"
    count_in "$hi" --nodes "$max_nodes"
    [ "$lo" -le "$hi" ] || usage_error "--nodes '$1': the minimum $lo is above the maximum $hi (give MIN-MAX)"
}

options=(--nodes --sizes --plan-machine --ntasks-per-node --gpus-per-node --partition --account --time --signal-seconds
         --chain --max-failures --exclude --sbatch-arg --train-command --job-script --retry
         --dry-run --status --help --version --no-health-check --node-check --ablations
         --array-throttle --summary --create-only --load-fallback --clear-exclusions)
suggest() {  # suggest WORD: the known option nearest to WORD, by common prefix
    local o best="" bestn=0 n
    for o in "${options[@]}"; do
        n=0
        while [ "$n" -lt "${#o}" ] && [ "${o:n:1}" = "${1:n:1}" ]; do n=$((n + 1)); done
        if [ "$n" -gt "$bestn" ]; then bestn=$n; best=$o; fi
    done
    if [ "$bestn" -ge 4 ]; then echo " (did you mean '$best'?)"; fi
}

# check_train_flags RANKS_PER_NODE JOB_SCRIPT: the trainer's own checks ("TRAIN_COMMAND
# FLAGS... --check NODES:RANKS_PER_NODE": the flags, the layout on nodes of that many ranks,
# the batch arithmetic, the data and tokenizer files, the device's kernel sizes) for every
# node count a job of the run may get (--nodes N or both ends of MIN-MAX, each of --sizes,
# else the job script's #SBATCH --nodes), before anything is created or submitted.  A refusal
# prints the trainer's message and exits with its code (2: the flags, 1: a missing file).
check_train_flags() {
    local rpn=$1 script=$2 counts n out code
    if [ -n "$sizes" ]; then counts=${sizes//,/ }
    elif [ -n "$nodes_arg" ]; then counts="${nodes_arg%%-*} ${nodes_arg##*-}"
    else
        counts=$(sed -n 's/^#SBATCH[[:space:]]*\(--nodes=\|-N[[:space:]]*\)\([0-9]*\).*/\2/p' "$script" 2>/dev/null | head -n 1)
        counts=${counts:-1}
    fi
    # shellcheck disable=SC2086  # a list of node counts
    for n in $(printf '%s\n' $counts | sort -n -u); do
        code=0
        # with the flags the job script adds (gpt3d-train.sbatch: --save, --load, --run-dir);
        # --check touches none of them
        out=$("${train_cmd[@]}" --save "$run_dir/checkpoints" --load "$run_dir/checkpoints" \
            --run-dir "$run_dir" ${train_args[@]+"${train_args[@]}"} --check "$n:$rpn" 2>&1) || code=$?
        if [ "$code" -ne 0 ]; then
            err "the gpt3d train flags do not pass the trainer's checks for $n node(s) x $rpn rank(s) per node (${train_cmd[*]} ... --check $n:$rpn); nothing was created or submitted:"
            printf '%s\n' "$out" | grep -E '^(error|warning): ' >&2 || printf '%s\n' "$out" | tail -n 5 >&2
            exit "$([ "$code" -eq "$G3_EXIT_USAGE" ] && echo "$G3_EXIT_USAGE" || echo "$G3_EXIT_FAILURE")"
        fi
    done
}

# ---- Command line ----------------------------------------------------------
# g3_submit_parse ARGS...: the command line, into the settings (globals) read by the rest.
g3_submit_parse() {
    orig_args=("$@")
    sbatch_opts=()
    sizes=""
    plan_machine=""
    nodes_arg=""
    fresh_run=0
    fresh_top=""
    nodes_given=0
    ranks_per_node=""
    chain=3
    chain_given=0
    max_failures=$G3_MAX_FAILURES_DEFAULT
    train_command=""
    job_script=""
    retry=0
    dry_run=0
    status=0
    run_dir=""
    have_train_args=0
    train_args=()
    settings_given=0
    gpus_per_node=""
    health_check=yes
    node_check=""
    ablations=""
    throttle=2
    summary=0
    create_only=0
    load_fallback=0
    clear_exclusions=0

    while [ $# -gt 0 ]; do
        opt=$1
        val=""
        case "$opt" in
            --*=*) val=${opt#*=}; opt=${opt%%=*}; set -- "$opt" "$val" "${@:2}" ;;
        esac
        case "$opt" in
            -N|--nodes)
                need "${2:-}" "$opt"; check_nodes "$2"
                sbatch_opts+=("--nodes=$2"); nodes_arg=$2; nodes_given=1; settings_given=1; shift 2 ;;
            --sizes)
                need "${2:-}" "$opt"; [[ "$2" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || usage_error "--sizes '$2' is not a list of node counts (like 280,350,420)"
                for s_ in ${2//,/ }; do count_in "$s_" "--sizes: node count" "$max_nodes"; done
                sizes=$(tr ',' '\n' <<<"$2" | sort -n -u | paste -sd, -); settings_given=1; shift 2 ;;
            --plan-machine) need "${2:-}" "$opt"; plan_machine=$2; shift 2 ;;
            --ntasks-per-node)
                need "${2:-}" "$opt"; count_in "$2" "$opt" 4096
                ranks_per_node=$2; settings_given=1; shift 2 ;;
            --gpus-per-node)
                need "${2:-}" "$opt"; count_in "$2" "$opt" 4096
                sbatch_opts+=("$opt=$2"); gpus_per_node=$2; settings_given=1; shift 2 ;;
            -p|--partition) need "${2:-}" "$opt"; sbatch_opts+=("--partition=$2"); settings_given=1; shift 2 ;;
            -A|--account) need "${2:-}" "$opt"; sbatch_opts+=("--account=$2"); settings_given=1; shift 2 ;;
            -t|--time) need "${2:-}" "$opt"; check_time "$2"; sbatch_opts+=("--time=$2"); settings_given=1; shift 2 ;;
            --signal-seconds)
                need "${2:-}" "$opt"
                if ! [[ "$2" =~ ^[0-9]{1,5}$ ]] || [ "$2" -gt 65535 ]; then
                    usage_error "--signal-seconds '$2' is not a number of seconds (0 to 65535)"
                fi
                sbatch_opts+=("--signal=B:USR2@$2"); settings_given=1; shift 2 ;;
            --chain) need "${2:-}" "$opt"; count_in "$2" --chain "$max_chain"; chain=$2; chain_given=1; shift 2 ;;
            --max-failures)
                need "${2:-}" "$opt"; count_in "$2" --max-failures 1000
                max_failures=$2; settings_given=1; shift 2 ;;
            --exclude) need "${2:-}" "$opt"; sbatch_opts+=("--exclude=$2"); settings_given=1; shift 2 ;;
            --sbatch-arg) need "${2:-}" "$opt"; sbatch_opts+=("$2"); settings_given=1; shift 2 ;;
            --train-command) need "${2:-}" "$opt"; train_command=$2; settings_given=1; shift 2 ;;
            --job-script) need "${2:-}" "$opt"; job_script=$2; shift 2 ;;
            --no-health-check) health_check=no; settings_given=1; shift ;;
            --node-check)
                need "${2:-}" "$opt"; [[ "$2" != *$'\n'* ]] || usage_error "--node-check must be one line"
                node_check=$2; settings_given=1; shift 2 ;;
            --ablations) need "${2:-}" "$opt"; ablations=$2; shift 2 ;;
            --array-throttle) need "${2:-}" "$opt"; count_in "$2" --array-throttle 100000; throttle=$2; shift 2 ;;
            --summary) summary=1; shift ;;
            --create-only) create_only=1; shift ;;
            --retry) retry=1; shift ;;
            --load-fallback) load_fallback=1; shift ;;
            --clear-exclusions) clear_exclusions=1; shift ;;
            --dry-run) dry_run=1; shift ;;
            --status) status=1; shift ;;
            -h|--help) usage; exit 0 ;;
            --version) echo "$me (gpt3d) $G3_VERSION"; exit 0 ;;
            --) shift; have_train_args=1; train_args=("$@"); break ;;
            -*) usage_error "unknown option '$opt'$(suggest "$opt")" ;;
            *)
                [ -z "$run_dir" ] || usage_error "more than one run directory ('$run_dir' and '$opt'); put gpt3d train flags after '--'"
                run_dir=$1; shift ;;
        esac
    done
    g3_submit_check_args
}

# g3_submit_check_args: what the options ask must fit together.
g3_submit_check_args() {
    [ -n "$run_dir" ] || usage_error "no run directory given"
    if [ "$load_fallback" -eq 1 ] && [ "$retry" -eq 0 ]; then
        usage_error "--load-fallback goes with --retry: gpt3d-submit --retry --load-fallback RUN_DIR resumes a stopped run from the newest checkpoint that verifies"
    fi
    # A newline or another control character in the run directory would break the sbatch
    # command lines and the run's files that name it.
    if [[ "$run_dir" == *[[:cntrl:]]* ]]; then
        usage_error "the run directory '$(printf '%q' "$run_dir")' contains a newline or another control character; choose a plain name"
    fi
    if [ -n "$sizes" ]; then
        [ "$nodes_given" -eq 0 ] || usage_error "give --sizes or --nodes, not both (--sizes asks for --nodes=MIN-MAX itself)"
        # Whole nodes: with --ntasks-per-node and a node range Slurm allocates the
        # minimum; --exclusive makes it give the largest count available.
        sbatch_opts+=("--nodes=${sizes%%,*}-${sizes##*,}" --exclusive)
    fi
}

# ---- The run directory -----------------------------------------------------
# g3_submit_prepare: the run directory, the job script, the health check, the trainer and its
# flags (a --config FILE is copied into RUN/config and named there).
g3_submit_prepare() {
    command -v sbatch >/dev/null || [ "$dry_run" -eq 1 ] || die "sbatch is not on PATH: run $me on a Slurm login node (or load the Slurm module)"

    for a in "${train_args[@]}"; do
        case "$a" in
            --save|--save=*|--load|--load=*|--run-dir|--run-dir=*)
                usage_error "'$a' among the gpt3d train flags: the run directory holds the checkpoints (RUN_DIR/checkpoints) and the trainer's files; leave --save, --load and --run-dir out" ;;
            *$'\n'*) usage_error "a gpt3d train flag contains a newline: '$a'" ;;
        esac
    done

    if [ -z "$job_script" ]; then job_script="${GPT3D_SBATCH_DIR:-$G3_PKGDATADIR/sbatch}/gpt3d-train.sbatch"; fi

    RUN=$(abs_path "$run_dir")
    check_shared "$RUN"
    # From here to the run's own lock, creating the run is one step (two
    # gpt3d-submit on one new run directory: the second finds the run).
    if [ "$dry_run" -eq 0 ]; then lock_creation "$RUN"; fi
    if [ -e "$run_dir" ] && ! [ -d "$run_dir" ]; then die "run directory '$run_dir' exists and is not a directory"; fi
    new_run=1
    if [ -f "$run_dir/run.conf" ]; then new_run=0; fi
    if [ "$new_run" -eq 1 ] && [ "$have_train_args" -eq 0 ]; then
        usage_error "'$run_dir' is not a run yet: give the gpt3d train flags after '--' to create it"
    fi
    if [ "$new_run" -eq 1 ] && [ -d "$run_dir" ] && [ -n "$(ls -A "$run_dir")" ]; then
        die "'$run_dir' exists, is not empty and is not a gpt3d run (no run.conf); choose a new or empty directory"
    fi
    [ -r "$job_script" ] || [ "$new_run" -eq 0 ] || die "job script '$job_script' is missing; give --job-script FILE or set GPT3D_SBATCH_DIR"

    # The job script's library (lib/common.sh, lib/job.sh; copied into RUN/lib): beside the
    # job script, else gpt3d-submit's own.
    job_lib=$G3_LIB
    if [ -r "$(dirname "$job_script")/lib/job.sh" ]; then job_lib=$(dirname "$job_script")/lib; fi

    # The health check (gpt3d-healthcheck, beside the job script or installed)
    # and the gpt3d it runs for its communication test.
    health_script=""
    health_gpt3d=""
    if [ "$new_run" -eq 1 ] && [ "$health_check" = yes ]; then
        for f in "$(dirname "$job_script")/gpt3d-healthcheck" "$G3_PKGDATADIR/sbatch/gpt3d-healthcheck"; do
            if [ -r "$f" ]; then health_script=$f; break; fi
        done
        [ -n "$health_script" ] || die "gpt3d-healthcheck is neither beside $job_script nor in $G3_PKGDATADIR/sbatch; reinstall gpt3d or give --no-health-check"
        if [ -x "$G3_BINDIR/gpt3d" ]; then health_gpt3d=$G3_BINDIR/gpt3d
        elif command -v gpt3d >/dev/null; then health_gpt3d=$(command -v gpt3d)
        else say "warning: no gpt3d binary found: the health check will skip its communication test"; fi
    fi

    # The trainer: --train-command, else gpt3d from this installation or PATH.
    train_cmd=()
    if [ -n "$train_command" ]; then
        read -r -a train_cmd <<<"$train_command"
        [ "${#train_cmd[@]}" -gt 0 ] || usage_error "--train-command is empty"
    elif [ "$new_run" -eq 1 ]; then
        if [ -x "$G3_BINDIR/gpt3d" ]; then train_cmd=("$G3_BINDIR/gpt3d" train)
        elif command -v gpt3d >/dev/null; then train_cmd=("$(command -v gpt3d)" train)
        else die "gpt3d is neither in $G3_BINDIR nor on PATH; load the gpt3d module or give --train-command"; fi
    fi

    name=$(basename "$RUN" | tr -c 'A-Za-z0-9_.\n-' '_')

    # Train flags: a --config FILE is copied into RUN/config and named there.
    config_src=()
    config_dst=()
    rewritten=()
    i=0
    while [ "$i" -lt "${#train_args[@]}" ]; do
        a=${train_args[i]}
        if [ "$a" = "--config" ] || [[ "$a" == --config=* ]]; then
            if [ "$a" = "--config" ]; then
                i=$((i + 1))
                [ "$i" -lt "${#train_args[@]}" ] || usage_error "--config among the gpt3d train flags needs a file"
                f=${train_args[i]}
            else
                f=${a#--config=}
            fi
            [ -f "$f" ] || usage_error "config file '$f' (--config) does not exist"
            config_src+=("$f")
            config_dst+=("$RUN/config/$(basename "$f")")
            rewritten+=(--config "$RUN/config/$(basename "$f")")
        else
            rewritten+=("$a")
        fi
        i=$((i + 1))
    done
}

# train_value NAME DEFAULT: a gpt3d train setting as the trainer will see it:
# the last --NAME on the command line, else the last "NAME = value" line of
# the --config files, else DEFAULT.
train_value() {
    local v="" k f
    for ((k = 0; k < ${#train_args[@]}; k++)); do
        case "${train_args[k]}" in
            "--$1") if [ $((k + 1)) -lt "${#train_args[@]}" ]; then v=${train_args[k + 1]}; fi ;;
            "--$1="*) v=${train_args[k]#--"$1"=} ;;
        esac
    done
    if [ -z "$v" ]; then
        for f in ${config_src[@]+"${config_src[@]}"}; do
            k=$(sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\([^#[:space:]]*\).*/\1/p" "$f" | tail -n 1)
            if [ -n "$k" ]; then v=$k; fi
        done
    fi
    echo "${v:-$2}"
}


# g3_submit_check: the elastic sizes and the trainer's own checks of a new run, then the
# chain's sbatch options and the run's lock.
g3_submit_check() {
    # Elastic sizes: each must split into whole data-parallel groups and keep the
    # global batch a whole number of micro-batches per data-parallel rank.
    if [ -n "$sizes" ] && [ "$have_train_args" -eq 1 ]; then
        gbs=$(train_value global-batch-size "")
        mbs=$(train_value micro-batch-size 4)
        tp=$(train_value tensor-model-parallel-size 1)
        pp=$(train_value pipeline-model-parallel-size 1)
        rpn=$ranks_per_node
        if [ -z "$rpn" ]; then
            rpn=$(sed -n 's/^G3_RANKS_PER_NODE=\([0-9]*\).*/\1/p' "$job_script" 2>/dev/null | head -n 1)
            rpn=${rpn:-1}
        fi
        [ -n "$gbs" ] || usage_error "--sizes needs --global-batch-size among the gpt3d train flags (or in the --config file), so that every size trains with the same global batch"
        for v in "$gbs" "$mbs" "$tp" "$pp"; do
            is_count "$v" || usage_error "--sizes: cannot check the batch: '$v' (global batch, micro-batch, TP or PP) is not a positive whole number"
        done
        for s in ${sizes//,/ }; do
            ranks=$((s * rpn))
            if [ $((ranks % (tp * pp))) -ne 0 ]; then
                usage_error "--sizes: $s nodes x $rpn ranks = $ranks ranks is not a multiple of TP x PP = $tp x $pp; drop $s from --sizes"
            fi
            dp=$((ranks / (tp * pp)))
            if [ $((gbs % (mbs * dp))) -ne 0 ]; then
                usage_error "--sizes: at $s nodes DP = $dp, and the global batch $gbs is not a multiple of micro-batch $mbs x DP $dp; drop $s from --sizes or change --global-batch-size"
            fi
        done
    fi

    # The trainer checks the flags of a new run before anything exists (under --dry-run too).
    if [ "$new_run" -eq 1 ] && [ "$have_train_args" -eq 1 ]; then
        check_rpn=$ranks_per_node
        if [ -z "$check_rpn" ]; then
            check_rpn=$(sed -n 's/^G3_RANKS_PER_NODE=\([0-9]*\).*/\1/p' "$job_script" 2>/dev/null | head -n 1)
        fi
        check_train_flags "${check_rpn:-1}" "$job_script"
    fi

    # The chain's sbatch options: what every job of the run is submitted with.
    chain_sbatch=(--job-name="gpt3d-$name" --chdir="$RUN" --output="$RUN/logs/%x-%j.out"
                  --open-mode=append ${sbatch_opts[@]+"${sbatch_opts[@]}"})

    exec 9>/dev/null
    if [ "$dry_run" -eq 0 ]; then
        make_dir "$RUN" || die "cannot create the run directory '$RUN'"
        exec 9>>"$RUN/.lock"
        flock -w 60 9 || die "another $me or a job of this run holds $RUN/.lock; try again"
    fi
}

lines() { if [ $# -gt 0 ]; then printf '%s\n' "$@"; fi; }

# g3_submit_resume: an existing run: the same settings, not complete, not queued; clear a
# stop (--retry), the exclusions (--clear-exclusions), a damaged checkpoint (--load-fallback).
g3_submit_resume() {
    format=$(sed -n 's/^format=//p' "$RUN/run.conf")
    [ "$format" = "gpt3d-run 1" ] || die "$RUN/run.conf has format '$format'; this $me reads 'gpt3d-run 1'"
    # A re-run must not change the run: compare what it was given.
    if [ "$have_train_args" -eq 1 ] && [ "$(lines "${rewritten[@]}")" != "$(cat "$RUN/train.args")" ]; then
        die "$RUN was created with other gpt3d train flags (see $RUN/train.args); to load an older checkpoint give --retry --load-fallback instead of the flag; to fix a flag of this run edit $RUN/train.args (one word per line) and resume with '$me --retry $RUN'; otherwise start a new run directory"
    fi
    for j in "${!config_src[@]}"; do
        cmp -s "${config_src[j]}" "${config_dst[j]}" ||
            die "config file '${config_src[j]}' differs from the run's copy ${config_dst[j]}; start a new run directory to change it"
    done
    if [ "$settings_given" -eq 1 ]; then
        if [ "$(lines "${chain_sbatch[@]}")" != "$(cat "$RUN/sbatch.args")" ] ||
           [ "$max_failures" != "$(sed -n 's/^max_failures=//p' "$RUN/run.conf")" ] ||
           [ "$sizes" != "$(sed -n 's/^sizes=//p' "$RUN/run.conf")" ] ||
           [ "$ranks_per_node" != "$(sed -n 's/^ranks_per_node=//p' "$RUN/run.conf")" ] ||
           [ "$health_check" != "$(sed -n 's/^health_check=//p' "$RUN/run.conf")" ] ||
           [ "$node_check" != "$(sed -n 's/^node_check=//p' "$RUN/run.conf")" ] ||
           { [ -n "$train_command" ] && [ "$(lines "${train_cmd[@]}")" != "$(cat "$RUN/train.cmd")" ]; }; then
            die "$RUN was created with other settings (see $RUN/run.conf, sbatch.args, train.cmd); re-run as '$me $RUN' to resume it, or start a new run directory"
        fi
    fi
    if [ "$create_only" -eq 1 ]; then
        # (An ablation study checks its variants this way, stopped ones too.)
        say "$RUN exists with these settings; nothing to create"
        exit 0
    fi
    if [ -e "$RUN/COMPLETE" ]; then
        say "$RUN is complete: $(head -n 1 "$RUN/COMPLETE")"
        exit 0
    fi
    if [ -e "$RUN/FAILED" ]; then
        if [ "$retry" -eq 0 ]; then
            err "$RUN was stopped: $(head -n 1 "$RUN/FAILED")"
            echo "Fix the cause (see $RUN/attempts.tsv and $RUN/logs), then resume with: $me --retry $RUN" >&2
            exit "$G3_EXIT_FAILURE"
        fi
    fi
    stored_chain=$(sed -n 's/^chain=//p' "$RUN/run.conf")
    if [ "$chain_given" -eq 0 ] && is_count "${stored_chain:-x}" && [ "${#stored_chain}" -le 3 ] &&
       [ "$stored_chain" -le "$max_chain" ]; then chain=$stored_chain; fi
    jobs=$(live_jobs "$RUN")
    # Jobs that can never start: a dependency that failed, or (BadConstraints)
    # exclusions that leave too few nodes.
    stuck=$(printf '%s\n' "$jobs" | awk '$3 ~ /DependencyNeverSatisfied|BadConstraints/ {print $1}')
    active=$(printf '%s\n' "$jobs" | awk 'NF && $3 !~ /DependencyNeverSatisfied|BadConstraints/ {print $1}')
    if [ -n "$active" ]; then
        say "$RUN already has a chain queued or running (jobs $(echo "$active" | paste -sd' ' -)); not submitting another"
        exit 0
    fi
    if [ -n "$stuck" ]; then
        say "cancelling jobs of the broken chain that can never start: $(echo "$stuck" | paste -sd' ' -)"
        if [ "$dry_run" -eq 0 ]; then
            # shellcheck disable=SC2086  # a list of job ids
            scancel $stuck || true
        fi
    fi
    if [ "$dry_run" -eq 0 ] && [ -e "$RUN/FAILED" ]; then
        mv "$RUN/FAILED" "$RUN/FAILED.$(date +%Y%m%dT%H%M%S)"
        say "cleared the stop of $RUN (kept as FAILED.*); failures count afresh"
        # A "retry" line in the history: failures before it no longer count
        # towards the limit (it is not an attempt).
        now=$(date '+%Y-%m-%dT%H:%M:%S')
        it=$(latest_iter "$RUN")
        printf -- '-\t-\t-\t%s\t%s\t-\t%s\t%s\t-\tretry\t%s\n' "$now" "$now" "$it" "$it" \
            "$me --retry: failures before this line no longer count" >>"$RUN/attempts.tsv"
    fi
    if [ "$clear_exclusions" -eq 1 ] && [ -s "$RUN/excluded-nodes" ]; then
        if [ "$dry_run" -eq 0 ]; then
            stamp=$(date +%Y%m%dT%H%M%S)
            say "forgetting the excluded nodes $(sort -u "$RUN/excluded-nodes" | paste -sd, -) (kept as exclusions.tsv.cleared-$stamp)"
            if [ -e "$RUN/exclusions.tsv" ]; then mv "$RUN/exclusions.tsv" "$RUN/exclusions.tsv.cleared-$stamp"; fi
            rm -f "$RUN/excluded-nodes"
        else
            say "would forget the excluded nodes $(sort -u "$RUN/excluded-nodes" | paste -sd, -)"
        fi
    fi
    if [ "$load_fallback" -eq 1 ]; then
        bad_ckpt=$(head -n 1 "$RUN/checkpoints/latest" 2>/dev/null || true)
        if [ -z "$bad_ckpt" ]; then
            say "--load-fallback: $RUN/checkpoints has no 'latest' checkpoint; the trainer starts from what it finds"
        elif [ "$dry_run" -eq 0 ]; then
            echo "$bad_ckpt" >"$RUN/load-fallback"
            say "--load-fallback: the next job skips $bad_ckpt if it does not load and resumes from the newest checkpoint that verifies"
        else
            say "--load-fallback: the next job would skip $bad_ckpt if it does not load"
        fi
    fi
    if [ "$dry_run" -eq 1 ]; then say "would resume $RUN from iteration $(latest_iter "$RUN") with a new chain:"; else say "resuming $RUN from iteration $(latest_iter "$RUN") with a new chain"; fi
}

# g3_submit_create: a new run directory (what gpt3d-train.sbatch reads; its library in RUN/lib).
g3_submit_create() {
    if [ "$dry_run" -eq 0 ]; then
        mkdir -p "$RUN/checkpoints" "$RUN/logs" "$RUN/config"
        for j in "${!config_src[@]}"; do cp "${config_src[j]}" "${config_dst[j]}"; done
        cp "$job_script" "$RUN/gpt3d-train.sbatch"
        mkdir -p "$RUN/lib"
        cp "$job_lib/common.sh" "$job_lib/job.sh" "$RUN/lib/"
        if [ -n "$health_script" ]; then
            cp "$health_script" "$RUN/gpt3d-healthcheck"
            chmod +x "$RUN/gpt3d-healthcheck"
            # (its body, beside it; a health check of its own may have none)
            f=$(dirname "$health_script")/lib/healthcheck.sh
            if [ -r "$f" ]; then cp "$f" "$RUN/lib/"; fi
        fi
        lines "${rewritten[@]}" >"$RUN/train.args"
        lines "${train_cmd[@]}" >"$RUN/train.cmd"
        lines "${chain_sbatch[@]}" >"$RUN/sbatch.args"
        : >"$RUN/chain"
        {
            echo "format=gpt3d-run 1"
            echo "name=$name"
            echo "created=$(date '+%Y-%m-%dT%H:%M:%S')"
            echo "created_by=$me $G3_VERSION"
            echo "job_script=$job_script"
            echo "max_failures=$max_failures"
            echo "chain=$chain"
            echo "sizes=$sizes"
            if [ -n "$ranks_per_node" ]; then echo "ranks_per_node=$ranks_per_node"; fi
            echo "gpus_per_node=$gpus_per_node"
            echo "health_check=$health_check"
            echo "health_gpt3d=$health_gpt3d"
            echo "node_check=$node_check"
        } >"$RUN/run.conf.tmp"
        mv "$RUN/run.conf.tmp" "$RUN/run.conf"
        # kept until the first job is queued: a submission sbatch refuses removes the run
        fresh_top=$created_top
        fresh_run=1
        commit_created
    fi
    if [ "$dry_run" -eq 1 ]; then
        say "would create run $RUN (ranks per node: ${ranks_per_node:-G3_RANKS_PER_NODE of the job script}) and submit:"
    else
        say "created run $RUN"
    fi
}

# ---- What each size buys ----------------------------------------------------
# plan_sizes: for each of --sizes, "gpt3d plan" with the run's train flags and
# --nodes SIZE --gpus-per-node RANKS_PER_NODE --json: its predicted time per
# iteration ("seconds_per_iteration") when the plan has a time model, else its
# model FLOPs per rank per iteration and peak memory per rank.
plan_sizes() {
    local g3="" s js dp peak flops secs tps rest
    if [ "${#train_cmd[@]}" -ge 2 ] && [ "${train_cmd[1]}" = train ] && [ -x "${train_cmd[0]}" ] &&
       [ "$(basename "${train_cmd[0]}")" = gpt3d ]; then g3=${train_cmd[0]}
    else g3=$(g3_gpt3d_bin); fi
    if [ -z "$g3" ]; then say "no gpt3d binary found: cannot show what each size buys (gpt3d plan)"; return 0; fi
    say "what each size buys ($g3 plan with the run's flags):"
    for s in ${sizes//,/ }; do
        if ! js=$("$g3" plan ${train_args[@]+"${train_args[@]}"} ${plan_machine:+--machine "$plan_machine"} --nodes "$s" --gpus-per-node "$rpn" --json 2>&1); then
            say "  $s nodes: gpt3d plan refused the flags: $(printf '%s\n' "$js" | grep -v '^$' | sed -n 1p)"
            continue
        fi
        dp=$(printf '%s' "$js" | sed -n 's/.*"dp":\([0-9]*\).*/\1/p' | sed -n 1p)
        peak=$(printf '%s' "$js" | sed -n 's/.*"peak_stage":[0-9]*,"peak_bytes":\([0-9.eE+]*\).*/\1/p' | sed -n 1p)
        flops=$(printf '%s' "$js" | sed -n 's/.*"flops_per_rank_per_iteration":\([0-9.eE+]*\).*/\1/p' | sed -n 1p)
        secs=$(printf '%s' "$js" | sed -n 's/.*"seconds_per_iteration":\([0-9.eE+]*\).*/\1/p' | sed -n 1p)
        tps=$(printf '%s' "$js" | sed -n 's/.*"tokens_per_s":\([0-9.eE+]*\).*/\1/p' | sed -n 1p)
        rest=$(awk -v p="${peak:-0}" -v f="${flops:-0}" 'BEGIN { printf "%.2f GiB peak memory per rank, %.3g model FLOPs per rank per iteration", p / 1073741824, f }')
        if [ -n "$secs" ]; then
            say "  $s nodes: DP $dp, predicted $(awk -v t="$secs" 'BEGIN { printf "%.3g", t }') s per iteration${tps:+ ($(awk -v t="$tps" 'BEGIN { printf "%.4g", t }') tokens/s)}; $rest"
        else
            say "  $s nodes: DP $dp, $rest (no time per iteration: name the machine with --plan-machine dgx-a100, dgx-h100 or a gpt3d plan --calibrate file)"
        fi
    done
}

# ---- Submit the chain ------------------------------------------------------
# g3_submit_chain: the jobs of the chain, each depending on the one before.
g3_submit_chain() {
    if [ "$create_only" -eq 1 ]; then
        if [ "$dry_run" -eq 0 ]; then say "created $RUN; submit it with: $me $RUN"; fi
        exit 0
    fi
    if [ "$dry_run" -eq 0 ]; then mapfile -t job_sbatch <"$RUN/sbatch.args"; else job_sbatch=("${chain_sbatch[@]}"); fi
    exclude=""
    if [ -s "$RUN/excluded-nodes" ]; then exclude=$(sort -u "$RUN/excluded-nodes" | paste -sd, -); fi
    prev=""
    submitted=()
    for ((k = 0; k < chain; k++)); do
        cmd=(sbatch --parsable "${job_sbatch[@]}" ${exclude:+"--exclude=$exclude"}
             ${prev:+"--dependency=afterany:$prev"} "$RUN/gpt3d-train.sbatch" "$RUN")
        if [ "$dry_run" -eq 1 ]; then
            printf '%q ' "${cmd[@]}"; echo
            prev="JOB$((k + 1))"
            continue
        fi
        if ! out=$("${cmd[@]}" 2>&1); then
            err "sbatch failed: $out"
            if [ -n "$exclude" ]; then
                err "the run excludes $exclude (see $RUN/exclusions.tsv); if too few nodes are left without them, repair them and resume with: $me --retry --clear-exclusions $RUN"
            fi
            if [ "${#submitted[@]}" -gt 0 ]; then
                err "the chain has ${#submitted[@]} job(s) (${submitted[*]}); re-run '$me $RUN' to extend it"
            elif [ "${fresh_run:-0}" -eq 1 ] && [ "$create_only" -eq 0 ]; then
                # nothing of the new run was queued: leave nothing behind, so that the corrected
                # command is not refused as "created with other settings"
                if [ -n "$fresh_top" ]; then rm -rf -- "$fresh_top"; else find "$RUN" -mindepth 1 -delete; fi
                err "nothing was submitted, so the new run directory $RUN was removed again; fix what sbatch refused and run the command again"
            fi
            exit "$G3_EXIT_FAILURE"
        fi
        id=${out%%;*}
        id=${id##*$'\n'}
        echo "$id" >>"$RUN/chain"
        submitted+=("$id")
        prev=$id
    done
    if [ "$dry_run" -eq 0 ]; then
        say "submitted a chain of ${#submitted[@]} jobs: ${submitted[*]}"
        say "follow it with: $me --status $RUN"
    fi
}

# g3_submit_run: create or resume the run, then submit its chain.
g3_submit_run() {
    g3_submit_prepare
    g3_submit_check
    if [ "$new_run" -eq 0 ]; then g3_submit_resume; else g3_submit_create; fi
    if [ -n "$sizes" ] && [ "$new_run" -eq 1 ] && [ "$have_train_args" -eq 1 ]; then plan_sizes; fi
    g3_submit_chain
}

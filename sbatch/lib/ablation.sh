# shellcheck shell=bash disable=SC2034,SC2154
# (SC2034, SC2154: the library's globals are set in one of its files and read in another.)
# sbatch/lib/ablation.sh: gpt3d-submit --ablations TABLE: one run directory per variant of an
# ablation study, all submitted as one job array.  Sourced by gpt3d-submit, never run
# (docs/slurm.md).

# g3_ablation_table: the table ("NAME FLAG..." per line; # starts a comment), checked.
g3_ablation_table() {
    [ -r "$ablations" ] || usage_error "ablation table '$ablations' (--ablations) cannot be read"
    [ "$retry" -eq 0 ] || usage_error "--retry works on one run: gpt3d-submit --retry ABLATION_DIR/VARIANT"
    # The table: "NAME FLAG..." per line; # starts a comment.
    table=$(sed -e 's/#.*//' -e 's/[[:space:]]\{1,\}/ /g' -e 's/^ //' -e 's/ $//' "$ablations" | grep -v '^$' |
            awk '{ name = $1; $1 = ""; sub(/^ /, ""); print name "\t" $0 }') || true
    [ -n "$table" ] || usage_error "ablation table '$ablations' has no variant (lines 'NAME FLAG...')"
    dup=$(printf '%s\n' "$table" | cut -f1 | sort | uniq -d | head -n 1)
    [ -z "$dup" ] || usage_error "ablation table '$ablations' names the variant '$dup' twice"
    while IFS=$'\t' read -r name _; do
        if ! [[ "$name" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]] || [ "$name" = logs ]; then
            usage_error "ablation table '$ablations': variant name '$name' must be letters, digits, '_', '.', '-' (and not 'logs')"
        fi
    done <<<"$table"
    nvar=$(printf '%s\n' "$table" | wc -l)
    command -v sbatch >/dev/null || [ "$dry_run" -eq 1 ] || die "sbatch is not on PATH: run $me on a Slurm login node (or load the Slurm module)"
    # The options every variant gets: ours, less those about the study itself.
}

# g3_ablation_dir: the options every variant gets, and the study's directory (ABL), locked.
g3_ablation_dir() {
    pass=()
    k=0
    while [ "$k" -lt "${#orig_args[@]}" ]; do
        a=${orig_args[k]}
        case "$a" in
            --) break ;;
            --ablations|--array-throttle|--plan-machine) k=$((k + 2)); continue ;;
            --ablations=*|--array-throttle=*|--plan-machine=*|--dry-run|--create-only) ;;
            -N|--nodes|--sizes|--ntasks-per-node|--gpus-per-node|-p|--partition|-A|--account|-t|--time|--signal-seconds|--chain|--max-failures|--exclude|--sbatch-arg|--train-command|--job-script|--node-check)
                pass+=("$a" "${orig_args[k + 1]:-}"); k=$((k + 2)); continue ;;
            -*) pass+=("$a") ;;
        esac
        k=$((k + 1))
    done
    abl_name=$(basename "$run_dir" | tr -c 'A-Za-z0-9_.\n-' '_')
    ABL=$(abs_path "$run_dir")
    check_shared "$ABL"
    if [ "$dry_run" -eq 0 ]; then
        lock_creation "$ABL"
        if [ -e "$ABL" ] && ! [ -d "$ABL" ]; then die "ablation directory '$ABL' exists and is not a directory"; fi
        [ -f "$ABL/ablation.conf" ] || [ "$have_train_args" -eq 1 ] ||
            usage_error "'$ABL' is not an ablation yet: give the common gpt3d train flags after '--'"
        if ! [ -f "$ABL/ablation.conf" ] && [ -d "$ABL" ] && find "$ABL" -mindepth 1 -maxdepth 1 ! -name logs ! -name .lock | grep -q .; then
            die "'$ABL' exists, is not empty and is not an ablation directory (no ablation.conf); choose a new or empty directory"
        fi
        make_dir "$ABL/logs" || die "cannot create the ablation directory '$ABL'"
        exec 9>>"$ABL/.lock"
        flock -w 60 9 || die "another $me holds $ABL/.lock; try again"
        if [ -f "$ABL/ablation.conf" ]; then
            [ "$table" = "$(cat "$ABL/variants")" ] ||
                die "$ABL was created from another ablation table (see $ABL/variants); start a new directory to change the variants"
        elif find "$ABL" -mindepth 1 -maxdepth 1 ! -name logs ! -name .lock | grep -q .; then
            die "'$ABL' exists, is not empty and is not an ablation directory (no ablation.conf); choose a new or empty directory"
        fi
    fi
}

# variant_args NAME FLAG...: the train flags of variant NAME, one a line: an absolute
# --tensorboard-dir D becomes D/NAME, so that "tensorboard --logdir D" shows one run per
# variant (a relative one is already the variant's own: jobs run in its run directory).
variant_args() {
    local v=$1 prev="" a
    shift
    for a in "$@"; do
        if [ "$prev" = --tensorboard-dir ] && [[ "$a" == /* ]]; then a=${a%/}/$v
        elif [[ "$a" == --tensorboard-dir=/* ]]; then a=${a%/}/$v; fi
        printf '%s\n' "$a"
        prev=$a
    done
}

# g3_ablation_variants: create (or check) the run of every variant; indices: those to submit.
g3_ablation_variants() {
    indices=()
    k=0
    while IFS=$'\t' read -r name flags; do
        read -r -a extra <<<"$flags"
        mapfile -t extra < <(variant_args "$name" ${train_args[@]+"${train_args[@]}"} ${extra[@]+"${extra[@]}"})
        if [ "$dry_run" -eq 1 ]; then
            # the variant's flags through the trainer's checks, as its creation would
            "$0" --dry-run ${pass[@]+"${pass[@]}"} "$ABL/$name" -- ${extra[@]+"${extra[@]}"} >/dev/null ||
                { code=$?; err "variant '$name' would be refused (above); fix the table or the flags"; exit "$code"; }
            say "would create run $ABL/$name with: ${extra[*]}"
        elif ! [ -f "$ABL/$name/run.conf" ]; then
            [ "$have_train_args" -eq 1 ] || die "$ABL/$name is missing: re-run with the common gpt3d train flags after '--'"
            "$0" --create-only ${pass[@]+"${pass[@]}"} "$ABL/$name" -- ${extra[@]+"${extra[@]}"} >/dev/null ||
                die "could not create the run of variant '$name' (above); fix the table or the flags"
            # What the study gave the variant: an edit of its train.args by
            # hand (the fix a stopped variant's message advises) is told from a
            # change of the study by comparing with it.
            cp "$ABL/$name/train.args" "$ABL/$name/train.args.created"
        elif [ -f "$ABL/$name/train.args.created" ] && ! cmp -s "$ABL/$name/train.args" "$ABL/$name/train.args.created"; then
            # Edited by hand: its flags are the user's now; only the other
            # settings are compared.
            "$0" --create-only ${pass[@]+"${pass[@]}"} "$ABL/$name" >/dev/null ||
                die "variant '$name' was created with other settings; start a new ablation directory to change them"
            say "variant $name: its train.args was edited by hand; keeping the edit ($(variant_flags "$ABL/$name" "$flags"))"
        elif [ "$have_train_args" -eq 1 ]; then
            "$0" --create-only ${pass[@]+"${pass[@]}"} "$ABL/$name" -- ${extra[@]+"${extra[@]}"} >/dev/null ||
                die "variant '$name' was created with other settings or flags (compare $ABL/$name/train.args and run.conf); start a new ablation directory to change them (a variant's train.args edited by hand is kept only in studies made by this version)"
        fi
        if [ -e "$ABL/$name/COMPLETE" ]; then
            say "variant $name is complete"
        elif [ -e "$ABL/$name/FAILED" ]; then
            say "variant $name was stopped: $(head -n 1 "$ABL/$name/FAILED"); resume it with: $me --retry $ABL/$name"
        elif [ "$dry_run" -eq 0 ] && [ -n "$(live_jobs "$ABL/$name")" ]; then
            say "variant $name has jobs queued or running; not submitting it again"
        else
            indices+=("$k")
        fi
        k=$((k + 1))
    done <<<"$table"
}

# g3_ablation_submit: the study's files, then one job array over the variants that need a job.
g3_ablation_submit() {
    if [ "$dry_run" -eq 0 ] && ! [ -f "$ABL/ablation.conf" ]; then
        printf '%s\n' "$table" >"$ABL/variants"
        first="$ABL/$(head -n 1 "$ABL/variants" | cut -f1)"
        cp "$first/gpt3d-train.sbatch" "$ABL/gpt3d-train.sbatch"
        rm -rf "${ABL:?}/lib"
        if [ -d "$first/lib" ]; then cp -R "$first/lib" "$ABL/lib"; fi
        {
            echo "format=gpt3d-ablation 1"
            echo "name=$abl_name"
            echo "created=$(date '+%Y-%m-%dT%H:%M:%S')"
            echo "variants=$nvar"
            echo "throttle=$throttle"
        } >"$ABL/ablation.conf.tmp"
        mv "$ABL/ablation.conf.tmp" "$ABL/ablation.conf"
    fi
    commit_created
    if [ "${#indices[@]}" -eq 0 ]; then
        say "no variant of $ABL needs a job"
        exit 0
    fi
    array=$(IFS=,; echo "${indices[*]}")%$throttle
    cmd=(sbatch --parsable --array="$array" --job-name="gpt3d-$abl_name" --chdir="$ABL"
         --output="$ABL/logs/%x-%A_%a.out" --open-mode=append ${sbatch_opts[@]+"${sbatch_opts[@]}"}
         "$ABL/gpt3d-train.sbatch" "$ABL")
    if [ "$dry_run" -eq 1 ]; then printf '%q ' "${cmd[@]}"; echo; exit 0; fi
    out=$("${cmd[@]}" 2>&1) || die "sbatch failed: $out"
    id=${out%%;*}
    id=${id##*$'\n'}
    echo "$id" >>"$ABL/array-jobs"
    say "submitted job array $id: variants $(IFS=,; echo "${indices[*]}") of $nvar, at most $throttle at a time"
    say "follow it with: $me --summary $ABL"
    exit 0
}

# g3_submit_ablations: --ablations.
g3_submit_ablations() {
    g3_ablation_table
    g3_ablation_dir
    g3_ablation_variants
    g3_ablation_submit
}

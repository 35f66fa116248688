#!/bin/bash
# gpt3d-submit checks before it creates or submits anything (issue 33): the trainer's own
# checks on the gpt3d train flags (gpt3d train --check NODES:RANKS_PER_NODE: an unknown flag,
# a negative size, a layout the nodes cannot hold, a missing data file), also under
# --dry-run; bounded --chain, --nodes and counts (no bash overflow, no endless dry run); a
# reversed node range, a bad --time and a run directory with a newline refused; a submission
# sbatch refuses removes the run directory it created, so the corrected command is accepted.
# Slurm is a stub here (sbatch records its calls); no cluster is needed.
# (top_srcdir, top_builddir, GPT3D come from make check.)
# shellcheck disable=SC2154,SC2086,SC2089,SC2090  # the cases are "flags:message" words
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/slurm/submit_lib.sh
. "$top_srcdir/tests/slurm/submit_lib.sh"
set -eo pipefail

export OMP_NUM_THREADS=1
D="$TMPD/data"
g3_byte_corpus "$D" light 200 >/dev/null
# a stub sbatch: refuses when $TMPD/refuse exists, else records its arguments and answers a job id
STUB="$TMPD/stub"
mkdir -p "$STUB"
cat >"$STUB/sbatch" <<EOS
#!/bin/sh
if [ -e "$TMPD/refuse" ]; then echo "sbatch: error: invalid partition specified: nope" >&2; exit 1; fi
echo "\$*" >>"$TMPD/sbatch.calls"
n=\$(wc -l <"$TMPD/sbatch.calls")
echo "\$((1000 + n))"
EOS
chmod +x "$STUB/sbatch"
stubbed() { env PATH="$STUB:$PATH" "$@"; }
sub() { stubbed "$SUBMIT" --job-script "$JOB" --no-health-check --train-command "$GPT3D train" "$@"; }
calls() { if [ -e "$TMPD/sbatch.calls" ]; then wc -l <"$TMPD/sbatch.calls"; else echo 0; fi; }
absent() { if [ -e "$1" ]; then echo exists; else echo absent; fi; }

# ---- 3, 10. bounded and well-formed options ----------------------------------------------------
run timeout 300 "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --dry-run --chain 99999999999999999999 "$TMPD/c" -- --train-iters 1
is "$rc" 2 "--dry-run --chain 99999999999999999999 is refused (exit 2), no endless list of sbatch lines"
like "$out" "--chain '99999999999999999999' is not a whole number from 1 to 100" "... naming the range"
is "$(printf '%s\n' "$out" | grep -c '^sbatch' || true)" 0 "... and prints no sbatch line"
for a in "--chain 100000:--chain '100000' is not a whole number from 1 to 100" \
         "--nodes 5-2:--nodes '5-2': the minimum 5 is above the maximum 2" \
         "--nodes 99999999999999999999:--nodes '99999999999999999999' is not a whole number from 1 to 100000" \
         "--ntasks-per-node 99999999999999999999:--ntasks-per-node '99999999999999999999' is not a whole number from 1 to 4096" \
         "--sizes 2,99999999999999999999:--sizes: node count '99999999999999999999' is not a whole number" \
         "--max-failures 99999999999999999999:--max-failures '99999999999999999999' is not a whole number" \
         "--time garbage:--time 'garbage' is not a Slurm time limit"; do
    # shellcheck disable=SC2086
    run sub ${a%%:*} "$TMPD/o" -- --train-iters 1
    if [ "$rc" = 2 ] && printf '%s' "$out" | grep -F -- "${a#*:}" >/dev/null && [ "$(absent "$TMPD/o")" = absent ] && [ "$(calls)" = 0 ]; then
        tap_result 0 "${a%%:*}: exit 2 naming the value; nothing created or submitted"
    else
        tap_result 1 "${a%%:*}: exit $rc"; diag "$(printf '%s' "$out" | head -n 3)"
    fi
done
for t in 30 1:00:00 2-12 2-12:30:00 UNLIMITED; do
    run submit --dry-run --time "$t" "$TMPD/t" -- --train-iters 1
    is "$rc" 0 "--time $t (an sbatch format) is accepted"
done
nl="$TMPD/new
line"
run sub "$nl" -- $g3_data --train-iters 1
is "$rc" 2 "a run directory whose name holds a newline is refused"
like "$out" "contains a newline or another control character" "... saying why"
is "$(absent "$nl")$(calls)" "absent0" "... creating and submitting nothing"

# ---- 4. the trainer's checks, before anything exists -----------------------------------------------
# shellcheck disable=SC2086
for a in "--num-layers -1:2:--num-layers -1 is out of range" \
         "--bogus-flag:2:unknown flag '--bogus-flag'" \
         "--tensor-model-parallel-size 3:2:impossible layout: TP 3 does not fit in the 1 ranks of a node" \
         "--data-path $TMPD/nothere:1:--data-path: $TMPD/nothere.bin does not exist"; do
    want=${a#*:}; want_rc=${want%%:*}; want=${want#*:}
    for dry in "" --dry-run; do
        # shellcheck disable=SC2086
        run sub $dry --ntasks-per-node 1 "$TMPD/r4" -- $g3_data --train-iters 10 ${a%%:*}
        if [ "$rc" = "$want_rc" ] && printf '%s' "$out" | grep -F -- "$want" >/dev/null &&
           printf '%s' "$out" | grep "do not pass the trainer's checks for 1 node(s) x 1 rank(s) per node" >/dev/null &&
           [ "$(absent "$TMPD/r4")" = absent ] && [ "$(calls)" = 0 ]; then
            tap_result 0 "${dry:-a submission} with ${a%%:*}: exit $want_rc with the trainer's message; nothing created or submitted"
        else
            tap_result 1 "${dry:-a submission} with ${a%%:*}: exit $rc"; diag "$(printf '%s' "$out" | head -n 4)"
        fi
    done
done
run sub --nodes 2 --ntasks-per-node 4 "$TMPD/r4" -- $g3_data --train-iters 10 --tensor-model-parallel-size 3
is "$rc" 2 "TP 3 on nodes of 4 ranks is refused"
like "$out" "TP 3 does not divide the 4 ranks of a node" "... with the trainer's reason"
run sub --nodes 1-3 --ntasks-per-node 2 "$TMPD/r4" -- $g3_data --train-iters 10 --global-batch-size 4 --micro-batch-size 2
is "$rc" 2 "--nodes 1-3: a global batch that 3 nodes cannot split is refused"
like "$out" "for 3 node\(s\) x 2 rank\(s\) per node" "... checked at both ends of the range"
is "$(absent "$TMPD/r4")$(calls)" "absent0" "... creating and submitting nothing"
printf 'base\nbad --num-layers -3\n' >"$TMPD/abl.txt"
run sub --dry-run --ablations "$TMPD/abl.txt" "$TMPD/abl" -- $g3_data --train-iters 10
is "$rc" 2 "an ablation --dry-run checks each variant's flags: a bad variant exits 2"
like "$out" "--num-layers -3 is out of range" "... with the trainer's message"
like "$out" "variant 'bad' would be refused" "... and the variant's name"
run sub --ntasks-per-node 1 --chain 2 "$TMPD/ok" -- $g3_data --train-iters 10
is "$rc" 0 "flags the trainer accepts: the run is created and submitted"
is "$(calls)" 2 "... two jobs"

# ---- 15. a submission sbatch refuses leaves nothing behind ------------------------------------------
: >"$TMPD/refuse"
run sub --ntasks-per-node 1 --partition nope "$TMPD/p" -- $g3_data --train-iters 10
is "$rc" 1 "sbatch refuses the first job: exit 1"
like "$out" "sbatch failed: sbatch: error: invalid partition specified" "... with sbatch's message"
like "$out" "nothing was submitted, so the new run directory $TMPD/p was removed again" "... saying the run directory is removed"
is "$(absent "$TMPD/p")" absent "... and it is gone"
rm "$TMPD/refuse"
run sub --ntasks-per-node 1 --partition fixed "$TMPD/p" -- $g3_data --train-iters 10
is "$rc" 0 "the corrected command is accepted (not 'created with other settings')"
like "$out" "submitted a chain of 3 jobs" "... and submits the chain"

done_testing

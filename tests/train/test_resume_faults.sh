#!/bin/sh
# Fault injection for checkpoints in training: a DP 2 ZeRO-1 run under mpirun that saves
# every iteration (--save-interval 1) is killed with SIGKILL (one rank, chosen at random, at
# a random moment: before training, during an iteration or inside a save) several times and
# resumed each time with --load.  Every time the checkpoint `latest` names passes
# `gpt3d ckpt verify`, the resume loads exactly that checkpoint, and the run that finally
# completes ends with losses, parameters and Adam moments bitwise equal to an uninterrupted
# run.  G3_FAULT_SEED picks the random moments (printed).
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

g3_need_mpirun
g3_tmpdir
# The launcher of the attempt in flight is reaped whatever ends the test (#21.6): TERM first
# (mpirun passes it to its ranks), KILL what is left.
mpid=
g3_reap_launcher() {
    if [ -n "$mpid" ] && kill -0 "$mpid" 2>/dev/null; then
        kill -TERM "$mpid" 2>/dev/null || true
        _n=0
        while kill -0 "$mpid" 2>/dev/null && [ "$_n" -lt 50 ]; do sleep 0.1; _n=$((_n + 1)); done
        kill -KILL "$mpid" 2>/dev/null || true
        wait "$mpid" 2>/dev/null || true
    fi
    rm -rf "$TMPD"
}
trap g3_reap_launcher EXIT
check="$top_builddir/tests/parallel/grad_check"
D="$TMPD/data"
g3_byte_corpus "$D" light 300

g3_small_flags 2 --global-batch-size 8 --train-iters 40 --eval-iters 1 --distributed-timeout-minutes 1 \
    --use-distributed-optimizer --save-interval 1 --keep-last 3
flags=$g3_flags
export OMP_NUM_THREADS=1
seed=${G3_FAULT_SEED:-$(date +%s)}
diag "G3_FAULT_SEED=$seed"

# the uninterrupted run
# shellcheck disable=SC2086
run g3_mpirun -x OMP_NUM_THREADS -np 2 "$GPT3D" train $flags \
    --save "$TMPD/ref/ck" --run-dir "$TMPD/ref" --debug-grad-dump "$TMPD/ref/g"
is "$rc" 0 "the uninterrupted run"

# the killed runs: each rank records its pid; a random rank dies at a random moment
R="$TMPD/run"
mkdir -p "$R"
kills=0 inside=0 loads_ok=1 verify_ok=1 attempt=0 done_rc=1 resumes=0 early=0
while [ "$attempt" -lt 12 ]; do
    attempt=$((attempt + 1))
    expect=$(sed -n 's/^iter_0*//p' "$R/ck/latest" 2>/dev/null || true)
    rm -f "$R"/pid.*
    before=$(ls -d "$R"/ck/iter_*.tmp-* 2>/dev/null || true)
    # shellcheck disable=SC2086,SC2016
    "$MPIRUN" --oversubscribe -x OMP_NUM_THREADS -np 2 sh -c \
        'echo $$ > "$0/pid.${OMPI_COMM_WORLD_RANK:-$PMIX_RANK}"; exec "$@"' "$R" \
        "$GPT3D" train $flags --save "$R/ck" --load "$R/ck" --run-dir "$R" \
        --debug-grad-dump "$R/g" > "$R/out.$attempt" 2>&1 &
    mpid=$!
    if [ "$attempt" -le 2 ]; then
        # inside a save: as soon as a save's temporary directory appears (saves take most of
        # each iteration's time here: fsync), the rank of this attempt's parity dies
        n=0
        while [ "$n" -lt 400 ]; do
            now=$(ls -d "$R"/ck/iter_*.tmp-* 2>/dev/null || true)
            if [ -n "$now" ] && [ "$now" != "$before" ]; then break; fi
            sleep 0.01; n=$((n + 1))
        done
        r=$((attempt % 2))
        if [ -f "$R/pid.$r" ] && kill -KILL "$(cat "$R/pid.$r")" 2>/dev/null; then
            kills=$((kills + 1))
        fi
    elif [ "$attempt" -le 6 ]; then
        # a delay in [0.6, 1.6) s after the launch (mpirun itself takes ~0.5 s), a rank
        # shellcheck disable=SC2046
        set -- $(awk -v s="$seed" -v a="$attempt" 'BEGIN { srand(s + a); printf "%.2f %d\n", 0.6 + rand(), int(2 * rand()) }')
        sleep "$1"
        if [ -f "$R/pid.$2" ] && kill -KILL "$(cat "$R/pid.$2")" 2>/dev/null; then
            kills=$((kills + 1))
        fi
    fi
    set +e; wait "$mpid"; arc=$?; set -e
    mpid=
    # What the attempt loaded: rank 0 prints "resumed from the checkpoint of iteration N" before
    # its first iteration line.  A kill can land before that line is out (before or during the
    # load, or with the line still in rank 0's buffer): such an attempt shows neither line and
    # claims nothing.  An attempt that resumed from another iteration, or trained without a
    # resume line while latest named a checkpoint, fails the check.
    got=$(sed -n 's/.*resumed from the checkpoint of iteration \([0-9]*\) .*/\1/p' "$R/out.$attempt" | head -n 1)
    if [ -n "$expect" ]; then
        if [ -n "$got" ]; then
            resumes=$((resumes + 1))
            if [ "$got" != "$expect" ]; then
                loads_ok=0
                diag "attempt $attempt: resumed from iteration $got, latest named $expect"
            fi
        elif grep -q '^ iteration ' "$R/out.$attempt"; then
            loads_ok=0
            diag "attempt $attempt: trained without resuming from iteration $expect: $(grep -h 'resumed\|error' "$R/out.$attempt" | head -3)"
        else
            early=$((early + 1))
        fi
    elif [ -n "$got" ]; then
        loads_ok=0
        diag "attempt $attempt: resumed from iteration $got with no latest at its start"
    fi
    if ls -d "$R"/ck/iter_*.tmp-* >/dev/null 2>&1; then inside=$((inside + 1)); fi
    if [ -f "$R/ck/latest" ]; then
        if ! "$GPT3D" ckpt verify "$R/ck" > "$R/verify.$attempt" 2>&1; then
            verify_ok=0
            diag "attempt $attempt: gpt3d ckpt verify failed: $(tail -3 "$R/verify.$attempt")"
        fi
    fi
    diag "attempt $attempt: exit $arc, latest $(cat "$R/ck/latest" 2>/dev/null || echo none)"
    if [ "$arc" -eq 0 ]; then done_rc=0; break; fi
done
is "$done_rc" 0 "the killed run completed after $attempt attempts ($kills SIGKILLs)"
is "$loads_ok" 1 "every resume loaded the checkpoint latest named when it started ($resumes resumes checked, $early attempts killed before reporting a load)"
if [ "$resumes" -ge 1 ]; then tap_result 0 "at least one resume was checked ($resumes)"; else
    tap_result 1 "no attempt reported a resume: nothing was checked"; fi
is "$verify_ok" 1 "after every kill the checkpoint latest names passes gpt3d ckpt verify"
if [ "$inside" -ge 1 ]; then
    tap_result 0 "$inside of the kills hit a save (an unfinished iter_*.tmp-* was left)"
else
    tap_result 1 "no kill hit a save (no iter_*.tmp-* was left behind)"
fi
a=$(grep '"event":"train"' "$TMPD/ref/metrics.jsonl" | sed 's/.*"iteration":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/')
# the last record of each iteration in the killed run's appended metrics
b=$(grep '"event":"train"' "$R/metrics.jsonl" | sed 's/.*"iteration":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/' |
    awk '{ v[$1] = $2 } END { for (i = 1; i in v; i++) print i, v[i] }')
is "$b" "$a" "the losses of every iteration equal the uninterrupted run's"
run "$check" --tol 0 --what params "$TMPD/ref/g" "$R/g"
is "$rc" 0 "final parameters bitwise equal ($(printf '%s\n' "$out" | tail -n 1))"
run "$check" --tol 0 --what adam_m "$TMPD/ref/g" "$R/g"
is "$rc" 0 "final Adam moments bitwise equal ($(printf '%s\n' "$out" | tail -n 1))"
n=$(find "$R/ck" -maxdepth 1 -name 'iter_???????' | wc -l)
is "$n" 3 "--keep-last 3 left three checkpoints"
done_testing

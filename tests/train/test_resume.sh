#!/bin/sh
# Checkpoints in training (src/train/train_ckpt.c): a run stopped and resumed from its
# checkpoint ends exactly like the uninterrupted run on the CPU (losses, final parameters and
# Adam moments bitwise) on one rank, TP 2 x PP 2, DP 2 with ZeRO-1 and PP 2 x DP 2 with ZeRO-1; a checkpoint saved at
# DP 2 (ZeRO-1 shards) resumes at TP 2 and at DP 4 with ZeRO-1 within 1e-5 of the
# uninterrupted losses; the index's global view read by h5py equals the tensors gathered from
# the ranks; SIGUSR2 mid-run saves and exits 75 and the resumed losses are the uninterrupted
# ones (one rank, and under mpirun with TP 2); --async-save runs and resumes bitwise; a model
# mismatch is refused naming the flag; --load of an empty directory starts from scratch; a
# corrupted newest checkpoint is refused and --load-fallback loads the previous one;
# --exit-duration-in-mins saves and exits 75.  Fault injection is in test_resume_faults.sh.
# (top_srcdir, top_builddir, GPT3D, MPIRUN, PYTHON_REF come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

g3_tmpdir
check="$top_builddir/tests/parallel/grad_check"
D="$TMPD/data"
g3_byte_corpus "$D" light 300

# --make-vocab-size-divisible-by 6: the same padded vocabulary under TP 1 and TP 2
g3_small_flags 2 --global-batch-size 8 --train-iters 10 --eval-iters 1 --distributed-timeout-minutes 1
flags=$g3_flags
export OMP_NUM_THREADS=1
have_mpi=0
if g3_have_mpirun; then have_mpi=1; fi
py=${PYTHON_REF:-/usr/bin/python3}
have_h5py=0
if "$py" -c 'import h5py, numpy' 2>/dev/null; then have_h5py=1; fi

# train RUN NP [FLAGS...]: run dir $TMPD/RUN (checkpoints in RUN/ck), one rank if NP is 0
train() {
    name=$1 np=$2
    shift 2
    # shellcheck disable=SC2086
    if [ "$np" = 0 ]; then
        run "$GPT3D" train $flags --save "$TMPD/$name/ck" --run-dir "$TMPD/$name" "$@"
    else
        run g3_mpirun -x OMP_NUM_THREADS -np "$np" "$GPT3D" train $flags \
            --save "$TMPD/$name/ck" --run-dir "$TMPD/$name" "$@"
    fi
    case "$rc" in 0|75) ;; *) printf '%s\n' "$out" | grep -v '^ *$' | tail -12 | sed 's/^/#   /' ;; esac
}
# usr2_at_3 RUN TRIES CMD...: CMD in the background (its output in $TMPD/RUN.out); once RUN's
# metrics show iteration 3 (looked for TRIES times, 0.05 s apart), SIGUSR2 to it; its exit
# status in rc.  (CMD is a command, not a function: $! must be the process to signal.)
usr2_at_3() {
    _r=$1 _tries=$2
    shift 2
    "$@" > "$TMPD/$_r.out" 2>&1 &
    pid=$!
    n=0
    while [ "$n" -lt "$_tries" ] && ! grep -q '"iteration":3,' "$TMPD/$_r/metrics.jsonl" 2>/dev/null; do
        sleep 0.05; n=$((n + 1))
    done
    kill -USR2 "$pid"
    set +e; wait "$pid"; rc=$?; set -e
}
# losses RUN: the training losses of RUN's metrics, one line
losses() {
    "$GPT3D" metrics "$TMPD/$1" --event train --fields loss | tr '\n' ' '
}

# phases LABEL TOTAL SLACK LIST NAME...: LIST (a log line's "name 0.123, name 0.456" or the
# members of a metrics record's "phases" object) holds every NAME with a number >= 0, and the
# numbers add up to at most TOTAL (+ SLACK: each number rounded).  No timing assumed beyond.
phases() {
    _what=$1 _tot=$2 _slack=$3 _list=$4
    shift 4
    _got=$(printf '%s\n' "$_list" | awk -v tot="$_tot" -v slack="$_slack" -v want="$*" '
        { gsub(/"/, ""); gsub(/:/, " "); n = split($0, item, ",")
          for (i = 1; i <= n; i++) { split(item[i], kv, " "); val[kv[1]] = kv[2]; seen[kv[1]] = 1 } }
        END { if (tot !~ /^[0-9]+(\.[0-9]+)?$/) { print "no total: " tot; exit }
              m = split(want, w, " ")
              for (i = 1; i <= m; i++) {
                  if (!(w[i] in seen)) { print "no phase " w[i]; exit }
                  if (val[w[i]] !~ /^[0-9]+(\.[0-9]+)?$/) { print w[i] " is " val[w[i]]; exit }
                  sum += val[w[i]] }
              if (sum > tot + slack) { print "the phases add up to " sum " > " tot; exit }
              print "ok" }')
    is "$_got" ok "$_what"
}
save_names="stage_alloc describe d2h finite pack checksum write fsync commit"
load_names="stage_alloc describe d2h open read verify convert h2d free"

# rec_phases LABEL FILE PATTERN KEY NAME...: the metrics record of FILE matching PATTERN (kept
# in $rec) has the phases NAME..., none negative, together no more than its total "KEY"
rec_phases() {
    _what=$1 _file=$2 _pat=$3 _key=$4
    shift 4
    rec=$(grep "$_pat" "$_file" || true)
    phases "$_what" "$(printf '%s\n' "$rec" | sed -n "s/.*\"$_key\":\([0-9.]*\),.*/\1/p")" 0.00001 \
        "$(printf '%s\n' "$rec" | sed -n 's/.*"phases":{\([^}]*\)}.*/\1/p')" "$@"
}

# exact LABEL NP [FLAGS...]: uninterrupted vs stopped at 4 (--exit-interval, exit 75) and
# resumed: losses, parameters and Adam moments bitwise equal
exact() {
    label=$1 np=$2
    shift 2
    train "$label-a" "$np" --debug-grad-dump "$TMPD/$label-a/g" "$@"
    is "$rc" 0 "$label: the uninterrupted run with --save"
    train "$label-b" "$np" --load "$TMPD/$label-b/ck" --exit-interval 4 "$@"
    is "$rc" 75 "$label: --exit-interval 4 saves and exits 75"
    like "$out" 'saved checkpoint at iteration +4 .*stalled' "$label: the save is logged with the stall"
    save_out=$out
    train "$label-b" "$np" --load "$TMPD/$label-b/ck" --debug-grad-dump "$TMPD/$label-b/g" "$@"
    is "$rc" 0 "$label: the resumed run"
    load_out=$out
    like "$out" 'resumed from the checkpoint of iteration 4' "$label: it resumed at iteration 4"
    is "$(losses "$label-b")" "$(losses "$label-a")" "$label: the 10 losses are bitwise those of the uninterrupted run"
    run "$check" --tol 0 --what params "$TMPD/$label-a/g" "$TMPD/$label-b/g"
    is "$rc" 0 "$label: final parameters bitwise equal ($(printf '%s\n' "$out" | tail -n 1))"
    run "$check" --tol 0 --what adam_m "$TMPD/$label-a/g" "$TMPD/$label-b/g"
    is "$rc" 0 "$label: final Adam moments bitwise equal ($(printf '%s\n' "$out" | tail -n 1))"
    if [ "$have_h5py" = 1 ]; then
        run "$py" "$top_srcdir/tests/train/resume_h5check.py" \
            "$TMPD/$label-b/ck/iter_0000010/index.h5" "$TMPD/$label-b/g"
        is "$rc" 0 "$label: h5py's global view of the final checkpoint equals the gathered tensors"
        [ "$rc" -eq 0 ] || printf '%s\n' "$out" | head -5 | sed 's/^/#   /'
    else
        skip "h5py not found in $py"
    fi
}

exact one 0
# where the time of a synchronous save and of a load goes: every phase in the log line and in
# the metrics record, none negative, together no more than the whole
line=$(printf '%s\n' "$save_out" | grep -E 'saved checkpoint at iteration +4 ' || true)
# shellcheck disable=SC2086
phases "one: the save's log line has every phase" \
    "$(printf '%s\n' "$line" | sed -n 's/.*training stalled \([0-9.]*\) s .*/\1/p')" 0.006 \
    "$(printf '%s\n' "$line" | sed -n 's/.*training stalled [0-9.]* s (\(.*\))$/\1/p')" $save_names
# shellcheck disable=SC2086
rec_phases "one: the save's metrics record has every phase" "$TMPD/one-b/metrics.jsonl" \
    '"event":"save","iteration":4,' stall_s $save_names
line=$(printf '%s\n' "$load_out" | grep 'resumed from the checkpoint of iteration 4 ' || true)
# shellcheck disable=SC2086
phases "one: the load's log line has every phase" \
    "$(printf '%s\n' "$line" | sed -n 's/.*loaded in \([0-9.]*\) s .*/\1/p')" 0.004 \
    "$(printf '%s\n' "$line" | sed -n 's/.*loaded in [0-9.]* s (\(.*\))$/\1/p')" $load_names
# shellcheck disable=SC2086
rec_phases "one: the load's metrics record has every phase" "$TMPD/one-b/metrics.jsonl" \
    '"event":"load"' load_s $load_names
# a run that saves loads into the saves' staging area (allocated in the background from the
# start): said once, before the resume's line, and not again at the saves after it
is "$(printf '%s\n' "$load_out" | grep -c 'host staging area (plain memory) .*allocated once in [0-9.]* s (in the background, from the start of training), reused by every save' || true)" 1 \
    "one: the resume loads into the staging area, said once"
like "$(printf '%s\n' "$load_out" | grep -e 'host staging area' -e 'resumed from the checkpoint' | head -n 1)" \
    'host staging area' "one: the staging area is said before the resume's line"
is "$(cat "$TMPD/one-b/ck/latest")" "iter_0000010" "one: latest names the final checkpoint"
run "$GPT3D" ckpt verify "$TMPD/one-b/ck"
is "$rc" 0 "one: gpt3d ckpt verify accepts the trainer's checkpoint"

# model mismatch: named; --load of a directory without checkpoints: from scratch
# shellcheck disable=SC2086
run "$GPT3D" train $flags --hidden-size 64 --load "$TMPD/one-b/ck" --run-dir "$TMPD/mm"
is "$rc" 2 "a model mismatch is refused (exit 2)"
like "$out" 'hidden-size' "the mismatch names --hidden-size"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --train-iters 3 --load "$TMPD/none" --save "$TMPD/none" --run-dir "$TMPD/none"
is "$rc" 0 "--load of a directory without checkpoints starts from scratch"
is "$(cat "$TMPD/none/latest" 2>/dev/null)" "iter_0000003" "and --save writes its first checkpoint there"

# a damaged newest checkpoint: refused, or with --load-fallback the previous one is loaded
mkdir -p "$TMPD/fb"
cp -r "$TMPD/one-b/ck" "$TMPD/fb/ck"
f="$TMPD/fb/ck/iter_0000010/model_tp00_pp000.h5"
size=$(wc -c < "$f")
# (the tensors sit after the metadata block, at the end of the file)
printf 'XXXXXXXX' | dd of="$f" bs=1 seek=$((size - 20000)) conv=notrunc 2>/dev/null
# shellcheck disable=SC2086
run "$GPT3D" train $flags --train-iters 12 --load "$TMPD/fb/ck" --run-dir "$TMPD/fb"
is "$rc" 78 "a corrupted newest checkpoint is refused (exit 78: it cannot be loaded)"
like "$out" 'load-fallback' "the message points to --load-fallback"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --train-iters 12 --load "$TMPD/fb/ck" --load-fallback --run-dir "$TMPD/fb"
is "$rc" 0 "--load-fallback: training goes on"
like "$out" 'resumed from the checkpoint of iteration 4 ' "--load-fallback: from the previous committed checkpoint (iteration 4)"
is "$(printf '%s\n' "$out" | grep -c 'host staging area' || true)" 0 \
    "--load-fallback without --save: no staging area (the load's copies are fresh memory)"

# --exit-duration-in-mins: stops at the first step boundary after the time, saved, exit 75
# shellcheck disable=SC2086
run "$GPT3D" train $flags --train-iters 60 --eval-iters 0 --hidden-size 128 --exit-duration-in-mins 0.004 \
    --save "$TMPD/dur/ck" --run-dir "$TMPD/dur"
is "$rc" 75 "--exit-duration-in-mins: exit 75"
like "$out" 'stopping at iteration [0-9]+ \(exit duration\)' "--exit-duration-in-mins: the reason is logged"
if [ -f "$TMPD/dur/ck/latest" ]; then
    tap_result 0 "--exit-duration-in-mins: a checkpoint was committed"
else
    tap_result 1 "--exit-duration-in-mins: a checkpoint was committed"
fi

# SIGUSR2 mid-run (one rank; the handler sets a flag, the save happens at the next step)
slow="--train-iters 60 --eval-iters 0 --hidden-size 128"
# shellcheck disable=SC2086
usr2_at_3 sig 200 "$GPT3D" train $flags $slow --save "$TMPD/sig/ck" --load "$TMPD/sig/ck" \
    --run-dir "$TMPD/sig"
is "$rc" 75 "SIGUSR2: saved and exited 75"
it=$(sed -n 's/^iter_0*//p' "$TMPD/sig/ck/latest" 2>/dev/null)
like "$(cat "$TMPD/sig.out")" "stopping at iteration $it \\(exit signal\\)" "SIGUSR2: stopped at the saved iteration ($it)"
# shellcheck disable=SC2086
run "$GPT3D" train $flags $slow --save "$TMPD/sig/ck" --load "$TMPD/sig/ck" --run-dir "$TMPD/sig"
is "$rc" 0 "SIGUSR2: the resumed run completes"
# shellcheck disable=SC2086
run "$GPT3D" train $flags $slow --run-dir "$TMPD/sigref"
is "$(losses sig)" "$(losses sigref)" "SIGUSR2: losses of the interrupted and resumed run are the uninterrupted run's"

# --async-save on one rank: the phases of the stall, and of the writer thread once committed
# shellcheck disable=SC2086
run "$GPT3D" train $flags --train-iters 7 --save-interval 3 --async-save --save "$TMPD/as1/ck" \
    --run-dir "$TMPD/as1"
is "$rc" 0 "async (one rank): --async-save --save-interval 3 --train-iters 7"
async_names="wait stage_alloc describe d2h finite pack commit"
writer_names="pack checksum write fsync"
line=$(printf '%s\n' "$out" | grep -E 'started an asynchronous save of iteration +6 ' || true)
# shellcheck disable=SC2086
phases "async: the stall's log line has every phase" \
    "$(printf '%s\n' "$line" | sed -n 's/.*training stalled \([0-9.]*\) s .*/\1/p')" 0.004 \
    "$(printf '%s\n' "$line" | sed -n 's/.*host copy; \(.*\))$/\1/p')" $async_names
# shellcheck disable=SC2086
rec_phases "async: the stall's metrics record has every phase" "$TMPD/as1/metrics.jsonl" \
    '"event":"save","iteration":6,' stall_s $async_names
line=$(printf '%s\n' "$out" | grep 'committed the asynchronous checkpoint of iteration 3:' || true)
# shellcheck disable=SC2086
phases "async: the commit's log line has the writer thread's phases" \
    "$(printf '%s\n' "$line" | sed -n 's/.*: writer \([0-9.]*\) s .*/\1/p')" 0.003 \
    "$(printf '%s\n' "$line" | sed -n 's/.*: writer [0-9.]* s (\(.*\)), commit [0-9.]* s$/\1/p')" $writer_names
like "$line" ', commit [0-9]+\.[0-9]{3} s$' "async: the commit's log line has the commit's time"
# shellcheck disable=SC2086
rec_phases "async: the commit's metrics record has the writer thread's phases" "$TMPD/as1/metrics.jsonl" \
    '"event":"commit","iteration":3,' writer_s $writer_names
like "$rec" '"commit_s":[0-9]+\.[0-9]+' "async: the commit's metrics record has the commit's time"

if [ "$have_mpi" = 0 ]; then
    skip "mpirun not found: no parallel layouts"
    done_testing
    exit $?
fi
# SIGUSR2 to mpirun (it forwards the signal to every rank): all ranks stop at one iteration
# with one save and exit 75
# (not g3_mpirun: $! must be mpirun itself, not a subshell running a function)
# shellcheck disable=SC2086
usr2_at_3 msig 300 "$MPIRUN" --oversubscribe -x OMP_NUM_THREADS -np 2 "$GPT3D" train $flags $slow \
    --tensor-model-parallel-size 2 --save "$TMPD/msig/ck" --run-dir "$TMPD/msig"
is "$rc" 75 "SIGUSR2 under mpirun (TP 2): every rank saved and the job exited 75"
it=$(sed -n 's/^iter_0*//p' "$TMPD/msig/ck/latest" 2>/dev/null)
like "$(cat "$TMPD/msig.out")" "stopping at iteration $it \\(exit signal\\)" "SIGUSR2 under mpirun: stopped at the saved iteration ($it)"

exact tp2pp2 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
exact dp2z 2 --use-distributed-optimizer
# plain data parallelism: DP rank 1 holds the moments but DP rank 0 writes them
exact dp2 2
# ZeRO-1 with two stages: the tied word embedding is a segment of its own on both stages
exact pp2dp2z 4 --pipeline-model-parallel-size 2 --use-distributed-optimizer

# --async-save: interval saves written by a thread; the run and a resume from one of its
# checkpoints are bitwise the uninterrupted run
train async 2 --use-distributed-optimizer --save-interval 3 --async-save --debug-grad-dump "$TMPD/async/g"
is "$rc" 0 "async: a DP 2 ZeRO-1 run with --async-save --save-interval 3"
like "$out" 'started an asynchronous save of iteration +3 .*training stalled [0-9.]+ s' "async: the stall is logged"
like "$out" 'committed the asynchronous checkpoint of iteration 6' "async: the saves are committed"
run "$check" --tol 0 --what params "$TMPD/dp2z-a/g" "$TMPD/async/g"
is "$rc" 0 "async: final parameters bitwise those of the run without checkpoints in flight"
mkdir -p "$TMPD/async2"
cp -r "$TMPD/async/ck" "$TMPD/async2/ck"
rm -rf "$TMPD/async2/ck/iter_0000010"
echo iter_0000009 > "$TMPD/async2/ck/latest"
train async2 2 --use-distributed-optimizer --load "$TMPD/async2/ck" --debug-grad-dump "$TMPD/async2/g"
like "$out" 'resumed from the checkpoint of iteration 9' "async: resumed from the asynchronous checkpoint of iteration 9"
run "$check" --tol 0 --what params "$TMPD/dp2z-a/g" "$TMPD/async2/g"
is "$rc" 0 "async: the resumed run ends bitwise equal"

# layout changes: the DP 2 ZeRO-1 checkpoint of iteration 4 resumed at TP 2 and at DP 4 ZeRO-1
for new in "tp2 2 --tensor-model-parallel-size 2" "dp4z 4 --use-distributed-optimizer"; do
    # shellcheck disable=SC2086
    set -- $new
    lay=$1 np=$2
    shift 2
    mkdir -p "$TMPD/x$lay"
    cp -r "$TMPD/dp2z-b/ck" "$TMPD/x$lay/ck"
    rm -rf "$TMPD/x$lay/ck/iter_0000010"
    echo iter_0000004 > "$TMPD/x$lay/ck/latest"
    train "x$lay" "$np" --load "$TMPD/x$lay/ck" "$@"
    is "$rc" 0 "DP 2 ZeRO-1 -> $lay: resumed"
    d=$(g3_maxrel "$(losses one-a | cut -d' ' -f5-)" "$(losses "x$lay")")
    if g3_within "$d" 1e-5; then
        tap_result 0 "DP 2 ZeRO-1 -> $lay: losses 5..10 within 1e-5 of the uninterrupted run ($d)"
    else
        tap_result 1 "DP 2 ZeRO-1 -> $lay: losses 5..10 within 1e-5 of the uninterrupted run ($d)"
        diag "uninterrupted: $(losses one-a)"; diag "resumed: $(losses "x$lay")"
    fi
done
done_testing

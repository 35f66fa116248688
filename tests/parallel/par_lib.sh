#!/bin/sh
# Helpers shared by the tests of tests/parallel (sourcing it sources tests/lib.sh): the
# scratch directory and a small synthetic corpus, the small GPT's flags, one training run
# with its metrics and dumps, and loss-curve comparisons.
# (top_builddir, GPT3D come from make check; TMPD from g3_tmpdir; run sets rc and out.)
# shellcheck shell=sh disable=SC2154,SC2034
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"

# Shorthands for the layout flags, as the tests write their layouts: "$T 2 $P 2 $Z".
T=--tensor-model-parallel-size
P=--pipeline-model-parallel-size
Z=--use-distributed-optimizer

# par_corpus DIR: 400 short verses and a byte-level vocabulary of 261 entries in DIR
# (DIR/verses, DIR/vocab.json, DIR/merges.txt).
par_corpus() {
    g3_byte_corpus "$1" mixed4 400
}

# par_setup: the scratch directory $TMPD (g3_tmpdir), par_corpus in $D = $TMPD/data,
# grad_check at $check, and one OpenMP thread per rank (exported for mpirun -x).
# (Call it directly, not in $(...): g3_tmpdir's trap must live in the test's shell.)
par_setup() {
    g3_tmpdir
    check="$top_builddir/tests/parallel/grad_check"
    D="$TMPD/data"
    par_corpus "$D"
    OMP_NUM_THREADS=1
    export OMP_NUM_THREADS
}

# par_flags LAYERS [FLAGS...]: set $flags (par_train's) to g3_small_flags's small GPT on
# the corpus of par_setup, with a minimum learning rate of 3e-4 and a 2-minute timeout; then
# FLAGS.
par_flags() {
    _layers=$1
    shift
    g3_small_flags "$_layers" --min-lr 3e-4 --distributed-timeout-minutes 2 "$@"
    flags=$g3_flags
}

# par_train NAME NP [FLAGS...]: one run of gpt3d train $flags (mpirun unless NP is 0) writing
# $TMPD/NAME.jsonl (metrics) and $TMPD/NAME/ (gradients of step 1, parameters and Adam
# moments at the end); prints the run's last lines when it fails.
par_train() {
    _name=$1 _np=$2
    shift 2
    # shellcheck disable=SC2086
    if [ "$_np" = 0 ]; then
        run "$GPT3D" train $flags --metrics-file "$TMPD/$_name.jsonl" \
            --debug-grad-dump "$TMPD/$_name" "$@"
    else
        run g3_mpirun -x OMP_NUM_THREADS -np "$_np" "$GPT3D" train $flags \
            --metrics-file "$TMPD/$_name.jsonl" --debug-grad-dump "$TMPD/$_name" "$@"
    fi
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | grep -v '^ *$' | tail -15 | sed 's/^/#   /'
}

# par_train_losses NAME NP [FLAGS...]: par_train, then its training losses as logged, one
# "loss":VALUE a line, in $TMPD/NAME.losses (empty when the run logged none).
par_train_losses() {
    _n=$1
    par_train "$@"
    grep '"event":"train"' "$TMPD/$_n.jsonl" | grep -o '"loss":[^,}]*' > "$TMPD/$_n.losses" || :
}

# par_same NAME_A NAME_B WHAT N [SUFFIX]: two par_train_losses runs agree bitwise: their N
# losses, their gradients of step 1 and their final parameters (grad_check at $check, tolerance
# 0); the results are named "WHAT: ...SUFFIX".
par_same() {
    _sfx=${5:-}
    if cmp -s "$TMPD/$1.losses" "$TMPD/$2.losses" && [ "$(wc -l < "$TMPD/$1.losses")" -eq "$4" ]; then
        tap_result 0 "$3: the $4 losses bitwise equal$_sfx"
    else
        tap_result 1 "$3: the $4 losses bitwise equal$_sfx"
        diff "$TMPD/$1.losses" "$TMPD/$2.losses" | head -4 | sed 's/^/#   /'
    fi
    for _w in grads params; do
        gout=$("$check" --what $_w --tol 0 "$TMPD/$1" "$TMPD/$2" 2>&1) && grc=0 || grc=$?
        is "$grc" 0 "$3: $_w bitwise equal$_sfx ($(printf '%s\n' "$gout" | tail -n 1))"
        [ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -6 | sed 's/^/#   /'
    done
}

# par_maxdiff REF RUN KEY EVENT MODE: the largest difference of KEY over the records of
# EVENT in two metrics files, relative (MODE rel) or absolute (MODE abs), and the number
# of records compared: "D N", or "mismatch N M" when the runs logged different counts.
par_maxdiff() {
    awk -v key="\"$3\":" -v ev="$4" -v mode="$5" '
        FNR == 1 { f++ }
        index($0, "\"event\":\"" ev "\"") {
            i = index($0, key); if (!i) next
            v = substr($0, i + length(key)) + 0
            if (f == 1) ref[++n] = v
            else {
                m++; d = v - ref[m]; if (d < 0) d = -d
                if (mode == "rel" && ref[m] != 0) d /= (ref[m] < 0 ? -ref[m] : ref[m])
                if (d > w) w = d
            }
        }
        END { if (m == 0 || m != n) print "mismatch " n " " m; else printf "%.3g %d\n", w, m }' \
        "$1" "$2"
}

# par_within A B: exit 0 when the number A <= B
par_within() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }

# par_compare NAME REF: run NAME against REF (20 iterations each, par_train's dumps): the loss
# curve and the validation loss within 1e-5 relative, the gradients of step 1 within 1e-5,
# the parameters and Adam moments at the end within 1e-3 (grad_check at $check).
par_compare() {
    name=$1 ref=$2
    # shellcheck disable=SC2046
    set -- $(par_maxdiff "$TMPD/$ref.jsonl" "$TMPD/$name.jsonl" loss train rel)
    if [ "$#" -eq 2 ] && [ "$2" -eq 20 ] && par_within "$1" 1e-5; then
        tap_result 0 "$name: loss curve within 1e-5 of one rank over 20 iterations (max $1)"
    else
        tap_result 1 "$name: loss curve within 1e-5 of one rank over 20 iterations ($*)"
    fi
    # shellcheck disable=SC2046
    set -- $(par_maxdiff "$TMPD/$ref.jsonl" "$TMPD/$name.jsonl" loss eval rel)
    if [ "$#" -eq 2 ] && par_within "$1" 1e-5; then
        tap_result 0 "$name: validation loss within 1e-5 ($1)"
    else
        tap_result 1 "$name: validation loss within 1e-5 ($*)"
    fi
    gout=$("$check" "$TMPD/$ref" "$TMPD/$name" 2>&1) && grc=0 || grc=$?
    is "$grc" 0 "$name: gradients of step 1 within 1e-5, every element present, copies equal ($(printf '%s\n' "$gout" | tail -n 1))"
    [ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -8 | sed 's/^/#   /'
    gout=$("$check" --what params --tol 1e-3 "$TMPD/$ref" "$TMPD/$name" 2>&1) && grc=0 || grc=$?
    is "$grc" 0 "$name: parameters after 20 steps: replicated copies bitwise equal, within 1e-3 of one rank"
    [ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -8 | sed 's/^/#   /'
    gout=$("$check" --what adam_m --tol 1e-3 "$TMPD/$ref" "$TMPD/$name" 2>&1) && grc=0 || grc=$?
    is "$grc" 0 "$name: Adam moments by tensor slice (the checkpoint view): every element, within 1e-3"
    [ "$grc" -eq 0 ] || printf '%s\n' "$gout" | grep -v '^ok' | head -8 | sed 's/^/#   /'
}

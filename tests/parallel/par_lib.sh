#!/bin/sh
# Helpers shared by tests/parallel/test_grad_reduce_bf16.sh and test_parallel_cuda.sh (sourced
# after tests/lib.sh and g3_tmpdir): a small synthetic corpus, one training run with its
# metrics and dumps, and loss-curve comparisons.
# (top_builddir, GPT3D come from make check; TMPD from g3_tmpdir; run sets rc and out.)
# shellcheck shell=sh disable=SC2154

# par_corpus DIR: 400 short verses and a byte-level vocabulary of 261 entries in DIR
# (DIR/verses, DIR/vocab.json, DIR/merges.txt).
par_corpus() {
    g3_byte_corpus "$1" mixed4 400
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

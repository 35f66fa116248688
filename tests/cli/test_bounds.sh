#!/bin/bash
# Bounded inputs (issue 33): gpt3d plan answers for the largest allocation it accepts and
# refuses a larger one; huge run lengths and batch sizes, which would ask for a sample index
# of tens of GB, are refused by plan, train and eval with exit 2 naming the flag; a huge
# --num-layers is refused instead of planned with "0.00" activations; a float flag out of
# double's range (a subnormal, an overflow) says what range is accepted.
# (top_srcdir, top_builddir, GPT3D come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
set -o pipefail
g3_tmpdir
export OMP_NUM_THREADS=1

# ---- 2. plan answers or refuses ------------------------------------------------------------------
# (a generous deadline, not a timing: the placement's duplicate check was quadratic in the
# nodes, dozens of layouts each took minutes at this size)
run timeout 600 "$GPT3D" plan --search --nodes 131072 --gpus-per-node 8
is "$rc" 0 "plan --search on 131072 nodes x 8 GPUs (2^20 ranks, the most it plans) answers"
like "$out" "400000|1048576|131072" "... with layouts of that size"
run "$GPT3D" plan --search --nodes 131073 --gpus-per-node 8
is "$rc" 2 "one node more is refused (exit 2)"
like "$out" "--nodes 131073 x --gpus-per-node 8 = 1048584 ranks is more than gpt3d plans for \(at most 1048576 ranks\)" "... naming the flags and the limit"
run "$GPT3D" plan --nodes 4 --gpus-per-node 8 --sizes 4,300000
is "$rc" 2 "a --sizes entry past the limit is refused"
like "$out" "--sizes: 300000 nodes x --gpus-per-node 8 = 2400000 ranks is more than gpt3d plans for" "... naming it"
run timeout 600 "$GPT3D" plan --train-samples 2147483647
is "$rc" 0 "plan --train-samples 2^31-1 answers (the run's totals are multiplied, not summed per step)"
like "$out" "2147483647|2,147,483,647|tokens" "... with the run's totals"

# ---- 9, 12. the sample-index flags and the layers --------------------------------------------------
for a in "--train-samples 9223372036854775807:--train-samples 9223372036854775807 is out of range \(1 .. 2147483647 samples" \
         "--global-batch-size 2147483648:--global-batch-size 2147483648 is out of range \(1 .. 2147483647\)" \
         "--train-iters 2147483648:--train-iters 2147483648 x --global-batch-size 4 = 8.59e\+09 samples is more than gpt3d reads from one split" \
         "--eval-iters 2147483648:--eval-iters 2147483648 x --global-batch-size 4 = 8.59e\+09 samples" \
         "--num-layers 2147483647:--num-layers 2147483647 is out of range \(1 .. 65536\)"; do
    # shellcheck disable=SC2086
    run "$GPT3D" plan ${a%%:*}
    if [ "$rc" = 2 ] && printf '%s' "$out" | grep -E -- "${a#*:}" >/dev/null && ! printf '%s' "$out" | grep "0.00  *1 " >/dev/null; then
        tap_result 0 "plan ${a%%:*}: exit 2 naming the flag and its range"
    else
        tap_result 1 "plan ${a%%:*}: exit $rc"; diag "$(printf '%s' "$out" | grep -m2 error)"
    fi
done
D="$TMPD/data"
g3_byte_corpus "$D" light 200 >/dev/null
small="$g3_data --num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --eval-iters 0"
for a in "--global-batch-size 2147483648 --train-iters 1:--global-batch-size 2147483648 is out of range" \
         "--train-iters 2147483648:--train-iters 2147483648 x --global-batch-size 2 = " \
         "--train-samples 2147483648:--train-samples 2147483648 is out of range" \
         "--train-iters 1 --eval-iters 2147483648:--eval-iters 2147483648 x --global-batch-size 2 = "; do
    # shellcheck disable=SC2086
    run "$GPT3D" train $small ${a%%:*} --run-dir "$TMPD/r"
    if [ "$rc" = 2 ] && printf '%s' "$out" | grep -- "${a#*:}" >/dev/null && ! printf '%s' "$out" | grep "out of memory" >/dev/null; then
        tap_result 0 "train ${a%%:*}: exit 2 naming the flag (no sample index attempted)"
    else
        tap_result 1 "train ${a%%:*}: exit $rc"; diag "$(printf '%s' "$out" | grep -m2 error)"
    fi
done
# shellcheck disable=SC2086
run "$GPT3D" train $small --train-iters 1 --save "$TMPD/ck" --run-dir "$TMPD/r"
is "$rc" 0 "a one-iteration checkpoint for eval"
run "$GPT3D" eval --load "$TMPD/ck" --eval-iters 2147483648 --global-batch-size 8
is "$rc" 2 "eval --eval-iters 2147483648 is refused (exit 2)"
like "$out" "--eval-iters 2147483648 x --global-batch-size 8 = 1.718e\+10 samples is more than gpt3d reads from one split" "... naming the flags"

# ---- 11. float flags say what range they accept -------------------------------------------------
run "$GPT3D" plan --lr 1e-320
is "$rc" 2 "--lr 1e-320 (a subnormal) is refused"
like "$out" "--lr: '1e-320' is out of range: give 0 or a value whose magnitude is between 2.2e-308 and 1.8e\+308" "... saying which range is accepted"
unlike_out=$(printf '%s' "$out" | grep -c "not a finite number" || true)
is "$unlike_out" 0 "... not calling it 'not a finite number'"
run "$GPT3D" plan --adam-eps 1e999
like "$out" "--adam-eps: '1e999' is out of range" "an overflow is out of range too"
run "$GPT3D" plan --clip-grad inf
like "$out" "--clip-grad: 'inf' is not a finite number" "inf is not a finite number"
run "$GPT3D" plan --seed 99999999999999999999
like "$out" "--seed: '99999999999999999999' is out of range \(an integer from" "an integer past 64 bits is out of range, not 'not an integer'"

# ---- 14. a damaged encoder.json says where: byte offset and key --------------------------------
py=${PYTHON_REF:-/usr/bin/python3}
if "$py" -c 'import json' 2>/dev/null; then
    "$py" -c "
import json, sys
v = json.load(open(sys.argv[1]))
keys = list(v)
v[keys[150]] = '12'
json.dump(v, open(sys.argv[2], 'w'))
v[keys[150]] = 150
v[keys[10]] = [[[[[[1]]]]]]
json.dump(v, open(sys.argv[3], 'w'))" "$D/vocab.json" "$TMPD/strid.json" "$TMPD/nested.json"
    for f in strid nested; do
        run "$GPT3D" tokenize --vocab-file "$TMPD/$f.json" --merge-file "$D/merges.txt" </dev/null
        if [ "$rc" != 0 ] && printf '%s' "$out" | grep -E "vocabulary file '$TMPD/$f.json' line 1, column [0-9]+ [(]byte [0-9]+[)], in the entry of key .+: the token id is not a number" >/dev/null; then
            tap_result 0 "a vocabulary with a $f token id: the error gives the byte offset and the key"
        else
            tap_result 1 "a vocabulary with a $f token id: rc $rc"; diag "$(printf '%s' "$out" | grep -m1 error)"
        fi
    done
else
    skip "no python3 to write the damaged vocabularies"
    skip "(same)"
fi

done_testing

#!/bin/sh
# gpt3d eval --task mc, a sanity check that can fail: a small GPT trained for 300 iterations
# on the first 90% of the KJV verses (byte-level vocabulary, a minute of CPU) scores above
# chance on a multiple-choice set built from the held-out verses (tasks_ref.py kjv: verse i,
# then the next verse up to a cut inside a word; the true rest of that word against three
# fragments of the same length from held-out verses drawn at random: chance is 0.25), and
# the same model with its initial weights (one step at learning rate 0) does not.  Wrong
# labels, a context that does not reach the model, or choices scored out of order would put
# the trained model at chance.  (top_srcdir, top_builddir, GPT3D, PYTHON_REF, GPT3D_TEST_DATA
# come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_need_kjv kjv.txt

g3_tmpdir
py=${PYTHON_REF:-/usr/bin/python3}
"$py" "$top_srcdir/tests/infer/tasks_ref.py" kjv "$K/kjv.txt" "$TMPD"
"$top_builddir/tests/train/mkdata" --byte-vocab "$TMPD/vocab.json" "$TMPD/merges.txt"
"$top_builddir/tests/train/mkdata" "$TMPD/vocab.json" "$TMPD/merges.txt" "$TMPD/train.txt" "$TMPD/kjv"
is "$(wc -l < "$TMPD/kjv_mc.jsonl" | tr -d ' ')" 400 "400 items from the held-out verses"

flags="--data-path $TMPD/kjv --vocab-file $TMPD/vocab.json --merge-file $TMPD/merges.txt
 --split 100,0,0 --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128
 --micro-batch-size 8 --global-batch-size 8 --log-interval 100 --eval-iters 1 --eval-interval 100000"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --lr 3e-3 --lr-warmup-iters 10 --train-iters 300 --save "$TMPD/trained" --run-dir "$TMPD/r1"
is "$rc" 0 "a GPT trains on the KJV verses"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --lr 0 --min-lr 0 --lr-warmup-iters 0 --train-iters 1 --save "$TMPD/init" --run-dir "$TMPD/r0"
is "$rc" 0 "the same GPT with its initial weights"

# acc CKPT: the accuracy on the set
acc() {
    "$GPT3D" eval --load "$1" --task mc --task-data "$TMPD/kjv_mc.jsonl" --metrics-file "$TMPD/m.jsonl" >/dev/null 2>&1
    tail -n 1 "$TMPD/m.jsonl" | sed 's/.*"metrics":{"acc":\([0-9.e-]*\),.*/\1/'
}
a1=$(acc "$TMPD/trained")
a0=$(acc "$TMPD/init")
# n = 400: chance 0.25 with a standard error of 0.022; 0.33 is 3.6 of them above
if awk -v a="$a1" 'BEGIN { exit !(a != "" && a + 0 > 0.33) }'; then r=0; else r=1; fi
is "$r" 0 "the trained model scores above chance: acc $a1 > 0.33 (chance 0.25)"
if awk -v a="$a0" 'BEGIN { exit !(a != "" && a + 0 < 0.33) }'; then r=0; else r=1; fi
is "$r" 0 "the initial model does not: acc $a0 < 0.33"
done_testing

#!/bin/sh
# Helpers shared by the shell tests of tests/ckpt that train through the real commands
# (sourcing it sources tests/lib.sh): a synthetic corpus in $TMPD/data, the small GPT's flags,
# one-rank training, and fresh copies of a good save directory.  Call g3_tmpdir first.
# (top_srcdir, GPT3D come from make check; TMPD from g3_tmpdir; run sets rc and out.)
# shellcheck shell=sh disable=SC2154,SC2034
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"

D="$TMPD/data"
g3_byte_corpus "$D" light 300 >/dev/null
flags="$g3_data --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 8 --lr 3e-3 --lr-warmup-iters 2
 --lr-decay-style cosine --log-interval 1 --eval-iters 0 --distributed-timeout-minutes 1"
export OMP_NUM_THREADS=1

# train ITERS [FLAGS...]: one rank
train() {
    _it=$1
    shift
    # shellcheck disable=SC2086
    run "$GPT3D" train $flags --train-iters "$_it" "$@"
}
# fresh NAME: $TMPD/NAME, a copy of the good save directory $TMPD/good (and no NAME.run or
# NAME.save left from before)
fresh() {
    rm -rf "${TMPD:?}/$1" "$TMPD/$1.run" "$TMPD/$1.save"
    cp -a "$TMPD/good" "$TMPD/$1"
}

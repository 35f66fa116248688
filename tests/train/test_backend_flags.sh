#!/bin/sh
# The compute backend's options on gpt3d train and plan (train/flags.c into g3_be_opts_t,
# backend.h): --attention-backend auto|native|cudnn and --deterministic.  The CPU runs its own
# attention for auto and native (the same losses, bit for bit) and refuses cudnn with a usage
# error (exit 2) naming the flag and the fix, in train and in plan alike.
# (top_srcdir, top_builddir, GPT3D come from make check; run sets rc and out.  $g3_flags is
# split into words on purpose: SC2086.)
# shellcheck disable=SC2154,SC2086
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
g3_byte_corpus "$TMPD/data" light 120
g3_small_flags 1 --global-batch-size 2 --train-iters 3

run "$GPT3D" train --help
like "$out" "--attention-backend auto\|native\|cudnn" "train --help lists --attention-backend"
like "$out" "--deterministic" "... and --deterministic"

run "$GPT3D" train $g3_flags --attention-backend cudnn
is "$rc" 2 "--device cpu --attention-backend cudnn: a usage error"
like "$out" "error: --attention-backend cudnn needs --device cuda .*pass --attention-backend auto or native" \
    "... naming the flag and the fix"
iters=$(printf '%s\n' "$out" | grep -c ' iteration ' || true)
is "$iters" 0 "... before any iteration"

run "$GPT3D" train $g3_flags --attention-backend flash
is "$rc" 2 "an unknown --attention-backend word: a usage error"
like "$out" "--attention-backend: 'flash' is not one of auto\|native\|cudnn" "... listing the choices"

run "$GPT3D" plan --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 \
    --vocab-size 261 --micro-batch-size 2 --attention-backend cudnn
is "$rc" 2 "gpt3d plan refuses cudnn on the CPU too (exit 2)"
like "$out" "--attention-backend cudnn needs --device cuda" "... with the trainer's message"

losses() {
    printf '%s\n' "$1" | sed -n 's/.*| lm loss: \([0-9.E+-]*\) |.*/\1/p' | tr '\n' ' '
}
run "$GPT3D" train $g3_flags --run-dir "$TMPD/auto"
is "$rc" 0 "the default (auto) run exits 0"
auto=$(losses "$out")
run "$GPT3D" train $g3_flags --run-dir "$TMPD/native" --attention-backend native --deterministic
is "$rc" 0 "--attention-backend native --deterministic exits 0"
native=$(losses "$out")
like "$auto" "^[0-9.E+-]+ [0-9.E+-]+ [0-9.E+-]+ $" "three losses were logged ($auto)"
is "$native" "$auto" "auto is the CPU's native attention: the same losses, bit for bit"
done_testing

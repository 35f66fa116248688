#!/bin/sh
# gpt3d's CPU GPT against the same GPT built in PyTorch (Debian's python3-torch): logits, loss
# and every parameter gradient within 1e-5 (max|a-b|/max|b| per tensor, fp32 both sides), then
# ten AdamW iterations with Megatron's schedule, losses within 1e-4.  With and without
# --recompute-activations.  The reference is computed here, nothing is stored.
# (top_srcdir, top_builddir, GPT3D come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
py=${PYTHON_REF:-/usr/bin/python3}
if ! "$py" -c 'import torch, numpy' >/dev/null 2>&1; then
    skip_all "$py has no torch/numpy (install Debian's python3-torch)"
fi
for mode in stored recompute; do
    flag=""
    [ "$mode" = recompute ] && flag=--recompute
    run "$top_builddir/tests/train/ref_dump" "$TMPD/ref-$mode.bin" $flag
    is "$rc" 0 "ref_dump ($mode activations) writes the weights, batch, gradients and ten steps"
    [ "$rc" -eq 0 ] || { printf '%s\n' "$out" | sed 's/^/#   /'; continue; }
    run "$py" "$top_srcdir/tests/train/ref_check.py" "$TMPD/ref-$mode.bin"
    printf '%s\n' "$out" | grep -E '^# ' || true
    printf '%s\n' "$out" | grep -E '^not ok' | sed 's/^/#   /' || true
    is "$rc" 0 "PyTorch agrees ($mode activations): $(printf '%s\n' "$out" | grep -c '^ok') of $(printf '%s\n' "$out" | grep -c -E '^(not )?ok') checks"
done
done_testing

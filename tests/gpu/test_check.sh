#!/bin/bash
# tests/gpu/check.sh (the one command for a GPU machine) run here with every GPU part skipped
# (CHECK_NO_GPU=1, so also on a machine with a GPU): it writes summary.md listing each part
# with its status, the logs, and at most 8 files in all (the GPU machine returns no more); a
# missing OUTDIR argument is a usage error.
# shellcheck source=tests/lib.sh disable=SC1091
. "${top_srcdir:-.}/tests/lib.sh"
set -e
set -o pipefail
g3_tmpdir
src=${top_srcdir:-.}

run env CHECK_NO_GPU=1 bash "$src/tests/gpu/check.sh" "$TMPD/out"
is "$rc" 0 "check.sh with every GPU part skipped exits 0"
like "$out" "summary.md" "... and names its summary"
is "$(find "$TMPD/out" -type f | wc -l)" 7 "it writes 7 files (the GPU machine takes 8)"
s=$(cat "$TMPD/out/summary.md" 2>/dev/null || true)
for p in kernels train ckpt attention-bench bench_gpu ckpt-gpu ncu cudnn-log plan; do
    like "$s" "^\| $p \| \*\*skip\*\* \| 0 \| CHECK_NO_GPU=1 \|" "summary.md lists part $p as skipped, saying why"
done
like "$s" "^\| part \| status" "summary.md has the status table"
for f in kernels.log train.log bench.log ncu.csv cudnn.log other.log; do
    is "$([ -f "$TMPD/out/$f" ] && echo yes)" yes "log $f is written"
done
run bash "$src/tests/gpu/check.sh"
is "$rc" 1 "without OUTDIR it stops with exit 1"
like "$out" "usage: check.sh OUTDIR" "... saying how to call it"
done_testing

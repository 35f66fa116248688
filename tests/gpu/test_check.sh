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
for p in kernels train ckpt attention-bench bench_gpu ckpt-gpu eval-tasks ncu cudnn-log plan; do
    like "$s" "^\| $p \| \*\*skip\*\* \| 0 \| CHECK_NO_GPU=1 \|" "summary.md lists part $p as skipped, saying why"
done
like "$s" "^\| part \| status" "summary.md has the status table"
for f in kernels.log train.log bench.log ncu.csv cudnn.log other.log; do
    is "$([ -f "$TMPD/out/$f" ] && echo yes)" yes "log $f is written"
done
# a part's plumbing on the CPU: eval-tasks with the CPU standing in for CUDA (the same scores)
run env CHECK_NO_GPU=1 CHECK_CPU_PARTS=eval-tasks EVAL_DEVICE=cpu GPT3D="${GPT3D:-$top_builddir/src/gpt3d}" \
    GPT3D_TEST_DATA="${GPT3D_TEST_DATA:-$top_builddir/tests/_data}" bash "$src/tests/gpu/check.sh" "$TMPD/cpu"
is "$rc" 0 "check.sh with CHECK_CPU_PARTS=eval-tasks exits 0"
s=$(cat "$TMPD/cpu/summary.md" 2>/dev/null || true)
like "$s" "^\| eval-tasks \| \*\*pass\*\* \|" "summary.md lists eval-tasks as passed"
like "$s" "^\| kernels \| \*\*skip\*\*" "... and the other parts as skipped"
t=$(cat "$TMPD/cpu/train.log" 2>/dev/null || true)
for m in "lambada ppl" "mc:mc acc" "hellaswag acc_norm" "wikitext103 adjusted_ppl"; do
    like "$t" "^ok - task $m: CPU [0-9.e+]+, cpu [0-9.e+]+" "eval-tasks compares $m of the two runs"
done
unlike "$t" "^not ok" "... and every metric agrees"
like "$s" "^- eval-tasks: ok 11, not ok 0" "summary.md counts the comparisons"
run bash "$src/tests/gpu/check.sh"
is "$rc" 1 "without OUTDIR it stops with exit 1"
like "$out" "usage: check.sh OUTDIR" "... saying how to call it"
done_testing

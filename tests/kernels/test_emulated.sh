#!/bin/sh
# The CUDA kernels' device code run on the CPU: each kernels/<op>.cu is cut at its
# "host launcher" marker, compiled as C++20 with tests/kernels/emu/shim.h (blocks of host
# threads, barriers for __syncthreads/__syncwarp, WMMA fragments as plain 16x16 arrays) and
# compared with tests/kernels/ref.c at the GPU tests' tolerances (tests/kernels/emu/
# emu_kernels.cc).  Needs no GPU: it checks indexing, masking, tiling and reductions, not
# speed or the tensor cores' rounding.  Skipped without a C++20 compiler or the CUDA headers.
# shellcheck source=tests/lib.sh disable=SC1091
. "${top_srcdir:-.}/tests/lib.sh"
set -e
src=${top_srcdir:-.}
build=${top_builddir:-.}
cxx=${CXX:-g++}
cc=${CC:-cc}
inc=${CUDA_HOME:-/usr/local/cuda}/include

[ -f "$inc/cuda_bf16.h" ] || skip_all "no CUDA headers in $inc (set CUDA_HOME)"
[ -f "$build/src/libgpt3d.a" ] || skip_all "$build/src/libgpt3d.a is not built"
g3_tmpdir
printf '#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n' \
    >"$TMPD/probe.cc"
"$cxx" -std=c++20 -pthread "$TMPD/probe.cc" -o "$TMPD/probe" >/dev/null 2>&1 ||
    skip_all "$cxx cannot compile C++20 <barrier> (set CXX)"

for f in "$src"/kernels/*.cu; do
    grep -q 'host launcher' "$f" || continue
    awk '/host launcher \(tests\/kernels\/emu/ { exit } { print }' "$f" |
        grep -v 'extern __shared__ .*g3_att_smem\|extern __shared__ .*g3_lnb_smem\|#include <cub/cub.cuh>' \
            >"$TMPD/$(basename "$f" .cu)_k.h"
done
"$cc" -O2 -c -I"$src/tests" -I"$src/src" "$src/tests/kernels/ref.c" -o "$TMPD/ref.o"
"$cxx" -std=c++20 -O1 -pthread -w -I"$TMPD" -I"$src/tests/kernels/emu" -I"$inc" \
    -I"$src/kernels" -I"$build" -I"$src/tests" -I"$src/src" \
    "$src/tests/kernels/emu/emu_kernels.cc" "$TMPD/ref.o" "$build/src/libgpt3d.a" -lm \
    -o "$TMPD/emu"
"$TMPD/emu"

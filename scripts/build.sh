#!/usr/bin/env bash
# Bootstrap, configure and build gpt3d in ./build (an out-of-tree build).
# Safe to run again: it only redoes what changed.  Extra arguments go to
# configure on the first run (or set GPT3D_CONFIGURE_FLAGS).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
builddir=${GPT3D_BUILD_DIR:-$top/build}
jobs=${GPT3D_JOBS:-$(nproc 2>/dev/null || echo 2)}

if [ ! -x configure ] || [ configure.ac -nt configure ]; then
    ./bootstrap
fi
mkdir -p "$builddir"
cd "$builddir"
if [ ! -f Makefile ]; then
    # shellcheck disable=SC2086
    "$top/configure" ${GPT3D_CONFIGURE_FLAGS:-} "$@"
fi
make -j"$jobs"

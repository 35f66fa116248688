#!/usr/bin/env bash
# The README's test command: install what is missing, build, run "make check".
# Safe to run twice.  On failure the log of every failed test is printed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh" test
"$top/scripts/build.sh"
builddir=${GPT3D_BUILD_DIR:-$top/build}
cd "$builddir"
jobs=${GPT3D_JOBS:-$(nproc 2>/dev/null || echo 2)}
if ! make -j"$jobs" check; then
    find ./tests -name '*.log' -exec grep -lE '^(FAIL|ERROR)' {} + 2>/dev/null |
        while IFS= read -r log; do
            echo "==== $log"
            tail -n 60 "$log"
        done
    exit 1
fi

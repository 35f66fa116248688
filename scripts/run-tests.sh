#!/usr/bin/env bash
# The README's test command: install what is missing, build, run "make check".
# Safe to run twice.  On failure the log of every failed test is printed.  Ends with the
# line "N passed, N failed, N skipped" (scripts/test-results.sh, as .ci/run does), also when
# the set-up or the build fails; GPT3D_RESULTS_LINE=0 leaves it to the caller (.ci/run).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
builddir=${GPT3D_BUILD_DIR:-$top/build}
results_line() {
    status=$?
    trap - EXIT
    if [ "${GPT3D_RESULTS_LINE:-1}" != 0 ]; then
        if ! bash "$top/scripts/test-results.sh" "$builddir" "$status" && [ "$status" -eq 0 ]; then
            status=1
        fi
    fi
    exit "$status"
}
trap results_line EXIT
"$top/scripts/deps.sh" test
"$top/scripts/build.sh"
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

#!/usr/bin/env bash
# The one line "N passed, N failed, N skipped" that ends both the README's test command
# (scripts/run-tests.sh) and .ci/run, counted from the TAP results in the build directory (the
# .trs files of 'make check': PASS and XFAIL pass; FAIL, ERROR and XPASS fail; SKIP skips).
#   scripts/test-results.sh BUILD_DIR STATUS
# STATUS: the exit status of what ran the tests.  When it failed and no test did (the set-up
# or the build failed first), that counts as one failure.  Exits 0 when STATUS is 0 and no
# test failed, 1 otherwise.
set -uo pipefail
builddir=${1:?usage: scripts/test-results.sh BUILD_DIR STATUS}
status=${2:?usage: scripts/test-results.sh BUILD_DIR STATUS}

passed=0; failed=0; skipped=0
if [ -d "$builddir" ]; then
    while IFS= read -r line; do
        case "$line" in
            ":test-result: PASS"*|":test-result: XFAIL"*) passed=$((passed + 1)) ;;
            ":test-result: SKIP"*) skipped=$((skipped + 1)) ;;
            ":test-result: FAIL"*|":test-result: ERROR"*|":test-result: XPASS"*) failed=$((failed + 1)) ;;
        esac
    done < <(find "$builddir" -name '*.trs' -exec cat {} +)
fi
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1   # the set-up or the build failed before any test did
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]

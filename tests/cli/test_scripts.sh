#!/bin/bash
# The README's test command (scripts/run-tests.sh) and .ci/run end with the same one line
# "N passed, N failed, N skipped", counted by the one script both call
# (scripts/test-results.sh) (#32.8).  Run in a copy of the scripts with stub set-up and build
# steps and a build directory whose "make check" writes .trs files, so nothing is installed
# or built (without the caller's GPT3D_RESULTS_LINE: .ci/run itself sets it for the README's command).
# shellcheck disable=SC1091,SC2154
. "$top_srcdir/tests/lib.sh"
set -e
set -o pipefail
if [ ! -f "$top_srcdir/.ci/run" ] || [ ! -f "$top_srcdir/scripts/run-tests.sh" ]; then
    skip_all "scripts/ and .ci/ are not in this source tree (a release tarball has neither)"
fi
g3_tmpdir
T="$TMPD/top"
mkdir -p "$T/scripts" "$T/.ci" "$T/build/tests/a"
cp "$top_srcdir/scripts/run-tests.sh" "$top_srcdir/scripts/test-results.sh" "$T/scripts/"
cp "$top_srcdir/.ci/run" "$T/.ci/run"
printf '#!/bin/sh\nexit 0\n' > "$T/scripts/deps.sh"
# shellcheck disable=SC2016  # the stub's text, expanded when it runs
printf '#!/bin/sh\nexit "${STUB_BUILD_STATUS:-0}"\n' > "$T/scripts/build.sh"
chmod +x "$T/scripts/deps.sh" "$T/scripts/build.sh"
# make check: three results of each kind that passes (PASS, XFAIL), one skip, and FAIL when
# STUB_FAIL is set (then make fails, as it does).
cat > "$T/build/Makefile" <<'MK'
check:
	printf ':test-result: PASS\n:test-result: PASS\n:test-result: XFAIL\n:test-result: SKIP\n' > tests/a/one.trs
	if [ -n "$$STUB_FAIL" ]; then printf ':test-result: FAIL\n' > tests/a/two.trs; \
	  printf 'FAIL: two\n' > tests/a/two.log; exit 1; else rm -f tests/a/two.trs tests/a/two.log; fi
MK

run env -u GPT3D_BUILD_DIR -u GPT3D_RESULTS_LINE bash "$T/scripts/run-tests.sh"
is "$rc" 0 "run-tests.sh: all pass, exit 0"
is "$(printf '%s\n' "$out" | tail -n 1)" "3 passed, 0 failed, 1 skipped" "... and it ends with the results line"
run env -u GPT3D_BUILD_DIR -u GPT3D_RESULTS_LINE bash "$T/.ci/run"
is "$rc" 0 ".ci/run: exit 0"
is "$(printf '%s\n' "$out" | tail -n 1)" "3 passed, 0 failed, 1 skipped" "... the same line, last"
is "$(printf '%s\n' "$out" | grep -c 'passed, ')" 1 "... printed once"

run env -u GPT3D_BUILD_DIR -u GPT3D_RESULTS_LINE STUB_FAIL=1 bash "$T/scripts/run-tests.sh"
is "$rc" 1 "run-tests.sh with a failing test: exit 1"
like "$out" "==== ./tests/a/two.log" "... the failed test's log is shown"
is "$(printf '%s\n' "$out" | tail -n 1)" "3 passed, 1 failed, 1 skipped" "... and the line counts the failure"
run env -u GPT3D_BUILD_DIR -u GPT3D_RESULTS_LINE STUB_FAIL=1 bash "$T/.ci/run"
is "$rc" 1 ".ci/run with a failing test: exit 1"
is "$(printf '%s\n' "$out" | tail -n 1)" "3 passed, 1 failed, 1 skipped" "... the same line"

rm -f "$T"/build/tests/a/*.trs
run env -u GPT3D_BUILD_DIR -u GPT3D_RESULTS_LINE STUB_BUILD_STATUS=2 bash "$T/scripts/run-tests.sh"
is "$rc" 2 "run-tests.sh when the build fails: the build's status"
is "$(printf '%s\n' "$out" | tail -n 1)" "0 passed, 1 failed, 0 skipped" "... and still the line, the failed build counted"
run env -u GPT3D_BUILD_DIR -u GPT3D_RESULTS_LINE STUB_BUILD_STATUS=2 bash "$T/.ci/run"
is "$rc" 1 ".ci/run when the build fails: exit 1"
is "$(printf '%s\n' "$out" | tail -n 1)" "0 passed, 1 failed, 0 skipped" "... the same line"
done_testing

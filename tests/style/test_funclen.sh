#!/bin/sh
# No function over 100 lines (docs/design.md, "Conventions") in the C and CUDA sources of src/
# and kernels/ (tests are not held to it), from the line of its name to its closing brace.
# Strict: no list of exceptions.  tests/style/calls.py --long prints each, one a line.
# (top_srcdir comes from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -eu

command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
cd "$top_srcdir"
src=$(find src kernels -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
# shellcheck disable=SC2086  # file names without blanks
run python3 tests/style/calls.py --long 100 $src
is "$out" "" "no function of src/ or kernels/ runs over 100 lines ($(echo "$src" | wc -l) files)"
[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/#   /'
done_testing

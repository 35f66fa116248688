#!/bin/sh
# No file-level call circles (docs/design.md, "Layers"): over the object files of src/ (the
# library), A -> B when A leaves undefined a symbol that B defines (nm); no strongly connected
# component holds more than one file, inside a directory or across directories.  Strict: no
# list of exceptions.  tests/style/calls.py --circles prints each circle, one a line.
# (top_srcdir, top_builddir come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -eu

command -v nm >/dev/null 2>&1 || skip_all "no nm (binutils) to read the object files"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
objs=$(find "$top_builddir/src" -mindepth 2 -name '*.o' ! -name '*-*.o' | sort)
[ -n "$objs" ] || skip_all "no object files under $top_builddir/src"
# shellcheck disable=SC2086  # file names without blanks
run python3 "$top_srcdir/tests/style/calls.py" --circles $objs
out=$(printf '%s\n' "$out" | sed "s|$top_builddir/||g")
is "$out" "" "no object files of src/ call each other in a circle ($(echo "$objs" | wc -l) files)"
[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/#   /'
done_testing

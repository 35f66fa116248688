#!/bin/sh
# No dead exports (docs/design.md, "Conventions"): every global function that an object file
# of src/libgpt3d.a (or of the CUDA kernels' library, where it is built) defines is called
# from another object file: of the library, of src/main.o, or of a test program.  One that
# only its own file calls is static; one that nothing calls is gone.  nm over the object
# files of the build tree (make check has built the test programs first).
# (top_builddir comes from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -eu

command -v nm >/dev/null 2>&1 || skip_all "no nm (binutils) to read the object files"
cd "$top_builddir"
if [ ! -f src/libgpt3d.a ] || [ ! -f src/main.o ]; then skip_all "no src/libgpt3d.a or src/main.o in $top_builddir"; fi
lib=$({ find src -mindepth 2 -name '*.o'; find kernels -name '*.o'; } 2>/dev/null | sort)
users=$(find src/main.o tests -name '*.o' 2>/dev/null | sort)
# every C test program built (make check builds them before it runs the tests): a test's
# object missing would count its calls out
missing=
for c in "$top_srcdir"/tests/*/test_*.c; do
    t=${c#"$top_srcdir"/}
    t=${t%.c}
    [ -n "$(find "${t%/*}" -name "*${t##*/}.o" 2>/dev/null)" ] || missing="$missing $t"
done
[ -z "$missing" ] || skip_all "test programs not built (make check builds them):$missing"

# defined: "OBJECT SYMBOL" for each global function a library object defines;
# used: "OBJECT SYMBOL" for each symbol an object leaves undefined
# shellcheck disable=SC2086  # file names without blanks
# (C symbols only: the CUDA kernels' C++ symbols, their __global__ kernels and the host stubs
# nvcc makes for them, are the launchers' own; the kernels' interface is extern "C")
defined=$(for o in $lib; do
    nm -g --defined-only "$o" | awk -v o="$o" '$2 == "T" && $3 !~ /^_Z/ && $3 != "main" { print o, $3 }'
done)
# shellcheck disable=SC2086  # file names without blanks
used=$(for o in $lib $users; do nm -u "$o" | awk -v o="$o" '{ print o, $NF }'; done)
ndef=$(printf '%s\n' "$defined" | sed '/^$/d' | wc -l)
dead=$({
    printf '%s\n' "$defined" | sed '/^$/d' | sed 's/^/D /'
    printf '%s\n' "$used" | sed '/^$/d' | sed 's/^/U /'
} | awk '
    $1 == "D" { def[$3] = $2; next }
    $1 == "U" { users[$3] = users[$3] " " $2 }
    END {
        for (s in def) {
            n = split(users[s], u, " "); other = 0
            for (i = 1; i <= n; i++) if (u[i] != def[s]) other = 1
            if (!other) print def[s] ": " s
        }
    }' | sort)
[ "$ndef" -gt 100 ] || skip_all "only $ndef global functions found: the library is not built"
is "$dead" "" "every one of the $ndef global functions of the libraries is called from another object file"
[ -z "$dead" ] || printf '%s\n' "$dead" | sed 's/^/#   /'
done_testing

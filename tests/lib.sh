# Shared helpers for gpt3d's shell tests (TAP output).  Source it:
#   . "$top_srcdir/tests/lib.sh"
# Then: ok COND-CMD... ; is GOT WANT WHAT ; like TEXT REGEX WHAT ; done_testing
# Environment from tests/local.mk: GPT3D (the binary), top_srcdir, top_builddir,
# PYTHON_REF, NODE, MPIRUN, GPT3D_TEST_DATA.
set -u
_tap_n=0
_tap_failed=0

tap_result() {  # tap_result STATUS DESCRIPTION
    _tap_n=$((_tap_n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $_tap_n - $2"
    else
        echo "not ok $_tap_n - $2"
        _tap_failed=$((_tap_failed + 1))
    fi
}

is() {  # is GOT WANT DESCRIPTION
    if [ "$1" = "$2" ]; then tap_result 0 "$3"; else
        tap_result 1 "$3"; printf '#   got:  %s\n#   want: %s\n' "$1" "$2"; fi
}

like() {  # like TEXT EXTENDED-REGEX DESCRIPTION
    if printf '%s' "$1" | grep -Eq -- "$2"; then tap_result 0 "$3"; else
        tap_result 1 "$3"; printf '%s\n' "$1" | head -20 | sed 's/^/#   /'; echo "#   wanted /$2/"; fi
}

skip() {  # skip REASON
    _tap_n=$((_tap_n + 1)); echo "ok $_tap_n # SKIP $1"
}

skip_all() {  # skip_all REASON
    echo "1..0 # SKIP $1"; exit 0
}

diag() { printf '# %s\n' "$*"; }

done_testing() {
    echo "1..$_tap_n"
    [ "$_tap_failed" -eq 0 ]
}

# run CMD...: run a command, capture its stdout+stderr in $out and status in $rc.
run() {
    set +e
    out=$("$@" 2>&1)
    rc=$?
    set -e
}

# g3_have_mpirun: true when $MPIRUN (from configure) names a runnable mpirun.
# As a side effect, lets Open MPI's mpirun run as root (containers, CI), which it
# refuses otherwise.
g3_have_mpirun() {
    if [ "$(id -u)" = 0 ]; then
        OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
    fi
    [ -n "${MPIRUN:-}" ] && command -v "$MPIRUN" >/dev/null 2>&1
}

# g3_need_mpirun: skip the whole test when there is no mpirun (see g3_have_mpirun).
g3_need_mpirun() {
    g3_have_mpirun || skip_all "mpirun not found (configure: install Debian's openmpi-bin)"
}

# g3_mpirun ARGS...: $MPIRUN with the options every test uses (more ranks than
# cores: --oversubscribe).
g3_mpirun() {
    "$MPIRUN" --oversubscribe "$@"
}

# g3_tmpdir: set $TMPD to a private scratch directory, removed on exit.
# (Call it directly, not in $(...): the trap must live in the test's shell.)
g3_tmpdir() {
    TMPD=$(mktemp -d "${TMPDIR:-/tmp}/gpt3d-test.XXXXXX")
    trap 'rm -rf "$TMPD"' EXIT
}

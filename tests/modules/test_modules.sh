#!/bin/bash
# The modulefiles: install gpt3d into a scratch prefix, then load the Lmod
# (Lua) and the Tcl modulefile with Debian's Lmod, and the Tcl one with
# Environment Modules when it is installed, and run "gpt3d --version".
# (GPT3D, top_srcdir and top_builddir come from make check.)
# shellcheck disable=SC2154
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -eo pipefail

# Lmod's shell setup: Debian's path first, then whatever LMOD_PKG names.
lmod_init=
for f in /usr/share/lmod/lmod/init/bash ${LMOD_PKG:+"$LMOD_PKG/init/bash"}; do
    if [ -r "$f" ]; then lmod_init=$f; break; fi
done
[ -n "$lmod_init" ] || skip_all "Lmod is not installed (apt-get install lmod)"
command -v make >/dev/null || skip_all "make is not on PATH"

g3_tmpdir
version=$("$GPT3D" --version | sed -n '1s/^gpt3d //p')
configured_prefix=$(sed -n 's/^prefix = //p' "$top_builddir/Makefile")
# Make the nested make a plain one (no jobserver from the make running us).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
# Keep Lmod's caches and user files out of the real home directory.
export HOME="$TMPD/home"
mkdir -p "$HOME"
unset MODULEPATH LOADEDMODULES _LMFILES_ GPT3D_ROOT MANPATH

inst="$TMPD/inst"
run make -C "$top_builddir" install prefix="$inst"
is "$rc" 0 "make install prefix=DIR works"
[ "$rc" -eq 0 ] || diag "$out"
lua_file="$inst/share/modulefiles/gpt3d/$version.lua"
tcl_file="$inst/share/modulefiles-tcl/gpt3d/$version"
is "$( [ -f "$lua_file" ] && echo yes)" yes "the Lmod modulefile is installed as share/modulefiles/gpt3d/$version.lua"
is "$( [ -f "$tcl_file" ] && echo yes)" yes "the Tcl modulefile is installed as share/modulefiles-tcl/gpt3d/$version"
is "$(head -1 "$tcl_file")" "#%Module1.0" "the Tcl modulefile starts with the magic cookie"
is "$(cat "$lua_file" "$tcl_file" | grep -c '@[a-zA-Z_]*@')" 0 \
    "no @placeholder@ is left in either modulefile"

# load_with SETUP MODULEPATH-DIR: in a fresh bash, run the shell code SETUP
# (which defines "module"), load gpt3d and print what a user would see, one
# "key=value" line each.
load_with() {
    bash -c '
        set -u
        if [ -n "$3" ]; then export MANPATH=$3; fi
        eval "$1" >/dev/null 2>&1
        module use "$2"
        echo "avail=$(module -t avail gpt3d 2>&1 | grep gpt3d | tr "\n" " ")"
        module load gpt3d 2>&1 || echo "load failed"
        echo "which=$(command -v gpt3d)"
        echo "version=$(gpt3d --version 2>&1 | head -1)"
        echo "submit=$(gpt3d-submit --version 2>&1)"
        echo "root=${GPT3D_ROOT:-}"
        echo "manpath=${MANPATH:-}"
        echo "man_ls=$(man -w ls 2>&1 | head -n 1)"
        echo "man_submit=$(man -w gpt3d-submit 2>&1 | head -n 1)"
        echo "man_sbatch=$(man -w 5 gpt3d-train.sbatch 2>&1 | head -n 1)"
        echo "whatis=$(module whatis gpt3d 2>&1 | tr "\n" " ")"
        echo "help=$(module help gpt3d 2>&1 | tr "\n" " ")"
        module unload gpt3d 2>&1
        echo "after_unload=$(command -v gpt3d || echo none) root=${GPT3D_ROOT:-unset}"
        echo "manpath_after=${MANPATH-unset}"
    ' load_with "$1" "$2" "${3:-}" 2>&1
}
field() { printf '%s\n' "$1" | sed -n "s/^$2=//p"; }

check_load() {  # check_load LABEL OUTPUT
    local label=$1 o=$2
    like "$(field "$o" avail)" "gpt3d/$version" "$label: module avail lists gpt3d/$version"
    is "$(field "$o" which)" "$inst/bin/gpt3d" "$label: module load gpt3d puts the installed gpt3d first on PATH"
    is "$(field "$o" version)" "gpt3d $version" "$label: gpt3d --version runs after module load"
    is "$(field "$o" submit)" "gpt3d-submit (gpt3d) $version" "$label: gpt3d-submit is on PATH too"
    is "$(field "$o" root)" "$inst" "$label: GPT3D_ROOT is the install prefix"
    like "$(field "$o" manpath)" "^$inst/share/man(:|$)" "$label: MANPATH starts with the manual directory"
    like "$(field "$o" whatis)" "Version: $version" "$label: module whatis gives the version"
    like "$(field "$o" help)" "GPT3D_ROOT +$inst" "$label: module help names the prefix"
    is "$(field "$o" after_unload)" "none root=unset" "$label: module unload removes gpt3d and GPT3D_ROOT"
    # MANPATH unset means the system's man path: the module keeps it (a
    # trailing empty entry) and leaves MANPATH unset again on unload.
    is "$(field "$o" manpath)" "$inst/share/man::" "$label: with MANPATH unset, MANPATH ends in ':' (the system's man path is kept)"
    is "$(field "$o" manpath_after)" unset "$label: module unload leaves MANPATH unset again"
    if command -v man >/dev/null && [ -n "$(man -w ls 2>/dev/null)" ]; then
        like "$(field "$o" man_ls)" "/ls\.1" "$label: man ls still works with the module loaded"
        is "$(field "$o" man_submit)" "$inst/share/man/man1/gpt3d-submit.1" "$label: man gpt3d-submit finds the installed page"
        is "$(field "$o" man_sbatch)" "$inst/share/man/man5/gpt3d-train.sbatch.5" "$label: man 5 gpt3d-train.sbatch finds the site settings page"
    else
        skip "man or the ls manual page is not installed: the man lookups are not checked"
        skip "man is not installed"
        skip "man is not installed"
    fi
}

# check_set_manpath LABEL OUTPUT: a MANPATH the user set is kept as it was.
check_set_manpath() {
    is "$(field "$2" manpath)" "$inst/share/man:/nonexistent/man" "$1: a MANPATH the user set gets no empty entry added"
    is "$(field "$2" manpath_after)" "/nonexistent/man" "$1: module unload restores it"
}

lmod_setup=". '$lmod_init'"
out=$(load_with "$lmod_setup" "$inst/share/modulefiles")
check_load "Lmod, Lua modulefile" "$out"
out=$(load_with "$lmod_setup" "$inst/share/modulefiles-tcl")
check_load "Lmod, Tcl modulefile" "$out"
check_set_manpath "Lmod, Lua modulefile" "$(load_with "$lmod_setup" "$inst/share/modulefiles" /nonexistent/man)"
check_set_manpath "Lmod, Tcl modulefile" "$(load_with "$lmod_setup" "$inst/share/modulefiles-tcl" /nonexistent/man)"

# Environment Modules (the Tcl implementation), when installed; or name its
# modulecmd.tcl in GPT3D_TEST_MODULECMD_TCL (an unpacked .deb will do).
em_cmd=
for f in ${GPT3D_TEST_MODULECMD_TCL:-} /usr/lib/x86_64-linux-gnu/modulecmd.tcl \
         /usr/lib/modulecmd.tcl /usr/share/Modules/libexec/modulecmd.tcl; do
    if [ -r "$f" ]; then em_cmd=$f; break; fi
done
if [ -n "$em_cmd" ] && command -v tclsh >/dev/null; then
    em_setup="module() { eval \"\$(tclsh '$em_cmd' bash \"\$@\")\"; }"
    out=$(load_with "$em_setup" "$inst/share/modulefiles-tcl")
    check_load "Environment Modules, Tcl modulefile" "$out"
    check_set_manpath "Environment Modules, Tcl modulefile" "$(load_with "$em_setup" "$inst/share/modulefiles-tcl" /nonexistent/man)"
else
    skip "Environment Modules is not installed (apt-get install environment-modules); the Tcl modulefile was loaded with Lmod only"
fi

# The installed gpt3d-submit finds the installed job script and gpt3d (whose train --check,
# run before anything is created, needs the built-in corpus: the test corpus stands in).
run env GPT3D_DATA_DIR="$GPT3D_TEST_DATA" "$inst/bin/gpt3d-submit" --dry-run "$TMPD/run" -- --train-iters 10
is "$rc" 0 "the installed gpt3d-submit finds its job script under the prefix"
like "$out" "would create run $TMPD/run" "... and would create the run (dry run)"
is "$( [ -f "$inst/share/gpt3d/sbatch/gpt3d-train.sbatch" ] && [ -f "$inst/share/doc/gpt3d/slurm.md" ] && echo yes)" yes \
    "make install puts the job script in share/gpt3d/sbatch and slurm.md in the doc directory"
is "$( [ -x "$inst/share/gpt3d/sbatch/gpt3d-healthcheck" ] && echo yes)" yes \
    "make install puts the health check, executable, beside the job script"

# A staged install (DESTDIR) must name the configured prefix, never the stage.
stage="$TMPD/stage"
run make -C "$top_builddir" install DESTDIR="$stage"
is "$rc" 0 "make install DESTDIR=DIR works"
staged="$stage$configured_prefix/share/modulefiles/gpt3d/$version.lua"
like "$(grep GPT3D_ROOT "$staged" 2>&1)" "setenv\(\"GPT3D_ROOT\", \"$configured_prefix\"\)" \
    "a DESTDIR install writes the configured prefix into the modulefile"
staged_tcl="$stage$configured_prefix/share/modulefiles-tcl/gpt3d/$version"
is "$(cat "$staged" "$staged_tcl" | grep -c "$stage")" 0 \
    "the staging directory appears in neither modulefile"
like "$(grep GPT3D_ROOT "$staged_tcl" 2>&1)" "setenv +GPT3D_ROOT \"$configured_prefix\"" \
    "the Tcl modulefile from a DESTDIR install names the configured prefix"

done_testing

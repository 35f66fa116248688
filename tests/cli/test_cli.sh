#!/bin/sh
# The gpt3d command: version, help, unknown commands and flags, exit codes.
# (top_srcdir, top_builddir, GPT3D come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

run "$GPT3D" --version
is "$rc" 0 "--version exits 0"
like "$out" '^gpt3d [0-9]+\.[0-9]+\.[0-9]+' "--version prints the version"
like "$out" 'features: .*\+hdf5.*\+pmix.*\+ucx' "--version lists the configure features"

run "$GPT3D" help
is "$rc" 0 "help exits 0"
like "$out" 'train ' "help lists train"
like "$out" 'preprocess ' "help lists preprocess"

run "$GPT3D"
is "$rc" 2 "no command is a usage error"

run "$GPT3D" trian
is "$rc" 2 "unknown command exits 2"
like "$out" "did you mean 'train'" "unknown command gets a suggestion"

run "$GPT3D" train --no-such-flag
is "$rc" 2 "train --no-such-flag exits 2"
like "$out" "no-such-flag" "the message names the unknown flag"

run "$GPT3D" help train
is "$rc" 0 "help train exits 0"
like "$out" 'Usage: gpt3d train' "help train shows train's usage"

run "$GPT3D" train --help
is "$rc" 0 "train --help exits 0"
like "$out" '--log-level' "train --help lists the common options"
like "$out" '--run-dir DIR .*default: --save, else gpt3d-run in the directory gpt3d is started from' \
    "train --help says where the default run directory goes"
ignored=no
! grep -qx '/gpt3d-run/' "$top_srcdir/.gitignore" || ignored=yes
is "$ignored" yes "git ignores the default run directory (./gpt3d-run) at the top of the tree"

run "$GPT3D" help nonsense
is "$rc" 2 "help for an unknown command exits 2"

# the knob registry (core/param.h)
run env GPT3D_COMM_SPIN=7 "$GPT3D" help env
is "$rc" 0 "help env exits 0"
like "$out" "GPT3D_FUSED_OPS" "help env lists the environment variables"
like "$out" "GPT3D_DEBUG_STOP_AFTER_ITERATION" "... the test hooks' too"
like "$out" "GPT3D_COMM_SEGMENT_BYTES.*
.*
 +default: 262144" "... with their defaults"
like "$out" "default: 64, or 16 when local ranks outnumber cores; set here: '7'" "... and what a variable is set to"
n=$(printf '%s\n' "$out" | grep -c '^  GPT3D_')
is "$n" "$(grep -c '^    X(' "$top_srcdir/src/core/param.h")" "... one entry per knob declared in core/param.h"

done_testing

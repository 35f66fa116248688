#!/bin/sh
# The house rules that a tool can check (docs/design.md, "Conventions"), over the C, CUDA and
# shell sources of the tree:
#   1. no message split across source lines (tests/style/literals.py --check);
#   2. no C line over 100 columns unless it holds a string literal (a message stays whole);
#   3. shellcheck is clean on every shell script of tests/ and scripts/ and the batch scripts;
#   4. every test script that runs stops on an error (set -e), and a bash one on a failed
#      pipeline (pipefail);
#   5. no GPT3D_* environment variable is read with a bare getenv outside src/core/param.c
#      (the knob registry, core/param.h: one cached, documented accessor per variable);
#   6. every function and file-local type of src/ckpt, src/metrics and core/crc32c.c carries
#      its module's prefix (g3_ckpt_; g3_ev_, g3_tb_ or g3_plot_; g3_crc32c_), static ones too.
# (top_srcdir, top_builddir come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -eu

cd "$top_srcdir"
csrc=$(find src kernels tests -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cc' \) ! -name unicode_tables.c | sort)
[ -n "$csrc" ] || skip_all "no C sources under $top_srcdir"

# 1
if command -v python3 >/dev/null 2>&1; then
    # shellcheck disable=SC2086  # file names without blanks
    run python3 tests/style/literals.py --check $csrc
    is "$rc" 0 "no message is split across source lines ($(echo "$csrc" | wc -l) C and CUDA files)"
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | sed -n '1,20p' | sed 's/^/#   /'
else
    skip "python3 is not installed (scripts/deps.sh test installs it)"
fi

# 2 (characters, not bytes: awk may count the bytes of a UTF-8 character)
if command -v python3 >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    run python3 tests/style/literals.py --long $csrc
    is "$rc" 0 "no C line runs past 100 columns except for a string literal"
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | sed -n '1,20p' | sed 's/^/#   /'
else
    skip "python3 is not installed (scripts/deps.sh test installs it)"
fi

# 3
if command -v shellcheck >/dev/null 2>&1; then
    scripts=$(find tests scripts -type f -name '*.sh' | sort)
    submit=$top_builddir/sbatch/gpt3d-submit
    [ -f "$submit" ] || submit=
    # shellcheck disable=SC2086
    run shellcheck -x -P SCRIPTDIR:sbatch $scripts sbatch/gpt3d-train.sbatch sbatch/gpt3d-healthcheck \
        sbatch/gpt3d-curate.sbatch sbatch/lib/*.sh $submit
    is "$rc" 0 "shellcheck is clean on $(echo "$scripts" | wc -l) scripts and the batch scripts"
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | sed -n '1,30p' | sed 's/^/#   /'
else
    skip "shellcheck is not installed (scripts/deps.sh test installs it)"
fi

# 4
bad=
for f in $(find tests -type f \( -name 'test_*.sh' -o -name 'bench_*.sh' \) | sort); do
    grep -Eq '^[[:space:]]*set -[a-z]*e' "$f" || bad="$bad $f(set -e)"
    # a bash script: its first line, or the line that re-runs a sh-started script under bash
    # shellcheck disable=SC2016  # the text, not its value
    if sed -n 1p "$f" | grep -q bash || grep -Eq '^\[ -n "\$\{BASH_VERSION' "$f"; then
        grep -Eq '^[[:space:]]*set -[a-z]*o pipefail' "$f" || bad="$bad $f(pipefail)"
    fi
done
is "$bad" "" "every test script sets -e, and every bash one pipefail"

# 5
bad=$(grep -rn --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' --include='*.cc' \
    'getenv *( *"GPT3D_' src kernels | grep -v '^src/core/param\.c:' || true)
is "$bad" "" "no bare getenv(\"GPT3D_...\") outside src/core/param.c (core/param.h's accessors)"
[ -z "$bad" ] || printf '%s\n' "$bad" | sed -n '1,20p' | sed 's/^/#   /'

# 6 (a definition or prototype at the start of a line, a typedef's name)
# unprefixed PREFIXES FILE...: the definitions and typedefs of FILE... not named PREFIXES...
# (an extended regular expression's alternatives: "g3_ckpt_|g3_crc32c_")
unprefixed() {
    _p=$1
    shift
    grep -nE '^static [^=(]*[ *][A-Za-z_][A-Za-z0-9_]*\(' "$@" |
        grep -vE "^[^:]*:[0-9]+:static [^=(]*[ *]($_p)[a-z0-9_]*\(" || true
    grep -nE '^(typedef [^;]*[ *]|\} *)[A-Za-z_][A-Za-z0-9_]*;' "$@" |
        grep -vE "^[^:]*:[0-9]+:(typedef [^;]*[ *]|\} *)($_p)[a-z0-9_]*;" || true
}
bad=$({
    unprefixed 'g3_ckpt_' src/ckpt/*.c src/ckpt/*.h
    unprefixed 'g3_crc32c_' src/core/crc32c.c src/core/crc32c.h
    unprefixed 'g3_ev_' src/metrics/events.[ch] src/metrics/query.[ch]
    unprefixed 'g3_tb_' src/metrics/tensorboard.[ch]
    unprefixed 'g3_plot_' src/metrics/plot.[ch]
})
is "$bad" "" "every static function and file-local type of src/ckpt, src/metrics and core/crc32c.c has its module's prefix"
[ -z "$bad" ] || printf '%s\n' "$bad" | sed -n '1,20p' | sed 's/^/#   /'

done_testing

#!/bin/sh
# The house rules that a tool can check (docs/design.md, "Conventions"), over the C, CUDA and
# shell sources of the tree:
#   1. no message split across source lines (tests/style/literals.py --check);
#   2. no C line over 100 columns unless it holds a string literal (a message stays whole);
#   3. shellcheck is clean on every shell script of tests/ and scripts/ and the batch scripts;
#   4. every test script that runs stops on an error (set -e), and a bash one on a failed
#      pipeline (pipefail);
#   5. no GPT3D_* environment variable is read with a bare getenv outside src/core/param.c
#      (the knob registry, core/param.h: one cached, documented accessor per variable), nor
#      through a macro or a variable: outside core/param.c and core/param.h no string literal
#      is a whole GPT3D_* name (a message may name one inside a longer text);
#   6. every static function of a directory of src/ carries one of its module's prefixes
#      (docs/design.md, "Layers": the table below), and every file-local type of src/ a g3_
#      one, so that a name in a backtrace or a grep says where it lives.
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
bad=$(grep -rnE --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' --include='*.cc' \
    '"GPT3D_[A-Z0-9_]*"' src kernels | grep -vE '^src/core/param\.[ch]:' || true)
is "$bad" "" "no \"GPT3D_...\" name as a literal of its own outside src/core/param.[ch] (no getenv through a macro)"
[ -z "$bad" ] || printf '%s\n' "$bad" | sed -n '1,20p' | sed 's/^/#   /'

# 6 (a definition or prototype at the start of a line, a typedef's name).  The prefixes of each
# directory's statics: its layer's in docs/design.md's table; a new directory needs a row.
prefixes='core:g3_(status|log|opts?|rng|clock|timers?|mkdir|fs|param|hook|mem|table|read|bf16|hash|crc32c)_
comm:g3_(comm|ucx|nccl|staged|pmix)_
topo:g3_topo_
backend:g3_(be|backend|cpu|cuda|cudnn)_
model:g3_gpt_
data:g3_(bpe|idx|gptidx|pre|data|json|tokid|sha256|ucs)_
ckpt:g3_(ckpt|crc32c)_
parallel:g3_par_
curate:g3_curate_
infer:g3_(infer|task)_
plan:g3_plan_
search:g3_plan_
train:g3_train_
metrics:g3_(ev|tb|plot)_
cli:g3_(cmd|cli)_'
bad=$(for d in src/*/; do
    d=${d#src/}
    d=${d%/}
    re=$(printf '%s\n' "$prefixes" | sed -n "s/^$d://p")
    if [ -z "$re" ]; then
        echo "src/$d: no prefixes in tests/style/test_style.sh rule 6"
        continue
    fi
    grep -nE '^static [^=(]*[ *][A-Za-z_][A-Za-z0-9_]*\(' "src/$d"/*.c |
        grep -vE "^[^:]*:[0-9]+:static [^=(]*[ *]${re}[a-z0-9_]*\(" || true
done
grep -nE '^(typedef [^;]*[ *]|\} *)[A-Za-z_][A-Za-z0-9_]*;' src/*/*.c src/*/*.h |
    grep -vE '^[^:]*:[0-9]+:(typedef [^;]*[ *]|\} *)g3_[a-z0-9_]*;' || true)
is "$bad" "" "every static function of src/ carries its directory's prefix, every file-local type g3_"
[ -z "$bad" ] || printf '%s\n' "$bad" | sed 's/^/#   /'

done_testing

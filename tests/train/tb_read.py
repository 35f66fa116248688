#!/usr/bin/python3
"""An independent reader of gpt3d's TensorBoard event files (the tests' check of
src/metrics/tensorboard.c): Python's struct, its own CRC-32C and its own protocol buffer decoder,
nothing of gpt3d and no TensorFlow.

  tb_read.py records FILE...          every record's length and data checked against both
                                      masked CRC-32Cs; prints "FILE: N records, ..."; a file
                                      cut inside a record is read up to the cut ("cut at B")
  tb_read.py scalars DIR              "TAG<TAB>STEP<TAB>VALUE" of every scalar of DIR's files,
                                      in file-name order (TensorBoard's)
  tb_read.py compare DIR METRICS      each scalar of DIR at each step equals the value of
                                      METRICS (gpt3d's metrics.jsonl) it was written from

Exit 0 when everything checks, 1 with a message otherwise."""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from crc32c_ref import crc32c  # noqa: E402 (tests/crc32c_ref.py)


def masked(data):
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


class Bad(Exception):
    pass


def read_records(path):
    """RET: (the records' data, the byte offset of a cut last record or None)."""
    with open(path, "rb") as f:
        buf = f.read()
    out, pos = [], 0
    while pos < len(buf):
        if pos + 12 > len(buf):
            return out, pos
        header = buf[pos:pos + 8]
        (n,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", buf[pos + 8:pos + 12])
        if hcrc != masked(header):
            raise Bad("%s: record %d at byte %d: the length's CRC is 0x%08x, not 0x%08x"
                      % (path, len(out), pos, hcrc, masked(header)))
        if pos + 12 + n + 4 > len(buf):
            return out, pos
        data = buf[pos + 12:pos + 12 + n]
        (dcrc,) = struct.unpack("<I", buf[pos + 12 + n:pos + 16 + n])
        if dcrc != masked(data):
            raise Bad("%s: record %d at byte %d: the data's CRC is 0x%08x, not 0x%08x"
                      % (path, len(out), pos, dcrc, masked(data)))
        out.append(data)
        pos += 16 + n
    return out, None


# ---- protocol buffers: the wire format, then Event / Summary / Value -----------------------
def varint(b, i):
    v, shift = 0, 0
    while True:
        if i >= len(b):
            raise Bad("a varint runs past the end of its message")
        x = b[i]
        v |= (x & 0x7F) << shift
        i += 1
        if not x & 0x80:
            return v, i
        shift += 7


def fields(b):
    """Yield (field number, wire type, value): int for 0, bytes for 1, 2 and 5."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(b, i)
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wire == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise Bad("wire type %d of field %d is not one gpt3d writes" % (wire, num))
        if i > len(b):
            raise Bad("field %d runs past the end of its message" % num)
        yield num, wire, v


def event(data):
    """RET: dict wall_time, step, file_version (or None), values [(tag, float)]."""
    ev = {"wall_time": None, "step": 0, "file_version": None, "values": []}
    for num, wire, v in fields(data):
        if num == 1 and wire == 1:
            ev["wall_time"] = struct.unpack("<d", v)[0]
        elif num == 2 and wire == 0:
            ev["step"] = v - (1 << 64) if v >= 1 << 63 else v
        elif num == 3 and wire == 2:
            ev["file_version"] = v.decode()
        elif num == 5 and wire == 2:
            for snum, swire, sv in fields(v):
                if snum != 1 or swire != 2:
                    raise Bad("Summary field %d is not Summary.value" % snum)
                tag, val = None, None
                for vnum, vwire, vv in fields(sv):
                    if vnum == 1 and vwire == 2:
                        tag = vv.decode()
                    elif vnum == 2 and vwire == 5:
                        val = struct.unpack("<f", vv)[0]
                    else:
                        raise Bad("Summary.Value field %d (wire %d) is not tag or simple_value"
                                  % (vnum, vwire))
                if tag is None or val is None:
                    raise Bad("a Summary.Value without tag or simple_value")
                ev["values"].append((tag, val))
        else:
            raise Bad("Event field %d (wire %d) is not one gpt3d writes" % (num, wire))
    if ev["wall_time"] is None:
        raise Bad("an Event without wall_time")
    return ev


def event_files(d):
    names = sorted(n for n in os.listdir(d) if n.startswith("events.out.tfevents."))
    for n in names:
        parts = n.split(".")
        # events.out.tfevents.TIMESTAMP.HOST.PID.N (HOST may hold dots)
        if len(parts) < 7 or len(parts[3]) != 10 or not parts[3].isdigit() \
                or not parts[-1].isdigit() or not parts[-2].isdigit():
            raise Bad("%s: not named events.out.tfevents.TIMESTAMP.HOST.PID.N" % n)
    return [os.path.join(d, n) for n in names]


def read_events(path):
    recs, cut = read_records(path)
    evs = [event(r) for r in recs]
    if not evs or evs[0]["file_version"] != "brain.Event:2":
        raise Bad("%s: the first record is not the file_version brain.Event:2" % path)
    for e in evs[1:]:
        if e["file_version"] is not None or len(e["values"]) != 1:
            raise Bad("%s: a record after the first is not one scalar" % path)
    return evs, cut


def scalars(d):
    """RET: [(tag, step, value, file)] in file order, then record order."""
    out = []
    for p in event_files(d):
        evs, _ = read_events(p)
        for e in evs[1:]:
            tag, val = e["values"][0]
            out.append((tag, e["step"], val, os.path.basename(p)))
    return out


# ---- the comparison with metrics.jsonl ----------------------------------------------------
def expected(metrics):
    """RET: {(tag, step): (value, relative tolerance, absolute tolerance)} from the metrics
    file (a later record of the same iteration, after a resume, replaces an earlier one)."""
    want = {}
    seq, consumed_at = None, {}
    f9 = (2.5e-7, 0.0)             # %.9g then float32
    f6 = (6e-6, 0.0)               # %.6g
    with open(metrics) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    for r in recs:
        ev = r.get("event")
        if ev == "start":
            seq = r["seq_length"]
        elif ev == "train":
            it, c = r["iteration"], r["consumed_samples"]
            consumed_at[it] = c
            tok = c * seq
            for tag, x, v, tol in (
                    ("lm loss", it, r["loss"], f9), ("lm loss vs samples", c, r["loss"], f9),
                    ("lm loss vs tokens", tok, r["loss"], f9),
                    ("learning-rate", it, r["lr"], f9),
                    ("learning-rate vs samples", c, r["lr"], f9),
                    ("batch-size", it, r["global_batch_size"], f9),
                    ("batch-size vs samples", c, r["global_batch_size"], f9),
                    ("grad-norm", it, r["grad_norm"], f9),
                    ("grad-norm vs samples", c, r["grad_norm"], f9),
                    ("consumed-samples", it, c, f9), ("consumed-tokens", it, tok, f9),
                    # %.3f: half a unit of the last place, in the metrics' unit
                    ("iteration-time", it, r["ms_per_iter"] / 1e3, (2.5e-7, 5e-7)),
                    ("tokens-per-sec", it, r["tokens_per_s"], (2.5e-7, 5e-4)),
                    ("throughput", it, r["tflops"], f6), ("mfu", it, r["mfu"], f6)):
                want[(tag, x)] = (v,) + tol
        elif ev == "eval" and r.get("split") == "valid" and r.get("loss") is not None:
            it = r["iteration"]
            c = consumed_at.get(it)
            pairs = [("lm loss validation", it, r["loss"])]
            if r.get("ppl") is not None:
                pairs.append(("lm loss validation ppl", it, r["ppl"]))
            if c is not None:
                pairs += [("lm loss validation vs samples", c, r["loss"]),
                          ("lm loss validation vs tokens", c * seq, r["loss"])]
                if r.get("ppl") is not None:
                    pairs += [("lm loss validation ppl vs samples", c, r["ppl"]),
                              ("lm loss validation ppl vs tokens", c * seq, r["ppl"])]
            for tag, x, v in pairs:
                want[(tag, x)] = (v,) + f9
        elif ev == "timers":
            for name, (_, hi) in r["ms_per_iter"].items():
                want[(name + "-time", r["iteration"])] = (hi / 1e3,) + f6
    return want


def compare(d, metrics):
    want = expected(metrics)
    got = {}
    for tag, step, val, _ in scalars(d):
        got[(tag, step)] = val          # a later file's value wins, as in TensorBoard
    checked, tags = 0, set()
    for (tag, step), val in sorted(got.items()):
        if tag.startswith("mem-"):      # no metrics counterpart: a positive byte count
            if not val > 0:
                raise Bad("%s at step %d is %r, not a positive byte count" % (tag, step, val))
            tags.add(tag)
            continue
        if (tag, step) not in want:
            raise Bad("%s at step %d: the metrics file has no such value" % (tag, step))
        v, rel, ab = want[(tag, step)]
        if abs(val - v) > rel * abs(v) + ab:
            raise Bad("%s at step %d is %.9g in the events, %.9g in the metrics file"
                      % (tag, step, val, v))
        checked += 1
        tags.add(tag)
    print("%d scalars of %d tags equal to the metrics file's values" % (checked, len(tags)))
    for t in sorted(tags):
        print("tag: %s" % t)


def main(argv):
    try:
        if len(argv) >= 2 and argv[0] == "records":
            for p in argv[1:]:
                evs, cut = read_events(p)
                print("%s: %d records, both CRCs of each right%s"
                      % (os.path.basename(p), len(evs),
                         "" if cut is None else ", cut at byte %d" % cut))
        elif len(argv) == 2 and argv[0] == "scalars":
            for tag, step, val, _ in scalars(argv[1]):
                print("%s\t%d\t%.9g" % (tag, step, val))
        elif len(argv) == 3 and argv[0] == "compare":
            compare(argv[1], argv[2])
        else:
            sys.stderr.write(__doc__)
            return 2
    except (Bad, OSError, ValueError, KeyError, struct.error) as e:
        print("tb_read.py: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

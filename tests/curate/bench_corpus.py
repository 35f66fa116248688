#!/usr/bin/python3
"""Corpora and the Python reference for tests/curate/bench_curate.sh (standard library only).

  bench_corpus.py gen DIR MB SHARDS     about MB megabytes of JSON lines in SHARDS shards:
                                        English-like documents of 100..1000 words (a vocabulary
                                        of 50000 words, stop words between), 10 % of them near
                                        or exact copies of others; DIR/list.txt lists them
  bench_corpus.py gen-tiny DIR NDOCS    NDOCS documents of 10..30 words in one shard (lsh memory)
  bench_corpus.py pyminhash FILE [K]    a MinHash of every document of FILE in pure Python, the
                                        way Megatron-LM's tools/openwebtext/find_duplicates.py
                                        runs it per document (word 5-gram shingles, K
                                        permutations (a x + b) mod (2^61 - 1) of a 64-bit shingle
                                        hash, min per permutation); prints MB, seconds, MB/s
"""
import hashlib
import json
import os
import random
import re
import sys
import time

STOP = "the of and to in that with have be for on at by it was as from this which are".split()


def gen(d, mb, nshards):
    rng = random.Random(2026)
    voc = ["".join(rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiou") for _ in range(rng.randint(1, 4)))
           for _ in range(50000)]
    os.makedirs(d, exist_ok=True)
    paths = ["%s/bench-%03d.jsonl" % (d, s) for s in range(nshards)]
    files = [open(p, "w") for p in paths]
    target = mb * 1000 * 1000
    written = 0
    i = 0
    recent = []
    while written < target:
        if recent and rng.random() < 0.1:
            w = rng.choice(recent).split(" ")
            for _ in range(rng.randint(0, 6)):
                w[rng.randrange(len(w))] = rng.choice(voc)
            text = " ".join(w)
        else:
            n = rng.randint(100, 1000)
            text = " ".join(rng.choice(STOP) if rng.random() < 0.25 else rng.choice(voc) for _ in range(n))
            recent.append(text)
            if len(recent) > 200:
                recent.pop(0)
        line = json.dumps({"id": i, "text": text}) + "\n"
        files[i % nshards].write(line)
        written += len(line)
        i += 1
    for f in files:
        f.close()
    with open(os.path.join(d, "list.txt"), "w") as f:
        f.write("\n".join(paths) + "\n")
    print("%d documents, %.1f MB" % (i, written / 1e6))


def gen_tiny(d, ndocs):
    """ndocs short documents (10..30 words) in one shard, every 10th a copy: for lsh memory."""
    rng = random.Random(9)
    voc = ["w%d" % i for i in range(100000)]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tiny.jsonl"), "w") as f:
        prev = "start"
        for i in range(ndocs):
            text = prev if i % 10 == 9 else " ".join(rng.choice(voc) for _ in range(rng.randint(10, 30)))
            prev = text
            f.write('{"text": "%s"}\n' % text)
    with open(os.path.join(d, "list.txt"), "w") as f:
        f.write(os.path.join(d, "tiny.jsonl") + "\n")


def pyminhash(path, k=128):
    rng = random.Random(1)
    p = (1 << 61) - 1
    perms = [(rng.randrange(1, p), rng.randrange(0, p)) for _ in range(k)]
    word = re.compile(r"[a-z0-9]+")
    t0 = time.process_time()
    size = 0
    n = 0
    with open(path) as f:
        for line in f:
            size += len(line)
            text = json.loads(line)["text"]
            w = word.findall(text.lower())
            sh = {" ".join(w[i:i + 5]) for i in range(max(1, len(w) - 4))}
            xs = [int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "little") for s in sh]
            sig = [min((a * x + b) % p for x in xs) for a, b in perms]
            n += len(sig) > 0
    dt = time.process_time() - t0
    print("%.2f MB %.2f s %.3f MB/s (%d documents, CPU time)" % (size / 1e6, dt, size / 1e6 / dt, n))


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "gen-tiny":
        gen_tiny(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "pyminhash":
        pyminhash(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 128)
    else:
        sys.exit("unknown command " + sys.argv[1])

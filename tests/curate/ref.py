#!/usr/bin/python3
"""Reference side of the gpt3d curate tests (standard library only).

  ref.py gen-dedup DIR [--docs N] [--shards S]   synthetic corpus with planted near-duplicates
  ref.py check-dedup DIR MH_DIR DUPLICATES.TSV   exact Jaccard over all pairs vs what lsh removed
  ref.py check-verified DIR DUPLICATES.TSV J     lsh --verify exact: no removed document below J
  ref.py gen-decon DIR                           corpus + task file with planted 13-grams
  ref.py decon DIR OUT                           the expected decontaminate output (reference)
  ref.py check-decon DIR OUT_DIR                 no rare task 13-gram left; pieces are parts

Words and shingles are those of gpt3d curate (docs/curation.md): lower-cased runs of letters
and digits (the corpora here are ASCII), shingles of 5 consecutive words (a document with fewer
words is one shingle).  Pairs that share no shingle have Jaccard 0, so the exact all-pairs
Jaccard is computed over the pairs that an inverted index of shingles finds.
"""
import json
import math
import os
import random
import re
import struct
import sys

WORD = re.compile(r"[a-z0-9]+")


def words(text):
    return WORD.findall(text.lower())


def shingles(text, n=5):
    w = words(text)
    if not w:
        return set()
    if len(w) < n:
        return {tuple(w)}
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def vocab(rng, size):
    out = set()
    while len(out) < size:
        out.add("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))))
    return sorted(out)


# ---- deduplication ---------------------------------------------------------------------------

def gen_dedup(d, ndocs=3000, nshards=8):
    """Base documents of random words, and variants of some of them with a share of their words
    replaced (0.5 % .. 12 %: Jaccard from about 0.97 down to 0.5), exact copies, and copies that
    differ in white space only.  Written in random order over nshards shards."""
    rng = random.Random(31)
    v = vocab(rng, 20000)
    docs = []
    nbase = int(ndocs * 0.75)
    for i in range(nbase):
        n = rng.randint(120, 400)
        docs.append(" ".join(rng.choice(v) for _ in range(n)))
    rates = [0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.12]
    while len(docs) < ndocs:
        base = docs[rng.randrange(nbase)]
        kind = rng.random()
        if kind < 0.08:
            docs.append(base)
        elif kind < 0.12:
            docs.append("  " + base.replace(" ", "\n ", 3) + "\t")
        else:
            w = base.split(" ")
            rate = rng.choice(rates)
            for k in range(len(w)):
                if rng.random() < rate:
                    w[k] = rng.choice(v)
            docs.append(" ".join(w))
    rng.shuffle(docs)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "list.txt"), "w") as lst:
        for s in range(nshards):
            path = os.path.join(d, "in-%d.jsonl" % s)
            lst.write(path + "\n")
            with open(path, "w") as f:
                for i in range(s, len(docs), nshards):
                    f.write(json.dumps({"id": "doc%05d" % i, "text": docs[i]}) + "\n")


def read_shards(d):
    out = []   # (shard, line, text)
    with open(os.path.join(d, "list.txt")) as lst:
        paths = [p.strip() for p in lst if p.strip()]
    for s, p in enumerate(paths):
        with open(p) as f:
            for ln, line in enumerate(f, 1):
                if line.strip():
                    out.append((s, ln, json.loads(line)["text"]))
    return out


def all_pairs(sets):
    """Exact Jaccard of every pair that shares a shingle: {(i, j): J} with i < j."""
    index = {}
    for i, s in enumerate(sets):
        for sh in s:
            index.setdefault(sh, []).append(i)
    cand = set()
    for lst in index.values():
        if len(lst) > 1:
            for a in range(len(lst)):
                for b in range(a + 1, len(lst)):
                    cand.add((lst[a], lst[b]))
    out = {}
    for i, j in cand:
        inter = len(sets[i] & sets[j])
        out[(i, j)] = inter / (len(sets[i]) + len(sets[j]) - inter)
    return out


def read_mh(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, ver, k, ngram, lower, seed, ndocs = struct.unpack_from("<8sIIIIQQ", data, 0)
    assert magic == b"G3CURMH\0" and ver == 1, path
    rsize = 32 + 4 * k
    sigs = []
    for i in range(ndocs):
        off = 64 + i * rsize
        sigs.append(struct.unpack_from("<%dI" % k, data, off + 32))
    return k, sigs


def dedup_outcome(d, tsv):
    """The documents of the shards in d, the exact Jaccard of every candidate pair, and what
    the removal list tsv removed: {removed doc index: index of the doc it was removed for}."""
    docs = read_shards(d)
    sets = [shingles(t) for _, _, t in docs]
    pos = {(s, ln): i for i, (s, ln, _) in enumerate(docs)}
    pairs = all_pairs(sets)
    removed = {}
    with open(tsv) as f:
        for line in f:
            if line.startswith("#"):
                continue
            s, ln, kind, ks, kl = line.split()
            removed[pos[(int(s), int(ln))]] = pos[(int(ks), int(kl))]
    return docs, pairs, removed


def recall_high(pairs, removed):
    """The pairs above 0.85, how many of them are caught (not both documents survive), and
    the recall."""
    high = [(i, j) for (i, j), jac in pairs.items() if jac > 0.85]
    caught = sum(1 for i, j in high if i in removed or j in removed)
    return high, caught, caught / len(high) if high else 1.0


def best_in_component(pairs, removed):
    """(r, best) for every removed document r: its best exact Jaccard with any other member
    of its component (the kept one and the others removed for it)."""
    comp = {}
    for r, k in removed.items():
        comp.setdefault(k, [k]).append(r)
    for members in comp.values():
        for r in members:
            if r not in removed:
                continue
            yield r, max((pairs.get((min(r, o), max(r, o)), 0.0) for o in members if o != r), default=0.0)


def check_dedup(d, mh_dir, tsv):
    docs, pairs, removed = dedup_outcome(d, tsv)
    failed = 0

    # Recall: a pair above 0.85 is caught when not both of its documents survive.
    high, caught, recall = recall_high(pairs, removed)
    print("# pairs with exact Jaccard > 0.85: %d, caught %d, recall %.4f" % (len(high), caught, recall))
    if len(high) < 100 or recall < 0.95:
        print("recall FAILED (want >= 0.95 over >= 100 pairs)")
        failed = 1

    # Precision: a removed document whose best exact Jaccard with any other member of its
    # component (the kept one and the others removed for it) is below 0.7 was removed wrongly.
    low = sum(1 for _, best in best_in_component(pairs, removed) if best < 0.7)
    share = low / len(removed) if removed else 0.0
    print("# removed %d documents, %d with best Jaccard in their component < 0.7: %.4f" % (len(removed), low, share))
    if share > 0.05:
        print("precision FAILED (want <= 0.05)")
        failed = 1

    # The MinHash estimate against the exact Jaccard: z = (est - J) / sqrt(J (1 - J) / K).
    paths = sorted(p for p in os.listdir(mh_dir) if p.endswith(".mh"))
    sigs = []
    k = 0
    for p in paths:
        k, s = read_mh(os.path.join(mh_dir, p))
        sigs.extend(s)
    assert len(sigs) == len(docs), (len(sigs), len(docs))
    zs = []
    for (i, j), jac in pairs.items():
        if jac < 0.3 or jac > 0.99:
            continue
        est = sum(1 for a, b in zip(sigs[i], sigs[j]) if a == b) / k
        zs.append((est - jac) / math.sqrt(jac * (1 - jac) / k))
    out3 = sum(1 for z in zs if abs(z) > 3)
    mean = sum(zs) / len(zs)
    var = sum((z - mean) ** 2 for z in zs) / len(zs)
    print("# MinHash estimate over %d pairs with 0.3 <= J <= 0.99: mean z %.3f, sd of z %.3f, |z| > 3: %d" % (len(zs), mean, math.sqrt(var), out3))
    if len(zs) < 100 or abs(mean) > 0.25 or not (0.7 < math.sqrt(var) < 1.3) or out3 > 0.01 * len(zs) + 1:
        print("estimate FAILED (want mean z within 0.25 of 0, sd of z 0.7..1.3, |z| > 3 for <= 1 %)")
        failed = 1
    return failed


def check_verified(d, tsv, threshold):
    """lsh --verify exact: every removed document has an exact Jaccard of at least threshold
    with some other member of its component (the edges of a component are verified pairs)."""
    docs, pairs, removed = dedup_outcome(d, tsv)
    below = [(docs[r][0], docs[r][1], best) for r, best in best_in_component(pairs, removed)
             if best < threshold - 1e-9]
    high, caught, recall = recall_high(pairs, removed)
    print("# removed %d documents, %d of them with best exact Jaccard in their component < %g%s"
          % (len(removed), len(below), threshold,
             "".join(" (shard %d line %d: %.4f)" % b for b in below[:5])))
    print("# pairs with exact Jaccard > 0.85: %d, caught %d, recall %.4f" % (len(high), caught, recall))
    failed = 0
    if len(removed) < 100 or below:
        print("verified FAILED (want >= 100 removed, none below the threshold)")
        failed = 1
    if len(high) < 100 or recall < 0.95:
        print("recall FAILED (want >= 0.95 over >= 100 pairs)")
        failed = 1
    return failed


# ---- decontamination --------------------------------------------------------------------------

FILLER = ("the of and to in that with have be for on at by it was as from this which are "
          "or his her their land house river field stone bread water light "
          "morning evening people city").split()


def filler(rng, n):
    return " ".join(rng.choice(FILLER) + ("," if rng.random() < 0.1 else "") for _ in range(n))


def gen_decon(d):
    """Task items (JSON lines) and training documents in which 13-grams of the items are
    planted: once in the middle (one split), near the start (the short first piece dropped),
    twice overlapping (one cut), 11 times (dropped: more than 10 splits), 10 times (kept in
    11 pieces), in punctuated and
    upper-cased form, and one item's 13-gram in 12 documents (frequent: not contamination)."""
    rng = random.Random(7)
    os.makedirs(d, exist_ok=True)
    items = []
    for i in range(6):
        items.append(" ".join("task%dword%d" % (i, k) for k in range(20)))
    with open(os.path.join(d, "tasks.jsonl"), "w") as f:
        for i, t in enumerate(items):
            f.write(json.dumps({"id": "q%d" % i, "text": "Question: " + t + "?"}) + "\n")
    docs = []

    def gram(i, start=0, n=13):
        return " ".join(items[i].split()[start:start + n])

    docs.append(filler(rng, 200))                                             # clean
    docs.append(filler(rng, 150) + " " + gram(0) + " " + filler(rng, 150))     # one split
    docs.append(filler(rng, 70) + " " + gram(1, 2) + " " + filler(rng, 200))  # start piece short
    docs.append(filler(rng, 100) + " " + gram(2, 0, 15) + " " + filler(rng, 120))   # overlapping
    docs.append(" ".join(filler(rng, 150) + " " + gram(3) for _ in range(11)) + " " + filler(rng, 150))
    docs.append(" ".join(filler(rng, 150) + " " + gram(3, 1) for _ in range(10)) + " " + filler(rng, 150))
    docs.append(filler(rng, 120) + " " + gram(4).upper().replace(" ", ", ") + ". " + filler(rng, 120))
    for _ in range(12):
        docs.append(filler(rng, 80) + " " + gram(5) + " " + filler(rng, 80))
    docs.append(filler(rng, 150) + " " + gram(0)[:-3] + " " + filler(rng, 150))   # 12 words + a part: no match
    with open(os.path.join(d, "list.txt"), "w") as lst:
        for s in range(2):
            path = os.path.join(d, "in-%d.jsonl" % s)
            lst.write(path + "\n")
            with open(path, "w") as f:
                for i in range(s, len(docs), 2):
                    f.write(json.dumps({"id": i, "text": docs[i], "meta": {"k": [1, 2]}}) + "\n")


def decon_expected(d, n=13, margin=200, min_piece=200, max_splits=10, frequent=10):
    """The decontaminate output the rules in docs/curation.md give, shard by shard."""
    grams = set()
    with open(os.path.join(d, "tasks.jsonl")) as f:
        for line in f:
            w = words(json.loads(line)["text"])
            for i in range(len(w) - n + 1):
                grams.add(tuple(w[i:i + n]))
    with open(os.path.join(d, "list.txt")) as lst:
        paths = [p.strip() for p in lst if p.strip()]
    counts = {}
    for p in paths:
        with open(p) as f:
            for line in f:
                w = words(json.loads(line)["text"])
                for g in {tuple(w[i:i + n]) for i in range(len(w) - n + 1)} & grams:
                    counts[g] = counts.get(g, 0) + 1
    out = []
    for p in paths:
        lines = []
        with open(p) as f:
            for line in f:
                obj = json.loads(line)
                t = obj["text"]
                ms = [(m.start(), m.end()) for m in re.finditer(r"[A-Za-z0-9]+", t)]
                cuts = []
                for i in range(len(ms) - n + 1):
                    g = tuple(t[a:b].lower() for a, b in ms[i:i + n])
                    if g not in grams or counts.get(g, 0) >= frequent:
                        continue
                    a, b = max(0, ms[i][0] - margin), min(len(t), ms[i + n - 1][1] + margin)
                    if cuts and a <= cuts[-1][1]:
                        cuts[-1][1] = max(cuts[-1][1], b)
                    else:
                        cuts.append([a, b])
                if not cuts:
                    lines.append(line.rstrip("\n"))
                    continue
                if len(cuts) > max_splits:
                    continue
                bounds = [0] + [x for c in cuts for x in c] + [len(t)]
                for k in range(0, len(bounds), 2):
                    piece = t[bounds[k]:bounds[k + 1]]
                    if len(piece) >= min_piece:
                        o = dict(obj)
                        o["text"] = piece
                        lines.append(json.dumps(o, ensure_ascii=False))
        out.append(lines)
    return out


def check_decon(d, out_dir):
    """No rare task 13-gram is left in the output, and every piece is a part of its input."""
    n = 13
    grams = set()
    with open(os.path.join(d, "tasks.jsonl")) as f:
        for line in f:
            w = words(json.loads(line)["text"])
            grams.update(tuple(w[i:i + n]) for i in range(len(w) - n + 1))
    with open(os.path.join(d, "list.txt")) as lst:
        paths = [p.strip() for p in lst if p.strip()]
    counts = {}
    inputs = {}
    for p in paths:
        with open(p) as f:
            for line in f:
                obj = json.loads(line)
                inputs[obj["id"]] = obj["text"]
                w = words(obj["text"])
                for g in {tuple(w[i:i + n]) for i in range(len(w) - n + 1)} & grams:
                    counts[g] = counts.get(g, 0) + 1
    bad = 0
    for s in range(len(paths)):
        with open(os.path.join(out_dir, "shard-%05d.jsonl" % s)) as f:
            for line in f:
                obj = json.loads(line)
                w = words(obj["text"])
                left = [g for g in (tuple(w[i:i + n]) for i in range(len(w) - n + 1))
                        if g in grams and counts[g] < 10]
                if left or obj["text"] not in inputs[obj["id"]]:
                    print("document %s: %d task 13-grams left, piece of its input: %s" % (obj["id"], len(left), obj["text"] in inputs[obj["id"]]))
                    bad = 1
    return bad


def main():
    cmd = sys.argv[1]
    if cmd == "gen-dedup":
        args = sys.argv[2:]
        ndocs = int(args[args.index("--docs") + 1]) if "--docs" in args else 3000
        nshards = int(args[args.index("--shards") + 1]) if "--shards" in args else 8
        gen_dedup(args[0], ndocs, nshards)
    elif cmd == "check-dedup":
        sys.exit(check_dedup(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif cmd == "check-verified":
        sys.exit(check_verified(sys.argv[2], sys.argv[3], float(sys.argv[4])))
    elif cmd == "gen-decon":
        gen_decon(sys.argv[2])
    elif cmd == "check-decon":
        sys.exit(check_decon(sys.argv[2], sys.argv[3]))
    elif cmd == "decon":
        for s, lines in enumerate(decon_expected(sys.argv[2])):
            with open(os.path.join(sys.argv[3], "expected-%d.jsonl" % s), "w") as f:
                for line in lines:
                    f.write(line + "\n")
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()

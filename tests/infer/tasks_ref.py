"""PyTorch reference for gpt3d eval --task (run by tests/infer/test_eval_tasks.sh).

  tasks_ref.py make DIR
      writes synthetic task files in the published formats (>= 200 items each):
      lambada.jsonl, wiki.test.tokens, mc.jsonl (full and partial items), hellaswag.jsonl,
      valid.jsonl + valid-labels.lst (PiQA), winogrande.jsonl, and the bad files.
  tasks_ref.py kjv KJV.txt DIR
      the KJV sanity set: DIR/train.txt (the first 90% of the verses) and DIR/kjv_mc.jsonl,
      400 items from the held-out verses: verse i, a new line and the next verse up to a
      cut inside one of its words; the choices are the rest of that word (true) and three
      fragments of the same length cut from words of held-out verses drawn at random, with
      "target_delimiter": "" (the word goes on).
  tasks_ref.py check INDEX.h5 VOCAB MERGES METRICS ROWS STRIDE KIND:FILE...
      rebuilds every task's rows on its own (GPT-2 BPE, the harness's request encoding,
      Megatron's LAMBADA split, WikiText detokenizer and windows, the published formats'
      conversions), checks that they are the token ids gpt3d scored (ROWS.I.jsonl, from
      --debug-task-rows), scores each row with the training tests' PyTorch GPT read from the
      checkpoint through h5py (log-probabilities within 1e-4 relative, the same argmax flags)
      and computes every metric as Megatron and the lm-evaluation-harness define it, against
      the values gpt3d wrote to METRICS.  Prints TAP.
  tasks_ref.py same VOCAB MERGES T STRIDE METRICS_A ROWS_A METRICS_B ROWS_B KIND:FILE...
      two runs of one checkpoint (one rank and a parallel layout): the same rows within 1e-4,
      and accuracies that differ only on near-ties; prints "same" or what differs.
  tasks_ref.py fewshot INDEX.h5 METRICS ROWS K KIND:FILE...
      few-shot rows: the log-probabilities of the ids gpt3d scored, and every untruncated
      prompt made of K solved examples of other items, each followed by a blank line.
"""
import json
import math
import os
import random
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))

REL = 1e-4
WORDS = ("light good darkness earth heaven beginning evening morning day God meek prophet "
         "form water land night seed fruit tree grass sea fish fowl beast man woman").split()


# ---- synthetic files ------------------------------------------------------------------------

def make(d):
    rnd = random.Random(7)
    verses = ["And God said, Let there be light: and there was light",
              "In the beginning God created the heaven and the earth",
              "And the evening and the morning were the day",
              "And God saw the light, that it was good",
              "Blessed are the meek: for they shall inherit the earth"]

    def sentence(n):
        return " ".join(rnd.choice(WORDS) for _ in range(n))

    seen = set()
    with open(os.path.join(d, "lambada.jsonl"), "w") as f:
        for i in range(220):
            text = None
            while text is None or text.strip() in seen:   # distinct: few-shot draws are told apart
                v = rnd.choice(verses)
                text = (sentence(rnd.randint(1, 5)) + " " + v).strip()
                if i % 3 == 0:
                    text = text.rsplit(" ", 1)[0] + " " + rnd.choice(WORDS)
            seen.add(text.strip())
            if i % 11 == 0:
                text += "  "          # trailing whitespace: split() ignores it
            f.write(json.dumps({"text": text, "id": i}) + "\n")
    lines = []
    for i in range(80):
        if i % 10 == 0:
            lines.append(" = = %s %s = = " % (rnd.choice(WORDS), rnd.choice(WORDS)))
            lines.append(" ")
        w = [rnd.choice(WORDS) for _ in range(rnd.randint(4, 12))]
        extra = rnd.choice([" @-@ ", " @,@ ", " @.@ ", " , ", " ; ", " : ", " 's ", " N ",
                            " \u00b0 ", " ( x y ) ", " \" said \" ", " ' n ' ", " [ b ] "])
        lines.append(" " + " ".join(w[:3]) + extra + " ".join(w[3:]) + " . ")
    with open(os.path.join(d, "wiki.test.tokens"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(d, "mc.jsonl"), "w") as f:
        for i in range(210):
            v = (sentence(2) + " " + rnd.choice(verses)).split(" ")
            cut = rnd.randint(4, len(v) - 2)
            ctx, right = " ".join(v[:cut]), " ".join(v[cut:])
            n = rnd.randint(2, 4)
            choices = [right] + [sentence(len(v) - cut) for _ in range(n - 1)]
            label = rnd.randrange(n)
            choices[0], choices[label] = choices[label], choices[0]
            if i % 5 == 4:   # the partial form
                f.write(json.dumps({"contexts": [ctx, sentence(cut)], "continuation": right,
                                    "label": 0}) + "\n")
            elif i % 9 == 8:   # a delimiter of its own
                f.write(json.dumps({"context": ctx + ",", "choices": choices, "label": label,
                                    "target_delimiter": "\n"}) + "\n")
            else:
                f.write(json.dumps({"context": ctx + ("" if i % 7 else " "),
                                    "choices": choices, "label": label}) + "\n")
    with open(os.path.join(d, "hellaswag.jsonl"), "w") as f:
        for i in range(200):
            v = rnd.choice(verses).split(" ")
            cut = rnd.randint(2, len(v) - 3)
            ends = [" ".join(v[cut + 1:])] + [sentence(3) for _ in range(3)]
            ends[1] = ends[1] + " [title] the " + rnd.choice(WORDS)
            ends[2] = "[step] " + ends[2]
            label = rnd.randrange(4)
            ends[0], ends[label] = ends[label], ends[0]
            f.write(json.dumps({"ind": i, "activity_label": rnd.choice(WORDS).capitalize(),
                                "ctx_a": " ".join(v[:cut]), "ctx_b": v[cut].lower(),
                                "ctx": "", "endings": ends, "label": label,
                                "split": "val", "split_type": "indomain"}) + "\n")
    with open(os.path.join(d, "valid.jsonl"), "w") as f, \
            open(os.path.join(d, "valid-labels.lst"), "w") as g:
        for i in range(200):
            v = rnd.choice(verses).split(" ")
            sols = [" ".join(v[3:]), sentence(4)]
            label = rnd.randrange(2)
            if label:
                sols.reverse()
            f.write(json.dumps({"goal": " ".join(v[:3]), "sol1": sols[0], "sol2": sols[1]}) + "\n")
            g.write("%d\n" % label)
    with open(os.path.join(d, "winogrande.jsonl"), "w") as f:
        for i in range(200):
            v = rnd.choice(verses).split(" ")
            k = rnd.randint(1, len(v) - 2)
            opts = [v[k], rnd.choice(WORDS)]
            ans = rnd.randrange(2)
            if ans:
                opts.reverse()
            s = " ".join(v[:k] + ["_"] + v[k + 1:])
            f.write(json.dumps({"qID": "q%d" % i, "sentence": s, "option1": opts[0],
                                "option2": opts[1], "answer": str(ans + 1)}) + "\n")
    bad = {
        "bad_json.jsonl": '{"context": "a", "choices": ["b", "c"], "label": 0}\n{"context": "a", "choices": ["b", "c"], "label": 0\n',
        "bad_label.jsonl": '{"context": "a", "choices": ["b", "c"], "label": 0}\n\n{"context": "a", "choices": ["b", "c"], "label": 2}\n',
        "bad_empty.jsonl": '{"context": "a", "choices": ["b", ""], "label": 0}\n',
        "bad_fields.jsonl": '{"question": "a", "answers": ["b", "c"], "label": 0}\n',
        "bad_type.jsonl": '{"context": "a", "choices": "b", "label": 0}\n',
        "bad_lambada.jsonl": '{"text": "one two"}\n["not", "an", "object"]\n',
        "bad_wino.jsonl": '{"sentence": "no blank here", "option1": "a", "option2": "b", "answer": "1"}\n',
        "long.jsonl": json.dumps({"context": " ".join(["light"] * 40), "choices": ["good", "bad"], "label": 0}) + "\n"
                      + json.dumps({"context": "short", "choices": ["good", "bad"], "label": 1}) + "\n",
    }
    for name, text in bad.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)


def kjv(path, d):
    verses, ch = [], -1   # (chapter, text): "N text" lines; "Book N" lines start chapters
    for ln in open(path, encoding="utf-8").read().split("\n"):
        m = re.match(r"^(\d+) (.*)$", ln)
        if m:
            verses.append((ch, m.group(2)))
        elif ln.strip():
            ch += 1
    cut = int(len(verses) * 0.9)
    with open(os.path.join(d, "train.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for _, t in verses[:cut]))
    held = verses[cut:]
    rnd = random.Random(1)
    short = [j for j in range(len(held)) if len(held[j][1]) <= 100]
    idx = [i for i in range(len(held) - 1) if held[i][0] == held[i + 1][0]
           and len(held[i][1]) <= 100 and len(held[i + 1][1]) <= 100]
    rnd.shuffle(idx)

    def midcut(t):   # inside a word, where no merge of the test vocabulary crosses the cut
        pos = [k for k in range(len(t) // 3, len(t) - 3) if t[k - 1].isalpha() and
               t[k].isalpha() and t[k + 1].isalpha() and t[k - 1] not in "hat"]
        k = rnd.choice(pos) if pos else len(t) // 2
        return t[:k], t[k:]

    def word_rest(t):
        k = 0
        while k < len(t) and t[k].isalpha():
            k += 1
        return t[:k]

    with open(os.path.join(d, "kjv_mc.jsonl"), "w", encoding="utf-8") as f:
        for i in idx[:400]:
            head, tail = midcut(held[i + 1][1])
            choices = [word_rest(tail)]
            while len(choices) < 4:
                o = word_rest(midcut(held[rnd.choice(short)][1])[1])
                if len(o) == len(choices[0]) and o not in choices:
                    choices.append(o)
            label = rnd.randrange(4)
            choices[0], choices[label] = choices[label], choices[0]
            f.write(json.dumps({"context": held[i][1] + "\n" + head, "choices": choices,
                                "label": label, "target_delimiter": ""}) + "\n")


# ---- GPT-2 byte-level BPE (the ASCII text of these files, plus the degree sign) ------------

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


class BPE:
    # GPT-2's pattern with \p{L} and \p{N} for ASCII (the degree sign is neither)
    PAT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")

    def __init__(self, vocab, merges):
        with open(vocab) as f:
            self.enc = json.load(f)
        self.dec = {v: k for k, v in self.enc.items()}
        with open(merges) as f:
            lines = [ln.split() for ln in f.read().split("\n")[1:] if ln.strip()]
        self.ranks = {tuple(m): i for i, m in enumerate(lines)}
        self.b2u = bytes_to_unicode()
        self.u2b = {v: k for k, v in self.b2u.items()}
        self.eod = self.enc.get("<|endoftext|>", 0)

    def word(self, w):
        parts = list(w)
        while len(parts) > 1:
            pairs = [(self.ranks.get((a, b), 1 << 30), i) for i, (a, b) in enumerate(zip(parts, parts[1:]))]
            r, i = min(pairs)
            if r == 1 << 30:
                break
            parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2:]
        return [self.enc[p] for p in parts]

    def encode(self, text):
        out = []
        for piece in self.PAT.findall(text):
            out += self.word("".join(self.b2u[b] for b in piece.encode("utf-8")))
        return out

    def decode(self, ids):
        return bytes(self.u2b[c] for i in ids for c in self.dec[i]).decode("utf-8", "replace")


# ---- the rows ---------------------------------------------------------------------------------

def wikitext_detokenizer(string):   # Megatron's tasks/zeroshot_gpt/detokenizer.py
    string = string.replace("s '", "s'")
    string = re.sub(r"/' [0-9]/", r"/'[0-9]/", string)
    string = string.replace(" @-@ ", "-")
    string = string.replace(" @,@ ", ",")
    string = string.replace(" @.@ ", ".")
    string = string.replace(" : ", ": ")
    string = string.replace(" ; ", "; ")
    string = string.replace(" . ", ". ")
    string = string.replace(" ! ", "! ")
    string = string.replace(" ? ", "? ")
    string = string.replace(" , ", ", ")
    string = re.sub(r"\(\s*([^\)]*?)\s*\)", r"(\1)", string)
    string = re.sub(r"\[\s*([^\]]*?)\s*\]", r"[\1]", string)
    string = re.sub(r"{\s*([^}]*?)\s*}", r"{\1}", string)
    string = re.sub(r"\"\s*([^\"]*?)\s*\"", r'"\1"', string)
    string = re.sub(r"'\s*([^']*?)\s*'", r"'\1'", string)
    string = string.replace("= = = =", "====")
    string = string.replace("= = =", "===")
    string = string.replace("= =", "==")
    string = string.replace(" " + chr(176) + " ", chr(176))
    string = string.replace(" \n", "\n")
    string = string.replace("\n ", "\n")
    string = string.replace(" N ", " 1 ")
    string = string.replace(" 's", "'s")
    return string


def hs_preprocess(text):   # the harness's hellaswag preprocess
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    text = text.replace("  ", " ")
    return text


def mc_items(kind, path):
    """(contexts, continuations, label, partial) per item, as the harness builds them."""
    items = []
    lines = [json.loads(ln) for ln in open(path) if ln.strip()]
    labels = None
    if kind == "piqa":
        labels = [int(x) for x in open(path[:-len(".jsonl")] + "-labels.lst").read().split()]
    for i, d in enumerate(lines):
        if kind == "mc" and "contexts" in d:
            items.append((d["contexts"], [d["continuation"]] * len(d["contexts"]), d["label"], True,
                          d.get("target_delimiter", " ")))
        elif kind == "mc":
            items.append(([d["context"]] * len(d["choices"]), d["choices"], d["label"], False,
                          d.get("target_delimiter", " ")))
        elif kind == "hellaswag":
            ctx = d["ctx_a"] + " " + d["ctx_b"].capitalize()
            q = hs_preprocess(d["activity_label"] + ": " + ctx)
            ends = [hs_preprocess(e) for e in d["endings"]]
            items.append(([q] * len(ends), ends, int(d["label"]), False, " "))
        elif kind == "piqa":
            q = "Question: " + d["goal"] + "\nAnswer:"
            items.append(([q, q], [d["sol1"], d["sol2"]], labels[i], False, " "))
        else:   # winogrande
            idx = d["sentence"].index("_")
            target = d["sentence"][idx + 1:].strip()
            ctxs = [d["sentence"][:idx] + d["option1"], d["sentence"][:idx] + d["option2"]]
            items.append((ctxs, [target, target], {"1": 0, "2": 1}[d["answer"]], True, " "))
    return items


def cut(ctx, cont, T):
    """A row: ctx + cont cut on the left to T + 1 tokens; (ids, from, truncated)."""
    ids = ctx + cont
    c = max(0, len(ids) - (T + 1))
    return ids[c:], len(ctx) - c - 1, int(c > 0)


def request(bpe, ctx, cont, T):   # the harness's _encode_pair
    n = len(ctx) - len(ctx.rstrip())
    if n:
        cont = ctx[-n:] + cont
        ctx = ctx[:-n]
    if ctx == "":
        return cut([bpe.eod], bpe.encode(cont), T)
    whole = bpe.encode(ctx + cont)
    c = bpe.encode(ctx)
    return cut(c, whole[len(c):], T)


def build_rows(kind, path, bpe, T, stride):
    """The rows and what the metrics need."""
    rows = []
    if kind == "lambada":
        texts = [json.loads(ln)["text"] for ln in open(path) if ln.strip()]
        for i, text in enumerate(texts):   # Megatron's get_tokens, strict then not
            last = text.split()[-1]
            start = text.rfind(last)
            beg = bpe.encode(text[:start].strip()) or [bpe.eod]
            rows.append((i, 0) + cut(beg, bpe.encode(" " + last), T))
            toks = bpe.encode(text)
            rows.append((i, 1) + cut(toks[:-1] or [bpe.eod], toks[-1:], T))
        return rows, {"n": len(texts)}
    if kind == "wikitext103":
        raw = open(path, "rb").read().decode("utf-8")
        orig = len(raw.strip().split(" "))
        toks = bpe.encode(wikitext_detokenizer(raw))
        targets = max(len(toks) - 1 - stride, 0)
        for w in range(math.ceil(targets / stride) + 1):   # Megatron's _LMDataset
            s = w * stride
            win = toks[s:s + T + 1]
            frm = 0 if w == 0 else T - stride
            if len(win) - 1 > frm:
                rows.append((0, w, win, frm, 0))
        return rows, {"orig": orig, "tok": len(toks)}
    items = mc_items(kind, path)
    for i, (ctxs, conts, _, _, delim) in enumerate(items):
        for c in range(len(ctxs)):
            rows.append((i, c) + request(bpe, ctxs[c], delim + conts[c], T))
    return rows, {"items": items}


def metrics_of(kind, rows, lps, greedy, info):
    m = {}
    if kind == "lambada":
        n = info["n"]
        m["acc_strict"] = sum(greedy[2 * i] for i in range(n)) / n
        m["acc_nonstrict"] = sum(greedy[2 * i + 1] for i in range(n)) / n
        m["ppl"] = math.exp(-sum(lps[2 * i] for i in range(n)) / n)
    elif kind == "wikitext103":
        loss = -sum(lps) / (info["tok"] - 1)
        ratio = (info["tok"] - 1) / (info["orig"] - 1)
        m["loss"] = loss
        m["ppl"] = math.exp(min(20, loss))
        m["adjusted_ppl"] = math.exp(min(20, loss * ratio))
        m["token_ratio"] = ratio
    else:
        acc = accn = 0
        for label, (ll, norm) in zip((it[2] for it in info["items"]), choice_scores(lps, info)):
            acc += int(pick(ll) == label)
            accn += int(pick(norm) == label)
        m["acc"] = acc / len(info["items"])
        m["acc_norm"] = accn / len(info["items"])
    return m


def choice_scores(lps, info):
    """Per multiple-choice item: its choices' summed log-probabilities and the same per
    character of what was scored (acc_norm's), from the rows' log-probabilities LPS."""
    out, r = [], 0
    for ctxs, conts, _, partial, _ in info["items"]:
        ll = lps[r:r + len(ctxs)]
        r += len(ctxs)
        lens = [float(len(x)) for x in (ctxs if partial else conts)]
        out.append((ll, [a / b for a, b in zip(ll, lens)]))
    return out


def pick(v):
    """The harness's choice: the highest score, the first on a tie."""
    return max(range(len(v)), key=lambda k: (v[k], -k))


def tie_flips(lps_a, lps_b, info, tol):
    """The items whose choice (acc: 0, acc_norm: 1) differs between two sets of row
    log-probabilities, as (flips, not_ties): a flip between two choices whose scores are
    within TOL relative in both sets is a near-tie that the summation order may decide (the
    log-probabilities themselves agree within TOL); any other flip is a real difference."""
    flips, bad = [0, 0], [0, 0]
    for sa, sb in zip(choice_scores(lps_a, info), choice_scores(lps_b, info)):
        for w in (0, 1):
            ka, kb = pick(sa[w]), pick(sb[w])
            if ka == kb:
                continue
            flips[w] += 1
            for v in (sa[w], sb[w]):
                if abs(v[ka] - v[kb]) > tol * max(abs(v[ka]), abs(v[kb]), 1e-3):
                    bad[w] += 1
                    break
    return flips, bad


# ---- scoring -------------------------------------------------------------------------------

def load_model(index):
    import h5py
    import numpy as np
    import torch
    from ref_check import GPTRef
    with h5py.File(index, "r") as f:
        flags = {}
        for line in f["config"][()].decode().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                flags[k.strip()] = v.strip()
        params = {n: torch.from_numpy(np.array(f["model"][n][...], dtype=np.float32))
                  for n in f["model"]}
    cfg = {"num_layers": int(flags["num-layers"]), "hidden_size": int(flags["hidden-size"]),
           "num_attention_heads": int(flags["num-attention-heads"]),
           "layernorm_epsilon": float(flags.get("layernorm-epsilon", "1e-5"))}
    return GPTRef(cfg, params), int(flags["seq-length"])


def score(model, ids, frm):
    """Summed log-probability of ids[frm+1:] and whether each is the argmax (padded vocab)."""
    import torch
    with torch.no_grad():
        logits, _ = model(torch.tensor([ids[:-1]], dtype=torch.long))
        lsm = torch.log_softmax(logits[0].double(), dim=-1)
        tg = torch.tensor(ids[1:], dtype=torch.long)
        lp = lsm[torch.arange(len(tg)), tg][frm:]
        am = logits[0].argmax(-1)[frm:]
        top2 = torch.topk(logits[0][frm:], 2, dim=-1).values
        margin = (top2[:, 0] - top2[:, 1]).min().item()
    return lp.sum().item(), int(bool((am == tg[frm:]).all())), margin


def read_dump(path):
    return [json.loads(ln) for ln in open(path)]


def close(a, b, tol=REL):
    return a is not None and b is not None and abs(a - b) <= tol * max(abs(b), 1e-3)


def check(argv):
    import torch
    import ref_check
    from ref_check import ok
    torch.set_num_threads(1)
    index, vocab, merges, metrics_path, rows_prefix, stride = argv[:6]
    tasks = argv[6:]
    bpe = BPE(vocab, merges)
    model, T = load_model(index)
    stride = int(stride) if int(stride) > 0 else T
    reported = [json.loads(ln) for ln in open(metrics_path) if '"event":"task"' in ln]
    for ti, spec in enumerate(tasks):
        kind, path = spec.split(":", 1)
        rows, info = build_rows(kind, path, bpe, T, stride)
        dump = read_dump("%s.%d.jsonl" % (rows_prefix, ti))
        same = len(rows) == len(dump) and all(
            r[0] == d["item"] and r[1] == d["choice"] and r[2] == d["ids"] and r[3] == d["from"]
            and r[4] == d["truncated"] for r, d in zip(rows, dump))
        first_diff = next((k for k, (r, d) in enumerate(zip(rows, dump)) if r[2] != d["ids"] or r[3] != d["from"]), None)
        ok(same, "%s: the reference builds the %d rows gpt3d scored (ids, scored span, truncation)%s"
           % (kind, len(rows), "" if first_diff is None else " (first difference: row %d: %s vs %s)"
              % (first_diff, bpe.decode(rows[first_diff][2]), bpe.decode(dump[first_diff]["ids"]))))
        if kind == "wikitext103":
            detok = open("%s.%d.jsonl.detok" % (rows_prefix, ti), "rb").read().decode("utf-8")
            raw = open(path, "rb").read().decode("utf-8")
            ok(detok == wikitext_detokenizer(raw), "wikitext103: gpt3d's detokenized text is Megatron's")
        lps, greedy, worst, gbad, margin = [], [], 0.0, 0, 1e9
        for r, d in zip(rows, dump):
            lp, g, mg = score(model, d["ids"], d["from"])
            lps.append(lp)
            greedy.append(g)
            worst = max(worst, abs(lp - d["logprob"]) / max(abs(lp), 1e-3))
            gbad += kind == "lambada" and g != d["greedy"]
            margin = min(margin, mg)
        ok(worst <= REL, "%s: torch's per-row log-probabilities equal gpt3d's within %.0e relative (worst %.1e, %d rows)"
           % (kind, REL, worst, len(rows)))
        if kind == "lambada":
            ok(gbad == 0, "lambada: the same argmax flags on every row (%d differ; smallest top-2 margin %.1e)"
               % (gbad, margin))
        want = metrics_of(kind, rows, lps, greedy, info)
        got = reported[ti]["metrics"] if ti < len(reported) else {}
        flips = [0, 0]
        if "items" in info:
            # gpt3d's accuracies are exactly those of its own log-probabilities; against
            # torch's, an item may flip only on a near-tie (both within the rows' tolerance)
            own = metrics_of(kind, rows, [d["logprob"] for d in dump], greedy, info)
            ok(all(abs(got.get(k, -1) - own[k]) <= 1e-8 for k in ("acc", "acc_norm")),
               "%s: acc and acc_norm are exactly those of gpt3d's own row log-probabilities" % kind)
            flips, bad = tie_flips(lps, [d["logprob"] for d in dump], info, 2 * REL)
            ok(bad == [0, 0], "%s: torch and gpt3d choose the same answer on every item but "
               "near-ties within %.0e (acc: %d flips, acc_norm: %d; %d not near-ties)"
               % (kind, 2 * REL, flips[0], flips[1], bad[0] + bad[1]))
        n_items = info["n"] if kind == "lambada" else len(info["items"]) if "items" in info else None
        if n_items is not None:
            ok(reported[ti]["n"] == n_items and n_items >= 200,
               "%s: %d items reported (%d in the file, >= 200)" % (kind, reported[ti]["n"], n_items))
        else:
            ok(len(rows) >= 200, "%s: %d windows (>= 200)" % (kind, len(rows)))
        for k, v in want.items():
            exact = k.startswith("acc")
            slack = flips[k == "acc_norm"] / n_items if exact and "items" in info else 0.0
            good = (got.get(k) is not None and abs(got[k] - v) <= slack + 1e-8) if exact else close(got.get(k), v)
            ok(good, "%s: %s %s equals the reference's %.9g%s" % (
                kind, k, got.get(k), v, (" (but for %d near-tie items)" % round(slack * n_items)
                                         if slack else "") if exact else " within 1e-4"))
    print("1..%d" % ref_check.n_test)
    return 1 if ref_check.n_fail else 0


def same_runs(argv):
    """same VOCAB MERGES T STRIDE METRICS_A ROWS_A METRICS_B ROWS_B KIND:FILE...: two runs of
    the same checkpoint (one rank, and a parallel layout) score every row within 1e-4
    relative, report the same n and truncation, their other metrics within 1e-6 relative, and
    accuracies that differ only by near-ties (within 2e-4 relative in both runs).  Prints
    "same" or what differs."""
    vocab, merges, T, stride, ma, ra, mb, rb = argv[:8]
    bpe = BPE(vocab, merges)
    T, stride = int(T), int(stride)
    a = [json.loads(ln) for ln in open(ma) if '"event":"task"' in ln]
    b = [json.loads(ln) for ln in open(mb) if '"event":"task"' in ln]
    tasks = argv[8:]
    bad = [] if len(a) == len(b) == len(tasks) else ["%d and %d task lines" % (len(a), len(b))]
    for ti, (spec, x, y) in enumerate(zip(tasks, a, b)):
        kind, path = spec.split(":", 1)
        da = read_dump("%s.%d.jsonl" % (ra, ti))
        db = read_dump("%s.%d.jsonl" % (rb, ti))
        la, lb = [d["logprob"] for d in da], [d["logprob"] for d in db]
        worst = max([abs(p - q) / max(abs(p), 1e-3) for p, q in zip(la, lb)] or [0.0])
        if len(la) != len(lb) or worst > REL:
            bad.append("%s row log-probabilities (%d and %d rows, worst %.1e relative)"
                       % (kind, len(la), len(lb), worst))
            continue
        if (x["task"], x["n"], x["truncated"]) != (y["task"], y["n"], y["truncated"]):
            bad.append(x["task"] + " n/truncated")
        flips = [0, 0]
        if kind not in ("lambada", "wikitext103"):
            _, info = build_rows(kind, path, bpe, T, stride)
            flips, nt = tie_flips(la, lb, info, 2 * REL)
            if nt != [0, 0]:
                bad.append("%s: %d answers flip without a near-tie" % (kind, nt[0] + nt[1]))
        for k, v in x["metrics"].items():
            w = y["metrics"].get(k)
            slack = flips[k == "acc_norm"] / x["n"] if k.startswith("acc") and kind not in ("lambada",) else 0.0
            if w is None or (abs(v - w) > slack + 1e-12 if k.startswith("acc") else abs(v - w) > 1e-6 * abs(v)):
                bad.append("%s %s %s vs %s" % (x["task"], k, v, w))
    print("; ".join(bad) or "same")
    return 0


def fewshot(argv):
    import torch
    import ref_check
    from ref_check import ok
    torch.set_num_threads(1)
    index, vocab, merges, metrics_path, rows_prefix, K = argv[:6]
    K = int(K)
    bpe = BPE(vocab, merges)
    model, T = load_model(index)
    for ti, spec in enumerate(argv[6:]):
        kind, path = spec.split(":", 1)
        dump = read_dump("%s.%d.jsonl" % (rows_prefix, ti))
        worst = 0.0
        for d in dump:
            lp, _, _ = score(model, d["ids"], d["from"])
            worst = max(worst, abs(lp - d["logprob"]) / max(abs(lp), 1e-3))
        ok(worst <= REL, "%s %d-shot: torch's log-probabilities of the %d rows equal gpt3d's (worst %.1e)"
           % (kind, K, len(dump), worst))
        if kind == "lambada":
            texts = [json.loads(ln)["text"] for ln in open(path) if ln.strip()]
            solved = texts
            own = lambda i, c: texts[i].rsplit(None, 1)[0].strip()
        else:
            items = mc_items(kind, path)
            solved = [it[0][it[2]] + it[4] + it[1][it[2]] for it in items]
            own = lambda i, c: items[i][0][c].rstrip()
        good = checked = 0
        for d in dump:
            if d["truncated"] or (kind == "lambada" and d["choice"] == 1):
                continue
            text = bpe.decode(d["ids"][:d["from"] + 1])
            mine = own(d["item"], d["choice"])
            checked += 1
            if not text.endswith(mine):
                continue
            parts = text[:len(text) - len(mine)].split("\n\n")
            # another item's (an item whose solved text another shares cannot be told apart)
            good += len(parts) == K + 1 and parts[-1] == "" and all(
                p in solved and (p != solved[d["item"]] or solved.count(p) > 1)
                for p in parts[:-1])
        ok(checked > 20 and good == checked,
           "%s %d-shot: each of the %d whole prompts is %d solved examples of other items, each followed by a blank line, then the item (%d are)"
           % (kind, K, checked, K, good))
    print("1..%d" % ref_check.n_test)
    return 1 if ref_check.n_fail else 0


def main():
    if sys.argv[1] == "make":
        make(sys.argv[2])
        return 0
    if sys.argv[1] == "kjv":
        kjv(sys.argv[2], sys.argv[3])
        return 0
    if sys.argv[1] == "same":
        return same_runs(sys.argv[2:])
    if sys.argv[1] == "check":
        return check(sys.argv[2:])
    return fewshot(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())

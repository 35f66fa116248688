"""PyTorch reference for gpt3d eval and gpt3d generate (run by tests/infer/test_infer.sh).

Loads a gpt3d checkpoint's weights with h5py from its index.h5 (the global view of every
tensor, whatever layout saved it) into the PyTorch GPT-2 of tests/train/ref_check.py, and
checks, printing TAP:

  * greedy generation: the token ids gpt3d generate picked (its --output-file) are the ones
    torch picks, step by step, from the same prompt (argmax over the real vocabulary of the
    last position, the last seq-length tokens as the window);
  * evaluation: the mean token loss over the samples gpt3d eval read (its --debug-batch-dump)
    equals the loss it reported (its --metrics-file) within 1e-5.

Usage: infer_ref.py INDEX.h5 GENERATE.json BATCHES.bin EVAL_METRICS.jsonl
"""
import json
import os
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
import ref_check  # noqa: E402  the training tests' reference: the model and the TAP counter
from ref_check import GPTRef, ok  # noqa: E402

LOSS_TOL = 1e-5


def config_of(text):
    """The run's flags ("name = value" lines) as a dict of strings."""
    out = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def main():
    torch.set_num_threads(1)
    index, gen_path, batch_path, metrics_path = sys.argv[1:5]
    with h5py.File(index, "r") as f:
        flags = config_of(f["config"][()].decode())
        params = {}
        for name in f["model"]:
            params[name] = torch.from_numpy(np.array(f["model"][name][...], dtype=np.float32))
        tensors = f["tensors"][...]
    vocab = None
    for row in tensors:
        if row["name"].decode() == "model/embedding.word_embeddings.weight":
            vocab = int(row["unpadded"])
    cfg = {"num_layers": int(flags["num-layers"]), "hidden_size": int(flags["hidden-size"]),
           "num_attention_heads": int(flags["num-attention-heads"]),
           "layernorm_epsilon": float(flags.get("layernorm-epsilon", "1e-5"))}
    T = int(flags["seq-length"])
    model = GPTRef(cfg, params)
    Vp = params["embedding.word_embeddings.weight"].shape[0]
    print("# checkpoint %s: %d layers, hidden %d, vocabulary %d (padded %d), %d tensors"
          % (index, cfg["num_layers"], cfg["hidden_size"], vocab, Vp, len(params)))

    # ---- greedy generation
    with open(gen_path) as f:
        gen = json.load(f)
    ids = list(gen["prompt_ids"])
    want = gen["ids"]
    got = []
    margins = []
    with torch.no_grad():
        for _ in range(len(want)):
            window = torch.tensor([ids[-T:]], dtype=torch.long)
            logits, _ = model(window)
            row = logits[0, -1, :vocab]
            top2 = torch.topk(row, 2).values
            margins.append((top2[0] - top2[1]).item())
            nxt = int(torch.argmax(row).item())
            got.append(nxt)
            ids.append(nxt)
    first_diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
    ok(got == want, "greedy: torch picks the %d tokens gpt3d picked%s (smallest top-2 margin %.2e)"
       % (len(want), "" if first_diff is None else
          " (first difference at step %d: torch %d, gpt3d %d)" % (first_diff, got[first_diff],
                                                                 want[first_diff]),
          min(margins) if margins else 0.0))
    ok(len(set(want)) > 1, "greedy: the continuation is not one repeated token (%d distinct)"
       % len(set(want)))

    # ---- evaluation loss
    raw = np.fromfile(batch_path, dtype=np.int32)
    samples = torch.from_numpy(raw.reshape(-1, T + 1).astype(np.int64))
    with open(metrics_path) as f:
        evals = [json.loads(line) for line in f if '"event":"eval"' in line]
    reported = evals[0]["loss"]
    total, count = 0.0, 0
    with torch.no_grad():
        for b0 in range(0, samples.shape[0], 4):
            batch = samples[b0:b0 + 4]
            logits, _ = model(batch[:, :T])
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(),
                                     batch[:, 1:].reshape(-1), reduction="sum").item()
            count += batch.shape[0] * T
    loss = total / count
    ok(samples.shape[0] == evals[0]["samples"],
       "eval: the dump holds the %d samples gpt3d evaluated" % evals[0]["samples"])
    ok(abs(loss - reported) <= LOSS_TOL,
       "eval: torch's loss %.9f equals gpt3d's %.9f within %.0e (|diff| %.1e)"
       % (loss, reported, LOSS_TOL, abs(loss - reported)))

    print("1..%d" % ref_check.n_test)
    return 1 if ref_check.n_fail else 0


if __name__ == "__main__":
    sys.exit(main())

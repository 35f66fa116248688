"""PyTorch reference check of gpt3d's CPU GPT (run by tests/train/test_reference.sh).

Reads the dump written by tests/train/ref_dump (initial weights, a batch with gpt3d's logits,
loss and every parameter gradient, then ten training iterations), builds the same GPT-2 in
PyTorch from the same weights and compares, printing TAP:

  * logits, loss and the gradient of EVERY parameter tensor: relative error
    max|gpt3d - torch| / max|torch| per tensor <= 1e-5 (both fp32);
  * the learning rate of each of the ten iterations, computed here independently with
    Megatron-LM's formula (linear warm-up, cosine decay, in samples);
  * the ten training losses (torch.optim.AdamW with weight decay only on weights and
    embeddings, clip_grad_norm_, two micro-batches of gradient accumulation): within 1e-4;
    plus the gradient norms (1e-4 relative) and the final weights (1e-3, see below).

Usage: ref_check.py DUMP.bin
"""
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

REL_TOL = 1e-5
LOSS_TOL = 1e-4

n_test = 0
n_fail = 0


def ok(cond, what):
    global n_test, n_fail
    n_test += 1
    if not cond:
        n_fail += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n_test, what), flush=True)


def rel_err(got, want):
    got = got.detach().double()
    want = want.detach().double()
    den = want.abs().max().item()
    num = (got - want).abs().max().item()
    return num / den if den > 0 else num


def load(path):
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        base = f.tell()
        raw = f.read()
    assert header["format"] == "gpt3d-ref 1", header["format"]
    out = {}
    for t in header["tensors"]:
        dt = {"f32": np.float32, "i32": np.int32, "f64": np.float64}[t["dtype"]]
        n = int(np.prod(t["shape"]))
        a = np.frombuffer(raw, dtype=dt, count=n, offset=t["offset"]).reshape(t["shape"])
        out[t["name"]] = torch.from_numpy(a.copy())
    del base
    return header["config"], out


class GPTRef(torch.nn.Module):
    """GPT-2 as gpt3d defines it: learned positions, pre-LN blocks, GELU (tanh) MLP, final
    LN, output layer tied to the word embeddings; qkv rows are [q; k; v], heads contiguous
    within each block; the loss covers the padded vocabulary (as Megatron's does)."""

    def __init__(self, cfg, params):
        super().__init__()
        self.cfg = cfg
        self.p = torch.nn.ParameterDict()
        self.names = {}
        for name, t in params.items():
            key = name.replace(".", "_")
            self.p[key] = torch.nn.Parameter(t.clone().float())
            self.names[name] = key

    def w(self, name):
        return self.p[self.names[name]]

    def forward(self, idx, targets=None):
        cfg = self.cfg
        B, T = idx.shape
        C, NH = cfg["hidden_size"], cfg["num_attention_heads"]
        HS = C // NH
        eps = cfg["layernorm_epsilon"]
        x = self.w("embedding.word_embeddings.weight")[idx] + \
            self.w("embedding.position_embeddings.weight")[:T]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        for l in range(cfg["num_layers"]):
            def w(s):
                return self.w("layers.%d.%s" % (l, s))
            h = F.layer_norm(x, (C,), w("input_layernorm.weight"), w("input_layernorm.bias"), eps)
            qkv = F.linear(h, w("attention.qkv.weight"), w("attention.qkv.bias"))
            q, k, v = qkv.split(C, dim=2)
            q = q.view(B, T, NH, HS).transpose(1, 2)
            k = k.view(B, T, NH, HS).transpose(1, 2)
            v = v.view(B, T, NH, HS).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) / math.sqrt(HS)
            att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + F.linear(y, w("attention.dense.weight"), w("attention.dense.bias"))
            h = F.layer_norm(x, (C,), w("post_attention_layernorm.weight"),
                             w("post_attention_layernorm.bias"), eps)
            h = F.gelu(F.linear(h, w("mlp.fc1.weight"), w("mlp.fc1.bias")), approximate="tanh")
            x = x + F.linear(h, w("mlp.fc2.weight"), w("mlp.fc2.bias"))
        x = F.layer_norm(x, (C,), self.w("final_layernorm.weight"),
                         self.w("final_layernorm.bias"), eps)
        logits = x @ self.w("embedding.word_embeddings.weight").t()
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long())
        return logits, loss


def megatron_lr(cfg, samples):
    """OptimizerParamScheduler.get_lr() with num_steps = samples (iteration flags x GBS)."""
    gbs = cfg["global_batch_size"]
    warm, decay = cfg["warmup_iters"] * gbs, cfg["decay_iters"] * gbs
    max_lr, min_lr = cfg["lr"], cfg["min_lr"]
    if warm > 0 and samples <= warm:
        return max_lr * samples / warm
    if samples > decay:
        return min_lr
    ratio = (samples - warm) / (decay - warm)
    return min_lr + (max_lr - min_lr) * 0.5 * (math.cos(math.pi * ratio) + 1.0)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cfg, t = load(sys.argv[1])
    names = [k[len("param/"):] for k in t if k.startswith("param/")]
    params = {n: t["param/" + n] for n in names}
    model = GPTRef(cfg, params)
    print("# model: %d layers, hidden %d, %d heads, vocab %d padded %d, %d parameter tensors%s"
          % (cfg["num_layers"], cfg["hidden_size"], cfg["num_attention_heads"],
             cfg["vocab_size"], cfg["padded_vocab_size"], len(names),
             " (gpt3d recomputed activations)" if cfg["recompute"] else ""))

    # ---- one batch: logits, loss, every gradient
    tok, tgt = t["tokens"].long(), t["targets"].long()
    logits, loss = model(tok, tgt)
    loss.backward()
    e = rel_err(t["logits"], logits)
    ok(e <= REL_TOL, "logits: rel err %.2e <= %.0e" % (e, REL_TOL))
    d = abs(t["loss"].item() - loss.item())
    ok(d / abs(loss.item()) <= REL_TOL,
       "loss: gpt3d %.7f torch %.7f (rel %.2e)" % (t["loss"].item(), loss.item(),
                                                   d / abs(loss.item())))
    worst = 0.0
    for n in names:
        g = model.w(n).grad
        e = rel_err(t["grad/" + n], g)
        worst = max(worst, e)
        ok(e <= REL_TOL, "grad %s %s: rel err %.2e <= %.0e" % (n, tuple(g.shape), e, REL_TOL))
    print("# worst gradient rel err %.2e over %d tensors" % (worst, len(names)))

    # ---- ten iterations: Megatron schedule, AdamW, clipping, 2 micro-batches
    model = GPTRef(cfg, params)
    decay, no_decay = [], []
    for n in names:
        (decay if model.w(n).dim() == 2 else no_decay).append(model.w(n))
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg["lr"], betas=(cfg["adam_beta1"], cfg["adam_beta2"]),
                            eps=cfg["adam_eps"])
    gbs, mb, T = cfg["global_batch_size"], cfg["micro_batch_size"], cfg["seq_length"]
    for s in range(cfg["steps"]):
        lr = megatron_lr(cfg, s * gbs)
        got_lr = t["train/lr"][s].item()
        ok(abs(got_lr - lr) <= 1e-12 * max(lr, 1e-30) + 1e-18,
           "iteration %d learning rate: gpt3d %.9g Megatron formula %.9g" % (s + 1, got_lr, lr))
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        total = 0.0
        tok, tgt = t["train/tokens"][s].long(), t["train/targets"][s].long()
        for b0 in range(0, gbs, mb):
            _, l = model(tok[b0:b0 + mb], tgt[b0:b0 + mb])
            (l * mb / gbs).backward()
            total += l.item() * mb / gbs
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["clip_grad"]).item()
        opt.step()
        got = t["train/loss"][s].item()
        ok(abs(got - total) <= LOSS_TOL,
           "iteration %d loss: gpt3d %.7f torch %.7f (|diff| %.1e <= %.0e)"
           % (s + 1, got, total, abs(got - total), LOSS_TOL))
        gn = t["train/grad_norm"][s].item()
        ok(abs(gn - norm) <= 1e-4 * norm,
           "iteration %d grad norm: gpt3d %.6f torch %.6f" % (s + 1, gn, norm))
    # Adam divides by sqrt(v): where a gradient is ~0 (unused or padded vocabulary rows) the
    # update is ~lr * sign(noise), so the weights agree less tightly than the losses do.
    worst, where = max((rel_err(t["final/" + n], model.w(n)), n) for n in names)
    ok(worst <= 1e-3, "weights after 10 AdamW steps: worst rel err %.2e (%s) <= 1e-3"
       % (worst, where))

    print("1..%d" % n_test)
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())

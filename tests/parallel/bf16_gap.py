"""How far bf16 activations alone move a training loss curve from fp32 (issue 28's evidence).

test_parallel_cuda.sh trains a 4-layer GPT (hidden 128, 4 heads, sequence 64, a byte-level
vocabulary padded to 272, global batch 16) for 20 iterations at lr 3e-3 on the CPU (fp32) and
on a GPU (bf16 activations and activation gradients, fp32 parameter gradients and master
weights: docs/cuda.md, "Precision policy"), and compares the loss curves.  This script asks
what that comparison may expect without a GPU: it trains the same shape in PyTorch twice from
the same weights on the same batches, once in fp32 and once with every activation and every
activation gradient rounded to bf16 (round to nearest even) and the forward reading bf16 copies
of the fp32 master weights, as the CUDA backend does, and prints the largest loss difference
and where it grows, for each learning rate given.

    /usr/bin/python3 tests/parallel/bf16_gap.py TEXT_FILE [LR ...]     (default LRs 3e-3 1e-3)

Not a test: a measurement (docs/cuda.md, "bf16 against the CPU"), run by hand.
"""
import math
import sys

import torch
import torch.nn.functional as F

L, C, NH, T, V, B, ITERS, WARM = 4, 128, 4, 64, 272, 16, 20, 2


class RoundBF16(torch.autograd.Function):
    """bf16 rounding of a tensor in the forward and of its gradient in the backward."""

    @staticmethod
    def forward(ctx, x):
        return x.to(torch.bfloat16).to(torch.float32)

    @staticmethod
    def backward(ctx, g):
        return g.to(torch.bfloat16).to(torch.float32)


def r_act(x, on):
    return RoundBF16.apply(x) if on else x


def r_w(w, on):
    # the forward reads a bf16 copy of the master weight; its gradient stays fp32
    return w + (w.detach().to(torch.bfloat16).to(torch.float32) - w.detach()) if on else w


def init(seed):
    g = torch.Generator().manual_seed(seed)
    n = lambda *s, std=0.02: torch.randn(*s, generator=g) * std
    out_std = 0.02 / math.sqrt(2 * L)
    p = {"wte": n(V, C), "wpe": n(T, C), "lnf.w": torch.ones(C), "lnf.b": torch.zeros(C)}
    for i in range(L):
        p.update({
            f"{i}.ln1.w": torch.ones(C), f"{i}.ln1.b": torch.zeros(C),
            f"{i}.qkv.w": n(3 * C, C), f"{i}.qkv.b": torch.zeros(3 * C),
            f"{i}.proj.w": n(C, C, std=out_std), f"{i}.proj.b": torch.zeros(C),
            f"{i}.ln2.w": torch.ones(C), f"{i}.ln2.b": torch.zeros(C),
            f"{i}.fc.w": n(4 * C, C), f"{i}.fc.b": torch.zeros(4 * C),
            f"{i}.fc2.w": n(C, 4 * C, std=out_std), f"{i}.fc2.b": torch.zeros(C),
        })
    return {k: v.requires_grad_() for k, v in p.items()}


def forward(p, x, y, bf):
    a = lambda t: r_act(t, bf)
    w = lambda k: r_w(p[k], bf)
    h = a(F.embedding(x, w("wte")) + w("wpe")[: x.shape[1]])
    for i in range(L):
        z = a(F.layer_norm(h, (C,), w(f"{i}.ln1.w"), w(f"{i}.ln1.b"), 1e-5))
        qkv = a(F.linear(z, w(f"{i}.qkv.w"), w(f"{i}.qkv.b")))
        q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in qkv.split(C, dim=2))
        # flash attention keeps the scores and probabilities in fp32: only its output rounds
        s = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        att = a(F.softmax(s, dim=-1) @ v)
        att = att.transpose(1, 2).reshape(B, T, C)
        h = a(h + a(F.linear(att, w(f"{i}.proj.w"), w(f"{i}.proj.b"))))
        z = a(F.layer_norm(h, (C,), w(f"{i}.ln2.w"), w(f"{i}.ln2.b"), 1e-5))
        f = a(F.gelu(a(F.linear(z, w(f"{i}.fc.w"), w(f"{i}.fc.b"))), approximate="tanh"))
        h = a(h + a(F.linear(f, w(f"{i}.fc2.w"), w(f"{i}.fc2.b"))))
    z = a(F.layer_norm(h, (C,), w("lnf.w"), w("lnf.b"), 1e-5))
    logits = a(F.linear(z, w("wte")))
    return F.cross_entropy(logits.view(-1, V), y.view(-1))


def train(p, batches, lr, bf):
    decay = [v for k, v in p.items() if k.endswith(".w") and "ln" not in k or k in ("wte", "wpe")]
    rest = [v for v in p.values() if all(v is not d for d in decay)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": rest, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.999),
                            eps=1e-8)
    losses = []
    for it, (x, y) in enumerate(batches):
        # Megatron's schedule: linear warm-up from 0, cosine decay to lr / 10
        if it < WARM:
            cur = lr * it / WARM
        else:
            cur = lr / 10 + (lr - lr / 10) * 0.5 * (1 + math.cos(math.pi * (it - WARM) / (ITERS - WARM)))
        for g in opt.param_groups:
            g["lr"] = cur
        opt.zero_grad()
        loss = forward(p, x, y, bf)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), 1.0)
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    text = open(sys.argv[1], "rb").read()
    lrs = [float(s) for s in sys.argv[2:]] or [3e-3, 1e-3]
    data = torch.tensor(list(text), dtype=torch.long) % V
    g = torch.Generator().manual_seed(1234)
    batches = []
    for _ in range(ITERS):
        starts = torch.randint(0, len(data) - T - 1, (B,), generator=g)
        x = torch.stack([data[s: s + T] for s in starts])
        y = torch.stack([data[s + 1: s + T + 1] for s in starts])
        batches.append((x, y))
    torch.manual_seed(0)
    for lr in lrs:
        ref = train(init(42), batches, lr, False)
        bf = train(init(42), batches, lr, True)
        gaps = [abs(a - b) for a, b in zip(ref, bf)]
        first = next((i + 1 for i, d in enumerate(gaps) if d > 0.01), None)
        print(f"lr {lr:g}: max |loss fp32 - loss bf16| {max(gaps):.4f} at iteration "
              f"{gaps.index(max(gaps)) + 1}; first above 0.01: {first}; final losses "
              f"{ref[-1]:.4f} / {bf[-1]:.4f}")
        print("  per iteration: " + " ".join(f"{d:.4f}" for d in gaps))


if __name__ == "__main__":
    main()

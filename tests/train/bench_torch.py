"""PyTorch side of tests/train/bench_train.sh: full training steps (forward, backward,
gradient clipping, AdamW) of the same GPT-2 gpt3d trains (learned positions, pre-LN blocks,
GELU-tanh MLP, output layer tied to the padded embedding), random tokens, given its best CPU
settings: flush-to-zero for denormals, the thread count asked for, one inter-op thread,
multi-tensor (foreach) AdamW, gradients set to None instead of zeroed.

Usage: bench_torch.py [--layers L] [--hidden C] [--heads NH] [--seq T] [--batch B]
                      [--vocab V] [--steps N] [--warmup W] [--threads N]
Prints one line per step and "tokens/s: X" (median step)."""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc1 = nn.Linear(C, 4 * C)
        self.fc2 = nn.Linear(4 * C, C)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        k = k.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        v = v.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.NH))
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, C, NH, T, Vp):
        super().__init__()
        self.wte = nn.Embedding(Vp, C)
        self.wpe = nn.Embedding(T, C)
        self.blocks = nn.ModuleList([Block(C, NH) for _ in range(L)])
        self.lnf = nn.LayerNorm(C)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
        self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe.weight[:T]
        for b in self.blocks:
            x = b(x, self.mask[:T, :T])
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    for name, default in (("layers", 4), ("hidden", 256), ("heads", 4), ("seq", 256),
                          ("batch", 4), ("vocab", 50257), ("steps", 10), ("warmup", 2),
                          ("threads", 2)):
        ap.add_argument("--" + name, type=int, default=default)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    Vp = (a.vocab + 127) // 128 * 128   # Megatron's padding, as gpt3d does
    model = GPT(a.layers, a.hidden, a.heads, a.seq, Vp)
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.95), eps=1e-8, foreach=True)
    print("# torch %s, %d threads, L=%d C=%d NH=%d T=%d B=%d V=%d (padded %d)"
          % (torch.__version__, torch.get_num_threads(), a.layers, a.hidden, a.heads, a.seq,
             a.batch, a.vocab, Vp))
    times = []
    for s in range(a.warmup + a.steps):
        g = torch.Generator().manual_seed(s)
        idx = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)
        tgt = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(idx, tgt)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        print("step %2d%s: %.1f ms  loss %.4f  grad norm %.3f  %.0f tokens/s"
              % (s, " (warm-up)" if s < a.warmup else "", dt * 1e3, loss.item(), norm.item(),
                 a.batch * a.seq / dt), flush=True)
        if s >= a.warmup:
            times.append(dt)
    times.sort()
    med = times[len(times) // 2]
    print("median step: %.1f ms" % (med * 1e3))
    print("tokens/s: %.1f" % (a.batch * a.seq / med))


if __name__ == "__main__":
    main()

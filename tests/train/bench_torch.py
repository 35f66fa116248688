"""PyTorch side of tests/train/bench_train.sh: full training steps (forward, backward,
gradient clipping, AdamW) of the same GPT-2 gpt3d trains (learned positions, pre-LN blocks,
GELU-tanh MLP, output layer tied to the padded embedding), random tokens, given its best CPU
settings: flush-to-zero for denormals, the thread count asked for, one inter-op thread,
multi-tensor (foreach) AdamW, gradients set to None instead of zeroed.

Usage: bench_torch.py [--layers L] [--hidden C] [--heads NH] [--seq T] [--batch B]
                      [--vocab V] [--steps N] [--warmup W] [--threads N]
Prints one line per step and "tokens/s: X" (median step)."""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_gpt import GPT, adamw_groups, padded_vocab  # noqa: E402 (tests/torch_gpt.py)


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
    Vp = padded_vocab(a.vocab)
    model = GPT(a.layers, a.hidden, a.heads, a.seq, Vp)   # attention written out, causal mask
    opt = torch.optim.AdamW(adamw_groups(model), lr=1e-4, betas=(0.9, 0.95), eps=1e-8,
                            foreach=True)
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

"""PyTorch reference for tests/kernels/bench_gpu.sh: full training steps (forward, backward,
gradient clipping, AdamW) of the GPT gpt3d trains -- learned positions, pre-LN blocks, GELU-tanh
MLP, output layer tied to the embedding padded to a multiple of 128 -- with the fast paths
PyTorch offers on one GPU: torch.compile, scaled_dot_product_attention (flash) with
is_causal, bf16 autocast over fp32 master weights, fused AdamW, TF32 matmuls, gradients set
to None.  Random tokens (the speed does not depend on the text).

Usage: torch_gpt_bench.py [--model 124M|350M|774M|1.5B] [--layers L --hidden C --heads NH]
                          [--seq T] [--batch B] [--vocab V] [--steps N] [--warmup W]
                          [--peak-tflops P] [--no-compile] [--device cuda|cpu]
Prints one line per timed step, then
    tokens/s: X
    model TFLOP/s: Y
    MFU: Z %   (against --peak-tflops, default 989 = H100 SXM dense bf16)
    config: ... (what actually ran: compile or eager, SDPA or manual attention, batch)
Model FLOPs use gpt3d's formula (docs/model.md): 3 x [L (2BT(4h^2 + 2hf) + 4BT^2 h) + 2BThVp].
If a step runs out of GPU memory the micro-batch is halved (and said so) until it fits."""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_gpt import GPT, HAVE_SDPA, adamw_groups, padded_vocab  # noqa: E402 (tests/torch_gpt.py)

MODELS = {  # layers, hidden, heads (GPT-2 family)
    "124M": (12, 768, 12),
    "350M": (24, 1024, 16),
    "774M": (36, 1280, 20),
    "1.5B": (48, 1600, 25),
}

OOM = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)


def model_flops(L, h, f, Vp, B, T):
    """gpt3d's model FLOPs per iteration (docs/model.md), no recomputation counted."""
    return 3 * (L * (2 * B * T * (4 * h * h + 2 * h * f) + 4 * B * T * T * h) + 2 * B * T * h * Vp)


def run(a, L, C, NH, Vp, B, dev):
    torch.manual_seed(0)
    model = GPT(L, C, NH, a.seq, Vp, sdpa=True).to(dev)
    groups = adamw_groups(model)
    fused = dev.type == "cuda"
    try:
        opt = torch.optim.AdamW(groups, lr=3e-4, betas=(0.9, 0.95), eps=1e-8, fused=fused)
    except TypeError:                      # an old torch without fused=
        opt = torch.optim.AdamW(groups, lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
        fused = False
    compiled = False
    step_model = model
    if not a.no_compile and hasattr(torch, "compile"):
        step_model = torch.compile(model)
        compiled = True
    idx = torch.randint(0, a.vocab, (B, a.seq), device=dev)
    tgt = torch.randint(0, a.vocab, (B, a.seq), device=dev)
    amp = torch.autocast(device_type=dev.type, dtype=torch.bfloat16)
    times = []
    for step in range(a.warmup + a.steps):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with amp:
            loss = step_model(idx, tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if step >= a.warmup:
            times.append(dt)
            print(f"step {step - a.warmup + 1}/{a.steps}: {dt * 1e3:.1f} ms, loss {loss.item():.4f}",
                  flush=True)
    return statistics.median(times), compiled, fused


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default=None)
    for name, default in (("layers", 12), ("hidden", 768), ("heads", 12), ("seq", 1024),
                          ("batch", 16), ("vocab", 50257), ("steps", 20), ("warmup", 5)):
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    L, C, NH = MODELS[a.model] if a.model else (a.layers, a.hidden, a.heads)
    if C % NH:
        sys.exit(f"--hidden {C} is not a multiple of --heads {NH}")
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_gpt_bench.py: torch sees no CUDA device (torch.cuda.is_available() is "
                 "False); use --device cpu only for a smoke test")
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    Vp = padded_vocab(a.vocab)
    B = a.batch
    while True:
        try:
            sec, compiled, fused = run(a, L, C, NH, Vp, B, dev)
            break
        except OOM as e:
            if "out of memory" not in str(e).lower() or B == 1:
                raise
            print(f"micro-batch {B} does not fit in GPU memory; trying {B // 2}", flush=True)
            B //= 2
            torch.cuda.empty_cache()
    tok = B * a.seq / sec
    flops = model_flops(L, C, 4 * C, Vp, B, a.seq) / sec
    name = f"{a.model or 'custom'} (L={L}, h={C}, heads={NH})"
    gpu = torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu"
    print(f"tokens/s: {tok:.0f}")
    print(f"model TFLOP/s: {flops / 1e12:.1f}")
    print(f"MFU: {100.0 * flops / (a.peak_tflops * 1e12):.1f} %")
    print(f"config: {name}, seq {a.seq}, micro-batch {B}, {gpu}, torch {torch.__version__}, "
          f"{'torch.compile' if compiled else 'eager (no torch.compile)'}, "
          f"{'SDPA' if HAVE_SDPA else 'manual attention (no SDPA)'}, "
          f"{'fused' if fused else 'unfused'} AdamW, bf16 autocast, median of {a.steps} steps")


if __name__ == "__main__":
    main()

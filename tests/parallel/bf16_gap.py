"""How far may the GPU's loss be from the CPU's in test_parallel_cuda.sh?  bf16, emulated.

test_parallel_cuda.sh trains a 4-layer GPT (hidden 128, 4 heads, sequence 64, a byte-level
vocabulary padded to 272, micro-batch 2, global batch 16, lr 3e-3) for 20 iterations on the
CPU (fp32) and on a GPU (bf16 activations, fp32 master weights and gradients: docs/cuda.md,
"Precision policy") and holds iterations 1-5 of every GPU layout to the CPU's losses.  This
script reproduces that comparison without a GPU, on the test's own problem:

  1. it makes the test's corpus (tests/lib.sh: g3_byte_corpus ... mixed4 400) and reads the
     test's flags from test_parallel_cuda.sh;
  2. per seed, it runs the CPU build's gpt3d train with those flags and --seed (the CPU
     losses the test compares against), once more for one iteration (whose learning rate is
     0, so the dumped parameters are the initial ones) and reads the training samples with
     tests/data/data_dump (the same index, seed and sample counts as the trainer);
  3. it trains the same GPT in PyTorch from those weights on those samples (8 micro-batches
     of 2 per iteration, Megatron's schedule, clipping 1.0, AdamW with weight decay 0.01 on
     the matrices), in fp32 (this must reproduce gpt3d's CPU losses: printed) and with the
     roundings of the CUDA backend switched on one by one:

       act      every activation and activation gradient rounded to bf16 where the CUDA
                backend stores it: embedding output, LayerNorm outputs, each GEMM's output
                (bias added in fp32 first), the residual stream, attention output, GELU
                output, logits; and the gradients of each of those; fp32 statistics,
                fp32 parameter gradients and cross-entropy (cuda.c, gpt_pass.c);
       weights  the forward and the input-gradient products read bf16 copies of the fp32
                master weights (g3_gpt_params_refresh after each AdamW step);
       attn_p   flash attention (native kernels and cuDNN alike): the unnormalised
                probabilities P rounded to bf16 before P V (the normaliser summed in fp32);
                backward: P rounded before dV = P^T dO, dS = P (dP - D) rounded before
                dQ = dS K and dK = dS^T Q, D = rowsum(dO O) from the bf16 O;
       fused    the GELU_AUX_BIAS epilogue: gelu of the unrounded fp32 pre-activation (pre
                itself stored rounded); the DGELU epilogue: (dout . w) * gelu'(pre) rounded
                once instead of twice (cuda.c: matmul_gelu_fwd, matmul_dgelu_bwd);
       splitk   an upper bound for split-K GEMMs that reduce in bf16 (kernels/gemm.cu
                excludes them since 2026-11-26): every bf16-output product with K >= 256
                summed from 4 bf16 partials;
       tp2      TP 2's extra rounding: the row-parallel outputs (dense, fc2) and the
                column-parallel input gradients (qkv, fc1) summed from two bf16 halves;
       ln_fp32  a diagnostic, not what the backend does: with weights, the LayerNorm gains
                and biases keep an fp32 working copy (a gain of 1 + lr is 1 in bf16).

  gpu = act + weights + attn_p + fused is what the one-GPU run does; gpu+tp2 the TP layouts.

For each seed and variant it prints the largest |loss - loss of gpt3d's CPU run| over
iterations 1-5 and 1-20 and the per-iteration gaps.

    /usr/bin/python3 tests/parallel/bf16_gap.py BUILDDIR [--seeds 1234,1,2] [--variants LIST]

Not a test: a measurement (docs/cuda.md, "bf16 against the CPU"), run by hand (2 cores: about
a minute per seed).
"""
import argparse
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEST = os.path.join(TOP, "tests", "parallel", "test_parallel_cuda.sh")
ROUNDINGS = ("act", "weights", "attn_p", "fused", "splitk", "tp2", "ln_fp32")
PRESETS = {
    "fp32": (),
    "act": ("act",),
    "act+weights": ("act", "weights"),
    "act+attn_p": ("act", "attn_p"),
    "act+fused": ("act", "fused"),
    "gpu": ("act", "weights", "attn_p", "fused"),
    "gpu+splitk": ("act", "weights", "attn_p", "fused", "splitk"),
    "gpu+tp2": ("act", "weights", "attn_p", "fused", "tp2"),
    "gpu+ln_fp32": ("act", "weights", "attn_p", "fused", "ln_fp32"),
}


def bf(x):
    """fp32 -> bf16 (round to nearest even) -> fp32."""
    return x.to(torch.bfloat16).to(torch.float32)


# ---- inputs from gpt3d -----------------------------------------------------------------------

def test_flags(data_dir):
    """The flags="..." of test_parallel_cuda.sh, with $D replaced, as a list."""
    text = open(TEST).read()
    m = re.search(r'^flags="(.*?)"$', text, re.S | re.M)
    if not m:
        sys.exit("bf16_gap: no flags=\"...\" in " + TEST)
    return m.group(1).replace("$D", data_dir).split()


def flag(flags, name, conv=float):
    return conv(flags[flags.index(name) + 1])


def read_dump(path):
    """A gradient/parameter dump (src/parallel/dump.c) of one rank: {name: tensor}."""
    flat, shapes = {}, {}
    with open(path, "rb") as f:
        if f.read(16) != b"gpt3d-grad-dump\n":
            sys.exit("bf16_gap: %s is not a gpt3d dump" % path)
        f.read(8)
        while True:
            head = f.read(4)
            if len(head) < 4:
                break
            name = f.read(struct.unpack("<I", head)[0]).decode()
            ndim = struct.unpack("<I", f.read(4))[0]
            shape = struct.unpack("<2q", f.read(16))[:ndim]
            count = struct.unpack("<Q", f.read(8))[0]
            idx = torch.frombuffer(bytearray(f.read(8 * count)), dtype=torch.int64)
            val = torch.frombuffer(bytearray(f.read(4 * count)), dtype=torch.float32)
            shapes[name] = shape
            flat.setdefault(name, torch.zeros(math.prod(shape)))[idx] = val
    return {n: t.view(*shapes[n]) for n, t in flat.items()}


def losses_of(path):
    """The training losses of a metrics file, in order."""
    out = []
    for line in open(path):
        if '"event":"train"' in line:
            out.append(float(re.search(r'"loss":([^,}]*)', line).group(1)))
    return out


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit("bf16_gap: %s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode,
                                                            r.stdout[-3000:]))
    return r.stdout


def gpt3d_case(builddir, tmp, seed):
    """Initial weights, the samples of every iteration and the CPU losses of gpt3d's run."""
    data = os.path.join(tmp, "data")
    if not os.path.exists(os.path.join(data, "verses.idx")):
        env = dict(os.environ, top_srcdir=TOP, top_builddir=builddir)
        subprocess.run(["sh", "-c", '. "$top_srcdir/tests/lib.sh"; g3_byte_corpus "$1" mixed4 400',
                        "sh", data], env=env, check=True, stdout=subprocess.DEVNULL)
    flags = test_flags(data)
    gpt3d = os.path.join(builddir, "src", "gpt3d")
    base = [gpt3d, "train"] + flags + ["--device", "cpu", "--seed", str(seed)]
    d = os.path.join(tmp, "s%d" % seed)
    os.makedirs(d, exist_ok=True)
    run(base + ["--metrics-file", d + "/cpu.jsonl", "--run-dir", d + "/cpu"])
    run(base + ["--train-iters", "1", "--lr-decay-iters", str(flag(flags, "--train-iters", int)),
                "--debug-grad-dump", d + "/init", "--run-dir",
                d + "/init.run", "--metrics-file", d + "/init.jsonl"])
    iters, gbs, T = flag(flags, "--train-iters", int), flag(flags, "--global-batch-size", int), \
        flag(flags, "--seq-length", int)
    out = run([os.path.join(builddir, "tests", "data", "data_dump"), "samples", "train", "0",
               str(iters * gbs), str(T), str(seed), str(iters * gbs),
               str(flag(flags, "--eval-iters", int) * gbs), "0",
               flags[flags.index("--split") + 1], "-", flag(flags, "--data-path", str)])
    rows = [[int(v) for v in line.split()] for line in out.splitlines()
            if line and not line.startswith("N ")]
    samples = torch.tensor(rows, dtype=torch.long).view(iters, gbs, T + 1)
    return flags, read_dump(d + "/init/params-rank00000.bin"), samples, losses_of(d + "/cpu.jsonl")


# ---- the GPT with switchable roundings ----------------------------------------------------------

def splitmm(a, b, pieces):
    """a (..., K) @ b (K, N) in fp32, or from `pieces` bf16-rounded partial sums over K."""
    K = a.shape[-1]
    if pieces <= 1 or K < 256 or K % pieces:
        return a @ b
    k = K // pieces
    return sum(bf(a[..., j * k:(j + 1) * k] @ b[j * k:(j + 1) * k]) for j in range(pieces))


class Linear(torch.autograd.Function):
    """y = x w^T + b with fwd-pieces / bwd-pieces partial sums (splitmm); dw, db in fp32."""

    @staticmethod
    def forward(ctx, x, w, b, pf, pb):
        ctx.save_for_backward(x, w)
        ctx.pb, ctx.has_b = pb, b is not None
        y = splitmm(x, w.t(), pf)
        return y + b if b is not None else y

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        dx = splitmm(g, w, ctx.pb)
        dw = g.reshape(-1, g.shape[-1]).t() @ x.reshape(-1, x.shape[-1])
        db = g.reshape(-1, g.shape[-1]).sum(0) if ctx.has_b else None
        return dx, dw, db, None, None


class RoundBF16(torch.autograd.Function):
    """bf16 rounding of a tensor in the forward and of its gradient in the backward."""

    @staticmethod
    def forward(ctx, x):
        return bf(x)

    @staticmethod
    def backward(ctx, g):
        return bf(g)


def gelu_grad(x):
    k = math.sqrt(2.0 / math.pi)
    t = torch.tanh(k * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)


class FusedGelu(torch.autograd.Function):
    """The GELU_AUX epilogue and its DGELU: f = bf16(gelu(pre)) from the fp32 pre, pre kept
    in bf16; d pre = bf16(d f * gelu'(bf16 pre)) with d f the unrounded product."""

    @staticmethod
    def forward(ctx, pre):
        pre_r = bf(pre)
        ctx.save_for_backward(pre_r)
        return bf(F.gelu(pre, approximate="tanh"))

    @staticmethod
    def backward(ctx, g):
        (pre_r,) = ctx.saved_tensors
        return bf(g * gelu_grad(pre_r))


class FlashAttention(torch.autograd.Function):
    """Causal attention over q, k, v (B, NH, T, HS) with flash attention's roundings: P (and
    dS) to bf16 before their products when p_bf16; the output rounded when act (then D, the
    rowsum of dO O, reads the rounded O and dO arrives rounded)."""

    @staticmethod
    def forward(ctx, q, k, v, p_bf16, act):
        T, HS = q.shape[-2], q.shape[-1]
        s = (q @ k.transpose(-2, -1)) / math.sqrt(HS)
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        m = s.amax(-1, keepdim=True)
        p = torch.exp(s - m)
        l = p.sum(-1, keepdim=True)
        o = ((bf(p) if p_bf16 else p) @ v) / l
        if act:
            o = bf(o)
        lse = m + torch.log(l)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.p_bf16, ctx.act = p_bf16, act
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        T, HS = q.shape[-2], q.shape[-1]
        if ctx.act:
            do = bf(do)
        sc = 1.0 / math.sqrt(HS)
        s = (q @ k.transpose(-2, -1)) * sc
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        p = torch.exp(s - lse)
        rp = bf if ctx.p_bf16 else (lambda t: t)
        dv = rp(p).transpose(-2, -1) @ do
        dp = do @ v.transpose(-2, -1)
        dvec = (do * o).sum(-1, keepdim=True)
        ds = rp(p * (dp - dvec))
        return (ds @ k) * sc, (ds.transpose(-2, -1) @ q) * sc, dv, None, None


class GPT:
    """gpt3d's GPT-2 (tests/train/ref_check.py's GPTRef) with the roundings of `on`."""

    def __init__(self, params, C, NH, on):
        self.p = {n: t.clone().requires_grad_() for n, t in params.items()}
        self.C, self.NH, self.on = C, NH, set(on)
        self.L = 1 + max(int(n.split(".")[1]) for n in params if n.startswith("layers."))

    def a(self, t):
        return RoundBF16.apply(t) if "act" in self.on else t

    def w(self, name):
        t = self.p[name]
        if "weights" in self.on and not ("ln_fp32" in self.on and "layernorm" in name):
            # the forward reads a bf16 copy; its gradient stays fp32
            return t + (bf(t.detach()) - t.detach())
        return t

    def lin(self, x, wname, bname, row_par=False, col_par=False):
        """A linear layer: row_par (dense, fc2) splits the forward sum under tp2, col_par (qkv,
        fc1) the input gradient's."""
        pf = pb = 1
        if "splitk" in self.on:
            pf = pb = 4
        if "tp2" in self.on:
            pf = 2 if row_par else pf
            pb = 2 if col_par else pb
        b = self.w(bname) if bname else None
        return Linear.apply(x, self.w(wname), b, pf, pb)

    def loss(self, x, y):
        a, w, C, NH = self.a, self.w, self.C, self.NH
        B, T = x.shape
        eps = 1e-5
        h = a(F.embedding(x, w("embedding.word_embeddings.weight"))
              + w("embedding.position_embeddings.weight")[:T])
        for i in range(self.L):
            def n(s):
                return "layers.%d.%s" % (i, s)
            z = a(F.layer_norm(h, (C,), w(n("input_layernorm.weight")),
                               w(n("input_layernorm.bias")), eps))
            qkv = a(self.lin(z, n("attention.qkv.weight"), n("attention.qkv.bias"), col_par=True))
            q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in qkv.split(C, dim=2))
            att = FlashAttention.apply(q, k, v, "attn_p" in self.on, "act" in self.on)
            att = att.transpose(1, 2).reshape(B, T, C)
            h = a(h + a(self.lin(att, n("attention.dense.weight"), n("attention.dense.bias"),
                                 row_par=True)))
            z = a(F.layer_norm(h, (C,), w(n("post_attention_layernorm.weight")),
                               w(n("post_attention_layernorm.bias")), eps))
            pre = self.lin(z, n("mlp.fc1.weight"), n("mlp.fc1.bias"), col_par=True)
            if "fused" in self.on and "act" in self.on:
                f = FusedGelu.apply(pre)
            else:
                f = a(F.gelu(a(pre), approximate="tanh"))
            h = a(h + a(self.lin(f, n("mlp.fc2.weight"), n("mlp.fc2.bias"), row_par=True)))
        z = a(F.layer_norm(h, (C,), w("final_layernorm.weight"), w("final_layernorm.bias"), eps))
        logits = a(self.lin(z, "embedding.word_embeddings.weight", None))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def megatron_lr(it, lr, min_lr, warm, decay):
    """The learning rate of iteration it (0-based: it steps done), Megatron's formula."""
    if warm > 0 and it <= warm:
        return lr * it / warm
    if it > decay:
        return min_lr
    return min_lr + (lr - min_lr) * 0.5 * (math.cos(math.pi * (it - warm) / (decay - warm)) + 1)


def train(params, samples, flags, on):
    C, NH = flag(flags, "--hidden-size", int), flag(flags, "--num-attention-heads", int)
    mb = flag(flags, "--micro-batch-size", int)
    lr, min_lr = flag(flags, "--lr"), flag(flags, "--min-lr")
    warm, iters = flag(flags, "--lr-warmup-iters", int), flag(flags, "--train-iters", int)
    model = GPT(params, C, NH, on)
    mats = [t for t in model.p.values() if t.dim() == 2]
    rest = [t for t in model.p.values() if t.dim() != 2]
    opt = torch.optim.AdamW([{"params": mats, "weight_decay": 0.01},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.999), eps=1e-8)
    losses = []
    for it in range(iters):
        for g in opt.param_groups:
            g["lr"] = megatron_lr(it, lr, min_lr, warm, iters)
        opt.zero_grad(set_to_none=True)
        gbs, total = samples.shape[1], 0.0
        for b0 in range(0, gbs, mb):
            s = samples[it, b0:b0 + mb]
            loss = model.loss(s[:, :-1], s[:, 1:])
            (loss * mb / gbs).backward()
            total += loss.item() * mb / gbs
        torch.nn.utils.clip_grad_norm_(list(model.p.values()), 1.0)
        opt.step()
        losses.append(total)
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("builddir", help="a configured and built gpt3d build directory")
    ap.add_argument("--seeds", default="1234", help="gpt3d --seed values, comma-separated")
    ap.add_argument("--variants", default=",".join(PRESETS),
                    help="comma-separated presets (%s) or '+'-joined roundings (%s)"
                    % (", ".join(PRESETS), ", ".join(ROUNDINGS)))
    args = ap.parse_args()
    torch.set_num_threads(1)
    variants = []
    for v in args.variants.split(","):
        on = PRESETS.get(v, tuple(x for x in v.split("+") if x))
        bad = [x for x in on if x not in ROUNDINGS]
        if bad:
            sys.exit("bf16_gap: unknown rounding %s (known: %s)" % (bad, ", ".join(ROUNDINGS)))
        variants.append((v, on))
    builddir = os.path.abspath(args.builddir)
    with tempfile.TemporaryDirectory(prefix="bf16_gap.") as tmp:
        for seed in (int(s) for s in args.seeds.split(",")):
            flags, params, samples, cpu = gpt3d_case(builddir, tmp, seed)
            print("seed %d: gpt3d CPU losses 1-5: %s" % (seed, " ".join("%.4f" % x
                                                                         for x in cpu[:5])))
            for name, on in variants:
                got = train(params, samples, flags, on)
                gaps = [abs(a - b) for a, b in zip(got, cpu)]
                print("  %-12s max |loss - gpt3d CPU| iterations 1-5 %.2g, 1-20 %.2g; per "
                      "iteration: %s" % (name, max(gaps[:5]), max(gaps),
                                         " ".join("%.4f" % d for d in gaps)), flush=True)


if __name__ == "__main__":
    main()

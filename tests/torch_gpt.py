"""The GPT gpt3d trains, written once in PyTorch for the benchmarks that race it
(tests/train/bench_torch.py on CPU, tests/kernels/torch_gpt_bench.py on a GPU): learned
positions, pre-LN blocks, GELU-tanh MLP, output layer tied to the embedding padded to a
multiple of 128 (Megatron's padding), weights N(0, 0.02), AdamW with decay on the matrices
only.  GPT(..., sdpa=True) uses scaled_dot_product_attention with is_causal where this torch
has it; otherwise (and with sdpa=False) attention is written out against a causal mask kept
as a buffer."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

HAVE_SDPA = hasattr(F, "scaled_dot_product_attention")


def padded_vocab(vocab):
    """Megatron's padding of the vocabulary to a multiple of 128, as gpt3d does."""
    return (vocab + 127) // 128 * 128


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
        """x: [B, T, C]; mask: [T, T] bool, True above the diagonal, or None for SDPA."""
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.NH, C // self.NH).transpose(1, 2)   # [B, NH, T, C/NH]
        k = k.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        v = v.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        if mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.NH))
            y = att.masked_fill(mask, float("-inf")).softmax(dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, C, NH, T, Vp, sdpa=False):
        super().__init__()
        self.wte = nn.Embedding(Vp, C)
        self.wpe = nn.Embedding(T, C)
        self.blocks = nn.ModuleList([Block(C, NH) for _ in range(L)])
        self.lnf = nn.LayerNorm(C)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
        self.sdpa = sdpa and HAVE_SDPA
        if not self.sdpa:
            self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))

    def forward(self, idx, targets):
        """idx, targets: [B, T] token ids; returns the mean cross-entropy (fp32)."""
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe.weight[:T]
        mask = None if self.sdpa else self.mask[:T, :T]
        for b in self.blocks:
            x = b(x, mask)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def adamw_groups(model):
    """The parameter groups gpt3d's AdamW uses: weight decay 0.1 on matrices, none else."""
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]

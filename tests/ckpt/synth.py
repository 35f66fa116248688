"""The synthetic checkpoint of tests/ckpt/synth.h, in numpy: tensor names,
shapes and the value of every element, computed independently of gpt3d."""
import numpy as np

M64 = (1 << 64) - 1


def fnv(s):
    h = 1469598103934665603
    for ch in s.encode():
        h = ((h ^ ch) * 1099511628211) & M64
    return h


def values(path, iteration, shape, dtype):
    """Full tensor `path` at `iteration`: float32 array (bf16 values are exact)."""
    n = int(np.prod(shape))
    seed = np.uint64((fnv(path) + iteration * 1000003) & M64)
    i = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = seed ^ (i * np.uint64(0x9E3779B97F4A7C15))
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xff51afd7ed558ccd)
        x ^= x >> np.uint64(33)
    if dtype == "bf16":
        v = ((x >> np.uint64(24)) & np.uint64(0xff)).astype(np.float32) / np.float32(256) - np.float32(0.5)
    else:
        v = ((x >> np.uint64(8)) & np.uint64(0xffffff)).astype(np.float32) / np.float32(16777216) - np.float32(0.5)
    return v.reshape(shape)


def model_params(L=4, h=16, f=64, Vp=64, P=32):
    """[(name without 'model/', shape)] in synth.h's order."""
    ps = [("embedding.word_embeddings.weight", (Vp, h)),
          ("embedding.position_embeddings.weight", (P, h))]
    for l in range(L):
        p = "layers.%d." % l
        ps += [(p + "input_layernorm.weight", (h,)), (p + "input_layernorm.bias", (h,)),
               (p + "attention.qkv.weight", (3 * h, h)), (p + "attention.qkv.bias", (3 * h,)),
               (p + "attention.dense.weight", (h, h)), (p + "attention.dense.bias", (h,)),
               (p + "post_attention_layernorm.weight", (h,)), (p + "post_attention_layernorm.bias", (h,)),
               (p + "mlp.fc1.weight", (f, h)), (p + "mlp.fc1.bias", (f,)),
               (p + "mlp.fc2.weight", (h, f)), (p + "mlp.fc2.bias", (h,))]
    ps += [("final_layernorm.weight", (h,)), ("final_layernorm.bias", (h,))]
    return ps

"""Independent checks of gpt3d checkpoints with h5py and numpy.

  check_ckpt.py vds INDEX ITER          every virtual dataset equals synth values
  check_ckpt.py same INDEX_A INDEX_B    both hold the same tensors and values
  check_ckpt.py export OUTDIR ITER [bf16]  safetensors + config.json of the synth model
Prints one line per problem; exit status 1 if any."""
import json
import os
import struct
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth  # noqa: E402

problems = []


def tensors(f):
    t = f["tensors"][...]
    return [(r["name"].decode(), r["dtype"].decode(), tuple(int(x) for x in r["shape"][: r["ndim"]])) for r in t]


def check_vds(index, it):
    with h5py.File(index, "r") as f:
        tl = tensors(f)
        if not tl:
            problems.append("no tensors in " + index)
        for name, dtype, shape in tl:
            ds = f[name]
            if not ds.is_virtual:
                problems.append(name + " is not a virtual dataset")
            got = ds.astype("float32")[...] if dtype == "bf16" else ds[...]
            want = synth.values(name, it, shape, dtype)
            if got.shape != want.shape or not np.array_equal(got, want):
                problems.append("%s: global view differs from the synthetic values" % name)
        print("vds: %d tensors checked in %s" % (len(tl), index))


def check_same(a, b):
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        ta, tb = tensors(fa), tensors(fb)
        if sorted(ta) != sorted(tb):
            problems.append("tensor lists differ: %d vs %d" % (len(ta), len(tb)))
        for name, dtype, shape in ta:
            if name not in fb:
                continue
            if not np.array_equal(fa[name][...], fb[name][...]):
                problems.append(name + " differs")
        for k in ("iteration", "consumed_samples", "consumed_tokens"):
            if fa.attrs[k] != fb.attrs[k]:
                problems.append("attribute %s differs" % k)
        if fa["config"][()] != fb["config"][()]:
            problems.append("config differs")
        for k in fa["state"]:
            if not np.array_equal(fa["state"][k][()], fb["state"][k][()]):
                problems.append("state/%s differs" % k)
        print("same: %d tensors compared" % len(ta))


def read_safetensors(path):
    with open(path, "rb") as fh:
        raw = fh.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    meta = header.pop("__metadata__", None)
    if meta != {"format": "pt"}:
        problems.append("__metadata__ is %r, transformers wants {'format': 'pt'}" % (meta,))
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k) for k, v in header.items())
    pos = 0
    for b, e, k in spans:
        if b != pos:
            problems.append("safetensors: %s starts at %d, expected %d (holes or overlaps)" % (k, b, pos))
        pos = e
    if pos != len(data):
        problems.append("safetensors: data is %d bytes, tensors cover %d" % (len(data), pos))
    out = {}
    for k, v in header.items():
        b, e = v["data_offsets"]
        if v["dtype"] == "F32":
            a = np.frombuffer(data[b:e], dtype="<f4")
        elif v["dtype"] == "BF16":
            a = (np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            problems.append("unexpected dtype " + v["dtype"])
            continue
        out[k] = a.reshape(v["shape"])
    return out


def check_export(outdir, it, bf16):
    L, h, f, V, Vp, P, heads = 4, 16, 64, 50, 64, 32, 4
    cfg = json.load(open(os.path.join(outdir, "config.json")))
    want_cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": V, "n_positions": P,
                "n_embd": h, "n_layer": L, "n_head": heads, "n_inner": f, "activation_function": "gelu_new",
                "tie_word_embeddings": True}
    for k, v in want_cfg.items():
        if cfg.get(k) != v:
            problems.append("config.json %s = %r, want %r" % (k, cfg.get(k), v))
    st = read_safetensors(os.path.join(outdir, "model.safetensors"))
    dt = "bf16" if bf16 else "f32"

    def val(name, shape):
        return synth.values("model/" + name, it, shape, "f32")

    expect = {"transformer.wte.weight": val("embedding.word_embeddings.weight", (Vp, h))[:V],
              "transformer.wpe.weight": val("embedding.position_embeddings.weight", (P, h)),
              "transformer.ln_f.weight": val("final_layernorm.weight", (h,)),
              "transformer.ln_f.bias": val("final_layernorm.bias", (h,))}
    for l in range(L):
        g, p = "layers.%d." % l, "transformer.h.%d." % l
        expect.update({
            p + "ln_1.weight": val(g + "input_layernorm.weight", (h,)),
            p + "ln_1.bias": val(g + "input_layernorm.bias", (h,)),
            p + "attn.c_attn.weight": val(g + "attention.qkv.weight", (3 * h, h)).T,
            p + "attn.c_attn.bias": val(g + "attention.qkv.bias", (3 * h,)),
            p + "attn.c_proj.weight": val(g + "attention.dense.weight", (h, h)).T,
            p + "attn.c_proj.bias": val(g + "attention.dense.bias", (h,)),
            p + "ln_2.weight": val(g + "post_attention_layernorm.weight", (h,)),
            p + "ln_2.bias": val(g + "post_attention_layernorm.bias", (h,)),
            p + "mlp.c_fc.weight": val(g + "mlp.fc1.weight", (f, h)).T,
            p + "mlp.c_fc.bias": val(g + "mlp.fc1.bias", (f,)),
            p + "mlp.c_proj.weight": val(g + "mlp.fc2.weight", (h, f)).T,
            p + "mlp.c_proj.bias": val(g + "mlp.fc2.bias", (h,)),
        })
    if sorted(st) != sorted(expect):
        problems.append("tensor names differ: extra %s, missing %s" % (sorted(set(st) - set(expect))[:5],
                                                                        sorted(set(expect) - set(st))[:5]))
    for k, w in expect.items():
        if k not in st:
            continue
        if bf16:   # round to nearest even, as the exporter does
            u = w.astype(np.float32).view(np.uint32).astype(np.uint64)
            u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
            w = u.astype(np.uint32).view(np.float32)
        if st[k].shape != w.shape:
            problems.append("%s: shape %s, want %s" % (k, st[k].shape, w.shape))
        elif not np.array_equal(st[k], w):
            problems.append("%s: values differ" % k)
    print("export: %d tensors, dtype %s, config.json checked" % (len(st), dt))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "vds":
        check_vds(sys.argv[2], int(sys.argv[3]))
    elif mode == "same":
        check_same(sys.argv[2], sys.argv[3])
    elif mode == "export":
        check_export(sys.argv[2], int(sys.argv[3]), len(sys.argv) > 4 and sys.argv[4] == "bf16")
    for p in problems[:30]:
        print("PROBLEM: " + p)
    sys.exit(1 if problems else 0)

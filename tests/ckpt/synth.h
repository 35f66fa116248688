/* A synthetic GPT training state for the checkpoint tests, the benchmark and
 * the ckpt_synth tool: the canonical tensor names and sharding rules of
 * docs/checkpoint-format.md, Megatron's TP split, pipeline stages with the tied
 * embedding on the last stage, and ZeRO-1 optimizer shards (each rank owns a
 * contiguous range of its (tp, pp) chunk's flattened buffer).
 *
 * Every element's value is a function of (tensor path, global flat index,
 * iteration) -- synth_value() -- so any layout can check what it loaded, and
 * tests/ckpt/synth.py computes the same values in numpy.
 *
 * Glossary: L layers, h hidden, f FFN hidden, V vocabulary (Vp padded), P positions. */
#ifndef G3_TESTS_CKPT_SYNTH_H
#define G3_TESTS_CKPT_SYNTH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"

typedef struct {
    int L, h, heads, f, V, Vp, P;
    g3_ckpt_dtype_t mdtype;      /* model tensors: f32 or bf16              */
    int optim;                   /* add master (bf16 only), exp_avg, exp_avg_sq */
    int64_t iteration;
} synth_cfg_t;

#define SYNTH_MAX_PARAMS 512
typedef struct {
    char             names[SYNTH_MAX_PARAMS][96];
    g3_ckpt_tensor_t t[SYNTH_MAX_PARAMS];
    int              n;
} synth_params_t;

typedef struct {
    g3_ckpt_state_t *state;
    void           **bufs;
    size_t          *sizes;
    int              nbufs;
} synth_rank_t;

static inline uint64_t synth_fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* f32: a 24-bit value in [-0.5, 0.5); bf16: an 8-bit one (exact in bf16). */
static inline void synth_value(const char *path, int64_t iteration, int64_t gidx,
                               g3_ckpt_dtype_t dt, void *out)
{
    uint64_t x = (synth_fnv(path) + (uint64_t)iteration * 1000003ull) ^
                 ((uint64_t)gidx * 0x9E3779B97F4A7C15ull);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    if (dt == G3_CKPT_BF16) {
        float v = (float)((x >> 24) & 0xff) / 256.0f - 0.5f;
        uint32_t u;
        memcpy(&u, &v, 4);
        uint16_t b = (uint16_t)(u >> 16);
        memcpy(out, &b, 2);
    } else {
        float v = (float)((x >> 8) & 0xffffff) / 16777216.0f - 0.5f;
        memcpy(out, &v, 4);
    }
}

static inline void synth_add(synth_params_t *ps, const char *name, int ndim, int64_t d0, int64_t d1,
                             g3_ckpt_rule_t rule, g3_ckpt_dtype_t dt, g3_ckpt_kind_t kind)
{
    g3_ckpt_tensor_t *t = &ps->t[ps->n];
    snprintf(ps->names[ps->n], sizeof(ps->names[0]), "%s", name);
    memset(t, 0, sizeof(*t));
    t->name = ps->names[ps->n];
    t->kind = kind;
    t->dtype = dt;
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = ndim > 1 ? d1 : 1;
    t->shape[2] = t->shape[3] = 1;
    t->rule = rule;
    ps->n++;
}

/* The model parameters ("model/..."), in the order a trainer would flatten them. */
static inline void synth_model_params(const synth_cfg_t *c, synth_params_t *ps)
{
    char n[96];
    g3_ckpt_dtype_t dt = c->mdtype;
    g3_ckpt_rule_t emb = g3_ckpt_rule_split(0, 1, G3_CKPT_PP_FIRST);

    ps->n = 0;
    emb.pad_dim = 0;
    emb.unpadded = c->V;
    synth_add(ps, "model/embedding.word_embeddings.weight", 2, c->Vp, c->h, emb, dt, G3_CKPT_MODEL);
    synth_add(ps, "model/embedding.position_embeddings.weight", 2, c->P, c->h,
              g3_ckpt_rule_replicated(G3_CKPT_PP_FIRST), dt, G3_CKPT_MODEL);
    for (int l = 0; l < c->L; l++) {
#define P1(suffix, d0, rule) snprintf(n, sizeof(n), "model/layers.%d.%s", l, suffix); \
        synth_add(ps, n, 1, d0, 1, rule, dt, G3_CKPT_MODEL)
#define P2(suffix, d0, d1, rule) snprintf(n, sizeof(n), "model/layers.%d.%s", l, suffix); \
        synth_add(ps, n, 2, d0, d1, rule, dt, G3_CKPT_MODEL)
        P1("input_layernorm.weight", c->h, g3_ckpt_rule_replicated(l));
        P1("input_layernorm.bias", c->h, g3_ckpt_rule_replicated(l));
        P2("attention.qkv.weight", 3 * c->h, c->h, g3_ckpt_rule_split(0, 3, l));
        P1("attention.qkv.bias", 3 * c->h, g3_ckpt_rule_split(0, 3, l));
        P2("attention.dense.weight", c->h, c->h, g3_ckpt_rule_split(1, 1, l));
        P1("attention.dense.bias", c->h, g3_ckpt_rule_replicated(l));
        P1("post_attention_layernorm.weight", c->h, g3_ckpt_rule_replicated(l));
        P1("post_attention_layernorm.bias", c->h, g3_ckpt_rule_replicated(l));
        P2("mlp.fc1.weight", c->f, c->h, g3_ckpt_rule_split(0, 1, l));
        P1("mlp.fc1.bias", c->f, g3_ckpt_rule_split(0, 1, l));
        P2("mlp.fc2.weight", c->h, c->f, g3_ckpt_rule_split(1, 1, l));
        P1("mlp.fc2.bias", c->h, g3_ckpt_rule_replicated(l));
#undef P1
#undef P2
    }
    synth_add(ps, "model/final_layernorm.weight", 1, c->h, 1, g3_ckpt_rule_replicated(G3_CKPT_PP_LAST), dt, G3_CKPT_MODEL);
    synth_add(ps, "model/final_layernorm.bias", 1, c->h, 1, g3_ckpt_rule_replicated(G3_CKPT_PP_LAST), dt, G3_CKPT_MODEL);
}

/* Does the rank of stage pp hold parameter t (the tied embedding also lives on the last stage)? */
static inline int synth_holds(const g3_ckpt_layout_t *l, const g3_ckpt_tensor_t *t)
{
    if (g3_ckpt_owner_stage(l, t->rule.pp_layer) == l->pp)
        return 1;
    return l->pp == l->pp_size - 1 && strcmp(t->name, "model/embedding.word_embeddings.weight") == 0;
}

static inline void *synth_alloc(synth_rank_t *r, size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    r->bufs = realloc(r->bufs, (size_t)(r->nbufs + 1) * sizeof(void *));
    r->sizes = realloc(r->sizes, (size_t)(r->nbufs + 1) * sizeof(size_t));
    r->bufs[r->nbufs] = p;
    r->sizes[r->nbufs++] = bytes;
    return p;
}

/* Global flat index in tensor t of element i (row-major) of the piece box. */
static inline int64_t synth_box_global(const g3_ckpt_tensor_t *t, const g3_ckpt_piece_t *box,
                                       int64_t i)
{
    int64_t g = 0, rem = i, idx[G3_CKPT_MAX_DIMS], stride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = rem % box->extent[d];
        rem /= box->extent[d];
    }
    for (int d = t->ndim - 1; d >= 0; d--) {
        g += (box->offset[d] + idx[d]) * stride;
        stride *= t->shape[d];
    }
    return g;
}

/* Global flat index of local element i of a tensor on TP rank tp. */
static inline int64_t synth_global_index(const g3_ckpt_tensor_t *t, int tp, int tps, int64_t i)
{
    g3_ckpt_piece_t b[3];
    int nb;
    g3_ckpt_tp_boxes(t, tp, tps, b, &nb);
    for (int k = 0; k < nb; k++) {
        int64_t vol = 1;
        for (int d = 0; d < t->ndim; d++)
            vol *= b[k].extent[d];
        if (i < vol)
            return synth_box_global(t, &b[k], i);
        i -= vol;
    }
    return -1;
}

/* Fill out[0..count) with the values of local elements [start, start + count)
 * of tensor t on TP rank tp (fill = 0: the 0xAB pattern instead). */
static inline void synth_fill_local(const g3_ckpt_tensor_t *t, int tp, int tps, int64_t start,
                                    int64_t count, int64_t iteration, int fill, void *out)
{
    g3_ckpt_piece_t b[3];
    int nb;
    size_t esz = g3_ckpt_dtype_size(t->dtype);
    int64_t base = 0, done = 0;

    if (!fill) {
        memset(out, 0xAB, (size_t)count * esz);
        return;
    }
    g3_ckpt_tp_boxes(t, tp, tps, b, &nb);
    for (int k = 0; k < nb && done < count; k++) {
        int64_t vol = 1, lo, hi;
        for (int d = 0; d < t->ndim; d++)
            vol *= b[k].extent[d];
        lo = start > base ? start : base;
        hi = start + count < base + vol ? start + count : base + vol;
        for (int64_t i = lo; i < hi; i++) {
            synth_value(t->name, iteration, synth_box_global(t, &b[k], i - base), t->dtype,
                        (char *)out + (size_t)(i - start) * esz);
            done++;
        }
        base += vol;
    }
}

/* Build rank (l->tp, l->pp, l->dp)'s state.  fill: 1 = the values of
 * c->iteration, 0 = a 0xAB pattern (to be overwritten by a load). */
static inline int synth_build(synth_rank_t *r, const synth_cfg_t *c, const g3_ckpt_layout_t *l,
                              int fill)
{
    synth_params_t *ps = malloc(sizeof(*ps));
    const char *slots[3];
    int nslots = 0;
    int64_t total = 0, chunk, lo, hi, base;

    memset(r, 0, sizeof(*r));
    if (g3_ckpt_state_init(l, &r->state) != G3_OK) {
        free(ps);
        return -1;
    }
    g3_ckpt_state_set_progress(r->state, c->iteration, c->iteration * 64, c->iteration * 64 * 128);
    synth_model_params(c, ps);
    for (int i = 0; i < ps->n; i++) {
        g3_ckpt_tensor_t *t = &ps->t[i];
        int64_t n = g3_ckpt_local_numel(t, l->tp_size);
        size_t esz = g3_ckpt_dtype_size(t->dtype);
        char *buf;
        if (!synth_holds(l, t))
            continue;
        buf = synth_alloc(r, (size_t)n * esz);
        synth_fill_local(t, l->tp, l->tp_size, 0, n, c->iteration, fill, buf);
        if (g3_ckpt_state_add_local(r->state, t, l->tp, l->tp_size, buf) != G3_OK) {
            free(ps);
            return -1;
        }
        total += n;
    }
    if (c->optim) {
        if (c->mdtype != G3_CKPT_F32)
            slots[nslots++] = "master";
        slots[nslots++] = "exp_avg";
        slots[nslots++] = "exp_avg_sq";
    }
    /* ZeRO-1: this DP rank owns [lo, hi) of the chunk's flattened buffer. */
    chunk = (total + l->dp_size - 1) / l->dp_size;
    lo = l->dp * chunk < total ? l->dp * chunk : total;
    hi = lo + chunk < total ? lo + chunk : total;
    for (int s = 0; s < nslots; s++) {
        float *flat = synth_alloc(r, (size_t)(hi - lo) * 4);
        base = 0;
        for (int i = 0; i < ps->n; i++) {
            g3_ckpt_tensor_t t = ps->t[i];
            char name[160];
            int64_t n, a, b;
            if (!synth_holds(l, &t))
                continue;
            n = g3_ckpt_local_numel(&t, l->tp_size);
            snprintf(name, sizeof(name), "optim/%s/%s", slots[s], t.name + strlen("model/"));
            t.name = name;
            t.kind = G3_CKPT_OPTIM;
            t.dtype = G3_CKPT_F32;
            a = lo > base ? lo : base;
            b = hi < base + n ? hi : base + n;
            if (a > base + n)
                a = base + n;
            if (b < a)
                b = a;
            synth_fill_local(&t, l->tp, l->tp_size, a - base, b - a, c->iteration, fill,
                             &flat[a - lo]);
            if (g3_ckpt_state_add_local_flat(r->state, &t, l->tp, l->tp_size, a - base, b - a,
                                             &flat[a - lo]) != G3_OK) {
                free(ps);
                return -1;
            }
            base += n;
        }
    }
    {
        int64_t rng[2] = { 1234, c->iteration };
        double lr = 1e-4 / (double)(c->iteration + 1);
        g3_ckpt_state_set_i64(r->state, "rng", rng, 2);
        g3_ckpt_state_set_f64(r->state, "lr", &lr, 1);
        g3_ckpt_state_set_str(r->state, "note", "synthetic");
    }
    {
        char cfg[512];
        snprintf(cfg, sizeof(cfg),
                 "num-layers = %d\nhidden-size = %d\nnum-attention-heads = %d\nffn-hidden-size = %d\n"
                 "max-position-embeddings = %d\nseq-length = %d\nvocab-size = %d\n",
                 c->L, c->h, c->heads, c->f, c->P, c->P, c->V);
        g3_ckpt_state_set_config(r->state, cfg);
    }
    free(ps);
    return 0;
}

static inline void synth_free(synth_rank_t *r)
{
    g3_ckpt_state_free(r->state);
    for (int i = 0; i < r->nbufs; i++)
        free(r->bufs[i]);
    free(r->bufs);
    free(r->sizes);
    memset(r, 0, sizeof(*r));
}

/* RET: number of buffers of got that differ from want (same layout and cfg). */
static inline int synth_compare(const synth_rank_t *got, const synth_rank_t *want)
{
    int bad = 0;
    if (got->nbufs != want->nbufs)
        return -1;
    for (int i = 0; i < got->nbufs; i++)
        if (got->sizes[i] != want->sizes[i] ||
            memcmp(got->bufs[i], want->bufs[i], got->sizes[i]) != 0)
            bad++;
    return bad;
}

static inline g3_ckpt_layout_t synth_layout(int tps, int pps, int dps, int rank, int L)
{
    g3_ckpt_layout_t l;
    memset(&l, 0, sizeof(l));
    l.tp_size = tps;
    l.pp_size = pps;
    l.dp_size = dps;
    /* Megatron's rank order: tp fastest, then dp, then pp */
    l.tp = rank % tps;
    l.dp = (rank / tps) % dps;
    l.pp = rank / (tps * dps);
    l.num_layers = L;
    return l;
}

/* Save cfg under TP x PP x DP, simulating every rank in this process. */
static inline g3_status_t synth_save(const char *dir, const synth_cfg_t *c, int tps, int pps,
                                     int dps, const g3_ckpt_save_opts_t *opts)
{
    int world = tps * pps * dps;
    synth_rank_t *ranks = calloc((size_t)world, sizeof(*ranks));
    g3_status_t st = G3_OK;

    for (int r = 0; r < world; r++) {
        g3_ckpt_layout_t l = synth_layout(tps, pps, dps, r, c->L);
        if (synth_build(&ranks[r], c, &l, 1) != 0)
            st = G3_ERR_INVALID_ARG;
    }
    if (st == G3_OK)
        st = g3_ckpt_save_prepare(dir, c->iteration, opts);
    for (int r = 0; st == G3_OK && r < world; r++)
        st = g3_ckpt_write_shards(dir, ranks[r].state, opts);
    if (st == G3_OK)
        st = g3_ckpt_commit(dir, ranks[0].state, opts);
    for (int r = 0; r < world; r++)
        synth_free(&ranks[r]);
    free(ranks);
    return st;
}

/* Load dir under TP x PP x DP and compare with cfg's values.  RET: G3_OK when
 * every rank's buffers match bitwise; *bad_p: differing buffers. */
static inline g3_status_t synth_check(const char *dir, const synth_cfg_t *c, int tps, int pps,
                                      int dps, const g3_ckpt_load_opts_t *opts, int *bad_p)
{
    int world = tps * pps * dps, bad = 0;
    g3_status_t st = G3_OK;

    for (int r = 0; st == G3_OK && r < world; r++) {
        g3_ckpt_layout_t l = synth_layout(tps, pps, dps, r, c->L);
        synth_rank_t got, want;
        if (synth_build(&got, c, &l, 0) != 0 || synth_build(&want, c, &l, 1) != 0)
            return G3_ERR_INVALID_ARG;
        st = g3_ckpt_load(dir, got.state, opts, NULL, NULL);
        if (st == G3_OK)
            bad += synth_compare(&got, &want) != 0;
        synth_free(&got);
        synth_free(&want);
    }
    *bad_p = bad;
    return st;
}

#endif

/* The GPT model: configuration checks, vocabulary padding, the parameter table (names,
 * shapes, weight decay, tensor-parallel shard indexing), counter-RNG initialisation,
 * FLOP counts, gradients against finite differences, recomputation, micro-batch
 * accumulation, logits, and bad token ids. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/log.h"
#include "core/rng.h"
#include "model/gpt.h"
#include "gpt_small.h"
#include "tap.h"

static g3_backend_t *be;

static void small_cfg(g3_gpt_config_t *c)
{
    g3t_gpt_small(c, 2, 32, 4, 16, 97);
    c->make_vocab_size_divisible_by = 8;
    c->seed = 11;
}

static void tokens(int32_t *tok, int32_t *tgt, int n, int V, uint64_t stream)
{
    for (int i = 0; i < n; i++) {
        tok[i] = (int32_t)(g3_rng_u64(3, stream, (uint64_t)i) % (uint64_t)V);
        tgt[i] = (int32_t)(g3_rng_u64(4, stream, (uint64_t)i) % (uint64_t)V);
    }
}

static void test_config(void)
{
    g3_gpt_config_t c;

    tap_ok(g3_gpt_padded_vocab(50257, 128, 1) == 50304, "GPT-2 vocabulary pads to 50304");
    tap_ok(g3_gpt_padded_vocab(50257, 128, 2) == 50432, "... and to 50432 with TP 2 (multiple of 256)");
    tap_ok(g3_gpt_padded_vocab(512, 128, 1) == 512, "an aligned vocabulary is not padded");
    tap_ok(g3_gpt_padded_vocab(97, 1, 1) == 97, "divisible-by 1 pads nothing");

    /* one edit of the small configuration each and what the check answers */
#define CHECKED(edit, want, what)                                  \
    do {                                                           \
        small_cfg(&c);                                             \
        edit;                                                      \
        tap_ok(g3_gpt_config_check(&c) == (want), "%s", what);     \
    } while (0)
    CHECKED((void)0, G3_OK, "a good configuration passes");
    CHECKED(c.num_attention_heads = 5, G3_ERR_INVALID_ARG, "hidden size not divisible by heads is refused");
    CHECKED(c.max_position_embeddings = 8, G3_ERR_INVALID_ARG, "a sequence longer than the positions is refused");
    CHECKED(c.num_layers = 0, G3_ERR_INVALID_ARG, "zero layers are refused");
    CHECKED(c.tp_size = 2, G3_OK, "TP 2 is a valid layout (src/parallel runs it)");
    CHECKED((c.pp_size = 2, c.num_layers = 3), G3_ERR_INVALID_ARG, "layers not divisible by PP are refused");
#undef CHECKED

    /* FLOPs: Megatron's 72 B T L h^2 (1 + T/(6h) + V/(12 L h)) for F = 4h */
    small_cfg(&c);
    c.num_layers = 4; c.hidden_size = 256; c.seq_length = 256; c.vocab_size = 50257;
    c.make_vocab_size_divisible_by = 128;
    {
        double B = 4, T = 256, L = 4, h = 256, V = 50304;
        double want = 72.0 * B * T * L * h * h * (1.0 + T / (6.0 * h) + V / (12.0 * L * h));
        tap_close_f(g3_gpt_flops_per_step(&c, 4, 256), want, 1e-12, 0, "FLOPs per step follow Megatron's formula");
    }
    tap_ok(g3_gpt_num_parameters(&c) ==
               50304LL * 256 + 256 * 256 + 4 * (12LL * 256 * 256 + 13 * 256) + 2 * 256,
           "parameter count (tied output layer counted once)");
}

static void test_params(void)
{
    g3_gpt_config_t c;
    g3_gpt_t *m;
    const g3_gpt_param_t *p;
    float *buf;
    int bad = 0;

    small_cfg(&c);
    if (!tap_ok(g3_gpt_init(&c, be, &m) == G3_OK, "a small model initialises"))
        return;
    tap_ok(m->nparams == 2 + 12 * 2 + 2, "28 parameter tensors for 2 layers");
    tap_ok(m->Vp == 104, "vocabulary 97 padded to 104 (multiple of 8)");
    p = g3_gpt_param_find(m, "layers.1.attention.qkv.weight");
    tap_ok(p && p->shape[0] == 96 && p->shape[1] == 32 && p->tp_dim == 0 && p->tp_parts == 3,
           "qkv weight: (3h, h), split by rows in three parts");
    p = g3_gpt_param_find(m, "layers.0.mlp.fc2.weight");
    tap_ok(p && p->shape[0] == 32 && p->shape[1] == 128 && p->tp_dim == 1, "fc2 weight: (h, 4h), row-parallel");
    p = g3_gpt_param_find(m, "embedding.word_embeddings.weight");
    tap_ok(p && p->shape[0] == 104 && p->weight_decay && p->layer == -1, "word embeddings: padded rows, decayed");
    p = g3_gpt_param_find(m, "final_layernorm.bias");
    tap_ok(p && !p->weight_decay && p->layer == -2, "final LayerNorm: no weight decay, last stage");
    for (int i = 0; i < m->nparams; i++) {
        const g3_gpt_param_t *q = &m->params[i];
        int is_bias_or_ln = strstr(q->name, ".bias") || strstr(q->name, "layernorm");
        if (q->weight_decay == is_bias_or_ln || q->offset % 16 != 0)
            bad++;
    }
    tap_ok(bad == 0, "weight decay exactly on weights and embeddings; tensors 64-byte aligned");

    /* initial values: (seed, stream of the name, global index); scaled std on projections */
    buf = malloc(sizeof(float) * 104 * 32);
    p = g3_gpt_param_find(m, "layers.1.attention.dense.weight");
    g3_gpt_param_read(m, p, 0, buf);
    {
        uint64_t s = g3_rng_stream_from_name(p->name);
        float std = 0.02f / sqrtf(4.0f);
        int same = 1;
        for (int i = 0; i < 32 * 32; i++)
            same &= buf[i] == std * g3_rng_normal(11, s, (uint64_t)i);
        tap_ok(same, "dense weight = 0.02/sqrt(2L) x normal(seed, name, global index)");
    }
    p = g3_gpt_param_find(m, "embedding.word_embeddings.weight");
    g3_gpt_param_read(m, p, 0, buf);
    {
        uint64_t s = g3_rng_stream_from_name(p->name);
        tap_ok(buf[100 * 32 + 5] == 0.02f * g3_rng_normal(11, s, 100 * 32 + 5), "padded embedding rows are initialised too");
    }
    p = g3_gpt_param_find(m, "layers.0.post_attention_layernorm.weight");
    g3_gpt_param_read(m, p, 0, buf);
    tap_ok(buf[0] == 1.0f && buf[31] == 1.0f, "LayerNorm weights start at 1");
    p = g3_gpt_param_find(m, "layers.0.mlp.fc1.bias");
    g3_gpt_param_read(m, p, 0, buf);
    tap_ok(buf[0] == 0.0f && buf[127] == 0.0f, "biases start at 0");
    free(buf);
    g3_gpt_free(m);

    /* the same seed gives the same model; another seed another */
    {
        g3_gpt_t *a, *b, *a2;
        static float x[128 * 32], y[128 * 32], x2[128 * 32];
        g3_gpt_init(&c, be, &a);
        g3_gpt_init(&c, be, &a2);
        c.seed = 12;
        g3_gpt_init(&c, be, &b);
        g3_gpt_param_read(a, g3_gpt_param_find(a, "layers.0.mlp.fc1.weight"), 0, x);
        g3_gpt_param_read(a2, g3_gpt_param_find(a2, "layers.0.mlp.fc1.weight"), 0, x2);
        g3_gpt_param_read(b, g3_gpt_param_find(b, "layers.0.mlp.fc1.weight"), 0, y);
        tap_ok(memcmp(x, x2, sizeof(x)) == 0, "the same seed gives the same weights");
        tap_ok(memcmp(x, y, sizeof(x)) != 0, "another seed gives other weights");
        g3_gpt_free(a);
        g3_gpt_free(a2);
        g3_gpt_free(b);
    }
}

/* Tensor-parallel shard indexing, on hand-made descriptors (this build runs TP = 1). */
static void test_shard_index(void)
{
    g3_gpt_param_t qkv = { .ndim = 2, .shape = { 12, 4 }, .tp_dim = 0, .tp_parts = 3,
                           .local_shape = { 6, 4 } };
    g3_gpt_param_t row = { .ndim = 2, .shape = { 4, 8 }, .tp_dim = 1, .tp_parts = 1,
                           .local_shape = { 4, 4 } };
    g3_gpt_param_t bias = { .ndim = 1, .shape = { 12, 1 }, .tp_dim = 0, .tp_parts = 3,
                            .local_shape = { 6, 1 } };
    /* TP 2, rank 1 of a (3h=12, h=4) qkv: local rows [q 2..3, k 6..7, v 10..11] */
    tap_ok(g3_gpt_param_global_index(&qkv, 1, 0) == 2 * 4, "qkv rank 1 local row 0 is global row 2 (q)");
    tap_ok(g3_gpt_param_global_index(&qkv, 1, 2 * 4 + 3) == 6 * 4 + 3, "qkv rank 1 local row 2 is global row 6 (k)");
    tap_ok(g3_gpt_param_global_index(&qkv, 1, 5 * 4) == 11 * 4, "qkv rank 1 local row 5 is global row 11 (v)");
    tap_ok(g3_gpt_param_global_index(&qkv, 0, 3 * 4) == 5 * 4, "qkv rank 0 local row 3 is global row 5 (k)");
    tap_ok(g3_gpt_param_global_index(&row, 1, 2 * 4 + 1) == 2 * 8 + 5, "row-parallel rank 1 (2, 1) is global (2, 5)");
    tap_ok(g3_gpt_param_global_index(&bias, 1, 4) == 10, "qkv bias rank 1 entry 4 is global 10");
}

/* Loss of tokens under the model, in double.  */
static double loss_of(g3_gpt_t *m, g3_gpt_acts_t *a, const int32_t *tok, const int32_t *tgt, int B,
                      int T)
{
    double s = 0.0;
    g3_gpt_forward(m, a, tok, tgt, B, T, 0.0f, &s);
    return s / (B * T);
}

static void test_gradients(int recompute)
{
    g3_gpt_config_t c;
    g3_gpt_t *m;
    g3_gpt_acts_t *a;
    int B = 2, T = 16;
    int32_t tok[32], tgt[32];
    double worst = 0.0, s;

    small_cfg(&c);
    c.recompute_activations = recompute;
    c.init_method_std = 0.2f;   /* gradients well above the finite-difference noise */
    g3_gpt_init(&c, be, &m);
    g3_gpt_acts_init(m, B, T, &a);
    tokens(tok, tgt, B * T, c.vocab_size, 1);
    g3_gpt_zero_grad(m);
    g3_gpt_forward(m, a, tok, tgt, B, T, 1.0f / (B * T), &s);
    g3_gpt_backward(m, a);
    /* two entries of every tensor against central differences of the fp32 loss */
    for (int i = 0; i < m->nparams; i++) {
        const g3_gpt_param_t *p = &m->params[i];
        for (int k = 0; k < 2; k++) {
            size_t j = (size_t)(k * 7919 + i * 31) % p->numel;
            float *w = m->w + p->offset + j, save = *w, h = 1e-2f;
            double lp, lm, fd, an = m->g[p->offset + j], e;
            *w = save + h;
            lp = loss_of(m, a, tok, tgt, B, T);
            *w = save - h;
            lm = loss_of(m, a, tok, tgt, B, T);
            *w = save;
            fd = (lp - lm) / (2.0 * h);
            e = fabs(fd - an) / (fabs(an) + 1e-3);
            if (e > worst)
                worst = e;
        }
    }
    tap_ok(worst < 3e-2, "%s: every tensor's gradient matches finite differences of the loss (worst %.2e)",
           recompute ? "recomputed activations" : "stored activations", worst);
    g3_gpt_acts_free(m, a);
    g3_gpt_free(m);
}

static void test_passes(void)
{
    g3_gpt_config_t c;
    g3_gpt_t *m, *mr;
    g3_gpt_acts_t *a, *ar;
    int B = 4, T = 16, Vp;
    int32_t tok[64], tgt[64];
    float *g1, *lg, *lg_last;
    double s1 = 0, s2 = 0, s3 = 0, maxd = 0, maxg = 0;
    int same = 1;

    small_cfg(&c);
    g3_gpt_init(&c, be, &m);
    g3_gpt_acts_init(m, B, T, &a);
    c.recompute_activations = 1;
    g3_gpt_init(&c, be, &mr);
    g3_gpt_acts_init(mr, B, T, &ar);
    tap_ok(g3_gpt_acts_bytes(ar) < g3_gpt_acts_bytes(a), "recomputation needs less activation memory (%zu < %zu bytes)",
           g3_gpt_acts_bytes(ar), g3_gpt_acts_bytes(a));
    tokens(tok, tgt, B * T, c.vocab_size, 2);

    g3_gpt_zero_grad(m);
    g3_gpt_forward(m, a, tok, tgt, B, T, 1.0f / (B * T), &s1);
    g3_gpt_backward(m, a);
    g3_gpt_zero_grad(mr);
    g3_gpt_forward(mr, ar, tok, tgt, B, T, 1.0f / (B * T), &s2);
    g3_gpt_backward(mr, ar);
    tap_ok(s1 == s2 && memcmp(m->g, mr->g, sizeof(float) * m->numel) == 0,
           "recomputed activations give bit-identical loss and gradients");

    /* --recompute-granularity: full is --recompute-activations; selective keeps all but the
     * attention state (one buffer for every layer, recomputed per layer in backward) */
    for (int gran = G3_GPT_RECOMPUTE_FULL; gran <= G3_GPT_RECOMPUTE_SELECTIVE; gran++) {
        const char *name = gran == G3_GPT_RECOMPUTE_FULL ? "full" : "selective";
        g3_gpt_config_t cg;
        g3_gpt_t *mg;
        g3_gpt_acts_t *ag;
        double sg = 0, sg2 = 0;

        g3_gpt_zero_grad(m);   /* m: the stored-activation reference for the batch of 4 */
        g3_gpt_forward(m, a, tok, tgt, B, T, 1.0f / (B * T), &s1);
        g3_gpt_backward(m, a);
        small_cfg(&cg);
        cg.recompute_granularity = gran;
        g3_gpt_init(&cg, be, &mg);
        g3_gpt_acts_init(mg, B, T, &ag);
        g3_gpt_zero_grad(mg);
        g3_gpt_forward(mg, ag, tok, tgt, B, T, 1.0f / (B * T), &sg);
        g3_gpt_backward(mg, ag);
        tap_ok(sg == s1 && memcmp(m->g, mg->g, sizeof(float) * m->numel) == 0,
               "--recompute-granularity %s: bit-identical loss and gradients", name);
        tap_ok(g3_gpt_acts_bytes(ag) < g3_gpt_acts_bytes(a) &&
                   g3_gpt_acts_bytes(ag) == g3_gpt_acts_estimate(mg, B, T),
               "--recompute-granularity %s: less activation memory (%zu < %zu bytes), as estimated",
               name, g3_gpt_acts_bytes(ag), g3_gpt_acts_bytes(a));
        /* two micro-batches through the same activations accumulate like one pass each */
        g3_gpt_zero_grad(mg);
        g3_gpt_forward(mg, ag, tok, tgt, 2, T, 1.0f / (B * T), &sg);
        g3_gpt_backward(mg, ag);
        g3_gpt_forward(mg, ag, tok + 2 * T, tgt + 2 * T, 2, T, 1.0f / (B * T), &sg2);
        g3_gpt_backward(mg, ag);
        g3_gpt_zero_grad(m);
        g3_gpt_forward(m, a, tok, tgt, 2, T, 1.0f / (B * T), &s2);
        g3_gpt_backward(m, a);
        g3_gpt_forward(m, a, tok + 2 * T, tgt + 2 * T, 2, T, 1.0f / (B * T), &s3);
        g3_gpt_backward(m, a);
        tap_ok(sg == s2 && sg2 == s3 && memcmp(m->g, mg->g, sizeof(float) * m->numel) == 0,
               "--recompute-granularity %s: two micro-batches accumulate bit-identically", name);
        g3_gpt_acts_free(mg, ag);
        g3_gpt_free(mg);
    }
    /* restore m's gradients of the batch of 4 for the checks below */
    g3_gpt_zero_grad(m);
    g3_gpt_forward(m, a, tok, tgt, B, T, 1.0f / (B * T), &s1);
    g3_gpt_backward(m, a);

    /* two micro-batches of 2 accumulate to the batch of 4 */
    g1 = malloc(sizeof(float) * m->numel);
    memcpy(g1, m->g, sizeof(float) * m->numel);
    g3_gpt_zero_grad(m);
    g3_gpt_forward(m, a, tok, tgt, 2, T, 1.0f / (B * T), &s2);
    g3_gpt_backward(m, a);
    g3_gpt_forward(m, a, tok + 2 * T, tgt + 2 * T, 2, T, 1.0f / (B * T), &s3);
    g3_gpt_backward(m, a);
    for (size_t i = 0; i < m->numel; i++) {
        double d = fabs((double)m->g[i] - g1[i]);
        if (d > maxd) maxd = d;
        if (fabs(g1[i]) > maxg) maxg = fabs(g1[i]);
    }
    tap_ok(fabs(s2 + s3 - s1) <= 1e-6 * s1, "micro-batch losses add up to the batch loss (%.9g + %.9g vs %.9g)",
           s2, s3, s1);
    tap_ok(maxd <= 1e-6 * maxg, "micro-batch gradients accumulate to the batch gradient (rel %.2e)", maxd / maxg);

    /* logits: full and last-position agree; the loss follows from them */
    Vp = m->Vp;
    lg = malloc(sizeof(float) * B * T * Vp);
    lg_last = malloc(sizeof(float) * B * Vp);
    g3_gpt_logits(m, a, tok, B, T, 0, lg);
    g3_gpt_logits(m, a, tok, B, T, 1, lg_last);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < Vp; j++)
            same &=
                fabsf(lg_last[(size_t)b * Vp + j] - lg[((size_t)b * T + T - 1) * Vp + j]) <= 1e-5f;
    tap_ok(same, "last-position logits equal the full logits' last rows (within 1e-5)");
    {
        double l = 0.0;
        for (int i = 0; i < B * T; i++) {
            double mx = -1e30, z = 0.0;
            for (int j = 0; j < Vp; j++)
                if (lg[(size_t)i * Vp + j] > mx)
                    mx = lg[(size_t)i * Vp + j];
            for (int j = 0; j < Vp; j++) z += exp(lg[(size_t)i * Vp + j] - mx);
            l += mx + log(z) - lg[(size_t)i * Vp + tgt[i]];
        }
        s1 = loss_of(m, a, tok, tgt, B, T) * B * T;
        tap_close_f(s1, l, 1e-6, 0, "the loss is the cross-entropy of the logits over the padded vocabulary");
    }
    /* a shorter sequence (generation) runs in the same activations */
    tap_ok(g3_gpt_logits(m, a, tok, 1, 5, 1, lg_last) == G3_OK, "a 1 x 5 context runs in 4 x 16 activations");

    /* bad ids are refused before they index anything */
    tok[5] = c.vocab_size;
    tap_ok(g3_gpt_forward(m, a, tok, tgt, B, T, 0.0f, &s1) == G3_ERR_INVALID_ARG, "an input id >= vocabulary is refused");
    tok[5] = 0;
    tgt[7] = -1;
    tap_ok(g3_gpt_forward(m, a, tok, tgt, B, T, 0.0f, &s1) == G3_ERR_INVALID_ARG, "a negative target id is refused");
    tap_ok(g3_gpt_forward(m, a, tok, tgt, B, T + 1, 0.0f, &s1) == G3_ERR_INVALID_ARG, "a batch larger than the activations is refused");
    tap_ok(g3_gpt_backward(m, a) == G3_ERR_INTERNAL, "backward without a training forward is refused");

    free(g1); free(lg); free(lg_last);
    g3_gpt_acts_free(m, a);
    g3_gpt_acts_free(mr, ar);
    g3_gpt_free(m);
    g3_gpt_free(mr);
}

/* g3_gpt_score against the logits: per token the log-softmax of the target over the padded
 * vocabulary and whether its logit is the row's largest; more, shorter sequences than the
 * activations' shape (B' T' <= B T) give the same values as one sequence at a time. */
static void test_score(void)
{
    g3_gpt_config_t c;
    g3_gpt_t *m;
    g3_gpt_acts_t *a;
    enum { B = 2, T = 16, B2 = 4, T2 = 8 };
    int32_t tok[B * T], tgt[B * T];
    float lp[B * T], lp1[T2], *lg;
    uint8_t gr[B * T], gr1[T2];
    double worst = 0.0;
    int bad = 0, greedy_seen = 0, same = 1;

    small_cfg(&c);
    if (g3_gpt_init(&c, be, &m) != G3_OK || g3_gpt_acts_init(m, B, T, &a) != G3_OK) {
        tap_ok(0, "model for the scoring test");
        return;
    }
    lg = malloc(sizeof(float) * (size_t)B * T * m->Vp);
    tokens(tok, tgt, B * T, c.vocab_size, 9);
    for (int i = 0; i < 3; i++)   /* a few targets that are the argmax: set below */
        tgt[i] = 0;
    g3_gpt_logits(m, a, tok, B, T, 0, lg);
    for (int i = 0; i < 3; i++) {
        const float *row = lg + (size_t)i * m->Vp;
        int best = 0;
        for (int j = 1; j < m->Vp; j++)
            best = row[j] > row[best] ? j : best;
        tgt[i] = best;
    }
    tap_ok(g3_gpt_score(m, a, tok, tgt, B, T, lp, gr) == G3_OK, "g3_gpt_score runs");
    for (int i = 0; i < B * T; i++) {
        const float *row = lg + (size_t)i * m->Vp;
        double mx = row[0], se = 0.0, want;
        for (int j = 1; j < m->Vp; j++)
            mx = row[j] > mx ? row[j] : mx;
        for (int j = 0; j < m->Vp; j++)
            se += exp((double)row[j] - mx);
        want = (double)row[tgt[i]] - mx - log(se);
        worst = fmax(worst, fabs(lp[i] - want) / fmax(fabs(want), 1e-3));
        bad += gr[i] != (row[tgt[i]] >= mx);
        greedy_seen += gr[i];
    }
    tap_ok(worst < 1e-5, "log-probabilities are the log-softmax of the logits over the padded vocabulary");
    tap_ok(bad == 0 && greedy_seen >= 3, "greedy flags mark the targets whose logit is the largest");
    /* B2 x T2 = B x T tokens: four sequences of 8 in the activations of two of 16 */
    tap_ok(g3_gpt_score(m, a, tok, tgt, B2, T2, lp, gr) == G3_OK, "more, shorter sequences fit the activations");
    for (int b = 0; b < B2; b++) {
        g3_gpt_score(m, a, tok + b * T2, tgt + b * T2, 1, T2, lp1, gr1);
        for (int t = 0; t < T2; t++)
            same &= fabsf(lp1[t] - lp[b * T2 + t]) <= 1e-5f * fmaxf(fabsf(lp1[t]), 1e-3f) &&
                    gr1[t] == gr[b * T2 + t];
    }
    tap_ok(same, "and score as each of them alone");
    tap_ok(g3_gpt_score(m, a, tok, tgt, B2, T + 1, lp, gr) == G3_ERR_INVALID_ARG, "a sequence longer than the activations' is refused");
    free(lg);
    g3_gpt_acts_free(m, a);
    g3_gpt_free(m);
}

int main(void)
{
    g3_log_set_level(G3_LOG_ERROR);
    if (g3_be_open(G3_BE_KIND_CPU, NULL, &be) != G3_OK)
        return 1;
    test_config();
    test_params();
    test_shard_index();
    test_gradients(0);
    test_gradients(1);
    test_passes();
    test_score();
    g3_be_close(be);
    return tap_exit();
}

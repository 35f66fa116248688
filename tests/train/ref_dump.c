/* Writes what tests/train/ref_check.py compares against PyTorch: a small GPT's initial
 * weights, one batch with its logits, loss and the gradient of every parameter, then ten
 * training iterations (2 micro-batches each, warm-up + cosine schedule, clipping, AdamW) with
 * their batches, learning rates, losses and gradient norms.
 *
 *   ref_dump OUT.bin [--recompute]
 *
 * Format: one line of JSON (config and a tensor table: name, dtype f32|i32|f64, shape, byte
 * offset from the end of that line), then the raw little-endian data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/log.h"
#include "core/rng.h"
#include "model/gpt.h"
#include "gpt_small.h"
#include "par_alone.h"
#include "train/schedule.h"

/* the test model and schedule (ref_check.py reads them from the header) */
enum {
    L = 2,
    C = 64,
    NH = 4,
    T = 80,
    V = 500,
    MB = 2,
    GBS = 4,
    STEPS = 10
}; /* T: two attention row blocks, the second partial */
static const double LR = 3e-3, MIN_LR = 1e-4, B1 = 0.9, B2 = 0.95, EPS = 1e-8, WD = 0.1;
static const double CLIP = 0.5;
static const int64_t WARMUP_ITERS = 3, DECAY_ITERS = STEPS;

typedef struct {
    char        name[96];
    const char *dtype;
    int         ndim;
    int64_t     shape[3];
    size_t      bytes;
    void       *data;     /* owned copy */
} entry_t;

static entry_t entries[256];
static int nentries;

static void add(const char *name, const char *dtype, int ndim, const int64_t *shape,
                const void *data)
{
    entry_t *e = &entries[nentries++];
    size_t n = 1, elem = !strcmp(dtype, "f64") ? 8 : 4;
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->dtype = dtype;
    e->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        e->shape[i] = shape[i];
        n *= (size_t)shape[i];
    }
    e->bytes = n * elem;
    e->data = malloc(e->bytes);
    memcpy(e->data, data, e->bytes);
}

static void add_params(g3_gpt_t *m, const char *prefix, int grad)
{
    for (int i = 0; i < m->nparams; i++) {
        const g3_gpt_param_t *p = &m->params[i];
        float *buf = malloc(sizeof(float) * p->numel);
        char name[96];
        g3_gpt_param_read(m, p, grad, buf);
        snprintf(name, sizeof(name), "%s%s", prefix, p->name);
        add(name, "f32", p->ndim, p->local_shape, buf);
        free(buf);
    }
}

static void batch(int32_t *tok, int32_t *tgt, int n, uint64_t stream)
{
    /* a learnable sequence with noise, so the loss moves in ten steps */
    for (int i = 0; i < n * T; i++) {
        uint64_t r = g3_rng_u64(42, stream, (uint64_t)i);
        tok[i] = (int32_t)((i % T) * 7 % V);
        if (r % 4 == 0)
            tok[i] = (int32_t)(r / 4 % V);
    }
    for (int i = 0; i < n * T; i++)
        tgt[i] = (i % T) + 1 < T ? tok[i + 1] : (int32_t)((tok[i] * 3 + 1) % V);
}

int main(int argc, char **argv)
{
    g3_gpt_config_t cfg;
    g3_alone_gpt_t run;
    g3_gpt_t *m;
    g3_gpt_acts_t *acts;
    g3_par_adamw_config_t ocfg = { B1, B2, EPS, WD, CLIP };
    g3_train_lr_sched_t sched = { LR, MIN_LR, WARMUP_ITERS * GBS, DECAY_ITERS * GBS,
                                  G3_LR_DECAY_COSINE };
    int32_t tok[GBS * T], tgt[GBS * T], all_tok[STEPS * GBS * T], all_tgt[STEPS * GBS * T];
    double losses[STEPS], lrs[STEPS], norms[STEPS], loss_sum;
    float *logits, loss1;
    FILE *f;
    size_t off = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: ref_dump OUT.bin [--recompute]\n");
        return 2;
    }
    g3_log_set_level(G3_LOG_WARN);
    g3t_gpt_small(&cfg, L, C, NH, T, V);
    cfg.seed = 5;
    cfg.recompute_activations = argc > 2 && !strcmp(argv[2], "--recompute");
    if (g3_alone_gpt_open(&run, &cfg, MB, T, GBS / MB, &ocfg, GBS) != G3_OK)
        return 1;
    m = run.m;
    acts = run.acts;
    add_params(m, "param/", 0);

    /* one batch: logits, loss, gradients */
    batch(tok, tgt, GBS, 1000);
    add("tokens", "i32", 2, (int64_t[]){ GBS, T }, tok);
    add("targets", "i32", 2, (int64_t[]){ GBS, T }, tgt);
    logits = malloc(sizeof(float) * GBS * T * (size_t)m->Vp);
    if (g3_gpt_logits(m, acts, tok, GBS, T, 0, logits) != G3_OK)
        return 1;
    add("logits", "f32", 3, (int64_t[]){ GBS, T, m->Vp }, logits);
    g3_gpt_zero_grad(m);
    if (g3_gpt_forward(m, acts, tok, tgt, GBS, T, 1.0f / (GBS * T), &loss_sum) != G3_OK ||
        g3_gpt_backward(m, acts) != G3_OK)
        return 1;
    loss1 = (float)(loss_sum / (GBS * T));
    add("loss", "f32", 1, (int64_t[]){ 1 }, &loss1);
    add_params(m, "grad/", 1);

    /* ten iterations through the trainer's step (the engine on one rank) */
    for (int s = 0; s < STEPS; s++) {
        int32_t *bt = all_tok + (size_t)s * GBS * T, *bg = all_tgt + (size_t)s * GBS * T;
        batch(bt, bg, GBS, (uint64_t)s);
        lrs[s] = g3_train_lr_at(&sched, (int64_t)s * GBS);
        if (g3_par_train_step(run.eng, bt, bg, GBS / MB, GBS, lrs[s], s + 1, &losses[s],
                              &norms[s]) != G3_OK)
            return 1;
    }
    add("train/tokens", "i32", 3, (int64_t[]){ STEPS, GBS, T }, all_tok);
    add("train/targets", "i32", 3, (int64_t[]){ STEPS, GBS, T }, all_tgt);
    add("train/lr", "f64", 1, (int64_t[]){ STEPS }, lrs);
    add("train/loss", "f64", 1, (int64_t[]){ STEPS }, losses);
    add("train/grad_norm", "f64", 1, (int64_t[]){ STEPS }, norms);
    add_params(m, "final/", 0);

    f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fprintf(
        f,
        "{\"format\":\"gpt3d-ref 1\",\"config\":{\"num_layers\":%d,\"hidden_size\":%d,\"num_attention_heads\":%d,\"ffn_hidden_size\":%d,\"seq_length\":%d,\"vocab_size\":%d,\"padded_vocab_size\":%d,\"layernorm_epsilon\":%.9g,\"micro_batch_size\":%d,\"global_batch_size\":%d,\"steps\":%d,\"lr\":%.17g,\"min_lr\":%.17g,\"warmup_iters\":%lld,\"decay_iters\":%lld,\"adam_beta1\":%.17g,\"adam_beta2\":%.17g,\"adam_eps\":%.17g,\"weight_decay\":%.17g,\"clip_grad\":%.17g,\"recompute\":%d},\"tensors\":[",
        L, C, NH, m->F, T, V, m->Vp, (double)cfg.layernorm_epsilon, MB, GBS, STEPS, LR, MIN_LR,
        (long long)WARMUP_ITERS, (long long)DECAY_ITERS, B1, B2, EPS, WD, CLIP,
        cfg.recompute_activations);
    for (int i = 0; i < nentries; i++) {
        entry_t *e = &entries[i];
        fprintf(f, "%s{\"name\":\"%s\",\"dtype\":\"%s\",\"offset\":%zu,\"shape\":[", i ? "," : "",
                e->name, e->dtype, off);
        for (int d = 0; d < e->ndim; d++)
            fprintf(f, "%s%lld", d ? "," : "", (long long)e->shape[d]);
        fprintf(f, "]}");
        off += e->bytes;
    }
    fprintf(f, "]}\n");
    for (int i = 0; i < nentries; i++) {
        fwrite(entries[i].data, 1, entries[i].bytes, f);
        free(entries[i].data);
    }
    if (fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    free(logits);
    g3_alone_gpt_close(&run);
    return 0;
}

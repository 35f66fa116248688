/* The optional fused ops of backend.h, wired into the model and the optimizer, checked on
 * the CPU: with GPT3D_FUSED_OPS=1 the CPU backend fills residual_layernorm_fwd,
 * matmul_gelu_fwd, matmul_dgelu_bwd, sumsq_acc, clip_scale and adamw_scaled with its plain
 * ops' own code, so the fused path must give BIT-IDENTICAL results to the plain one:
 *   - each fused op against its plain sequence on random inputs (sizes below and above the
 *     parallel threshold, an odd width), clip_scale's cases (off, no clipping, clipping,
 *     NaN and infinite norms);
 *   - the model (gpt_pass.c): loss and every gradient of a forward/backward, also with full
 *     and selective recomputation;
 *   - the optimizer (the engine on one rank, parallel/optim.c): 4 training steps with
 *     clipping active and 2 with it off: the same losses, norms and master weights.
 * This checks the model-side wiring without a GPU (CUDA fills the same ops with its
 * fusions, tests/kernels/test_gpt_cuda).  The 3D-parallel optimizer's use of them is
 * tests/kernels/test_fused_train.sh.
 * Shapes: B 2, T 32, C 64, NH 4, 2 layers, vocabulary 300 padded to 320. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/log.h"
#include "core/rng.h"
#include "model/gpt.h"
#include "gpt_small.h"
#include "par_alone.h"
#include "tap.h"

#define B 2
#define T 32

static void cfg_init(g3_gpt_config_t *c, int granularity)
{
    g3t_gpt_small(c, 2, 64, 4, T, 300);
    c->make_vocab_size_divisible_by = 64;
    c->seed = 11;
    c->recompute_granularity = granularity;
}

/* x (n,) uniform in [-scale, scale) from stream s */
static void fill(float *x, size_t n, uint64_t s, float scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = scale * (2.0f * (float)(g3_rng_u64(3, s, i) >> 40) / 16777216.0f - 1.0f);
}

static int same(const void *a, const void *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* The ops alone: fused (f) against plain (p) on the same inputs. */
static void ops_check(g3_backend_t *p, g3_backend_t *f)
{
    static const int shapes[][3] = { { 7, 33, 40 }, { 300, 128, 136 } };   /* N, C(=IC), OC */

    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
        int N = shapes[k][0], C = shapes[k][1], OC = shapes[k][2];
        size_t nc = (size_t)N * C, no = (size_t)N * OC;
        float *a = malloc(nc * 4), *b = malloc(nc * 4), *w = malloc(C * 4), *bi = malloc(C * 4);
        float *r1 = malloc(nc * 4), *r2 = malloc(nc * 4), *o1 = malloc(nc * 4),
              *o2 = malloc(nc * 4);
        float st1[2 * 300], st2[2 * 300];
        float *W = malloc((size_t)OC * C * 4), *bo = malloc(OC * 4);
        float *pre1 = malloc(no * 4), *pre2 = malloc(no * 4), *g1 = malloc(no * 4),
              *g2 = malloc(no * 4);
        float *dout = malloc(no * 4), *dw1 = calloc((size_t)OC * C, 4),
              *dw2 = calloc((size_t)OC * C, 4);
        float *db1 = calloc(OC, 4), *db2 = calloc(OC, 4);
        float *x = malloc(nc * 4), *pr = malloc(nc * 4), *d1 = malloc(nc * 4), *d2 = malloc(nc * 4);

        fill(a, nc, 1, 2.0f);
        fill(b, nc, 2, 1.0f);
        fill(w, C, 3, 1.5f);
        fill(bi, C, 4, 0.5f);
        p->ops->residual_fwd(p, r1, a, b, nc);
        p->ops->layernorm_fwd(p, o1, st1, st1 + N, r1, w, bi, N, C, 1e-5f);
        f->ops->residual_layernorm_fwd(f, r2, o2, st2, st2 + N, a, b, w, bi, N, C, 1e-5f);
        tap_ok(same(r1, r2, nc) && same(o1, o2, nc) && same(st1, st2, 2 * (size_t)N),
               "residual_layernorm_fwd N=%d C=%d: bit-identical to residual_fwd + layernorm_fwd",
               N, C);

        fill(W, (size_t)OC * C, 5, 0.3f);
        fill(bo, OC, 6, 0.2f);
        p->ops->matmul_fwd(p, NULL, pre1, o1, W, bo, N, C, OC);
        p->ops->gelu_fwd(p, g1, pre1, no);
        f->ops->matmul_gelu_fwd(f, NULL, g2, pre2, o1, W, bo, N, C, OC);
        tap_ok(same(pre1, pre2, no) && same(g1, g2, no),
               "matmul_gelu_fwd N=%d IC=%d OC=%d: bit-identical to matmul_fwd + gelu_fwd", N, C,
               OC);

        /* the backward of a layer (OC -> IC = C here: W^T's shape) whose input was gelu(pre) */
        fill(x, nc, 7, 1.0f);   /* pre (N,C) */
        p->ops->gelu_fwd(p, pr, x, nc);
        fill(dout, no, 8, 0.1f);
        p->ops->matmul_bwd(p, NULL, d1, dw1, db1, dout, pr, W, N, C, OC);
        p->ops->gelu_bwd(p, d1, x, d1, nc);
        f->ops->matmul_dgelu_bwd(f, NULL, d2, dw2, db2, dout, pr, x, W, N, C, OC);
        tap_ok(same(d1, d2, nc) && same(dw1, dw2, (size_t)OC * C) && same(db1, db2, OC),
               "matmul_dgelu_bwd N=%d IC=%d OC=%d: bit-identical to matmul_bwd + gelu_bwd", N,
               C, OC);

        /* AdamW on scaled gradients */
        {
            size_t n = nc;
            float *p1 = malloc(n * 4), *p2 = malloc(n * 4), *m1 = calloc(n, 4), *m2 = calloc(n, 4);
            float *v1 = calloc(n, 4), *v2 = calloc(n, 4), *gs = malloc(n * 4);
            float s = 0.37f;
            fill(p1, n, 9, 1.0f);
            memcpy(p2, p1, n * 4);
            for (int step = 1; step <= 3; step++) {
                fill(gs, n, 10 + (uint64_t)step, 3.0f);
                f->ops->adamw_scaled(f, p2, gs, m2, v2, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f,
                                     step, &s);
                p->ops->scale(p, gs, n, s);
                p->ops->adamw(p, p1, gs, m1, v1, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, step);
            }
            tap_ok(same(p1, p2, n) && same(m1, m2, n) && same(v1, v2, n),
                   "adamw_scaled (n=%zu, 3 steps): bit-identical to scale + adamw", n);
            free(p1), free(p2), free(m1), free(m2), free(v1), free(v2), free(gs);
        }
        {
            double acc = 1.25, part = 0.0;
            p->ops->sumsq(p, a, nc, &part);
            f->ops->sumsq_acc(f, &acc, a, nc);
            tap_ok(acc == 1.25 + part, "sumsq_acc (n=%zu) adds sumsq's sum", nc);
        }
        free(a), free(b), free(w), free(bi), free(r1), free(r2), free(o1), free(o2);
        free(W), free(bo), free(pre1), free(pre2), free(g1), free(g2), free(dout);
        free(dw1), free(dw2), free(db1), free(db2), free(x), free(pr), free(d1), free(d2);
    }

    /* clip_scale: the plain optimizer's rule */
    {
        struct { double ss, max; float want; const char *what; } c[] = {
            { 4.0, 0.0, 1.0f, "clipping off (max 0)" },
            { 4.0, 3.0, 1.0f, "norm 2 below max 3" },
            { 4.0, 1.0, (float)(1.0 / (2.0 + 1e-6)), "norm 2 above max 1" },
            { NAN, 1.0, 1.0f, "NaN norm" },
            { INFINITY, 1.0, 1.0f, "infinite norm" },
        };
        for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
            float s = -1.0f;
            f->ops->clip_scale(f, &s, &c[i].ss, c[i].max);
            tap_ok(s == c[i].want, "clip_scale, %s: %.9g", c[i].what, (double)s);
        }
    }
}

/* One forward/backward of tokens on m (zeroed gradients first).  OUT: *loss (sum). */
static g3_status_t pass(g3_gpt_t *m, g3_gpt_acts_t *a, const int32_t *tok, const int32_t *tgt,
                        double *loss)
{
    g3_status_t st;
    g3_gpt_zero_grad(m);
    st = g3_gpt_forward(m, a, tok, tgt, B, T, 1.0f / (B * T), loss);
    return st == G3_OK ? g3_gpt_backward(m, a) : st;
}

/* RET: malloc'd host copy of the gradients (grad) or master weights, flat (numel,). */
static float *host_copy(const g3_gpt_t *m, int grad)
{
    float *h = malloc(sizeof(float) * (m->numel ? m->numel : 1));
    if (h)
        m->be->ops->download(m->be, h, grad ? m->g : m->w, sizeof(float) * m->numel);
    return h;
}

/* The model on p and f (the same config): loss and gradients.  RET: 1 when bit-identical. */
static int model_check(g3_backend_t *p, g3_backend_t *f, int gran, const int32_t *tok,
                       const int32_t *tgt)
{
    g3_gpt_config_t c;
    g3_gpt_t *mp = NULL, *mf = NULL;
    g3_gpt_acts_t *ap = NULL, *af = NULL;
    double lp = 0.0, lf = -1.0;
    float *gp = NULL, *gf = NULL;
    int ok = 0;
    g3_status_t st;

    cfg_init(&c, gran);
    st = g3_gpt_init(&c, p, &mp);
    if (st == G3_OK)
        st = g3_gpt_init(&c, f, &mf);
    if (st == G3_OK)
        st = g3_gpt_acts_init(mp, B, T, &ap);
    if (st == G3_OK)
        st = g3_gpt_acts_init(mf, B, T, &af);
    if (st == G3_OK)
        st = pass(mp, ap, tok, tgt, &lp);
    if (st == G3_OK)
        st = pass(mf, af, tok, tgt, &lf);
    if (st == G3_OK) {
        gp = host_copy(mp, 1);
        gf = host_copy(mf, 1);
        ok = gp && gf && lp == lf && isfinite(lp) && same(gp, gf, mp->numel);
        if (!ok)
            printf("# loss plain %.17g fused %.17g\n", lp, lf);
    }
    free(gp);
    free(gf);
    g3_gpt_acts_free(mp, ap);
    g3_gpt_acts_free(mf, af);
    g3_gpt_free(mp);
    g3_gpt_free(mf);
    return ok;
}

/* steps of the trainer's step (the engine on one rank) on both at clip_grad clip.  RET: 1 when
 * every loss, norm and the final master weights are bit-identical; OUT: *clipped, whether a
 * norm exceeded clip. */
static int train_check(g3_backend_t *p, g3_backend_t *f, double clip, int steps,
                       const int32_t *tok, const int32_t *tgt, int *clipped)
{
    g3_gpt_config_t c;
    g3_gpt_t *m[2] = { NULL, NULL };
    g3_gpt_acts_t *a[2] = { NULL, NULL };
    g3_par_engine_t *o[2] = { NULL, NULL };
    g3_par_adamw_config_t oc = { 0.9, 0.95, 1e-8, 0.1, clip };
    g3_alone_t one;
    g3_backend_t *be[2] = { p, f };
    int ok = 1;
    g3_status_t st = G3_OK;

    *clipped = 0;
    cfg_init(&c, G3_GPT_RECOMPUTE_NONE);
    st = g3_alone_init(&one);
    for (int i = 0; i < 2 && st == G3_OK; i++) {
        st = g3_gpt_init(&c, be[i], &m[i]);
        if (st == G3_OK)
            st = g3_gpt_acts_init(m[i], B, T, &a[i]);
        if (st == G3_OK)
            st = g3_alone_engine(&one, m[i], B, T, 1, &oc, &o[i]);
    }
    /* the plain backend clips on the host, the fused one in backend memory */
    ok = st == G3_OK && p->ops->sumsq_acc == NULL && f->ops->sumsq_acc != NULL;
    for (int s = 1; s <= steps && ok; s++) {
        double loss[2] = { 0, 0 }, norm[2] = { 0, 0 };
        for (int i = 0; i < 2 && st == G3_OK; i++)
            st = g3_par_train_step(o[i], tok, tgt, 1, B, 1e-3, s, &loss[i], &norm[i]);
        ok = st == G3_OK && loss[0] == loss[1] && norm[0] == norm[1] && isfinite(norm[0]);
        if (!ok)
            printf("# step %d: loss %.17g / %.17g, norm %.17g / %.17g\n", s, loss[0], loss[1],
                   norm[0], norm[1]);
        *clipped |= clip > 0.0 && norm[0] > clip;
    }
    if (ok) {
        float *w0 = host_copy(m[0], 0), *w1 = host_copy(m[1], 0);
        ok = w0 && w1 && same(w0, w1, m[0]->numel);
        free(w0);
        free(w1);
    }
    for (int i = 0; i < 2; i++) {
        g3_par_engine_free(o[i]);
        if (a[i])
            g3_gpt_acts_free(m[i], a[i]);
        g3_gpt_free(m[i]);
    }
    g3_alone_free(&one);
    return ok;
}

int main(void)
{
    g3_backend_t *p = NULL, *f = NULL;
    g3_be_opts_t fused;
    int32_t tok[B * T], tgt[B * T];
    int clipped = 0;

    g3_log_set_level(G3_LOG_ERROR);
    unsetenv("GPT3D_FUSED_OPS");   /* the default of the fused_ops option */
    if (g3_be_open(G3_BE_KIND_CPU, NULL, &p) != G3_OK)
        return tap_ok(0, "the CPU backend opens"), tap_exit();
    g3_be_opts_default(&fused);
    fused.fused_ops = 1;
    if (g3_be_open(G3_BE_KIND_CPU, &fused, &f) != G3_OK)
        return tap_ok(0, "the CPU backend opens with fused_ops 1"), tap_exit();
    tap_ok(!p->ops->residual_layernorm_fwd && !p->ops->matmul_gelu_fwd &&
               !p->ops->matmul_dgelu_bwd && !p->ops->sumsq_acc && !p->ops->clip_scale &&
               !p->ops->adamw_scaled,
           "the CPU backend has no fused ops by default");
    tap_ok(f->ops->residual_layernorm_fwd && f->ops->matmul_gelu_fwd && f->ops->matmul_dgelu_bwd &&
               f->ops->sumsq_acc && f->ops->clip_scale && f->ops->adamw_scaled,
           "with fused_ops 1 it fills all six");

    ops_check(p, f);

    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(g3_rng_u64(5, 1, (uint64_t)i) % 300u);
        tgt[i] = (int32_t)(g3_rng_u64(5, 2, (uint64_t)i) % 300u);
    }
    tap_ok(model_check(p, f, G3_GPT_RECOMPUTE_NONE, tok, tgt),
           "model forward/backward: fused path bit-identical loss and gradients");
    tap_ok(model_check(p, f, G3_GPT_RECOMPUTE_FULL, tok, tgt),
           "the same with --recompute-granularity full");
    tap_ok(model_check(p, f, G3_GPT_RECOMPUTE_SELECTIVE, tok, tgt),
           "the same with --recompute-granularity selective");
    tap_ok(
        train_check(p, f, 0.05, 4, tok, tgt, &clipped) && clipped,
        "4 training steps, --clip-grad 0.05 (clipping active): bit-identical losses, norms, master weights");
    tap_ok(train_check(p, f, 0.0, 2, tok, tgt, &clipped),
           "2 training steps, clipping off: bit-identical");
    g3_be_close(p);
    g3_be_close(f);
    return tap_exit();
}

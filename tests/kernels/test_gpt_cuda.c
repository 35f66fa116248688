/* The whole model on the CUDA backend against the CPU backend: the same configuration and
 * seed give the same fp32 master weights (bit for bit); the loss, every parameter gradient
 * and the logits of one forward/backward agree at bf16 tolerance; recomputation (full and
 * selective) gives bit-identical results on CUDA too (its kernels are deterministic); an
 * optimizer step then a forward agrees with the CPU's; the fused ops (GELU / dGELU GEMM
 * epilogues, residual + LayerNorm) agree with the plain sequence (GPT3D_FUSED_OPS=0) at the
 * same bf16 tolerances; the device-side gradient clipping (sumsq_acc, clip_scale,
 * adamw_scaled) matches sumsq + scale + adamw within 1e-6.  Compiled in every build; without
 * the CUDA backend or a usable GPU it prints "1..0 # SKIP" with the reason.
 *
 * Attention backends: the main CUDA backend is opened with the deterministic option (cuDNN's
 * deterministic engines or the native kernels, and no GEMM autotuning), so the bit-identity
 * checks hold whichever attention runs; then the model runs once per attention backend
 * (attention native, and cudnn in a build with cuDNN, not deterministic): the
 * loss and gradients against the CPU's at the tolerances below, and against each other.
 *
 * Tolerances (bf16 has an 8-bit significand, one rounding <= 2^-8 relative; the passes round
 * every activation once per op, through 2 layers):
 *   loss (mean over B*T tokens):        |cuda - cpu| <= 1e-2 * cpu
 *   each gradient tensor:               ||g_cuda - g_cpu||_2 <= 5e-2 ||g_cpu||_2
 *   logits of the last position:        ||l_cuda - l_cpu||_2 <= 2e-2 ||l_cpu||_2
 * Shapes: B 4, T 64, C 128, NH 4 (HS 32), 2 layers, vocabulary 500 padded to 512. */
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
#include "tap.h"

#define B 4
#define T 64

static void cfg_init(g3_gpt_config_t *c, int granularity)
{
    g3t_gpt_small(c, 2, 128, 4, T, 500);
    c->make_vocab_size_divisible_by = 128;
    c->seed = 7;
    c->recompute_granularity = granularity;
}

/* RET: ||a - b||_2 / ||b||_2 (0 when both are 0).  a, b (n,) */
static double rel_l2(const float *a, const float *b, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* One forward/backward of tokens on m (zeroed gradients first).  OUT: *loss (mean). */
static g3_status_t pass(g3_gpt_t *m, g3_gpt_acts_t *a, const int32_t *tok, const int32_t *tgt,
                        double *loss)
{
    double sum = 0.0;
    g3_status_t st;

    g3_gpt_zero_grad(m);
    st = g3_gpt_forward(m, a, tok, tgt, B, T, 1.0f / (B * T), &sum);
    if (st == G3_OK)
        st = g3_gpt_backward(m, a);
    *loss = sum / (B * T);
    return st;
}

/* Host copy of every gradient (or master weight), in table order.  RET: malloc'd (numel,). */
static float *host_copy(const g3_gpt_t *m, int grad)
{
    float *h = calloc(m->numel ? m->numel : 1, sizeof(float));
    for (int i = 0; h && i < m->nparams; i++)
        g3_gpt_param_read(m, &m->params[i], grad, h + m->params[i].offset);
    return h;
}

/* A fresh model of cfg_init(granularity) on be and one pass() over tok: OUT *loss and *grads
 * (host_copy of the gradients; NULL after a failure).  RET: G3_OK or the first error. */
static g3_status_t fresh_pass(g3_backend_t *be, int granularity, const int32_t *tok,
                              const int32_t *tgt, double *loss, float **grads)
{
    g3_gpt_config_t c;
    g3_gpt_t *m = NULL;
    g3_gpt_acts_t *a = NULL;
    g3_status_t st;

    *grads = NULL;
    cfg_init(&c, granularity);
    st = g3_gpt_init(&c, be, &m);
    if (st == G3_OK)
        st = g3_gpt_acts_init(m, B, T, &a);
    if (st == G3_OK)
        st = pass(m, a, tok, tgt, loss);
    if (st == G3_OK)
        *grads = host_copy(m, 1);
    g3_gpt_acts_free(m, a);
    g3_gpt_free(m);
    return st;
}

int main(void)
{
    char why[1024];
    g3_backend_t *cpu = NULL, *cuda = NULL;
    g3_gpt_config_t c;
    g3_gpt_t *mc = NULL, *mg = NULL;
    g3_gpt_acts_t *ac = NULL, *ag = NULL;
    g3_be_opts_t det;
    int32_t tok[B * T], tgt[B * T];
    double lc = 0.0, lg = 0.0;
    float *wc, *wg, *gc, *gg;
    g3_status_t st;

    g3_log_set_level(G3_LOG_ERROR);
    if (g3_be_probe(G3_BE_KIND_CUDA, NULL, why, sizeof(why)) != G3_OK) {
        char msg[1100];
        snprintf(msg, sizeof(msg), "no CUDA backend here: %s", why);
        tap_skip_all(msg);
        return 0;
    }
    g3_be_opts_default(&det);
    det.deterministic = 1;   /* see the top: bit-identity checks below */
    if (g3_be_open(G3_BE_KIND_CPU, NULL, &cpu) != G3_OK ||
        g3_be_open(G3_BE_KIND_CUDA, &det, &cuda) != G3_OK) {
        tap_ok(0, "the CPU and CUDA backends open");
        return tap_exit();
    }
    printf("# CUDA device: %s; MFU peak %.0f TFLOP/s (%s)\n", cuda->device,
           cuda->peak_flops / 1e12, cuda->peak_how);
    tap_ok(cuda->act_dtype == G3_BE_BF16 && cpu->act_dtype == G3_BE_F32,
           "CUDA computes in bf16, the CPU in fp32");
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(g3_rng_u64(5, 1, (uint64_t)i) % 500u);
        tgt[i] = (int32_t)(g3_rng_u64(5, 2, (uint64_t)i) % 500u);
    }

    cfg_init(&c, G3_GPT_RECOMPUTE_NONE);
    st = g3_gpt_init(&c, cpu, &mc);
    if (st == G3_OK)
        st = g3_gpt_init(&c, cuda, &mg);
    if (st == G3_OK)
        st = g3_gpt_acts_init(mc, B, T, &ac);
    if (st == G3_OK)
        st = g3_gpt_acts_init(mg, B, T, &ag);
    tap_ok(st == G3_OK, "the model builds on both backends");
    if (st != G3_OK)
        return tap_exit();
    wc = host_copy(mc, 0);
    wg = host_copy(mg, 0);
    tap_ok(mc->numel == mg->numel && memcmp(wc, wg, sizeof(float) * mc->numel) == 0,
           "the same seed gives bit-identical fp32 master weights on both backends");

    st = pass(mc, ac, tok, tgt, &lc);
    tap_ok(st == G3_OK, "CPU forward and backward");
    st = pass(mg, ag, tok, tgt, &lg);
    tap_ok(st == G3_OK, "CUDA forward and backward");
    tap_ok(isfinite(lg) && fabs(lg - lc) <= 1e-2 * lc, "loss: CUDA %.6f, CPU %.6f (|diff| %.2e <= 1e-2 x CPU)",
           lg, lc, fabs(lg - lc));

    gc = host_copy(mc, 1);
    gg = host_copy(mg, 1);
    {
        double worst = 0.0;
        const char *worst_name = "";
        int bad = 0;
        for (int i = 0; i < mc->nparams; i++) {
            const g3_gpt_param_t *p = &mc->params[i];
            double e = rel_l2(gg + p->offset, gc + p->offset, p->numel);
            if (!(e <= 5e-2)) {
                bad++;
                printf("#   %s: relative L2 error %.3e\n", p->name, e);
            }
            if (!(e <= worst)) {
                worst = e;
                worst_name = p->name;
            }
        }
        tap_ok(bad == 0,
               "every gradient (%d tensors) within 5e-2 relative L2 of the CPU's (worst %.3e, %s)",
               mc->nparams, worst, worst_name);
    }

    /* recomputation is bit-identical on CUDA too */
    for (int gran = G3_GPT_RECOMPUTE_FULL; gran <= G3_GPT_RECOMPUTE_SELECTIVE; gran++) {
        double lr = 0.0;
        float *gr = NULL;
        st = fresh_pass(cuda, gran, tok, tgt, &lr, &gr);
        tap_ok(st == G3_OK && gr && lr == lg && memcmp(gr, gg, sizeof(float) * mg->numel) == 0,
               "CUDA, recompute %s: bit-identical loss and gradients",
               gran == G3_GPT_RECOMPUTE_FULL ? "full" : "selective");
        free(gr);
    }

    /* logits of the last position after one plain SGD-like change of the master weights
     * (parameters written from the host: the working copy must follow) */
    {
        size_t Vp = (size_t)mc->Vp_l;
        float *xc = malloc(sizeof(float) * B * Vp), *xg = malloc(sizeof(float) * B * Vp);
        for (size_t i = 0; i < mc->numel; i++)
            wc[i] -= 0.5f * gc[i];
        for (int i = 0; i < mc->nparams; i++) {
            g3_gpt_param_write(mc, &mc->params[i], wc + mc->params[i].offset);
            g3_gpt_param_write(mg, &mg->params[i], wc + mg->params[i].offset);
        }
        st = g3_gpt_logits(mc, ac, tok, B, T, 1, xc);
        if (st == G3_OK)
            st = g3_gpt_logits(mg, ag, tok, B, T, 1, xg);
        tap_ok(st == G3_OK && rel_l2(xg, xc, B * Vp) <= 2e-2,
               "after writing new weights, last-position logits within 2e-2 relative L2 (%.3e)",
               st == G3_OK ? rel_l2(xg, xc, B * Vp) : -1.0);
        free(xc);
        free(xg);
    }

    /* the fused ops (on by default) against the plain sequence (fused_ops 0) */
    {
        g3_backend_t *plain = NULL;
        g3_be_opts_t unfused;
        double lp = 0.0;
        float *gp = NULL;
        g3_be_opts_default(&unfused);
        unfused.fused_ops = 0;
        st = g3_be_open(G3_BE_KIND_CUDA, &unfused, &plain);
        tap_ok(st == G3_OK && cuda->ops->residual_layernorm_fwd && cuda->ops->matmul_gelu_fwd &&
                   cuda->ops->matmul_dgelu_bwd && cuda->ops->sumsq_acc &&
                   cuda->ops->clip_scale && cuda->ops->adamw_scaled &&
                   !plain->ops->matmul_gelu_fwd && !plain->ops->sumsq_acc,
               "CUDA fills the six fused ops; fused_ops 0 leaves them out");
        if (st == G3_OK)
            st = fresh_pass(plain, G3_GPT_RECOMPUTE_NONE, tok, tgt, &lp, &gp);
        tap_ok(
            st == G3_OK && gp && fabs(lp - lg) <= 1e-2 * lp && rel_l2(gg, gp, mg->numel) <= 5e-2,
            "fused (GELU/dGELU epilogues, residual + LayerNorm) against plain CUDA: loss %.6f / %.6f, gradients %.3e relative L2 (<= 1e-2, 5e-2)",
            lg, lp, gp ? rel_l2(gg, gp, mg->numel) : -1.0);
        free(gp);
        if (plain)
            g3_be_close(plain);
    }

    /* each attention backend: against the CPU, and cuDNN against the native kernels */
    {
        static const char *const atts[2] = { "native", "cudnn" };
        static const g3_be_att_t att_of[2] = { G3_BE_ATT_NATIVE, G3_BE_ATT_CUDNN };
        float *ga[2] = { NULL, NULL };
        double la[2] = { 0.0, 0.0 };
        for (int k = 0; k < 2; k++) {
            g3_backend_t *be = NULL;
            g3_be_opts_t ao;
#ifndef HAVE_CUDNN
            if (k == 1) {
                tap_skip("no cuDNN in this build: --attention-backend cudnn not checked");
                tap_skip("no cuDNN in this build");
                break;
            }
#endif
            g3_be_opts_default(&ao);
            ao.attention = att_of[k];
            st = g3_be_open(G3_BE_KIND_CUDA, &ao, &be);
            if (st == G3_OK)
                st = fresh_pass(be, G3_GPT_RECOMPUTE_NONE, tok, tgt, &la[k], &ga[k]);
            tap_ok(st == G3_OK && ga[k] && fabs(la[k] - lc) <= 1e-2 * lc &&
                       rel_l2(ga[k], gc, mc->numel) <= 5e-2,
                   "attention %s: loss %.6f vs CPU %.6f, gradients %.3e relative L2 (<= 1e-2, 5e-2)",
                   atts[k], la[k], lc, ga[k] ? rel_l2(ga[k], gc, mc->numel) : -1.0);
            if (be)
                g3_be_close(be);
        }
#ifdef HAVE_CUDNN
        tap_ok(ga[0] && ga[1] && fabs(la[1] - la[0]) <= 1e-2 * la[0] &&
                   rel_l2(ga[1], ga[0], mg->numel) <= 5e-2,
               "cuDNN attention against the native kernels: loss %.6f / %.6f, gradients %.3e relative L2 (<= 1e-2, 5e-2)",
               la[1], la[0], ga[0] && ga[1] ? rel_l2(ga[1], ga[0], mg->numel) : -1.0);
#endif
        free(ga[0]);
        free(ga[1]);
    }

    /* device-side clipping: sumsq_acc + clip_scale + adamw_scaled against sumsq on the host,
     * scale, adamw, on the same gradients (the fp32 ops are the same: 1e-6) */
    {
        size_t n = 100003;
        float *h = malloc(sizeof(float) * n * 4), *r1 = malloc(sizeof(float) * n * 3);
        float *r2 = malloc(sizeof(float) * n * 3);
        void *dv = NULL;
        float *p1, *p2, *g, *m1, *v1, *m2, *v2;
        double *acc;
        float *scale;
        double ss = 0.0, ss_dev = 0.0, coeff;
        int ok = h && r1 && r2 && cuda->ops->alloc(cuda, sizeof(float) * n * 7 + 64, "test",
                                                   &dv) == G3_OK;
        if (ok) {
            for (size_t i = 0; i < n * 4; i++)
                h[i] = (float)((double)(g3_rng_u64(9, 1, i) >> 11) / 9007199254740992.0 - 0.5);
            /* the fp64 accumulator first: after 7 x n floats (n odd) it would sit 4 bytes off
             * an 8-byte boundary, which the GPU faults on (misaligned address) */
            acc = dv;
            scale = (float *)(acc + 1);
            p1 = (float *)(acc + 8);
            p2 = p1 + n;
            g = p2 + n;
            m1 = g + n;
            v1 = m1 + n;
            m2 = v1 + n;
            v2 = m2 + n;
            cuda->ops->upload(cuda, p1, h, sizeof(float) * n);
            cuda->ops->upload(cuda, p2, h, sizeof(float) * n);
            cuda->ops->upload(cuda, g, h + n, sizeof(float) * n);
            cuda->ops->zero(cuda, m1, sizeof(float) * n * 4);
            cuda->ops->zero(cuda, acc, sizeof(double));
            cuda->ops->sumsq_acc(cuda, acc, g, n);
            cuda->ops->clip_scale(cuda, scale, acc, 1.0);   /* the norm is ~91: clips */
            cuda->ops->adamw_scaled(cuda, p2, g, m2, v2, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1,
                                    scale);
            cuda->ops->download(cuda, &ss_dev, acc, sizeof(double));
            cuda->ops->sumsq(cuda, g, n, &ss);
            coeff = 1.0 / (sqrt(ss) + 1e-6);
            cuda->ops->scale(cuda, g, n, (float)coeff);
            cuda->ops->adamw(cuda, p1, g, m1, v1, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1);
            cuda->ops->download(cuda, r1, p1, sizeof(float) * n);
            cuda->ops->download(cuda, r1 + n, m1, sizeof(float) * n);
            cuda->ops->download(cuda, r1 + 2 * n, v1, sizeof(float) * n);
            cuda->ops->download(cuda, r2, p2, sizeof(float) * n);
            cuda->ops->download(cuda, r2 + n, m2, sizeof(float) * n);
            cuda->ops->download(cuda, r2 + 2 * n, v2, sizeof(float) * n);
            ok = cuda->ops->sync(cuda) == G3_OK;
        }
        tap_ok(
            ok && fabs(ss_dev - ss) <= 1e-12 * ss && sqrt(ss) > 1.0 &&
                rel_l2(r2, r1, 3 * n) <= 1e-6,
            "device clipping (norm %.6g, clipped to 1): AdamW with the device scale matches scale + AdamW (%.3e relative L2 <= 1e-6)",
            sqrt(ss), ok ? rel_l2(r2, r1, 3 * n) : -1.0);
        if (dv)
            cuda->ops->free(cuda, dv);
        free(h);
        free(r1);
        free(r2);
    }

    free(wc);
    free(wg);
    free(gc);
    free(gg);
    g3_gpt_acts_free(mc, ac);
    g3_gpt_acts_free(mg, ag);
    g3_gpt_free(mc);
    g3_gpt_free(mg);
    g3_be_close(cpu);
    g3_be_close(cuda);
    return tap_exit();
}

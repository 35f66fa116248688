/* The references the CUDA kernel tests compare against (tests/kernels/ref.c), checked on the
 * CPU so that a failing GPU test points at the kernel, not at its reference.  Needs no GPU.
 *   - bf16 rounding: known bit patterns (ties to even, overflow, -0, NaN);
 *   - each backward reference against central finite differences of its forward reference
 *     (in double on fp32 inputs, step 1e-4; tolerance 1e-6 relative to the largest gradient:
 *     the truncation error is ~1e-8 and the steps are measured on the rounded inputs);
 *   - the transposed products of ref_gemm against explicit transposes (exact);
 *   - the forward references and AdamW against gpt3d's CPU backend (src/backend), which the
 *     CUDA backend must agree with: fp32 vs double, tolerance 1e-5 relative to the largest
 *     value (AdamW: 1e-6). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "kernels/ref.h"
#include "tap.h"

/* max|a - b| / max|b| */
static double relerr(const double *a, const double *b, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= num))
            num = d;
        if (fabs(b[i]) > den)
            den = fabs(b[i]);
    }
    return den > 0.0 ? num / den : num;
}

static double relerr_f(const float *a, const double *b, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= num))
            num = d;
        if (fabs(b[i]) > den)
            den = fabs(b[i]);
    }
    return den > 0.0 ? num / den : num;
}

static void test_bf16(void)
{
    static const struct { float x; uint16_t want; const char *what; } k[] = {
        { 1.0f, 0x3f80, "1" },
        { 1.00390625f, 0x3f80, "1 + 2^-8 (tie, to even: down)" },
        { 1.01171875f, 0x3f82, "1 + 3 2^-8 (tie, to even: up)" },
        { 1.0078125f, 0x3f81, "1 + 2^-7 (exact)" },
        { 1.0048828125f, 0x3f81, "1 + 2^-8 + 2^-10 (above the tie: up)" },
        { -0.0f, 0x8000, "-0" },
        { 3.4e38f, 0x7f80, "3.4e38 (overflows to inf)" },
        { -INFINITY, 0xff80, "-inf" },
        { 1e-40f, 0x0001, "1e-40 (subnormal, bits 0x000116c2: down)" },
    };
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        uint16_t got = ref_f2bf(k[i].x);
        tap_ok(got == k[i].want, "bf16 of %s: 0x%04x (want 0x%04x)", k[i].what, got, k[i].want);
    }
    tap_ok(isnan(ref_bf2f(ref_f2bf(NAN))), "bf16 of NaN is NaN");
    int exact = 1;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float x = ref_bf2f((uint16_t)h);
        if (!isnan(x) && ref_f2bf(x) != h)
            exact = 0;
    }
    tap_ok(exact, "every non-NaN bf16 round-trips through fp32 exactly");
}

static void test_gelu_grad(void)
{
    double worst = 0.0;
    for (double x = -8.0; x <= 8.0; x += 0.01) {
        double h = 1e-6, fd = (ref_gelu(x + h) - ref_gelu(x - h)) / (2 * h);
        double e = fabs(fd - ref_gelu_grad(x));
        if (e > worst)
            worst = e;
    }
    tap_ok(worst < 1e-8, "ref_gelu_grad = finite differences of ref_gelu (max |diff| %.1e)",
           worst);
}

/* Perturb x[i] (a float array the forward reads) and return the central difference of f. */
typedef double (*objective_t)(void *ctx);

static double fd_at(float *x, size_t i, objective_t f, void *ctx)
{
    float x0 = x[i];
    double h = 1e-4 * (fabs(x0) > 1.0 ? fabs(x0) : 1.0);
    x[i] = (float)(x0 + h);
    double hp = x[i] - x0, fp = f(ctx);
    x[i] = (float)(x0 - h);
    double hm = x0 - x[i], fm = f(ctx);
    x[i] = x0;
    return (fp - fm) / (hp + hm);
}

/* ---- layer norm --------------------------------------------------------------------------- */

typedef struct { float *a, *w, *bias, *dout; int N, C; } ln_t;

static double ln_obj(void *p)
{
    ln_t *k = p;
    size_t n = (size_t)k->N * k->C;
    double *out = calloc(n, sizeof(double)), *mean = calloc(k->N, sizeof(double));
    double *rstd = calloc(k->N, sizeof(double)), s = 0.0;
    ref_layernorm_fwd(NULL, out, mean, rstd, k->a, NULL, k->w, k->bias, k->N, k->C, 1e-5);
    for (size_t i = 0; i < n; i++)
        s += out[i] * k->dout[i];
    free(out);
    free(mean);
    free(rstd);
    return s;
}

static void test_layernorm_bwd(void)
{
    ln_t k = { 0 };
    k.N = 3; k.C = 7;
    size_t n = (size_t)k.N * k.C;
    k.a = malloc(sizeof(float) * n);
    k.dout = malloc(sizeof(float) * n);
    k.w = malloc(sizeof(float) * k.C);
    k.bias = malloc(sizeof(float) * k.C);
    ref_randn(k.a, n, 1.0f, 20, "ln a");
    ref_randn(k.dout, n, 1.0f, 20, "ln dout");
    ref_randn(k.w, k.C, 1.0f, 20, "ln w");
    ref_randn(k.bias, k.C, 1.0f, 20, "ln b");
    double *dinp = calloc(n, sizeof(double)), *dw = calloc(k.C, sizeof(double));
    double *db = calloc(k.C, sizeof(double)), *fd = calloc(n, sizeof(double));
    double *fdw = calloc(k.C, sizeof(double)), *fdb = calloc(k.C, sizeof(double));
    ref_layernorm_bwd(dinp, dw, db, k.dout, k.a, k.w, k.N, k.C, 1e-5);
    for (size_t i = 0; i < n; i++)
        fd[i] = fd_at(k.a, i, ln_obj, &k);
    for (int c = 0; c < k.C; c++) {
        fdw[c] = fd_at(k.w, c, ln_obj, &k);
        fdb[c] = fd_at(k.bias, c, ln_obj, &k);
    }
    tap_ok(relerr(dinp, fd, n) < 1e-6, "ref_layernorm_bwd dinp = finite differences (%.1e)",
           relerr(dinp, fd, n));
    tap_ok(relerr(dw, fdw, k.C) < 1e-6 && relerr(db, fdb, k.C) < 1e-6,
           "ref_layernorm_bwd dw, db = finite differences (%.1e, %.1e)", relerr(dw, fdw, k.C),
           relerr(db, fdb, k.C));
    free(k.a); free(k.dout); free(k.w); free(k.bias);
    free(dinp); free(dw); free(db); free(fd); free(fdw); free(fdb);
}

/* ---- attention ------------------------------------------------------------------------------ */

typedef struct { float *qkv, *dout; int B, T, NH, HS; } att_t;

static double att_obj(void *p)
{
    att_t *k = p;
    size_t n = (size_t)k->B * k->T * k->NH * k->HS;
    double *out = calloc(n, sizeof(double));
    double *lse = calloc((size_t)k->B * k->NH * k->T, sizeof(double)), s = 0.0;
    ref_attention_fwd(out, lse, k->qkv, k->B, k->T, k->NH, k->HS);
    for (size_t i = 0; i < n; i++)
        s += out[i] * k->dout[i];
    free(out);
    free(lse);
    return s;
}

static void test_attention_bwd(void)
{
    att_t k = { NULL, NULL, 2, 5, 2, 3 };
    size_t nq = (size_t)k.B * k.T * 3 * k.NH * k.HS, no = nq / 3;
    k.qkv = malloc(sizeof(float) * nq);
    k.dout = malloc(sizeof(float) * no);
    ref_randn(k.qkv, nq, 1.0f, 21, "att qkv");
    ref_randn(k.dout, no, 1.0f, 21, "att dout");
    double *g = calloc(nq, sizeof(double)), *fd = calloc(nq, sizeof(double));
    ref_attention_bwd(g, k.dout, k.qkv, k.B, k.T, k.NH, k.HS);
    for (size_t i = 0; i < nq; i++)
        fd[i] = fd_at(k.qkv, i, att_obj, &k);
    tap_ok(relerr(g, fd, nq) < 1e-6, "ref_attention_bwd = finite differences (%.1e)",
           relerr(g, fd, nq));
    free(k.qkv); free(k.dout); free(g); free(fd);
}

/* ---- cross-entropy -------------------------------------------------------------------------- */

typedef struct { float *logits; int32_t *tgt; int N, V; } xe_t;

static double xe_obj(void *p)
{
    xe_t *k = p;
    double *loss = calloc(k->N, sizeof(double)), *lse = calloc(k->N, sizeof(double)), s = 0.0;
    ref_xent(loss, lse, NULL, k->logits, k->V, k->tgt, 1.0, k->N, k->V);
    for (int i = 0; i < k->N; i++)
        s += 0.25 * loss[i];
    free(loss);
    free(lse);
    return s;
}

static void test_xent_grad(void)
{
    xe_t k = { NULL, NULL, 4, 9 };
    size_t n = (size_t)k.N * k.V;
    k.logits = malloc(sizeof(float) * n);
    k.tgt = malloc(sizeof(int32_t) * k.N);
    ref_randn(k.logits, n, 2.0f, 22, "xe logits");
    ref_randint(k.tgt, k.N, 0, k.V, 22, "xe targets");
    k.tgt[1] = -1;
    double *loss = calloc(k.N, sizeof(double)), *lse = calloc(k.N, sizeof(double));
    double *g = calloc(n, sizeof(double)), *fd = calloc(n, sizeof(double));
    ref_xent(loss, lse, g, k.logits, k.V, k.tgt, 0.25, k.N, k.V);
    for (size_t i = 0; i < n; i++)
        fd[i] = fd_at(k.logits, i, xe_obj, &k);
    tap_ok(relerr(g, fd, n) < 1e-6,
           "ref_xent dlogits = finite differences, ignored row included (%.1e)", relerr(g, fd, n));
    free(k.logits); free(k.tgt); free(loss); free(lse); free(g); free(fd);
}

/* ---- embedding and gemm ------------------------------------------------------------------- */

static void test_embedding_adjoint(void)
{
    /* <dout, fwd(wte)> = <bwd(dout), wte> for a linear map (wpe = NULL) */
    int B = 2, T = 3, C = 4, V = 5, v0 = 2;
    int32_t tok[6] = { 2, 3, 9, 2, 6, 0 };
    float wte[20], dout[24];
    double out[24], dwte[20] = { 0 }, lhs = 0.0, rhs = 0.0;
    ref_randn(wte, 20, 1.0f, 23, "emb wte");
    ref_randn(dout, 24, 1.0f, 23, "emb dout");
    ref_embedding_fwd(out, tok, wte, NULL, B, T, C, v0, V);
    ref_embedding_bwd(dwte, NULL, dout, tok, B, T, C, v0, V);
    for (int i = 0; i < 24; i++)
        lhs += out[i] * dout[i];
    for (int i = 0; i < 20; i++)
        rhs += dwte[i] * wte[i];
    tap_ok(fabs(lhs - rhs) < 1e-9 * (fabs(lhs) + 1.0),
           "ref_embedding_bwd is the adjoint of ref_embedding_fwd (%.9g vs %.9g)", lhs, rhs);
}

static void test_gemm_transposes(void)
{
    int M = 3, N = 4, K = 5;
    float A[15], B[20], At[15], Bt[20];
    double D1[12], D2[12];
    ref_randn(A, 15, 1.0f, 24, "gemm A");
    ref_randn(B, 20, 1.0f, 24, "gemm B");
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++)
            At[k * M + i] = A[i * K + k];
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++)
            Bt[j * K + k] = B[k * N + j];
    ref_gemm(D1, A, K, 0, B, N, 0, M, N, K);
    ref_gemm(D2, At, M, 1, Bt, K, 1, M, N, K);
    tap_ok(memcmp(D1, D2, sizeof(D1)) == 0, "ref_gemm: A^T^T B^T^T = A B exactly");
}

/* ---- against the CPU backend ------------------------------------------------------------- */

static void test_against_cpu_backend(void)
{
    g3_backend_t *be = NULL;
    g3_be_opts_t one;

    g3_be_opts_default(&one);
    one.nthreads = 1;
    if (g3_be_open(G3_BE_KIND_CPU, &one, &be) != G3_OK) {
        tap_ok(0, "open the CPU backend");
        return;
    }
    /* GELU */
    {
        size_t n = 1000;
        float *x = malloc(4 * n), *y = malloc(4 * n);
        double *r = malloc(8 * n);
        ref_randn(x, n, 2.0f, 25, "cpu gelu");
        be->ops->gelu_fwd(be, y, x, n);
        for (size_t i = 0; i < n; i++)
            r[i] = ref_gelu(x[i]);
        tap_ok(relerr_f(y, r, n) < 1e-5, "ref_gelu = CPU backend gelu_fwd (%.1e)",
               relerr_f(y, r, n));
        free(x); free(y); free(r);
    }
    /* layer norm */
    {
        int N = 5, C = 33;
        size_t n = (size_t)N * C;
        float *x = malloc(4 * n), *w = malloc(4 * C), *b = malloc(4 * C), *y = malloc(4 * n);
        float *mean = malloc(4 * N), *rstd = malloc(4 * N);
        double *r = malloc(8 * n), *rm = malloc(8 * N), *rr = malloc(8 * N);
        ref_randn(x, n, 1.0f, 26, "cpu ln x");
        ref_randn(w, C, 1.0f, 26, "cpu ln w");
        ref_randn(b, C, 1.0f, 26, "cpu ln b");
        be->ops->layernorm_fwd(be, y, mean, rstd, x, w, b, N, C, 1e-5f);
        ref_layernorm_fwd(NULL, r, rm, rr, x, NULL, w, b, N, C, 1e-5);
        tap_ok(relerr_f(y, r, n) < 1e-5 && relerr_f(rstd, rr, N) < 1e-5,
               "ref_layernorm_fwd = CPU backend layernorm_fwd (%.1e)", relerr_f(y, r, n));
        free(x); free(w); free(b); free(y); free(mean); free(rstd); free(r); free(rm); free(rr);
    }
    /* attention: the CPU backend keeps the T x T probabilities; compare the output */
    {
        int B = 2, T = 9, NH = 3, HS = 4, C = NH * HS;
        size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
        float *qkv = malloc(4 * nq), *out = malloc(4 * no), *att = malloc(4 * na);
        double *r = malloc(8 * no), *lse = malloc(8 * (size_t)B * NH * T);
        ref_randn(qkv, nq, 1.0f, 27, "cpu att");
        be->ops->attention_fwd(be, out, att, qkv, B, T, NH, HS);
        ref_attention_fwd(r, lse, qkv, B, T, NH, HS);
        tap_ok(relerr_f(out, r, no) < 1e-5, "ref_attention_fwd = CPU backend attention_fwd (%.1e)",
               relerr_f(out, r, no));
        free(qkv); free(out); free(att); free(r); free(lse);
    }
    /* cross-entropy */
    {
        int N = 6, V = 37;
        float *x = malloc(4 * (size_t)N * V), *loss = malloc(4 * N), *lse = malloc(4 * N);
        int32_t tgt[6];
        double rl[6], rlse[6];
        ref_randn(x, (size_t)N * V, 3.0f, 28, "cpu xent");
        ref_randint(tgt, N, 0, V, 28, "cpu xent targets");
        be->ops->xent_fwd(be, loss, lse, x, tgt, N, V);
        ref_xent(rl, rlse, NULL, x, V, tgt, 1.0, N, V);
        tap_ok(relerr_f(loss, rl, N) < 1e-5 && relerr_f(lse, rlse, N) < 1e-5,
               "ref_xent = CPU backend xent_fwd (%.1e)", relerr_f(loss, rl, N));
        free(x); free(loss); free(lse);
    }
    /* AdamW, two steps */
    {
        size_t n = 777;
        float *p = malloc(4 * n), *g = malloc(4 * n), *m = calloc(n, 4), *v = calloc(n, 4);
        float *p2 = malloc(4 * n), *m2 = calloc(n, 4), *v2 = calloc(n, 4);
        double *r = malloc(8 * n);
        ref_randn(p, n, 1.0f, 29, "cpu adamw p");
        ref_randn(g, n, 0.01f, 29, "cpu adamw g");
        memcpy(p2, p, 4 * n);
        for (int step = 1; step <= 2; step++) {
            be->ops->adamw(be, p, g, m, v, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step);
            ref_adamw(p2, g, m2, v2, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step, 1.0f);
        }
        for (size_t i = 0; i < n; i++)
            r[i] = p2[i];
        tap_ok(relerr_f(p, r, n) < 1e-6, "ref_adamw = CPU backend adamw, 2 steps (%.1e)",
               relerr_f(p, r, n));
        free(p); free(g); free(m); free(v); free(p2); free(m2); free(v2); free(r);
    }
    g3_be_close(be);
}

int main(void)
{
    test_bf16();
    test_gelu_grad();
    test_layernorm_bwd();
    test_attention_bwd();
    test_xent_grad();
    test_embedding_adjoint();
    test_gemm_transposes();
    test_against_cpu_backend();
    return tap_exit();
}

/* gpt3d CPU backend: embedding, layer norm, GELU, residual, softmax cross-entropy, AdamW and
 * the sum of squares, in plain C with OpenMP over rows (or columns where rows would race).
 * Shapes: N rows, B micro-batch, T sequence, C hidden, V (local, padded) vocabulary. */
#include "config.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu_internal.h"

/* Column ranges for the ops that parallelise over columns: thread t of n gets [*lo, *hi),
 * whole cache lines wide. */
static void g3_cpu_cols(int C, int *lo, int *hi)
{
#ifdef _OPENMP
    int t = omp_get_thread_num(), n = omp_get_num_threads();
#else
    int t = 0, n = 1;
#endif
    int chunk = ((C + n - 1) / n + 15) & ~15;
    *lo = t * chunk < C ? t * chunk : C;
    *hi = *lo + chunk < C ? *lo + chunk : C;
}

/* ---- embedding ---------------------------------------------------------------------------- */

G3_CPU_CLONES
static void g3_cpu_embed_row(float *out, const float *wte_row, const float *wpe_row, int C)
{
    if (wte_row && wpe_row) {
#pragma omp simd
        for (int c = 0; c < C; c++)
            out[c] = wte_row[c] + wpe_row[c];
    } else if (wte_row) {
        memcpy(out, wte_row, sizeof(float) * (size_t)C);
    } else if (wpe_row) {
        memcpy(out, wpe_row, sizeof(float) * (size_t)C);
    } else {
        memset(out, 0, sizeof(float) * (size_t)C);
    }
}

/* out (B,T,C)  tokens (B,T)  wte (V,C)  wpe (P,C) or NULL */
void g3_cpu_embedding_fwd(g3_backend_t *be, void *out_, const int32_t *tokens, const void *wte_,
                          const void *wpe_, int B, int T, int C, int v0, int V)
{
    float *out = out_;
    const float *wte = wte_, *wpe = wpe_;
    (void)be;
#pragma omp parallel if (G3_CPU_PAR((size_t)B * T * C))
    {
        g3_cpu_ftz();
#pragma omp for schedule(static)
        for (int r = 0; r < B * T; r++) {
            int tok = tokens[r] - v0;
            const float *wte_row = tok >= 0 && tok < V ? wte + (size_t)tok * C : NULL;
            const float *wpe_row = wpe ? wpe + (size_t)(r % T) * C : NULL;
            g3_cpu_embed_row(out + (size_t)r * C, wte_row, wpe_row, C);
        }
    }
}

G3_CPU_CLONES
static void g3_cpu_add_slice(float *dst, const float *src, int n)
{
#pragma omp simd
    for (int c = 0; c < n; c++)
        dst[c] += src[c];
}

/* dwte (V,C)  dwpe (P,C) or NULL  dout (B,T,C)  tokens (B,T).  Split over columns so two
 * rows with the same token never race. */
void g3_cpu_embedding_bwd(g3_backend_t *be, float *dwte, float *dwpe, const void *dout_,
                          const int32_t *tokens, int B, int T, int C, int v0, int V)
{
    const float *dout = dout_;
    (void)be;
#pragma omp parallel if (G3_CPU_PAR((size_t)B * T * C))
    {
        int lo, hi;
        g3_cpu_ftz();
        g3_cpu_cols(C, &lo, &hi);
        if (lo < hi) {
            for (int r = 0; r < B * T; r++) {
                int tok = tokens[r] - v0;
                if (tok >= 0 && tok < V)
                    g3_cpu_add_slice(dwte + (size_t)tok * C + lo, dout + (size_t)r * C + lo,
                                     hi - lo);
                if (dwpe)
                    g3_cpu_add_slice(dwpe + (size_t)(r % T) * C + lo,
                                     dout + (size_t)r * C + lo, hi - lo);
            }
        }
    }
}

/* ---- layer norm ----------------------------------------------------------------------------- */

/* out, x (C,)  w, b (C,) */
G3_CPU_CLONES
static void g3_cpu_ln_fwd_row(float *out, float *mean_p, float *rstd_p, const float *x,
                              const float *w, const float *b, int C, float eps)
{
    float s = 0.0f, v = 0.0f, m, rs;
#pragma omp simd reduction(+:s)
    for (int c = 0; c < C; c++)
        s += x[c];
    m = s / (float)C;
#pragma omp simd reduction(+:v)
    for (int c = 0; c < C; c++)
        v += (x[c] - m) * (x[c] - m);
    rs = 1.0f / sqrtf(v / (float)C + eps);
#pragma omp simd
    for (int c = 0; c < C; c++)
        out[c] = (x[c] - m) * rs * w[c] + b[c];
    *mean_p = m;
    *rstd_p = rs;
}

void g3_cpu_layernorm_fwd(g3_backend_t *be, void *out_, float *mean, float *rstd,
                          const void *inp_, const void *w_, const void *b_, int N, int C,
                          float eps)
{
    float *out = out_;
    const float *inp = inp_, *w = w_, *b = b_;
    (void)be;
#pragma omp parallel if (G3_CPU_PAR((size_t)N * C))
    {
        g3_cpu_ftz();
#pragma omp for schedule(static)
        for (int r = 0; r < N; r++)
            g3_cpu_ln_fwd_row(out + (size_t)r * C, mean + r, rstd + r, inp + (size_t)r * C,
                              w, b, C, eps);
    }
}

/* With xhat = (x - mean) rstd and g = dout * w:
 *   dx = rstd (g - mean(g) - xhat mean(g xhat)).
 * dinp, dout, x (C,) */
G3_CPU_CLONES
static void g3_cpu_ln_bwd_row(float *dinp, const float *dout, const float *x, const float *w,
                              float m, float rs, int C)
{
    float sg = 0.0f, sgx = 0.0f, mg, mgx;
#pragma omp simd reduction(+:sg, sgx)
    for (int c = 0; c < C; c++) {
        float g = dout[c] * w[c];
        sg += g;
        sgx += g * (x[c] - m) * rs;
    }
    mg = sg / (float)C;
    mgx = sgx / (float)C;
#pragma omp simd
    for (int c = 0; c < C; c++)
        dinp[c] += rs * (dout[c] * w[c] - mg - (x[c] - m) * rs * mgx);
}

/* dw[c] += dout[c] xhat[c]; db[c] += dout[c] over one row's column slice. */
G3_CPU_CLONES
static void g3_cpu_ln_bwd_params(float *dw, float *db, const float *dout, const float *x,
                                 float m, float rs, int n)
{
#pragma omp simd
    for (int c = 0; c < n; c++) {
        dw[c] += dout[c] * (x[c] - m) * rs;
        db[c] += dout[c];
    }
}

void g3_cpu_layernorm_bwd(g3_backend_t *be, void *dinp_, float *dw, float *db,
                          const void *dout_, const void *inp_, const void *w_,
                          const float *mean, const float *rstd, int N, int C)
{
    float *dinp = dinp_;
    const float *dout = dout_, *inp = inp_, *w = w_;
    (void)be;
#pragma omp parallel if (G3_CPU_PAR((size_t)N * C))
    {
        int lo, hi;
        g3_cpu_ftz();
#pragma omp for schedule(static)
        for (int r = 0; r < N; r++)
            g3_cpu_ln_bwd_row(dinp + (size_t)r * C, dout + (size_t)r * C, inp + (size_t)r * C,
                              w, mean[r], rstd[r], C);
        /* Parameter gradients: each thread owns a column slice, so no partial sums. */
        g3_cpu_cols(C, &lo, &hi);
        if (lo < hi)
            for (int r = 0; r < N; r++)
                g3_cpu_ln_bwd_params(dw + lo, db + lo, dout + (size_t)r * C + lo,
                                     inp + (size_t)r * C + lo, mean[r], rstd[r], hi - lo);
    }
}

/* ---- elementwise ----------------------------------------------------------------------------- */

#define G3_GELU_K0 0.7978845608028654f   /* sqrt(2/pi) */
#define G3_GELU_K1 0.044715f
#define G3_CPU_BLOCK 4096                /* elements per work item in the flat loops */

/* 0.5 (1 + tanh u) = sigmoid(2u): no cancellation where tanh u is near -1. */
G3_CPU_INLINE float g3_cpu_gelu_sig(float x)
{
    float u = G3_GELU_K0 * (x + G3_GELU_K1 * x * x * x);
    return 1.0f / (1.0f + g3_cpu_expf(-2.0f * u));
}

G3_CPU_CLONES
static void g3_cpu_gelu_fwd_blk(float *out, const float *x, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] * g3_cpu_gelu_sig(x[i]);
}

/* With e = exp(-2u), s = 1 / (1 + e) = 0.5 (1 + tanh u) and 1 - s = e s (no cancellation):
 *   d/dx (x s) = s + 2 x s (1 - s) du/dx,  du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
 * (0.5 (1 - tanh^2 u) = 2 s (1 - s)). */
G3_CPU_CLONES
static void g3_cpu_gelu_bwd_blk(float *dinp, const float *x, const float *dout, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float u = G3_GELU_K0 * (x[i] + G3_GELU_K1 * x[i] * x[i] * x[i]);
        float e = g3_cpu_expf(-2.0f * u);
        float s = 1.0f / (1.0f + e);
        float du = G3_GELU_K0 * (1.0f + 3.0f * G3_GELU_K1 * x[i] * x[i]);
        dinp[i] = (s + 2.0f * x[i] * s * (e * s) * du) * dout[i];
    }
}

G3_CPU_CLONES
static void g3_cpu_add_blk(float *out, const float *a, const float *b, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

G3_CPU_CLONES
static void g3_cpu_scale_blk(float *x, size_t n, float s)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
}

/* The flat ops below run blk(ctx, o, len) on the blocks [o, o + len) of G3_CPU_BLOCK elements
 * that cover [0, n), spread over the OpenMP threads in a static schedule (so each element is
 * computed by the same code wherever the block boundaries fall). */
typedef void (*g3_cpu_blk_fn_t)(void *ctx, size_t o, size_t len);

static void g3_cpu_blocks(size_t n, g3_cpu_blk_fn_t blk, void *ctx)
{
    long nb = (long)((n + G3_CPU_BLOCK - 1) / G3_CPU_BLOCK);
#pragma omp parallel if (G3_CPU_PAR(n))
    {
        g3_cpu_ftz();
#pragma omp for schedule(static)
        for (long k = 0; k < nb; k++) {
            size_t o = (size_t)k * G3_CPU_BLOCK, len = n - o < G3_CPU_BLOCK ? n - o : G3_CPU_BLOCK;
            blk(ctx, o, len);
        }
    }
}

/* Operands of the flat ops: out = f(a, b) elementwise; s a scalar. */
typedef struct {
    float       *out;
    const float *a, *b;
    float        s;
} g3_cpu_flat_t;

static void g3_cpu_gelu_fwd_at(void *ctx, size_t o, size_t len)
{
    g3_cpu_flat_t *f = ctx;
    g3_cpu_gelu_fwd_blk(f->out + o, f->a + o, len);
}

static void g3_cpu_gelu_bwd_at(void *ctx, size_t o, size_t len)
{
    g3_cpu_flat_t *f = ctx;
    g3_cpu_gelu_bwd_blk(f->out + o, f->a + o, f->b + o, len);
}

static void g3_cpu_add_at(void *ctx, size_t o, size_t len)
{
    g3_cpu_flat_t *f = ctx;
    g3_cpu_add_blk(f->out + o, f->a + o, f->b + o, len);
}

static void g3_cpu_scale_at(void *ctx, size_t o, size_t len)
{
    g3_cpu_flat_t *f = ctx;
    g3_cpu_scale_blk(f->out + o, len, f->s);
}

/* out, inp (n,) */
void g3_cpu_gelu_fwd(g3_backend_t *be, void *out, const void *inp, size_t n)
{
    g3_cpu_flat_t f = { out, inp, NULL, 0.0f };
    (void)be;
    g3_cpu_blocks(n, g3_cpu_gelu_fwd_at, &f);
}

/* dinp, inp, dout (n,) */
void g3_cpu_gelu_bwd(g3_backend_t *be, void *dinp, const void *inp, const void *dout, size_t n)
{
    g3_cpu_flat_t f = { dinp, inp, dout, 0.0f };
    (void)be;
    g3_cpu_blocks(n, g3_cpu_gelu_bwd_at, &f);
}

/* out, a, b (n,) */
void g3_cpu_residual_fwd(g3_backend_t *be, void *out, const void *a, const void *b, size_t n)
{
    g3_cpu_flat_t f = { out, a, b, 0.0f };
    (void)be;
    g3_cpu_blocks(n, g3_cpu_add_at, &f);
}

/* x (n,) */
void g3_cpu_scale(g3_backend_t *be, float *x, size_t n, float s)
{
    g3_cpu_flat_t f = { x, NULL, NULL, s };
    (void)be;
    g3_cpu_blocks(n, g3_cpu_scale_at, &f);
}

/* dst (n,) of dst_t  src (n,) of src_t: host memory on this backend. */
void g3_cpu_cast(g3_backend_t *be, void *dst, g3_be_dtype_t dst_t, const void *src,
                 g3_be_dtype_t src_t, size_t n)
{
    (void)be;
    g3_be_convert(dst, dst_t, src, src_t, n);
}

/* ---- optional fused ops (backend.h), composed of the plain ops' own code --------------------
 * Only filled into the table with the fused_ops option 1 (cpu.c): they compute exactly what the
 * plain sequence computes, bit for bit, so the model's fused wiring can be checked on the
 * CPU (tests/kernels/test_fused_cpu). */

/* resid = a + b, out = layernorm(resid), row by row (one pass over the row while it is in
 * cache; the same additions and the same row kernel as residual_fwd + layernorm_fwd).
 * resid, out, a, b (N,C)  mean, rstd (N,)  w, bias (C,) */
void g3_cpu_residual_layernorm_fwd(g3_backend_t *be, void *resid_, void *out_, float *mean,
                                   float *rstd, const void *a_, const void *b_, const void *w_,
                                   const void *bias_, int N, int C, float eps)
{
    float *resid = resid_, *out = out_;
    const float *a = a_, *b = b_, *w = w_, *bias = bias_;
    (void)be;
#pragma omp parallel if (G3_CPU_PAR((size_t)N * C))
    {
        g3_cpu_ftz();
#pragma omp for schedule(static)
        for (int r = 0; r < N; r++) {
            size_t o = (size_t)r * C;
            g3_cpu_add_blk(resid + o, a + o, b + o, (size_t)C);
            g3_cpu_ln_fwd_row(out + o, mean + r, rstd + r, resid + o, w, bias, C, eps);
        }
    }
}

/* out, pre (N,OC)  inp (N,IC)  w (OC,IC)  bias (OC,) */
void g3_cpu_matmul_gelu_fwd(g3_backend_t *be, void *state, void *out, void *pre,
                            const void *inp, const void *w, const void *bias, int N, int IC,
                            int OC)
{
    g3_cpu_matmul_fwd(be, state, pre, inp, w, bias, N, IC, OC);
    g3_cpu_gelu_fwd(be, out, pre, (size_t)N * OC);
}

/* dpre (N,IC)  dw (OC,IC)  dbias (OC,)  dout (N,OC)  inp, pre (N,IC)  w (OC,IC) */
void g3_cpu_matmul_dgelu_bwd(g3_backend_t *be, void *state, void *dpre, float *dw,
                             float *dbias, const void *dout, const void *inp, const void *pre,
                             const void *w, int N, int IC, int OC)
{
    g3_cpu_matmul_bwd(be, state, dpre, dw, dbias, dout, inp, w, N, IC, OC);
    g3_cpu_gelu_bwd(be, dpre, pre, dpre, (size_t)N * IC);
}

/* ---- softmax cross-entropy ---------------------------------------------------------------- */

G3_CPU_CLONES
static float g3_cpu_max_row(const float *x, int V)
{
    float m = -INFINITY;
#pragma omp simd reduction(max:m)
    for (int j = 0; j < V; j++)
        m = x[j] > m ? x[j] : m;
    return m;
}

G3_CPU_CLONES
static float g3_cpu_sumexp_blk(const float *x, int n, float m)
{
    float s = 0.0f;
#pragma omp simd reduction(+:s)
    for (int j = 0; j < n; j++)
        s += g3_cpu_expf(x[j] - m);
    return s;
}

/* RET: log sum_j exp(x[j]), the sum kept in double across blocks of 256 (a 50k vocabulary
 * summed in float would lose ~1e-6 relative).  x (V,) */
static float g3_cpu_lse_row(const float *x, int V)
{
    float m = g3_cpu_max_row(x, V);
    double s = 0.0;
    for (int j = 0; j < V; j += 256)
        s += g3_cpu_sumexp_blk(x + j, V - j < 256 ? V - j : 256, m);
    return (float)(m + log(s));
}

/* losses, lse (N,)  logits (N,V)  targets (N,) */
void g3_cpu_xent_fwd(g3_backend_t *be, float *losses, float *lse, const void *logits_,
                     const int32_t *targets, int N, int V)
{
    const float *logits = logits_;
    (void)be;
#pragma omp parallel if (G3_CPU_PAR((size_t)N * V))
    {
        g3_cpu_ftz();
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) {
            const float *x = logits + (size_t)i * V;
            float l = g3_cpu_lse_row(x, V);
            lse[i] = l;
            losses[i] = l - x[targets[i]];
        }
    }
}

/* d (V,) may alias x (V,) */
G3_CPU_CLONES
static void g3_cpu_xent_bwd_row(float *d, const float *x, float lse, float dloss, int V)
{
#pragma omp simd
    for (int j = 0; j < V; j++)
        d[j] = g3_cpu_expf(x[j] - lse) * dloss;
}

/* dlogits, logits (N,V)  lse, targets (N,) */
void g3_cpu_xent_bwd(g3_backend_t *be, void *dlogits_, const void *logits_, const float *lse,
                     const int32_t *targets, float dloss, int N, int V)
{
    float *dlogits = dlogits_;
    const float *logits = logits_;
    (void)be;
#pragma omp parallel if (G3_CPU_PAR((size_t)N * V))
    {
        g3_cpu_ftz();
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) {
            float *d = dlogits + (size_t)i * V;
            g3_cpu_xent_bwd_row(d, logits + (size_t)i * V, lse[i], dloss, V);
            d[targets[i]] -= dloss;
        }
    }
}

/* ---- optimizer ---------------------------------------------------------------------------- */

/* AdamW on g, or, when scaled, on g[i] * s: the scaled gradient is the one float product the
 * plain scale op would have stored, then the same expressions.  The unscaled path does not
 * multiply at all, so it stays bit for bit what it was whatever the FP environment. */
G3_CPU_CLONES
static void g3_cpu_adamw_blk(float *p, const float *g, float *m, float *v, size_t n,
                             float decay, float b1, float b2, float step_size,
                             float bc2_sqrt, float eps, int scaled, float s)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float gi = scaled ? g[i] * s : g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        float pi = p[i] * decay;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
    }
}

typedef struct {
    float       *p, *m, *v;
    const float *g;
    float        decay, b1, b2, step_size, bc2_sqrt, eps;
    int          scaled;      /* 1: use g * s */
    float        s;
} g3_cpu_adamw_t;

static void g3_cpu_adamw_at(void *ctx, size_t o, size_t len)
{
    g3_cpu_adamw_t *a = ctx;
    g3_cpu_adamw_blk(a->p + o, a->g + o, a->m + o, a->v + o, len, a->decay, a->b1, a->b2,
                     a->step_size, a->bc2_sqrt, a->eps, a->scaled, a->s);
}

/* p, g, m, v (n,)  scale (1,) or NULL (no scaling) */
static void g3_cpu_adamw_run(float *p, const float *g, float *m, float *v, size_t n,
                             float lr, float beta1, float beta2, float eps, float wd,
                             int64_t step, const float *scale)
{
    double bc1 = 1.0 - pow(beta1, (double)step), bc2 = 1.0 - pow(beta2, (double)step);
    g3_cpu_adamw_t a = { p, m, v, g, 1.0f - lr * wd, beta1, beta2, (float)(lr / bc1),
                         (float)sqrt(bc2), eps, scale != NULL, scale ? *scale : 1.0f };
    g3_cpu_blocks(n, g3_cpu_adamw_at, &a);
}

/* p, g, m, v (n,) */
void g3_cpu_adamw(g3_backend_t *be, float *p, const float *g, float *m, float *v, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd, int64_t step)
{
    (void)be;
    g3_cpu_adamw_run(p, g, m, v, n, lr, beta1, beta2, eps, wd, step, NULL);
}

G3_CPU_CLONES
static float g3_cpu_sumsq_blk(const float *x, size_t n)
{
    float s = 0.0f;
#pragma omp simd reduction(+:s)
    for (size_t i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}

/* x (n,) */
void g3_cpu_sumsq(g3_backend_t *be, const float *x, size_t n, double *host_out)
{
    long nb = (long)((n + G3_CPU_BLOCK - 1) / G3_CPU_BLOCK);
    double total = 0.0;
    (void)be;
#pragma omp parallel reduction(+:total) if (G3_CPU_PAR(n))
    {
        g3_cpu_ftz();
#pragma omp for schedule(static)
        for (long k = 0; k < nb; k++) {
            size_t o = (size_t)k * G3_CPU_BLOCK, len = n - o < G3_CPU_BLOCK ? n - o : G3_CPU_BLOCK;
            total += (double)g3_cpu_sumsq_blk(x + o, len);
        }
    }
    *host_out = total;
}

/* ---- optional: the gradient norm and clipping in backend (here: host) memory ------------- */

/* acc (1,)  x (n,): the same sum as g3_cpu_sumsq, added to *acc */
void g3_cpu_sumsq_acc(g3_backend_t *be, double *acc, const float *x, size_t n)
{
    double part = 0.0;
    g3_cpu_sumsq(be, x, n, &part);
    *acc += part;
}

/* scale (1,)  sumsq (1,): the plain optimizer's arithmetic (double, then one rounding) */
void g3_cpu_clip_scale(g3_backend_t *be, float *scale, const double *sumsq, double max_norm)
{
    double norm = sqrt(*sumsq), coeff;
    (void)be;
    *scale = 1.0f;
    if (max_norm > 0.0 && isfinite(norm)) {
        coeff = max_norm / (norm + 1e-6);
        if (coeff < 1.0)
            *scale = (float)coeff;
    }
}

/* p, g, m, v (n,)  scale (1,) */
void g3_cpu_adamw_scaled(g3_backend_t *be, float *p, const float *g, float *m, float *v,
                         size_t n, float lr, float beta1, float beta2, float eps, float wd,
                         int64_t step, const float *scale)
{
    (void)be;
    g3_cpu_adamw_run(p, g, m, v, n, lr, beta1, beta2, eps, wd, step, scale);
}

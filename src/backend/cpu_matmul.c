/* gpt3d CPU backend: the parallel sgemm (cpu_internal.h), and linear layers and causal
 * attention, all products through it (CBLAS sgemm per slab).
 * Shapes: N rows (B*T tokens), IC/OC in/out features, B micro-batch, T sequence, NH heads,
 * HS head size, C = NH*HS, C3 = 3*C (the fused q/k/v row). */
#include "config.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu_internal.h"

/* Attention works on row blocks of this many queries, so the causal upper triangle is
 * skipped a block at a time (about 40% of the products at T = 256). */
#define G3_ATT_RB 64

static void g3_cpu_thread(int *t, int *n)
{
#ifdef _OPENMP
    *t = omp_get_thread_num();
    *n = omp_get_num_threads();
#else
    *t = 0;
    *n = 1;
#endif
}

/* ---- sgemm ----------------------------------------------------------------------------- */

/* C (M,N) = alpha op(A) op(B) + beta C, row-major, on the calling thread.  trans_a: A is
 * stored (K,M); trans_b: B is stored (N,K). */
static void g3_cpu_sgemm1(int trans_a, int trans_b, int M, int N, int K, float alpha,
                          const float *A, int lda, const float *B, int ldb, float beta,
                          float *C, int ldc)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) {   /* sgemm would still scale C by beta; keep that meaning */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
        return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb,
                beta, C, ldc);
}

/* Per-thread partial products of the K-split below.  RET: NULL when it cannot be had (the
 * caller then splits M or N instead). */
static float *g3_cpu_kbuf(g3_backend_t *be, size_t floats)
{
    g3_cpu_t *cpu = be->priv;
    if (floats > cpu->kbuf_floats) {
        float *p = NULL;
        if (posix_memalign((void **)&p, 64, floats * sizeof(float)) != 0)
            return NULL;
        free(cpu->kbuf);
        cpu->kbuf = p;
        cpu->kbuf_floats = floats;
    }
    return cpu->kbuf;
}

G3_CPU_CLONES
static void g3_cpu_add_rows(float *dst, const float *src, int n)
{
#pragma omp simd
    for (int j = 0; j < n; j++)
        dst[j] += src[j];
}

/* g3_cpu_sgemm1 split across the OpenMP threads along the larger of M and N (single-threaded
 * sgemm per slab), or along K for a long reduction into a small C.  Inside a parallel region
 * it runs on the calling thread. */
static void g3_cpu_sgemm(g3_backend_t *be, int trans_a, int trans_b, int M, int N, int K,
                         float alpha, const float *A, int lda, const float *B, int ldb,
                         float beta, float *C, int ldc)
{
    int nt = g3_cpu_max_threads();
    int split_m = M >= N;
    float *kbuf = NULL;

#ifdef _OPENMP
    if (omp_in_parallel())
        nt = 1;
#endif
    /* Below ~4 MFLOP the fork costs more than it saves. */
    if (nt <= 1 || 2.0 * M * N * (double)K < 4e6 || (M < 32 && N < 32)) {
        g3_cpu_sgemm1(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    /* A long reduction into a small output (the output layer's input gradient: K = the
     * vocabulary) is split along K: slabs along M or N would each pack the whole of the big
     * operand.  Threads 1.. write partial products that are then added into C. */
    if (K >= 8 * (M > N ? M : N) && (size_t)M * N * (size_t)(nt - 1) <= ((size_t)4 << 20))
        kbuf = g3_cpu_kbuf(be, (size_t)M * N * (size_t)(nt - 1));
    if (kbuf) {
#pragma omp parallel num_threads(nt)
        {
#ifdef _OPENMP
            int t = omp_get_thread_num(), n = omp_get_num_threads();   /* n <= nt */
#else
            int t = 0, n = 1;
#endif
            int kchunk = ((K + n - 1) / n + 15) & ~15, parts = (K + kchunk - 1) / kchunk;
            int k0 = t * kchunk, k1 = k0 + kchunk > K ? K : k0 + kchunk;
            int rows = (M + n - 1) / n, r0 = t * rows, r1 = r0 + rows > M ? M : r0 + rows;

            g3_cpu_ftz();
            if (k0 < k1)
                g3_cpu_sgemm1(trans_a, trans_b, M, N, k1 - k0, alpha,
                              trans_a ? A + (size_t)k0 * lda : A + k0, lda,
                              trans_b ? B + k0 : B + (size_t)k0 * ldb, ldb,
                              t == 0 ? beta : 0.0f,
                              t == 0 ? C : kbuf + (size_t)(t - 1) * M * N, t == 0 ? ldc : N);
#pragma omp barrier
            for (int r = r0; r < r1; r++)
                for (int p = 1; p < parts; p++)
                    g3_cpu_add_rows(C + (size_t)r * ldc,
                                    kbuf + (size_t)(p - 1) * M * N + (size_t)r * N, N);
        }
        return;
    }
#pragma omp parallel num_threads(nt)
    {
#ifdef _OPENMP
        int t = omp_get_thread_num(), n = omp_get_num_threads();
#else
        int t = 0, n = 1;
#endif
        int dim = split_m ? M : N;
        int chunk = ((dim + n - 1) / n + 15) & ~15;   /* slabs of whole cache lines */
        int lo = t * chunk, hi = lo + chunk > dim ? dim : lo + chunk;

        g3_cpu_ftz();
        if (lo < hi) {
            if (split_m)
                g3_cpu_sgemm1(trans_a, trans_b, hi - lo, N, K, alpha,
                              trans_a ? A + lo : A + (size_t)lo * lda, lda, B, ldb, beta,
                              C + (size_t)lo * ldc, ldc);
            else
                g3_cpu_sgemm1(trans_a, trans_b, M, hi - lo, K, alpha, A, lda,
                              trans_b ? B + (size_t)lo * ldb : B + lo, ldb, beta, C + lo, ldc);
        }
    }
}

/* ---- linear layers ------------------------------------------------------------------------ */

/* out (N,OC) = inp (N,IC) . w (OC,IC)^T + bias (OC,).  Each thread takes a slab of rows (or,
 * for few rows and many outputs, like the vocabulary projection of a short sequence, a slab
 * of output columns), writes the bias into it and accumulates its own sgemm on top. */
void g3_cpu_matmul_fwd(g3_backend_t *be, void *state, void *out_, const void *inp_,
                       const void *w_, const void *bias_, int N, int IC, int OC)
{
    float *out = out_;
    const float *inp = inp_, *w = w_, *bias = bias_;
    int split_rows = N >= OC;
    int par = 2.0 * N * (double)OC * IC >= 4e6;
    (void)be;
    (void)state;   /* the CPU keeps no per-tensor state (its row's size is 0) */
#pragma omp parallel if (par)
    {
        int t, n, dim, chunk, lo, hi;
        g3_cpu_thread(&t, &n);
        g3_cpu_ftz();
        dim = split_rows ? N : OC;
        chunk = ((dim + n - 1) / n + 15) & ~15;
        lo = t * chunk < dim ? t * chunk : dim;
        hi = lo + chunk < dim ? lo + chunk : dim;
        if (lo < hi) {
            if (split_rows) {
                if (bias)
                    for (int r = lo; r < hi; r++)
                        memcpy(out + (size_t)r * OC, bias, sizeof(float) * (size_t)OC);
                g3_cpu_sgemm1(0, 1, hi - lo, OC, IC, 1.0f, inp + (size_t)lo * IC, IC, w, IC,
                              bias ? 1.0f : 0.0f, out + (size_t)lo * OC, OC);
            } else {
                if (bias)
                    for (int r = 0; r < N; r++)
                        memcpy(out + (size_t)r * OC + lo, bias + lo,
                               sizeof(float) * (size_t)(hi - lo));
                g3_cpu_sgemm1(0, 1, N, hi - lo, IC, 1.0f, inp, IC, w + (size_t)lo * IC, IC,
                              bias ? 1.0f : 0.0f, out + lo, OC);
            }
        }
    }
}

G3_CPU_CLONES
static void g3_cpu_colsum_add(float *dst, const float *src, int n)
{
#pragma omp simd
    for (int c = 0; c < n; c++)
        dst[c] += src[c];
}

/* dinp (N,IC) = dout (N,OC) . w (OC,IC);  dw (OC,IC) += dout^T . inp (N,IC);
 * dbias (OC,) += sum over rows of dout. */
void g3_cpu_matmul_bwd(g3_backend_t *be, void *state, void *dinp_, float *dw, float *dbias,
                       const void *dout_, const void *inp_, const void *w_,
                       int N, int IC, int OC)
{
    float *dinp = dinp_;
    const float *dout = dout_, *inp = inp_, *w = w_;
    (void)state;
    if (dinp)
        g3_cpu_sgemm(be, 0, 0, N, IC, OC, 1.0f, dout, OC, w, IC, 0.0f, dinp, IC);
    g3_cpu_sgemm(be, 1, 0, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dw, IC);
    if (dbias) {
#pragma omp parallel if (G3_CPU_PAR((size_t)N * OC))
        {
            int t, n, chunk, lo, hi;
            g3_cpu_thread(&t, &n);
            g3_cpu_ftz();
            chunk = ((OC + n - 1) / n + 15) & ~15;
            lo = t * chunk < OC ? t * chunk : OC;
            hi = lo + chunk < OC ? lo + chunk : OC;
            if (lo < hi)
                for (int r = 0; r < N; r++)
                    g3_cpu_colsum_add(dbias + lo, dout + (size_t)r * OC + lo, hi - lo);
        }
    }
}

/* ---- attention ------------------------------------------------------------------------------ */

/* In place: a[0..valid) = softmax(a[0..valid)), a[valid..end) = 0.  a (end,) */
G3_CPU_CLONES
static void g3_cpu_att_softmax_row(float *a, int valid, int end)
{
    float m = -INFINITY, s = 0.0f, inv;
#pragma omp simd reduction(max:m)
    for (int j = 0; j < valid; j++)
        m = a[j] > m ? a[j] : m;
#pragma omp simd reduction(+:s)
    for (int j = 0; j < valid; j++) {
        float e = g3_cpu_expf(a[j] - m);
        a[j] = e;
        s += e;
    }
    inv = 1.0f / s;
#pragma omp simd
    for (int j = 0; j < valid; j++)
        a[j] *= inv;
    for (int j = valid; j < end; j++)
        a[j] = 0.0f;
}

/* One (batch, head): att (T,T); q points at the head's query columns, its keys and values
 * are C and 2C columns further; q/k/v rows have stride C3, out rows stride C. */
static void g3_cpu_att_fwd_one(float *out, float *att, const float *q, int T, int C3, int C,
                               int HS, float scale)
{
    const float *k = q + C, *v = q + 2 * C;

    for (int r0 = 0; r0 < T; r0 += G3_ATT_RB) {
        int r1 = r0 + G3_ATT_RB < T ? r0 + G3_ATT_RB : T;
        /* S[r0:r1, 0:r1] = scale q[r0:r1] k[0:r1]^T: later keys are masked anyway */
        g3_cpu_sgemm1(0, 1, r1 - r0, r1, HS, scale, q + (size_t)r0 * C3, C3, k, C3, 0.0f,
                      att + (size_t)r0 * T, T);
        for (int i = r0; i < r1; i++)
            g3_cpu_att_softmax_row(att + (size_t)i * T, i + 1, T);
        /* y[r0:r1] = P[r0:r1, 0:r1] v[0:r1] */
        g3_cpu_sgemm1(0, 0, r1 - r0, HS, r1, 1.0f, att + (size_t)r0 * T, T, v, C3, 0.0f,
                      out + (size_t)r0 * C, C);
    }
}

/* out (B,T,C)  att (B,NH,T,T)  qkv (B,T,3C) */
void g3_cpu_attention_fwd(g3_backend_t *be, void *out_, void *att_, const void *qkv_,
                          int B, int T, int NH, int HS)
{
    float *out = out_, *att = att_;
    const float *qkv = qkv_;
    int C = NH * HS, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)HS);
    (void)be;
#pragma omp parallel if (G3_CPU_PAR((size_t)B * NH * T * T * HS / 8))
    {
        g3_cpu_ftz();
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; bh++) {
            int b = bh / NH, h = bh % NH;
            g3_cpu_att_fwd_one(out + (size_t)b * T * C + (size_t)h * HS,
                               att + (size_t)bh * T * T,
                               qkv + (size_t)b * T * C3 + (size_t)h * HS, T, C3, C, HS,
                               scale);
        }
    }
}

/* ds[j] = p[j] (dp[j] - sum_k p[k] dp[k]) scale for j < valid, 0 for valid <= j < end.
 * ds may alias dp.  ds, dp, p (end,) */
G3_CPU_CLONES
static void g3_cpu_att_softmax_bwd_row(float *ds, const float *dp, const float *p, int valid,
                                       int end, float scale)
{
    float s = 0.0f;
#pragma omp simd reduction(+:s)
    for (int j = 0; j < valid; j++)
        s += p[j] * dp[j];
#pragma omp simd
    for (int j = 0; j < valid; j++)
        ds[j] = p[j] * (dp[j] - s) * scale;
    for (int j = valid; j < end; j++)
        ds[j] = 0.0f;
}

/* One (batch, head).  With S = scale q k^T, P = softmax(S) (causal), y = P v:
 *   dP = dy v^T;  dS = P o (dP - rowsum(P o dP)) scale;
 *   dq = dS k;  dk = dS^T q;  dv = P^T dy.
 * ds (T,T) work space; p (T,T); q/k/v and dq/dk/dv rows of stride C3 (k, v at +C, +2C);
 * dy rows of stride C. */
static void g3_cpu_att_bwd_one(float *dq, float *ds, const float *dy, const float *q,
                               const float *p, int T, int C3, int C, int HS, float scale)
{
    const float *k = q + C, *v = q + 2 * C;
    float *dk = dq + C, *dv = dq + 2 * C;

    for (int r0 = 0; r0 < T; r0 += G3_ATT_RB) {
        int r1 = r0 + G3_ATT_RB < T ? r0 + G3_ATT_RB : T;
        g3_cpu_sgemm1(0, 1, r1 - r0, r1, HS, 1.0f, dy + (size_t)r0 * C, C, v, C3, 0.0f,
                      ds + (size_t)r0 * T, T);
        for (int i = r0; i < r1; i++)
            g3_cpu_att_softmax_bwd_row(ds + (size_t)i * T, ds + (size_t)i * T,
                                       p + (size_t)i * T, i + 1, r1, scale);
        g3_cpu_sgemm1(0, 0, r1 - r0, HS, r1, 1.0f, ds + (size_t)r0 * T, T, k, C3, 0.0f,
                      dq + (size_t)r0 * C3, C3);
    }
    /* Key/value block [c0, c1) receives from queries c0..T-1 only; every dS entry read here
     * lies left of its row block's end, so it was written above. */
    for (int c0 = 0; c0 < T; c0 += G3_ATT_RB) {
        int c1 = c0 + G3_ATT_RB < T ? c0 + G3_ATT_RB : T;
        g3_cpu_sgemm1(1, 0, c1 - c0, HS, T - c0, 1.0f, ds + (size_t)c0 * T + c0, T,
                      q + (size_t)c0 * C3, C3, 0.0f, dk + (size_t)c0 * C3, C3);
        g3_cpu_sgemm1(1, 0, c1 - c0, HS, T - c0, 1.0f, p + (size_t)c0 * T + c0, T,
                      dy + (size_t)c0 * C, C, 0.0f, dv + (size_t)c0 * C3, C3);
    }
}

/* dqkv (B,T,3C)  scratch (B,NH,T,T)  dout (B,T,C)  qkv (B,T,3C)  att (B,NH,T,T); the
 * forward's out is not needed (the probabilities are saved). */
void g3_cpu_attention_bwd(g3_backend_t *be, void *dqkv_, void *scratch_, const void *dout_,
                          const void *out, const void *qkv_, const void *att_, int B, int T,
                          int NH, int HS)
{
    float *dqkv = dqkv_, *scratch = scratch_;
    const float *dout = dout_, *qkv = qkv_, *att = att_;
    int C = NH * HS, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)HS);
    (void)be;
#pragma omp parallel if (G3_CPU_PAR((size_t)B * NH * T * T * HS / 4))
    {
        g3_cpu_ftz();
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; bh++) {
            int b = bh / NH, h = bh % NH;
            size_t qo = (size_t)b * T * C3 + (size_t)h * HS;
            g3_cpu_att_bwd_one(dqkv + qo, scratch + (size_t)bh * T * T,
                               dout + (size_t)b * T * C + (size_t)h * HS, qkv + qo,
                               att + (size_t)bh * T * T, T, C3, C, HS, scale);
        }
    }
}

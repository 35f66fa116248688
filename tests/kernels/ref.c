/* Plain-C references for the CUDA kernels; see ref.h.  Deliberately naive: one loop nest per
 * formula, double accumulation, the T x T attention matrix materialised per row. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"
#include "core/rng.h"
#include "kernels/ref.h"

uint16_t ref_f2bf(float x)
{
    return g3_bf16_from_f32(x);
}

float ref_bf2f(uint16_t h)
{
    return g3_bf16_to_f32(h);
}

float ref_round_bf(float x)
{
    return ref_bf2f(ref_f2bf(x));
}

void ref_randn_bf(float *x, uint16_t *bits, size_t n, float std, uint64_t seed, const char *what)
{
    uint64_t stream = g3_rng_stream_from_name(what);
    for (size_t i = 0; i < n; i++) {
        uint16_t h = ref_f2bf(std * g3_rng_normal(seed, stream, i));
        x[i] = ref_bf2f(h);
        if (bits != NULL)
            bits[i] = h;
    }
}

void ref_randn(float *x, size_t n, float std, uint64_t seed, const char *what)
{
    uint64_t stream = g3_rng_stream_from_name(what);
    for (size_t i = 0; i < n; i++)
        x[i] = std * g3_rng_normal(seed, stream, i);
}

void ref_randint(int32_t *x, size_t n, int lo, int hi, uint64_t seed, const char *what)
{
    uint64_t stream = g3_rng_stream_from_name(what);
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (int32_t)(g3_rng_u64(seed, stream, i) % (uint64_t)(hi - lo));
}

void ref_to_bf(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = ref_f2bf(src[i]);
}

void ref_from_bf(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = ref_bf2f(src[i]);
}

/* ---- embedding ---------------------------------------------------------------------------- */

void ref_embedding_fwd(double *out, const int32_t *tokens, const float *wte, const float *wpe,
                       int B, int T, int C, int v0, int V)
{
    for (int r = 0; r < B * T; r++) {
        int tok = tokens[r] - v0;
        for (int c = 0; c < C; c++) {
            double s = 0.0;
            if (tok >= 0 && tok < V)
                s += wte[(size_t)tok * C + c];
            if (wpe != NULL)
                s += wpe[(size_t)(r % T) * C + c];
            out[(size_t)r * C + c] = s;
        }
    }
}

void ref_embedding_bwd(double *dwte, double *dwpe, const float *dout, const int32_t *tokens,
                       int B, int T, int C, int v0, int V)
{
    for (int r = 0; r < B * T; r++) {
        int tok = tokens[r] - v0;
        for (int c = 0; c < C; c++) {
            double d = dout[(size_t)r * C + c];
            if (tok >= 0 && tok < V)
                dwte[(size_t)tok * C + c] += d;
            if (dwpe != NULL)
                dwpe[(size_t)(r % T) * C + c] += d;
        }
    }
}

/* ---- layer norm --------------------------------------------------------------------------- */

/* A row's mean (*m_p) and 1 / sqrt(var + eps), summed in index order.  x (C,) */
static double ref_row_rstd(const double *x, int C, double eps, double *m_p)
{
    double m = 0.0, var = 0.0;

    for (int c = 0; c < C; c++)
        m += x[c];
    m /= C;
    for (int c = 0; c < C; c++)
        var += (x[c] - m) * (x[c] - m);
    var /= C;
    *m_p = m;
    return 1.0 / sqrt(var + eps);
}

void ref_layernorm_fwd(float *resid, double *out, double *mean, double *rstd, const float *a,
                       const float *b, const float *w, const float *bias, int N, int C,
                       double eps)
{
    double *x = malloc(sizeof(double) * (size_t)C);
    for (int r = 0; r < N; r++) {
        const float *ar = a + (size_t)r * C;
        for (int c = 0; c < C; c++) {
            if (b != NULL) {
                float s = ref_round_bf(ar[c] + b[(size_t)r * C + c]);   /* fp32 add, bf16 */
                resid[(size_t)r * C + c] = s;
                x[c] = s;
            } else {
                x[c] = ar[c];
            }
        }
        double m, rs = ref_row_rstd(x, C, eps, &m);
        for (int c = 0; c < C; c++)
            out[(size_t)r * C + c] = (x[c] - m) * rs * w[c] + bias[c];
        mean[r] = m;
        rstd[r] = rs;
    }
    free(x);
}

void ref_layernorm_bwd(double *dinp, double *dw, double *db, const float *dout, const float *inp,
                       const float *w, int N, int C, double eps)
{
    double *xd = malloc(sizeof(double) * (size_t)C);
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * C, *d = dout + (size_t)r * C;
        double gm = 0.0, gxm = 0.0;
        for (int c = 0; c < C; c++)
            xd[c] = x[c];
        double m, rs = ref_row_rstd(xd, C, eps, &m);
        for (int c = 0; c < C; c++) {
            double xh = (x[c] - m) * rs, g = (double)d[c] * w[c];
            gm += g;
            gxm += g * xh;
            dw[c] += d[c] * xh;
            db[c] += d[c];
        }
        gm /= C;
        gxm /= C;
        for (int c = 0; c < C; c++) {
            double xh = (x[c] - m) * rs, g = (double)d[c] * w[c];
            dinp[(size_t)r * C + c] += rs * (g - gm - xh * gxm);
        }
    }
    free(xd);
}

/* ---- GELU (tanh approximation) -------------------------------------------------------------- */

double ref_gelu(double x)
{
    double k = sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

double ref_gelu_grad(double x)
{
    double k = sqrt(2.0 / M_PI), u = k * (x + 0.044715 * x * x * x), t = tanh(u);
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

/* ---- matrix product ------------------------------------------------------------------------- */

void ref_gemm(double *D, const float *A, int lda, int ta, const float *B, int ldb, int tb,
              int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < K; k++) {
                double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                s += a * b;
            }
            D[(size_t)i * N + j] = s;
        }
}

/* ---- causal attention ----------------------------------------------------------------------- */

/* The causal scores of query t of head h in batch row b: s[j] = q_t . k_j / sqrt(HS) for
 * j = 0..t, *l_p = sum_j exp(s[j] - max).  RET: the max.  s (T,)  qkv (B,T,3C) */
static double ref_attention_scores(double *s, double *l_p, const float *qkv, int b, int t,
                                   int h, int T, int NH, int HS)
{
    int C = NH * HS;
    double scale = 1.0 / sqrt((double)HS);
    const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * HS;
    double m = -INFINITY, l = 0.0;

    for (int j = 0; j <= t; j++) {
        const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * HS;
        double dot = 0.0;
        for (int d = 0; d < HS; d++)
            dot += (double)q[d] * k[d];
        s[j] = dot * scale;
        if (s[j] > m)
            m = s[j];
    }
    for (int j = 0; j <= t; j++)
        l += exp(s[j] - m);
    *l_p = l;
    return m;
}

void ref_attention_fwd(double *out, double *lse, const float *qkv, int B, int T, int NH, int HS)
{
    int C = NH * HS;
    double *s = malloc(sizeof(double) * (size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                double l, m = ref_attention_scores(s, &l, qkv, b, t, h, T, NH, HS);
                double ls = m + log(l);
                double *o = out + ((size_t)b * T + t) * C + h * HS;
                for (int d = 0; d < HS; d++)
                    o[d] = 0.0;
                for (int j = 0; j <= t; j++) {
                    const float *v = qkv + ((size_t)b * T + j) * 3 * C + 2 * C + h * HS;
                    double p = exp(s[j] - ls);
                    for (int d = 0; d < HS; d++)
                        o[d] += p * v[d];
                }
                lse[((size_t)b * NH + h) * T + t] = ls;
            }
    free(s);
}

void ref_attention_bwd(double *dqkv, const float *dout, const float *qkv, int B, int T, int NH,
                       int HS)
{
    int C = NH * HS;
    double scale = 1.0 / sqrt((double)HS);
    double *p = malloc(sizeof(double) * (size_t)T), *dp = malloc(sizeof(double) * (size_t)T);
    memset(dqkv, 0, sizeof(double) * (size_t)B * T * 3 * C);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                size_t qrow = ((size_t)b * T + t) * 3 * C + h * HS;
                const float *q = qkv + qrow, *dO = dout + ((size_t)b * T + t) * C + h * HS;
                double l, m = ref_attention_scores(p, &l, qkv, b, t, h, T, NH, HS), D = 0.0;
                for (int j = 0; j <= t; j++) {
                    const float *v = qkv + ((size_t)b * T + j) * 3 * C + 2 * C + h * HS;
                    p[j] = exp(p[j] - m) / l;
                    dp[j] = 0.0;
                    for (int d = 0; d < HS; d++)
                        dp[j] += (double)dO[d] * v[d];
                    D += p[j] * dp[j];
                }
                for (int j = 0; j <= t; j++) {
                    size_t krow = ((size_t)b * T + j) * 3 * C + C + h * HS;
                    double ds = p[j] * (dp[j] - D);
                    for (int d = 0; d < HS; d++) {
                        dqkv[qrow + d] += scale * ds * qkv[krow + d];
                        dqkv[krow + d] += scale * ds * q[d];
                        dqkv[krow + C + d] += p[j] * dO[d];
                    }
                }
            }
    free(p);
    free(dp);
}

/* ---- softmax cross-entropy ------------------------------------------------------------------- */

void ref_xent(double *loss, double *lse, double *dlogits, const float *logits, int ld,
              const int32_t *targets, double dloss, int N, int V)
{
    for (int i = 0; i < N; i++) {
        const float *x = logits + (size_t)i * ld;
        double m = -INFINITY, s = 0.0;
        for (int j = 0; j < V; j++)
            if (x[j] > m)
                m = x[j];
        for (int j = 0; j < V; j++)
            s += exp(x[j] - m);
        double l = m + log(s);
        int t = targets[i];
        lse[i] = l;
        loss[i] = t < 0 ? 0.0 : l - x[t];
        if (dlogits != NULL)
            for (int j = 0; j < V; j++)
                dlogits[(size_t)i * V + j] =
                    t < 0 ? 0.0 : (exp(x[j] - l) - (j == t ? 1.0 : 0.0)) * dloss;
    }
}

/* ---- AdamW ---------------------------------------------------------------------------------- */

void ref_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
               float beta2, float eps, float wd, int64_t step, float gscale)
{
    double bc1 = 1.0 - pow(beta1, (double)step), bc2 = 1.0 - pow(beta2, (double)step);
    float step_size = (float)(lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    float decay = 1.0f - lr * wd;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * gscale;
        float mi = beta1 * m[i] + (1.0f - beta1) * gi;
        float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        float pi = p[i] * decay;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
    }
}

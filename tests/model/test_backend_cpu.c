/* The CPU backend's ops against naive double-precision references at several sizes (odd
 * ones, ones that split across threads both ways, the GPT-2 vocabulary), and the backward
 * ops against central finite differences of the forward ops.
 * Error measure: max|got - want| / max|want| over the tensor (stated per check). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu_internal.h"
#include "core/log.h"
#include "core/rng.h"
#include "kernels/ref.h"
#include "tap.h"

static g3_backend_t *be;
static uint64_t rng_index;

static void randn(float *x, size_t n, float std)
{
    for (size_t i = 0; i < n; i++)
        x[i] = std * g3_rng_normal(7, 99, rng_index++);
}

static float *fvec(size_t n) { return calloc(n ? n : 1, sizeof(float)); }
static double *dvec(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

/* max|a-b| / max|b| (b is the reference) */
static double relerr(const float *a, const double *b, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= num))
            num = d;   /* also catches NaN */
        if (fabs(b[i]) > den)
            den = fabs(b[i]);
    }
    return den > 0.0 ? num / den : num;
}

static int check(const char *what, const float *got, const double *want, size_t n, double tol)
{
    double e = relerr(got, want, n);
    return tap_ok(e <= tol, "%s: max rel err %.2e <= %.0e", what, e, tol);
}

/* ---- matmul ------------------------------------------------------------------------------ */

static void test_matmul(int N, int IC, int OC, int with_bias)
{
    float *inp = fvec((size_t)N * IC), *w = fvec((size_t)OC * IC), *bias = fvec(OC);
    float *out = fvec((size_t)N * OC), *dout = fvec((size_t)N * OC);
    float *dinp = fvec((size_t)N * IC), *dw = fvec((size_t)OC * IC), *db = fvec(OC);
    double *rout = dvec((size_t)N * OC), *rdinp = dvec((size_t)N * IC);
    double *rdw = dvec((size_t)OC * IC), *rdb = dvec(OC);
    char what[128];

    randn(inp, (size_t)N * IC, 1.0f);
    randn(w, (size_t)OC * IC, 0.1f);
    randn(bias, OC, 0.5f);
    randn(dout, (size_t)N * OC, 1.0f);
    randn(dw, (size_t)OC * IC, 0.1f);   /* dw and db accumulate: start non-zero */
    randn(db, OC, 0.1f);
    for (size_t i = 0; i < (size_t)OC * IC; i++)
        rdw[i] = dw[i];
    for (int o = 0; o < OC; o++)
        rdb[o] = db[o];
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = with_bias ? bias[o] : 0.0;
            for (int i = 0; i < IC; i++)
                s += (double)inp[(size_t)n * IC + i] * w[(size_t)o * IC + i];
            rout[(size_t)n * OC + o] = s;
        }
    for (int n = 0; n < N; n++)
        for (int i = 0; i < IC; i++) {
            double s = 0.0;
            for (int o = 0; o < OC; o++)
                s += (double)dout[(size_t)n * OC + o] * w[(size_t)o * IC + i];
            rdinp[(size_t)n * IC + i] = s;
        }
    for (int o = 0; o < OC; o++) {
        for (int i = 0; i < IC; i++) {
            double s = 0.0;
            for (int n = 0; n < N; n++)
                s += (double)dout[(size_t)n * OC + o] * inp[(size_t)n * IC + i];
            rdw[(size_t)o * IC + i] += s;
        }
        for (int n = 0; n < N; n++)
            rdb[o] += dout[(size_t)n * OC + o];
    }
    be->ops->matmul_fwd(be, NULL, out, inp, w, with_bias ? bias : NULL, N, IC, OC);
    be->ops->matmul_bwd(be, NULL, dinp, dw, with_bias ? db : NULL, dout, inp, w, N, IC, OC);
    snprintf(what, sizeof(what), "matmul N=%d IC=%d OC=%d%s", N, IC, OC, with_bias ? " +bias" : "");
    {
        char w2[160];
        snprintf(w2, sizeof(w2), "%s fwd", what);
        check(w2, out, rout, (size_t)N * OC, 1e-5);
        snprintf(w2, sizeof(w2), "%s dinp", what);
        check(w2, dinp, rdinp, (size_t)N * IC, 1e-5);
        snprintf(w2, sizeof(w2), "%s dw (accumulated)", what);
        check(w2, dw, rdw, (size_t)OC * IC, 1e-5);
        if (with_bias) {
            snprintf(w2, sizeof(w2), "%s dbias (accumulated)", what);
            check(w2, db, rdb, OC, 1e-5);
        }
    }
    free(inp); free(w); free(bias); free(out); free(dout); free(dinp); free(dw); free(db);
    free(rout); free(rdinp); free(rdw); free(rdb);
}

/* ---- layer norm ------------------------------------------------------------------------------ */

static void test_layernorm(int N, int C)
{
    size_t nc = (size_t)N * C;
    float *x = fvec(nc), *w = fvec(C), *b = fvec(C), *out = fvec(nc), *mean = fvec(N),
          *rstd = fvec(N), *dout = fvec(nc), *dinp = fvec(nc), *dw = fvec(C), *db = fvec(C);
    double *rout = dvec(nc), *rmean = dvec(N), *rrstd = dvec(N), *rdinp = dvec(nc),
           *rdw = dvec(C), *rdb = dvec(C);
    char what[128];

    randn(x, nc, 2.0f);
    for (size_t i = 0; i < nc; i++) x[i] += 3.0f;   /* a mean far from 0 */
    randn(w, C, 1.0f);
    randn(b, C, 1.0f);
    randn(dout, nc, 1.0f);
    randn(dinp, nc, 1.0f);   /* dinp accumulates */
    for (size_t i = 0; i < nc; i++) rdinp[i] = dinp[i];
    /* the plain-C references of the CUDA kernels' tests (tests/kernels/ref.c), in double */
    ref_layernorm_fwd(NULL, rout, rmean, rrstd, x, NULL, w, b, N, C, 1e-5);
    ref_layernorm_bwd(rdinp, rdw, rdb, dout, x, w, N, C, 1e-5);
    be->ops->layernorm_fwd(be, out, mean, rstd, x, w, b, N, C, 1e-5f);
    be->ops->layernorm_bwd(be, dinp, dw, db, dout, x, w, mean, rstd, N, C);
    snprintf(what, sizeof(what), "layernorm N=%d C=%d fwd", N, C);
    check(what, out, rout, nc, 1e-5);
    snprintf(what, sizeof(what), "layernorm N=%d C=%d dinp (accumulated)", N, C);
    check(what, dinp, rdinp, nc, 1e-5);
    snprintf(what, sizeof(what), "layernorm N=%d C=%d dw", N, C);
    check(what, dw, rdw, C, 1e-5);
    snprintf(what, sizeof(what), "layernorm N=%d C=%d db", N, C);
    check(what, db, rdb, C, 1e-5);

    /* finite differences of sum(r * LN(x)) w.r.t. a few x and w entries */
    {
        float *o1 = fvec(nc), *o2 = fvec(nc), *d0 = fvec(nc), *dw0 = fvec(C), *db0 = fvec(C);
        double worst = 0.0;
        be->ops->layernorm_bwd(be, d0, dw0, db0, dout, x, w, mean, rstd, N, C);
        for (int k = 0; k < 6; k++) {
            int wsel = k & 1;
            size_t i = wsel ? (size_t)(k * 7919) % C : (size_t)(k * 104729) % nc;
            float *p = wsel ? &w[i] : &x[i], save = *p, h = 1e-2f;
            double lp = 0, lm = 0, fd, an;
            *p = save + h;
            be->ops->layernorm_fwd(be, o1, mean, rstd, x, w, b, N, C, 1e-5f);
            *p = save - h;
            be->ops->layernorm_fwd(be, o2, mean, rstd, x, w, b, N, C, 1e-5f);
            *p = save;
            for (size_t j = 0; j < nc; j++) {
                lp += (double)dout[j] * o1[j];
                lm += (double)dout[j] * o2[j];
            }
            fd = (lp - lm) / (2.0 * h);
            an = wsel ? dw0[i] : d0[i];
            if (fabs(fd - an) / (fabs(an) + 1e-2) > worst)
                worst = fabs(fd - an) / (fabs(an) + 1e-2);
        }
        be->ops->layernorm_fwd(be, out, mean, rstd, x, w, b, N, C, 1e-5f);
        tap_ok(worst < 2e-2, "layernorm N=%d C=%d backward matches finite differences (worst %.2e)",
               N, C, worst);
        free(o1); free(o2); free(d0); free(dw0); free(db0);
    }
    free(x); free(w); free(b); free(out); free(mean); free(rstd); free(dout); free(dinp);
    free(dw); free(db); free(rout); free(rmean); free(rrstd); free(rdinp); free(rdw); free(rdb);
}

/* ---- attention ------------------------------------------------------------------------------- */

/* qkv (B,T,3C) rows [q|k|v]; out (B,T,C); optional backward. */
static void att_ref(double *out, double *dqkv, const float *qkv, const float *dout, int B, int T,
                    int NH, int HS)
{
    int C = NH * HS, C3 = 3 * C;
    double scale = 1.0 / sqrt((double)HS);
    double *p = dvec((size_t)T * T), *dp = dvec((size_t)T * T);

    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *base = qkv + (size_t)b * T * C3;
#define Q(t, d) base[(size_t)(t) * C3 + h * HS + (d)]
#define K(t, d) base[(size_t)(t) * C3 + C + h * HS + (d)]
#define V(t, d) base[(size_t)(t) * C3 + 2 * C + h * HS + (d)]
            for (int i = 0; i < T; i++) {
                double m = -1e300, s = 0;
                for (int j = 0; j <= i; j++) {
                    double d = 0;
                    for (int e = 0; e < HS; e++) d += (double)Q(i, e) * K(j, e);
                    p[(size_t)i * T + j] = d * scale;
                    if (d * scale > m) m = d * scale;
                }
                for (int j = 0; j <= i; j++) {
                    p[(size_t)i * T + j] = exp(p[(size_t)i * T + j] - m);
                    s += p[(size_t)i * T + j];
                }
                for (int j = 0; j <= i; j++) p[(size_t)i * T + j] /= s;
                for (int e = 0; e < HS; e++) {
                    double y = 0;
                    for (int j = 0; j <= i; j++) y += p[(size_t)i * T + j] * V(j, e);
                    out[((size_t)b * T + i) * C + h * HS + e] = y;
                }
            }
            if (!dqkv)
                continue;
            {
                double *dbase = dqkv + (size_t)b * T * C3;
                const float *dy = dout + (size_t)b * T * C + h * HS;
                for (int i = 0; i < T; i++) {
                    double s = 0;
                    for (int j = 0; j <= i; j++) {
                        double d = 0;
                        for (int e = 0; e < HS; e++) d += (double)dy[(size_t)i * C + e] * V(j, e);
                        dp[(size_t)i * T + j] = d;
                        s += d * p[(size_t)i * T + j];
                    }
                    for (int j = 0; j <= i; j++)
                        dp[(size_t)i * T + j] =
                            p[(size_t)i * T + j] * (dp[(size_t)i * T + j] - s) * scale;
                }
                for (int i = 0; i < T; i++)
                    for (int e = 0; e < HS; e++) {
                        double dq = 0, dk = 0, dv = 0;
                        for (int j = 0; j <= i; j++) dq += dp[(size_t)i * T + j] * K(j, e);
                        for (int j = i; j < T; j++) {
                            dk += dp[(size_t)j * T + i] * Q(j, e);
                            dv += p[(size_t)j * T + i] * dy[(size_t)j * C + e];
                        }
                        dbase[(size_t)i * C3 + h * HS + e] = dq;
                        dbase[(size_t)i * C3 + C + h * HS + e] = dk;
                        dbase[(size_t)i * C3 + 2 * C + h * HS + e] = dv;
                    }
            }
#undef Q
#undef K
#undef V
        }
    free(p);
    free(dp);
}

static void test_attention(int B, int T, int NH, int HS)
{
    int C = NH * HS;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
    float *qkv = fvec(nq), *out = fvec(no), *att = fvec(na), *dout = fvec(no), *dqkv = fvec(nq),
          *scratch = fvec(na);
    double *rout = dvec(no), *rdqkv = dvec(nq);
    char what[128];

    randn(qkv, nq, 1.0f);
    randn(dout, no, 1.0f);
    for (size_t i = 0; i < nq; i++) dqkv[i] = 1e30f;   /* must be overwritten entirely */
    att_ref(rout, rdqkv, qkv, dout, B, T, NH, HS);
    be->ops->attention_fwd(be, out, att, qkv, B, T, NH, HS);
    be->ops->attention_bwd(be, dqkv, scratch, dout, out, qkv, att, B, T, NH, HS);
    snprintf(what, sizeof(what), "attention B=%d T=%d NH=%d HS=%d fwd", B, T, NH, HS);
    check(what, out, rout, no, 1e-5);
    snprintf(what, sizeof(what), "attention B=%d T=%d NH=%d HS=%d dqkv", B, T, NH, HS);
    check(what, dqkv, rdqkv, nq, 1e-5);
    free(qkv); free(out); free(att); free(dout); free(dqkv); free(scratch); free(rout); free(rdqkv);
}

/* finite differences through the fp32 attention op itself */
static void test_attention_fd(void)
{
    int B = 2, T = 9, NH = 2, HS = 4, C = NH * HS;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
    float *qkv = fvec(nq), *out = fvec(no), *att = fvec(na), *dout = fvec(no), *dqkv = fvec(nq),
          *scratch = fvec(na);
    double worst = 0.0;

    randn(qkv, nq, 1.0f);
    randn(dout, no, 1.0f);
    be->ops->attention_fwd(be, out, att, qkv, B, T, NH, HS);
    be->ops->attention_bwd(be, dqkv, scratch, dout, out, qkv, att, B, T, NH, HS);
    for (int k = 0; k < 24; k++) {
        size_t i = (size_t)(k * 7907 + 13) % nq;
        float save = qkv[i], h = 1e-2f;
        double lp = 0, lm = 0, fd;
        qkv[i] = save + h;
        be->ops->attention_fwd(be, out, att, qkv, B, T, NH, HS);
        for (size_t j = 0; j < no; j++) lp += (double)dout[j] * out[j];
        qkv[i] = save - h;
        be->ops->attention_fwd(be, out, att, qkv, B, T, NH, HS);
        for (size_t j = 0; j < no; j++) lm += (double)dout[j] * out[j];
        qkv[i] = save;
        fd = (lp - lm) / (2.0 * h);
        if (fabs(fd - dqkv[i]) / (fabs(dqkv[i]) + 1e-2) > worst)
            worst = fabs(fd - dqkv[i]) / (fabs(dqkv[i]) + 1e-2);
    }
    tap_ok(worst < 2e-2, "attention backward matches finite differences (worst %.2e)", worst);
    free(qkv); free(out); free(att); free(dout); free(dqkv); free(scratch);
}

/* ---- elementwise ----------------------------------------------------------------------------- */

static void test_elementwise(size_t n)
{
    float *x = fvec(n), *y = fvec(n), *out = fvec(n), *d = fvec(n), *dx = fvec(n);
    double *r = dvec(n), *rd = dvec(n);
    const double k0 = sqrt(2.0 / M_PI), k1 = 0.044715;
    char what[96];
    double worst = 0.0;

    randn(x, n, 3.0f);
    randn(y, n, 1.0f);
    randn(d, n, 1.0f);
    for (size_t i = 0; i < n; i++) {
        double xi = x[i], u = k0 * (xi + k1 * xi * xi * xi), t = tanh(u);
        r[i] = 0.5 * xi * (1.0 + t);
        rd[i] =
            (0.5 * (1.0 + t) + 0.5 * xi * (1.0 - t * t) * k0 * (1.0 + 3.0 * k1 * xi * xi)) * d[i];
    }
    be->ops->gelu_fwd(be, out, x, n);
    be->ops->gelu_bwd(be, dx, x, d, n);
    snprintf(what, sizeof(what), "gelu n=%zu fwd", n);
    check(what, out, r, n, 1e-6);
    snprintf(what, sizeof(what), "gelu n=%zu bwd", n);
    check(what, dx, rd, n, 1e-6);
    for (size_t i = 0; i < n && i < 64; i++) {   /* finite differences */
        double h = 1e-3, xi = x[i];
        double up = 0.5 * (xi + h) * (1 + tanh(k0 * ((xi + h) + k1 * pow(xi + h, 3))));
        double dn = 0.5 * (xi - h) * (1 + tanh(k0 * ((xi - h) + k1 * pow(xi - h, 3))));
        double fd = (up - dn) / (2 * h) * d[i];
        if (fabs(fd - dx[i]) > worst) worst = fabs(fd - dx[i]);
    }
    tap_ok(worst < 1e-4, "gelu bwd matches finite differences (worst abs %.2e)", worst);
    for (size_t i = 0; i < n; i++) r[i] = (double)x[i] + y[i];
    be->ops->residual_fwd(be, out, x, y, n);
    snprintf(what, sizeof(what), "residual n=%zu", n);
    check(what, out, r, n, 1e-7);
    for (size_t i = 0; i < n; i++) r[i] = (double)x[i] * 0.37f;
    be->ops->scale(be, x, n, 0.37f);
    snprintf(what, sizeof(what), "scale n=%zu", n);
    check(what, x, r, n, 1e-7);
    {
        double s = 0, got;
        for (size_t i = 0; i < n; i++) s += (double)y[i] * y[i];
        be->ops->sumsq(be, y, n, &got);
        tap_ok(fabs(got - s) <= 1e-6 * s, "sumsq n=%zu: %.9g vs %.9g", n, got, s);
    }
    free(x); free(y); free(out); free(d); free(dx); free(r); free(rd);
}

/* ---- cross-entropy --------------------------------------------------------------------------- */

static void test_xent(int N, int V)
{
    size_t nv = (size_t)N * V;
    float *lg = fvec(nv), *losses = fvec(N), *lse = fvec(N), *dl = fvec(nv);
    int32_t *tg = calloc((size_t)N, sizeof(int32_t));
    double *rl = dvec(N), *rd = dvec(nv);
    float dloss = 1.0f / 3.0f;
    char what[96];

    randn(lg, nv, 4.0f);
    for (int i = 0; i < N; i++) tg[i] = (int32_t)(g3_rng_u64(7, 5, (uint64_t)i) % (uint64_t)V);
    for (int i = 0; i < N; i++) {
        double m = -1e300, s = 0;
        for (int j = 0; j < V; j++) if (lg[(size_t)i * V + j] > m) m = lg[(size_t)i * V + j];
        for (int j = 0; j < V; j++) s += exp(lg[(size_t)i * V + j] - m);
        rl[i] = m + log(s) - lg[(size_t)i * V + tg[i]];
        for (int j = 0; j < V; j++)
            rd[(size_t)i * V + j] = (exp(lg[(size_t)i * V + j] - m) / s - (j == tg[i])) * dloss;
    }
    be->ops->xent_fwd(be, losses, lse, lg, tg, N, V);
    be->ops->xent_bwd(be, dl, lg, lse, tg, dloss, N, V);
    snprintf(what, sizeof(what), "cross-entropy N=%d V=%d losses", N, V);
    check(what, losses, rl, N, 1e-6);
    snprintf(what, sizeof(what), "cross-entropy N=%d V=%d dlogits", N, V);
    check(what, dl, rd, nv, 1e-6);
    be->ops->xent_bwd(be, lg, lg, lse, tg, dloss, N, V);   /* in place */
    snprintf(what, sizeof(what), "cross-entropy N=%d V=%d dlogits in place", N, V);
    check(what, lg, rd, nv, 1e-6);
    free(lg); free(losses); free(lse); free(dl); free(tg); free(rl); free(rd);
}

/* ---- embedding ------------------------------------------------------------------------------- */

static void test_embedding(int B, int T, int C, int V, int v0, int Vl, int with_wpe)
{
    size_t n = (size_t)B * T * C;
    float *wte = fvec((size_t)Vl * C), *wpe = fvec((size_t)T * C), *out = fvec(n), *dout = fvec(n);
    float *dwte = fvec((size_t)Vl * C), *dwpe = fvec((size_t)T * C);
    double *r = dvec(n), *rdwte = dvec((size_t)Vl * C), *rdwpe = dvec((size_t)T * C);
    int32_t *tok = calloc((size_t)B * T, sizeof(int32_t));
    char what[128];

    randn(wte, (size_t)Vl * C, 1.0f);
    randn(wpe, (size_t)T * C, 1.0f);
    randn(dout, n, 1.0f);
    for (int i = 0; i < B * T; i++)   /* few distinct ids: repeats must accumulate */
        tok[i] =
            (int32_t)(g3_rng_u64(3, 3, (uint64_t)i) % (uint64_t)(V < 7 ? V : 7)) * (V / 7 + 1) % V;
    for (int i = 0; i < B * T; i++) {
        int t = i % T, id = tok[i] - v0, in = id >= 0 && id < Vl;
        for (int c = 0; c < C; c++) {
            r[(size_t)i * C + c] =
                (in ? wte[(size_t)id * C + c] : 0.0) + (with_wpe ? wpe[(size_t)t * C + c] : 0.0);
            if (in) rdwte[(size_t)id * C + c] += dout[(size_t)i * C + c];
            rdwpe[(size_t)t * C + c] += dout[(size_t)i * C + c];
        }
    }
    be->ops->embedding_fwd(be, out, tok, wte, with_wpe ? wpe : NULL, B, T, C, v0, Vl);
    be->ops->embedding_bwd(be, dwte, with_wpe ? dwpe : NULL, dout, tok, B, T, C, v0, Vl);
    snprintf(what, sizeof(what), "embedding B=%d T=%d C=%d rows [%d,%d)%s fwd", B, T, C, v0, v0 + Vl,
             with_wpe ? " +pos" : "");
    check(what, out, r, n, 1e-7);
    snprintf(what, sizeof(what), "embedding B=%d T=%d C=%d rows [%d,%d) dwte", B, T, C, v0, v0 + Vl);
    check(what, dwte, rdwte, (size_t)Vl * C, 1e-6);
    if (with_wpe) {
        snprintf(what, sizeof(what), "embedding B=%d T=%d C=%d dwpe", B, T, C);
        check(what, dwpe, rdwpe, (size_t)T * C, 1e-6);
    }
    free(wte); free(wpe); free(out); free(dout); free(dwte); free(dwpe); free(r); free(rdwte);
    free(rdwpe); free(tok);
}

/* ---- AdamW ----------------------------------------------------------------------------------- */

static void test_adamw(size_t n)
{
    float *p = fvec(n), *g = fvec(n), *m = fvec(n), *v = fvec(n);
    double *rp = dvec(n), *rm = dvec(n), *rv = dvec(n);
    const double lr = 1e-3, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
    char what[64];

    randn(p, n, 1.0f);
    for (size_t i = 0; i < n; i++) rp[i] = p[i];
    for (int step = 1; step <= 3; step++) {
        randn(g, n, 1e-2f);
        for (size_t i = 0; i < n; i++) {
            rp[i] *= 1.0 - lr * wd;
            rm[i] = b1 * rm[i] + (1 - b1) * g[i];
            rv[i] = b2 * rv[i] + (1 - b2) * (double)g[i] * g[i];
            rp[i] -=
                lr / (1 - pow(b1, step)) * rm[i] / (sqrt(rv[i]) / sqrt(1 - pow(b2, step)) + eps);
        }
        be->ops->adamw(be, p, g, m, v, n, (float)lr, (float)b1, (float)b2, (float)eps, (float)wd,
                       step);
    }
    snprintf(what, sizeof(what), "adamw n=%zu, 3 steps: params", n);
    check(what, p, rp, n, 1e-6);
    snprintf(what, sizeof(what), "adamw n=%zu, 3 steps: first moment", n);
    check(what, m, rm, n, 1e-6);
    snprintf(what, sizeof(what), "adamw n=%zu, 3 steps: second moment", n);
    check(what, v, rv, n, 1e-6);
    free(p); free(g); free(m); free(v); free(rp); free(rm); free(rv);
}

/* The vectorised expf against libm's double exp over its whole range. */
static void test_expf(void)
{
    double worst = 0.0, at = 0.0;
    for (double x = -87.0; x <= 88.0; x += 0.000731) {
        double want = exp((float)x), got = g3_cpu_expf((float)x);
        double e = fabs(got - want) / want;
        if (e > worst) { worst = e; at = x; }
    }
    tap_ok(worst < 3e-7, "expf on [-87, 88]: max rel err %.2e (at %.4f) < 3e-7 (~2.5 ulp)", worst, at);
    tap_ok(g3_cpu_expf(-1000.0f) < 2e-38f && g3_cpu_expf(-1000.0f) >= 0.0f,
           "expf clamps far negative inputs to ~0");
    tap_ok(isnan(g3_cpu_expf(NAN)), "expf(NaN) is NaN (a NaN loss must stay NaN)");
}

int main(void)
{
    char why[256];

    g3_log_set_level(G3_LOG_WARN);
    if (g3_be_open(G3_BE_KIND_CPU, NULL, &be) != G3_OK)
        return 1;
    tap_diag("backend: %s, %d threads, peak %.1f GFLOP/s (%s)", be->device, be->nthreads,
             be->peak_flops / 1e9, be->peak_how);
    tap_ok(g3_be_kind_parse("no-such-backend", &(g3_be_kind_t){ 0 }, why, sizeof(why)) ==
                   G3_ERR_UNSUPPORTED &&
               g3_be_open(G3_BE_KINDS, NULL, &(g3_backend_t *){ NULL }) == G3_ERR_UNSUPPORTED,
           "an unknown backend name is refused");

    test_expf();
    test_matmul(1, 7, 5, 1);
    test_matmul(37, 19, 23, 1);
    test_matmul(130, 64, 200, 0);
    test_matmul(300, 96, 72, 1);       /* splits rows across threads */
    test_matmul(16, 64, 1000, 1);      /* splits output columns across threads */
    test_matmul(50, 40, 3001, 0);      /* dinp: a long reduction, split along K */
    test_matmul(64, 48, 5000, 1);
    test_layernorm(1, 5);
    test_layernorm(67, 129);
    test_layernorm(256, 384);
    test_attention(1, 1, 1, 4);
    test_attention(2, 5, 3, 8);
    test_attention(2, 100, 2, 16);     /* T not a multiple of the 64-row blocks */
    test_attention(1, 130, 4, 32);
    test_attention_fd();
    test_elementwise(1);
    test_elementwise(1000);
    test_elementwise(100003);
    test_xent(1, 1);
    test_xent(3, 10);
    test_xent(17, 1000);
    test_xent(4, 50304);
    test_embedding(2, 5, 8, 11, 0, 11, 1);
    test_embedding(3, 64, 96, 50, 0, 64, 1);
    test_embedding(2, 16, 40, 50, 16, 16, 0);  /* a vocabulary shard: other ids give zeros */
    test_adamw(10);
    test_adamw(100003);
    g3_be_close(be);
    return tap_exit();
}

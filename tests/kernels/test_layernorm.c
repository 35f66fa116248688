/* g3cuda_layernorm_fwd (with and without the fused residual add) and g3cuda_layernorm_bwd
 * against ref_layernorm_*, on bf16 inputs (a has mean 0.3 so the mean is not ~0).
 * Tolerances:
 *   resid = bf16(fp32 a + fp32 b): the same arithmetic as the reference, so exact (tol 0);
 *   out (bf16): one rounding (2^-8) plus fp32 statistics that can move a value across a
 *     rounding boundary: one bf16 ulp, rtol 2^-7, and 1e-4 max|out| near zero;
 *   mean, rstd (fp32 block reductions of C <= 9000 terms): rtol 1e-4, 1e-4 max|want|;
 *   dinp (bf16, dinp0 + dx rounded once): rtol 2^-7, 1e-4 max|want|;
 *   dw, db (fp32 sums over N rows): rtol 1e-4, 1e-4 max|want|.
 * The backward must be deterministic (two runs, same bits).  C covers the 4-, 8-, 16- and
 * 24-columns-per-thread kernels (C <= 4096, <= 8192, <= 16384, <= 24576: MT-NLG's 20480),
 * non-multiples of 32, and the backward's warp-per-row kernel (C <= 2048, C % 8 == 0: 8, 64,
 * 768, 1600, 2048), once more with g3cuda_ctx_set_ln_bwd_block (the block kernel there). */
#include "kernels/kt.h"

#define EPS 1e-5f

static void test_layernorm(int N, int C, int fused)
{
    size_t NC = (size_t)N * C;
    float *a = kt_fvec(NC), *b = kt_fvec(NC), *w = kt_fvec(C), *bias = kt_fvec(C);
    float *dout = kt_fvec(NC), *dinp0 = kt_fvec(NC), *dw0 = kt_fvec(C), *db0 = kt_fvec(C);
    float *resid = kt_fvec(NC), *rresid = kt_fvec(NC), *out = kt_fvec(NC);
    float *mean = kt_fvec(N), *rstd = kt_fvec(N), *dinp = kt_fvec(NC), *dw = kt_fvec(C),
          *db = kt_fvec(C);
    double *rout = kt_dvec(NC), *rmean = kt_dvec(N), *rrstd = kt_dvec(N), *rdinp = kt_dvec(NC),
           *rdw = kt_dvec(C), *rdb = kt_dvec(C), *rres = kt_dvec(NC);
    char what[96];

    ref_randn_bf(a, NULL, NC, 1.0f, 3, "a");
    for (size_t i = 0; i < NC; i++)
        a[i] = ref_round_bf(a[i] + 0.3f);
    ref_randn_bf(b, NULL, NC, 1.0f, 3, "b");
    ref_randn_bf(w, NULL, C, 0.2f, 3, "w");
    for (int c = 0; c < C; c++)
        w[c] = ref_round_bf(1.0f + w[c]);
    ref_randn_bf(bias, NULL, C, 0.2f, 3, "bias");
    ref_randn_bf(dout, NULL, NC, 1.0f, 3, "dout");
    ref_randn_bf(dinp0, NULL, NC, 1.0f, 3, "dinp0");
    ref_randn(dw0, C, 1.0f, 3, "dw0");
    ref_randn(db0, C, 1.0f, 3, "db0");

    ref_layernorm_fwd(rresid, rout, rmean, rrstd, a, fused ? b : NULL, w, bias, N, C, EPS);
    const float *x = fused ? rresid : a;     /* what backward differentiates through */
    for (size_t i = 0; i < NC; i++)
        rdinp[i] = dinp0[i];
    for (int c = 0; c < C; c++) {
        rdw[c] = dw0[c];
        rdb[c] = db0[c];
    }
    ref_layernorm_bwd(rdinp, rdw, rdb, dout, x, w, N, C, EPS);

    g3cuda_bf16_t *d_a = kt_dev_bf(a, NC), *d_b = kt_dev_bf(b, NC), *d_w = kt_dev_bf(w, C);
    g3cuda_bf16_t *d_bias = kt_dev_bf(bias, C), *d_dout = kt_dev_bf(dout, NC);
    g3cuda_bf16_t *d_res = kt_dev(2 * NC), *d_out = kt_dev(2 * NC);
    g3cuda_bf16_t *d_dinp = kt_dev_bf(dinp0, NC), *d_dinp2 = kt_dev_bf(dinp0, NC);
    float *d_mean = kt_dev(4 * (size_t)N), *d_rstd = kt_dev(4 * (size_t)N);
    float *d_dw = kt_dev_f32(dw0, C), *d_db = kt_dev_f32(db0, C);
    float *d_dw2 = kt_dev_f32(dw0, C), *d_db2 = kt_dev_f32(db0, C);

    snprintf(what, sizeof(what), "N=%d C=%d%s", N, C, fused ? " +residual" : "");
    g3cuda_layernorm_fwd(kt_ctx, fused ? d_res : NULL, d_out, d_mean, d_rstd, d_a,
                         fused ? d_b : NULL, d_w, d_bias, N, C, EPS);
    const g3cuda_bf16_t *d_x = fused ? d_res : d_a;
    g3cuda_layernorm_bwd(kt_ctx, d_dinp, d_dw, d_db, d_dout, d_x, d_w, d_mean, d_rstd, N, C);
    g3cuda_layernorm_bwd(kt_ctx, d_dinp2, d_dw2, d_db2, d_dout, d_x, d_w, d_mean, d_rstd, N, C);
    if (kt_sync(what) == 0) {
        if (fused) {
            for (size_t i = 0; i < NC; i++)
                rres[i] = rresid[i];
            kt_check_dev(KT_BF16, resid, d_res, rres, NC, 0.0, 0.0, "layernorm_fwd resid %s", what);
        }
        kt_check_dev(KT_BF16, out, d_out, rout, NC, 1.0 / 128, 1e-4, "layernorm_fwd out %s", what);
        kt_check_dev(KT_F32, mean, d_mean, rmean, N, 1e-4, 1e-4, "layernorm_fwd mean %s", what);
        kt_check_dev(KT_F32, rstd, d_rstd, rrstd, N, 1e-4, 1e-4, "layernorm_fwd rstd %s", what);
        kt_check_dev(KT_BF16, dinp, d_dinp, rdinp, NC, 1.0 / 128, 1e-4, "layernorm_bwd dinp %s", what);
        kt_check_dev(KT_F32, dw, d_dw, rdw, C, 1e-4, 1e-4, "layernorm_bwd dw %s", what);
        kt_check_dev(KT_F32, db, d_db, rdb, C, 1e-4, 1e-4, "layernorm_bwd db %s", what);
        tap_ok(kt_same_bytes(d_dinp, d_dinp2, 2 * NC) && kt_same_bytes(d_dw, d_dw2, 4 * C) &&
               kt_same_bytes(d_db, d_db2, 4 * C),
               "layernorm_bwd %s: deterministic (two runs, same bits)", what);
    }
    void *dev[] = { d_a, d_b, d_w, d_bias, d_dout, d_res, d_out, d_dinp, d_dinp2, d_mean,
                    d_rstd, d_dw, d_db, d_dw2, d_db2 };
    for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
        g3cuda_free(kt_ctx, dev[i]);
    void *host[] = { a, b, w, bias, dout, dinp0, dw0, db0, resid, rresid, out, mean, rstd, dinp,
                     dw, db, rout, rmean, rrstd, rdinp, rdw, rdb, rres };
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        free(host[i]);
}

typedef struct {
    g3cuda_bf16_t *res, *out, *a, *b, *w, *bias, *dout, *dinp;
    float *mean, *rstd, *dw, *db;
    int N, C;
} ln_bench_t;

static int run_fwd(void *p)
{
    ln_bench_t *k = p;
    return g3cuda_layernorm_fwd(kt_ctx, k->res, k->out, k->mean, k->rstd, k->a, k->b, k->w,
                                k->bias, k->N, k->C, EPS);
}

static int run_bwd(void *p)
{
    ln_bench_t *k = p;
    return g3cuda_layernorm_bwd(kt_ctx, k->dinp, k->dw, k->db, k->dout, k->res, k->w, k->mean,
                                k->rstd, k->N, k->C);
}

static void bench(int N, int C)
{
    size_t NC = (size_t)N * C;
    ln_bench_t k = { kt_dev(2 * NC), kt_dev(2 * NC), kt_dev(2 * NC), kt_dev(2 * NC),
                     kt_dev(2 * (size_t)C), kt_dev(2 * (size_t)C), kt_dev(2 * NC), kt_dev(2 * NC),
                     kt_dev(4 * (size_t)N), kt_dev(4 * (size_t)N), kt_dev(4 * (size_t)C),
                     kt_dev(4 * (size_t)C), N, C };
    char what[96];
    g3cuda_zero(kt_ctx, k.a, 2 * NC);
    g3cuda_zero(kt_ctx, k.b, 2 * NC);
    g3cuda_zero(kt_ctx, k.w, 2 * (size_t)C);
    g3cuda_zero(kt_ctx, k.bias, 2 * (size_t)C);
    g3cuda_zero(kt_ctx, k.dout, 2 * NC);
    g3cuda_zero(kt_ctx, k.dinp, 2 * NC);
    snprintf(what, sizeof(what), "layernorm_fwd+residual N=%d C=%d", N, C);
    kt_report(what, kt_time_ms(run_fwd, &k, 20), 0.0, 4.0 * 2.0 * (double)NC); /* a b resid out */
    snprintf(what, sizeof(what), "layernorm_bwd N=%d C=%d", N, C);
    kt_report(what, kt_time_ms(run_bwd, &k, 20), 0.0, 4.0 * 2.0 * (double)NC); /* dout x dinp rw */
    void *dev[] = { k.res, k.out, k.a, k.b, k.w, k.bias, k.dout, k.dinp, k.mean, k.rstd, k.dw,
                    k.db };
    for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
        g3cuda_free(kt_ctx, dev[i]);
}

int main(void)
{
    static const int shapes[][2] = { { 1, 5 }, { 7, 64 }, { 64, 768 }, { 33, 1600 },
                                     { 5, 4100 }, { 3, 9000 }, { 1, 8 }, { 5, 2048 },
                                     { 2, 20480 } };
    kt_start();
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        test_layernorm(shapes[i][0], shapes[i][1], 0);
        test_layernorm(shapes[i][0], shapes[i][1], 1);
    }
    g3cuda_ctx_set_ln_bwd_block(kt_ctx, 1);   /* the block kernel at the warp kernel's widths */
    test_layernorm(64, 768, 1);
    test_layernorm(33, 1600, 0);
    g3cuda_ctx_set_ln_bwd_block(kt_ctx, 0);
    if (kt_bench) {
        bench(16 * 1024, 768);
        bench(16 * 1024, 1600);
        g3cuda_ctx_set_ln_bwd_block(kt_ctx, 1);
        bench(16 * 1024, 768);    /* the block kernel, to compare */
        g3cuda_ctx_set_ln_bwd_block(kt_ctx, 0);
        bench(2 * 1024, 20480);   /* MT-NLG */
    }
    kt_finish();
    return tap_exit();
}

/* g3cuda_attention_fwd/bwd (flash style, WMMA) against ref_attention_* in double (the full
 * T x T softmax), on bf16 q, k, v, dout ~ N(0,1).
 * Tolerances, from the kernels' roundings (checked with a numpy emulation of the same tiled
 * algorithm over these shapes, whose worst element used <= 26% of each allowance, and with a
 * host emulation of these kernels' code, <= 44%):
 *   out (bf16): P is rounded to bf16 before P.V (2^-8 per term) and out once more:
 *     rtol 2^-7, plus 4e-3 max|out| (outputs are averages of v and can be near zero);
 *   lse (fp32): rtol 1e-5, plus 1e-5 max|lse|;
 *   dq, dk, dv (bf16): P and dS = P (dP - D) are rounded to bf16 before their products and
 *     D comes from the bf16 out: rtol 2^-6, plus 1e-2 max|want| (at least 1e-5 max|dqkv|:
 *     with T = 1 the exact dq and dk are 0).
 * The backward must be deterministic (two runs, same bits).  Shapes: T = 1, a single
 * partial tile, exactly one tile (64), one more than a tile (65), several tiles, every head
 * size compiled (32, 64, 80, 96, 128, 160: MT-NLG's), several batches and heads.
 *
 * In a build with cuDNN (HAVE_CUDNN) the same comparison runs on cuDNN's fused attention
 * (src/backend/cudnn_att.c, opened as --attention-backend cudnn would: a plan that does not
 * finalize fails the shape) at head sizes 64, 80, 128, 160 and T from 64 to 4096, with the
 * same tolerances except the log-sum-exp (rtol 1e-4, plus 1e-4 max|lse|: the fused kernels
 * work in base 2 and their exp2 is an approximation); its deterministic backward
 * (--deterministic's engines) must give the same bits twice.  G3_BENCH=1 times both
 * backends on the same shapes; G3_BENCH=only times them without the comparisons (the T=4096
 * references take the CPU a while), for tests/gpu/check.sh. */
#include "config.h"

#include "kernels/kt.h"
#ifdef HAVE_CUDNN
#include "backend/cudnn_att.h"
#endif

/* Which attention runs: the native kernels (cd NULL) or cuDNN's. */
#ifdef HAVE_CUDNN
typedef g3_cudnn_t att_cudnn_t;
#else
typedef void att_cudnn_t;
#endif

static void att_fwd(att_cudnn_t *cd, g3cuda_bf16_t *out, float *lse, const g3cuda_bf16_t *qkv,
                    int B, int T, int NH, int HS)
{
#ifdef HAVE_CUDNN
    if (cd) {
        g3_cudnn_att_fwd(cd, out, lse, qkv, B, T, NH, HS);
        return;
    }
#endif
    g3cuda_attention_fwd(kt_ctx, out, lse, qkv, B, T, NH, HS);
}

static void att_bwd(att_cudnn_t *cd, g3cuda_bf16_t *dqkv, void *scratch,
                    const g3cuda_bf16_t *dout, const g3cuda_bf16_t *out,
                    const g3cuda_bf16_t *qkv, const float *lse, int B, int T, int NH, int HS)
{
#ifdef HAVE_CUDNN
    if (cd) {
        g3_cudnn_att_bwd(cd, dqkv, scratch, dout, out, qkv, lse, B, T, NH, HS);
        return;
    }
#endif
    (void)scratch;
    g3cuda_attention_bwd(kt_ctx, dqkv, dout, out, qkv, lse, B, T, NH, HS);
}

/* RET: bytes of attention scratch cd's backward wants (0 native). */
static size_t att_scratch(att_cudnn_t *cd, int B, int T, int NH, int HS, int det)
{
#ifdef HAVE_CUDNN
    if (cd)
        return g3_cudnn_att_scratch_bytes(B, T, NH, HS, det);
#endif
    (void)cd, (void)B, (void)T, (void)NH, (void)HS, (void)det;
    return 0;
}

static void test_attention_on(att_cudnn_t *cd, int det, int B, int T, int NH, int HS)
{
    int C = NH * HS;
    size_t nqkv = (size_t)B * T * 3 * C, nout = (size_t)B * T * C, nl = (size_t)B * NH * T;
    float *qkv = kt_fvec(nqkv), *dout = kt_fvec(nout), *out = kt_fvec(nout), *lse = kt_fvec(nl);
    float *dqkv = kt_fvec(nqkv);
    double *rout = kt_dvec(nout), *rlse = kt_dvec(nl), *rdqkv = kt_dvec(nqkv);
    char what[96], w2[160];

    ref_randn_bf(qkv, NULL, nqkv, 1.0f, 6, "qkv");
    ref_randn_bf(dout, NULL, nout, 1.0f, 6, "dout");
    ref_attention_fwd(rout, rlse, qkv, B, T, NH, HS);
    ref_attention_bwd(rdqkv, dout, qkv, B, T, NH, HS);

    g3cuda_bf16_t *d_qkv = kt_dev_bf(qkv, nqkv), *d_dout = kt_dev_bf(dout, nout);
    g3cuda_bf16_t *d_out = kt_dev(2 * nout), *d_dqkv = kt_dev(2 * nqkv),
                  *d_dqkv2 = kt_dev(2 * nqkv);
    float *d_lse = kt_dev(4 * nl);
    void *d_scratch = kt_dev(att_scratch(cd, B, T, NH, HS, det) + 256);
    double lse_tol = cd ? 1e-4 : 1e-5;

    snprintf(what, sizeof(what), "%sB=%d T=%d NH=%d HS=%d",
             cd ? (det ? "cuDNN deterministic " : "cuDNN ") : "", B, T, NH, HS);
    int planned = 1;
#ifdef HAVE_CUDNN
    if (cd && !g3_cudnn_att_use(cd, B, T, NH, HS, G3_CUDNN_FWD)) {
        kt_sync(what);   /* the plan did not finalize: a failed line with cuDNN's message */
        planned = 0;
    }
#endif
    if (planned) {
        att_fwd(cd, d_out, d_lse, d_qkv, B, T, NH, HS);
        att_bwd(cd, d_dqkv, d_scratch, d_dout, d_out, d_qkv, d_lse, B, T, NH, HS);
        att_bwd(cd, d_dqkv2, d_scratch, d_dout, d_out, d_qkv, d_lse, B, T, NH, HS);
    }
    if (planned && kt_sync(what) == 0) {
        kt_check_dev(KT_BF16, out, d_out, rout, nout, 1.0 / 128, 4e-3, "attention_fwd out %s", what);
        kt_check_dev(KT_F32, lse, d_lse, rlse, nl, lse_tol, lse_tol, "attention_fwd lse %s", what);
        kt_get_bf(dqkv, d_dqkv, nqkv);
        /* check dq, dk and dv separately: gather each block of C columns */
        static const char *names[3] = { "dq", "dk", "dv" };
        float *g = kt_fvec(nout);
        double *r = kt_dvec(nout);
        for (int part = 0; part < 3; part++) {
            for (size_t row = 0; row < (size_t)B * T; row++)
                for (int c = 0; c < C; c++) {
                    g[row * C + c] = dqkv[row * 3 * C + part * C + c];
                    r[row * C + c] = rdqkv[row * 3 * C + part * C + c];
                }
            /* atol 1e-2 max|part|, but at least 1e-5 max|dqkv|: with T = 1, dq = dk = 0
             * exactly (one key: dS = P (dP - D) = 0) and the kernel's are fp32 noise */
            double scale = kt_maxabs(r, nout), floor = 1e-3 * kt_maxabs(rdqkv, nqkv);
            snprintf(w2, sizeof(w2), "attention_bwd %s %s", names[part], what);
            kt_check_abs(w2, g, r, nout, 1.0 / 64, 1e-2 * (scale > floor ? scale : floor));
        }
        free(g);
        free(r);
        if (cd && !det)   /* cuDNN's default backward accumulates dQ with atomics */
            tap_diag("attention_bwd %s: two runs %s", what,
                     kt_same_bytes(d_dqkv, d_dqkv2, 2 * nqkv) ? "gave the same bits"
                                                              : "differ (not deterministic)");
        else
            tap_ok(kt_same_bytes(d_dqkv, d_dqkv2, 2 * nqkv),
                   "attention_bwd %s: deterministic (two runs, same bits)", what);
    }
    KT_FREE(d_qkv, d_dout, d_out, d_dqkv, d_dqkv2, d_lse, d_scratch);
    free(qkv); free(dout); free(out); free(lse); free(dqkv); free(rout); free(rlse); free(rdqkv);
}

static void test_attention(int B, int T, int NH, int HS)
{
    test_attention_on(NULL, 0, B, T, NH, HS);
}

typedef struct {
    att_cudnn_t *cd;
    g3cuda_bf16_t *qkv, *out, *dout, *dqkv;
    float *lse;
    void *scratch;
    int B, T, NH, HS;
} att_bench_t;

static int run_fwd(void *p)
{
    att_bench_t *a = p;
    att_fwd(a->cd, a->out, a->lse, a->qkv, a->B, a->T, a->NH, a->HS);
    return g3cuda_ctx_error(kt_ctx)[0] != '\0';
}

static int run_bwd(void *p)
{
    att_bench_t *a = p;
    att_bwd(a->cd, a->dqkv, a->scratch, a->dout, a->out, a->qkv, a->lse, a->B, a->T, a->NH,
            a->HS);
    return g3cuda_ctx_error(kt_ctx)[0] != '\0';
}

/* FLOPs counted like FlashAttention's benchmarks: the causal half of the 2 (fwd) or 5 (bwd)
 * T x T x HS products: fwd 2 B NH T^2 HS, bwd 2.5x that.  Our backward recomputes S and dP a
 * second time (for dQ); that work is not counted. */
static void bench(att_cudnn_t *cd, int B, int T, int NH, int HS)
{
    size_t C = (size_t)NH * HS, n = (size_t)B * T;
    att_bench_t a = { cd, kt_dev(2 * n * 3 * C), kt_dev(2 * n * C), kt_dev(2 * n * C),
                      kt_dev(2 * n * 3 * C), kt_dev(4 * (size_t)B * NH * T),
                      kt_dev(att_scratch(cd, B, T, NH, HS, 0) + 256), B, T, NH, HS };
    const char *who = cd ? "cudnn " : "";
    float *qkv = kt_fvec(n * 3 * C);
    char what[128];
    double fl = 2.0 * B * NH * (double)T * T * HS;
    ref_randn(qkv, n * 3 * C, 1.0f, 7, "bench qkv");
    g3cuda_bf16_t *tmp = kt_dev_bf(qkv, n * 3 * C);
    g3cuda_cast(kt_ctx, a.qkv, G3CUDA_BF16, tmp, G3CUDA_BF16, n * 3 * C);
    g3cuda_cast(kt_ctx, a.dout, G3CUDA_BF16, tmp, G3CUDA_BF16, n * C);
#ifdef HAVE_CUDNN
    if (cd && !g3_cudnn_att_use(cd, B, T, NH, HS, G3_CUDNN_FWD)) {
        snprintf(what, sizeof(what), "cudnn bench B=%d T=%d NH=%d HS=%d", B, T, NH, HS);
        kt_sync(what);
        KT_FREE(tmp, a.qkv, a.out, a.dout, a.dqkv, a.lse, a.scratch);
        free(qkv);
        return;
    }
#endif
    snprintf(what, sizeof(what), "%sattention_fwd B=%d T=%d NH=%d HS=%d", who, B, T, NH, HS);
    kt_report(what, kt_time_ms(run_fwd, &a, 10), fl, 0.0);
    run_fwd(&a);   /* the backward reads a forward's output and log-sum-exp */
    snprintf(what, sizeof(what), "%sattention_bwd B=%d T=%d NH=%d HS=%d", who, B, T, NH, HS);
    kt_report(what, kt_time_ms(run_bwd, &a, 10), 2.5 * fl, 0.0);
    KT_FREE(tmp, a.qkv, a.out, a.dout, a.dqkv, a.lse, a.scratch);
    free(qkv);
}

int main(void)
{
    const char *bench_env = getenv("G3_BENCH");
    int compare = bench_env == NULL || strcmp(bench_env, "only") != 0;

    static const int shapes[][4] = {
        { 1, 1, 1, 64 }, { 2, 7, 3, 32 }, { 1, 64, 2, 64 }, { 2, 65, 2, 64 },
        { 1, 200, 4, 64 }, { 1, 130, 2, 128 }, { 1, 100, 2, 80 }, { 1, 70, 1, 96 },
        { 2, 256, 3, 64 }, { 1, 1024, 1, 64 }, { 1, 90, 2, 160 }, { 2, 200, 2, 160 },
    };
    kt_start();
    for (size_t i = 0; compare && i < sizeof(shapes) / sizeof(shapes[0]); i++)
        test_attention(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]);
#ifdef HAVE_CUDNN
    {
        static const int cshapes[][4] = {
            { 2, 64, 2, 64 },   { 1, 1024, 2, 64 },  { 1, 4096, 1, 64 },   { 1, 200, 3, 64 },
            { 2, 100, 2, 80 },  { 1, 1024, 2, 80 },  { 1, 130, 2, 128 },   { 1, 2048, 1, 128 },
            { 1, 90, 2, 160 },  { 2, 200, 2, 160 },  { 1, 2048, 1, 160 },  { 1, 4096, 1, 160 },
        };
        g3_cudnn_t *cd = NULL, *cdd = NULL;
        char why[1024];
        if (g3_cudnn_open(kt_ctx, G3_CUDNN_WANT_CUDNN, 0, &cd, why, sizeof(why)) != G3_OK ||
            g3_cudnn_open(kt_ctx, G3_CUDNN_WANT_CUDNN, 1, &cdd, why, sizeof(why)) != G3_OK) {
            tap_ok(0, "cuDNN opens on this GPU: %s", why);
        } else {
            tap_diag("cuDNN %ld at run time", g3_cudnn_version());
            for (size_t i = 0; compare && i < sizeof(cshapes) / sizeof(cshapes[0]); i++)
                test_attention_on(cd, 0, cshapes[i][0], cshapes[i][1], cshapes[i][2],
                                  cshapes[i][3]);
            if (compare) {
                test_attention_on(cdd, 1, 1, 1024, 2, 64);
                test_attention_on(cdd, 1, 1, 2048, 1, 160);
            }
            if (kt_bench) {
                bench(cd, 16, 1024, 12, 64);
                bench(cd, 16, 1024, 25, 64);
                bench(cd, 4, 4096, 16, 128);
                bench(cd, 1, 2048, 16, 160);
                bench(cd, 1, 2048, 128, 160);
                bench(cd, 16, 1024, 12, 160);
            }
        }
        g3_cudnn_close(cdd);
        g3_cudnn_close(cd);
    }
#endif
    if (kt_bench) {
        bench(NULL, 16, 1024, 12, 64);     /* GPT-2 124M */
        bench(NULL, 16, 1024, 25, 64);     /* GPT-2 1.5B */
        bench(NULL, 4, 4096, 16, 128);
        bench(NULL, 1, 2048, 16, 160);     /* MT-NLG, one TP-8 rank's 16 heads */
    }
    kt_finish();
    return tap_exit();
}

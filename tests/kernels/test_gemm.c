/* g3cuda_gemm (cuBLASLt) for the three products of a linear layer, with the bias, GELU+aux and
 * dGELU epilogues, and g3cuda_bias_bwd, against ref_gemm in double on bf16 inputs.
 * Tolerances:
 *   bf16 D: fp32 accumulation of K bf16 products (exact products, fp32 sums: relative error
 *     ~K 2^-24, negligible) and one rounding of D (2^-8), GELU evaluated on the fp32
 *     pre-activation (cuBLASLt's GELU may differ from the tanh form by ~1e-4 absolute): one
 *     bf16 ulp, rtol 2^-7, plus 1e-3 max|D| for results near zero;
 *   aux (the pre-activation, bf16): rtol 2^-7, 1e-3 max|aux|;
 *   fp32 D (dW += dout^T inp over K = N rows): rtol 1e-3, 1e-4 max|D| (tensor-core fp32
 *     accumulation need not round like IEEE additions);
 *   bias_bwd (fp32 column sums): rtol 1e-5, 1e-5 max|want|, and deterministic.
 * Shapes: odd sizes (5 x 13 x 7), GPT-2 sizes with rows that are not multiples of cuBLASLt's
 * tiles (33, 100), and a second call of the same shape with other bias/aux buffers (the cached
 * plan must use the new pointers), and the same products with algorithm autotuning on (other
 * shapes, so new plans are tuned; dW's accumulated D must survive the timing runs).  Also: a
 * bad argument is reported, held until sync, and blocks later ops until then.  And the bias
 * gradient through the dW product's BGRAD epilogue plus g3cuda_bias_acc, where offered. */
#include "kernels/kt.h"

/* The weight and bias gradients a linear layer accumulates, in double:
 * rdw (OC,IC) = dw0 + dout^T inp, rdb (OC,) = db0 + the column sums of dout (N,OC);
 * inp (N,IC), dw0 (OC,IC), db0 (OC,) */
static void ref_weight_grads(double *rdw, double *rdb, const float *dout, const float *inp,
                             const float *dw0, const float *db0, int N, int IC, int OC)
{
    ref_gemm(rdw, dout, OC, 1, inp, IC, 0, OC, IC, N);
    for (size_t i = 0; i < (size_t)OC * IC; i++)
        rdw[i] += dw0[i];
    for (int c = 0; c < OC; c++) {
        rdb[c] = db0[c];
        for (int r = 0; r < N; r++)
            rdb[c] += dout[(size_t)r * OC + c];
    }
}

/* The weight-gradient product: dw (OC,IC) fp32 += dout^T (N,OC) inp (N,IC), no epilogue */
static g3cuda_gemm_t dw_gemm(const g3cuda_bf16_t *dout, const g3cuda_bf16_t *inp, float *dw,
                             int N, int IC, int OC)
{
    g3cuda_gemm_t bw = { 0 };
    bw.M = OC; bw.N = IC; bw.K = N;
    bw.A = dout; bw.a_type = G3CUDA_BF16; bw.lda = OC; bw.trans_a = 1;
    bw.B = inp; bw.b_type = G3CUDA_BF16; bw.ldb = IC;
    bw.D = dw; bw.d_type = G3CUDA_F32; bw.ldd = IC;
    bw.alpha = 1.0f; bw.beta = 1.0f;
    return bw;
}

/* One linear layer: out (N,OC) = inp (N,IC) w^T (+ bias) (-> GELU with aux), then
 * dinp = dout w (optionally * gelu'(aux_in)), dw += dout^T inp, db += sum dout. */
static void test_linear(int N, int IC, int OC, g3cuda_epilogue_t epi, int repeat)
{
    size_t nin = (size_t)N * IC, nout = (size_t)N * OC, nw = (size_t)OC * IC;
    float *inp = kt_fvec(nin), *w = kt_fvec(nw), *bias = kt_fvec(OC), *bias2 = kt_fvec(OC);
    float *dout = kt_fvec(nout), *auxin = kt_fvec(nin), *dw0 = kt_fvec(nw), *db0 = kt_fvec(OC);
    float *out = kt_fvec(nout), *aux = kt_fvec(nout), *dinp = kt_fvec(nin), *dw = kt_fvec(nw),
          *db = kt_fvec(OC);
    double *prod = kt_dvec(nout), *rout = kt_dvec(nout), *raux = kt_dvec(nout);
    double *rdinp = kt_dvec(nin), *rdw = kt_dvec(nw), *rdb = kt_dvec(OC);
    int gelu = epi == G3CUDA_EPI_GELU_AUX || epi == G3CUDA_EPI_BIAS_GELU_AUX;
    int with_bias = epi == G3CUDA_EPI_BIAS || epi == G3CUDA_EPI_BIAS_GELU_AUX;
    char what[128];

    ref_randn_bf(inp, NULL, nin, 1.0f, 5, "inp");
    ref_randn_bf(w, NULL, nw, 0.05f, 5, "w");
    ref_randn_bf(bias, NULL, OC, 0.5f, 5, "bias");
    ref_randn_bf(bias2, NULL, OC, 0.5f, 5, "bias2");
    ref_randn_bf(dout, NULL, nout, 1.0f, 5, "dout");
    ref_randn_bf(auxin, NULL, nin, 1.0f, 5, "auxin");
    ref_randn(dw0, nw, 1.0f, 5, "dw0");
    ref_randn(db0, OC, 1.0f, 5, "db0");

    ref_gemm(prod, inp, IC, 0, w, IC, 1, N, OC, IC);
    const float *bb = repeat ? bias2 : bias;
    for (size_t i = 0; i < nout; i++) {
        double pre = prod[i] + (with_bias ? bb[i % OC] : 0.0);
        raux[i] = pre;
        rout[i] = gelu ? ref_gelu(pre) : pre;
    }
    /* dinp = dout w, then (dGELU) * gelu'(auxin) where auxin plays the forward's aux */
    ref_gemm(rdinp, dout, OC, 0, w, IC, 0, N, IC, OC);
    if (gelu)
        for (size_t i = 0; i < nin; i++)
            rdinp[i] *= ref_gelu_grad(auxin[i]);
    ref_weight_grads(rdw, rdb, dout, inp, dw0, db0, N, IC, OC);

    g3cuda_bf16_t *d_inp = kt_dev_bf(inp, nin), *d_w = kt_dev_bf(w, nw);
    g3cuda_bf16_t *d_bias = kt_dev_bf(bias, OC), *d_bias2 = kt_dev_bf(bias2, OC);
    g3cuda_bf16_t *d_dout = kt_dev_bf(dout, nout), *d_auxin = kt_dev_bf(auxin, nin);
    g3cuda_bf16_t *d_out = kt_dev(2 * nout), *d_aux = kt_dev(2 * nout),
                  *d_aux2 = kt_dev(2 * nout), *d_dinp = kt_dev(2 * nin);
    float *d_dw = kt_dev_f32(dw0, nw), *d_db = kt_dev_f32(db0, OC), *d_db2 = kt_dev_f32(db0, OC);

    g3cuda_gemm_t fwd = { 0 };
    fwd.M = N; fwd.N = OC; fwd.K = IC;
    fwd.A = d_inp; fwd.a_type = G3CUDA_BF16; fwd.lda = IC;
    fwd.B = d_w; fwd.b_type = G3CUDA_BF16; fwd.ldb = IC; fwd.trans_b = 1;
    fwd.D = d_out; fwd.d_type = G3CUDA_BF16; fwd.ldd = OC;
    fwd.alpha = 1.0f; fwd.beta = 0.0f;
    fwd.epilogue = epi; fwd.bias = d_bias; fwd.aux = d_aux; fwd.ldaux = OC;
    g3cuda_gemm(kt_ctx, &fwd);
    if (repeat) {               /* the same shape again: cached plan, new bias and aux */
        fwd.bias = d_bias2;
        fwd.aux = d_aux2;
        g3cuda_gemm(kt_ctx, &fwd);
    }
    g3cuda_gemm_t bd = { 0 };
    bd.M = N; bd.N = IC; bd.K = OC;
    bd.A = d_dout; bd.a_type = G3CUDA_BF16; bd.lda = OC;
    bd.B = d_w; bd.b_type = G3CUDA_BF16; bd.ldb = IC;
    bd.D = d_dinp; bd.d_type = G3CUDA_BF16; bd.ldd = IC;
    bd.alpha = 1.0f;
    bd.epilogue = gelu ? G3CUDA_EPI_DGELU : G3CUDA_EPI_NONE;
    bd.aux = d_auxin; bd.ldaux = IC;
    g3cuda_gemm(kt_ctx, &bd);
    g3cuda_gemm_t bw = dw_gemm(d_dout, d_inp, d_dw, N, IC, OC);
    g3cuda_gemm(kt_ctx, &bw);
    g3cuda_bias_bwd(kt_ctx, d_db, d_dout, N, OC);
    g3cuda_bias_bwd(kt_ctx, d_db2, d_dout, N, OC);

    snprintf(what, sizeof(what), "N=%d IC=%d OC=%d epilogue %d%s", N, IC, OC, (int)epi,
             repeat ? " (second call)" : "");
    if (kt_sync(what) == 0) {
        kt_check_dev(KT_BF16, out, d_out, rout, nout, 1.0 / 128, 1e-3, "gemm forward %s", what);
        if (gelu) {
            kt_check_dev(KT_BF16, aux, repeat ? d_aux2 : d_aux, raux, nout, 1.0 / 128, 1e-3,
                         "gemm forward aux %s", what);
        }
        kt_check_dev(KT_BF16, dinp, d_dinp, rdinp, nin, 1.0 / 128, 1e-3,
                     "gemm dinp%s %s", gelu ? " (dGELU)" : "", what);
        kt_check_dev(KT_F32, dw, d_dw, rdw, nw, 1e-3, 1e-4, "gemm dw += (fp32) %s", what);
        kt_check_dev(KT_F32, db, d_db, rdb, OC, 1e-5, 1e-5, "bias_bwd %s", what);
        tap_ok(kt_same_bytes(d_db, d_db2, 4 * (size_t)OC),
               "bias_bwd %s: deterministic (two runs, same bits)", what);
    }
    void *dev[] = { d_inp, d_w, d_bias, d_bias2, d_dout, d_auxin, d_out, d_aux, d_aux2, d_dinp,
                    d_dw, d_db, d_db2 };
    for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
        g3cuda_free(kt_ctx, dev[i]);
    void *host[] = { inp, w, bias, bias2, dout, auxin, dw0, db0, out, aux, dinp, dw, db, prod,
                     rout, raux, rdinp, rdw, rdb };
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        free(host[i]);
}

/* A bad argument: reported by the call, held (later ops queue nothing and return it) until
 * sync reports it with its text, then cleared. */
/* dW += dout^T inp with the BGRAD epilogue: its bias gradient (overwritten into a buffer)
 * then g3cuda_bias_acc into db, against the references (dw rtol 1e-3 as above; db: fp32 sums
 * in cuBLASLt's order, rtol 1e-5, 1e-5 max|want|).  A cuBLASLt that does not offer it is a
 * skip with the reason (the backend then keeps g3cuda_bias_bwd). */
static void test_bgrad(int N, int IC, int OC)
{
    size_t nin = (size_t)N * IC, nout = (size_t)N * OC, nw = (size_t)OC * IC;
    float *inp = kt_fvec(nin), *dout = kt_fvec(nout), *dw0 = kt_fvec(nw), *db0 = kt_fvec(OC);
    float *dw = kt_fvec(nw), *db = kt_fvec(OC);
    double *rdw = kt_dvec(nw), *rdb = kt_dvec(OC);
    char what[128], w2[200];

    ref_randn_bf(inp, NULL, nin, 1.0f, 9, "inp");
    ref_randn_bf(dout, NULL, nout, 1.0f, 9, "dout");
    ref_randn(dw0, nw, 1.0f, 9, "dw0");
    ref_randn(db0, OC, 1.0f, 9, "db0");
    ref_weight_grads(rdw, rdb, dout, inp, dw0, db0, N, IC, OC);
    g3cuda_bf16_t *d_inp = kt_dev_bf(inp, nin), *d_dout = kt_dev_bf(dout, nout);
    float *d_dw = kt_dev_f32(dw0, nw), *d_db = kt_dev_f32(db0, OC), *d_part = kt_dev(4 * OC);
    g3cuda_gemm_t bw = dw_gemm(d_dout, d_inp, d_dw, N, IC, OC);
    bw.epilogue = G3CUDA_EPI_BGRAD; bw.dbias = d_part;
    snprintf(what, sizeof(what), "BGRAD N=%d IC=%d OC=%d", N, IC, OC);
    if (!g3cuda_gemm_offered(kt_ctx, &bw)) {
        snprintf(w2, sizeof(w2), "%s: cuBLASLt offers no algorithm (fp32 D, fp32 bias gradient)",
                 what);
        tap_skip(w2);
        tap_skip(w2);
    } else {
        g3cuda_gemm(kt_ctx, &bw);
        g3cuda_bias_acc(kt_ctx, d_db, d_part, OC);
        if (kt_sync(what) == 0) {
            kt_check_dev(KT_F32, dw, d_dw, rdw, nw, 1e-3, 1e-4, "gemm dw += (fp32) %s", what);
            kt_check_dev(KT_F32, db, d_db, rdb, OC, 1e-5, 1e-5,
                         "bias gradient (BGRAD + bias_acc) %s", what);
        }
    }
    KT_FREE(d_inp, d_dout, d_dw, d_db, d_part);
    free(inp); free(dout); free(dw0); free(db0); free(dw); free(db); free(rdw); free(rdb);
}

/* Operand types and scales this build does not run (FP8) are refused with
 * G3CUDA_ERR_UNSUPPORTED, recorded and reported by sync; the context works again after.
 * g: a product that runs. */
static void test_unsupported(const g3cuda_gemm_t *ok)
{
    static float one;   /* a host address: never read, the request is refused first */
    g3cuda_gemm_t g;
    char why[512];
    int e[3];

    for (int i = 0; i < 3; i++) {
        g = *ok;
        if (i == 0)
            g.a_type = G3CUDA_FP8_E4M3;
        else if (i == 1)
            g.a_type = G3CUDA_F32;   /* bf16 operands only */
        else
            g.a_scale = &one;
        e[i] = g3cuda_gemm(kt_ctx, &g);
        tap_ok(e[i] == G3CUDA_ERR_UNSUPPORTED && !g3cuda_gemm_offered(kt_ctx, &g) &&
                   g3cuda_ctx_sync(kt_ctx, why, sizeof(why)) == G3CUDA_ERR_UNSUPPORTED,
               "an unsupported gemm (case %d) returns G3CUDA_ERR_UNSUPPORTED (%d): %s", i, e[i],
               why);
    }
    tap_ok(g3cuda_gemm(kt_ctx, ok) == 0 && g3cuda_ctx_sync(kt_ctx, why, sizeof(why)) == 0,
           "the context works again after the unsupported gemms (%s)", why);
}

static void test_errors(void)
{
    g3cuda_bf16_t *a = kt_dev(2 * 64 * 64), *d = kt_dev(2 * 64 * 64);
    g3cuda_gemm_t g = { 0 };
    char why[512];
    int e1, e2, e3;

    g.M = 64; g.N = 64; g.K = 64;
    g.A = a; g.a_type = G3CUDA_BF16; g.lda = 64; g.B = a; g.b_type = G3CUDA_BF16; g.ldb = 64;
    g.D = d; g.d_type = G3CUDA_BF16; g.ldd = 64;
    g.alpha = 1.0f;
    g.epilogue = G3CUDA_EPI_GELU_AUX; g.aux = d; g.ldaux = 66;      /* not a multiple of 8 */
    e1 = g3cuda_gemm(kt_ctx, &g);
    e2 = g3cuda_gelu_fwd(kt_ctx, d, a, 64);
    e3 = g3cuda_ctx_sync(kt_ctx, why, sizeof(why));
    tap_ok(e1 == G3CUDA_ERR_ARG && e2 == G3CUDA_ERR_ARG && e3 == G3CUDA_ERR_ARG &&
           strstr(why, "ldaux") != NULL,
           "a bad ldaux is reported (%d), held for the next op (%d) and by sync (%d): %s", e1, e2,
           e3, why);
    tap_ok(g3cuda_ctx_sync(kt_ctx, why, sizeof(why)) == 0 && why[0] == '\0',
           "sync cleared the error");
    g.ldaux = 64;
    tap_ok(g3cuda_gemm(kt_ctx, &g) == 0 && g3cuda_ctx_sync(kt_ctx, why, sizeof(why)) == 0,
           "the context works again after the error was reported (%s)", why);
    test_unsupported(&g);
    KT_FREE(a, d);
}

typedef struct { g3cuda_gemm_t g; } gemm_bench_t;

static int run_gemm(void *p)
{
    return g3cuda_gemm(kt_ctx, &((gemm_bench_t *)p)->g);
}

/* Time one row-major product D (M,N) = A (M,K) op(B) with the given epilogue. */
static void bench_one(const char *name, int M, int N, int K, int trans_a, int trans_b,
                      g3cuda_dtype_t dt, g3cuda_epilogue_t epi)
{
    gemm_bench_t b;
    size_t na = (size_t)M * K, nb = (size_t)K * N, nd = (size_t)M * N;
    char what[160];
    memset(&b, 0, sizeof(b));
    b.g.M = M; b.g.N = N; b.g.K = K; b.g.trans_a = trans_a; b.g.trans_b = trans_b;
    b.g.A = kt_dev(2 * na); b.g.a_type = G3CUDA_BF16; b.g.lda = trans_a ? M : K;
    b.g.B = kt_dev(2 * nb); b.g.b_type = G3CUDA_BF16; b.g.ldb = trans_b ? K : N;
    b.g.D = kt_dev((dt == G3CUDA_F32 ? 4 : 2) * nd); b.g.d_type = dt; b.g.ldd = N;
    b.g.alpha = 1.0f; b.g.beta = dt == G3CUDA_F32 ? 1.0f : 0.0f;
    b.g.epilogue = epi;
    b.g.bias = kt_dev(2 * (size_t)N);
    b.g.aux = kt_dev(2 * nd); b.g.ldaux = N;
    g3cuda_zero(kt_ctx, (void *)b.g.A, 2 * na);
    g3cuda_zero(kt_ctx, (void *)b.g.B, 2 * nb);
    g3cuda_zero(kt_ctx, b.g.D, (dt == G3CUDA_F32 ? 4 : 2) * nd);
    g3cuda_zero(kt_ctx, (void *)b.g.bias, 2 * (size_t)N);
    g3cuda_zero(kt_ctx, b.g.aux, 2 * nd);
    snprintf(what, sizeof(what), "gemm %s M=%d N=%d K=%d", name, M, N, K);
    kt_report(what, kt_time_ms(run_gemm, &b, 20), 2.0 * M * (double)N * K, 0.0);
    KT_FREE((void *)b.g.A, (void *)b.g.B, b.g.D, (void *)b.g.bias, b.g.aux);
}

int main(void)
{
    kt_start();
    test_linear(5, 13, 7, G3CUDA_EPI_NONE, 0);
    test_linear(5, 13, 7, G3CUDA_EPI_BIAS, 0);
    test_linear(64, 256, 768, G3CUDA_EPI_BIAS, 0);
    test_linear(64, 256, 768, G3CUDA_EPI_BIAS, 1);
    test_linear(33, 768, 2304, G3CUDA_EPI_BIAS, 0);
    test_linear(100, 768, 3072, G3CUDA_EPI_BIAS_GELU_AUX, 0);
    test_linear(100, 768, 3072, G3CUDA_EPI_BIAS_GELU_AUX, 1);
    test_linear(48, 128, 64, G3CUDA_EPI_GELU_AUX, 0);
    test_linear(100, 3072, 768, G3CUDA_EPI_BIAS, 0);
    test_linear(40, 64, 2312, G3CUDA_EPI_BIAS, 0);   /* bias_bwd: a partial 256-column block */
    /* autotuning: the fastest of the heuristic's candidates, timed on the call's operands (new
     * shapes: the plans above are cached); dW accumulates into its initial values, so its D
     * must be put back after the timing runs */
    g3cuda_ctx_set_gemm_autotune(kt_ctx, 1);
    test_linear(65, 256, 768, G3CUDA_EPI_BIAS, 0);
    test_linear(101, 768, 3072, G3CUDA_EPI_BIAS_GELU_AUX, 0);
    test_linear(49, 128, 64, G3CUDA_EPI_GELU_AUX, 0);
    test_linear(99, 3072, 768, G3CUDA_EPI_BIAS, 0);
    g3cuda_ctx_set_gemm_autotune(kt_ctx, 0);
    test_bgrad(64, 256, 768);
    test_bgrad(100, 768, 3072);
    test_errors();
    if (kt_bench) {                 /* GPT-2 124M at B=16, T=1024 (N = 16384 rows) */
        int N = 16384;
        bench_one("qkv fwd (bias)", N, 2304, 768, 0, 1, G3CUDA_BF16, G3CUDA_EPI_BIAS);
        bench_one("fc fwd (bias+gelu+aux)", N, 3072, 768, 0, 1, G3CUDA_BF16,
                  G3CUDA_EPI_BIAS_GELU_AUX);
        bench_one("fc-proj dinp (dgelu)", N, 3072, 768, 0, 0, G3CUDA_BF16, G3CUDA_EPI_DGELU);
        bench_one("proj fwd (bias)", N, 768, 3072, 0, 1, G3CUDA_BF16, G3CUDA_EPI_BIAS);
        bench_one("lm head fwd", N, 50304, 768, 0, 1, G3CUDA_BF16, G3CUDA_EPI_NONE);
        bench_one("fc dW (fp32 +=)", 3072, 768, N, 1, 0, G3CUDA_F32, G3CUDA_EPI_NONE);
        bench_one("square", 8192, 8192, 8192, 0, 1, G3CUDA_BF16, G3CUDA_EPI_NONE);
    }
    kt_finish();
    return tap_exit();
}

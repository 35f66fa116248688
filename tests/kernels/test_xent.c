/* Softmax cross-entropy: g3cuda_xent_fused (one shard), and the vocabulary-parallel stages
 * g3cuda_xent_partial -> (stats of S = 3 shards side by side, as an all-gather leaves them)
 * -> g3cuda_xent_finish -> g3cuda_xent_grad on each shard, against ref_xent in double over
 * the whole vocabulary.  Logits bf16 ~ N(0, 3^2), targets uniform with some rows ignored (-1).
 * Tolerances:
 *   losses, lse (fp32; fp32 sums of V exponentials, __expf relative error ~2^-21):
 *     rtol 1e-5 plus 1e-5 max|want|;
 *   dlogits (bf16, one rounding of (p - onehot) dloss): rtol 2^-7 plus 1e-5 max|want|;
 *     padding columns [V, ld) and ignored rows must be exactly 0.
 * Shapes: tiny rows, row strides that are and are not multiples of 8 (16-byte path or not),
 * the GPT-2 vocabulary 50257 padded to 50304, and shards of unequal widths. */
#include "kernels/kt.h"

static void test_fused(int N, int V, int ld, int in_place)
{
    size_t n = (size_t)N * ld;
    float *logits = kt_fvec(n), *loss = kt_fvec(N), *lse = kt_fvec(N), *dl = kt_fvec(n);
    double *rloss = kt_dvec(N), *rlse = kt_dvec(N), *rdl = kt_dvec((size_t)N * V);
    double *rdl_ld = kt_dvec(n);
    int32_t *tgt = malloc(sizeof(int32_t) * N);
    double dloss = 1.0 / N;
    char what[96];

    ref_randn_bf(logits, NULL, n, 3.0f, 8, "logits");
    ref_randint(tgt, N, 0, V, 8, "targets");
    for (int i = 3; i < N; i += 5)
        tgt[i] = -1;                                       /* ignored rows */
    ref_xent(rloss, rlse, rdl, logits, ld, tgt, dloss, N, V);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < V; j++)
            rdl_ld[(size_t)i * ld + j] = rdl[(size_t)i * V + j];   /* padding stays 0 */

    g3cuda_bf16_t *d_logits = kt_dev_bf(logits, n);
    g3cuda_bf16_t *d_dl = in_place ? d_logits : kt_dev(2 * n);
    float *d_loss = kt_dev(4 * (size_t)N), *d_lse = kt_dev(4 * (size_t)N);
    int32_t *d_tgt = kt_dev_i32(tgt, N);
    if (!in_place)
        g3cuda_zero(kt_ctx, d_dl, 2 * n);
    snprintf(what, sizeof(what), "N=%d V=%d ld=%d%s", N, V, ld, in_place ? " in place" : "");
    g3cuda_xent_fused(kt_ctx, d_loss, d_lse, d_dl, d_logits, ld, d_tgt, (float)dloss, N, V);
    if (kt_sync(what) == 0) {
        kt_check_dev(KT_F32, loss, d_loss, rloss, N, 1e-5, 1e-5, "xent_fused losses %s", what);
        kt_check_dev(KT_F32, lse, d_lse, rlse, N, 1e-5, 1e-5, "xent_fused lse %s", what);
        kt_check_dev(KT_BF16, dl, d_dl, rdl_ld, n, 1.0 / 128, 1e-5, "xent_fused dlogits %s", what);
    }
    g3cuda_free(kt_ctx, d_logits);
    if (!in_place)
        g3cuda_free(kt_ctx, d_dl);
    KT_FREE(d_loss, d_lse, d_tgt);
    free(logits); free(loss); free(lse); free(dl); free(rloss); free(rlse); free(rdl);
    free(rdl_ld); free(tgt);
}

/* Three shards [0, a), [a, b), [b, V), each with its own (N, ld_s) logits, ld_s the width
 * rounded up to a multiple of 8 plus 8 columns of padding. */
static void test_sharded(int N, int V, int a, int b)
{
    int lo[3] = { 0, a, b }, hi[3] = { a, b, V };
    float *logits = kt_fvec((size_t)N * V), *loss = kt_fvec(N), *lse = kt_fvec(N);
    double *rloss = kt_dvec(N), *rlse = kt_dvec(N), *rdl = kt_dvec((size_t)N * V);
    int32_t *tgt = malloc(sizeof(int32_t) * N);
    double dloss = 0.5 / N;
    char what[96], w2[200];

    ref_randn_bf(logits, NULL, (size_t)N * V, 3.0f, 9, "sharded logits");
    ref_randint(tgt, N, 0, V, 9, "sharded targets");
    if (N > 2)
        tgt[2] = -1;
    ref_xent(rloss, rlse, rdl, logits, V, tgt, dloss, N, V);

    float *d_stats = kt_dev(4 * (size_t)3 * N * 3), *d_loss = kt_dev(4 * (size_t)N);
    float *d_lse = kt_dev(4 * (size_t)N);
    int32_t *d_tgt = kt_dev_i32(tgt, N);
    g3cuda_bf16_t *d_sh[3], *d_g[3];
    int ld[3];
    for (int s = 0; s < 3; s++) {
        int w = hi[s] - lo[s];
        float *part;
        ld[s] = (w + 7) / 8 * 8 + 8;
        part = kt_fvec((size_t)N * ld[s]);
        for (int i = 0; i < N; i++)
            memcpy(part + (size_t)i * ld[s], logits + (size_t)i * V + lo[s], sizeof(float) * w);
        d_sh[s] = kt_dev_bf(part, (size_t)N * ld[s]);
        d_g[s] = kt_dev(2 * (size_t)N * ld[s]);
        free(part);
        g3cuda_xent_partial(kt_ctx, d_stats + (size_t)s * N * 3, d_sh[s], ld[s], d_tgt, N, w,
                            lo[s]);
    }
    g3cuda_xent_finish(kt_ctx, d_loss, d_lse, d_stats, 3, d_tgt, N);
    for (int s = 0; s < 3; s++)
        g3cuda_xent_grad(kt_ctx, d_g[s], d_sh[s], ld[s], d_lse, d_tgt, (float)dloss, N,
                         hi[s] - lo[s], lo[s]);
    snprintf(what, sizeof(what), "N=%d V=%d shards [0,%d) [%d,%d) [%d,%d)", N, V, a, a, b, b, V);
    if (kt_sync(what) == 0) {
        kt_check_dev(KT_F32, loss, d_loss, rloss, N, 1e-5, 1e-5, "xent partial+finish losses %s",
                     what);
        kt_check_dev(KT_F32, lse, d_lse, rlse, N, 1e-5, 1e-5, "xent partial+finish lse %s", what);
        for (int s = 0; s < 3; s++) {
            size_t ns = (size_t)N * ld[s];
            float *g = kt_fvec(ns);
            double *r = kt_dvec(ns);
            kt_get_bf(g, d_g[s], ns);
            for (int i = 0; i < N; i++)
                for (int j = 0; j < hi[s] - lo[s]; j++)
                    r[(size_t)i * ld[s] + j] = rdl[(size_t)i * V + lo[s] + j];
            snprintf(w2, sizeof(w2), "xent_grad shard %d (ld %d) %s", s, ld[s], what);
            kt_check(w2, g, r, ns, 1.0 / 128, 1e-5);
            free(g);
            free(r);
        }
    }
    for (int s = 0; s < 3; s++) {
        KT_FREE(d_sh[s], d_g[s]);
    }
    KT_FREE(d_stats, d_loss, d_lse, d_tgt);
    free(logits); free(loss); free(lse); free(rloss); free(rlse); free(rdl); free(tgt);
}

typedef struct {
    float *loss, *lse;
    g3cuda_bf16_t *logits;
    int32_t *tgt;
    int N, V;
} xent_bench_t;

static int run_fused(void *p)
{
    xent_bench_t *a = p;
    return g3cuda_xent_fused(kt_ctx, a->loss, a->lse, a->logits, a->logits, a->V, a->tgt,
                             1.0f / a->N, a->N, a->V);
}

static void bench(int N, int V)
{
    size_t n = (size_t)N * V;
    int32_t *tgt = malloc(sizeof(int32_t) * N);
    xent_bench_t a = { kt_dev(4 * (size_t)N), kt_dev(4 * (size_t)N), kt_dev(2 * n), NULL, N, V };
    char what[96];
    ref_randint(tgt, N, 0, V, 10, "bench targets");
    a.tgt = kt_dev_i32(tgt, N);
    g3cuda_zero(kt_ctx, a.logits, 2 * n);
    snprintf(what, sizeof(what), "xent_fused in place N=%d V=%d", N, V);
    /* reads the logits twice, writes the gradient once */
    kt_report(what, kt_time_ms(run_fused, &a, 10), 0.0, 3.0 * 2.0 * (double)n);
    KT_FREE(a.loss, a.lse, a.logits, a.tgt);
    free(tgt);
}

int main(void)
{
    kt_start();
    test_fused(1, 5, 5, 0);
    test_fused(7, 100, 104, 0);
    test_fused(33, 1000, 1003, 0);
    test_fused(33, 1000, 1003, 1);
    test_fused(20, 50257, 50304, 1);
    test_sharded(9, 300, 100, 211);
    test_sharded(16, 50257, 16768, 33536);
    if (kt_bench)
        bench(16384, 50304);
    kt_finish();
    return tap_exit();
}

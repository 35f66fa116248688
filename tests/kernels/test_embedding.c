/* g3cuda_embedding_fwd/bwd against ref_embedding_*, on bf16 inputs.
 * Tolerances: forward out = bf16(wte + wpe): one bf16 rounding, |err| <= 2^-8 |want|
 * (rtol 4e-3).  Backward: fp32 sums of at most B*T bf16 terms added to fp32 gradients:
 * rtol 1e-5 and 1e-5 max|want| (fp32 summation of <= 1000 terms of similar size).  The
 * backward must also be deterministic: two runs give the same bits.
 * Shapes: odd C (scalar path), C % 8 == 0 (16-byte path), a vocabulary shard [v0, v0+V) with
 * tokens outside it and no wpe, a batch where one token fills every position. */
#include "kernels/kt.h"

typedef struct {
    int B, T, C, V, v0, tok_lo, tok_hi, with_wpe;
} emb_case_t;

static void test_embedding(const emb_case_t *k)
{
    int B = k->B, T = k->T, C = k->C, V = k->V, BT = k->B * k->T;
    float *wte = kt_fvec((size_t)V * C), *wpe = kt_fvec((size_t)T * C);
    float *out = kt_fvec((size_t)BT * C), *dout = kt_fvec((size_t)BT * C);
    float *dwte0 = kt_fvec((size_t)V * C), *dwpe0 = kt_fvec((size_t)T * C);
    float *dwte = kt_fvec((size_t)V * C), *dwpe = kt_fvec((size_t)T * C);
    double *rout = kt_dvec((size_t)BT * C), *rdwte = kt_dvec((size_t)V * C);
    double *rdwpe = kt_dvec((size_t)T * C);
    int32_t *tok = malloc(sizeof(int32_t) * BT);
    char what[160];

    ref_randn_bf(wte, NULL, (size_t)V * C, 1.0f, 2, "wte");
    ref_randn_bf(wpe, NULL, (size_t)T * C, 1.0f, 2, "wpe");
    ref_randn_bf(dout, NULL, (size_t)BT * C, 1.0f, 2, "dout");
    ref_randn(dwte0, (size_t)V * C, 1.0f, 2, "dwte0");
    ref_randn(dwpe0, (size_t)T * C, 1.0f, 2, "dwpe0");
    ref_randint(tok, BT, k->tok_lo, k->tok_hi, 2, "tokens");
    for (size_t i = 0; i < (size_t)V * C; i++)
        rdwte[i] = dwte0[i];
    for (size_t i = 0; i < (size_t)T * C; i++)
        rdwpe[i] = dwpe0[i];
    ref_embedding_fwd(rout, tok, wte, k->with_wpe ? wpe : NULL, B, T, C, k->v0, V);
    ref_embedding_bwd(rdwte, k->with_wpe ? rdwpe : NULL, dout, tok, B, T, C, k->v0, V);

    g3cuda_bf16_t *d_wte = kt_dev_bf(wte, (size_t)V * C), *d_wpe = kt_dev_bf(wpe, (size_t)T * C);
    g3cuda_bf16_t *d_out = kt_dev(sizeof(uint16_t) * BT * C);
    g3cuda_bf16_t *d_dout = kt_dev_bf(dout, (size_t)BT * C);
    float *d_dwte = kt_dev_f32(dwte0, (size_t)V * C), *d_dwpe = kt_dev_f32(dwpe0, (size_t)T * C);
    float *d_dwte2 = kt_dev_f32(dwte0, (size_t)V * C);
    int32_t *d_tok = kt_dev_i32(tok, BT);

    snprintf(what, sizeof(what), "B=%d T=%d C=%d V=%d v0=%d%s", B, T, C, V, k->v0,
             k->with_wpe ? "" : " no wpe");
    g3cuda_embedding_fwd(kt_ctx, d_out, d_tok, d_wte, k->with_wpe ? d_wpe : NULL, B, T, C, k->v0,
                         V);
    g3cuda_embedding_bwd(kt_ctx, d_dwte, k->with_wpe ? d_dwpe : NULL, d_dout, d_tok, B, T, C,
                         k->v0, V);
    g3cuda_embedding_bwd(kt_ctx, d_dwte2, NULL, d_dout, d_tok, B, T, C, k->v0, V);
    if (kt_sync(what) == 0) {
        char w2[200];
        kt_get_bf(out, d_out, (size_t)BT * C);
        kt_get_f32(dwte, d_dwte, (size_t)V * C);
        kt_get_f32(dwpe, d_dwpe, (size_t)T * C);
        snprintf(w2, sizeof(w2), "embedding_fwd %s", what);
        kt_check(w2, out, rout, (size_t)BT * C, 4e-3, 1e-6);
        snprintf(w2, sizeof(w2), "embedding_bwd dwte %s", what);
        kt_check(w2, dwte, rdwte, (size_t)V * C, 1e-5, 1e-5);
        if (k->with_wpe) {
            snprintf(w2, sizeof(w2), "embedding_bwd dwpe %s", what);
            kt_check(w2, dwpe, rdwpe, (size_t)T * C, 1e-5, 1e-5);
        }
        tap_ok(kt_same_bytes(d_dwte, d_dwte2, sizeof(float) * V * C),
               "embedding_bwd %s: deterministic (two runs, same bits)", what);
    }
    KT_FREE(d_wte, d_wpe, d_out, d_dout, d_dwte, d_dwte2, d_dwpe, d_tok);
    free(wte); free(wpe); free(out); free(dout); free(dwte0); free(dwpe0); free(dwte);
    free(dwpe); free(rout); free(rdwte); free(rdwpe); free(tok);
}

typedef struct {
    g3cuda_bf16_t *out, *wte, *wpe, *dout;
    float *dwte, *dwpe;
    int32_t *tok;
    int B, T, C, V;
} emb_bench_t;

static int run_fwd(void *p)
{
    emb_bench_t *a = p;
    return g3cuda_embedding_fwd(kt_ctx, a->out, a->tok, a->wte, a->wpe, a->B, a->T, a->C, 0, a->V);
}

static int run_bwd(void *p)
{
    emb_bench_t *a = p;
    return g3cuda_embedding_bwd(kt_ctx, a->dwte, a->dwpe, a->dout, a->tok, a->B, a->T, a->C, 0,
                                a->V);
}

static void bench(void)
{
    emb_bench_t a = { 0 };
    int32_t *tok;
    a.B = 16; a.T = 1024; a.C = 768; a.V = 50304;
    size_t BT = (size_t)a.B * a.T;
    tok = malloc(sizeof(int32_t) * BT);
    ref_randint(tok, BT, 0, 50257, 3, "bench tokens");
    a.tok = kt_dev_i32(tok, BT);
    a.out = kt_dev(2 * BT * a.C);
    a.dout = kt_dev(2 * BT * a.C);
    a.wte = kt_dev(2 * (size_t)a.V * a.C);
    a.wpe = kt_dev(2 * (size_t)a.T * a.C);
    a.dwte = kt_dev(4 * (size_t)a.V * a.C);
    a.dwpe = kt_dev(4 * (size_t)a.T * a.C);
    g3cuda_zero(kt_ctx, a.dout, 2 * BT * a.C);
    g3cuda_zero(kt_ctx, a.wte, 2 * (size_t)a.V * a.C);
    g3cuda_zero(kt_ctx, a.wpe, 2 * (size_t)a.T * a.C);
    /* bytes: forward reads a wte and a wpe row and writes a row per token (bf16) */
    kt_report("embedding_fwd B=16 T=1024 C=768", kt_time_ms(run_fwd, &a, 20), 0.0,
              3.0 * 2.0 * (double)BT * a.C);
    /* backward: dout (bf16) once, each token's dwte row read+written (fp32, upper bound) */
    kt_report("embedding_bwd B=16 T=1024 C=768", kt_time_ms(run_bwd, &a, 20), 0.0,
              (2.0 + 8.0) * (double)BT * a.C);
    KT_FREE(a.tok, a.out, a.dout, a.wte, a.wpe, a.dwte, a.dwpe);
    free(tok);
}

int main(void)
{
    static const emb_case_t cases[] = {
        { 1, 1, 5, 3, 0, 0, 3, 1 },
        { 2, 7, 64, 50, 0, 0, 50, 1 },
        { 3, 33, 100, 17, 10, 0, 40, 0 },        /* shard [10, 27): some tokens outside */
        { 4, 128, 768, 1000, 0, 0, 1000, 1 },
        { 2, 300, 96, 8, 0, 5, 6, 1 },           /* every position holds token 5 */
    };
    kt_start();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        test_embedding(&cases[i]);
    if (kt_bench)
        bench();
    kt_finish();
    return tap_exit();
}

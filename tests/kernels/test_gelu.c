/* g3cuda_gelu_fwd/bwd (tanh approximation) against ref_gelu / ref_gelu_grad in double, on bf16
 * inputs x ~ N(0, 2^2).  Tolerance: the kernels compute in fp32 (as x sigmoid(2u), no
 * cancellation) and round once to bf16, so |err| <= one bf16 ulp: rtol 2^-7, plus 1e-4
 * max|want| for the fp32 error of values near zero.  Sizes: 1, 7 (scalar path), 1000 and 2^20
 * (16-byte path), 12345; and in place. */
#include "kernels/kt.h"

static void test_gelu(size_t n, int in_place)
{
    float *x = kt_fvec(n), *dout = kt_fvec(n), *y = kt_fvec(n), *dx = kt_fvec(n);
    double *ry = kt_dvec(n), *rdx = kt_dvec(n);
    char what[96];

    ref_randn_bf(x, NULL, n, 2.0f, 4, "x");
    ref_randn_bf(dout, NULL, n, 1.0f, 4, "dout");
    for (size_t i = 0; i < n; i++) {
        ry[i] = ref_gelu(x[i]);
        rdx[i] = ref_gelu_grad(x[i]) * dout[i];
    }
    g3cuda_bf16_t *d_x = kt_dev_bf(x, n), *d_dout = kt_dev_bf(dout, n);
    g3cuda_bf16_t *d_y = in_place ? kt_dev_bf(x, n) : kt_dev(2 * n);
    g3cuda_bf16_t *d_dx = in_place ? d_dout : kt_dev(2 * n);
    snprintf(what, sizeof(what), "n=%zu%s", n, in_place ? " in place" : "");
    g3cuda_gelu_fwd(kt_ctx, d_y, in_place ? d_y : d_x, n);
    g3cuda_gelu_bwd(kt_ctx, d_dx, d_x, d_dout, n);
    if (kt_sync(what) == 0) {
        char w2[128];
        kt_get_bf(y, d_y, n);
        kt_get_bf(dx, d_dx, n);
        snprintf(w2, sizeof(w2), "gelu_fwd %s", what);
        kt_check(w2, y, ry, n, 1.0 / 128, 1e-4);
        snprintf(w2, sizeof(w2), "gelu_bwd %s", what);
        kt_check(w2, dx, rdx, n, 1.0 / 128, 1e-4);
    }
    KT_FREE(d_x, d_dout, d_y);
    if (!in_place)
        g3cuda_free(kt_ctx, d_dx);
    free(x); free(dout); free(y); free(dx); free(ry); free(rdx);
}

typedef struct { g3cuda_bf16_t *x, *y, *d; size_t n; } gelu_bench_t;

static int run_fwd(void *p)
{
    gelu_bench_t *a = p;
    return g3cuda_gelu_fwd(kt_ctx, a->y, a->x, a->n);
}

static int run_bwd(void *p)
{
    gelu_bench_t *a = p;
    return g3cuda_gelu_bwd(kt_ctx, a->d, a->x, a->d, a->n);
}

int main(void)
{
    kt_start();
    test_gelu(1, 0);
    test_gelu(7, 0);
    test_gelu(1000, 0);
    test_gelu(12345, 0);
    test_gelu((size_t)1 << 20, 0);
    test_gelu(1000, 1);
    test_gelu(12345, 1);
    if (kt_bench) {
        size_t n = (size_t)16 * 1024 * 3072;       /* B*T x 4C of GPT-2 124M, B=16 */
        gelu_bench_t a = { kt_dev(2 * n), kt_dev(2 * n), kt_dev(2 * n), n };
        g3cuda_zero(kt_ctx, a.x, 2 * n);
        g3cuda_zero(kt_ctx, a.d, 2 * n);
        kt_report("gelu_fwd 16x1024x3072", kt_time_ms(run_fwd, &a, 20), 0.0, 4.0 * n);
        kt_report("gelu_bwd 16x1024x3072", kt_time_ms(run_bwd, &a, 20), 0.0, 6.0 * n);
        KT_FREE(a.x, a.y, a.d);
    }
    kt_finish();
    return tap_exit();
}

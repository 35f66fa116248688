/* The elementwise kernels:
 *   g3cuda_cast against ref_f2bf / ref_bf2f: fp32 -> bf16 must give the same bits as the
 *     reference's round-to-nearest-even (tolerance 0: the rounding is exact arithmetic),
 *     including ties, subnormals, infinities and -0; NaN must stay NaN; bf16 -> fp32 is exact;
 *   g3cuda_residual_fwd: bf16(fp32 a + fp32 b), the same arithmetic as the reference: exact;
 *   g3cuda_scale: fp32 x*s is one IEEE multiplication: exact; bf16: bf16(fp32 x*s): exact.
 * Sizes 1, 7, 1000 and 2^20 + 3 (grid-stride tails, scalar and 16-byte paths). */
#include "kernels/kt.h"

static const float specials[] = {
    0.0f, -0.0f, 1.0f, -1.0f, 1.00390625f /* 1 + 2^-8: tie, to even (1) */,
    1.01171875f /* 1 + 3*2^-8: tie, to even (1 + 2^-6) */, 3.4e38f, -3.4e38f, 1e-40f, -1e-40f,
    1.17549435e-38f, INFINITY, -INFINITY, 65504.0f, 3.14159265f, -2.71828183f, 1e-30f
};

static void test_cast(size_t n)
{
    float *x = kt_fvec(n), *back = kt_fvec(n);
    uint16_t *bits = malloc(sizeof(uint16_t) * n), *want = malloc(sizeof(uint16_t) * n);
    size_t nspecial = sizeof(specials) / sizeof(specials[0]);
    size_t bad = 0, first_bad = 0;

    ref_randn(x, n, 3.0f, 1, "cast");
    for (size_t i = 0; i < n && i < nspecial; i++)
        x[i] = specials[i];
    if (n > nspecial)
        x[nspecial] = NAN;
    float *dx = kt_dev_f32(x, n);
    g3cuda_bf16_t *dh = kt_dev(sizeof(uint16_t) * n);
    float *dback = kt_dev(sizeof(float) * n);
    float *dcopy = kt_dev(sizeof(float) * n);

    g3cuda_cast(kt_ctx, dh, G3CUDA_BF16, dx, G3CUDA_F32, n);
    g3cuda_cast(kt_ctx, dback, G3CUDA_F32, dh, G3CUDA_BF16, n);
    g3cuda_cast(kt_ctx, dcopy, G3CUDA_F32, dx, G3CUDA_F32, n);
    if (kt_sync("cast") == 0) {
        kt_fetch(bits, dh, sizeof(uint16_t) * n);
        for (size_t i = 0; i < n; i++) {
            want[i] = ref_f2bf(x[i]);
            int same = isnan(x[i]) ? isnan(ref_bf2f(bits[i])) : bits[i] == want[i];
            if (!same && bad++ == 0)
                first_bad = i;
        }
        tap_ok(
            bad == 0,
            "fp32 -> bf16, n=%zu: %zu of %zu differ from round-to-nearest-even (first [%zu]: %g -> 0x%04x, want 0x%04x)",
            n, bad, n, first_bad, (double)x[first_bad], bits[first_bad], want[first_bad]);
        kt_get_f32(back, dback, n);
        bad = 0;
        for (size_t i = 0; i < n; i++) {
            float w = ref_bf2f(bits[i]);
            if (!(isnan(w) ? isnan(back[i]) : memcmp(&w, &back[i], 4) == 0))
                bad++;
        }
        tap_ok(bad == 0, "bf16 -> fp32, n=%zu: exact (%zu differ)", n, bad);
        tap_ok(kt_same_bytes(dcopy, dx, sizeof(float) * n), "fp32 -> fp32 copy, n=%zu", n);
    }
    KT_FREE(dx, dh, dback, dcopy);
    free(x);
    free(back);
    free(bits);
    free(want);
}

/* Exact checks: the device does the reference's fp32 arithmetic. */
static void test_residual_scale(size_t n)
{
    float *a = kt_fvec(n), *b = kt_fvec(n), *x = kt_fvec(n), *got = kt_fvec(n);
    double *want = kt_dvec(n);
    char what[96];

    ref_randn_bf(a, NULL, n, 1.0f, 13, "res a");
    ref_randn_bf(b, NULL, n, 1.0f, 13, "res b");
    ref_randn(x, n, 1.0f, 13, "scale x");
    g3cuda_bf16_t *d_a = kt_dev_bf(a, n), *d_b = kt_dev_bf(b, n), *d_o = kt_dev(2 * n);
    g3cuda_bf16_t *d_xb = kt_dev_bf(a, n);
    float *d_x = kt_dev_f32(x, n);
    g3cuda_residual_fwd(kt_ctx, d_o, d_a, d_b, n);
    g3cuda_residual_fwd(kt_ctx, d_a, d_a, d_b, n);            /* in place */
    g3cuda_scale(kt_ctx, d_x, G3CUDA_F32, n, 0.3f);
    g3cuda_scale(kt_ctx, d_xb, G3CUDA_BF16, n, -1.7f);
    snprintf(what, sizeof(what), "n=%zu", n);
    if (kt_sync(what) == 0) {
        char w2[128];
        for (size_t i = 0; i < n; i++)
            want[i] = ref_round_bf(a[i] + b[i]);
        kt_get_bf(got, d_o, n);
        snprintf(w2, sizeof(w2), "residual_fwd %s", what);
        kt_check(w2, got, want, n, 0.0, 0.0);
        kt_get_bf(got, d_a, n);
        snprintf(w2, sizeof(w2), "residual_fwd in place %s", what);
        kt_check(w2, got, want, n, 0.0, 0.0);
        for (size_t i = 0; i < n; i++)
            want[i] = x[i] * 0.3f;
        kt_get_f32(got, d_x, n);
        snprintf(w2, sizeof(w2), "scale fp32 %s", what);
        kt_check(w2, got, want, n, 0.0, 0.0);
        for (size_t i = 0; i < n; i++)
            want[i] = ref_round_bf(a[i] * -1.7f);
        kt_get_bf(got, d_xb, n);
        snprintf(w2, sizeof(w2), "scale bf16 %s", what);
        kt_check(w2, got, want, n, 0.0, 0.0);
    }
    KT_FREE(d_a, d_b, d_o, d_xb, d_x);
    free(a); free(b); free(x); free(got); free(want);
}

typedef struct { void *dst; const void *src; size_t n; } cast_args_t;

static int run_cast(void *p)
{
    cast_args_t *a = p;
    return g3cuda_cast(kt_ctx, a->dst, G3CUDA_BF16, a->src, G3CUDA_F32, a->n);
}

int main(void)
{
    kt_start();
    test_cast(1);
    test_cast(7);
    test_cast(1000);
    test_cast(((size_t)1 << 20) + 3);
    test_residual_scale(1);
    test_residual_scale(7);
    test_residual_scale(1000);
    test_residual_scale(((size_t)1 << 20) + 3);
    if (kt_bench) {
        size_t n = (size_t)64 << 20;
        cast_args_t a = { kt_dev(2 * n), kt_dev(4 * n), n };
        kt_report("cast fp32->bf16 64M", kt_time_ms(run_cast, &a, 20), 0.0, 6.0 * (double)n);
        KT_FREE(a.dst, (void *)a.src);
    }
    kt_finish();
    return tap_exit();
}

/* g3cuda_adamw, g3cuda_sumsq and g3cuda_clip_scale against plain C.
 * Tolerances:
 *   AdamW master weights, m, v: the reference does the same fp32 operations in the same order
 *     (ref_adamw mirrors src/backend/cpu_ops.c); nvcc may fuse a*b+c into one FMA, which moves
 *     results by about one fp32 ulp: rtol 1e-6 plus 1e-6 max|want|;
 *   the bf16 parameters must be exactly round-to-nearest-even of the device's master weights;
 *   sumsq: exact squares summed in double (the reference with Kahan summation), only the
 *     order differs: rtol 1e-12; and two runs give the same bits;
 *   clip_scale: the formula in double, rounded to fp32 once: rtol 1e-6.
 * Sizes 1, 7 and 100003 (grid-stride tails), two consecutive steps, with and without a
 * device gradient scale. */
#include "kernels/kt.h"

static void test_adamw(size_t n, int use_scale)
{
    float *p = kt_fvec(n), *g = kt_fvec(n), *m = kt_fvec(n), *v = kt_fvec(n);
    float *gp = kt_fvec(n), *gm = kt_fvec(n), *gv = kt_fvec(n);
    uint16_t *gbits = malloc(sizeof(uint16_t) * n);
    double *w = kt_dvec(n);
    float scale = use_scale ? 0.37f : 1.0f;
    char what[96], w2[160];

    ref_randn(p, n, 1.0f, 11, "p");
    ref_randn(g, n, 1e-2f, 11, "g");
    ref_randn(m, n, 1e-3f, 11, "m");
    ref_randn(v, n, 1e-4f, 11, "v");
    for (size_t i = 0; i < n; i++)
        v[i] = fabsf(v[i]);
    float *d_p = kt_dev_f32(p, n), *d_g = kt_dev_f32(g, n), *d_m = kt_dev_f32(m, n),
          *d_v = kt_dev_f32(v, n), *d_scale = kt_dev_f32(&scale, 1);
    g3cuda_bf16_t *d_bf = kt_dev(2 * n);
    for (int step = 1; step <= 2; step++) {
        ref_adamw(p, g, m, v, n, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, step, scale);
        g3cuda_adamw(kt_ctx, d_p, d_bf, d_g, d_m, d_v, n, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, step,
                     use_scale ? d_scale : NULL);
    }
    snprintf(what, sizeof(what), "adamw n=%zu, 2 steps%s", n, use_scale ? ", grad scale" : "");
    if (kt_sync(what) == 0) {
        size_t bad = 0;
        kt_get_f32(gp, d_p, n);
        kt_get_f32(gm, d_m, n);
        kt_get_f32(gv, d_v, n);
        kt_fetch(gbits, d_bf, 2 * n);
        for (size_t i = 0; i < n; i++)
            w[i] = p[i];
        snprintf(w2, sizeof(w2), "%s: master weights", what);
        kt_check(w2, gp, w, n, 1e-6, 1e-6);
        for (size_t i = 0; i < n; i++)
            w[i] = m[i];
        snprintf(w2, sizeof(w2), "%s: m", what);
        kt_check(w2, gm, w, n, 1e-6, 1e-6);
        for (size_t i = 0; i < n; i++)
            w[i] = v[i];
        snprintf(w2, sizeof(w2), "%s: v", what);
        kt_check(w2, gv, w, n, 1e-6, 1e-6);
        for (size_t i = 0; i < n; i++)
            bad += gbits[i] != ref_f2bf(gp[i]);
        tap_ok(bad == 0, "%s: bf16 params = RNE(master) (%zu differ)", what, bad);
    }
    KT_FREE(d_p, d_g, d_m, d_v, d_scale, d_bf);
    free(p); free(g); free(m); free(v); free(gp); free(gm); free(gv); free(gbits); free(w);
}

static void test_sumsq(size_t n, g3cuda_dtype_t type)
{
    float *x = kt_fvec(n);
    double want = 1.5, got[2] = { 1.5, 1.5 };
    char what[96];

    ref_randn_bf(x, NULL, n, 2.0f, 12, "sumsq x");
    double comp = 0.0;                           /* Kahan: the reference's own error ~1e-16 */
    for (size_t i = 0; i < n; i++) {
        double y = (double)x[i] * x[i] - comp, t = want + y;
        comp = (t - want) - y;
        want = t;
    }
    void *d_x = type == G3CUDA_F32 ? (void *)kt_dev_f32(x, n) : (void *)kt_dev_bf(x, n);
    double *d_acc = kt_dev(2 * sizeof(double));
    kt_put(d_acc, got, sizeof(got));
    g3cuda_sumsq(kt_ctx, d_acc, d_x, type, n);
    g3cuda_sumsq(kt_ctx, d_acc + 1, d_x, type, n);
    snprintf(what, sizeof(what), "sumsq n=%zu %s", n, type == G3CUDA_F32 ? "fp32" : "bf16");
    if (kt_sync(what) == 0) {
        kt_fetch(got, d_acc, sizeof(got));
        tap_close_f(got[0], want, 1e-12, 0.0, what);
        tap_ok(memcmp(&got[0], &got[1], sizeof(double)) == 0, "%s: deterministic", what);
    }
    KT_FREE(d_x, d_acc);
    free(x);
}

static void test_clip(double sumsq, float max_norm)
{
    double *d_ss = kt_dev(sizeof(double));
    float *d_out = kt_dev(2 * sizeof(float)), out[2];
    double norm = sqrt(sumsq), coeff = max_norm / (norm + 1e-6);
    double want = max_norm > 0.0f && isfinite(norm) && coeff < 1.0 ? coeff : 1.0;
    char what[96];

    kt_put(d_ss, &sumsq, sizeof(sumsq));
    g3cuda_clip_scale(kt_ctx, d_out, d_out + 1, d_ss, max_norm);
    snprintf(what, sizeof(what), "clip_scale sumsq=%g max_norm=%g", sumsq, (double)max_norm);
    if (kt_sync(what) == 0) {
        kt_get_f32(out, d_out, 2);
        tap_close_f(out[0], want, 1e-6, 0.0, what);
        if (isfinite(norm))
            tap_close_f(out[1], norm, 1e-6, 0.0, "clip_scale norm");
        else
            tap_ok(isnan(out[1]), "clip_scale reports the NaN norm (%g)", (double)out[1]);
    }
    KT_FREE(d_ss, d_out);
}

typedef struct { float *p, *g, *m, *v; g3cuda_bf16_t *bf; double *acc; size_t n; } opt_bench_t;

static int run_adamw(void *q)
{
    opt_bench_t *a = q;
    return g3cuda_adamw(kt_ctx, a->p, a->bf, a->g, a->m, a->v, a->n, 3e-4f, 0.9f, 0.95f, 1e-8f,
                        0.1f, 10, NULL);
}

static int run_sumsq(void *q)
{
    opt_bench_t *a = q;
    return g3cuda_sumsq(kt_ctx, a->acc, a->g, G3CUDA_F32, a->n);
}

int main(void)
{
    kt_start();
    test_adamw(1, 0);
    test_adamw(7, 1);
    test_adamw(100003, 0);
    test_adamw(100003, 1);
    test_sumsq(1, G3CUDA_F32);
    test_sumsq(1000, G3CUDA_BF16);
    test_sumsq(((size_t)1 << 22) + 5, G3CUDA_F32);
    test_sumsq(((size_t)1 << 22) + 5, G3CUDA_BF16);
    test_clip(25.0, 1.0f);
    test_clip(0.25, 1.0f);
    test_clip(25.0, 0.0f);
    test_clip(NAN, 1.0f);
    if (kt_bench) {
        size_t n = (size_t)124 << 20;      /* about GPT-2 124M's parameters */
        opt_bench_t a = { kt_dev(4 * n), kt_dev(4 * n), kt_dev(4 * n), kt_dev(4 * n),
                          kt_dev(2 * n), kt_dev(sizeof(double)), n };
        g3cuda_zero(kt_ctx, a.p, 4 * n);
        g3cuda_zero(kt_ctx, a.g, 4 * n);
        g3cuda_zero(kt_ctx, a.m, 4 * n);
        g3cuda_zero(kt_ctx, a.v, 4 * n);
        g3cuda_zero(kt_ctx, a.acc, sizeof(double));
        /* reads p g m v, writes p m v and the bf16 copy: 30 bytes per parameter */
        kt_report("adamw 124M", kt_time_ms(run_adamw, &a, 10), 0.0, 30.0 * n);
        kt_report("sumsq fp32 124M", kt_time_ms(run_sumsq, &a, 10), 0.0, 4.0 * n);
        void *dev[] = { a.p, a.g, a.m, a.v, a.bf, a.acc };
        for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
            g3cuda_free(kt_ctx, dev[i]);
    }
    kt_finish();
    return tap_exit();
}

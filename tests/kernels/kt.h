/* What the CUDA kernel tests share (header-only; one test program includes it once):
 *   kt_start()            device check: "1..0 # SKIP no CUDA device: <reason>" and exit 0
 *                         without one; otherwise a context in kt_ctx
 *   kt_dev_X, kt_get_X   device copies of host arrays (bf16 bits, fp32, int32) and back
 *   kt_sync(what)         wait; a pending kernel error becomes a failed TAP line with its text
 *   kt_check(...)         element-wise tolerance check against a double reference
 *   kt_check_dev(...)     the same of a device tensor fetched first, named by a format
 *   kt_time_ms / kt_bench benchmark mode (G3_BENCH=1): CUDA-event timing, TFLOP/s and GB/s
 * A test never fakes a pass: every comparison is against tests/kernels/ref.c. */
#ifndef G3_TESTS_KERNELS_KT_H
#define G3_TESTS_KERNELS_KT_H

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g3cuda.h"
#include "kernels/ref.h"
#include "tap.h"

static g3cuda_ctx_t *kt_ctx;
static int kt_bench;           /* G3_BENCH=1: also print timings */

static inline void kt_bail(const char *fmt, const char *arg)
{
    printf("Bail out! ");
    printf(fmt, arg);
    printf("\n");
    fflush(stdout);
    exit(1);
}

static inline void kt_start(void)
{
    char why[512], line[600];
    const char *b = getenv("G3_BENCH");
    int n = 0;

    if (g3cuda_device_count(&n, why, sizeof(why)) != 0) {
        snprintf(line, sizeof(line), "no CUDA device: %s", why);
        tap_skip_all(line);
    }
    int err = g3cuda_ctx_create(0, 0, &kt_ctx, why, sizeof(why));
    if (err == G3CUDA_ERR_ARG) {             /* a GPU older than the kernels need */
        snprintf(line, sizeof(line), "no usable CUDA device: %s", why);
        tap_skip_all(line);
    }
    if (err != 0)
        kt_bail("cannot create the CUDA context: %s", why);
    kt_bench = b != NULL && strcmp(b, "0") != 0;
    tap_diag("device: %s", g3cuda_ctx_device_name(kt_ctx));
}

static inline void kt_finish(void)
{
    g3cuda_ctx_destroy(kt_ctx);
}

/* ---- device memory ------------------------------------------------------------------------- */

static inline void *kt_dev(size_t bytes)
{
    void *p = NULL;
    if (g3cuda_malloc(kt_ctx, bytes, "a test tensor", &p) != 0)
        kt_bail("%s", g3cuda_ctx_error(kt_ctx));
    return p;
}

/* Free n device tensors (NULL ones included): KT_FREE(a.x, a.dx, ...). */
static inline void kt_free_n(void *const *dev, size_t n)
{
    for (size_t i = 0; i < n; i++)
        g3cuda_free(kt_ctx, dev[i]);
}
#define KT_FREE(...)                          \
    kt_free_n((void *const[]){ __VA_ARGS__ }, \
              sizeof((void *const[]){ __VA_ARGS__ }) / sizeof(void *))

static inline void kt_put(void *dev, const void *host, size_t bytes)
{
    if (g3cuda_upload(kt_ctx, dev, host, bytes) != 0)
        kt_bail("%s", g3cuda_ctx_error(kt_ctx));
}

static inline void kt_fetch(void *host, const void *dev, size_t bytes)
{
    if (g3cuda_download(kt_ctx, host, dev, bytes) != 0)
        kt_bail("%s", g3cuda_ctx_error(kt_ctx));
}

/* x (n,) fp32 holding bf16 values -> a new device bf16 tensor */
static inline g3cuda_bf16_t *kt_dev_bf(const float *x, size_t n)
{
    uint16_t *h = malloc(sizeof(uint16_t) * (n ? n : 1));
    g3cuda_bf16_t *d = kt_dev(sizeof(uint16_t) * (n ? n : 1));
    ref_to_bf(h, x, n);
    kt_put(d, h, sizeof(uint16_t) * n);
    free(h);
    return d;
}

static inline float *kt_dev_f32(const float *x, size_t n)
{
    float *d = kt_dev(sizeof(float) * (n ? n : 1));
    kt_put(d, x, sizeof(float) * n);
    return d;
}

static inline int32_t *kt_dev_i32(const int32_t *x, size_t n)
{
    int32_t *d = kt_dev(sizeof(int32_t) * (n ? n : 1));
    kt_put(d, x, sizeof(int32_t) * n);
    return d;
}

static inline void kt_get_bf(float *dst, const g3cuda_bf16_t *dev, size_t n)
{
    uint16_t *h = malloc(sizeof(uint16_t) * (n ? n : 1));
    kt_fetch(h, dev, sizeof(uint16_t) * n);
    ref_from_bf(dst, h, n);
    free(h);
}

static inline void kt_get_f32(float *dst, const float *dev, size_t n)
{
    kt_fetch(dst, dev, sizeof(float) * n);
}

/* Wait for the stream.  RET: 0, or 1 after a failed TAP line carrying the kernel's error. */
static inline int kt_sync(const char *what)
{
    char why[512];
    if (g3cuda_ctx_sync(kt_ctx, why, sizeof(why)) == 0)
        return 0;
    tap_ok(0, "%s: %s", what, why);
    return 1;
}

/* RET: 1 when the two device buffers hold the same bytes (determinism checks). */
static inline int kt_same_bytes(const void *dev_a, const void *dev_b, size_t bytes)
{
    unsigned char *a = malloc(bytes ? bytes : 1), *b = malloc(bytes ? bytes : 1);
    kt_fetch(a, dev_a, bytes);
    kt_fetch(b, dev_b, bytes);
    int same = memcmp(a, b, bytes) == 0;
    free(a);
    free(b);
    return same;
}

/* ---- comparisons ----------------------------------------------------------------------------- */

/* ok when every |got - want| <= rtol * |want| + atol (and got is finite).  Reports the worst
 * element (largest error over its allowance) and the relative L2 error ||got - want|| /
 * ||want||. */
static inline int kt_check_abs(const char *what, const float *got, const double *want, size_t n,
                               double rtol, double atol)
{
    double num = 0.0, den = 0.0, worst = 0.0;
    size_t wi = 0;
    int ok = 1;

    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        double allow = rtol * fabs(want[i]) + atol;
        double ratio = allow > 0.0 ? d / allow : (d > 0.0 ? INFINITY : 0.0);
        if (!isfinite(got[i]))
            ratio = INFINITY;
        if (!(ratio <= 1.0))
            ok = 0;
        if (!(ratio <= worst)) {
            worst = ratio;
            wi = i;
        }
        num += d * d;
        den += want[i] * want[i];
    }
    tap_ok(
        ok,
        "%s: worst [%zu] got %.6g want %.6g (%.2f of its allowance, rtol %.1e + atol %.1e); rel L2 %.2e",
        what, wi, n ? got[wi] : 0.0, n ? want[wi] : 0.0, worst, rtol, atol,
        den > 0.0 ? sqrt(num / den) : sqrt(num));
    return ok;
}

static inline double kt_maxabs(const double *x, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        if (fabs(x[i]) > m)
            m = fabs(x[i]);
    return m;
}

/* kt_check_abs with atol = atol_rel * max|want|. */
static inline int kt_check(const char *what, const float *got, const double *want, size_t n,
                           double rtol, double atol_rel)
{
    return kt_check_abs(what, got, want, n, rtol, atol_rel * kt_maxabs(want, n));
}

/* How a device tensor stores its values, for kt_check_dev. */
typedef enum { KT_BF16, KT_F32 } kt_dtype_t;

/* Fetch n values of dev (bf16 or fp32, as dt) into got (n,) and kt_check them against want,
 * the TAP line named by the printf format fmt. */
static inline int kt_check_dev(kt_dtype_t dt, float *got, const void *dev, const double *want,
                               size_t n, double rtol, double atol_rel, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
static inline int kt_check_dev(kt_dtype_t dt, float *got, const void *dev, const double *want,
                               size_t n, double rtol, double atol_rel, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    if (dt == KT_BF16)
        kt_get_bf(got, dev, n);
    else
        kt_get_f32(got, dev, n);
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return kt_check(what, got, want, n, rtol, atol_rel);
}

static inline double *kt_dvec(size_t n)
{
    double *d = calloc(n ? n : 1, sizeof(double));
    if (d == NULL)
        kt_bail("%s", "out of host memory");
    return d;
}

static inline float *kt_fvec(size_t n)
{
    float *f = calloc(n ? n : 1, sizeof(float));
    if (f == NULL)
        kt_bail("%s", "out of host memory");
    return f;
}

/* ---- benchmark mode -------------------------------------------------------------------------- */

/* RET: milliseconds per call of fn(arg), averaged over iters after 3 warm-up calls, timed with
 * CUDA events on the context's stream; -1 when fn or the stream failed. */
static inline double kt_time_ms(int (*fn)(void *), void *arg, int iters)
{
    cudaStream_t s = (cudaStream_t)g3cuda_ctx_stream(kt_ctx);
    cudaEvent_t e0, e1;
    float ms = 0.0f;

    for (int i = 0; i < 3; i++)
        if (fn(arg) != 0)
            return -1.0;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0, s);
    for (int i = 0; i < iters; i++)
        if (fn(arg) != 0)
            break;
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (kt_sync("benchmark"))
        return -1.0;
    return (double)ms / iters;
}

/* Print a benchmark line: time, and TFLOP/s and/or GB/s when flops/bytes are given. */
static inline void kt_report(const char *what, double ms, double flops, double bytes)
{
    char f[64] = "", b[64] = "";
    if (ms <= 0.0) {
        tap_diag("bench %s: failed", what);
        return;
    }
    if (flops > 0.0)
        snprintf(f, sizeof(f), ", %.1f TFLOP/s", flops / (ms * 1e-3) / 1e12);
    if (bytes > 0.0)
        snprintf(b, sizeof(b), ", %.0f GB/s", bytes / (ms * 1e-3) / 1e9);
    tap_diag("bench %s: %.4f ms%s%s", what, ms, f, b);
}

#endif

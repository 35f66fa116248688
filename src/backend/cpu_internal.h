/* gpt3d CPU backend internals: thread setup, SIMD clones, a vectorisable expf, and the
 * parallel sgemm every matrix product goes through.  Private to src/backend/cpu*.c.
 *
 * Threading model: ONE thread pool, OpenMP's.  OpenBLAS is told to use one thread, and each
 * large product is split into per-thread slabs that call single-threaded sgemm, so the BLAS
 * pool and the OpenMP pool never fight over the cores.  Every parallel region starts with
 * g3_cpu_ftz(): flush-to-zero and denormals-are-zero, because denormal gradients (the
 * vocabulary-sized ones especially) make x86 arithmetic tens of times slower.
 *
 * Hot loops live in functions marked G3_CPU_CLONES: GCC compiles them for AVX-512F, AVX2
 * and the baseline and picks one at load time, so one binary runs everywhere and still uses
 * the widest vectors the node has.  Loops carry "#pragma omp simd" so they vectorise at -O2. */
#ifndef G3_BACKEND_CPU_INTERNAL_H
#define G3_BACKEND_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* Let the vectoriser if-convert the clamps in the loops below (comparisons cannot trap once
 * the FP exception flags are ignored, which gpt3d never reads). */
#pragma GCC optimize("no-trapping-math")

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define G3_CPU_CLONES \
    __attribute__((target_clones("avx512f", "avx2", "default")))
#define G3_CPU_INLINE static inline __attribute__((always_inline))
#else
#define G3_CPU_CLONES
#define G3_CPU_INLINE static inline
#endif

/* Private state of the CPU backend. */
typedef struct {
    int     nthreads;
    float  *kbuf;          /* (nthreads - 1, M, N) partial products of K-split sgemms */
    size_t  kbuf_floats;
    g3_backend_ops_t ops;  /* the table: the plain ops, plus the fused ones with the
                            * fused_ops option 1                                         */
    long    live;          /* buffers from ->alloc and ->host_alloc not yet freed: close
                            * names a caller that frees after the backend is gone (the CUDA
                            * backend would crash there; the CPU one says so)              */
} g3_cpu_t;

/* Whether an op over `work` elements is worth a parallel region: below ~32K elements (a few
 * microseconds) the fork/join costs more than it saves, and on a busy machine every region
 * may wait for a descheduled thread. */
#define G3_CPU_PAR(work) ((work) >= 32768)

/* The threads a parallel region gets (1 without OpenMP). */
static inline int g3_cpu_max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* Flush-to-zero + denormals-are-zero for the calling thread (MXCSR bits 15 and 6). */
static inline void g3_cpu_ftz(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(_mm_getcsr() | 0x8040u);
#endif
}

/* exp(x) in fp32 that vectorises: Cephes' expf range reduction and degree-6 polynomial, about
 * 1 ulp on [-87, 88].  Inputs are clamped to that range: below it the result is ~1.6e-38
 * instead of a denormal or 0 (harmless where it is used: softmax terms, sigmoids), above it
 * exp(88). */
G3_CPU_INLINE float g3_cpu_expf(float x)
{
    union { float f; int32_t i; } s;
    float t, fn, r, p;

    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    t = x * 1.44269504088896341f;
    fn = (t + 12582912.0f) - 12582912.0f;          /* round to nearest: 1.5 * 2^23 trick */
    r = x - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    fn = fn == fn ? fn : 0.0f;   /* NaN in, NaN out (through p), without an undefined cast */
    s.i = (int32_t)((uint32_t)((int32_t)fn + 127) << 23);
    return p * s.f;
}

/* Op entry points (cpu_ops.c, cpu_matmul.c): the signatures of backend.h; every `void *`
 * tensor is fp32 here (act_dtype F32). */
void g3_cpu_embedding_fwd(g3_backend_t *be, void *out, const int32_t *tokens, const void *wte,
                          const void *wpe, int B, int T, int C, int v0, int V);
void g3_cpu_embedding_bwd(g3_backend_t *be, float *dwte, float *dwpe, const void *dout,
                          const int32_t *tokens, int B, int T, int C, int v0, int V);
void g3_cpu_layernorm_fwd(g3_backend_t *be, void *out, float *mean, float *rstd,
                          const void *inp, const void *w, const void *b, int N, int C,
                          float eps);
void g3_cpu_layernorm_bwd(g3_backend_t *be, void *dinp, float *dw, float *db,
                          const void *dout, const void *inp, const void *w,
                          const float *mean, const float *rstd, int N, int C);
void g3_cpu_matmul_fwd(g3_backend_t *be, void *state, void *out, const void *inp,
                       const void *w, const void *bias, int N, int IC, int OC);
void g3_cpu_matmul_bwd(g3_backend_t *be, void *state, void *dinp, float *dw, float *dbias,
                       const void *dout, const void *inp, const void *w,
                       int N, int IC, int OC);
void g3_cpu_attention_fwd(g3_backend_t *be, void *out, void *att, const void *qkv,
                          int B, int T, int NH, int HS);
void g3_cpu_attention_bwd(g3_backend_t *be, void *dqkv, void *scratch, const void *dout,
                          const void *out, const void *qkv, const void *att, int B, int T,
                          int NH, int HS);
void g3_cpu_gelu_fwd(g3_backend_t *be, void *out, const void *inp, size_t n);
void g3_cpu_gelu_bwd(g3_backend_t *be, void *dinp, const void *inp, const void *dout,
                     size_t n);
void g3_cpu_residual_fwd(g3_backend_t *be, void *out, const void *a, const void *b, size_t n);
void g3_cpu_scale(g3_backend_t *be, float *x, size_t n, float s);
void g3_cpu_cast(g3_backend_t *be, void *dst, g3_be_dtype_t dst_t, const void *src,
                 g3_be_dtype_t src_t, size_t n);
void g3_cpu_xent_fwd(g3_backend_t *be, float *losses, float *lse, const void *logits,
                     const int32_t *targets, int N, int V);
void g3_cpu_xent_bwd(g3_backend_t *be, void *dlogits, const void *logits, const float *lse,
                     const int32_t *targets, float dloss, int N, int V);
void g3_cpu_adamw(g3_backend_t *be, float *p, const float *g, float *m, float *v, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd, int64_t step);
void g3_cpu_sumsq(g3_backend_t *be, const float *x, size_t n, double *host_out);
/* The optional fused ops of backend.h (cpu_ops.c; in the table only with fused_ops 1). */
void g3_cpu_residual_layernorm_fwd(g3_backend_t *be, void *resid, void *out, float *mean,
                                   float *rstd, const void *a, const void *b, const void *w,
                                   const void *bias, int N, int C, float eps);
void g3_cpu_matmul_gelu_fwd(g3_backend_t *be, void *state, void *out, void *pre,
                            const void *inp, const void *w, const void *bias, int N, int IC,
                            int OC);
void g3_cpu_matmul_dgelu_bwd(g3_backend_t *be, void *state, void *dpre, float *dw,
                             float *dbias, const void *dout, const void *inp, const void *pre,
                             const void *w, int N, int IC, int OC);
void g3_cpu_sumsq_acc(g3_backend_t *be, double *acc, const float *x, size_t n);
void g3_cpu_clip_scale(g3_backend_t *be, float *scale, const double *sumsq, double max_norm);
void g3_cpu_adamw_scaled(g3_backend_t *be, float *p, const float *g, float *m, float *v,
                         size_t n, float lr, float beta1, float beta2, float eps, float wd,
                         int64_t step, const float *scale);

#endif

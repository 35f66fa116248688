/* gpt3d CUDA kernels: what the .cu files share and C callers never see — the context's
 * layout, the sticky-error helpers, scratch memory, bf16 conversions and warp/block
 * reductions.  Shapes as in g3cuda.h. */
#ifndef G3_KERNELS_G3CUDA_INTERNAL_CUH
#define G3_KERNELS_G3CUDA_INTERNAL_CUH

#include "config.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#ifdef HAVE_CUBLAS
#include <cublasLt.h>
#endif

#include "g3cuda.h"

typedef __nv_bfloat16 bf16;

/* One cached cuBLASLt plan: the descriptors and the algorithm the heuristic chose for a
 * shape (see gemm.cu for the key). */
#define G3CUDA_GEMM_CACHE 64
#define G3CUDA_GEMM_KEY   18
typedef struct g3cuda_gemm_plan {
    int      used;
    int      none;                   /* 1: cuBLASLt offers no algorithm for this key      */
    int      key[G3CUDA_GEMM_KEY];   /* shape, transposes, lds, types, epilogue, alignments */
#ifdef HAVE_CUBLAS
    cublasLtMatmulDesc_t   op;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t   algo;
#endif
} g3cuda_gemm_plan_t;

struct g3cuda_ctx {
    int          device;
    char         name[320];         /* "NVIDIA H100 ... (sm_90, 132 SMs)"                */
    int          sm_count;
    int          cc_major, cc_minor;
    size_t       smem_optin;        /* largest dynamic shared memory a block may opt into */
    cudaStream_t stream;
#ifdef HAVE_CUBLAS
    cublasLtHandle_t lt;
#endif
    void        *workspace;         /* cuBLASLt workspace                                 */
    size_t       workspace_bytes;
    void        *scratch;           /* kernels' temporary space, grown on demand          */
    size_t       scratch_bytes;
    int          err;               /* first g3cuda_err_t since the last sync, 0 if none   */
    char         err_msg[512];
    g3cuda_gemm_plan_t gemm_plans[G3CUDA_GEMM_CACHE];
    int          gemm_next;         /* round-robin victim when the cache is full           */
    int          gemm_autotune;     /* time the heuristic's candidates per shape (gemm.cu) */
    int          ln_bwd_block;      /* LayerNorm backward on the block kernel at every width */
    void       (*log)(const char *msg);   /* notes for the caller's log, or NULL           */
};

/* Record err (the first one wins) with a printf-style message; RET: err. */
int g3cuda_fail(g3cuda_ctx_t *ctx, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* After a launch: record cudaGetLastError() naming op.  RET: 0 or G3CUDA_ERR_CUDA. */
int g3cuda_check_launch(g3cuda_ctx_t *ctx, const char *op);
/* RET: device scratch of at least bytes (valid until the next call: one op's temporary
 * space, in stream order), or NULL with the error recorded. */
void *g3cuda_scratch(g3cuda_ctx_t *ctx, size_t bytes, const char *op);
/* Allow a kernel more than 48 KiB of dynamic shared memory.  RET: 0 or an error recorded. */
int g3cuda_smem_optin(g3cuda_ctx_t *ctx, const void *kernel, size_t bytes, const char *op);

/* The checks every entry point starts with. */
#define G3CUDA_PENDING(ctx) ((ctx)->err != 0)

static inline int g3cuda_aligned(const void *p, size_t a)
{
    return ((uintptr_t)p % a) == 0;
}

static inline unsigned g3cuda_blocks(size_t n, unsigned per_block, unsigned cap)
{
    size_t b = (n + per_block - 1) / per_block;
    return (unsigned)(b < cap ? (b > 0 ? b : 1) : cap);
}

/* The checks of an entry point over n elements, in order: an error already pending (*rc: it),
 * nothing to do (n == 0, *rc: 0), a NULL tensor (any_null: *rc: G3CUDA_ERR_ARG, recorded as
 * "op: NULL tensor").  RET: 1 when the entry point goes on, 0 when it returns *rc at once. */
static inline int g3cuda_ew_ready(g3cuda_ctx_t *ctx, const char *op, size_t n, int any_null,
                                  int *rc)
{
    if (G3CUDA_PENDING(ctx)) {
        *rc = ctx->err;
        return 0;
    }
    if (n == 0) {
        *rc = 0;
        return 0;
    }
    if (any_null) {
        *rc = g3cuda_fail(ctx, G3CUDA_ERR_ARG, "%s: NULL tensor", op);
        return 0;
    }
    return 1;
}

#ifdef __CUDACC__   /* launches: not for the kernels' CPU emulation (tests/kernels/emu) */
/* An elementwise kernel out (n) = f(a (n), b (n)) over bf16, VEC elements a step. */
typedef void (*g3cuda_ew2_kernel_t)(bf16 *out, const bf16 *a, const bf16 *b, size_t n);

/* Runs op's kernel over n elements after g3cuda_ew_ready's checks: k8 (its VEC 8: 16-byte
 * vectors) when n % 8 == 0 and out, a, b are 16-byte aligned, else k1.
 * RET: 0 or the error recorded. */
static inline int g3cuda_ew2_launch(g3cuda_ctx_t *ctx, const char *op, g3cuda_ew2_kernel_t k8,
                                    g3cuda_ew2_kernel_t k1, bf16 *out, const bf16 *a,
                                    const bf16 *b, size_t n)
{
    bool vec = n % 8 == 0 && g3cuda_aligned(out, 16) && g3cuda_aligned(a, 16) &&
               g3cuda_aligned(b, 16);
    unsigned blocks = g3cuda_blocks(vec ? n / 8 : n, 256, (unsigned)ctx->sm_count * 16);
    g3cuda_ew2_kernel_t k = vec ? k8 : k1;
    int rc;

    if (!g3cuda_ew_ready(ctx, op, n, out == NULL || a == NULL || b == NULL, &rc))
        return rc;
    k<<<blocks, 256, 0, ctx->stream>>>(out, a, b, n);
    return g3cuda_check_launch(ctx, op);
}
#endif

/* ---- device helpers ----------------------------------------------------------------------- */

__device__ __forceinline__ float g3_bf2f(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ bf16 g3_f2bf(float x) { return __float2bfloat16_rn(x); }

__device__ __forceinline__ float g3_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float g3_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ double g3_warp_sum_d(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Sum over the block (blockDim.x a multiple of 32, <= 1024), the same fixed order every run;
 * every thread gets the result.  shm: 32 floats; the block must not be using it. */
__device__ __forceinline__ float g3_block_sum(float v, float *shm)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = g3_warp_sum(v);
    __syncthreads();               /* shm may still be read by a previous call */
    if (lane == 0)
        shm[warp] = v;
    __syncthreads();
    v = lane < nwarps ? shm[lane] : 0.0f;
    return g3_warp_sum(v);
}

__device__ __forceinline__ float g3_block_max(float v, float *shm)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = g3_warp_max(v);
    __syncthreads();
    if (lane == 0)
        shm[warp] = v;
    __syncthreads();
    v = lane < nwarps ? shm[lane] : -INFINITY;
    return g3_warp_max(v);
}

/* GELU, tanh approximation, and its derivative (fp32), written with
 * 0.5 (1 + tanh u) = sigmoid(2u) as the CPU backend does (docs/model.md): the same function
 * without the cancellation of 1 + tanh u where tanh u ~ -1.
 *   gelu(x)  = x s,   s = sigmoid(2u),   u = sqrt(2/pi) (x + 0.044715 x^3)
 *   gelu'(x) = s + x * 2 s (1 - s) * du/dx,   du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2) */
#define G3_GELU_K 0.7978845608028654f   /* sqrt(2/pi) */
__device__ __forceinline__ float g3_gelu(float x)
{
    float u = G3_GELU_K * (x + 0.044715f * x * x * x);
    return x / (1.0f + expf(-2.0f * u));
}

__device__ __forceinline__ float g3_gelu_grad(float x)
{
    float u = G3_GELU_K * (x + 0.044715f * x * x * x);
    float s = 1.0f / (1.0f + expf(-2.0f * u));
    float du = G3_GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
    return s + x * 2.0f * s * (1.0f - s) * du;
}

#endif

/* Sum of squares (the gradient norm's building block), deterministic, in double.
 * Kernel 1: G blocks grid-stride over x, each thread accumulating x^2 in double; the block's
 * sum goes to partial[blockIdx] (fixed-order warp and block reductions).  Kernel 2: one warp
 * adds the G partials in a fixed order and adds the total to *acc.
 * acc (1,) fp64  x (n,) fp32 or bf16 */
#include "g3cuda_internal.cuh"

template <typename T>
__device__ __forceinline__ double g3_sq(T x);
template <>
__device__ __forceinline__ double g3_sq<float>(float x) { return (double)x * x; }
template <>
__device__ __forceinline__ double g3_sq<bf16>(bf16 x) { double d = g3_bf2f(x); return d * d; }

template <typename T>
__global__ void g3_sumsq_kernel(double *partial, const T *x, size_t n)
{
    __shared__ double shm[32];
    double s = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += g3_sq<T>(x[i]);
    s = g3_warp_sum_d(s);
    if ((threadIdx.x & 31) == 0)
        shm[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < (blockDim.x >> 5) ? shm[threadIdx.x] : 0.0;
        s = g3_warp_sum_d(s);
        if (threadIdx.x == 0)
            partial[blockIdx.x] = s;
    }
}

__global__ void g3_sumsq_total_kernel(double *acc, const double *partial, int G)
{
    double s = 0.0;
    for (int i = threadIdx.x; i < G; i += 32)
        s += partial[i];
    s = g3_warp_sum_d(s);
    if (threadIdx.x == 0)
        *acc += s;
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_sumsq(g3cuda_ctx_t *ctx, double *acc, const void *x, g3cuda_dtype_t type,
                            size_t n)
{
    unsigned G = g3cuda_blocks(n, 256, (unsigned)ctx->sm_count * 4);
    double *partial;
    int rc;

    if (!g3cuda_ew_ready(ctx, "sumsq", n, acc == NULL || x == NULL, &rc))
        return rc;
    if ((uintptr_t)acc % sizeof(double) != 0)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG,
                           "sumsq: accumulator %p is not 8-byte aligned (the GPU faults on it)",
                           (void *)acc);
    partial = (double *)g3cuda_scratch(ctx, sizeof(double) * G, "sumsq");
    if (partial == NULL)
        return ctx->err;
    if (type == G3CUDA_F32)
        g3_sumsq_kernel<float><<<G, 256, 0, ctx->stream>>>(partial, (const float *)x, n);
    else if (type == G3CUDA_BF16)
        g3_sumsq_kernel<bf16><<<G, 256, 0, ctx->stream>>>(partial, (const bf16 *)x, n);
    else
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "sumsq: unknown dtype %d", (int)type);
    if (g3cuda_check_launch(ctx, "sumsq"))
        return ctx->err;
    g3_sumsq_total_kernel<<<1, 32, 0, ctx->stream>>>(acc, partial, (int)G);
    return g3cuda_check_launch(ctx, "sumsq (total)");
}

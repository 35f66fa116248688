/* Casts between fp32 and bf16 (fp32 -> bf16 rounds to nearest even, as PyTorch does).
 * Memory bound: grid-stride loops, one element per thread per step. */
#include "g3cuda_internal.cuh"

__global__ void g3_cast_f32_bf16_kernel(bf16 *dst, const float *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = g3_f2bf(src[i]);
}

__global__ void g3_cast_bf16_f32_kernel(float *dst, const bf16 *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = g3_bf2f(src[i]);
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_cast(g3cuda_ctx_t *ctx, void *dst, g3cuda_dtype_t dst_type,
                           const void *src, g3cuda_dtype_t src_type, size_t n)
{
    unsigned blocks = g3cuda_blocks(n, 256, (unsigned)ctx->sm_count * 16);
    cudaError_t e;
    int rc;

    if (!g3cuda_ew_ready(ctx, "cast", n, dst == NULL || src == NULL, &rc))
        return rc;
    if (dst_type == src_type) {
        size_t bytes = n * (dst_type == G3CUDA_F32 ? 4 : 2);
        e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx->stream);
        if (e != cudaSuccess)
            return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "cast: copy of %zu bytes: %s", bytes,
                               cudaGetErrorString(e));
        return 0;
    }
    if (dst_type == G3CUDA_BF16 && src_type == G3CUDA_F32)
        g3_cast_f32_bf16_kernel<<<blocks, 256, 0, ctx->stream>>>((bf16 *)dst, (const float *)src,
                                                                 n);
    else if (dst_type == G3CUDA_F32 && src_type == G3CUDA_BF16)
        g3_cast_bf16_f32_kernel<<<blocks, 256, 0, ctx->stream>>>((float *)dst, (const bf16 *)src,
                                                                 n);
    else
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "cast: unknown dtype pair %d <- %d",
                           (int)dst_type, (int)src_type);
    return g3cuda_check_launch(ctx, "cast");
}

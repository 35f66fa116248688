/* x *= s in place, fp32 or bf16 (fp32 math, one rounding for bf16).  The ops table's scale;
 * the trainer's gradient clipping can instead pass the factor to g3cuda_adamw.
 * x (n,) */
#include "g3cuda_internal.cuh"

template <typename T>
__global__ void g3_scale_kernel(T *x, size_t n, float s);

template <>
__global__ void g3_scale_kernel<float>(float *x, size_t n, float s)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= s;
}

template <>
__global__ void g3_scale_kernel<bf16>(bf16 *x, size_t n, float s)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = g3_f2bf(g3_bf2f(x[i]) * s);
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_scale(g3cuda_ctx_t *ctx, void *x, g3cuda_dtype_t type, size_t n, float s)
{
    unsigned blocks = g3cuda_blocks(n, 256, (unsigned)ctx->sm_count * 16);
    int rc;

    if (!g3cuda_ew_ready(ctx, "scale", n, x == NULL, &rc))
        return rc;
    if (type == G3CUDA_F32)
        g3_scale_kernel<float><<<blocks, 256, 0, ctx->stream>>>((float *)x, n, s);
    else if (type == G3CUDA_BF16)
        g3_scale_kernel<bf16><<<blocks, 256, 0, ctx->stream>>>((bf16 *)x, n, s);
    else
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "scale: unknown dtype %d", (int)type);
    return g3cuda_check_launch(ctx, "scale");
}

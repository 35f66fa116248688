/* GELU forward (tanh approximation, fp32 math, one rounding to bf16).  Memory bound: with
 * n % 8 == 0 and 16-byte aligned tensors each thread moves 8 values at a time.
 * out, inp (n,) bf16, may alias */
#include "g3cuda_internal.cuh"

template <int VEC>
__global__ void g3_gelu_fwd_kernel(bf16 *out, const bf16 *inp, size_t n)
{
    size_t steps = n / VEC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < steps;
         i += (size_t)gridDim.x * blockDim.x) {
        if (VEC == 8) {
            union { uint4 u; bf16 h[8]; } x;
            x.u = ((const uint4 *)inp)[i];
            for (int k = 0; k < 8; k++)
                x.h[k] = g3_f2bf(g3_gelu(g3_bf2f(x.h[k])));
            ((uint4 *)out)[i] = x.u;
        } else {
            out[i] = g3_f2bf(g3_gelu(g3_bf2f(inp[i])));
        }
    }
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_gelu_fwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *out, const g3cuda_bf16_t *inp,
                               size_t n)
{
    bool vec = n % 8 == 0 && g3cuda_aligned(out, 16) && g3cuda_aligned(inp, 16);
    unsigned blocks = g3cuda_blocks(vec ? n / 8 : n, 256, (unsigned)ctx->sm_count * 16);
    int rc;

    if (!g3cuda_ew_ready(ctx, "gelu_fwd", n, out == NULL || inp == NULL, &rc))
        return rc;
    if (vec)
        g3_gelu_fwd_kernel<8><<<blocks, 256, 0, ctx->stream>>>((bf16 *)out, (const bf16 *)inp, n);
    else
        g3_gelu_fwd_kernel<1><<<blocks, 256, 0, ctx->stream>>>((bf16 *)out, (const bf16 *)inp, n);
    return g3cuda_check_launch(ctx, "gelu_fwd");
}

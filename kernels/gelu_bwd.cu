/* GELU backward: dinp = gelu'(inp) * dout (tanh approximation, fp32 math, one rounding).
 * Vectorised like gelu_fwd.cu.  dinp, inp, dout (n,) bf16; dinp may alias dout */
#include "g3cuda_internal.cuh"

template <int VEC>
__global__ void g3_gelu_bwd_kernel(bf16 *dinp, const bf16 *inp, const bf16 *dout, size_t n)
{
    size_t steps = n / VEC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < steps;
         i += (size_t)gridDim.x * blockDim.x) {
        if (VEC == 8) {
            union { uint4 u; bf16 h[8]; } x, d;
            x.u = ((const uint4 *)inp)[i];
            d.u = ((const uint4 *)dout)[i];
            for (int k = 0; k < 8; k++)
                d.h[k] = g3_f2bf(g3_gelu_grad(g3_bf2f(x.h[k])) * g3_bf2f(d.h[k]));
            ((uint4 *)dinp)[i] = d.u;
        } else {
            dinp[i] = g3_f2bf(g3_gelu_grad(g3_bf2f(inp[i])) * g3_bf2f(dout[i]));
        }
    }
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_gelu_bwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *dinp, const g3cuda_bf16_t *inp,
                               const g3cuda_bf16_t *dout, size_t n)
{
    return g3cuda_ew2_launch(ctx, "gelu_bwd", g3_gelu_bwd_kernel<8>, g3_gelu_bwd_kernel<1>,
                             (bf16 *)dinp, (const bf16 *)inp, (const bf16 *)dout, n);
}

/* Residual add: out = bf16(a + b), the sum in fp32 (out may alias a or b).  For the residual
 * adds that no LayerNorm follows (g3cuda_layernorm_fwd fuses the others).  16-byte path when
 * n % 8 == 0 and the tensors are aligned.
 * out, a, b (n,) bf16 */
#include "g3cuda_internal.cuh"

template <int VEC>
__global__ void g3_residual_kernel(bf16 *out, const bf16 *a, const bf16 *b, size_t n)
{
    size_t steps = n / VEC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < steps;
         i += (size_t)gridDim.x * blockDim.x) {
        if (VEC == 8) {
            union { uint4 u; bf16 h[8]; } x, y;
            x.u = ((const uint4 *)a)[i];
            y.u = ((const uint4 *)b)[i];
            for (int k = 0; k < 8; k++)
                x.h[k] = g3_f2bf(g3_bf2f(x.h[k]) + g3_bf2f(y.h[k]));
            ((uint4 *)out)[i] = x.u;
        } else {
            out[i] = g3_f2bf(g3_bf2f(a[i]) + g3_bf2f(b[i]));
        }
    }
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_residual_fwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *out, const g3cuda_bf16_t *a,
                                   const g3cuda_bf16_t *b, size_t n)
{
    return g3cuda_ew2_launch(ctx, "residual_fwd", g3_residual_kernel<8>, g3_residual_kernel<1>,
                             (bf16 *)out, (const bf16 *)a, (const bf16 *)b, n);
}

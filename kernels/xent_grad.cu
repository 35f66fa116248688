/* Cross-entropy, stage 4 on each vocabulary shard: the logits' gradient
 *   dlogits[i,j] = (exp(x_ij - lse_i) - [v0 + j == target_i]) * dloss,
 * 0 in the padding columns [V, ld) and in ignored rows (negative target).  One block per row,
 * in place when dlogits == logits.
 * dlogits, logits (N,ld) bf16  lse (N,) fp32  targets (N,) */
#include "xent_row.cuh"

__global__ void g3_xent_grad_kernel(bf16 *dlogits, const bf16 *logits, int ld, const float *lse,
                                    const int32_t *targets, float dloss, int V, int v0, bool vec)
{
    size_t off = (size_t)blockIdx.x * ld;
    int target = targets[blockIdx.x];
    g3_xent_row_grad(dlogits + off, logits + off, V, ld, vec, lse[blockIdx.x], target - v0,
                     dloss, target < 0);
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_xent_grad(g3cuda_ctx_t *ctx, g3cuda_bf16_t *dlogits,
                                const g3cuda_bf16_t *logits, int ld, const float *lse,
                                const int32_t *targets, float dloss, int N, int V, int v0)
{
    bool vec = ld % 8 == 0 && g3cuda_aligned(logits, 16) && g3cuda_aligned(dlogits, 16);

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (N <= 0 || V <= 0 || ld < V)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "xent_grad: bad shape N=%d V=%d ld=%d", N, V,
                           ld);
    if (dlogits == NULL || logits == NULL || lse == NULL || targets == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "xent_grad: NULL tensor");
    g3_xent_grad_kernel<<<N, 512, 0, ctx->stream>>>((bf16 *)dlogits, (const bf16 *)logits, ld,
                                                   lse, targets, dloss, V, v0, vec);
    return g3cuda_check_launch(ctx, "xent_grad");
}

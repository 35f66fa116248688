/* Softmax cross-entropy fused for one vocabulary shard (no tensor parallelism): one block per
 * row reads the row once for its max and sum, writes lse and the loss, and (dlogits != NULL)
 * reads it again to write the gradient, in place when dlogits == logits.  Same arithmetic as
 * xent_partial + xent_finish + xent_grad with S = 1.
 * losses, lse (N,) fp32  dlogits, logits (N,ld) bf16  targets (N,) */
#include "xent_row.cuh"

__global__ void g3_xent_fused_kernel(float *losses, float *lse, bf16 *dlogits,
                                     const bf16 *logits, int ld, const int32_t *targets,
                                     float dloss, int V, bool vec)
{
    __shared__ float shm[32];
    size_t off = (size_t)blockIdx.x * ld;
    const bf16 *row = logits + off;
    int t = targets[blockIdx.x];
    /* read before any thread may overwrite it (the reductions below synchronise) */
    float tl = t >= 0 && t < V ? g3_bf2f(row[t]) : 0.0f;
    float m, s;

    g3_xent_row_stats(row, V, vec, shm, &m, &s);
    float l = m + logf(s);
    if (threadIdx.x == 0) {
        lse[blockIdx.x] = l;
        losses[blockIdx.x] = t < 0 ? 0.0f : l - tl;
    }
    if (dlogits != NULL)
        g3_xent_row_grad(dlogits + off, row, V, ld, vec, l, t, dloss, t < 0);
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_xent_fused(g3cuda_ctx_t *ctx, float *losses, float *lse,
                                 g3cuda_bf16_t *dlogits, const g3cuda_bf16_t *logits, int ld,
                                 const int32_t *targets, float dloss, int N, int V)
{
    bool vec = ld % 8 == 0 && g3cuda_aligned(logits, 16) &&
               (dlogits == NULL || g3cuda_aligned(dlogits, 16));

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (N <= 0 || V <= 0 || ld < V)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "xent_fused: bad shape N=%d V=%d ld=%d", N, V,
                           ld);
    if (losses == NULL || lse == NULL || logits == NULL || targets == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "xent_fused: NULL tensor");
    g3_xent_fused_kernel<<<N, 512, 0, ctx->stream>>>(losses, lse, (bf16 *)dlogits,
                                                    (const bf16 *)logits, ld, targets, dloss, V,
                                                    vec);
    return g3cuda_check_launch(ctx, "xent_fused");
}

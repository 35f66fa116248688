/* Cross-entropy, stage 1 on each vocabulary shard: per row the max of the shard's logits, the
 * sum of exp(x - max), and the target's logit when this shard holds it (else 0).  One block
 * per row; see g3cuda.h for the stages.
 * stats (N,3) fp32  logits (N,ld) bf16  targets (N,) */
#include "xent_row.cuh"

__global__ void g3_xent_partial_kernel(float *stats, const bf16 *logits, int ld,
                                       const int32_t *targets, int V, int v0, bool vec)
{
    __shared__ float shm[32];
    const bf16 *row = logits + (size_t)blockIdx.x * ld;
    int t = targets[blockIdx.x] - v0;
    float m, s;

    g3_xent_row_stats(row, V, vec, shm, &m, &s);
    if (threadIdx.x == 0) {
        float *o = stats + (size_t)blockIdx.x * 3;
        o[0] = m;
        o[1] = s;
        o[2] = targets[blockIdx.x] >= 0 && t >= 0 && t < V ? g3_bf2f(row[t]) : 0.0f;
    }
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_xent_partial(g3cuda_ctx_t *ctx, float *stats, const g3cuda_bf16_t *logits,
                                   int ld, const int32_t *targets, int N, int V, int v0)
{
    bool vec = ld % 8 == 0 && g3cuda_aligned(logits, 16);

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (N <= 0 || V <= 0 || ld < V)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "xent_partial: bad shape N=%d V=%d ld=%d",
                           N, V, ld);
    if (stats == NULL || logits == NULL || targets == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "xent_partial: NULL tensor");
    g3_xent_partial_kernel<<<N, 512, 0, ctx->stream>>>(stats, (const bf16 *)logits, ld, targets,
                                                      V, v0, vec);
    return g3cuda_check_launch(ctx, "xent_partial");
}

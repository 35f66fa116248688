/* Cross-entropy, stage 3: combine the S shards' (max, sum, target logit) per row into
 *   M = max_s m_s,  lse = M + log sum_s s_s exp(m_s - M),  loss = lse - sum_s t_s
 * (a negative target: loss 0).  One thread per row, shards in order.
 * losses, lse (N,) fp32  stats (S,N,3) fp32  targets (N,) */
#include "g3cuda_internal.cuh"

__global__ void g3_xent_finish_kernel(float *losses, float *lse, const float *stats, int S,
                                      const int32_t *targets, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    float M = -INFINITY, sum = 0.0f, tl = 0.0f;
    for (int s = 0; s < S; s++)
        M = fmaxf(M, stats[((size_t)s * N + i) * 3]);
    for (int s = 0; s < S; s++) {
        const float *st = stats + ((size_t)s * N + i) * 3;
        if (st[0] != -INFINITY)
            sum += st[1] * expf(st[0] - M);
        tl += st[2];
    }
    float l = M + logf(sum);
    lse[i] = l;
    losses[i] = targets[i] < 0 ? 0.0f : l - tl;
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_xent_finish(g3cuda_ctx_t *ctx, float *losses, float *lse,
                                  const float *stats, int S, const int32_t *targets, int N)
{
    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (N <= 0 || S <= 0)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "xent_finish: bad shape N=%d S=%d", N, S);
    if (losses == NULL || lse == NULL || stats == NULL || targets == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "xent_finish: NULL tensor");
    g3_xent_finish_kernel<<<(N + 255) / 256, 256, 0, ctx->stream>>>(losses, lse, stats, S,
                                                                   targets, N);
    return g3cuda_check_launch(ctx, "xent_finish");
}

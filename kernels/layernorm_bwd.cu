/* LayerNorm backward.  With xhat = (x - mean) * rstd and g = dout * w:
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))       (added to dinp, the residual grad)
 *   dw += sum_rows dout * xhat,   db += sum_rows dout.
 * Kernel 1: G blocks walk the rows (block i takes rows i, i+G, ...); per row the block holds
 * its columns in registers, reduces the two means, writes dinp, and keeps its dw/db partial
 * sums in registers; at the end each block writes its partials to scratch (G, 2, C).
 * Kernel 2: one thread per column adds the G partials in block order into dw and db.
 * No atomics, so the result is the same bits every run on the same GPU model (G follows the
 * SM count).
 * dinp, dout, inp (N,C) bf16  dw, db (C,) fp32  w (C,) bf16  mean, rstd (N,) fp32 */
#include "g3cuda_internal.cuh"

template <int K>
__global__ void __launch_bounds__(1024)
g3_layernorm_bwd_kernel(bf16 *dinp, float *partial, const bf16 *dout, const bf16 *inp,
                        const bf16 *w, const float *mean, const float *rstd, int N, int C)
{
    __shared__ float shm[32];
    float wk[K], dwp[K], dbp[K];

#pragma unroll
    for (int k = 0; k < K; k++) {
        int c = threadIdx.x + k * blockDim.x;
        wk[k] = c < C ? g3_bf2f(w[c]) : 0.0f;
        dwp[k] = 0.0f;
        dbp[k] = 0.0f;
    }
    for (int r = blockIdx.x; r < N; r += gridDim.x) {
        size_t row = (size_t)r * C;
        float m = mean[r], rs = rstd[r];
        float xh[K], g[K];
        float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
        for (int k = 0; k < K; k++) {
            int c = threadIdx.x + k * blockDim.x;
            xh[k] = 0.0f;
            g[k] = 0.0f;
            if (c < C) {
                float d = g3_bf2f(dout[row + c]);
                xh[k] = (g3_bf2f(inp[row + c]) - m) * rs;
                g[k] = d * wk[k];
                s1 += g[k];
                s2 += g[k] * xh[k];
                dwp[k] += d * xh[k];
                dbp[k] += d;
            }
        }
        float g_mean = g3_block_sum(s1, shm) / (float)C;
        float gx_mean = g3_block_sum(s2, shm) / (float)C;
#pragma unroll
        for (int k = 0; k < K; k++) {
            int c = threadIdx.x + k * blockDim.x;
            if (c < C) {
                float dx = rs * (g[k] - g_mean - xh[k] * gx_mean);
                dinp[row + c] = g3_f2bf(g3_bf2f(dinp[row + c]) + dx);
            }
        }
    }
    float *pw = partial + (size_t)blockIdx.x * 2 * C, *pb = pw + C;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int c = threadIdx.x + k * blockDim.x;
        if (c < C) {
            pw[c] = dwp[k];
            pb[c] = dbp[k];
        }
    }
}

__global__ void g3_layernorm_bwd_sum_kernel(float *dw, float *db, const float *partial, int G,
                                            int C)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    float sw = 0.0f, sb = 0.0f;
    for (int i = 0; i < G; i++) {
        sw += partial[(size_t)i * 2 * C + c];
        sb += partial[(size_t)i * 2 * C + C + c];
    }
    dw[c] += sw;
    db[c] += sb;
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_layernorm_bwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *dinp, float *dw, float *db,
                                    const g3cuda_bf16_t *dout, const g3cuda_bf16_t *inp,
                                    const g3cuda_bf16_t *w, const float *mean, const float *rstd,
                                    int N, int C)
{
    int K = C <= 4 * 1024 ? 4 : C <= 8 * 1024 ? 8 : 16;
    int threads = ((C + K - 1) / K + 31) / 32 * 32;
    int per_sm = 2048 / threads > 0 ? 2048 / threads : 1;
    int G;
    float *partial;

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (N <= 0 || C <= 0 || C > 16 * 1024)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "layernorm_bwd: bad shape N=%d C=%d (C must be "
                           "in [1, 16384])", N, C);
    if (dinp == NULL || dw == NULL || db == NULL || dout == NULL || inp == NULL || w == NULL ||
        mean == NULL || rstd == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "layernorm_bwd: NULL tensor");
    G = ctx->sm_count * per_sm < N ? ctx->sm_count * per_sm : N;
    partial = (float *)g3cuda_scratch(ctx, sizeof(float) * 2 * (size_t)G * C, "layernorm_bwd");
    if (partial == NULL)
        return ctx->err;
    bf16 *pdi = (bf16 *)dinp;
    const bf16 *pdo = (const bf16 *)dout, *pin = (const bf16 *)inp, *pw = (const bf16 *)w;
    if (K == 4)
        g3_layernorm_bwd_kernel<4><<<G, threads, 0, ctx->stream>>>(pdi, partial, pdo, pin, pw,
                                                                   mean, rstd, N, C);
    else if (K == 8)
        g3_layernorm_bwd_kernel<8><<<G, threads, 0, ctx->stream>>>(pdi, partial, pdo, pin, pw,
                                                                   mean, rstd, N, C);
    else
        g3_layernorm_bwd_kernel<16><<<G, threads, 0, ctx->stream>>>(pdi, partial, pdo, pin, pw,
                                                                    mean, rstd, N, C);
    if (g3cuda_check_launch(ctx, "layernorm_bwd"))
        return ctx->err;
    g3_layernorm_bwd_sum_kernel<<<(C + 255) / 256, 256, 0, ctx->stream>>>(dw, db, partial, G, C);
    return g3cuda_check_launch(ctx, "layernorm_bwd (sum)");
}

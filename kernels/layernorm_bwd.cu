/* LayerNorm backward.  With xhat = (x - mean) * rstd and g = dout * w:
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))       (added to dinp, the residual grad)
 *   dw += sum_rows dout * xhat,   db += sum_rows dout.
 * Kernel 1: G blocks walk the rows (block i takes rows i, i+G, ...); per row the block holds
 * its columns in registers, reduces the two means, writes dinp, and keeps its dw/db partial
 * sums in registers; at the end each block writes its partials to scratch (G, 2, C).
 * Kernel 2: one thread per column adds the G partials in block order into dw and db.
 * No atomics, so the result is the same bits every run on the same GPU model (G follows the
 * SM count).
 * Rows of at most 2048 columns, C a multiple of 8 and 16-byte aligned tensors (every GPT-2 and
 * GPT-3 width up to 2048) take the warp kernel instead of kernel 1: one warp per row, each lane
 * holding CH 16-byte chunks (8 columns each; column (j*32 + lane)*8 for chunk j) of dout, x
 * and w in registers, the two means as warp shuffles (no block barrier per row), dw/db partials
 * in registers; at the end the block's 4 warps add their partials in warp order through shared
 * memory into the block's (2, C) partial row, and kernel 2 adds the G block partials as before.
 * dinp, dout, inp (N,C) bf16  dw, db (C,) fp32  w (C,) bf16  mean, rstd (N,) fp32 */
#include "g3cuda_internal.cuh"

#define G3_LNB_WARPS 4

/* element e of a 16-byte chunk of 8 bf16 */
__device__ __forceinline__ float g3_lnb_el(const uint4 &v, int e)
{
    const bf16 *p = (const bf16 *)&v;
    return g3_bf2f(p[e]);
}

template <int CH>
__global__ void __launch_bounds__(32 * G3_LNB_WARPS)
g3_layernorm_bwd_warp_kernel(bf16 *dinp, float *partial, const bf16 *dout, const bf16 *inp,
                             const bf16 *w, const float *mean, const float *rstd, int N, int C)
{
    extern __shared__ __align__(16) float g3_lnb_smem[];       /* (2, C): dw, db of the block */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const float inv_c = 1.0f / (float)C;
    uint4 wv[CH];
    float dwp[CH][8], dbp[CH][8];

#pragma unroll
    for (int j = 0; j < CH; j++) {
        int c0 = (j * 32 + lane) * 8;
        wv[j] = c0 < C ? *(const uint4 *)(w + c0) : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
        for (int e = 0; e < 8; e++) {
            dwp[j][e] = 0.0f;
            dbp[j][e] = 0.0f;
        }
    }
    for (int r = blockIdx.x * G3_LNB_WARPS + warp; r < N; r += gridDim.x * G3_LNB_WARPS) {
        size_t row = (size_t)r * C;
        float m = mean[r], rs = rstd[r];
        uint4 dv[CH], xv[CH];
        float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
        for (int j = 0; j < CH; j++) {
            int c0 = (j * 32 + lane) * 8;
            dv[j] = make_uint4(0u, 0u, 0u, 0u);
            xv[j] = dv[j];
            if (c0 < C) {
                dv[j] = *(const uint4 *)(dout + row + c0);
                xv[j] = *(const uint4 *)(inp + row + c0);
            }
        }
#pragma unroll
        for (int j = 0; j < CH; j++) {
            if ((j * 32 + lane) * 8 >= C)
                continue;
#pragma unroll
            for (int e = 0; e < 8; e++) {
                float d = g3_lnb_el(dv[j], e), xh = (g3_lnb_el(xv[j], e) - m) * rs;
                float g = d * g3_lnb_el(wv[j], e);
                s1 += g;
                s2 += g * xh;
                dwp[j][e] += d * xh;
                dbp[j][e] += d;
            }
        }
        float g_mean = g3_warp_sum(s1) * inv_c, gx_mean = g3_warp_sum(s2) * inv_c;
#pragma unroll
        for (int j = 0; j < CH; j++) {
            int c0 = (j * 32 + lane) * 8;
            if (c0 >= C)
                continue;
            uint4 iv = *(const uint4 *)(dinp + row + c0);
            bf16 *ip = (bf16 *)&iv;
#pragma unroll
            for (int e = 0; e < 8; e++) {
                float xh = (g3_lnb_el(xv[j], e) - m) * rs;
                float g = g3_lnb_el(dv[j], e) * g3_lnb_el(wv[j], e);
                ip[e] = g3_f2bf(g3_bf2f(ip[e]) + rs * (g - g_mean - xh * gx_mean));
            }
            *(uint4 *)(dinp + row + c0) = iv;
        }
    }
    /* the block's partials: warp 0 stores, warps 1.. add in turn (a fixed order) */
    for (int k = 0; k < G3_LNB_WARPS; k++) {
        if (warp == k) {
#pragma unroll
            for (int j = 0; j < CH; j++) {
                int c0 = (j * 32 + lane) * 8;
                if (c0 >= C)
                    continue;
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    g3_lnb_smem[c0 + e] = (k == 0 ? 0.0f : g3_lnb_smem[c0 + e]) + dwp[j][e];
                    g3_lnb_smem[C + c0 + e] = (k == 0 ? 0.0f : g3_lnb_smem[C + c0 + e]) +
                                              dbp[j][e];
                }
            }
        }
        __syncthreads();
    }
    float *pp = partial + (size_t)blockIdx.x * 2 * C;
    for (int c = threadIdx.x; c < 2 * C; c += blockDim.x)
        pp[c] = g3_lnb_smem[c];
}

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
    int K = C <= 4 * 1024 ? 4 : C <= 8 * 1024 ? 8 : C <= 16 * 1024 ? 16 : 24;
    int threads = ((C + K - 1) / K + 31) / 32 * 32;
    int per_sm = 2048 / threads > 0 ? 2048 / threads : 1;
    int G;
    float *partial;

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (N <= 0 || C <= 0 || C > G3CUDA_LN_MAX_C)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG,
                           "layernorm_bwd: bad shape N=%d C=%d (C must be in [1, %d])", N, C,
                           G3CUDA_LN_MAX_C);
    if (dinp == NULL || dw == NULL || db == NULL || dout == NULL || inp == NULL || w == NULL ||
        mean == NULL || rstd == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "layernorm_bwd: NULL tensor");
    bf16 *pdi = (bf16 *)dinp;
    const bf16 *pdo = (const bf16 *)dout, *pin = (const bf16 *)inp, *pw = (const bf16 *)w;
    if (C <= 2048 && C % 8 == 0 && g3cuda_aligned(dinp, 16) && g3cuda_aligned(dout, 16) &&
        g3cuda_aligned(inp, 16) && g3cuda_aligned(w, 16) && !ctx->ln_bwd_block) {
        int CH = (C + 255) / 256;
        size_t smem = sizeof(float) * 2 * (size_t)C;
        /* as many 4-warp blocks per SM as the registers allow (ptxas for sm_90: 48, 94, 127
         * and 161 registers at CH 1-4, 193-255 at CH 5-8), each warp looping over its rows */
        int per_sm_w = CH <= 2 ? 8 : CH <= 4 ? 4 : 2;
        G = (N + G3_LNB_WARPS - 1) / G3_LNB_WARPS;
        if (G > ctx->sm_count * per_sm_w)
            G = ctx->sm_count * per_sm_w;
        partial = (float *)g3cuda_scratch(ctx, sizeof(float) * 2 * (size_t)G * C,
                                          "layernorm_bwd");
        if (partial == NULL)
            return ctx->err;
#define G3_LNB_CASE(n)                                                                           \
    case n:                                                                                      \
        g3_layernorm_bwd_warp_kernel<n><<<G, 32 * G3_LNB_WARPS, smem, ctx->stream>>>(            \
            pdi, partial, pdo, pin, pw, mean, rstd, N, C);                                       \
        break;
        switch (CH) {
        G3_LNB_CASE(1)
        G3_LNB_CASE(2)
        G3_LNB_CASE(3)
        G3_LNB_CASE(4)
        G3_LNB_CASE(5)
        G3_LNB_CASE(6)
        G3_LNB_CASE(7)
        default:
            g3_layernorm_bwd_warp_kernel<8><<<G, 32 * G3_LNB_WARPS, smem, ctx->stream>>>(
                pdi, partial, pdo, pin, pw, mean, rstd, N, C);
        }
#undef G3_LNB_CASE
        if (g3cuda_check_launch(ctx, "layernorm_bwd (warp rows)"))
            return ctx->err;
        g3_layernorm_bwd_sum_kernel<<<(C + 255) / 256, 256, 0, ctx->stream>>>(dw, db, partial, G,
                                                                              C);
        return g3cuda_check_launch(ctx, "layernorm_bwd (sum)");
    }
    G = ctx->sm_count * per_sm < N ? ctx->sm_count * per_sm : N;
    partial = (float *)g3cuda_scratch(ctx, sizeof(float) * 2 * (size_t)G * C, "layernorm_bwd");
    if (partial == NULL)
        return ctx->err;
    if (K == 4)
        g3_layernorm_bwd_kernel<4><<<G, threads, 0, ctx->stream>>>(pdi, partial, pdo, pin, pw,
                                                                   mean, rstd, N, C);
    else if (K == 8)
        g3_layernorm_bwd_kernel<8><<<G, threads, 0, ctx->stream>>>(pdi, partial, pdo, pin, pw,
                                                                   mean, rstd, N, C);
    else if (K == 16)
        g3_layernorm_bwd_kernel<16><<<G, threads, 0, ctx->stream>>>(pdi, partial, pdo, pin, pw,
                                                                    mean, rstd, N, C);
    else
        g3_layernorm_bwd_kernel<24><<<G, threads, 0, ctx->stream>>>(pdi, partial, pdo, pin, pw,
                                                                    mean, rstd, N, C);
    if (g3cuda_check_launch(ctx, "layernorm_bwd"))
        return ctx->err;
    g3_layernorm_bwd_sum_kernel<<<(C + 255) / 256, 256, 0, ctx->stream>>>(dw, db, partial, G, C);
    return g3cuda_check_launch(ctx, "layernorm_bwd (sum)");
}

/* Bias gradient: dbias += sum over rows of dout, fp32, deterministic.
 * Kernel 1: grid (ceil(OC/32), R); block (32, 8) sums rows of chunk y for 32 columns (each of
 * the 8 thread rows takes every 8th row, then thread row 0 adds the 8 sums in order) and
 * writes partial[y, c] (with OC % 8 == 0 the 16-byte-load variant, 256 columns a block).
 * Kernel 2 adds the R partials of each column in order.
 * dbias (OC,) fp32  dout (N,OC) bf16 */
#include "g3cuda_internal.cuh"

__global__ void g3_bias_bwd_kernel(float *partial, const bf16 *dout, int N, int OC, int rows)
{
    __shared__ float shm[8][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    int r0 = blockIdx.y * rows, r1 = min(N, r0 + rows);
    float s = 0.0f;

    if (c < OC)
        for (int r = r0 + threadIdx.y; r < r1; r += 8)
            s += g3_bf2f(dout[(size_t)r * OC + c]);
    shm[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < OC) {
        float t = 0.0f;
        for (int i = 0; i < 8; i++)
            t += shm[i][threadIdx.x];
        partial[(size_t)blockIdx.y * OC + c] = t;
    }
}

/* The same with 16-byte loads (OC % 8 == 0, dout 16-byte aligned): block (32, 8) covers 256
 * columns, each thread 8 of them (columns blockIdx.x*256 + threadIdx.x*8 ..+8); the 8 thread
 * rows' sums are added in order as above. */
__global__ void g3_bias_bwd_vec_kernel(float *partial, const bf16 *dout, int N, int OC, int rows)
{
    __shared__ float shm[8][32 * 8 + 4];
    int c0 = blockIdx.x * 256 + threadIdx.x * 8;
    int r0 = blockIdx.y * rows, r1 = min(N, r0 + rows);
    float s[8];

#pragma unroll
    for (int e = 0; e < 8; e++)
        s[e] = 0.0f;
    if (c0 < OC)
        for (int r = r0 + threadIdx.y; r < r1; r += 8) {
            uint4 v = *(const uint4 *)(dout + (size_t)r * OC + c0);
            const bf16 *p = (const bf16 *)&v;
#pragma unroll
            for (int e = 0; e < 8; e++)
                s[e] += g3_bf2f(p[e]);
        }
#pragma unroll
    for (int e = 0; e < 8; e++)
        shm[threadIdx.y][threadIdx.x * 8 + e] = s[e];
    __syncthreads();
    /* thread (x, y) finishes column x + 32 y of the block's 256 */
    int j = threadIdx.x + 32 * threadIdx.y, c = blockIdx.x * 256 + j;
    if (c < OC) {
        float t = 0.0f;
        for (int i = 0; i < 8; i++)
            t += shm[i][j];
        partial[(size_t)blockIdx.y * OC + c] = t;
    }
}

__global__ void g3_bias_bwd_sum_kernel(float *dbias, const float *partial, int R, int OC)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= OC)
        return;
    float s = 0.0f;
    for (int i = 0; i < R; i++)
        s += partial[(size_t)i * OC + c];
    dbias[c] += s;
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_bias_bwd(g3cuda_ctx_t *ctx, float *dbias, const g3cuda_bf16_t *dout, int N,
                               int OC)
{
    int vec = OC % 8 == 0 && g3cuda_aligned(dout, 16);
    int gx = vec ? (OC + 255) / 256 : (OC + 31) / 32;
    int R, rows;
    float *partial;

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (N <= 0 || OC <= 0)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "bias_bwd: bad shape N=%d OC=%d", N, OC);
    if (dbias == NULL || dout == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "bias_bwd: NULL tensor");
    /* about 8 blocks per SM in all, each at least 64 rows */
    R = ctx->sm_count * 8 / gx;
    if (R > (N + 63) / 64)
        R = (N + 63) / 64;
    if (R < 1)
        R = 1;
    rows = (N + R - 1) / R;
    R = (N + rows - 1) / rows;
    partial = (float *)g3cuda_scratch(ctx, sizeof(float) * (size_t)R * OC, "bias_bwd");
    if (partial == NULL)
        return ctx->err;
    if (vec)
        g3_bias_bwd_vec_kernel<<<dim3(gx, R), dim3(32, 8), 0, ctx->stream>>>(
            partial, (const bf16 *)dout, N, OC, rows);
    else
        g3_bias_bwd_kernel<<<dim3(gx, R), dim3(32, 8), 0, ctx->stream>>>(
            partial, (const bf16 *)dout, N, OC, rows);
    if (g3cuda_check_launch(ctx, "bias_bwd"))
        return ctx->err;
    g3_bias_bwd_sum_kernel<<<(OC + 255) / 256, 256, 0, ctx->stream>>>(dbias, partial, R, OC);
    return g3cuda_check_launch(ctx, "bias_bwd (sum)");
}

__global__ void g3_bias_acc_kernel(float *dbias, const float *part, int OC)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < OC)
        dbias[c] += part[c];
}

extern "C" int g3cuda_bias_acc(g3cuda_ctx_t *ctx, float *dbias, const float *part, int OC)
{
    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (OC <= 0 || dbias == NULL || part == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "bias_acc: bad arguments (OC=%d)", OC);
    g3_bias_acc_kernel<<<(OC + 255) / 256, 256, 0, ctx->stream>>>(dbias, part, OC);
    return g3cuda_check_launch(ctx, "bias_acc");
}

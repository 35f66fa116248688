/* Embedding backward, deterministic without atomics.
 *
 * dwte: the (row - v0) keys of the B*T tokens are stably radix-sorted with their positions
 * (CUB), so every vocabulary row's occurrences lie together in position order; the block that
 * starts a run sums them in that order (fp32) and adds the sum to dwte once.  Tokens outside
 * the shard get the key V and are skipped.  The same tokens therefore give the same bits on
 * every run.  A token that fills most of the batch makes one block do most of the work: fine
 * for text, slow for degenerate batches.
 * dwpe: one thread per (t, c) sums dout[b, t, c] over b in order.
 * dwte (V,C) fp32  dwpe (P,C) fp32  dout (B,T,C) bf16  tokens (B,T) */
#include <cub/cub.cuh>

#include "g3cuda_internal.cuh"

#define G3_EMB_COLS 128   /* columns per block in the dwte kernel */

__global__ void g3_embedding_keys_kernel(int32_t *keys, int32_t *pos, const int32_t *tokens,
                                         int BT, int v0, int V)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < BT) {
        int tok = tokens[i] - v0;
        keys[i] = tok >= 0 && tok < V ? tok : V;
        pos[i] = i;
    }
}

/* grid (BT, ceil(C / G3_EMB_COLS)): block x is a sorted position; it works only when it starts
 * a run of equal keys. */
__global__ void g3_embedding_dwte_kernel(float *dwte, const bf16 *dout, const int32_t *keys,
                                         const int32_t *pos, int BT, int C, int V)
{
    int i = blockIdx.x;
    int key = keys[i];
    int c = blockIdx.y * G3_EMB_COLS + threadIdx.x;

    if (key >= V || (i > 0 && keys[i - 1] == key) || c >= C)
        return;
    float acc = 0.0f;
    for (int j = i; j < BT && keys[j] == key; j++)
        acc += g3_bf2f(dout[(size_t)pos[j] * C + c]);
    dwte[(size_t)key * C + c] += acc;
}

__global__ void g3_embedding_dwpe_kernel(float *dwpe, const bf16 *dout, int B, int T, int C)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;   /* t * C + c */
    if (i >= (size_t)T * C)
        return;
    float acc = 0.0f;
    for (int b = 0; b < B; b++)
        acc += g3_bf2f(dout[(size_t)b * T * C + i]);
    dwpe[i] += acc;
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

static size_t g3_align256(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

extern "C" int g3cuda_embedding_bwd(g3cuda_ctx_t *ctx, float *dwte, float *dwpe,
                                    const g3cuda_bf16_t *dout, const int32_t *tokens,
                                    int B, int T, int C, int v0, int V)
{
    int BT = B * T;

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (B <= 0 || T <= 0 || C <= 0 || V < 0)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "embedding_bwd: bad shape B=%d T=%d C=%d V=%d",
                           B, T, C, V);
    if (dout == NULL || (dwte != NULL && tokens == NULL))
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "embedding_bwd: NULL tensor");

    if (dwte != NULL && V > 0) {
        size_t arr = g3_align256(sizeof(int32_t) * (size_t)BT), temp_bytes = 0;
        int end_bit = 1;
        cudaError_t e;
        char *s;

        while (end_bit < 31 && (1 << end_bit) <= V)   /* keys are in [0, V] */
            end_bit++;
        e = cub::DeviceRadixSort::SortPairs(NULL, temp_bytes, (int32_t *)NULL, (int32_t *)NULL,
                                            (int32_t *)NULL, (int32_t *)NULL, BT, 0, end_bit,
                                            ctx->stream);
        if (e != cudaSuccess)
            return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "embedding_bwd: cub sort size query: %s",
                               cudaGetErrorString(e));
        s = (char *)g3cuda_scratch(ctx, 4 * arr + g3_align256(temp_bytes), "embedding_bwd");
        if (s == NULL)
            return ctx->err;
        int32_t *keys_in = (int32_t *)s, *pos_in = (int32_t *)(s + arr);
        int32_t *keys = (int32_t *)(s + 2 * arr), *pos = (int32_t *)(s + 3 * arr);
        void *temp = s + 4 * arr;

        g3_embedding_keys_kernel<<<(BT + 255) / 256, 256, 0, ctx->stream>>>(
            keys_in, pos_in, tokens, BT, v0, V);
        if (g3cuda_check_launch(ctx, "embedding_bwd (keys)"))
            return ctx->err;
        e = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys, pos_in, pos, BT, 0,
                                            end_bit, ctx->stream);
        if (e != cudaSuccess)
            return g3cuda_fail(ctx, G3CUDA_ERR_CUDA,
                               "embedding_bwd: cub radix sort of %d tokens: %s", BT,
                               cudaGetErrorString(e));
        dim3 grid((unsigned)BT, (unsigned)((C + G3_EMB_COLS - 1) / G3_EMB_COLS));
        g3_embedding_dwte_kernel<<<grid, G3_EMB_COLS, 0, ctx->stream>>>(
            dwte, (const bf16 *)dout, keys, pos, BT, C, V);
        if (g3cuda_check_launch(ctx, "embedding_bwd (dwte)"))
            return ctx->err;
    }
    if (dwpe != NULL) {
        size_t n = (size_t)T * C;
        g3_embedding_dwpe_kernel<<<(unsigned)((n + 255) / 256), 256, 0, ctx->stream>>>(
            dwpe, (const bf16 *)dout, B, T, C);
        if (g3cuda_check_launch(ctx, "embedding_bwd (dwpe)"))
            return ctx->err;
    }
    return 0;
}

/* Embedding forward: out[b,t,:] = wte[tok - v0, :] + wpe[t, :], summed in fp32 and rounded
 * once.  Memory bound; with C % 8 == 0 each thread moves 8 bf16 (16 bytes) at a time.
 * out (B,T,C)  tokens (B,T)  wte (V,C)  wpe (P,C) or NULL */
#include "g3cuda_internal.cuh"

/* One thread per VEC consecutive columns of one row. */
template <int VEC>
__global__ void g3_embedding_fwd_kernel(bf16 *out, const int32_t *tokens, const bf16 *wte,
                                        const bf16 *wpe, int BT, int T, int C, int v0, int V)
{
    int per_row = C / VEC;
    size_t total = (size_t)BT * per_row;

    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int r = (int)(i / per_row), c = (int)(i % per_row) * VEC;
        int tok = tokens[r] - v0;
        const bf16 *we = tok >= 0 && tok < V ? wte + (size_t)tok * C + c : NULL;
        const bf16 *pe = wpe ? wpe + (size_t)(r % T) * C + c : NULL;
        bf16 *o = out + (size_t)r * C + c;
        if (VEC == 8) {
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            union { uint4 u; bf16 h[8]; } a, p, res;
            if (we) {
                a.u = *(const uint4 *)we;
                for (int k = 0; k < 8; k++)
                    acc[k] += g3_bf2f(a.h[k]);
            }
            if (pe) {
                p.u = *(const uint4 *)pe;
                for (int k = 0; k < 8; k++)
                    acc[k] += g3_bf2f(p.h[k]);
            }
            for (int k = 0; k < 8; k++)
                res.h[k] = g3_f2bf(acc[k]);
            *(uint4 *)o = res.u;
        } else {
            float acc = 0.0f;
            if (we)
                acc += g3_bf2f(we[0]);
            if (pe)
                acc += g3_bf2f(pe[0]);
            o[0] = g3_f2bf(acc);
        }
    }
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_embedding_fwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *out, const int32_t *tokens,
                                    const g3cuda_bf16_t *wte, const g3cuda_bf16_t *wpe,
                                    int B, int T, int C, int v0, int V)
{
    int BT = B * T;
    bool vec = C % 8 == 0 && g3cuda_aligned(out, 16) && g3cuda_aligned(wte, 16) &&
               (wpe == NULL || g3cuda_aligned(wpe, 16));
    size_t work = (size_t)BT * (vec ? C / 8 : C);
    unsigned blocks = g3cuda_blocks(work, 256, (unsigned)ctx->sm_count * 16);

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (B <= 0 || T <= 0 || C <= 0 || V < 0)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "embedding_fwd: bad shape B=%d T=%d C=%d V=%d",
                           B, T, C, V);
    if (out == NULL || tokens == NULL || (wte == NULL && V > 0))
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "embedding_fwd: NULL tensor");
    if (vec)
        g3_embedding_fwd_kernel<8><<<blocks, 256, 0, ctx->stream>>>(
            (bf16 *)out, tokens, (const bf16 *)wte, (const bf16 *)wpe, BT, T, C, v0, V);
    else
        g3_embedding_fwd_kernel<1><<<blocks, 256, 0, ctx->stream>>>(
            (bf16 *)out, tokens, (const bf16 *)wte, (const bf16 *)wpe, BT, T, C, v0, V);
    return g3cuda_check_launch(ctx, "embedding_fwd");
}

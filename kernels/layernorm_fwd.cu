/* LayerNorm forward fused with the residual add that precedes it in a pre-LN block:
 *   resid = bf16(a + b);  out = (resid - mean) * rstd * w + bias   (b == NULL: x = a).
 * One block per row; each thread keeps its K columns (c = tid + k*blockDim) in registers, so
 * the row is read once; mean and variance are fp32 block reductions (variance from the
 * centred values, not E[x^2]-E[x]^2).  The statistics are taken over the bf16-rounded
 * residual, the tensor backward reads.
 * resid, out, a, b (N,C) bf16  mean, rstd (N,) fp32  w, bias (C,) bf16 */
#include "g3cuda_internal.cuh"

template <int K>
__global__ void __launch_bounds__(1024)
g3_layernorm_fwd_kernel(bf16 *resid, bf16 *out, float *mean, float *rstd, const bf16 *a,
                        const bf16 *b, const bf16 *w, const bf16 *bias, int C, float eps)
{
    __shared__ float shm[32];
    size_t row = (size_t)blockIdx.x * C;
    float x[K];
    float s = 0.0f, q = 0.0f;

#pragma unroll
    for (int k = 0; k < K; k++) {
        int c = threadIdx.x + k * blockDim.x;
        x[k] = 0.0f;
        if (c < C) {
            float v = g3_bf2f(a[row + c]);
            if (b != NULL) {
                bf16 r = g3_f2bf(v + g3_bf2f(b[row + c]));
                if (resid != NULL)
                    resid[row + c] = r;
                v = g3_bf2f(r);
            }
            x[k] = v;
            s += v;
        }
    }
    float m = g3_block_sum(s, shm) / (float)C;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int c = threadIdx.x + k * blockDim.x;
        if (c < C)
            q += (x[k] - m) * (x[k] - m);
    }
    float rs = rsqrtf(g3_block_sum(q, shm) / (float)C + eps);
#pragma unroll
    for (int k = 0; k < K; k++) {
        int c = threadIdx.x + k * blockDim.x;
        if (c < C)
            out[row + c] = g3_f2bf((x[k] - m) * rs * g3_bf2f(w[c]) + g3_bf2f(bias[c]));
    }
    if (threadIdx.x == 0) {
        mean[blockIdx.x] = m;
        rstd[blockIdx.x] = rs;
    }
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_layernorm_fwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *resid, g3cuda_bf16_t *out,
                                    float *mean, float *rstd, const g3cuda_bf16_t *a,
                                    const g3cuda_bf16_t *b, const g3cuda_bf16_t *w,
                                    const g3cuda_bf16_t *bias, int N, int C, float eps)
{
    int K = C <= 4 * 1024 ? 4 : C <= 8 * 1024 ? 8 : C <= 16 * 1024 ? 16 : 24;
    int threads = ((C + K - 1) / K + 31) / 32 * 32;

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (N <= 0 || C <= 0 || C > G3CUDA_LN_MAX_C)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG,
                           "layernorm_fwd: bad shape N=%d C=%d (C must be in [1, %d])", N, C,
                           G3CUDA_LN_MAX_C);
    if (out == NULL || mean == NULL || rstd == NULL || a == NULL || w == NULL || bias == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "layernorm_fwd: NULL tensor");
    const bf16 *pa = (const bf16 *)a, *pb = (const bf16 *)b, *pw = (const bf16 *)w;
    const bf16 *pbias = (const bf16 *)bias;
    bf16 *pr = (bf16 *)resid, *po = (bf16 *)out;
    if (K == 4)
        g3_layernorm_fwd_kernel<4><<<N, threads, 0, ctx->stream>>>(pr, po, mean, rstd, pa, pb, pw,
                                                                   pbias, C, eps);
    else if (K == 8)
        g3_layernorm_fwd_kernel<8><<<N, threads, 0, ctx->stream>>>(pr, po, mean, rstd, pa, pb, pw,
                                                                   pbias, C, eps);
    else if (K == 16)
        g3_layernorm_fwd_kernel<16><<<N, threads, 0, ctx->stream>>>(pr, po, mean, rstd, pa, pb,
                                                                    pw, pbias, C, eps);
    else
        g3_layernorm_fwd_kernel<24><<<N, threads, 0, ctx->stream>>>(pr, po, mean, rstd, pa, pb,
                                                                    pw, pbias, C, eps);
    return g3cuda_check_launch(ctx, "layernorm_fwd");
}

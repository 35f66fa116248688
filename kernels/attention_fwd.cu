/* Causal self-attention forward, flash style (FlashAttention-2's loop order).
 *
 * Block (query tile qt, batch b, head h): load the 64 queries once; for each key tile kt <= qt
 * (later keys are all masked) load 64 keys and values, and per warp (16 queries):
 *   S  = Q K^T                          WMMA, fp32, into shared memory
 *   m' = max(m, rowmax(S * scale))      online softmax in fp32 (base-2 exponentials)
 *   P  = exp(S * scale - m'), l = l exp(m - m') + rowsum(P)
 *   O  = O exp(m - m') + P V            P rounded to bf16 for the tensor cores
 * and at the end out = O / l (bf16) and lse = m + log l (fp32, natural log) for backward.
 * Only 64x64 tiles of S ever exist, in shared memory.  O lives in shared memory (fp32) because
 * its rows must be rescaled and a WMMA fragment's element-to-row map is not specified.
 * Two lanes share a row: lane = 2*r + half, half taking 32 of the 64 key columns (and half of
 * O's columns when rescaling).
 * out (B,T,C) bf16  lse (B,NH,T) fp32  qkv (B,T,3C) bf16 */
#include "attention_tile.cuh"

template <int HS>
static size_t g3_att_fwd_smem(void)
{
    typedef g3_att_dims<HS> D;
    return sizeof(bf16) * (size_t)(G3_ATT_BR + 2 * G3_ATT_BC) * D::LDQ      /* Q, K, V */
         + sizeof(float) * (size_t)G3_ATT_WARPS * 16 * G3_ATT_LDS          /* S       */
         + sizeof(bf16) * (size_t)G3_ATT_WARPS * 16 * G3_ATT_LDP           /* P       */
         + sizeof(float) * (size_t)G3_ATT_WARPS * 16 * D::LDO;             /* O       */
}

/* Online softmax over row r's 64 scores of the key tile at k0 (32 per lane, this lane's
 * half): P_w row r <- exp2(S scale2 - m') in bf16 (keys after query qi or past T masked),
 * m <- m', l <- l exp2(m - m') + rowsum(P), and O_w row r (16, LDO) rescaled by exp2(m - m'). */
template <int HS>
__device__ __forceinline__ void g3_att_fwd_softmax(const float *Ss, bf16 *Ps, float *Os, int r,
                                                   int half, int k0, int qi, int T,
                                                   float scale2, float &m, float &l)
{
    typedef g3_att_dims<HS> D;
    float sv[32], mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < 32; i++) {
        int kj = k0 + half * 32 + i;
        float v = Ss[r * G3_ATT_LDS + half * 32 + i] * scale2;
        sv[i] = kj > qi || kj >= T ? -INFINITY : v;
        mx = fmaxf(mx, sv[i]);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    float m_new = fmaxf(m, mx);
    float base2 = m_new == -INFINITY ? 0.0f : m_new;   /* a row with no key yet */
    float alpha = exp2f(m - base2), sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; i++) {
        float p = exp2f(sv[i] - base2);
        sum += p;
        Ps[r * G3_ATT_LDP + half * 32 + i] = g3_f2bf(p);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = l * alpha + sum;
    m = m_new;
    for (int d = half * (HS / 2); d < (half + 1) * (HS / 2); d++)
        Os[r * D::LDO + d] *= alpha;
}

/* O_w (16 x HS, fp32, row stride LDO) += P_w (16 x 64, bf16) . V (64 x HS): Vs (64, LDQ). */
template <int HS>
__device__ __forceinline__ void g3_att_fwd_pv(float *Os, const bf16 *Ps, const bf16 *Vs)
{
    typedef g3_att_dims<HS> D;
#pragma unroll
    for (int n = 0; n < HS / 16; n++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
        wmma::load_matrix_sync(o, Os + n * 16, D::LDO, wmma::mem_row_major);
#pragma unroll
        for (int j = 0; j < G3_ATT_BC / 16; j++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> p;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> vb;
            wmma::load_matrix_sync(p, Ps + j * 16, G3_ATT_LDP);
            wmma::load_matrix_sync(vb, Vs + (j * 16) * D::LDQ + n * 16, D::LDQ);
            wmma::mma_sync(o, p, vb, o);
        }
        wmma::store_matrix_sync(Os + n * 16, o, D::LDO, wmma::mem_row_major);
    }
}

template <int HS>
__global__ void __launch_bounds__(G3_ATT_THREADS)
g3_attention_fwd_kernel(bf16 *out, float *lse, const bf16 *qkv, int T, int NH)
{
    typedef g3_att_dims<HS> D;
    extern __shared__ __align__(128) unsigned char g3_att_smem[];
    const int C = NH * HS, nT = (T + G3_ATT_BR - 1) / G3_ATT_BR;
    const int qt = nT - 1 - (int)blockIdx.x;            /* longest rows first */
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int r = lane >> 1, half = lane & 1;
    const int q0 = qt * G3_ATT_BR, qi = q0 + warp * 16 + r;
    const float scale2 = G3_LOG2E / sqrtf((float)HS);

    /* shared memory, carved in the order of g3_att_fwd_smem */
    unsigned char *sp = g3_att_smem;
    bf16 *Qs = (bf16 *)sp;
    sp += sizeof(bf16) * G3_ATT_BR * D::LDQ;
    bf16 *Ks = (bf16 *)sp;
    sp += sizeof(bf16) * G3_ATT_BC * D::LDQ;
    bf16 *Vs = (bf16 *)sp;
    sp += sizeof(bf16) * G3_ATT_BC * D::LDQ;
    float *Ss = (float *)sp + warp * 16 * G3_ATT_LDS;
    sp += sizeof(float) * G3_ATT_WARPS * 16 * G3_ATT_LDS;
    bf16 *Ps = (bf16 *)sp + warp * 16 * G3_ATT_LDP;
    sp += sizeof(bf16) * G3_ATT_WARPS * 16 * G3_ATT_LDP;
    float *Os = (float *)sp + warp * 16 * D::LDO;

    const bf16 *base = qkv + (size_t)b * T * 3 * C + h * HS;
    g3_att_load_tile<HS>(Qs, base, q0, T, 3 * C);
    for (int d = half * (HS / 2); d < (half + 1) * (HS / 2); d++)
        Os[r * D::LDO + d] = 0.0f;
    float m = -INFINITY, l = 0.0f;

    for (int kt = 0; kt <= qt; kt++) {
        const int k0 = kt * G3_ATT_BC;
        __syncthreads();                                  /* K, V of the last tile are done */
        g3_att_load_tile<HS>(Ks, base + C, k0, T, 3 * C);
        g3_att_load_tile<HS>(Vs, base + 2 * C, k0, T, 3 * C);
        __syncthreads();

        g3_att_xyt<HS, 1>(Ss, NULL, Qs, Ks, NULL, NULL, warp);   /* S = Q_w K^T */
        __syncwarp();

        g3_att_fwd_softmax<HS>(Ss, Ps, Os, r, half, k0, qi, T, scale2, m, l);   /* P, m, l */
        __syncwarp();

        g3_att_fwd_pv<HS>(Os, Ps, Vs);                      /* O_w += P V */
        __syncwarp();
    }

    if (qi < T) {
        float inv = 1.0f / l;
        bf16 *o = out + ((size_t)b * T + qi) * C + h * HS;
        for (int d = half * (HS / 2); d < (half + 1) * (HS / 2); d++)
            o[d] = g3_f2bf(Os[r * D::LDO + d] * inv);
        if (half == 0)
            lse[(size_t)bh * T + qi] = (m + log2f(l)) * G3_LN2;
    }
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

template <int HS>
static int g3_attention_fwd_launch(g3cuda_ctx_t *ctx, bf16 *out, float *lse, const bf16 *qkv,
                                   int B, int T, int NH)
{
    size_t smem = g3_att_fwd_smem<HS>();
    dim3 grid((unsigned)((T + G3_ATT_BR - 1) / G3_ATT_BR), (unsigned)(B * NH));

    if (g3cuda_smem_optin(ctx, (const void *)g3_attention_fwd_kernel<HS>, smem, "attention_fwd"))
        return ctx->err;
    g3_attention_fwd_kernel<HS><<<grid, G3_ATT_THREADS, smem, ctx->stream>>>(out, lse, qkv, T,
                                                                            NH);
    return g3cuda_check_launch(ctx, "attention_fwd");
}

extern "C" int g3cuda_attention_fwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *out, float *lse,
                                    const g3cuda_bf16_t *qkv, int B, int T, int NH, int HS)
{
    bf16 *o = (bf16 *)out;
    const bf16 *x = (const bf16 *)qkv;
    int rc = g3_att_check_shape(ctx, "attention_fwd", B, T, NH, HS);

    if (rc != 0)
        return rc;
    if (out == NULL || lse == NULL || qkv == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "attention_fwd: NULL tensor");
    if (!g3cuda_aligned(qkv, 16))
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "attention_fwd: qkv must be 16-byte aligned");
#define G3_ATT_CASE(n) \
    case n: \
        return g3_attention_fwd_launch<n>(ctx, o, lse, x, B, T, NH);
    switch (HS) {
        G3CUDA_ATT_HEAD_SIZES(G3_ATT_CASE)
    default:
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "attention_fwd: head size %d", HS);
    }
#undef G3_ATT_CASE
}

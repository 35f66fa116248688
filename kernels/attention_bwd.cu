/* Causal self-attention backward, flash style, deterministic (no atomics).
 *
 * With s = 1/sqrt(HS), S = s Q K^T, P = exp(S - lse) (recomputed from the saved lse),
 * dP = dO V^T, Dv_i = sum_d dO_id O_id and dS = P * (dP - Dv):
 *   dV = P^T dO,   dK = s dS^T Q,   dQ = s dS K.
 * 1. g3_att_dvec_kernel: Dv (B,NH,T) fp32 into scratch, one warp per (b, t, h).
 * 2. g3_att_dkv_kernel: block per key tile; walks the query tiles at or after it; each warp
 *    keeps dK and dV for its 16 keys in WMMA accumulators (registers) for the whole walk.
 * 3. g3_att_dq_kernel: block per query tile; walks the key tiles up to it; each warp keeps dQ
 *    for its 16 queries in accumulators.
 * Splitting dQ from dK/dV recomputes S and dP once more (about 1.4x FlashAttention-2's
 * backward arithmetic) but needs neither atomics nor an fp32 dQ buffer, so the bits do not
 * depend on scheduling.  P and dS are rounded to bf16 before their tensor-core products.
 * dqkv (B,T,3C) bf16  dout, out (B,T,C) bf16  qkv (B,T,3C) bf16  lse (B,NH,T) fp32 */
#include "attention_tile.cuh"

/* Dv[b,h,t] = sum_d dout[b,t,h,d] * out[b,t,h,d]; one warp per (b, t, h). */
__global__ void g3_att_dvec_kernel(float *dvec, const bf16 *dout, const bf16 *out, int B, int T,
                                   int NH, int HS)
{
    size_t w = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (w >= (size_t)B * T * NH)
        return;
    int h = (int)(w % NH);
    size_t bt = w / NH;                              /* b * T + t */
    const bf16 *o = out + bt * NH * HS + h * HS, *d = dout + bt * NH * HS + h * HS;
    float s = 0.0f;
    for (int i = lane; i < HS; i += 32)
        s += g3_bf2f(o[i]) * g3_bf2f(d[i]);
    s = g3_warp_sum(s);
    if (lane == 0) {
        size_t b = bt / T, t = bt % T;
        dvec[(b * NH + h) * T + t] = s;
    }
}

/* Write a warp's 16 x HS fp32 staging tile, times mul, to rows row0.. of dst (row stride ld),
 * rows >= T skipped.  Two lanes per row, half the columns each. */
template <int HS>
__device__ __forceinline__ void g3_att_store_rows(bf16 *dst, const float *stage, int row0, int T,
                                                  int ld, float mul)
{
    constexpr int LDO = g3_att_dims<HS>::LDO;
    int lane = threadIdx.x & 31, r = lane >> 1, half = lane & 1;
    if (row0 + r >= T)
        return;
    bf16 *o = dst + (size_t)(row0 + r) * ld;
    for (int d = half * (HS / 2); d < (half + 1) * (HS / 2); d++)
        o[d] = g3_f2bf(stage[r * LDO + d] * mul);
}

/* Write a warp's 16 x HS accumulators acc, times mul, to rows row0.. of dst (stride ld, rows
 * >= T skipped), staged through stage (16 x LDO fp32, the warp's own). */
template <int HS>
__device__ __forceinline__ void g3_att_store_acc(
    bf16 *dst, float *stage, wmma::fragment<wmma::accumulator, 16, 16, 16, float> *acc,
    int row0, int T, int ld, float mul)
{
    __syncwarp();
#pragma unroll
    for (int n = 0; n < HS / 16; n++)
        wmma::store_matrix_sync(stage + n * 16, acc[n], g3_att_dims<HS>::LDO,
                                wmma::mem_row_major);
    __syncwarp();
    g3_att_store_rows<HS>(dst, stage, row0, T, ld, mul);
}

/* The shared memory of both backward kernels, carved in one order: four 64-row bf16 tiles
 * (dkv: K, V, Q, dO; dq: Q, dO, K, V), the 64 rows' lse2 and Dv, every warp's fp32 slab
 * (S, then dP right after; transposed in dkv), then every warp's NP 16-row bf16 tiles
 * (dkv: P^T, dS^T; dq: dS). */
template <int HS>
static size_t g3_att_bwd_smem(int NP)
{
    typedef g3_att_dims<HS> D;
    return sizeof(bf16) * (size_t)4 * 64 * D::LDQ                          /* the tiles    */
         + sizeof(float) * 2 * 64                                          /* lse2, Dv     */
         + sizeof(float) * (size_t)G3_ATT_WARPS * D::SLAB                  /* S, dP        */
         + sizeof(bf16) * (size_t)G3_ATT_WARPS * NP * 16 * G3_ATT_LDP;     /* P, dS        */
}

/* Warp `warp`'s view of that memory (smem: its start). */
struct g3_att_bwd_view {
    bf16  *tile[4];   /* (64, LDQ) each                                        */
    float *lse2, *Dv; /* (64,) (64,)                                           */
    float *S, *dP;    /* (16, LDS) (16, LDS) the warp's                        */
    bf16  *P;         /* (NP, 16, LDP) the warp's                              */
};

template <int HS>
__device__ __forceinline__ g3_att_bwd_view g3_att_bwd_carve(unsigned char *smem, int warp,
                                                            int NP)
{
    typedef g3_att_dims<HS> D;
    g3_att_bwd_view v;
    unsigned char *sp = smem;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v.tile[i] = (bf16 *)sp;
        sp += sizeof(bf16) * 64 * D::LDQ;
    }
    v.lse2 = (float *)sp;
    v.Dv = v.lse2 + 64;
    sp += sizeof(float) * 2 * 64;
    v.S = (float *)sp + warp * D::SLAB;
    v.dP = v.S + 16 * G3_ATT_LDS;
    sp += sizeof(float) * G3_ATT_WARPS * D::SLAB;
    v.P = (bf16 *)sp + warp * NP * 16 * G3_ATT_LDP;
    return v;
}

/* P of query qi and key kj from their score s: exp(s scale - lse), scale2 and lse2 in base 2,
 * 0 under the causal mask (kj > qi) and past T. */
__device__ __forceinline__ float g3_att_prob(int qi, int kj, int T, float s, float scale2,
                                             float lse2)
{
    return kj <= qi && qi < T && kj < T ? exp2f(s * scale2 - lse2) : 0.0f;
}

/* lse2 (64,) = lse * log2(e) and Dv (64,) of rows q0.. of (b, h) = bh, zeros past T. */
__device__ __forceinline__ void g3_att_load_rowstats(float *lse2, float *Dv, const float *lse,
                                                     const float *dvec, int bh, int q0, int T)
{
    for (int i = threadIdx.x; i < 64; i += blockDim.x) {
        bool in = q0 + i < T;
        lse2[i] = in ? lse[(size_t)bh * T + q0 + i] * G3_LOG2E : 0.0f;
        Dv[i] = in ? dvec[(size_t)bh * T + q0 + i] : 0.0f;
    }
}

template <int HS>
__global__ void __launch_bounds__(G3_ATT_THREADS)
g3_att_dkv_kernel(bf16 *dqkv, const bf16 *dout, const bf16 *qkv, const float *lse,
                  const float *dvec, int T, int NH)
{
    typedef g3_att_dims<HS> D;
    typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc_t;
    extern __shared__ __align__(128) unsigned char g3_att_smem[];
    const int C = NH * HS, nT = (T + 63) / 64;
    const int kt = (int)blockIdx.x;                 /* tile 0 walks the most query tiles */
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int r = lane >> 1, half = lane & 1;
    const int k0 = kt * 64, kj = k0 + warp * 16 + r;
    const float scale = 1.0f / sqrtf((float)HS), scale2 = scale * G3_LOG2E;

    const g3_att_bwd_view sm = g3_att_bwd_carve<HS>(g3_att_smem, warp, 2);
    bf16 *Ks = sm.tile[0], *Vs = sm.tile[1], *Qs = sm.tile[2], *dOs = sm.tile[3];
    float *lse2s = sm.lse2, *Dvs = sm.Dv;
    float *St = sm.S, *dPt = sm.dP;              /* S^T, then dP^T right after */
    bf16 *Pt = sm.P, *dSt = Pt + 16 * G3_ATT_LDP;

    const bf16 *base = qkv + (size_t)b * T * 3 * C + h * HS;
    const bf16 *dobase = dout + (size_t)b * T * C + h * HS;
    g3_att_load_tile<HS>(Ks, base + C, k0, T, 3 * C);
    g3_att_load_tile<HS>(Vs, base + 2 * C, k0, T, 3 * C);

    acc_t dk[HS / 16], dv[HS / 16];
#pragma unroll
    for (int n = 0; n < HS / 16; n++) {
        wmma::fill_fragment(dk[n], 0.0f);
        wmma::fill_fragment(dv[n], 0.0f);
    }

    for (int qt = kt; qt < nT; qt++) {
        const int q0 = qt * 64;
        __syncthreads();                            /* the last tile's Q, dO are done */
        g3_att_load_tile<HS>(Qs, base, q0, T, 3 * C);
        g3_att_load_tile<HS>(dOs, dobase, q0, T, C);
        g3_att_load_rowstats(lse2s, Dvs, lse, dvec, bh, q0, T);
        __syncthreads();

        /* S^T (16 keys x 64 queries) = K_w Q^T;  dP^T = V_w dO^T */
        g3_att_xyt<HS, 2>(St, dPt, Ks, Qs, Vs, dOs, warp);
        __syncwarp();

        /* P^T and dS^T for key row r, query columns [32 half, 32 half + 32) */
#pragma unroll 4
        for (int i = 0; i < 32; i++) {
            int c = half * 32 + i;
            float p = g3_att_prob(q0 + c, kj, T, St[r * G3_ATT_LDS + c], scale2, lse2s[c]);
            Pt[r * G3_ATT_LDP + c] = g3_f2bf(p);
            dSt[r * G3_ATT_LDP + c] = g3_f2bf(p * (dPt[r * G3_ATT_LDS + c] - Dvs[c]));
        }
        __syncwarp();

        /* dV_w += P^T (16 x 64) dO (64 x HS);  dK_w += dS^T (16 x 64) Q (64 x HS) */
#pragma unroll
        for (int j = 0; j < 4; j++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> pa, da;
            wmma::load_matrix_sync(pa, Pt + j * 16, G3_ATT_LDP);
            wmma::load_matrix_sync(da, dSt + j * 16, G3_ATT_LDP);
#pragma unroll
            for (int n = 0; n < HS / 16; n++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> bm;
                wmma::load_matrix_sync(bm, dOs + (j * 16) * D::LDQ + n * 16, D::LDQ);
                wmma::mma_sync(dv[n], pa, bm, dv[n]);
                wmma::load_matrix_sync(bm, Qs + (j * 16) * D::LDQ + n * 16, D::LDQ);
                wmma::mma_sync(dk[n], da, bm, dk[n]);
            }
        }
    }

    /* stage through the warp's S^T/dP^T area (2 x 16 x LDS >= 16 x LDO floats) */
    bf16 *dbase = dqkv + (size_t)b * T * 3 * C + h * HS;
    g3_att_store_acc<HS>(dbase + C, St, dk, k0 + warp * 16, T, 3 * C, scale);
    g3_att_store_acc<HS>(dbase + 2 * C, St, dv, k0 + warp * 16, T, 3 * C, 1.0f);
}

template <int HS>
__global__ void __launch_bounds__(G3_ATT_THREADS)
g3_att_dq_kernel(bf16 *dqkv, const bf16 *dout, const bf16 *qkv, const float *lse,
                 const float *dvec, int T, int NH)
{
    typedef g3_att_dims<HS> D;
    typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc_t;
    extern __shared__ __align__(128) unsigned char g3_att_smem[];
    const int C = NH * HS, nT = (T + 63) / 64;
    const int qt = nT - 1 - (int)blockIdx.x;        /* longest rows first */
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int r = lane >> 1, half = lane & 1;
    const int q0 = qt * 64, qi = q0 + warp * 16 + r;
    const float scale = 1.0f / sqrtf((float)HS), scale2 = scale * G3_LOG2E;

    const g3_att_bwd_view sm = g3_att_bwd_carve<HS>(g3_att_smem, warp, 1);
    bf16 *Qs = sm.tile[0], *dOs = sm.tile[1], *Ks = sm.tile[2], *Vs = sm.tile[3];
    float *lse2s = sm.lse2, *Dvs = sm.Dv;
    float *Sw = sm.S, *dPw = sm.dP;              /* S, then dP right after */
    bf16 *dSw = sm.P;

    const bf16 *base = qkv + (size_t)b * T * 3 * C + h * HS;
    g3_att_load_tile<HS>(Qs, base, q0, T, 3 * C);
    g3_att_load_tile<HS>(dOs, dout + (size_t)b * T * C + h * HS, q0, T, C);
    g3_att_load_rowstats(lse2s, Dvs, lse, dvec, bh, q0, T);
    const int row = warp * 16 + r;                  /* this lane's row within the tile */

    acc_t dq[HS / 16];
#pragma unroll
    for (int n = 0; n < HS / 16; n++)
        wmma::fill_fragment(dq[n], 0.0f);

    for (int kt = 0; kt <= qt; kt++) {
        const int k0 = kt * 64;
        __syncthreads();                            /* the last K, V are done */
        g3_att_load_tile<HS>(Ks, base + C, k0, T, 3 * C);
        g3_att_load_tile<HS>(Vs, base + 2 * C, k0, T, 3 * C);
        __syncthreads();

        /* S (16 queries x 64 keys) = Q_w K^T;  dP = dO_w V^T */
        g3_att_xyt<HS, 2>(Sw, dPw, Qs, Ks, dOs, Vs, warp);
        __syncwarp();

#pragma unroll 4
        for (int i = 0; i < 32; i++) {
            int c = half * 32 + i;
            float p = g3_att_prob(qi, k0 + c, T, Sw[r * G3_ATT_LDS + c], scale2, lse2s[row]);
            dSw[r * G3_ATT_LDP + c] = g3_f2bf(p * (dPw[r * G3_ATT_LDS + c] - Dvs[row]));
        }
        __syncwarp();

        /* dQ_w += dS (16 x 64) K (64 x HS) */
#pragma unroll
        for (int j = 0; j < 4; j++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> da;
            wmma::load_matrix_sync(da, dSw + j * 16, G3_ATT_LDP);
#pragma unroll
            for (int n = 0; n < HS / 16; n++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> bk;
                wmma::load_matrix_sync(bk, Ks + (j * 16) * D::LDQ + n * 16, D::LDQ);
                wmma::mma_sync(dq[n], da, bk, dq[n]);
            }
        }
    }

    g3_att_store_acc<HS>(dqkv + (size_t)b * T * 3 * C + h * HS, Sw, dq, q0 + warp * 16, T,
                         3 * C, scale);
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

template <int HS>
static int g3_attention_bwd_launch(g3cuda_ctx_t *ctx, bf16 *dqkv, const bf16 *dout,
                                   const bf16 *out, const bf16 *qkv, const float *lse, int B,
                                   int T, int NH)
{
    size_t smem_kv = g3_att_bwd_smem<HS>(2), smem_q = g3_att_bwd_smem<HS>(1);
    size_t rows = (size_t)B * T * NH;
    dim3 grid((unsigned)((T + 63) / 64), (unsigned)(B * NH));
    float *dvec;

    /* the staging area must hold a 16 x HS fp32 tile */
    static_assert(g3_att_dims<HS>::SLAB >= 16 * g3_att_dims<HS>::LDO, "staging too small");
    if (g3cuda_smem_optin(ctx, (const void *)g3_att_dkv_kernel<HS>, smem_kv, "attention_bwd") ||
        g3cuda_smem_optin(ctx, (const void *)g3_att_dq_kernel<HS>, smem_q, "attention_bwd"))
        return ctx->err;
    dvec = (float *)g3cuda_scratch(ctx, sizeof(float) * rows, "attention_bwd");
    if (dvec == NULL)
        return ctx->err;
    g3_att_dvec_kernel<<<(unsigned)((rows * 32 + 255) / 256), 256, 0, ctx->stream>>>(
        dvec, dout, out, B, T, NH, HS);
    if (g3cuda_check_launch(ctx, "attention_bwd (D)"))
        return ctx->err;
    g3_att_dkv_kernel<HS><<<grid, G3_ATT_THREADS, smem_kv, ctx->stream>>>(dqkv, dout, qkv, lse,
                                                                         dvec, T, NH);
    if (g3cuda_check_launch(ctx, "attention_bwd (dK, dV)"))
        return ctx->err;
    g3_att_dq_kernel<HS><<<grid, G3_ATT_THREADS, smem_q, ctx->stream>>>(dqkv, dout, qkv, lse,
                                                                       dvec, T, NH);
    return g3cuda_check_launch(ctx, "attention_bwd (dQ)");
}

extern "C" int g3cuda_attention_bwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *dqkv,
                                    const g3cuda_bf16_t *dout, const g3cuda_bf16_t *out,
                                    const g3cuda_bf16_t *qkv, const float *lse, int B, int T,
                                    int NH, int HS)
{
    bf16 *dx = (bf16 *)dqkv;
    const bf16 *dO = (const bf16 *)dout, *O = (const bf16 *)out, *x = (const bf16 *)qkv;
    int rc = g3_att_check_shape(ctx, "attention_bwd", B, T, NH, HS);

    if (rc != 0)
        return rc;
    if (dqkv == NULL || dout == NULL || out == NULL || qkv == NULL || lse == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "attention_bwd: NULL tensor");
    if (!g3cuda_aligned(qkv, 16) || !g3cuda_aligned(dout, 16))
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG,
                           "attention_bwd: qkv and dout must be 16-byte aligned");
#define G3_ATT_CASE(n) \
    case n: \
        return g3_attention_bwd_launch<n>(ctx, dx, dO, O, x, lse, B, T, NH);
    switch (HS) {
        G3CUDA_ATT_HEAD_SIZES(G3_ATT_CASE)
    default:
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "attention_bwd: head size %d", HS);
    }
#undef G3_ATT_CASE
}

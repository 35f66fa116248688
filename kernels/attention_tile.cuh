/* Shared by attention_fwd.cu and attention_bwd.cu: tile sizes, shared-memory strides, the
 * tile loader and the score product (g3_att_xyt) of the flash-style causal attention.
 *
 * A block owns one 64-row tile (queries in the forward and dQ kernels, keys in the dK/dV
 * kernel) of one (batch, head) and walks the 64-row tiles of the other side; each of its 4
 * warps owns 16 of the rows and does its products with 16x16x16 bf16 WMMA fragments (fp32
 * accumulators).  Shared-memory rows are padded so that every WMMA pointer stays 32-byte
 * aligned and the leading dimensions are multiples of 8 (bf16) or 4 (fp32), as WMMA requires.
 * qkv rows: [q | k | v], head h at columns h*HS of each C block. */
#ifndef G3_KERNELS_ATTENTION_TILE_CUH
#define G3_KERNELS_ATTENTION_TILE_CUH

#include <mma.h>

#include "g3cuda_internal.cuh"

#define G3_ATT_BR      64           /* rows of the block's own tile          */
#define G3_ATT_BC      64           /* rows of the tiles it walks            */
#define G3_ATT_WARPS   4            /* 16 rows each                          */
#define G3_ATT_THREADS (32 * G3_ATT_WARPS)
#define G3_ATT_LDS     (G3_ATT_BC + 4)   /* fp32 score rows                  */
#define G3_ATT_LDP     (G3_ATT_BC + 8)   /* bf16 probability rows            */
#define G3_LOG2E       1.4426950408889634f
#define G3_LN2         0.6931471805599453f

namespace wmma = nvcuda::wmma;

template <int HS>
struct g3_att_dims {
    static constexpr int LDQ = HS + 8;   /* bf16 rows of Q, K, V, dO tiles */
    static constexpr int LDO = HS + 4;   /* fp32 rows of an output tile    */
    /* fp32 per warp in the backward's score area: S and dP (2 x 16 x LDS), which also stages
     * a 16 x HS output tile (16 x LDO, the larger for HS 160); a multiple of 8 (32 bytes) */
    static constexpr int SLAB = ((2 * 16 * G3_ATT_LDS > 16 * LDO ? 2 * 16 * G3_ATT_LDS
                                                                 : 16 * LDO) + 7) / 8 * 8;
};

/* dst (64, LDQ) bf16 in shared memory <- rows [row0, row0+64) of a (T, ld) bf16 matrix whose
 * first HS columns are the head's (src already offset to batch and head); rows >= T become 0.
 * Called by the whole block; 16-byte loads (the launcher checks alignment). */
template <int HS>
__device__ __forceinline__ void g3_att_load_tile(bf16 *dst, const bf16 *src, int row0, int T,
                                                 int ld)
{
    constexpr int CH = HS / 8;                 /* 16-byte chunks per row */
    constexpr int LDQ = g3_att_dims<HS>::LDQ;
    for (int i = threadIdx.x; i < 64 * CH; i += blockDim.x) {
        int r = i / CH, c = i % CH;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (row0 + r < T)
            v = *(const uint4 *)(src + (size_t)(row0 + r) * ld + c * 8);
        *(uint4 *)(dst + r * LDQ + c * 8) = v;
    }
}

/* A warp's NP score tiles (16 x 64, fp32, row stride G3_ATT_LDS), the first product of every
 * attention kernel:  S = X_w Y^T  and, when NP is 2,  S2 = X2_w Y2^T  (the two interleaved);
 * X_w / X2_w the warp's 16 rows of X / X2, Y / Y2 all 64 rows of their tile; every operand
 * (64, HS) bf16 in shared memory with row stride LDQ.  With NP 1, S2, X2 and Y2 are unused. */
template <int HS, int NP>
__device__ __forceinline__ void g3_att_xyt(float *S, float *S2, const bf16 *X, const bf16 *Y,
                                           const bf16 *X2, const bf16 *Y2, int warp)
{
    typedef g3_att_dims<HS> D;
    typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc_t;
#pragma unroll
    for (int j = 0; j < G3_ATT_BC / 16; j++) {
        acc_t s, s2;
        wmma::fill_fragment(s, 0.0f);
        if (NP == 2)
            wmma::fill_fragment(s2, 0.0f);
#pragma unroll
        for (int kk = 0; kk < HS / 16; kk++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> b;
            wmma::load_matrix_sync(a, X + (warp * 16) * D::LDQ + kk * 16, D::LDQ);
            wmma::load_matrix_sync(b, Y + (j * 16) * D::LDQ + kk * 16, D::LDQ);
            wmma::mma_sync(s, a, b, s);
            if (NP == 2) {
                wmma::load_matrix_sync(a, X2 + (warp * 16) * D::LDQ + kk * 16, D::LDQ);
                wmma::load_matrix_sync(b, Y2 + (j * 16) * D::LDQ + kk * 16, D::LDQ);
                wmma::mma_sync(s2, a, b, s2);
            }
        }
        wmma::store_matrix_sync(S + j * 16, s, G3_ATT_LDS, wmma::mem_row_major);
        if (NP == 2)
            wmma::store_matrix_sync(S2 + j * 16, s2, G3_ATT_LDS, wmma::mem_row_major);
    }
}


/* The checks both attention entry points start with: an error already pending (RET: it), a
 * shape the kernels are not compiled for or a grid too tall (RET: G3CUDA_ERR_ARG, recorded
 * naming op).  RET: 0 when the shape runs. */
static inline int g3_att_check_shape(g3cuda_ctx_t *ctx, const char *op, int B, int T, int NH,
                                     int HS)
{
    char sizes[64];   /* the head sizes in words, for the message */

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (B <= 0 || T <= 0 || NH <= 0 || !g3cuda_att_head_size_ok(HS) || (size_t)B * NH > 65535)
        return g3cuda_fail(
            ctx, G3CUDA_ERR_ARG,
            "%s: unsupported shape B=%d T=%d NH=%d HS=%d (head size one of %s; B*NH <= 65535)",
            op, B, T, NH, HS, g3cuda_att_head_sizes_text(sizes, sizeof(sizes)));
    return 0;
}

#endif

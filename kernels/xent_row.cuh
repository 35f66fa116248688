/* Per-row pieces shared by the cross-entropy kernels (xent_*.cu): the row's max and
 * sum exp(x - max) over columns [0, V) of a bf16 row, and the gradient pass.  Every function
 * is called by a whole block (blockDim.x a multiple of 32). */
#ifndef G3_KERNELS_XENT_ROW_CUH
#define G3_KERNELS_XENT_ROW_CUH

#include "g3cuda_internal.cuh"

/* Fold x into the running (max m, sum s of exp(. - m)). */
__device__ __forceinline__ void g3_xent_fold(float &m, float &s, float x)
{
    if (x > m) {
        s = s * __expf(m - x) + 1.0f;
        m = x;
    } else {
        s += __expf(x - m);
    }
}

/* OUT: *m_p, *s_p for the block's row (every thread gets them).  vec: the row is 16-byte
 * aligned, so whole groups of 8 columns are read as uint4.  shm: 32 floats. */
__device__ __forceinline__ void g3_xent_row_stats(const bf16 *row, int V, bool vec, float *shm,
                                                  float *m_p, float *s_p)
{
    float m = -INFINITY, s = 0.0f;
    int j0 = 0;

    if (vec) {
        int groups = V / 8;
        for (int g = threadIdx.x; g < groups; g += blockDim.x) {
            union { uint4 u; bf16 h[8]; } x;
            x.u = ((const uint4 *)row)[g];
#pragma unroll
            for (int k = 0; k < 8; k++)
                g3_xent_fold(m, s, g3_bf2f(x.h[k]));
        }
        j0 = groups * 8;
    }
    for (int j = j0 + threadIdx.x; j < V; j += blockDim.x)
        g3_xent_fold(m, s, g3_bf2f(row[j]));
    float M = g3_block_max(m, shm);
    float part = m == -INFINITY ? 0.0f : s * __expf(m - M);
    *s_p = g3_block_sum(part, shm);
    *m_p = M;
}

/* drow[j] = (exp(x_j - lse) - [j == t]) * dloss for j < V, 0 for V <= j < ld; an ignored row
 * (ignore) gets zeros.  drow may be row (in place: each element is read, then written, by the
 * same thread). */
__device__ __forceinline__ void g3_xent_row_grad(bf16 *drow, const bf16 *row, int V, int ld,
                                                 bool vec, float lse, int t, float dloss,
                                                 bool ignore)
{
    int j0 = 0;

    if (vec) {
        int groups = V / 8;
        for (int g = threadIdx.x; g < groups; g += blockDim.x) {
            union { uint4 u; bf16 h[8]; } x;
            x.u = ((const uint4 *)row)[g];
#pragma unroll
            for (int k = 0; k < 8; k++) {
                int j = g * 8 + k;
                float p = __expf(g3_bf2f(x.h[k]) - lse) - (j == t ? 1.0f : 0.0f);
                x.h[k] = g3_f2bf(ignore ? 0.0f : p * dloss);
            }
            ((uint4 *)drow)[g] = x.u;
        }
        j0 = groups * 8;
    }
    for (int j = j0 + threadIdx.x; j < ld; j += blockDim.x) {
        float gr = 0.0f;
        if (j < V && !ignore)
            gr = (__expf(g3_bf2f(row[j]) - lse) - (j == t ? 1.0f : 0.0f)) * dloss;
        drow[j] = g3_f2bf(gr);
    }
}

#endif

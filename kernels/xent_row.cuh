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

/* Each column j < V of a row that this thread owns, in order: with vec (the row 16-byte
 * aligned) whole groups of 8 columns read as one uint4, then the rest one by one.  Each value
 * x goes through f(j, x); where out is not NULL the results are stored at out[j] (out may be
 * row: each element is read, then written, by the same thread). */
template <typename F>
__device__ __forceinline__ void g3_xent_row_map(bf16 *out, const bf16 *row, int V, bool vec,
                                                F f)
{
    int j0 = 0;

    if (vec) {
        int groups = V / 8;
        for (int g = threadIdx.x; g < groups; g += blockDim.x) {
            union { uint4 u; bf16 h[8]; } x;
            x.u = ((const uint4 *)row)[g];
#pragma unroll
            for (int k = 0; k < 8; k++)
                x.h[k] = g3_f2bf(f(g * 8 + k, g3_bf2f(x.h[k])));
            if (out != NULL)
                ((uint4 *)out)[g] = x.u;
        }
        j0 = groups * 8;
    }
    for (int j = j0 + threadIdx.x; j < V; j += blockDim.x) {
        float y = f(j, g3_bf2f(row[j]));
        if (out != NULL)
            out[j] = g3_f2bf(y);
    }
}

/* OUT: *m_p, *s_p for the block's row (every thread gets them).  vec: the row is 16-byte
 * aligned, so whole groups of 8 columns are read as uint4.  shm: 32 floats. */
__device__ __forceinline__ void g3_xent_row_stats(const bf16 *row, int V, bool vec, float *shm,
                                                  float *m_p, float *s_p)
{
    float m = -INFINITY, s = 0.0f;

    g3_xent_row_map((bf16 *)NULL, row, V, vec, [&](int, float x) {
        g3_xent_fold(m, s, x);
        return x;
    });
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
    g3_xent_row_map(drow, row, V, vec, [&](int j, float x) {
        return ignore ? 0.0f : (__expf(x - lse) - (j == t ? 1.0f : 0.0f)) * dloss;
    });
    for (int j = V + threadIdx.x; j < ld; j += blockDim.x)
        drow[j] = g3_f2bf(0.0f);
}

#endif

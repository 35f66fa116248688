/* Host emulation of the CUDA features the kernels use, so that their device code (the part of
 * each kernels/<op>.cu file above its "host launcher" marker) runs on a CPU without a GPU:
 *   - a block is blockDim host threads (std::thread), blocks run one after another;
 *   - __syncthreads / __syncwarp are std::barrier waits of the block / of the 32-lane warp;
 *   - __shfl_xor_sync exchanges through a per-warp buffer between two warp barriers;
 *   - WMMA: every lane holds the whole 16x16 fragment; load/store/mma are warp-collective
 *     (barriers around them, lane 0 stores), products summed in fp32;
 *   - dynamic shared memory is one static array, filled with 0xff before each block;
 *     static __shared__ arrays become function statics (blocks never run concurrently).
 * It checks the kernels' indexing, masking, tiling and reductions, not timing, memory
 * ordering subtleties beyond the barriers, or the tensor cores' exact rounding.
 * Used by tests/kernels/test_emulated.sh (make check-long); C++20. */
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

struct emu_dim3 {
    unsigned x = 1, y = 1, z = 1;
};
inline thread_local emu_dim3 emu_threadIdx, emu_blockIdx;
inline emu_dim3 emu_blockDim, emu_gridDim;
inline std::barrier<> *emu_block_bar;
inline std::barrier<> *emu_warp_bar[32];
inline float emu_xbuf_f[32][32];
inline double emu_xbuf_d[32][32];

#undef __global__
#undef __device__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#undef __align__
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(x) alignas(x)
#define threadIdx emu_threadIdx
#define blockIdx emu_blockIdx
#define blockDim emu_blockDim
#define gridDim emu_gridDim

using std::max;
using std::min;

inline void __syncthreads() { emu_block_bar->arrive_and_wait(); }

inline void __syncwarp(unsigned = 0xffffffffu)
{
    unsigned t = threadIdx.x + threadIdx.y * blockDim.x;
    emu_warp_bar[t >> 5]->arrive_and_wait();
}

template <typename T>
inline T emu_shfl_xor(T v, int o, T (*buf)[32])
{
    unsigned t = threadIdx.x + threadIdx.y * blockDim.x, w = t >> 5, l = t & 31;
    buf[w][l] = v;
    __syncwarp();
    T r = buf[w][l ^ o];
    __syncwarp();
    return r;
}
inline float __shfl_xor_sync(unsigned, float v, int o) { return emu_shfl_xor(v, o, emu_xbuf_f); }
inline double __shfl_xor_sync(unsigned, double v, int o) { return emu_shfl_xor(v, o, emu_xbuf_d); }
inline float __expf(float x) { return expf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }

namespace nvcuda {
namespace wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class L = void>
struct fragment {
    float x[256];
};

template <class F>
inline void fill_fragment(F &f, float v)
{
    for (auto &e : f.x)
        e = v;
}

inline float emu_f(float v) { return v; }
inline float emu_f(__nv_bfloat16 v) { return __bfloat162float(v); }

/* A warp's load of a 16 x 16 tile: x[i * 16 + j] = p[i * si + j * sj] (row- or column-major
 * memory by the strides), synchronised on both sides as the real load is. */
template <class T>
inline void emu_load16(float *x, const T *p, unsigned si, unsigned sj)
{
    __syncwarp();
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++)
            x[i * 16 + j] = emu_f(p[i * si + j * sj]);
    __syncwarp();
}

template <class T>
inline void load_matrix_sync(fragment<matrix_a, 16, 16, 16, T, row_major> &f, const T *p,
                             unsigned ld)
{
    emu_load16(f.x, p, ld, 1);
}

template <class T>
inline void load_matrix_sync(fragment<matrix_b, 16, 16, 16, T, row_major> &f, const T *p,
                             unsigned ld)
{
    emu_load16(f.x, p, ld, 1);
}

template <class T>
inline void load_matrix_sync(fragment<matrix_b, 16, 16, 16, T, col_major> &f, const T *p,
                             unsigned ld)
{
    emu_load16(f.x, p, 1, ld);
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p,
                             unsigned ld, layout_t l)
{
    if (l == mem_row_major)
        emu_load16(f.x, p, ld, 1);
    else
        emu_load16(f.x, p, 1, ld);
}

inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,
                              unsigned ld, layout_t l)
{
    __syncwarp();
    if (((threadIdx.x + threadIdx.y * blockDim.x) & 31) == 0)
        for (int m = 0; m < 16; m++)
            for (int n = 0; n < 16; n++)
                (l == mem_row_major ? p[m * ld + n] : p[n * ld + m]) = f.x[m * 16 + n];
    __syncwarp();
}

template <class A, class B>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d, const A &a, const B &b,
                     const fragment<accumulator, 16, 16, 16, float> &c)
{
    float r[256];
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            float s = c.x[m * 16 + n];
            for (int k = 0; k < 16; k++)
                s += a.x[m * 16 + k] * b.x[k * 16 + n];
            r[m * 16 + n] = s;
        }
    memcpy(d.x, r, sizeof(r));
}
}  // namespace wmma
}  // namespace nvcuda

/* the attention kernels' dynamic shared memory */
alignas(128) inline unsigned char g3_att_smem[256 * 1024];
#define g3_lnb_smem ((float *)g3_att_smem)   /* layernorm_bwd.cu's warp kernel */

/* Run fn (a kernel call) for every block of grid, block.x * block.y threads each: one host
 * thread per CUDA thread, walking the blocks in order together (a barrier between blocks, the
 * shared memory refilled with 0xff before each). */
inline void emu_launch2(emu_dim3 grid, emu_dim3 block, const std::function<void()> &fn)
{
    unsigned threads = block.x * block.y;
    std::barrier<> bb(threads);
    std::vector<std::unique_ptr<std::barrier<>>> wb;

    emu_gridDim = grid;
    emu_blockDim = block;
    for (unsigned w = 0; w < (threads + 31) / 32; w++) {
        wb.emplace_back(new std::barrier<>(threads - 32 * w < 32 ? threads - 32 * w : 32));
        emu_warp_bar[w] = wb.back().get();
    }
    emu_block_bar = &bb;
    std::vector<std::thread> th;
    for (unsigned t = 0; t < threads; t++)
        th.emplace_back([&, t] {
            emu_threadIdx.x = t % block.x;
            emu_threadIdx.y = t / block.x;
            for (unsigned by = 0; by < grid.y; by++)
                for (unsigned bx = 0; bx < grid.x; bx++) {
                    if (t == 0)
                        memset(g3_att_smem, 0xff, sizeof(g3_att_smem));
                    bb.arrive_and_wait();
                    emu_blockIdx.x = bx;
                    emu_blockIdx.y = by;
                    fn();
                    bb.arrive_and_wait();
                }
        });
    for (auto &x : th)
        x.join();
}

inline void emu_launch(emu_dim3 grid, unsigned threads, const std::function<void()> &fn)
{
    emu_launch2(grid, {threads, 1, 1}, fn);
}

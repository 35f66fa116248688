/* The cuBLASLt bf16 GEMM ceiling on this GPU: D (M,N) bf16 = A (M,K) B^T, fp32 accumulation,
 * the layout of a linear layer's forward.  Asks cuBLASLt's heuristic for up to 8 algorithms,
 * times each (CUDA events, after warm-up) and prints the heuristic's first choice (what
 * g3cuda_gemm uses) and the fastest.  Not a test: tests/kernels/bench_gpu.sh runs it.
 *
 *   bench_gemm [M N K [ITERS]]      default 8192 8192 8192 20
 *
 * Prints "first: ... TFLOP/s" and "best: ... TFLOP/s"; exits 1 without a usable GPU. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"   /* cublasLtLoggerForceDisable() */
#include <cublasLt.h>
#pragma GCC diagnostic pop
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "g3cuda.h"

static int check_cuda(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    fprintf(stderr, "bench_gemm: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

static int check_lt(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    fprintf(stderr, "bench_gemm: %s: %s\n", what, cublasLtGetStatusString(s));
    return 1;
}

int main(int argc, char **argv)
{
    int M = argc > 3 ? atoi(argv[1]) : 8192, N = argc > 3 ? atoi(argv[2]) : 8192;
    int K = argc > 3 ? atoi(argv[3]) : 8192, iters = argc > 4 ? atoi(argv[4]) : 20;
    char why[256];
    int ndev = 0, nres = 0, best = -1;
    double best_ms = 1e30, first_ms = -1.0;
    size_t ws_bytes = (size_t)32 << 20;
    void *A = NULL, *B = NULL, *D = NULL, *ws = NULL;
    cublasLtHandle_t lt = NULL;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res[8];
    cublasOperation_t tA = CUBLAS_OP_T, tB = CUBLAS_OP_N;
    cudaEvent_t e0, e1;
    cudaStream_t s;
    float alpha = 1.0f, beta = 0.0f;
    struct cudaDeviceProp prop;

    if (M <= 0 || N <= 0 || K <= 0 || iters <= 0) {
        fprintf(stderr, "usage: bench_gemm [M N K [ITERS]] (positive integers)\n");
        return 2;
    }
    if (g3cuda_device_count(&ndev, why, sizeof(why)) != 0) {
        fprintf(stderr, "bench_gemm: no CUDA device: %s\n", why);
        return 1;
    }
    if (check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties") ||
        check_cuda(cudaStreamCreate(&s), "cudaStreamCreate") ||
        check_cuda(cudaMalloc(&A, 2 * (size_t)M * K), "cudaMalloc A") ||
        check_cuda(cudaMalloc(&B, 2 * (size_t)N * K), "cudaMalloc B") ||
        check_cuda(cudaMalloc(&D, 2 * (size_t)M * N), "cudaMalloc D") ||
        check_cuda(cudaMalloc(&ws, ws_bytes), "cudaMalloc workspace") ||
        check_cuda(cudaMemset(A, 0, 2 * (size_t)M * K), "cudaMemset") ||
        check_cuda(cudaMemset(B, 0, 2 * (size_t)N * K), "cudaMemset"))
        return 1;
    /* column-major D^T (N x M) = B (N x K, stored K x N: transposed) . A^T (K x M) */
    if (check_lt(cublasLtCreate(&lt), "cublasLtCreate") ||
        check_lt(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc") ||
        check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tA,
                                                sizeof(tA)), "TRANSA") ||
        check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tB,
                                                sizeof(tB)), "TRANSB") ||
        check_lt(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, K, N, K), "layout B") ||
        check_lt(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, K, M, K), "layout A") ||
        check_lt(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, N, M, N), "layout D") ||
        check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference") ||
        check_lt(cublasLtMatmulPreferenceSetAttribute(pref,
                 CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes)),
                 "max workspace") ||
        check_lt(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 8, res, &nres),
                 "heuristic"))
        return 1;
    if (nres == 0) {
        fprintf(stderr, "bench_gemm: cuBLASLt has no algorithm for %d x %d x %d\n", M, N, K);
        return 1;
    }
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int i = 0; i < nres; i++) {
        float ms = 0.0f;
        int ok = 1;
        for (int w = 0; w < 3 && ok; w++)
            ok = cublasLtMatmul(lt, op, &alpha, B, la, A, lb, &beta, D, ld, D, ld, &res[i].algo,
                                ws, ws_bytes, s) == CUBLAS_STATUS_SUCCESS;
        if (!ok)
            continue;
        cudaEventRecord(e0, s);
        for (int it = 0; it < iters; it++)
            cublasLtMatmul(lt, op, &alpha, B, la, A, lb, &beta, D, ld, D, ld, &res[i].algo, ws,
                           ws_bytes, s);
        cudaEventRecord(e1, s);
        if (check_cuda(cudaEventSynchronize(e1), "running the GEMM"))
            return 1;
        cudaEventElapsedTime(&ms, e0, e1);
        double per = ms / iters;
        if (i == 0)
            first_ms = per;
        if (per < best_ms) {
            best_ms = per;
            best = i;
        }
    }
    if (best < 0) {
        fprintf(stderr, "bench_gemm: none of the %d algorithms ran\n", nres);
        return 1;
    }
    double flops = 2.0 * M * (double)N * K;
    printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    printf("gemm bf16 %d x %d x %d (fp32 accumulation), %d algorithms tried, %d iterations\n",
           M, N, K, nres, iters);
    if (first_ms > 0.0)
        printf("first: %.3f ms, %.1f TFLOP/s (the heuristic's choice, used by g3cuda_gemm)\n",
               first_ms, flops / (first_ms * 1e-3) / 1e12);
    printf("best: %.3f ms, %.1f TFLOP/s (algorithm %d)\n", best_ms,
           flops / (best_ms * 1e-3) / 1e12, best);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(lt);
    cudaFree(A);
    cudaFree(B);
    cudaFree(D);
    cudaFree(ws);
    return 0;
}

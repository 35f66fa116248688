/* The CUDA context: device, stream, cuBLASLt handle and workspace, scratch memory and the
 * sticky first-error slot every op reports into (see g3cuda.h for the error contract). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g3cuda_internal.cuh"

int g3cuda_fail(g3cuda_ctx_t *ctx, int err, const char *fmt, ...)
{
    va_list ap;

    if (ctx->err == 0) {
        ctx->err = err;
        va_start(ap, fmt);
        vsnprintf(ctx->err_msg, sizeof(ctx->err_msg), fmt, ap);
        va_end(ap);
    }
    return err;
}

extern "C" int g3cuda_ctx_fail(g3cuda_ctx_t *ctx, int err, const char *msg)
{
    return g3cuda_fail(ctx, err, "%s", msg);
}

int g3cuda_check_launch(g3cuda_ctx_t *ctx, const char *op)
{
    cudaError_t e = cudaGetLastError();

    if (e == cudaSuccess)
        return 0;
    return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "%s: kernel launch failed: %s", op,
                       cudaGetErrorString(e));
}

void *g3cuda_scratch(g3cuda_ctx_t *ctx, size_t bytes, const char *op)
{
    cudaError_t e;
    size_t want;

    if (bytes <= ctx->scratch_bytes)
        return ctx->scratch;
    /* Earlier ops may still read the old block: wait before giving it back. */
    e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) {
        g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "%s: waiting for the stream to grow scratch: %s", op,
                    cudaGetErrorString(e));
        return NULL;
    }
    cudaFree(ctx->scratch);
    ctx->scratch = NULL;
    ctx->scratch_bytes = 0;
    want = G3CUDA_SCRATCH_ROOM(bytes);
    e = cudaMalloc(&ctx->scratch, want);
    if (e != cudaSuccess) {
        ctx->scratch = NULL;
        g3cuda_fail(ctx, G3CUDA_ERR_NOMEM, "%s: cannot allocate %zu bytes of scratch: %s", op,
                    want, cudaGetErrorString(e));
        return NULL;
    }
    ctx->scratch_bytes = want;
    return ctx->scratch;
}

int g3cuda_smem_optin(g3cuda_ctx_t *ctx, const void *kernel, size_t bytes, const char *op)
{
    cudaError_t e;

    if (bytes > ctx->smem_optin)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG,
                           "%s: needs %zu bytes of shared memory per block, %s allows %zu",
                           op, bytes, ctx->name, ctx->smem_optin);
    if (bytes <= 48 * 1024)
        return 0;
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess)
        return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "%s: cudaFuncSetAttribute(%zu bytes): %s", op,
                           bytes, cudaGetErrorString(e));
    return 0;
}

extern "C" int g3cuda_ctx_create(int device, size_t workspace_bytes, g3cuda_ctx_t **ctx_p,
                                 char *why, size_t why_len)
{
    g3cuda_ctx_t *ctx;
    cudaDeviceProp prop;
    cudaError_t e;
    int optin = 0, err = G3CUDA_ERR_CUDA;

    ctx = (g3cuda_ctx_t *)calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        snprintf(why, why_len, "out of host memory for the CUDA context");
        return G3CUDA_ERR_NOMEM;
    }
    ctx->device = device;
    e = cudaSetDevice(device);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cudaSetDevice(%d): %s", device, cudaGetErrorString(e));
        goto err_free_ctx;
    }
    e = cudaGetDeviceProperties(&prop, device);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cudaGetDeviceProperties(%d): %s", device, cudaGetErrorString(e));
        goto err_free_ctx;
    }
    ctx->sm_count = prop.multiProcessorCount;
    ctx->cc_major = prop.major;
    ctx->cc_minor = prop.minor;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    ctx->smem_optin = (size_t)optin;
    snprintf(ctx->name, sizeof(ctx->name), "%s (sm_%d%d, %d SMs)", prop.name, prop.major,
             prop.minor, prop.multiProcessorCount);
    if (prop.major < 8) {
        snprintf(why, why_len,
                 "%s: the bf16 tensor-core kernels need compute capability 8.0 (A100) or newer",
                 ctx->name);
        err = G3CUDA_ERR_ARG;
        goto err_free_ctx;
    }
    e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cudaStreamCreate: %s", cudaGetErrorString(e));
        goto err_free_ctx;
    }
    ctx->workspace_bytes = workspace_bytes ? workspace_bytes : (size_t)32 << 20;
    e = cudaMalloc(&ctx->workspace, ctx->workspace_bytes);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cudaMalloc of the %zu-byte cuBLASLt workspace: %s",
                 ctx->workspace_bytes, cudaGetErrorString(e));
        goto err_destroy_stream;
    }
#ifdef HAVE_CUBLAS
    {
        cublasStatus_t s = cublasLtCreate(&ctx->lt);
        if (s != CUBLAS_STATUS_SUCCESS) {
            snprintf(why, why_len, "cublasLtCreate: %s", cublasLtGetStatusString(s));
            goto err_free_workspace;
        }
    }
#endif
    *ctx_p = ctx;
    return 0;

#ifdef HAVE_CUBLAS
err_free_workspace:
    cudaFree(ctx->workspace);
#endif
err_destroy_stream:
    cudaStreamDestroy(ctx->stream);
err_free_ctx:
    free(ctx);
    return err;
}

extern "C" void g3cuda_ctx_destroy(g3cuda_ctx_t *ctx)
{
    if (ctx == NULL)
        return;
    cudaStreamSynchronize(ctx->stream);
#ifdef HAVE_CUBLAS
    for (int i = 0; i < G3CUDA_GEMM_CACHE; i++) {
        g3cuda_gemm_plan_t *p = &ctx->gemm_plans[i];
        if (!p->used || p->none)
            continue;
        cublasLtMatrixLayoutDestroy(p->a);
        cublasLtMatrixLayoutDestroy(p->b);
        cublasLtMatrixLayoutDestroy(p->d);
        cublasLtMatmulDescDestroy(p->op);
    }
    cublasLtDestroy(ctx->lt);
#endif
    cudaFree(ctx->scratch);
    cudaFree(ctx->workspace);
    cudaStreamDestroy(ctx->stream);
    free(ctx);
}

extern "C" void g3cuda_ctx_set_gemm_autotune(g3cuda_ctx_t *ctx, int on)
{
    ctx->gemm_autotune = on != 0;
}

extern "C" void g3cuda_ctx_set_ln_bwd_block(g3cuda_ctx_t *ctx, int on)
{
    ctx->ln_bwd_block = on != 0;
}

extern "C" void g3cuda_ctx_set_log(g3cuda_ctx_t *ctx, void (*log)(const char *msg))
{
    ctx->log = log;
}

extern "C" void *g3cuda_ctx_stream(g3cuda_ctx_t *ctx)
{
    return (void *)ctx->stream;
}

extern "C" const char *g3cuda_ctx_device_name(const g3cuda_ctx_t *ctx)
{
    return ctx->name;
}

extern "C" int g3cuda_ctx_sync(g3cuda_ctx_t *ctx, char *why, size_t why_len)
{
    cudaError_t e = cudaStreamSynchronize(ctx->stream);
    int err;

    if (e != cudaSuccess)
        g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "a kernel failed (found at sync): %s",
                    cudaGetErrorString(e));
    err = ctx->err;
    if (why != NULL && why_len > 0)
        snprintf(why, why_len, "%s", err ? ctx->err_msg : "");
    ctx->err = 0;
    ctx->err_msg[0] = '\0';
    return err;
}

extern "C" const char *g3cuda_ctx_error(const g3cuda_ctx_t *ctx)
{
    return ctx->err ? ctx->err_msg : "";
}

extern "C" int g3cuda_malloc(g3cuda_ctx_t *ctx, size_t bytes, const char *what, void **ptr_p)
{
    void *p = NULL;
    cudaError_t e;

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess)
        return g3cuda_fail(ctx, G3CUDA_ERR_NOMEM,
                           "cannot allocate %zu bytes of device memory for %s on %s: %s", bytes,
                           what, ctx->name, cudaGetErrorString(e));
    *ptr_p = p;
    return 0;
}

extern "C" void g3cuda_free(g3cuda_ctx_t *ctx, void *ptr)
{
    (void)ctx;
    if (ptr != NULL)
        cudaFree(ptr);
}

extern "C" int g3cuda_upload(g3cuda_ctx_t *ctx, void *dst, const void *host_src, size_t bytes)
{
    cudaError_t e;

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    e = cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, ctx->stream);
    if (e == cudaSuccess)   /* pageable host memory: wait so the caller may reuse host_src */
        e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess)
        return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "upload of %zu bytes: %s", bytes,
                           cudaGetErrorString(e));
    return 0;
}

extern "C" int g3cuda_download(g3cuda_ctx_t *ctx, void *host_dst, const void *src, size_t bytes)
{
    cudaError_t e;

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    e = cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, ctx->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess)
        return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "download of %zu bytes: %s", bytes,
                           cudaGetErrorString(e));
    return 0;
}

extern "C" int g3cuda_zero(g3cuda_ctx_t *ctx, void *ptr, size_t bytes)
{
    cudaError_t e;

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    e = cudaMemsetAsync(ptr, 0, bytes, ctx->stream);
    if (e != cudaSuccess)
        return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "zeroing %zu bytes: %s", bytes,
                           cudaGetErrorString(e));
    return 0;
}

/* ---- host staging, device identity, timing events (g3cuda.h) ---------------------------- */

extern "C" int g3cuda_host_alloc(g3cuda_ctx_t *ctx, size_t bytes, void **ptr_p, char *why,
                                 size_t why_len)
{
    void *p = NULL;
    /* Any thread: its current device is the context's (a fresh thread's is device 0, whose
     * context would own the pinning); nothing of ctx's queued state is touched. */
    cudaError_t e = cudaSetDevice(ctx->device);

    if (e == cudaSuccess)
        e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cannot allocate %zu bytes of page-locked host memory: %s", bytes,
                 cudaGetErrorString(e));
        return G3CUDA_ERR_NOMEM;
    }
    *ptr_p = p;
    return 0;
}

extern "C" void g3cuda_host_free(g3cuda_ctx_t *ctx, void *ptr)
{
    (void)ctx;
    if (ptr != NULL)
        cudaFreeHost(ptr);
}

extern "C" int g3cuda_ctx_bus_id(g3cuda_ctx_t *ctx, char *buf, size_t len)
{
    cudaError_t e = cudaDeviceGetPCIBusId(buf, (int)len, ctx->device);
    if (e != cudaSuccess)
        return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "cudaDeviceGetPCIBusId(%d): %s", ctx->device,
                           cudaGetErrorString(e));
    return 0;
}

extern "C" int g3cuda_event_create(g3cuda_ctx_t *ctx, void **event_p)
{
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreate(&ev);
    if (e != cudaSuccess)
        return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "cudaEventCreate: %s", cudaGetErrorString(e));
    *event_p = (void *)ev;
    return 0;
}

extern "C" void g3cuda_event_destroy(g3cuda_ctx_t *ctx, void *event)
{
    (void)ctx;
    if (event != NULL)
        cudaEventDestroy((cudaEvent_t)event);
}

extern "C" int g3cuda_event_record(g3cuda_ctx_t *ctx, void *event)
{
    cudaError_t e = cudaEventRecord((cudaEvent_t)event, ctx->stream);
    if (e != cudaSuccess)
        return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "cudaEventRecord: %s", cudaGetErrorString(e));
    return 0;
}

extern "C" int g3cuda_event_elapsed(g3cuda_ctx_t *ctx, void *start, void *end, float *ms_p)
{
    cudaError_t e = cudaEventSynchronize((cudaEvent_t)end);
    if (e == cudaSuccess)
        e = cudaEventElapsedTime(ms_p, (cudaEvent_t)start, (cudaEvent_t)end);
    if (e != cudaSuccess)
        return g3cuda_fail(ctx, G3CUDA_ERR_CUDA, "timing event: %s", cudaGetErrorString(e));
    return 0;
}

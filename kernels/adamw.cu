/* AdamW on fp32 master weights, writing the bf16 copy the forward pass reads (round to
 * nearest even).  The bias corrections are computed on the host in double; the gradient
 * scale (clipping) is read on the device so no host round trip is needed.
 * master, grad, m, v (n,) fp32  param (n,) bf16 or NULL  grad_scale (1,) fp32 or NULL */
#include <math.h>

#include "g3cuda_internal.cuh"

__global__ void g3_adamw_kernel(float *master, bf16 *param, const float *grad, float *m,
                                float *v, size_t n, float decay, float beta1, float beta2,
                                float step_size, float bc2_sqrt, float eps,
                                const float *grad_scale)
{
    float scale = grad_scale != NULL ? *grad_scale : 1.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = grad[i] * scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        float p = master[i] * decay;
        p -= step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
        m[i] = mi;
        v[i] = vi;
        master[i] = p;
        if (param != NULL)
            param[i] = g3_f2bf(p);
    }
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_adamw(g3cuda_ctx_t *ctx, float *master, g3cuda_bf16_t *param,
                            const float *grad, float *m, float *v, size_t n, float lr,
                            float beta1, float beta2, float eps, float wd, int64_t step,
                            const float *grad_scale)
{
    double bc1 = 1.0 - pow(beta1, (double)step), bc2 = 1.0 - pow(beta2, (double)step);
    unsigned blocks = g3cuda_blocks(n, 256, (unsigned)ctx->sm_count * 16);
    int rc;

    if (!g3cuda_ew_ready(ctx, "adamw", n, master == NULL || grad == NULL || m == NULL || v == NULL,
                         &rc))
        return rc;
    if (step < 1)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "adamw: step %lld, must count from 1",
                           (long long)step);
    g3_adamw_kernel<<<blocks, 256, 0, ctx->stream>>>(master, (bf16 *)param, grad, m, v, n,
                                                    1.0f - lr * wd, beta1, beta2,
                                                    (float)(lr / bc1), (float)sqrt(bc2), eps,
                                                    grad_scale);
    return g3cuda_check_launch(ctx, "adamw");
}

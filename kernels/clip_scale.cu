/* Gradient clipping factor from the global sum of squares, on the device (no host round trip):
 * norm = sqrt(sumsq); coeff = max_norm / (norm + 1e-6); scale = coeff if max_norm > 0 and
 * coeff < 1, else 1 (the CPU trainer's rule, src/train/optim.c).  A NaN/Inf norm leaves
 * scale 1: the caller checks the norm and skips the step.
 * scale, norm (1,) fp32  sumsq (1,) fp64 */
#include "g3cuda_internal.cuh"

__global__ void g3_clip_scale_kernel(float *scale, float *norm, const double *sumsq,
                                     float max_norm)
{
    double nr = sqrt(*sumsq);
    float s = 1.0f;
    if (max_norm > 0.0f && isfinite(nr)) {
        double coeff = (double)max_norm / (nr + 1e-6);
        if (coeff < 1.0)
            s = (float)coeff;
    }
    *scale = s;
    if (norm != NULL)
        *norm = (float)nr;
}

/* ---- host launcher (tests/kernels/emu cuts the file here) ---- */

extern "C" int g3cuda_clip_scale(g3cuda_ctx_t *ctx, float *scale, float *norm,
                                 const double *sumsq, float max_norm)
{
    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (scale == NULL || sumsq == NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "clip_scale: NULL tensor");
    if ((uintptr_t)sumsq % sizeof(double) != 0 || (uintptr_t)scale % sizeof(float) != 0 ||
        (uintptr_t)norm % sizeof(float) != 0)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG,
                           "clip_scale: sumsq %p / scale %p / norm %p misaligned (the GPU faults on it)",
                           (const void *)sumsq, (void *)scale, (void *)norm);
    g3_clip_scale_kernel<<<1, 1, 0, ctx->stream>>>(scale, norm, sumsq, max_norm);
    return g3cuda_check_launch(ctx, "clip_scale");
}

/* gpt3d backend: opening a backend by name, and the element types' host conversions. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#ifdef HAVE_CUDA
#include "g3cuda.h"
#endif
#include "core/bf16.h"
#include "core/log.h"

size_t g3_be_dtype_size(g3_be_dtype_t t)
{
    return t == G3_BE_BF16 ? 2 : 4;
}

void g3_be_convert(void *dst, g3_be_dtype_t dst_t, const void *src, g3_be_dtype_t src_t,
                   size_t n)
{
    if (dst_t == src_t) {
        if (n && dst != src)
            memmove(dst, src, n * g3_be_dtype_size(dst_t));
    } else if (dst_t == G3_BE_BF16) {
        const float *s = src;
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = g3_bf16_from_f32(s[i]);
    } else {
        const uint16_t *s = src;
        float *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = g3_bf16_to_f32(s[i]);
    }
}

int g3_be_fused_wanted(int dflt)
{
    const char *v = getenv("GPT3D_FUSED_OPS");

    if (!v || !*v)
        return dflt;
    if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)
        return v[0] == '1';
    g3_warn("GPT3D_FUSED_OPS='%s' is neither 0 nor 1; ignoring it (the backend's default: %s)",
            v, dflt ? "fused" : "not fused");
    return dflt;
}

g3_status_t g3_be_check_sizes(const char *name, int C, int NH, int HS, int F, int Vp,
                              char *why, size_t why_len)
{
    (void)NH;
    if (name == NULL || strcmp(name, "cuda") != 0)
        return G3_OK;
    if (C > 24576) {   /* G3CUDA_LN_MAX_C (kernels/g3cuda.h) */
        snprintf(
            why, why_len,
            "--device cuda: hidden size %d is more than 24576, the largest the LayerNorm kernels are compiled for; give a smaller --hidden-size (and more layers), or use --device cpu",
            C);
        return G3_ERR_UNSUPPORTED;
    }
    if (HS != 32 && HS != 64 && HS != 80 && HS != 96 && HS != 128 && HS != 160) {
        snprintf(
            why, why_len,
            "--device cuda: head size %d (--hidden-size / --num-attention-heads) is not one the flash-attention kernels are compiled for (32, 64, 80, 96, 128, 160); choose sizes that give one of these, or use --device cpu",
            HS);
        return G3_ERR_UNSUPPORTED;
    }
    if (C % 8 != 0 || F % 8 != 0 || Vp % 8 != 0) {
        snprintf(
            why, why_len,
            "--device cuda: hidden size %d, MLP size %d and padded vocabulary rows per tensor-parallel rank %d must be multiples of 8 (16-byte bf16 rows for the tensor cores); change --hidden-size / --ffn-hidden-size / --make-vocab-size-divisible-by, or use --device cpu",
            C, F, Vp);
        return G3_ERR_UNSUPPORTED;
    }
    return G3_OK;
}

void g3_be_print_devices(FILE *out)
{
#ifdef HAVE_CUDA
    int n = 0;
    char why[256];
    if (g3cuda_device_count(&n, why, sizeof(why)) == 0)
        fprintf(out, "cuda devices: %d\n", n);
    else
        fprintf(out, "cuda devices: none (%s)\n", why);
#else
    (void)out;
#endif
}

g3_status_t g3_be_probe(const char *name, char *why, size_t why_len)
{
    if (name == NULL || strcmp(name, "cpu") == 0)
        return G3_OK;
    if (strcmp(name, "cuda") != 0) {
        snprintf(why, why_len, "compute backend '%s' is not built into this gpt3d (available: "
#ifdef HAVE_CUDA
                 "cpu, cuda"
#else
                 "cpu"
#endif
                 ")", name);
        return G3_ERR_UNSUPPORTED;
    }
#ifdef HAVE_CUDA
    {
        char reason[512];
        int count = 0;
        if (g3cuda_device_count(&count, reason, sizeof(reason)) != 0 || count < 1) {
            snprintf(
                why, why_len,
                "--device cuda: no usable CUDA device: %s. Run on a node with an NVIDIA GPU (check nvidia-smi, CUDA_VISIBLE_DEVICES and that the driver supports this CUDA toolkit) or use --device cpu",
                reason);
            return G3_ERR_DEVICE;
        }
    }
    return G3_OK;
#else
    snprintf(
        why, why_len,
        "this gpt3d was built without CUDA; reconfigure with --with-cuda (on a machine with the CUDA toolkit) and rebuild, or use --device cpu");
    return G3_ERR_UNSUPPORTED;
#endif
}

g3_status_t g3_be_open(const char *name, int nthreads, g3_backend_t **be_p)
{
    char why[768];
    g3_status_t st;

    if (name == NULL || strcmp(name, "cpu") == 0)
        return g3_be_cpu_open(nthreads, be_p);
    st = g3_be_probe(name, why, sizeof(why));
    if (st != G3_OK) {
        g3_error("%s", why);
        return st;
    }
#ifdef HAVE_CUDA
    return g3_be_cuda_open(-1, nthreads, be_p);
#else
    return G3_ERR_INTERNAL;   /* g3_be_probe refused every other name */
#endif
}

void g3_be_close(g3_backend_t *be)
{
    if (be != NULL)
        be->ops->close(be);
}

g3_status_t g3_be_clip_alloc(g3_backend_t *be, double **sumsq_p, float **scale_p)
{
    void *buf = NULL;
    g3_status_t st;

    *sumsq_p = NULL;
    *scale_p = NULL;
    if (!be->ops->sumsq_acc || !be->ops->clip_scale || !be->ops->adamw_scaled)
        return G3_OK;
    st = be->ops->alloc(be, 16, "the gradient norm and clipping scale", &buf);
    if (st != G3_OK)
        return st;
    *sumsq_p = buf;
    *scale_p = (float *)((char *)buf + 8);
    return G3_OK;
}

/* gpt3d CUDA backend: its row of the table of kinds (backend.h), compiled in every build so
 * that gpt3d plan and the trainer's early checks know CUDA's size rules and buffer sizes on a
 * machine without CUDA.  The backend itself (the row's open) is cuda.c, compiled only with
 * CUDA (HAVE_CUDA). */
#include "config.h"

#include <stdio.h>

#include "backend/cudnn_att.h"
#include "backend/kinds.h"
#include "g3cuda.h"   /* declarations and sizes only: every build */

static g3_status_t g3_cuda_kind_probe(char *why, size_t why_len)
{
#ifdef HAVE_CUDA
    char reason[512];
    int count = 0;

    if (g3cuda_device_count(&count, reason, sizeof(reason)) != 0 || count < 1) {
        snprintf(
            why, why_len,
            "--device cuda: no usable CUDA device: %s. Run on a node with an NVIDIA GPU (check nvidia-smi, CUDA_VISIBLE_DEVICES and that the driver supports this CUDA toolkit) or use --device cpu",
            reason);
        return G3_ERR_DEVICE;
    }
    return G3_OK;
#else
    snprintf(
        why, why_len,
        "this gpt3d was built without CUDA; reconfigure with --with-cuda (on a machine with the CUDA toolkit) and rebuild, or use --device cpu");
    return G3_ERR_UNSUPPORTED;
#endif
}

static g3_status_t g3_cuda_kind_check_sizes(const g3_be_opts_t *o, int C, int NH, int HS, int F,
                                            int Vp, char *why, size_t why_len)
{
    char sizes[64];   /* the head sizes in words, for the message */

    (void)o;
    (void)NH;
    if (C > G3CUDA_LN_MAX_C) {
        snprintf(
            why, why_len,
            "--device cuda: hidden size %d is more than %d, the largest the LayerNorm kernels are compiled for; give a smaller --hidden-size (and more layers), or use --device cpu",
            C, G3CUDA_LN_MAX_C);
        return G3_ERR_UNSUPPORTED;
    }
    if (!g3cuda_att_head_size_ok(HS)) {
        snprintf(
            why, why_len,
            "--device cuda: head size %d (--hidden-size / --num-attention-heads) is not one the flash-attention kernels are compiled for (%s); choose sizes that give one of these, or use --device cpu",
            HS, g3cuda_att_head_sizes_text(sizes, sizeof(sizes)));
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

/* Flash-style attention: the state is the (B,NH,T) fp32 log-sum-exp beside the output; the
 * backward recomputes the probabilities tile by tile, so it needs no scratch. */
static size_t g3_cuda_kind_att_state(const g3_be_opts_t *o, int B, int T, int NH, int HS)
{
    (void)o;
    (void)HS;
    return (size_t)B * NH * T * sizeof(float);
}

/* The native backward needs no scratch; cuDNN's keeps its fp32 dQ accumulator and softmax sum
 * there (cudnn_att.h).  An open backend's options say what runs (its open resolves auto); a
 * plan's auto counts the native kernels, its cudnn cuDNN's scratch. */
static size_t g3_cuda_kind_att_scratch(const g3_be_opts_t *o, int B, int T, int NH, int HS)
{
    return o->attention == G3_BE_ATT_CUDNN
               ? g3_cudnn_att_scratch_bytes(B, T, NH, HS, o->deterministic)
               : 0;
}

/* Autotuning saves the largest accumulated fp32 product it tunes (G3CUDA_GEMM_TUNE_SAVE_MAX)
 * in the context's scratch, which allocates a quarter more (G3CUDA_SCRATCH_ROOM). */
static size_t g3_cuda_kind_tune_scratch(const double *out, int n)
{
    double big = 0.0;

    for (int i = 0; i < n; i++)
        if (out[i] <= (double)G3CUDA_GEMM_TUNE_SAVE_MAX && out[i] > big)
            big = out[i];
    return big > 0.0 ? G3CUDA_SCRATCH_ROOM((size_t)big) : 0;
}

/* --attention-backend cudnn in a build without cuDNN: refused before any work. */
static g3_status_t g3_cuda_kind_check_opts(const g3_be_opts_t *o, char *why, size_t why_len)
{
#ifdef HAVE_CUDNN
    (void)o;
    (void)why;
    (void)why_len;
#else
    if (o->attention == G3_BE_ATT_CUDNN) {
        snprintf(why, why_len, "--attention-backend cudnn: this gpt3d was built without cuDNN; reconfigure with --with-cudnn=DIR (cuDNN 9 or newer) and rebuild, or use --attention-backend auto or native");
        return G3_ERR_UNSUPPORTED;
    }
#endif
    return G3_OK;
}

const g3_be_kind_info_t g3_be_cuda_kind = {
    .kind = G3_BE_KIND_CUDA,
    .name = "cuda",
    .act_dtype = G3_BE_BF16,
    .caps = G3_BE_CAP_XENT_SHARDED,
    .check_opts = g3_cuda_kind_check_opts,
    .probe = g3_cuda_kind_probe,
    .check_sizes = g3_cuda_kind_check_sizes,
    .attention_state_bytes = g3_cuda_kind_att_state,
    .attention_scratch_bytes = g3_cuda_kind_att_scratch,
    .gemm_tune_scratch_bytes = g3_cuda_kind_tune_scratch,
    .linear_state_bytes = NULL,   /* bf16 products: no per-tensor state (FP8 will keep one) */
#ifdef HAVE_CUDA
    .open = g3_be_cuda_open,
#else
    .open = NULL,
#endif
};

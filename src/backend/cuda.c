/* gpt3d CUDA backend: the ops table of backend.h over the kernels of kernels/ (g3cuda.h).
 * Compiled only when configure found CUDA (HAVE_CUDA).
 *
 * Precision (docs/cuda.md, "Precision policy"): act_dtype is bf16, so activations and the
 * passes' parameters (the model's working copy) are bf16 in device memory; parameter gradients,
 * master weights, Adam moments, LayerNorm statistics, log-sum-exps and losses are fp32.
 * Every op queues work on the context's stream and returns; the first failure is kept by the
 * context (with the op's name and cause) and reported by ->sync, as backend.h requires.
 *
 * Shapes: N rows (B*T tokens), B micro-batch, T sequence, C hidden, NH heads, HS head size,
 * IC/OC in/out features, V (padded) vocabulary. */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kinds.h"
#include "backend/cudnn_att.h"
#include "core/log.h"
#include "core/param.h"
#include "g3cuda.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* Private state of the CUDA backend. */
typedef struct {
    g3cuda_ctx_t *ctx;
    int           device;
    double       *sumsq;   /* (1,) device: sumsq's accumulator */
    g3_backend_ops_t ops;  /* the table: the plain ops and (unless fused_ops is 0) the fused
                            * ones */
    g3_cudnn_t   *cudnn;   /* cuDNN's fused attention (cudnn_att.h), NULL: native kernels */
    int           bgrad;   /* bias gradients through the dW GEMM's BGRAD epilogue        */
    float        *bgrad_buf;   /* (bgrad_n,) its output before it is added to dbias      */
    int           bgrad_n;
} g3_cuda_t;

static g3cuda_ctx_t *g3_cuda_ctx_of(g3_backend_t *be)
{
    return ((g3_cuda_t *)be->priv)->ctx;
}

/* ---- memory ------------------------------------------------------------------------------- */

static g3_status_t g3_cuda_alloc(g3_backend_t *be, size_t bytes, const char *what, void **ptr_p)
{
    g3cuda_ctx_t *ctx = g3_cuda_ctx_of(be);
    char why[512];
    void *p = NULL;

    if (g3cuda_malloc(ctx, bytes ? bytes : 64, what ? what : "a tensor", &p) != 0) {
        g3cuda_ctx_sync(ctx, why, sizeof(why));   /* report and clear the recorded cause */
        g3_error(
            "CUDA backend: cannot allocate %.1f MiB of device memory for %s: %s; use a smaller model, micro batch or sequence, or --recompute-granularity full",
            (double)bytes / 1048576.0, what ? what : "a tensor", why);
        return G3_ERR_NO_MEMORY;
    }
    *ptr_p = p;
    return G3_OK;
}

static void g3_cuda_free(g3_backend_t *be, void *ptr)
{
    if (ptr)
        g3cuda_free(g3_cuda_ctx_of(be), ptr);
}

static void g3_cuda_upload(g3_backend_t *be, void *dst, const void *host_src, size_t bytes)
{
    if (bytes)
        g3cuda_upload(g3_cuda_ctx_of(be), dst, host_src, bytes);
}

static void g3_cuda_download(g3_backend_t *be, void *host_dst, const void *src, size_t bytes)
{
    if (bytes)
        g3cuda_download(g3_cuda_ctx_of(be), host_dst, src, bytes);
}

static void g3_cuda_zero(g3_backend_t *be, void *ptr, size_t bytes)
{
    if (bytes)
        g3cuda_zero(g3_cuda_ctx_of(be), ptr, bytes);
}

/* rc from a g3cuda call that records its cause: G3_OK, or the cause logged (through sync). */
static g3_status_t g3_cuda_status(g3_backend_t *be, int rc)
{
    g3_status_t st = rc == 0 ? G3_OK : be->ops->sync(be);
    return rc != 0 && st == G3_OK ? G3_ERR_DEVICE : st;
}

static g3_status_t g3_cuda_sync(g3_backend_t *be)
{
    g3_cuda_t *cu = be->priv;
    char why[1024];
    int rc = g3cuda_ctx_sync(cu->ctx, why, sizeof(why));

    if (rc == 0)
        return G3_OK;
    g3_error("CUDA backend (device %d, %s): %s", cu->device, be->device, why);
    return rc == G3CUDA_ERR_NOMEM         ? G3_ERR_NO_MEMORY
           : rc == G3CUDA_ERR_UNSUPPORTED ? G3_ERR_UNSUPPORTED
                                          : G3_ERR_DEVICE;
}

/* ---- embedding, layer norm ------------------------------------------------------------------ */

static void g3_cuda_embedding_fwd(g3_backend_t *be, void *out, const int32_t *tokens,
                                  const void *wte, const void *wpe, int B, int T, int C, int v0,
                                  int V)
{
    g3cuda_embedding_fwd(g3_cuda_ctx_of(be), out, tokens, wte, wpe, B, T, C, v0, V);
}

static void g3_cuda_embedding_bwd(g3_backend_t *be, float *dwte, float *dwpe, const void *dout,
                                  const int32_t *tokens, int B, int T, int C, int v0, int V)
{
    g3cuda_embedding_bwd(g3_cuda_ctx_of(be), dwte, dwpe, dout, tokens, B, T, C, v0, V);
}

static void g3_cuda_layernorm_fwd(g3_backend_t *be, void *out, float *mean, float *rstd,
                                  const void *inp, const void *w, const void *b, int N, int C,
                                  float eps)
{
    /* without the fused residual add: x = inp */
    g3cuda_layernorm_fwd(g3_cuda_ctx_of(be), NULL, out, mean, rstd, inp, NULL, w, b, N, C, eps);
}

static void g3_cuda_layernorm_bwd(g3_backend_t *be, void *dinp, float *dw, float *db,
                                  const void *dout, const void *inp, const void *w,
                                  const float *mean, const float *rstd, int N, int C)
{
    g3cuda_layernorm_bwd(g3_cuda_ctx_of(be), dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

/* ---- linear layers: the three products of g3cuda.h's gemm comment ---------------------------- */

/* out (N,OC) = inp (N,IC) . w (OC,IC)^T + bias (OC,); when pre is not NULL, out = gelu(that)
 * and pre (N,OC) = that, in one call (the GELU_AUX(_BIAS) epilogue, pre its aux output). */
static void g3_cuda_linear_fwd(g3_backend_t *be, void *out, void *pre, const void *inp,
                               const void *w, const void *bias, int N, int IC, int OC)
{
    g3cuda_gemm_t g = { .M = N, .N = OC, .K = IC, .A = inp, .a_type = G3CUDA_BF16, .lda = IC,
                        .B = w, .b_type = G3CUDA_BF16, .trans_b = 1, .ldb = IC, .D = out,
                        .d_type = G3CUDA_BF16, .ldd = OC, .alpha = 1.0f, .bias = bias };

    if (pre) {
        g.epilogue = bias ? G3CUDA_EPI_BIAS_GELU_AUX : G3CUDA_EPI_GELU_AUX;
        g.aux = pre;
        g.ldaux = OC;
    } else {
        g.epilogue = bias ? G3CUDA_EPI_BIAS : G3CUDA_EPI_NONE;
    }
    g3cuda_gemm(g3_cuda_ctx_of(be), &g);
}

/* state: none on this kind (its row's linear_state_bytes is NULL): bf16 products. */
static void g3_cuda_matmul_fwd(g3_backend_t *be, void *state, void *out, const void *inp,
                               const void *w, const void *bias, int N, int IC, int OC)
{
    (void)state;
    g3_cuda_linear_fwd(be, out, NULL, inp, w, bias, N, IC, OC);
}

/* With GPT3D_GEMM_BGRAD=1 and where cuBLASLt offers it: gw (the dW product) with the BGRAD
 * epilogue, whose bias gradient (sum over the rows of dout) overwrites bgrad_buf, then
 * dbias (OC,) += bgrad_buf: one pass over dout fewer than g3cuda_bias_bwd.  RET: 1 when done
 * so, 0 when the caller runs the plain GEMM and the bias kernel. */
static int g3_cuda_bgrad(g3_backend_t *be, g3cuda_gemm_t *gw, float *dbias, int OC)
{
    g3_cuda_t *cu = be->priv;

    if (!cu->bgrad)
        return 0;
    if (cu->bgrad_n < OC) {
        void *p = NULL;
        g3cuda_free(cu->ctx, cu->bgrad_buf);   /* waits for the work using it */
        cu->bgrad_buf = NULL;
        cu->bgrad_n = 0;
        if (g3cuda_malloc(cu->ctx, sizeof(float) * (size_t)OC, "the bias gradient buffer", &p))
            return 1;   /* recorded: ->sync reports it */
        cu->bgrad_buf = p;
        cu->bgrad_n = OC;
    }
    gw->epilogue = G3CUDA_EPI_BGRAD;
    gw->dbias = cu->bgrad_buf;
    if (!g3cuda_gemm_offered(cu->ctx, gw)) {
        gw->epilogue = G3CUDA_EPI_NONE;
        gw->dbias = NULL;
        return 0;
    }
    g3cuda_gemm(cu->ctx, gw);
    g3cuda_bias_acc(cu->ctx, dbias, cu->bgrad_buf, OC);
    return 1;
}

/* dinp (N,IC) = dout (N,OC) . w (OC,IC), times gelu'(pre (N,IC)) when pre is not NULL (the
 * DGELU epilogue); dw (OC,IC) += dout^T . inp (N,IC) in fp32; dbias (OC,) += sum over rows of
 * dout. */
static void g3_cuda_linear_bwd(g3_backend_t *be, void *dinp, const void *pre, float *dw,
                               float *dbias, const void *dout, const void *inp, const void *w,
                               int N, int IC, int OC)
{
    g3cuda_ctx_t *ctx = g3_cuda_ctx_of(be);
    /* dw (OC,IC) += dout^T . inp: M=OC N=IC K=N, fp32 */
    g3cuda_gemm_t gw = { .M = OC, .N = IC, .K = N, .A = dout, .a_type = G3CUDA_BF16,
                         .trans_a = 1, .lda = OC, .B = inp, .b_type = G3CUDA_BF16, .ldb = IC,
                         .D = dw, .d_type = G3CUDA_F32, .ldd = IC, .alpha = 1.0f,
                         .beta = 1.0f };

    if (dinp) {   /* dinp (N,IC) = dout . w: M=N N=IC K=OC, bf16 */
        g3cuda_gemm_t g = { .M = N, .N = IC, .K = OC, .A = dout, .a_type = G3CUDA_BF16,
                            .lda = OC, .B = w, .b_type = G3CUDA_BF16, .ldb = IC, .D = dinp,
                            .d_type = G3CUDA_BF16, .ldd = IC, .alpha = 1.0f };
        if (pre) {
            g.epilogue = G3CUDA_EPI_DGELU;
            g.aux = (g3cuda_bf16_t *)pre;   /* read only by DGELU */
            g.ldaux = IC;
        }
        g3cuda_gemm(ctx, &g);
    }
    if (dbias && g3_cuda_bgrad(be, &gw, dbias, OC))
        return;
    g3cuda_gemm(ctx, &gw);
    if (dbias)
        g3cuda_bias_bwd(ctx, dbias, dout, N, OC);
}

static void g3_cuda_matmul_bwd(g3_backend_t *be, void *state, void *dinp, float *dw,
                               float *dbias, const void *dout, const void *inp, const void *w,
                               int N, int IC, int OC)
{
    (void)state;
    g3_cuda_linear_bwd(be, dinp, NULL, dw, dbias, dout, inp, w, N, IC, OC);
}

/* ---- fused: residual + LayerNorm, GEMM + GELU, GEMM + dGELU (backend.h's optional ops) ------- */

/* resid = bf16(a + b); out = LN(resid), statistics over the rounded resid (g3cuda.h) */
static void g3_cuda_residual_layernorm_fwd(g3_backend_t *be, void *resid, void *out,
                                           float *mean, float *rstd, const void *a,
                                           const void *b, const void *w, const void *bias,
                                           int N, int C, float eps)
{
    g3cuda_layernorm_fwd(g3_cuda_ctx_of(be), resid, out, mean, rstd, a, b, w, bias, N, C, eps);
}

/* pre (N,OC) = inp . w^T + bias and out = gelu(pre) in one cuBLASLt call (GELU_AUX_BIAS: the
 * pre-activation is the epilogue's aux output).  cuBLASLt wants the aux row stride a multiple
 * of 8; other widths take the plain GEMM and the GELU kernel. */
static void g3_cuda_matmul_gelu_fwd(g3_backend_t *be, void *state, void *out, void *pre,
                                    const void *inp, const void *w, const void *bias, int N,
                                    int IC, int OC)
{
    (void)state;
    if (OC % 8 != 0) {
        g3_cuda_linear_fwd(be, pre, NULL, inp, w, bias, N, IC, OC);
        g3cuda_gelu_fwd(g3_cuda_ctx_of(be), out, pre, (size_t)N * OC);
        return;
    }
    g3_cuda_linear_fwd(be, out, pre, inp, w, bias, N, IC, OC);
}

/* dpre = (dout . w) * gelu'(pre) with the DGELU epilogue (the same fallback as above), then
 * the weight and bias gradients. */
static void g3_cuda_matmul_dgelu_bwd(g3_backend_t *be, void *state, void *dpre, float *dw,
                                     float *dbias, const void *dout, const void *inp,
                                     const void *pre, const void *w, int N, int IC, int OC)
{
    (void)state;
    if (IC % 8 != 0) {
        g3_cuda_linear_bwd(be, dpre, NULL, dw, dbias, dout, inp, w, N, IC, OC);
        g3cuda_gelu_bwd(g3_cuda_ctx_of(be), dpre, pre, dpre, (size_t)N * IC);
        return;
    }
    g3_cuda_linear_bwd(be, dpre, pre, dw, dbias, dout, inp, w, N, IC, OC);
}

/* ---- attention: cuDNN's fused engines or the native flash kernels; either way the state is
 * the (B,NH,T) fp32 log-sum-exp (cuDNN's softmax statistics are the same numbers) ---------- */

/* (state and scratch sizes: the row, cuda_kind.c, from the options the open resolved) */

/* RET: 1 when direction dir (g3_cudnn_dir_t) of this shape runs on cuDNN (decided, logged and
 * planned at the shape's first call). */
static int g3_cuda_att_on_cudnn(g3_cuda_t *cu, int B, int T, int NH, int HS, int dir)
{
#ifdef HAVE_CUDNN
    return cu->cudnn != NULL && g3_cudnn_att_use(cu->cudnn, B, T, NH, HS, dir);
#else
    (void)cu, (void)B, (void)T, (void)NH, (void)HS, (void)dir;
    return 0;
#endif
}

static void g3_cuda_attention_fwd(g3_backend_t *be, void *out, void *state, const void *qkv,
                                  int B, int T, int NH, int HS)
{
    g3_cuda_t *cu = be->priv;

    if (g3_cuda_att_on_cudnn(cu, B, T, NH, HS, G3_CUDNN_FWD)) {
#ifdef HAVE_CUDNN
        g3_cudnn_att_fwd(cu->cudnn, out, state, qkv, B, T, NH, HS);
#endif
        return;
    }
    g3cuda_attention_fwd(cu->ctx, out, state, qkv, B, T, NH, HS);
}

static void g3_cuda_attention_bwd(g3_backend_t *be, void *dqkv, void *scratch, const void *dout,
                                  const void *out, const void *qkv, const void *state, int B,
                                  int T, int NH, int HS)
{
    g3_cuda_t *cu = be->priv;

    (void)scratch;   /* cuDNN's (the native backward needs none) */
    if (g3_cuda_att_on_cudnn(cu, B, T, NH, HS, G3_CUDNN_BWD)) {
#ifdef HAVE_CUDNN
        g3_cudnn_att_bwd(cu->cudnn, dqkv, scratch, dout, out, qkv, state, B, T, NH, HS);
#endif
        return;
    }
    g3cuda_attention_bwd(cu->ctx, dqkv, dout, out, qkv, state, B, T, NH, HS);
}

_Static_assert((int)G3_BE_ATT_AUTO == (int)G3_CUDNN_WANT_AUTO &&
                   (int)G3_BE_ATT_NATIVE == (int)G3_CUDNN_WANT_NATIVE &&
                   (int)G3_BE_ATT_CUDNN == (int)G3_CUDNN_WANT_CUDNN,
               "g3_be_att_t and g3_cudnn_want_t must agree");

/* Open the attention path: want (auto, native, cudnn) and deterministic are the user's
 * choice.  cuDNN that cannot be opened is an error under cudnn and the native kernels, said
 * once, under auto; which path each shape takes is decided at its first call.
 * RET: G3_OK, or G3_ERR_UNSUPPORTED / G3_ERR_DEVICE (logged). */
static g3_status_t g3_cuda_att_setup(g3_backend_t *be, g3_cudnn_want_t want, int deterministic)
{
    g3_cuda_t *cu = be->priv;
    char why[768];
    int use = 0;
    g3_status_t st;

#ifdef HAVE_CUDNN
    st = g3_cudnn_open(cu->ctx, want, deterministic, &cu->cudnn, why, sizeof(why));
    if (st == G3_OK && cu->cudnn != NULL)
        return G3_OK;   /* each shape's path is logged at its first call */
    {
        char cause[768];   /* the choice's message quotes the cause: not the same buffer */
        snprintf(cause, sizeof(cause), "%s", why);
        st = g3_cudnn_att_choose(want, 1, st == G3_OK ? NULL : cause, &use, why, sizeof(why));
    }
#else
    (void)cu;
    (void)deterministic;
    st = g3_cudnn_att_choose(want, 0, NULL, &use, why, sizeof(why));
#endif
    if (st != G3_OK)
        g3_error("%s", why);
    else
        g3_info("attention: %s", why);
    return st;
}

/* The context's notes (the GEMM algorithm each shape got) go to the log. */
static void g3_cuda_note(const char *msg)
{
    g3_info("CUDA backend: %s", msg);
}

/* GEMM autotuning (g3cuda.h): on unless gemm_autotune is 0 or bitwise repeatability across
 * runs was asked for (the timing-based choice may differ from run to run, and from rank to
 * rank: tensor-parallel ranks that pick different algorithms would round their replicated
 * parameters' gradients differently, so until the ranks agree on one choice a launcher's
 * world of more than one process keeps the heuristic's). */
static void g3_cuda_gemm_setup(g3_backend_t *be, int gemm_autotune, int deterministic)
{
    g3_cuda_t *cu = be->priv;

    g3cuda_ctx_set_log(cu->ctx, g3_cuda_note);
    g3cuda_ctx_set_gemm_autotune(cu->ctx, gemm_autotune && !deterministic);
}

/* ---- elementwise ----------------------------------------------------------------------------- */

static void g3_cuda_gelu_fwd(g3_backend_t *be, void *out, const void *inp, size_t n)
{
    g3cuda_gelu_fwd(g3_cuda_ctx_of(be), out, inp, n);
}

static void g3_cuda_gelu_bwd(g3_backend_t *be, void *dinp, const void *inp, const void *dout,
                             size_t n)
{
    g3cuda_gelu_bwd(g3_cuda_ctx_of(be), dinp, inp, dout, n);
}

static void g3_cuda_residual_fwd(g3_backend_t *be, void *out, const void *a, const void *b,
                                 size_t n)
{
    g3cuda_residual_fwd(g3_cuda_ctx_of(be), out, a, b, n);
}

static void g3_cuda_scale(g3_backend_t *be, float *x, size_t n, float s)
{
    g3cuda_scale(g3_cuda_ctx_of(be), x, G3CUDA_F32, n, s);
}

static g3cuda_dtype_t g3_cuda_dtype(g3_be_dtype_t t)
{
    return t == G3_BE_BF16 ? G3CUDA_BF16 : G3CUDA_F32;
}

static void g3_cuda_cast(g3_backend_t *be, void *dst, g3_be_dtype_t dst_t, const void *src,
                         g3_be_dtype_t src_t, size_t n)
{
    g3cuda_cast(g3_cuda_ctx_of(be), dst, g3_cuda_dtype(dst_t), src, g3_cuda_dtype(src_t), n);
}

/* ---- cross-entropy over one shard (v0 = 0; the model combines shards itself) --------------- */

static void g3_cuda_xent_fwd(g3_backend_t *be, float *losses, float *lse, const void *logits,
                             const int32_t *targets, int N, int V)
{
    g3cuda_xent_fused(g3_cuda_ctx_of(be), losses, lse, NULL, logits, V, targets, 0.0f, N, V);
}

static void g3_cuda_xent_bwd(g3_backend_t *be, void *dlogits, const void *logits,
                             const float *lse, const int32_t *targets, float dloss, int N, int V)
{
    g3cuda_xent_grad(g3_cuda_ctx_of(be), dlogits, logits, V, lse, targets, dloss, N, V, 0);
}

/* ---- vocabulary-parallel cross-entropy: the stages of g3cuda.h (partial, finish, grad) ------- */

static void g3_cuda_xent_stats(g3_backend_t *be, float *stats, const void *logits,
                               const int32_t *targets, int N, int V, int v0)
{
    g3cuda_xent_partial(g3_cuda_ctx_of(be), stats, logits, V, targets, N, V, v0);
}

static void g3_cuda_xent_combine(g3_backend_t *be, float *losses, float *lse, const float *stats,
                                 int S, const int32_t *targets, int N)
{
    g3cuda_xent_finish(g3_cuda_ctx_of(be), losses, lse, stats, S, targets, N);
}

static void g3_cuda_xent_shard_bwd(g3_backend_t *be, void *dlogits, const void *logits,
                                   const float *lse, const int32_t *targets, float dloss, int N,
                                   int V, int v0)
{
    g3cuda_xent_grad(g3_cuda_ctx_of(be), dlogits, logits, V, lse, targets, dloss, N, V, v0);
}

/* ---- optimizer ------------------------------------------------------------------------------- */

static void g3_cuda_adamw(g3_backend_t *be, float *p, const float *g, float *m, float *v,
                          size_t n, float lr, float beta1, float beta2, float eps, float wd,
                          int64_t step)
{
    /* the bf16 working copy is refreshed by the model (g3_gpt_params_refresh) after the whole
     * update, including the ZeRO-1 all-gather of the master weights */
    g3cuda_adamw(g3_cuda_ctx_of(be), p, NULL, g, m, v, n, lr, beta1, beta2, eps, wd, step, NULL);
}

/* AdamW on g * *scale, the scale from g3cuda_clip_scale in device memory */
static void g3_cuda_adamw_scaled(g3_backend_t *be, float *p, const float *g, float *m, float *v,
                                 size_t n, float lr, float beta1, float beta2, float eps,
                                 float wd, int64_t step, const float *scale)
{
    g3cuda_adamw(g3_cuda_ctx_of(be), p, NULL, g, m, v, n, lr, beta1, beta2, eps, wd, step,
                 scale);
}

/* *acc += sum x^2 into a device double, no download */
static void g3_cuda_sumsq_acc(g3_backend_t *be, double *acc, const float *x, size_t n)
{
    if (n)
        g3cuda_sumsq(g3_cuda_ctx_of(be), acc, x, G3CUDA_F32, n);
}

static void g3_cuda_clip_scale(g3_backend_t *be, float *scale, const double *sumsq,
                               double max_norm)
{
    g3cuda_clip_scale(g3_cuda_ctx_of(be), scale, NULL, sumsq, (float)max_norm);
}

static void g3_cuda_sumsq(g3_backend_t *be, const float *x, size_t n, double *host_out)
{
    g3_cuda_t *cu = be->priv;
    double total = 0.0;

    g3cuda_zero(cu->ctx, cu->sumsq, sizeof(double));
    if (n)
        g3cuda_sumsq(cu->ctx, cu->sumsq, x, G3CUDA_F32, n);
    g3cuda_download(cu->ctx, &total, cu->sumsq, sizeof(double));   /* waits */
    *host_out = total;   /* NaN-free 0 after an error; ->sync reports it */
}

/* ---- limits ---------------------------------------------------------------------------------- */

/* The size rules are the row's (cuda_kind.c, be->kind: g3_be_open filled it), so gpt3d plan
 * and the backend agree. */
static g3_status_t g3_cuda_check_model(g3_backend_t *be, int C, int NH, int HS, int F, int V)
{
    char why[512];
    g3_status_t st = g3_be_row_check_sizes(be->kind, &be->opts, C, NH, HS, F, V, why,
                                           sizeof(why));

    if (st != G3_OK)
        g3_error("%s", why);
    return st;
}

/* ---- peak FLOP/s ----------------------------------------------------------------------------- */

/* Dense bf16 tensor-core peaks (vendor data sheets, no sparsity) by device name; the first
 * match wins, so more specific names come first.  GPT3D_GPU_PEAK_TFLOPS overrides. */
static const struct {
    const char *name;
    double      tflops;
} g3_cuda_peaks[] = {
    { "H100 PCIe", 756.0 },
    { "H100 NVL", 835.0 },
    { "H100", 989.0 },      /* SXM5 */
    { "H200", 989.0 },
    { "H800", 989.0 },
    { "GH200", 989.0 },
    { "B200", 2250.0 },
    { "A100", 312.0 },
    { "A800", 312.0 },
    { "L40S", 362.0 },
    { "A10", 125.0 },
    { "RTX 4090", 165.0 },
    { "RTX 3090", 71.0 },
};

static void g3_cuda_peak(g3_backend_t *be)
{
    double env = g3_param_gpu_peak_tflops();   /* 0: unset (or not a positive number) */

    if (env > 0.0) {
        be->peak_flops = env * 1e12;
        snprintf(be->peak_how, sizeof(be->peak_how), "GPT3D_GPU_PEAK_TFLOPS=%s",
                 g3_param_str(G3_PARAM_ID_gpu_peak_tflops));
        return;
    }
    for (size_t i = 0; i < sizeof(g3_cuda_peaks) / sizeof(g3_cuda_peaks[0]); i++) {
        if (strstr(be->device, g3_cuda_peaks[i].name)) {
            be->peak_flops = g3_cuda_peaks[i].tflops * 1e12;
            snprintf(be->peak_how, sizeof(be->peak_how),
                     "dense bf16 tensor-core peak of %s: %.0f TFLOP/s (data sheet)",
                     g3_cuda_peaks[i].name, g3_cuda_peaks[i].tflops);
            return;
        }
    }
    be->peak_flops = 989e12;
    snprintf(
        be->peak_how, sizeof(be->peak_how),
        "unknown GPU: assumed the H100 SXM dense bf16 peak, 989 TFLOP/s (set GPT3D_GPU_PEAK_TFLOPS)");
}

/* ---- the table ------------------------------------------------------------------------------- */

static void g3_cuda_close(g3_backend_t *be)
{
    g3_cuda_t *cu = be->priv;
    if (cu->sumsq)
        g3cuda_free(cu->ctx, cu->sumsq);
#ifdef HAVE_CUDNN
    g3_cudnn_close(cu->cudnn);
#endif
    if (cu->bgrad_buf)
        g3cuda_free(cu->ctx, cu->bgrad_buf);
    g3cuda_ctx_destroy(cu->ctx);
    free(cu);
    free(be);
}

/* ---- host staging buffers and timing events (optional ops) ------------------------------- */

/* Safe from any thread (backend.h): logs here instead of leaving an error pending in the
 * context, whose stream another thread may be using. */
static g3_status_t g3_cuda_host_alloc(g3_backend_t *be, size_t bytes, void **ptr_p)
{
    g3_cuda_t *cu = be->priv;
    char why[512];

    if (g3cuda_host_alloc(cu->ctx, bytes, ptr_p, why, sizeof(why)) == 0)
        return G3_OK;
    g3_error("CUDA backend (device %d, %s): %s", cu->device, be->device, why);
    return G3_ERR_NO_MEMORY;
}

static void g3_cuda_host_free(g3_backend_t *be, void *ptr)
{
    g3cuda_host_free(g3_cuda_ctx_of(be), ptr);
}

static g3_status_t g3_cuda_event_create(g3_backend_t *be, void **event_p)
{
    return g3_cuda_status(be, g3cuda_event_create(g3_cuda_ctx_of(be), event_p));
}

static void g3_cuda_event_destroy(g3_backend_t *be, void *event)
{
    g3cuda_event_destroy(g3_cuda_ctx_of(be), event);
}

static void g3_cuda_event_record(g3_backend_t *be, void *event)
{
    g3cuda_event_record(g3_cuda_ctx_of(be), event);   /* a failure is reported by ->sync */
}

static g3_status_t g3_cuda_event_elapsed(g3_backend_t *be, void *start, void *end,
                                         double *seconds_p)
{
    float ms = 0.0f;
    g3_status_t st = g3_cuda_status(be, g3cuda_event_elapsed(g3_cuda_ctx_of(be), start, end,
                                                             &ms));
    if (st == G3_OK)
        *seconds_p = 1e-3 * (double)ms;
    return st;
}

static const g3_backend_ops_t g3_cuda_ops = {
    .close = g3_cuda_close,
    .alloc = g3_cuda_alloc,
    .free = g3_cuda_free,
    .upload = g3_cuda_upload,
    .download = g3_cuda_download,
    .zero = g3_cuda_zero,
    .sync = g3_cuda_sync,
    .embedding_fwd = g3_cuda_embedding_fwd,
    .embedding_bwd = g3_cuda_embedding_bwd,
    .layernorm_fwd = g3_cuda_layernorm_fwd,
    .layernorm_bwd = g3_cuda_layernorm_bwd,
    .matmul_fwd = g3_cuda_matmul_fwd,
    .matmul_bwd = g3_cuda_matmul_bwd,
    .attention_fwd = g3_cuda_attention_fwd,
    .attention_bwd = g3_cuda_attention_bwd,
    .gelu_fwd = g3_cuda_gelu_fwd,
    .gelu_bwd = g3_cuda_gelu_bwd,
    .residual_fwd = g3_cuda_residual_fwd,
    .scale = g3_cuda_scale,
    .cast = g3_cuda_cast,
    .xent_fwd = g3_cuda_xent_fwd,
    .xent_bwd = g3_cuda_xent_bwd,
    .xent_stats = g3_cuda_xent_stats,
    .xent_combine = g3_cuda_xent_combine,
    .xent_shard_bwd = g3_cuda_xent_shard_bwd,
    .adamw = g3_cuda_adamw,
    .sumsq = g3_cuda_sumsq,
    .host_alloc = g3_cuda_host_alloc,
    .host_free = g3_cuda_host_free,
    .event_create = g3_cuda_event_create,
    .event_destroy = g3_cuda_event_destroy,
    .event_record = g3_cuda_event_record,
    .event_elapsed = g3_cuda_event_elapsed,
    .check_model = g3_cuda_check_model,
    /* fused: unless the fused_ops option is 0 (g3_be_fused_keep) */
    .residual_layernorm_fwd = g3_cuda_residual_layernorm_fwd,
    .matmul_gelu_fwd = g3_cuda_matmul_gelu_fwd,
    .matmul_dgelu_bwd = g3_cuda_matmul_dgelu_bwd,
    .sumsq_acc = g3_cuda_sumsq_acc,
    .clip_scale = g3_cuda_clip_scale,
    .adamw_scaled = g3_cuda_adamw_scaled,
};

/* RET: the number of processes the launcher started (WORLD_SIZE, SLURM_NTASKS,
 * OMPI_COMM_WORLD_SIZE, PMI_SIZE), or 1. */
static int g3_cuda_world_size(void)
{
    static const char *const vars[] = { "WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE",
                                        "PMI_SIZE" };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v && isdigit((unsigned char)v[0]))
            return atoi(v);
    }
    return 1;
}

/* RET: the node-local rank from the launcher's environment, or 0. */
static int g3_cuda_local_rank(void)
{
    static const char *const vars[] = { "LOCAL_RANK", "SLURM_LOCALID",
                                        "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID" };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v && isdigit((unsigned char)v[0]))
            return atoi(v);
    }
    return 0;
}

g3_status_t g3_be_cuda_open(g3_be_opts_t *o, g3_backend_t **be_p)
{
    g3_backend_t *be;
    g3_cuda_t *cu;
    char why[768];
    int count = 0, device = o->device;
    g3_status_t st;

    /* g3_be_open (the only caller, through the row) has probed o first: the row's probe
     * words the one "no usable CUDA device" message; once it has passed, the count (which
     * the runtime keeps) is there */
    if (g3cuda_device_count(&count, why, sizeof(why)) != 0) {
        g3_error("%s", why);
        return G3_ERR_DEVICE;
    }
    if (device < 0)
        device = g3_cuda_local_rank() % count;
    if (device >= count) {
        g3_error("--device cuda: device %d requested but %d visible (CUDA_VISIBLE_DEVICES)",
                 device, count);
        return G3_ERR_DEVICE;
    }
    be = calloc(1, sizeof(*be));
    cu = calloc(1, sizeof(*cu));
    if (!be || !cu) {
        free(be);
        free(cu);
        g3_error("CUDA backend: out of host memory opening the backend");
        return G3_ERR_NO_MEMORY;
    }
    if (g3cuda_ctx_create(device, 0, &cu->ctx, why, sizeof(why)) != 0) {
        g3_error(
            "--device cuda: cannot use CUDA device %d: %s. Use a GPU of compute capability 8.0 or newer (A100, H100), or --device cpu",
            device, why);
        free(be);
        free(cu);
        return G3_ERR_DEVICE;
    }
    cu->device = device;
    cu->ops = g3_cuda_ops;
    g3_be_fused_keep(&cu->ops, o, 1);
    be->ops = &cu->ops;
    be->nthreads = 1;   /* one GPU per rank: the MFU peak counts GPUs */
    be->priv = cu;
#ifdef _OPENMP
    /* The host-side loops (the checkpoints' finite check) on this rank's share of the node's
     * cores, as the CPU backend sizes its threads (o->nthreads 0: OpenMP's default). */
    if (o->nthreads > 0)
        omp_set_num_threads(o->nthreads);
#endif
    be->stream = g3cuda_ctx_stream(cu->ctx);   /* the engine orders NCCL behind it */
    if (g3cuda_ctx_bus_id(cu->ctx, be->device_id, sizeof(be->device_id)) != 0) {
        g3cuda_ctx_sync(cu->ctx, NULL, 0);   /* clear: an unknown id only weakens a check */
        snprintf(be->device_id, sizeof(be->device_id), "device %d", device);
    }
    snprintf(be->device, sizeof(be->device), "%s", g3cuda_ctx_device_name(cu->ctx));
    if (g3_cuda_alloc(be, sizeof(double), "the gradient-norm accumulator",
                      (void **)&cu->sumsq) != G3_OK) {
        g3cuda_ctx_destroy(cu->ctx);
        free(cu);
        free(be);
        return G3_ERR_NO_MEMORY;
    }
    {
        /* GEMM autotuning: the option, else GPT3D_GEMM_AUTOTUNE, else on for one process; the
         * fused bias gradient: GPT3D_GEMM_BGRAD=1 (off until measured on a GPU; its sum order
         * is cuBLASLt's, so never with deterministic) */
        int tune = o->gemm_autotune >= 0 ? o->gemm_autotune : g3_param_gemm_autotune();
        const char *lnb = g3_param_ln_bwd();   /* "block": LayerNorm backward's block kernel */
        cu->bgrad = g3_param_gemm_bgrad() == 1 && !o->deterministic;
        g3cuda_ctx_set_ln_bwd_block(cu->ctx, lnb != NULL && strcmp(lnb, "block") == 0);
        g3_cuda_gemm_setup(be, tune != 0 && g3_cuda_world_size() == 1, o->deterministic);
        st = g3_cuda_att_setup(be, (g3_cudnn_want_t)o->attention, o->deterministic);
    }
    if (st != G3_OK) {
        g3_cuda_close(be);
        return st;
    }
    /* what runs: the row's attention sizes follow it (cuda_kind.c) */
    o->attention = cu->cudnn ? G3_BE_ATT_CUDNN : G3_BE_ATT_NATIVE;
    g3_cuda_peak(be);
    g3_debug("CUDA backend: device %d: %s; peak %.1f TFLOP/s (%s); fused ops %s; attention %s",
             device, be->device, be->peak_flops / 1e12, be->peak_how,
             cu->ops.matmul_gelu_fwd ? "on" : "off", g3_be_att_name(o->attention));
    *be_p = be;
    return G3_OK;
}

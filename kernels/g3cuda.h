/* gpt3d CUDA kernels: the C interface of kernels/ (compiled by nvcc, called from C).
 *
 * One op per .cu file, each with one public entry point declared here, context first.
 * Precision policy (docs/cuda.md): activations and parameters are bf16 in device memory,
 * master weights, parameter gradients, optimizer state and every reduction are fp32 (sums of
 * squares in double); matrix products accumulate in fp32 on the tensor cores.
 *
 * Errors.  Every entry point returns 0 when its work was queued, or a G3CUDA_ERR_* code.  A
 * context keeps the FIRST error (with its text: cudaGetErrorString, cublasLtGetStatusString or
 * the bad argument, naming the op) until g3cuda_ctx_sync() reports and clears it; while an error
 * is pending, entry points queue nothing and return it again, so a failed op never feeds
 * garbage to the next one.  Kernels run asynchronously on the context's stream: a fault inside
 * a kernel surfaces at the next sync (or the next entry point that notices it).
 *
 * Pointers passed to ops are device memory (g3cuda_malloc / cudaMalloc), 16-byte aligned unless
 * an op says otherwise.  bf16 tensors are seen from C as g3cuda_bf16_t (the raw 16 bits).
 * Shape glossary: N rows (tokens, B*T), B micro-batch, T sequence length, C hidden size,
 * NH heads, HS head size (C = NH*HS, the local heads under tensor parallelism), V (local,
 * valid) vocabulary columns, ld a row stride in elements, S vocabulary shards. */
#ifndef G3_KERNELS_G3CUDA_H
#define G3_KERNELS_G3CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t g3cuda_bf16_t;   /* the bits of a bfloat16 (1 sign, 8 exponent, 7 mantissa) */

/* Element types.  The FP8 ones (OCP E4M3 and E5M2) name GEMM operands only, for the FP8
 * training to come: no op takes them yet (g3cuda_gemm refuses them, G3CUDA_ERR_UNSUPPORTED). */
typedef enum {
    G3CUDA_F32      = 0,
    G3CUDA_BF16     = 1,
    G3CUDA_FP8_E4M3 = 2,
    G3CUDA_FP8_E5M2 = 3
} g3cuda_dtype_t;

typedef enum {
    G3CUDA_OK = 0,
    G3CUDA_ERR_ARG,      /* an argument the op cannot take (shape, alignment, NULL)  */
    G3CUDA_ERR_CUDA,     /* a CUDA runtime call or a kernel failed                  */
    G3CUDA_ERR_CUBLAS,   /* a cuBLASLt call failed, or no algorithm fits             */
    G3CUDA_ERR_NOMEM,    /* device memory could not be had                          */
    G3CUDA_ERR_CUDNN,    /* a cuDNN call failed (src/backend/cudnn_att.c records it) */
    G3CUDA_ERR_UNSUPPORTED /* a valid request this build does not run (an FP8 GEMM)   */
} g3cuda_err_t;

typedef struct g3cuda_ctx g3cuda_ctx_t;

/* ---- device and context (device.cu, ctx.cu) -------------------------------------------- */

/* OUT: *count_p, the number of visible CUDA devices (0 without a GPU is an error here, with the
 * driver's reason in why). */
int g3cuda_device_count(int *count_p, char *why, size_t why_len);

/* Make device `device` current, create a stream, a cuBLASLt handle and a cuBLASLt workspace
 * of workspace_bytes (0: 32 MiB, what cuBLASLt wants on Hopper).
 * OUT: *ctx_p, freed with g3cuda_ctx_destroy.  RET: non-zero with the cause in why;
 * G3CUDA_ERR_ARG when the device is older than compute capability 8.0 (no bf16 WMMA). */
int g3cuda_ctx_create(int device, size_t workspace_bytes, g3cuda_ctx_t **ctx_p,
                      char *why, size_t why_len);
void g3cuda_ctx_destroy(g3cuda_ctx_t *ctx);
/* RET: the context's cudaStream_t, as void * for C callers (NCCL calls go on it too). */
void *g3cuda_ctx_stream(g3cuda_ctx_t *ctx);
/* RET: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"-style description; static for the context. */
const char *g3cuda_ctx_device_name(const g3cuda_ctx_t *ctx);
/* Wait for the stream.  RET: the first error since the last sync (its text is copied into why
 * when why is not NULL), which is then cleared. */
int g3cuda_ctx_sync(g3cuda_ctx_t *ctx, char *why, size_t why_len);
/* RET: the pending error's text ("" when none) without waiting or clearing. */
const char *g3cuda_ctx_error(const g3cuda_ctx_t *ctx);
/* Record err with msg as the context's error (the first one wins, as for the kernels' own), for
 * work queued on the stream by a library outside kernels/ (cuDNN).  RET: err. */
int g3cuda_ctx_fail(g3cuda_ctx_t *ctx, int err, const char *msg);

/* Device memory.  g3cuda_malloc logs nothing: it records "what" with cudaMalloc's cause. */
int g3cuda_malloc(g3cuda_ctx_t *ctx, size_t bytes, const char *what, void **ptr_p);
void g3cuda_free(g3cuda_ctx_t *ctx, void *ptr);
/* Host <-> device copies in stream order; download waits until the bytes are in host_dst. */
int g3cuda_upload(g3cuda_ctx_t *ctx, void *dst, const void *host_src, size_t bytes);
int g3cuda_download(g3cuda_ctx_t *ctx, void *host_dst, const void *src, size_t bytes);
int g3cuda_zero(g3cuda_ctx_t *ctx, void *ptr, size_t bytes);

/* Page-locked host memory (host staging of --distributed-backend ucx, the checkpoints'
 * staging area): callable from any thread (it sets that thread's device to ctx's and records
 * nothing in ctx).  RET: non-zero with the cause in why. */
int g3cuda_host_alloc(g3cuda_ctx_t *ctx, size_t bytes, void **ptr_p, char *why, size_t why_len);
/* The device's PCI bus id ("0000:65:00.0", for telling ranks that share a GPU), and timing
 * events on the stream (g3cuda_event_elapsed waits for end; ms between the two records).
 * RET: non-zero with the cause recorded in ctx (g3cuda_ctx_sync reports it). */
void g3cuda_host_free(g3cuda_ctx_t *ctx, void *ptr);
int g3cuda_ctx_bus_id(g3cuda_ctx_t *ctx, char *buf, size_t len);
int g3cuda_event_create(g3cuda_ctx_t *ctx, void **event_p);
void g3cuda_event_destroy(g3cuda_ctx_t *ctx, void *event);
int g3cuda_event_record(g3cuda_ctx_t *ctx, void *event);
int g3cuda_event_elapsed(g3cuda_ctx_t *ctx, void *start, void *end, float *ms_p);

/* ---- casts (cast.cu) -------------------------------------------------------------------- */

/* dst = src converted (fp32 -> bf16 rounds to nearest even; NaN stays NaN).  Same type: copy.
 * dst, src (n,) */
int g3cuda_cast(g3cuda_ctx_t *ctx, void *dst, g3cuda_dtype_t dst_type, const void *src,
                g3cuda_dtype_t src_type, size_t n);

/* ---- residual add and scaling (residual.cu, scale.cu) ------------------------------------ */

/* out = bf16(a + b) (fp32 sum; out may alias a or b).  out, a, b (n,) bf16 */
int g3cuda_residual_fwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *out, const g3cuda_bf16_t *a,
                        const g3cuda_bf16_t *b, size_t n);
/* x *= s (fp32 math; bf16 rounded once).  x (n,) fp32 or bf16 */
int g3cuda_scale(g3cuda_ctx_t *ctx, void *x, g3cuda_dtype_t type, size_t n, float s);

/* ---- embedding (embedding_fwd.cu, embedding_bwd.cu) ------------------------------------- */

/* out[b,t,:] = wte[tokens[b,t] - v0, :] + wpe[t, :]; tokens outside [v0, v0+V) add zeros (a
 * vocabulary-parallel shard), wpe may be NULL (held by another shard).
 * out (B,T,C) bf16  tokens (B,T)  wte (V,C) bf16  wpe (P>=T,C) bf16 */
int g3cuda_embedding_fwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *out, const int32_t *tokens,
                         const g3cuda_bf16_t *wte, const g3cuda_bf16_t *wpe,
                         int B, int T, int C, int v0, int V);
/* dwte[tokens[b,t]-v0] += dout[b,t]; dwpe[t] += sum_b dout[b,t] (dwpe may be NULL; dwte may be
 * NULL).  Deterministic: the tokens are stably sorted (CUB radix sort) and each vocabulary row
 * sums its occurrences in position order; dwpe sums over b in order.  No atomics.
 * dwte (V,C) fp32  dwpe (P,C) fp32  dout (B,T,C) bf16  tokens (B,T) */
int g3cuda_embedding_bwd(g3cuda_ctx_t *ctx, float *dwte, float *dwpe, const g3cuda_bf16_t *dout,
                         const int32_t *tokens, int B, int T, int C, int v0, int V);

/* ---- layer norm fused with the residual add (layernorm_fwd.cu, layernorm_bwd.cu) -------- */

/* The widest row the LayerNorm kernels take: 1024 threads x 24 columns in registers (MT-NLG's
 * 20480 included; the CUDA backend's size check, src/backend/cuda_kind.c, reads it). */
#define G3CUDA_LN_MAX_C 24576

/* With b != NULL: resid = bf16(a + b) (the residual stream), x = resid; with b == NULL: x = a
 * (resid unused, may be NULL).  out = (x - mean) * rstd * w + bias per row (biased variance,
 * eps inside the square root), statistics in fp32 over the bf16 x that backward will read.
 * resid, out, a, b (N,C) bf16  mean, rstd (N,) fp32  w, bias (C,) bf16.  C <= G3CUDA_LN_MAX_C. */
int g3cuda_layernorm_fwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *resid, g3cuda_bf16_t *out,
                         float *mean, float *rstd, const g3cuda_bf16_t *a,
                         const g3cuda_bf16_t *b, const g3cuda_bf16_t *w,
                         const g3cuda_bf16_t *bias, int N, int C, float eps);
/* dinp += dLN/dx^T dout (ACCUMULATES: dinp is the residual stream's gradient), dw += sum_rows
 * dout * xhat, db += sum_rows dout (fp32, deterministic: fixed-order partial sums per block).
 * dinp, dout, inp (N,C) bf16  dw, db (C,) fp32  w (C,) bf16  mean, rstd (N,) fp32 */
int g3cuda_layernorm_bwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *dinp, float *dw, float *db,
                         const g3cuda_bf16_t *dout, const g3cuda_bf16_t *inp,
                         const g3cuda_bf16_t *w, const float *mean, const float *rstd,
                         int N, int C);

/* ---- GELU, tanh approximation (gelu_fwd.cu, gelu_bwd.cu) -------------------------------- */

/* out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).  out, inp (n,) bf16 (may alias) */
int g3cuda_gelu_fwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *out, const g3cuda_bf16_t *inp, size_t n);
/* dinp = gelu'(inp) * dout (dinp may alias dout).  dinp, inp, dout (n,) bf16 */
int g3cuda_gelu_bwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *dinp, const g3cuda_bf16_t *inp,
                    const g3cuda_bf16_t *dout, size_t n);

/* ---- bias gradient (bias_bwd.cu) ---------------------------------------------------------- */

/* dbias += sum_rows dout, fp32, deterministic (fixed-order partial sums).
 * dbias (OC,) fp32  dout (N,OC) bf16 */
int g3cuda_bias_bwd(g3cuda_ctx_t *ctx, float *dbias, const g3cuda_bf16_t *dout, int N, int OC);
/* dbias += part (the bias gradient of a BGRAD GEMM, which overwrites, added to the gradient
 * that micro-batches accumulate).  dbias, part (OC,) fp32 */
int g3cuda_bias_acc(g3cuda_ctx_t *ctx, float *dbias, const float *part, int OC);

/* ---- matrix products through cuBLASLt (gemm.cu) ----------------------------------------- */

typedef enum {
    G3CUDA_EPI_NONE = 0,
    G3CUDA_EPI_BIAS,           /* D = A.B + bias                                        */
    G3CUDA_EPI_GELU_AUX,       /* aux = A.B; D = gelu(aux)                              */
    G3CUDA_EPI_BIAS_GELU_AUX,  /* aux = A.B + bias; D = gelu(aux)                       */
    G3CUDA_EPI_DGELU,          /* D = (A.B) * gelu'(aux)   (aux from a GELU_AUX forward) */
    G3CUDA_EPI_BGRAD           /* D = A.B; dbias (M,) fp32 = sum_k op(A)[m,k], OVERWRITTEN
                                * (cuBLASLt's BGRADB: see g3cuda_gemm_offered)           */
} g3cuda_epilogue_t;

/* Row-major description of D (M,N) = alpha * op(A) (M,K) . op(B) (K,N) + beta * D, then the
 * epilogue.  op(A) = A (stored (M,K), row stride lda) or, with trans_a, A^T (A stored (K,M));
 * likewise B ((K,N), or (N,K) with trans_b).  The three products of a linear layer
 * out (N,OC) = inp (N,IC) . w^T + bias, w (OC,IC):
 *   forward   M=N  N=OC K=IC  A=inp          B=w trans_b   D=out  (bias/GELU epilogue)
 *   dinp      M=N  N=IC K=OC  A=dout         B=w           D=dinp (DGELU epilogue)
 *   dw (+=)   M=OC N=IC K=N   A=dout trans_a B=inp         D=dw fp32, beta=1
 * The operand types are explicit: a_type and b_type are bf16 and d_type is bf16 or fp32
 * (accumulation is always fp32); the FP8 types and the scales (a_scale, b_scale, d_scale: one
 * fp32 each, device memory, the factors that dequantize A and B and quantize D; amax_d: D's
 * absolute maximum, written) are the fields of the FP8 GEMMs to come and must be NULL now:
 * any other combination returns G3CUDA_ERR_UNSUPPORTED (recorded, the backend's sync
 * reports it), never a wrong product.  Bias and aux epilogues
 * need D bf16; bias (N,) bf16 is broadcast over rows; aux (M,N) bf16 has row stride ldaux, a
 * multiple of 8.  BGRAD takes an fp32 or bf16 D and writes dbias (M,) fp32: with dw's product
 * (A = dout, trans_a) that is the bias gradient, sum over the rows of dout.  The algorithm
 * cuBLASLt's heuristic picks is cached per shape, transposes, types, epilogue and pointer
 * alignment. */
typedef struct g3cuda_gemm {
    int M, N, K;
    int trans_a, trans_b;
    const void *A;              /* a_type elements                                       */
    g3cuda_dtype_t a_type;
    int lda;
    const void *B;              /* b_type elements                                       */
    g3cuda_dtype_t b_type;
    int ldb;
    void *D;
    g3cuda_dtype_t d_type;
    int ldd;
    float alpha, beta;
    g3cuda_epilogue_t epilogue;
    const g3cuda_bf16_t *bias;
    g3cuda_bf16_t *aux;
    int ldaux;
    float *dbias;   /* BGRAD's output (M,) fp32 */
    /* FP8 scaling (NULL today): (1,) fp32 device memory each */
    const float *a_scale, *b_scale, *d_scale;
    float *amax_d;
} g3cuda_gemm_t;

int g3cuda_gemm(g3cuda_ctx_t *ctx, const g3cuda_gemm_t *g);
/* RET: 1 when cuBLASLt has an algorithm for g (its plan is then built and cached), 0 when it
 * has none or g is not a valid product; nothing is recorded as an error either way (for
 * epilogues a cuBLASLt may not offer, like BGRAD with an fp32 D). */
int g3cuda_gemm_offered(g3cuda_ctx_t *ctx, const g3cuda_gemm_t *g);

/* Algorithm autotuning (off when a context is created): with on, the first g3cuda_gemm of
 * each plan key times up to G3CUDA_GEMM_CANDIDATES of the heuristic's algorithms on the call's
 * own operands (2 warm-up and 5 timed runs each; an fp32 D with beta != 0 is saved to scratch
 * first and put back, at most 256 MiB, else the heuristic's first is kept) and caches the
 * fastest.  The choice depends on timing, so two runs may pick different algorithms and round
 * differently: leave it off where bitwise repeatability across runs matters. */
#define G3CUDA_GEMM_CANDIDATES 8
void g3cuda_ctx_set_gemm_autotune(g3cuda_ctx_t *ctx, int on);
/* GEMM autotuning times the candidates on the call's operands: an fp32 D that is accumulated
 * into (beta != 0) is saved to the context's scratch first, when it is at most this many bytes
 * (a larger one is not tuned: the heuristic's first choice runs). */
#define G3CUDA_GEMM_TUNE_SAVE_MAX ((size_t)256 << 20)
/* What the context's scratch allocates for a request of `bytes` it cannot hold: a quarter
 * more, room to grow without reallocating every time. */
#define G3CUDA_SCRATCH_ROOM(bytes) ((bytes) + (bytes) / 4)
/* LayerNorm backward (layernorm_bwd.cu): with on, every width runs on the block-per-row
 * kernel, also those the warp-per-row kernel takes by default (C <= 2048, C % 8 == 0): to
 * compare the two.  Off when a context is created; gpt3d's CUDA backend sets it from
 * GPT3D_LN_BWD=block (core/param.h). */
void g3cuda_ctx_set_ln_bwd_block(g3cuda_ctx_t *ctx, int on);
/* Where the context's notes go (which algorithm each GEMM shape got), one line each, or NULL
 * (none, the default). */
void g3cuda_ctx_set_log(g3cuda_ctx_t *ctx, void (*log)(const char *msg));

/* ---- causal self-attention, flash style (attention_fwd.cu, attention_bwd.cu) ------------ */

/* The head sizes the attention kernels are compiled for: the one list that the kernels'
 * instantiations (a case each in attention_fwd.cu and attention_bwd.cu), their argument check,
 * the CUDA backend's size check (src/backend/cuda_kind.c) and their messages read. */
#define G3CUDA_ATT_HEAD_SIZES(X) X(32) X(64) X(80) X(96) X(128) X(160)

/* RET: 1 when the attention kernels are compiled for head size HS, else 0. */
static inline int g3cuda_att_head_size_ok(int HS)
{
#define G3CUDA_ATT_HS_IS(n) || HS == (n)
    return 0 G3CUDA_ATT_HEAD_SIZES(G3CUDA_ATT_HS_IS);
#undef G3CUDA_ATT_HS_IS
}

/* The list in words for messages, "32, 64, 80, 96, 128, 160", into buf (len >= 64).  RET: buf. */
static inline const char *g3cuda_att_head_sizes_text(char *buf, size_t len)
{
#define G3CUDA_ATT_HS_ROW(n) (n),
    static const int hs[] = { G3CUDA_ATT_HEAD_SIZES(G3CUDA_ATT_HS_ROW) };
#undef G3CUDA_ATT_HS_ROW
    size_t at = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]) && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%d", i ? ", " : "", hs[i]);
    return buf;
}

/* qkv rows are [q | k | v], head h owning columns [h*HS, (h+1)*HS) of each C block (the layout
 * of backend.h).  out[b,t,h] = softmax(q k^T / sqrt(HS) + causal mask) v, computed in tiles of
 * 64 queries x 64 keys with an online softmax: no T x T matrix in device memory.
 * lse[b,h,t] = log sum_j exp(q_t . k_j / sqrt(HS)) (natural log) is saved for backward.
 * out (B,T,C) bf16  lse (B,NH,T) fp32  qkv (B,T,3C) bf16.  HS: G3CUDA_ATT_HEAD_SIZES. */
int g3cuda_attention_fwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *out, float *lse,
                         const g3cuda_bf16_t *qkv, int B, int T, int NH, int HS);
/* dqkv (overwritten) from dout, recomputing the probabilities from qkv and lse.  Deterministic
 * (no atomics): one kernel walks key tiles for dK, dV, another query tiles for dQ.
 * dqkv (B,T,3C) bf16  dout, out (B,T,C) bf16  qkv (B,T,3C) bf16  lse (B,NH,T) fp32 */
int g3cuda_attention_bwd(g3cuda_ctx_t *ctx, g3cuda_bf16_t *dqkv, const g3cuda_bf16_t *dout,
                         const g3cuda_bf16_t *out, const g3cuda_bf16_t *qkv, const float *lse,
                         int B, int T, int NH, int HS);

/* ---- softmax cross-entropy over (vocabulary-parallel) logits ----------------------------
 * A shard holds the logit columns of global tokens [v0, v0+V) in logits (N, ld), ld >= V
 * (columns [V, ld) are padding: ignored, gradient 0).  targets are global ids; a negative
 * target marks a row to ignore (loss 0, gradient 0).  With S shards (tensor parallelism):
 *   1. g3cuda_xent_partial on each shard  -> stats (N,3): row max m, sum exp(x - m), and the
 *      target's logit if this shard holds it (else 0);
 *   2. all-gather the stats over the S shards into (S,N,3) (shard-major, NCCL's layout);
 *   3. g3cuda_xent_finish -> lse, losses (the same on every shard);
 *   4. g3cuda_xent_grad on each shard -> its dlogits columns.
 * With one shard g3cuda_xent_fused does all of it in one pass pair over the logits. */

/* stats (N,3) fp32  logits (N,ld) bf16  targets (N,) */
int g3cuda_xent_partial(g3cuda_ctx_t *ctx, float *stats, const g3cuda_bf16_t *logits, int ld,
                        const int32_t *targets, int N, int V, int v0);
/* lse[i] = log sum_j exp(x_ij) over all shards; losses[i] = lse[i] - x_i,target.
 * losses, lse (N,) fp32  stats (S,N,3) fp32  targets (N,) */
int g3cuda_xent_finish(g3cuda_ctx_t *ctx, float *losses, float *lse, const float *stats, int S,
                       const int32_t *targets, int N);
/* dlogits[i,j] = (exp(x_ij - lse[i]) - [v0+j == targets[i]]) * dloss; dlogits may alias
 * logits.  dlogits, logits (N,ld) bf16  lse (N,) fp32  targets (N,) */
int g3cuda_xent_grad(g3cuda_ctx_t *ctx, g3cuda_bf16_t *dlogits, const g3cuda_bf16_t *logits,
                     int ld, const float *lse, const int32_t *targets, float dloss, int N,
                     int V, int v0);
/* One shard (v0 = 0): losses, lse and (when dlogits is not NULL) the gradient as above.
 * losses, lse (N,) fp32  dlogits, logits (N,ld) bf16 (may alias)  targets (N,) */
int g3cuda_xent_fused(g3cuda_ctx_t *ctx, float *losses, float *lse, g3cuda_bf16_t *dlogits,
                      const g3cuda_bf16_t *logits, int ld, const int32_t *targets, float dloss,
                      int N, int V);

/* ---- optimizer and gradient norm (adamw.cu, sumsq.cu, clip_scale.cu) -------------------- */

/* One AdamW step on fp32 master weights (the order of backend.h and PyTorch):
 *   g' = g * scale; p *= 1 - lr*wd; m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
 *   p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps), bc1 = 1-b1^step, bc2 = 1-b2^step;
 *   param = bf16(p) (round to nearest even) when param is not NULL.
 * scale is *grad_scale (device, from g3cuda_clip_scale) or 1 when grad_scale is NULL.
 * master, grad, m, v (n,) fp32  param (n,) bf16 */
int g3cuda_adamw(g3cuda_ctx_t *ctx, float *master, g3cuda_bf16_t *param, const float *grad,
                 float *m, float *v, size_t n, float lr, float beta1, float beta2, float eps,
                 float wd, int64_t step, const float *grad_scale);
/* *acc += sum x^2 (device double), deterministic: fixed-order block partials, then one block.
 * Call once per gradient buffer, all-reduce acc over the model-parallel and data-parallel
 * groups if needed, then g3cuda_clip_scale.  acc (1,) fp64 device  x (n,) fp32 or bf16 */
int g3cuda_sumsq(g3cuda_ctx_t *ctx, double *acc, const void *x, g3cuda_dtype_t type, size_t n);
/* *norm = sqrt(*sumsq); coeff = max_norm / (norm + 1e-6); *scale = coeff when max_norm > 0
 * and coeff < 1, else 1 (Megatron's clip_grad_norm and src/parallel/optim.c).  A non-finite
 * norm gives scale 1; the caller reads the norm and refuses the step.
 * scale, norm (1,) fp32 device  sumsq (1,) fp64 device */
int g3cuda_clip_scale(g3cuda_ctx_t *ctx, float *scale, float *norm, const double *sumsq,
                      float max_norm);

#ifdef __cplusplus
}
#endif

#endif

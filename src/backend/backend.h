/* gpt3d backend: the compute ops table every backend fills (CPU: cpu*.c, CUDA: cuda.c over the
 * kernels of kernels/).
 *
 * The model and training code call only through g3_backend_ops_t, so they never know which
 * backend runs.  Pointers passed to ops are backend memory (from ->alloc); host memory moves in
 * and out only through ->upload / ->download.  Ops return nothing: a backend that can fail
 * asynchronously (CUDA) keeps the first error and reports it from ->sync, which the model calls
 * at the end of every forward and backward pass.
 *
 * Precision.  Each backend declares act_dtype, the type of its ACTIVATIONS (every tensor an op
 * reads or writes that is not a parameter gradient, a statistic or an optimizer buffer) and of
 * the PARAMETERS as the forward and backward passes read them (a working copy cast from the
 * fp32 master weights).  In the signatures below such tensors are `void *` and have act_dtype
 * elements ("act" in the shape comments).  Parameter gradients, master weights, Adam moments,
 * LayerNorm statistics, log-sum-exps and losses are always fp32 (`float *`).
 *   CPU:  act_dtype F32: every tensor is fp32, the working copy IS the master copy.
 *   CUDA: act_dtype BF16 (docs/cuda.md, "Precision policy").
 *
 * Conventions shared by every op:
 *   - row-major, contiguous unless a leading dimension says otherwise;
 *   - gradients of parameters (dw, dbias, dwte, dwpe) are ACCUMULATED (+=) in fp32, so
 *     micro-batches add up; gradients of activations are OVERWRITTEN unless the op says "+=";
 *   - shape glossary: N rows (tokens, B*T), B micro-batch, T sequence length, C hidden size,
 *     NH heads, HS head size (C = NH*HS for the local heads), IC/OC in/out features, V (padded,
 *     local) vocabulary, P positions.
 *
 * Kinds.  Each kind of backend (cpu, cuda) is a row of one table (g3_be_kind_info_t, NCCL's
 * transport table is the model): its probe, its size rules, its buffer sizes, its
 * capabilities and its open, which takes the options (g3_be_opts_t).  Callers ask the table
 * or a backend's caps, never compare names.  docs/design.md says how to add an option.
 *
 * Ownership: g3_be_open() returns a backend the caller frees with g3_be_close(); memory from
 * ->alloc is freed with ->free before that. */
#ifndef G3_BACKEND_BACKEND_H
#define G3_BACKEND_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

typedef struct g3_backend g3_backend_t;

/* Element types of backend tensors. */
typedef enum {
    G3_BE_F32 = 0,
    G3_BE_BF16 = 1
} g3_be_dtype_t;

/* RET: bytes per element of t (4 or 2). */
size_t g3_be_dtype_size(g3_be_dtype_t t);
/* Host conversions: dst = src converted (fp32 -> bf16 rounds to nearest even, NaN stays NaN;
 * the same type copies).  dst (n,) of dst_t  src (n,) of src_t, host memory. */
void g3_be_convert(void *dst, g3_be_dtype_t dst_t, const void *src, g3_be_dtype_t src_t,
                   size_t n);

/* ---- kinds of backend, options, and the table of kinds ----------------------------------- */

/* The kinds this source knows (rows of the table in backend.c); --device names them. */
typedef enum { G3_BE_KIND_CPU = 0, G3_BE_KIND_CUDA = 1, G3_BE_KINDS } g3_be_kind_t;

/* Which attention implementation a backend uses (--attention-backend, Megatron's flag). */
typedef enum { G3_BE_ATT_AUTO = 0, G3_BE_ATT_NATIVE = 1, G3_BE_ATT_CUDNN = 2 } g3_be_att_t;
typedef struct g3_be_opts {
    int         nthreads;       /* compute threads; <= 0: the OpenMP default               */
    int         device;         /* CUDA device; < 0: the node-local rank modulo devices    */
    g3_be_att_t attention;      /* AUTO: the fastest that works here, saying once which    */
    int         fused_ops;      /* -1: the backend's default, 0 off, 1 on                  */
    int         gemm_autotune;  /* -1: the backend's default, 0 off, 1 on                  */
    int         deterministic;  /* 1: bitwise-repeatable kernels only (--deterministic)    */
} g3_be_opts_t;
void g3_be_opts_default(g3_be_opts_t *o);   /* -1/AUTO/0 as above */

/* RET: "auto", "native", "cudnn" (the --attention-backend words). */
const char *g3_be_att_name(g3_be_att_t att);
/* OUT: *att_p for "auto", "native" or "cudnn".  RET: G3_OK, or G3_ERR_INVALID_ARG (nothing
 * logged; the option table's choices refuse other words first). */
g3_status_t g3_be_att_parse(const char *word, g3_be_att_t *att_p);

/* Capabilities of a kind: what callers ask instead of comparing names. */
#define G3_BE_CAP_HOST_MEMORY  0x1u   /* its buffers are host memory (cpu): host comm groups
                                       * move them, the trainer's memory check counts them  */
#define G3_BE_CAP_XENT_SHARDED 0x2u   /* it fills xent_stats, xent_combine, xent_shard_bwd:
                                       * the vocabulary-parallel statistics stay in its memory */

/* One row of the table (NCCL's ncclTransport is the model): what a kind is, what it can run
 * and how big its buffers are, all context-free (nothing is opened: gpt3d plan asks for a
 * device it does not have, gpt3d train before the ranks agree), and how to open it.
 * Every `why` gets the reason and the fix, naming the flags; nothing is logged. */
typedef struct g3_be_kind_info {
    g3_be_kind_t  kind;
    const char   *name;        /* "cpu", "cuda": the --device word                          */
    g3_be_dtype_t act_dtype;   /* activations and the passes' parameters (see the top)      */
    unsigned      caps;        /* G3_BE_CAP_*                                               */
    /* Whether these options are ones the kind can honour (no device needed).  NULL: all.
     * RET: G3_OK or G3_ERR_UNSUPPORTED. */
    g3_status_t (*check_opts)(const g3_be_opts_t *o, char *why, size_t why_len);
    /* Whether it can be opened here: built in, a device visible.  RET: G3_OK, or the status
     * open would return (G3_ERR_UNSUPPORTED: not built in; G3_ERR_DEVICE: no device). */
    g3_status_t (*probe)(char *why, size_t why_len);
    /* Whether it runs a GPT of these sizes (C hidden, NH heads, HS = C/NH head size, F MLP
     * size, Vp padded vocabulary rows of one tensor-parallel rank).  NULL: any size.
     * RET: G3_OK or G3_ERR_UNSUPPORTED. */
    g3_status_t (*check_sizes)(const g3_be_opts_t *o, int C, int NH, int HS, int F, int Vp,
                               char *why, size_t why_len);
    /* RET: bytes of attention_fwd's state and of attention_bwd's scratch (see the ops). */
    size_t (*attention_state_bytes)(const g3_be_opts_t *o, int B, int T, int NH, int HS);
    size_t (*attention_scratch_bytes)(const g3_be_opts_t *o, int B, int T, int NH, int HS);
    /* RET: bytes of one linear layer's per-tensor state (the `state` matmul_fwd and
     * matmul_bwd receive: for FP8, the scales and amax histories of its weight, input and
     * output gradient) for a product of IC inputs and OC outputs.  NULL: none (0 bytes). */
    size_t (*linear_state_bytes)(const g3_be_opts_t *o, int IC, int OC);
    /* RET: bytes of device scratch GEMM autotuning takes when the fp32 products accumulated
     * into have these n sizes in bytes (out).  NULL: the kind does not autotune. */
    size_t (*gemm_tune_scratch_bytes)(const double *out, int n);
    /* Open it with options o (defaults filled, checked); the backend writes back what it
     * resolved (attention auto: what runs), which the sizes above then follow.  OUT: *be_p.
     * RET (logged): G3_ERR_NO_MEMORY, G3_ERR_DEVICE.  NULL: not built in (probe says why). */
    g3_status_t (*open)(g3_be_opts_t *o, g3_backend_t **be_p);
} g3_be_kind_info_t;

typedef struct g3_backend_ops {
    /* Free the backend (g3_be_close calls it). */
    void (*close)(g3_backend_t *be);

    /* ---- memory ---------------------------------------------------------------------- */
    /* OUT: *ptr_p, 64-byte aligned, uninitialised.  RET: G3_ERR_NO_MEMORY (logged, naming what)
     * when it cannot be had. */
    g3_status_t (*alloc)(g3_backend_t *be, size_t bytes, const char *what, void **ptr_p);
    void (*free)(g3_backend_t *be, void *ptr);
    void (*upload)(g3_backend_t *be, void *dst, const void *host_src, size_t bytes);
    void (*download)(g3_backend_t *be, void *host_dst, const void *src, size_t bytes);
    void (*zero)(g3_backend_t *be, void *ptr, size_t bytes);
    /* Wait for queued work.  RET: the first error since the last sync (G3_ERR_DEVICE...). */
    g3_status_t (*sync)(g3_backend_t *be);

    /* ---- embedding -------------------------------------------------------------------- */
    /* out[b,t,:] = wte[tokens[b,t] - v0, :] + wpe[t, :]   (wte row 0 holds token v0).
     * Tokens outside [v0, v0+V) contribute zeros (vocabulary-parallel shards); wpe may be NULL
     * (added by another shard).
     * out (B,T,C) act  tokens (B,T)  wte (V,C) act  wpe (P>=T,C) act */
    void (*embedding_fwd)(g3_backend_t *be, void *out, const int32_t *tokens, const void *wte,
                          const void *wpe, int B, int T, int C, int v0, int V);
    /* dwte[tokens[b,t]-v0] += dout[b,t]; dwpe[t] += sum_b dout[b,t] (dwpe may be NULL).
     * dwte (V,C)  dwpe (P,C)  dout (B,T,C) act  tokens (B,T) */
    void (*embedding_bwd)(g3_backend_t *be, float *dwte, float *dwpe, const void *dout,
                          const int32_t *tokens, int B, int T, int C, int v0, int V);

    /* ---- layer norm (biased variance, eps inside the square root) --------------------- */
    /* out = (inp - mean) * rstd * w + b, per row.
     * out, inp (N,C) act  mean, rstd (N,) saved for backward  w, b (C,) act */
    void (*layernorm_fwd)(g3_backend_t *be, void *out, float *mean, float *rstd,
                          const void *inp, const void *w, const void *b, int N, int C,
                          float eps);
    /* dinp += d(out)/d(inp)^T dout  (accumulates: the residual stream's gradient),
     * dw += sum_rows dout*xhat, db += sum_rows dout.
     * dinp, dout, inp (N,C) act  dw, db (C,)  w (C,) act  mean, rstd (N,) */
    void (*layernorm_bwd)(g3_backend_t *be, void *dinp, float *dw, float *db,
                          const void *dout, const void *inp, const void *w,
                          const float *mean, const float *rstd, int N, int C);

    /* ---- matmul (a linear layer: out = inp . w^T + bias) ------------------------------- */
    /* `state` is the layer's per-tensor state, g3_be_linear_state_bytes of backend memory
     * that the model owns, allocates (all zero bytes: the fresh state) and checkpoints, and
     * that only the backend reads or writes; NULL for a product without one (a size of 0,
     * the output layer, plan's calibration).  The same layer passes the same state to its
     * forward and backward (and the fused matmul ops below).
     * out (N,OC) act  inp (N,IC) act  w (OC,IC) act  bias (OC,) act or NULL */
    void (*matmul_fwd)(g3_backend_t *be, void *state, void *out, const void *inp,
                       const void *w, const void *bias, int N, int IC, int OC);
    /* dinp = dout . w (overwritten; skipped when dinp is NULL), dw += dout^T . inp,
     * dbias += sum_rows dout (skipped when NULL).
     * dinp (N,IC) act  dw (OC,IC)  dbias (OC,)  dout (N,OC) act  inp (N,IC) act
     * w (OC,IC) act */
    void (*matmul_bwd)(g3_backend_t *be, void *state, void *dinp, float *dw, float *dbias,
                       const void *dout, const void *inp, const void *w,
                       int N, int IC, int OC);

    /* ---- causal self-attention ---------------------------------------------------------- */
    /* qkv rows are [q | k | v] (the order of Hugging Face GPT-2's c_attn and of gpt3d
     * checkpoints): columns [0, C) are the queries, [C, 2C) the keys, [2C, 3C) the values,
     * head h owning [h*HS, (h+1)*HS) of each block (C = NH*HS: the local heads under tensor
     * parallelism).  att = softmax(q k^T / sqrt(HS) + causal mask), out[b,t,h] = att . v.
     * What forward saves for backward is the backend's: `state` of g3_be_att_state_bytes
     * (CPU: the probabilities, (B,NH,T,T) fp32; CUDA: the log-sum-exps, (B,NH,T) fp32).
     * out (B,T,C) act  state  qkv (B,T,3C) act */
    void (*attention_fwd)(g3_backend_t *be, void *out, void *state, const void *qkv,
                          int B, int T, int NH, int HS);
    /* dqkv overwritten.  scratch (g3_be_att_scratch_bytes) is work space; out is forward's.
     * dqkv (B,T,3C) act  dout, out (B,T,C) act  qkv (B,T,3C) act  state from forward */
    void (*attention_bwd)(g3_backend_t *be, void *dqkv, void *scratch, const void *dout,
                          const void *out, const void *qkv, const void *state, int B, int T,
                          int NH, int HS);
    /* The sizes of state and scratch are the kind's (g3_be_att_state_bytes and
     * g3_be_att_scratch_bytes below): plan sizes them without opening a backend. */

    /* ---- elementwise -------------------------------------------------------------------- */
    /* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
     * out, inp (n,) act */
    void (*gelu_fwd)(g3_backend_t *be, void *out, const void *inp, size_t n);
    /* dinp = gelu'(inp) * dout (dinp may alias dout).  dinp, inp, dout (n,) act */
    void (*gelu_bwd)(g3_backend_t *be, void *dinp, const void *inp, const void *dout,
                     size_t n);
    /* out = a + b (out may alias a or b).  out, a, b (n,) act */
    void (*residual_fwd)(g3_backend_t *be, void *out, const void *a, const void *b, size_t n);
    /* x *= s (gradients).  x (n,) fp32 */
    void (*scale)(g3_backend_t *be, float *x, size_t n, float s);
    /* dst = src converted (fp32 -> bf16 rounds to nearest even); the same type copies.
     * dst (n,) of dst_t  src (n,) of src_t */
    void (*cast)(g3_backend_t *be, void *dst, g3_be_dtype_t dst_t, const void *src,
                 g3_be_dtype_t src_t, size_t n);

    /* ---- softmax cross-entropy over logits ---------------------------------------------- */
    /* lse[i] = log sum_j exp(logits[i,j]); losses[i] = lse[i] - logits[i, targets[i]].
     * losses, lse (N,)  logits (N,V) act  targets (N,) in [0, V) */
    void (*xent_fwd)(g3_backend_t *be, float *losses, float *lse, const void *logits,
                     const int32_t *targets, int N, int V);
    /* dlogits[i,j] = (softmax(logits[i])_j - [j == targets[i]]) * dloss; dlogits may alias
     * logits (computed in place).  dlogits, logits (N,V) act  lse (N,) from xent_fwd */
    void (*xent_bwd)(g3_backend_t *be, void *dlogits, const void *logits, const float *lse,
                     const int32_t *targets, float dloss, int N, int V);
    /* Optional, all three or none (NULL: the model combines the shards' log-sum-exps on the
     * host): the vocabulary-parallel cross-entropy with its statistics in backend memory, for
     * an all-gather over the tensor-parallel group.  A shard holds the columns [v0, v0+V) of
     * every row; targets are global ids.
     * xent_stats: per row the shard's max m, sum exp(x - m) and the target's logit when the
     *   shard holds it (else 0).  stats (N,3)  logits (N,V) act  targets (N,)
     * xent_combine: lse[i] over all S shards and losses[i] = lse[i] - logit[target].
     *   losses, lse (N,)  stats (S,N,3) the shards' stats gathered shard-major  targets (N,)
     * xent_shard_bwd: dlogits[i,j] = (exp(x_ij - lse[i]) - [v0+j == targets[i]]) * dloss;
     *   may alias.  dlogits, logits (N,V) act  lse (N,) from xent_combine  targets (N,) */
    void (*xent_stats)(g3_backend_t *be, float *stats, const void *logits,
                       const int32_t *targets, int N, int V, int v0);
    void (*xent_combine)(g3_backend_t *be, float *losses, float *lse, const float *stats,
                         int S, const int32_t *targets, int N);
    void (*xent_shard_bwd)(g3_backend_t *be, void *dlogits, const void *logits,
                           const float *lse, const int32_t *targets, float dloss, int N,
                           int V, int v0);

    /* ---- optimizer ------------------------------------------------------------------------ */
    /* One AdamW step (decoupled weight decay, PyTorch / apex adam_w_mode order):
     *   p *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
     *   p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps), bc1 = 1-b1^step, bc2 = 1-b2^step.
     * p (the fp32 master weights), g, m, v (n,) fp32.  A backend whose act_dtype is not fp32
     * does not refresh its working copy here: the model does (g3_gpt_params_refresh). */
    void (*adamw)(g3_backend_t *be, float *p, const float *g, float *m, float *v, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd, int64_t step);
    /* OUT: *host_out = sum x^2 accumulated in double (the grad-norm building block).
     * x (n,) fp32 */
    void (*sumsq)(g3_backend_t *be, const float *x, size_t n, double *host_out);

    /* ---- optional fused ops ------------------------------------------------------------------
     * Each NULL, or equal in meaning to the sequence of plain ops given, which the model and
     * the optimizer run instead when it is NULL.  The CPU backend leaves them NULL (unless
     * the fused_ops option is 1: then it fills them with the plain ops' own code, bit for bit
     * the same results, so the fused wiring is tested on the CPU); CUDA fills them with its
     * fusions (fused_ops 0 turns them off).  fused_ops -1 reads GPT3D_FUSED_OPS. */
    /* resid = a + b; out = layernorm(resid) (residual_fwd then layernorm_fwd on resid).
     * resid, out, a, b (N,C) act  mean, rstd (N,)  w, bias (C,) act */
    void (*residual_layernorm_fwd)(g3_backend_t *be, void *resid, void *out, float *mean,
                                   float *rstd, const void *a, const void *b, const void *w,
                                   const void *bias, int N, int C, float eps);
    /* pre = inp . w^T + bias; out = gelu(pre) (matmul_fwd into pre, then gelu_fwd); pre is
     * kept for matmul_dgelu_bwd / gelu_bwd.
     * out, pre (N,OC) act  inp (N,IC) act  w (OC,IC) act  bias (OC,) act */
    void (*matmul_gelu_fwd)(g3_backend_t *be, void *state, void *out, void *pre,
                            const void *inp, const void *w, const void *bias, int N, int IC,
                            int OC);
    /* The backward of a linear layer whose input was gelu(pre): dpre = (dout . w) *
     * gelu'(pre), dw += dout^T . inp, dbias += sum_rows dout (matmul_bwd into dpre, then
     * gelu_bwd in place).  dpre (N,IC) act  dw (OC,IC)  dbias (OC,) or NULL
     * dout (N,OC) act  inp, pre (N,IC) act  w (OC,IC) act */
    void (*matmul_dgelu_bwd)(g3_backend_t *be, void *state, void *dpre, float *dw,
                             float *dbias, const void *dout, const void *inp, const void *pre,
                             const void *w, int N, int IC, int OC);
    /* Gradient norm and clipping in backend memory, all three or none (the optimizer then
     * keeps its one host sync per step for the norm, but no per-tensor round trips and no
     * separate scaling pass over the gradients):
     * sumsq_acc: *acc += sum x^2 in double.  acc (1,) fp64 backend memory  x (n,) fp32
     * clip_scale: *scale = max_norm / (sqrt(*sumsq) + 1e-6), computed in double, when
     *   max_norm > 0 and that is < 1, else 1 (the plain optimizer's rule; a non-finite norm
     *   gives 1).  scale (1,) fp32, sumsq (1,) fp64: backend memory
     * adamw_scaled: adamw on g * *scale (what adamw gives after scale(g, *scale), without
     *   writing g).  scale (1,) fp32 backend memory; the rest as adamw */
    void (*sumsq_acc)(g3_backend_t *be, double *acc, const float *x, size_t n);
    void (*clip_scale)(g3_backend_t *be, float *scale, const double *sumsq, double max_norm);
    void (*adamw_scaled)(g3_backend_t *be, float *p, const float *g, float *m, float *v,
                         size_t n, float lr, float beta1, float beta2, float eps, float wd,
                         int64_t step, const float *scale);

    /* ---- optional: host staging buffers and timing events -----------------------------------
     * host_alloc/host_free, both or neither (NULL: plain host memory): page-locked host memory
     * that ->download and ->upload move at full speed (the staged collectives of
     * --distributed-backend ucx, the checkpoints' staging area).  host_alloc may be called
     * from any thread, beside the ops of the thread that drives the backend (it leaves no
     * error pending in the backend).  OUT: *ptr_p.  RET: G3_ERR_NO_MEMORY (logged).
     * event_*, all four or none (NULL: the timers read the wall clock after ->sync): a marker
     * recorded in the order of the queued ops, and the time between two recorded markers;
     * event_elapsed waits until `end` has passed.  RET: G3_ERR_DEVICE (logged). */
    g3_status_t (*host_alloc)(g3_backend_t *be, size_t bytes, void **ptr_p);
    void (*host_free)(g3_backend_t *be, void *ptr);
    g3_status_t (*event_create)(g3_backend_t *be, void **event_p);
    void (*event_destroy)(g3_backend_t *be, void *event);
    void (*event_record)(g3_backend_t *be, void *event);
    g3_status_t (*event_elapsed)(g3_backend_t *be, void *start, void *end, double *seconds_p);

    /* ---- limits ------------------------------------------------------------------------------ */
    /* Optional (NULL: every size works).  RET: G3_OK, or G3_ERR_UNSUPPORTED after logging which
     * model size this backend cannot run and what to change. */
    g3_status_t (*check_model)(g3_backend_t *be, int C, int NH, int HS, int F, int V);
} g3_backend_ops_t;

struct g3_backend {
    const g3_backend_ops_t *ops;      /* NULL in a backend on paper (g3_be_describe)      */
    const g3_be_kind_info_t *kind;    /* its row of the table                             */
    g3_be_opts_t opts;                /* the options it was opened with, defaults filled   */
    unsigned    caps;          /* the row's G3_BE_CAP_* (g3_be_open checks the ops agree) */
    const char *name;          /* the row's name: "cpu", "cuda" (for messages)           */
    g3_be_dtype_t act_dtype;   /* activations and the passes' parameters (see the top)    */
    char        device[128];   /* human-readable device: "2 x Intel(R) Xeon(R) ... (avx512)" */
    int         nthreads;      /* compute threads (CPU)                                  */
    double      peak_flops;    /* peak FLOP/s of act_dtype used for MFU (docs/model.md)   */
    char        peak_how[160]; /* how peak_flops was obtained                              */
    void       *priv;          /* backend-private state                                   */
    void       *stream;        /* the stream the ops queue on (cudaStream_t), NULL: none  */
    char        device_id[64]; /* the device's identity on its node (CUDA: PCI bus id), ""
                                * for host memory: ranks with the same id share a device */
    int         host_memory;   /* caps & G3_BE_CAP_HOST_MEMORY, as an int                 */
};

/* RET: the row of kind (NULL for a kind out of range). */
const g3_be_kind_info_t *g3_be_kind(g3_be_kind_t kind);
/* OUT: *kind_p for a --device word.  RET: G3_OK, or G3_ERR_UNSUPPORTED with the kinds this
 * gpt3d knows in why. */
g3_status_t g3_be_kind_parse(const char *name, g3_be_kind_t *kind_p, char *why, size_t why_len);

/* Open a backend of `kind` with options o (NULL: g3_be_opts_default's).  OUT: *be_p, which
 * the caller frees with g3_be_close.  RET (logged): G3_ERR_UNSUPPORTED for a kind out of
 * range, options the kind cannot honour, or a kind not built in ("cuda" without CUDA),
 * G3_ERR_DEVICE when no usable GPU is visible, G3_ERR_NO_MEMORY, G3_ERR_INTERNAL when the
 * opened ops disagree with the row's capabilities. */
g3_status_t g3_be_open(g3_be_kind_t kind, const g3_be_opts_t *o, g3_backend_t **be_p);
void g3_be_close(g3_backend_t *be);

/* Whether g3_be_open(kind, o) can work here, without opening it (no GPU context is created):
 * the options (check_opts), then the build and the devices (probe).  o NULL: the defaults.
 * RET: G3_OK, or the status g3_be_open would return, with the reason and the fix in why
 * (nothing is logged). */
g3_status_t g3_be_probe(g3_be_kind_t kind, const g3_be_opts_t *o, char *why, size_t why_len);

/* Whether `kind` with options o can run a GPT of these sizes, without opening it (the
 * options first, then the row's check_sizes; arguments as there).  The CPU runs any size;
 * CUDA's kernels are compiled for the head sizes of G3CUDA_ATT_HEAD_SIZES, need C, F and Vp
 * multiples of 8 and C at most G3CUDA_LN_MAX_C (kernels/g3cuda.h; MT-NLG's 20480 fits).
 * RET: G3_OK, or G3_ERR_UNSUPPORTED with the reason, naming the flags and the fix, in why
 * (nothing logged). */
g3_status_t g3_be_check_sizes(g3_be_kind_t kind, const g3_be_opts_t *o, int C, int NH, int HS,
                              int F, int Vp, char *why, size_t why_len);
/* The same two checks for a row at hand (shared.c): the options (its check_opts, NULL: all),
 * then, for the second, the sizes (its check_sizes, NULL: any).  A backend checks its own
 * row (be->kind) through these, never through g3_be_probe or g3_be_check_sizes, which find
 * the rows in the table (docs/design.md, "Backend kinds": no call circles).  o: not NULL. */
g3_status_t g3_be_row_check_opts(const g3_be_kind_info_t *row, const g3_be_opts_t *o,
                                 char *why, size_t why_len);
g3_status_t g3_be_row_check_sizes(const g3_be_kind_info_t *row, const g3_be_opts_t *o, int C,
                                  int NH, int HS, int F, int Vp, char *why, size_t why_len);

/* A backend of `kind` on paper: the fields an open one has from its row (kind, opts, name,
 * act_dtype, caps, host_memory), ops NULL: enough for sizing its buffers without a device
 * (gpt3d plan runs g3_gpt_acts_estimate on it).  o NULL: the defaults.  OUT: *be. */
void g3_be_describe(g3_be_kind_t kind, const g3_be_opts_t *o, g3_backend_t *be);

/* RET: bytes of be's attention state and scratch for these sizes (its row's, with its
 * options; be may be open or described). */
size_t g3_be_att_state_bytes(const g3_backend_t *be, int B, int T, int NH, int HS);
size_t g3_be_att_scratch_bytes(const g3_backend_t *be, int B, int T, int NH, int HS);
/* RET: bytes of be's per-tensor state of one linear layer of IC inputs and OC outputs (its
 * row's linear_state_bytes; 0 without one). */
size_t g3_be_linear_state_bytes(const g3_backend_t *be, int IC, int OC);

/* The compute devices this build can use, for `gpt3d --version`: one line per device kind
 * built in beyond the CPU ("cuda devices: 2", or why none), written to out. */
void g3_be_print_devices(FILE *out);

/* The norm and clipping scale in backend memory for the optimizers, when be has all three of
 * sumsq_acc, clip_scale and adamw_scaled (else nothing is allocated).
 * OUT: *sumsq_p (1,) fp64 and *scale_p (1,) fp32, one 16-byte backend allocation that the
 * caller frees with ->free(be, *sumsq_p); both NULL when be lacks the ops.
 * RET: G3_OK, or G3_ERR_NO_MEMORY (logged). */
g3_status_t g3_be_clip_alloc(g3_backend_t *be, double **sumsq_p, float **scale_p);

/* RET: whether a backend fills its optional fused ops: o->fused_ops when 0 or 1, else
 * GPT3D_FUSED_OPS (the registry's default, core/param.h) when set to 0 or 1, else dflt. */
int g3_be_fused_wanted(const g3_be_opts_t *o, int dflt);

/* A backend's table lists its optional fused ops; this keeps them in ops (its open copy of
 * the table) where g3_be_fused_wanted(o, dflt), else clears the six of them. */
void g3_be_fused_keep(g3_backend_ops_t *ops, const g3_be_opts_t *o, int dflt);

/* First thing in main() of a program that computes on the CPU backend (argv: main's): when
 * neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, re-executes the program with OpenMP's
 * threads spinning only briefly before they sleep, or not at all when the job's threads
 * outnumber the CPUs (GOMP_SPINCOUNT; libgomp reads it only when the program is loaded), so
 * that they do not burn CPUs that other jobs or ranks share (cpu_env.c).  Returns when there
 * is nothing to do, in the re-executed program (which removes the variable from its
 * environment again), or when the re-execution fails. */
void g3_be_cpu_env(char **argv);
/* RET: how OpenMP's threads wait in this process, in words (for the debug log). */
const char *g3_be_cpu_wait_how(void);

#endif

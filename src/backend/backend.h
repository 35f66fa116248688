/* gpt3d backend: the compute ops table every backend fills (CPU here, CUDA in kernels/).
 *
 * The model and training code call only through g3_backend_ops_t, so they never know which
 * backend runs.  Pointers passed to ops are backend memory (from ->alloc); host memory moves in
 * and out only through ->upload / ->download.  Ops return nothing: a backend that can fail
 * asynchronously (CUDA) keeps the first error and reports it from ->sync, which the model calls
 * at the end of every forward and backward pass.
 *
 * Conventions shared by every op:
 *   - fp32 tensors, row-major, contiguous unless a leading dimension says otherwise;
 *   - gradients of parameters (dw, dbias, dwte, dwpe) are ACCUMULATED (+=), so micro-batches add
 *     up; gradients of activations are OVERWRITTEN unless the op says "+=";
 *   - shape glossary: N rows (tokens, B*T), B micro-batch, T sequence length, C hidden size,
 *     NH heads, HS head size (C = NH*HS for the local heads), IC/OC in/out features, V (padded,
 *     local) vocabulary, P positions.
 *
 * Ownership: g3_be_open() returns a backend the caller frees with g3_be_close(); memory from
 * ->alloc is freed with ->free before that. */
#ifndef G3_BACKEND_BACKEND_H
#define G3_BACKEND_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct g3_backend g3_backend_t;

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
     * out (B,T,C)  tokens (B,T)  wte (V,C)  wpe (P>=T,C) */
    void (*embedding_fwd)(g3_backend_t *be, float *out, const int32_t *tokens, const float *wte,
                          const float *wpe, int B, int T, int C, int v0, int V);
    /* dwte[tokens[b,t]-v0] += dout[b,t]; dwpe[t] += sum_b dout[b,t] (dwpe may be NULL).
     * dwte (V,C)  dwpe (P,C)  dout (B,T,C)  tokens (B,T) */
    void (*embedding_bwd)(g3_backend_t *be, float *dwte, float *dwpe, const float *dout,
                          const int32_t *tokens, int B, int T, int C, int v0, int V);

    /* ---- layer norm (biased variance, eps inside the square root) --------------------- */
    /* out = (inp - mean) * rstd * w + b, per row.
     * out, inp (N,C)  mean, rstd (N,) saved for backward  w, b (C,) */
    void (*layernorm_fwd)(g3_backend_t *be, float *out, float *mean, float *rstd,
                          const float *inp, const float *w, const float *b, int N, int C,
                          float eps);
    /* dinp += d(out)/d(inp)^T dout  (accumulates: the residual stream's gradient),
     * dw += sum_rows dout*xhat, db += sum_rows dout.
     * dinp, dout, inp (N,C)  dw, db, w (C,)  mean, rstd (N,) */
    void (*layernorm_bwd)(g3_backend_t *be, float *dinp, float *dw, float *db,
                          const float *dout, const float *inp, const float *w,
                          const float *mean, const float *rstd, int N, int C);

    /* ---- matmul (a linear layer: out = inp . w^T + bias) ------------------------------- */
    /* out (N,OC)  inp (N,IC)  w (OC,IC)  bias (OC,) or NULL */
    void (*matmul_fwd)(g3_backend_t *be, float *out, const float *inp, const float *w,
                       const float *bias, int N, int IC, int OC);
    /* dinp = dout . w (overwritten; skipped when dinp is NULL), dw += dout^T . inp,
     * dbias += sum_rows dout (skipped when NULL).
     * dinp (N,IC)  dw (OC,IC)  dbias (OC,)  dout (N,OC)  inp (N,IC)  w (OC,IC) */
    void (*matmul_bwd)(g3_backend_t *be, float *dinp, float *dw, float *dbias,
                       const float *dout, const float *inp, const float *w,
                       int N, int IC, int OC);

    /* ---- causal self-attention ---------------------------------------------------------- */
    /* qkv rows are [q | k | v] (the order of Hugging Face GPT-2's c_attn and of gpt3d
     * checkpoints): columns [0, C) are the queries, [C, 2C) the keys, [2C, 3C) the values,
     * head h owning [h*HS, (h+1)*HS) of each block (C = NH*HS: the local heads under tensor
     * parallelism).  att = softmax(q k^T / sqrt(HS) + causal mask), out[b,t,h] = att . v.
     * out (B,T,C)  att (B,NH,T,T) saved for backward  qkv (B,T,3C) */
    void (*attention_fwd)(g3_backend_t *be, float *out, float *att, const float *qkv,
                          int B, int T, int NH, int HS);
    /* dqkv overwritten.  scratch (B,NH,T,T) is work space.
     * dqkv (B,T,3C)  dout (B,T,C)  qkv (B,T,3C)  att (B,NH,T,T) */
    void (*attention_bwd)(g3_backend_t *be, float *dqkv, float *scratch, const float *dout,
                          const float *qkv, const float *att, int B, int T, int NH, int HS);

    /* ---- elementwise -------------------------------------------------------------------- */
    /* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
     * out, inp (n,) */
    void (*gelu_fwd)(g3_backend_t *be, float *out, const float *inp, size_t n);
    /* dinp = gelu'(inp) * dout (dinp may alias dout).  dinp, inp, dout (n,) */
    void (*gelu_bwd)(g3_backend_t *be, float *dinp, const float *inp, const float *dout,
                     size_t n);
    /* out = a + b (out may alias a or b).  out, a, b (n,) */
    void (*residual_fwd)(g3_backend_t *be, float *out, const float *a, const float *b, size_t n);
    /* x *= s.  x (n,) */
    void (*scale)(g3_backend_t *be, float *x, size_t n, float s);

    /* ---- softmax cross-entropy over logits ---------------------------------------------- */
    /* lse[i] = log sum_j exp(logits[i,j]); losses[i] = lse[i] - logits[i, targets[i]].
     * losses, lse (N,)  logits (N,V)  targets (N,) in [0, V) */
    void (*xent_fwd)(g3_backend_t *be, float *losses, float *lse, const float *logits,
                     const int32_t *targets, int N, int V);
    /* dlogits[i,j] = (softmax(logits[i])_j - [j == targets[i]]) * dloss; dlogits may alias
     * logits (computed in place).  dlogits, logits (N,V)  lse (N,) from xent_fwd */
    void (*xent_bwd)(g3_backend_t *be, float *dlogits, const float *logits, const float *lse,
                     const int32_t *targets, float dloss, int N, int V);

    /* ---- optimizer ------------------------------------------------------------------------ */
    /* One AdamW step (decoupled weight decay, PyTorch / apex adam_w_mode order):
     *   p *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
     *   p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps), bc1 = 1-b1^step, bc2 = 1-b2^step.
     * p, g, m, v (n,) */
    void (*adamw)(g3_backend_t *be, float *p, const float *g, float *m, float *v, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd, int64_t step);
    /* OUT: *host_out = sum x^2 accumulated in double (the grad-norm building block).
     * x (n,) */
    void (*sumsq)(g3_backend_t *be, const float *x, size_t n, double *host_out);
} g3_backend_ops_t;

struct g3_backend {
    const g3_backend_ops_t *ops;
    const char *name;          /* "cpu", "cuda"                                          */
    char        device[128];   /* human-readable device: "2 x Intel(R) Xeon(R) ... (avx512)" */
    int         nthreads;      /* compute threads (CPU)                                  */
    double      peak_flops;    /* fp32 peak FLOP/s used for MFU (see docs/model.md)       */
    char        peak_how[160]; /* how peak_flops was obtained                              */
    void       *priv;          /* backend-private state                                   */
};

/* Open a backend by name ("cpu").  nthreads <= 0: the OpenMP default (OMP_NUM_THREADS, else
 * the CPUs this process may run on).
 * OUT: *be_p.  RET: G3_ERR_UNSUPPORTED (logged) for a name this build does not have. */
g3_status_t g3_be_open(const char *name, int nthreads, g3_backend_t **be_p);
void g3_be_close(g3_backend_t *be);

/* The CPU backend (fp32, CBLAS + OpenMP).  See g3_be_open. */
g3_status_t g3_be_cpu_open(int nthreads, g3_backend_t **be_p);

#endif
